//! Attacks on the file receiver (`stride_apps::xfer::receive_file`): concurrent uploads of one
//! name, planted `.part` files and symlinks.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stride::{Endpoint, Stream};
use stride_apps::xfer::{
    encode_header, receive_file, send_file, ReceiveOptions, Received, SendOptions, Status,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stride-xfer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

/// A receiver serving every connection concurrently (like `stride recv`); reports arrive on
/// the channel.
fn receiver(dir: &Path, force: bool) -> (Endpoint, mpsc::UnboundedReceiver<Received>) {
    let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let srv = ep.clone();
    let dir = dir.to_path_buf();
    tokio::spawn(async move {
        while let Ok(s) = srv.accept().await {
            let (dir, tx) = (dir.clone(), tx.clone());
            tokio::spawn(async move {
                let opts = ReceiveOptions {
                    force,
                    ..ReceiveOptions::default()
                };
                let _ = tx.send(receive_file(s, &dir, &opts).await);
            });
        }
    });
    (ep, rx)
}

async fn read_status(s: &mut Stream) -> (Status, String) {
    let code = s.read_u8().await.expect("status");
    let len = s.read_u16().await.expect("len");
    let mut m = vec![0u8; usize::from(len)];
    s.read_exact(&mut m).await.expect("msg");
    (
        Status::from_u8(code),
        String::from_utf8_lossy(&m).into_owned(),
    )
}

/// Sends a whole file (header, bytes, hash) on a new connection and returns the status.
async fn upload(
    client: &Endpoint,
    to: std::net::SocketAddr,
    name: &str,
    body: &[u8],
) -> (Status, String) {
    let mut s = client.connect(to).await.unwrap();
    let mut b = encode_header(name, body.len() as u64);
    b.extend_from_slice(body);
    b.extend_from_slice(blake3::hash(body).as_bytes());
    let _ = s.write_all(&b).await;
    let _ = s.shutdown().await;
    read_status(&mut s).await
}

fn part_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".part"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_uploads_of_one_name_never_corrupt_it() {
    let dir = tempdir("twice");
    let (ep, _reports) = receiver(&dir, false);
    let to = ep.local_addr();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let a = data(2_000_000, 0xa5);
    let b = data(2_000_000, 0x5a);

    // Upload A: header and the first half, then pause with its temporary file open.
    let mut sa = client.connect(to).await.unwrap();
    sa.write_all(&encode_header("same.bin", a.len() as u64))
        .await
        .unwrap();
    sa.write_all(&a[..1_000_000]).await.unwrap();
    let t = Instant::now();
    while part_files(&dir).is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "upload A never started writing"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;

    // Upload B of the same name, complete, while A is in progress.
    let (st_b, msg_b) = upload(&client, to, "same.bin", &b).await;

    // A finishes.
    sa.write_all(&a[1_000_000..]).await.unwrap();
    sa.write_all(blake3::hash(&a).as_bytes()).await.unwrap();
    sa.shutdown().await.unwrap();
    let (st_a, msg_a) = read_status(&mut sa).await;

    let stored = std::fs::read(dir.join("same.bin")).unwrap_or_default();
    // Whatever each side was told must be true of the disk: a confirmed upload is what is
    // stored, and at most one of them is confirmed.
    let oks = [(st_a, &a), (st_b, &b)]
        .iter()
        .filter(|(st, _)| *st == Status::Ok)
        .count();
    assert_eq!(oks, 1, "A: {st_a:?} {msg_a}; B: {st_b:?} {msg_b}");
    if st_a == Status::Ok {
        assert!(stored == a, "A was confirmed but the file is not A");
    }
    if st_b == Status::Ok {
        assert!(stored == b, "B was confirmed but the file is not B");
    }
    // The second upload is refused clearly while the first runs.
    assert_eq!(st_b, Status::Busy, "{msg_b}");
    assert!(msg_b.contains("in progress"), "{msg_b}");
    assert!(part_files(&dir).is_empty(), "{:?}", part_files(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planted_part_files_and_symlinks_are_left_alone() {
    let dir = tempdir("plant");
    let outside = tempdir("plant-victim");
    let victim = outside.join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("evil.part")).unwrap();
    std::os::unix::fs::symlink(&victim, dir.join("evil2")).unwrap();
    std::fs::write(dir.join("data.part"), b"an earlier file").unwrap();
    let (ep, _reports) = receiver(&dir, false);
    let to = ep.local_addr();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();

    let body = data(300_000, 7);
    let (st, msg) = upload(&client, to, "evil", &body).await;
    assert_eq!(st, Status::Ok, "{msg}");
    let (st, msg) = upload(&client, to, "data", &body).await;
    assert_eq!(st, Status::Ok, "{msg}");
    // A name that is itself a (dangling or not) symlink counts as existing.
    let (st, msg) = upload(&client, to, "evil2", &body).await;
    assert_eq!(st, Status::Exists, "{msg}");

    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious",
        "written through a symlink"
    );
    assert_eq!(
        std::fs::read(dir.join("data.part")).unwrap(),
        b"an earlier file"
    );
    assert_eq!(std::fs::read(dir.join("evil")).unwrap(), body);
    assert_eq!(std::fs::read(dir.join("data")).unwrap(), body);
    assert!(std::fs::symlink_metadata(dir.join("evil.part"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::symlink_metadata(dir.join("evil2"))
        .unwrap()
        .file_type()
        .is_symlink());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_does_not_hang_the_sender() {
    // The receiver acknowledges every byte but never sends the status;
    // keepalives hold the connection open, so only a timeout on the wait ends it.
    let dir = tempdir("mute");
    let file = dir.join("mute.bin");
    std::fs::write(&file, data(200_000, 3)).unwrap();
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = server.local_addr();
    let (held_tx, mut held_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink).await;
        let _ = held_tx.send((s, sink.len()));
        std::future::pending::<()>().await;
    });
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let opts = SendOptions {
        stall_timeout: Duration::from_secs(1),
        ..SendOptions::default()
    };
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        send_file(&client, to, &file, &opts),
    )
    .await
    .expect("send_file hung waiting for the status");
    let e = r.expect_err("no status, yet the sender reported success");
    assert!(e.contains("no confirmation"), "{e}");
    let (_held, got) = held_rx.recv().await.unwrap();
    assert!(
        got > 200_000,
        "the receiver did not get the data ({got} bytes)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_that_stalls_is_dropped_and_its_temporary_file_removed() {
    // A sender that sends a header and part of the body, then nothing (its keepalives keep
    // the connection alive) must not hold the receiver (and a temporary file) forever.
    let dir = tempdir("stall");
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let to = server.local_addr();
    let d2 = dir.clone();
    let recv = tokio::spawn(async move {
        let s = server.accept().await.unwrap();
        let opts = ReceiveOptions {
            stall_timeout: Duration::from_secs(1),
            ..ReceiveOptions::default()
        };
        receive_file(s, &d2, &opts).await
    });
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut s = client.connect(to).await.unwrap();
    s.write_all(&encode_header("slow.bin", 1_000_000))
        .await
        .unwrap();
    s.write_all(&data(10_000, 1)).await.unwrap();
    let r = tokio::time::timeout(Duration::from_secs(60), recv)
        .await
        .expect("the receiver waited forever for a stalled sender")
        .unwrap();
    let e = r.error.expect("a stalled upload was reported as stored");
    assert!(e.contains("no progress"), "{e}");
    assert!(part_files(&dir).is_empty(), "{:?}", part_files(&dir));
    assert!(!dir.join("slow.bin").exists());
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_is_refused_before_connecting() {
    let dir = tempdir("isdir");
    // Nobody listens here: connecting first would fail with "unreachable" instead.
    let to: std::net::SocketAddr = "127.0.0.1:9".parse().unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let e = send_file(&client, to, &dir, &SendOptions::default())
        .await
        .expect_err("sent a directory");
    assert!(e.contains("not a regular file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_of_255_bytes_are_stored_and_hostile_names_refused_briefly() {
    let dir = tempdir("names");
    let (ep, mut reports) = receiver(&dir, false);
    let to = ep.local_addr();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let body = data(10_000, 4);
    // 251..=255 bytes passed the name check but NAME.part did not fit the file system's limit.
    for len in [251, 255] {
        let name = "n".repeat(len);
        let (st, msg) = upload(&client, to, &name, &body).await;
        assert_eq!(st, Status::Ok, "{len} bytes: {msg}");
        assert_eq!(std::fs::read(dir.join(&name)).unwrap(), body);
        let _ = reports.recv().await;
    }
    // A 5 000-byte name with an ANSI escape: refused, and echoed short and escaped.
    let hostile = format!("\x1b[2J{}", "A".repeat(5000));
    let (st, msg) = upload(&client, to, &hostile, &body).await;
    assert_eq!(st, Status::RefusedName, "{msg}");
    assert!(msg.len() < 200, "{} bytes echoed", msg.len());
    assert!(!msg.contains('\x1b'), "{msg:?}");
    let r = reports.recv().await.unwrap();
    assert!(r.refused_name);
    assert!(r.name.len() < 200 && r.error.as_deref().is_some_and(|e| !e.contains('\x1b')));
    // Control characters alone are refused too.
    let (st, _) = upload(&client, to, "ok\x07.bin", &body).await;
    assert_eq!(st, Status::RefusedName);
    assert!(part_files(&dir).is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}
