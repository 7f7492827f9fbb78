//! Attacks on a live file receiver on loopback (the CI slice): uploads without or with another
//! key, replayed headers, addresses outside `--allow`. Each test is bounded to seconds.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;
use stride::{Endpoint, Stream};
use stride_apps::xfer::{
    encode_header, encode_header_auth, receive_files, send_file, Key, ReceiveOptions, Received,
    SendOptions, Status,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stride-attack-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13) ^ seed).collect()
}

fn key(b: u8) -> Key {
    Key::from_secret(&[b; 32]).unwrap()
}

/// Every entry of `dir` (names).
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// A receiver like `stride recv` (every connection on its own task, one shared state).
fn receiver(dir: &Path, opts: ReceiveOptions) -> (Endpoint, mpsc::UnboundedReceiver<Received>) {
    let ep = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    let (srv, dir) = (ep.clone(), dir.to_path_buf());
    tokio::spawn(async move {
        let report = move |r: Received| {
            let _ = tx.send(r);
        };
        receive_files(&srv, &dir, &opts, report).await;
    });
    (ep, rx)
}

fn client(ip: &str) -> Endpoint {
    Endpoint::client(format!("{ip}:0").parse().unwrap()).unwrap()
}

/// Reads a receiver's answer: code, message (a tag after it, if any, is left unread).
async fn answer(s: &mut Stream) -> (Status, String) {
    let read = async {
        let code = s.read_u8().await?;
        let len = s.read_u16().await?;
        let mut m = vec![0u8; usize::from(len)];
        s.read_exact(&mut m).await?;
        Ok::<_, std::io::Error>((
            Status::from_u8(code),
            String::from_utf8_lossy(&m).into_owned(),
        ))
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("no answer within 10 s")
        .expect("answer")
}

/// Writes `bytes` on a new connection (without ending it) and returns the answer.
async fn raw(c: &Endpoint, to: SocketAddr, bytes: &[u8]) -> (Status, String) {
    let mut s = c.connect(to).await.unwrap();
    s.write_all(bytes).await.unwrap();
    answer(&mut s).await
}

fn keyed(k: Key) -> ReceiveOptions {
    ReceiveOptions {
        key: Some(k),
        ..ReceiveOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_without_the_key_are_refused_before_any_file_exists() {
    let dir = tempdir("nokey");
    let opts = keyed(key(1));
    let state = opts.state.clone();
    let (ep, _reports) = receiver(&dir, opts);
    let to = ep.local_addr();
    let c = client("127.0.0.1");
    // An unauthenticated header alone (no body yet): refused at once.
    let (st, msg) = raw(&c, to, &encode_header("x.bin", 1_000_000)).await;
    assert_eq!(st, Status::Unauthenticated, "{msg}");
    assert!(msg.contains("--key"), "{msg}");
    // Another key: refused too.
    let (head, _) = encode_header_auth("y.bin", 1_000_000, &key(2)).unwrap();
    let (st, msg) = raw(&c, to, &head).await;
    assert_eq!(st, Status::Unauthenticated, "{msg}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert_eq!(state.refusals().unauthenticated, 2);

    // Through the library's sender: another key fails clearly, the right one is stored.
    let src = tempdir("nokey-src");
    let file = src.join("real.bin");
    let body = data(300_000, 1);
    std::fs::write(&file, &body).unwrap();
    let wrong = SendOptions {
        key: Some(key(3)),
        ..SendOptions::default()
    };
    let e = send_file(&c, to, &file, &wrong)
        .await
        .expect_err("stored with another key");
    assert!(e.contains("not authenticated"), "{e}");
    let e = send_file(&c, to, &file, &SendOptions::default())
        .await
        .expect_err("stored without a key");
    assert!(e.contains("authenticated"), "{e}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert_eq!(state.refusals().unauthenticated, 4);
    let right = SendOptions {
        key: Some(key(1)),
        ..SendOptions::default()
    };
    send_file(&c, to, &file, &right)
        .await
        .expect("the key holder's upload");
    assert_eq!(std::fs::read(dir.join("real.bin")).unwrap(), body);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&src);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_upload_and_a_replaced_body_are_refused() {
    let dir = tempdir("replay");
    let k = key(4);
    let opts = keyed(k.clone());
    let state = opts.state.clone();
    let (ep, _reports) = receiver(&dir, opts);
    let to = ep.local_addr();
    let c = client("127.0.0.1");
    let body = data(100_000, 2);
    let hash = blake3::hash(&body);
    let (head, tag) = encode_header_auth("once.bin", body.len() as u64, &k).unwrap();
    let mut upload = head.clone();
    upload.extend_from_slice(&body);
    upload.extend_from_slice(hash.as_bytes());
    upload.extend_from_slice(k.body_tag(&tag, &hash).as_bytes());
    let (st, msg) = raw(&c, to, &upload).await;
    assert_eq!(st, Status::Ok, "{msg}");
    std::fs::remove_file(dir.join("once.bin")).unwrap();
    // The same bytes again (a captured upload): refused as a replay.
    let (st, msg) = raw(&c, to, &upload).await;
    assert_eq!(st, Status::Unauthenticated, "{msg}");
    assert!(msg.contains("replayed"), "{msg}");
    // A fresh header with another body and hash but the old tag after it: refused.
    let (head2, _) = encode_header_auth("swap.bin", body.len() as u64, &k).unwrap();
    let mut forged = head2;
    let other = data(100_000, 9);
    forged.extend_from_slice(&other);
    forged.extend_from_slice(blake3::hash(&other).as_bytes());
    forged.extend_from_slice(k.body_tag(&tag, &hash).as_bytes());
    let (st, msg) = raw(&c, to, &forged).await;
    assert_eq!(st, Status::Unauthenticated, "{msg}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert_eq!(state.refusals().unauthenticated, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn addresses_outside_allow_are_refused_and_a_keyless_receiver_says_so() {
    let dir = tempdir("allow");
    let opts = ReceiveOptions {
        allow: vec!["127.0.0.2/32".parse().unwrap()],
        ..ReceiveOptions::default()
    };
    let state = opts.state.clone();
    let (ep, _reports) = receiver(&dir, opts);
    let to = ep.local_addr();
    let body = data(1000, 3);
    let mut up = encode_header("a.bin", body.len() as u64);
    up.extend_from_slice(&body);
    up.extend_from_slice(blake3::hash(&body).as_bytes());
    let (st, msg) = raw(&client("127.0.0.1"), to, &up).await;
    assert_eq!(st, Status::Unauthenticated, "{msg}");
    assert!(msg.contains("not an allowed address"), "{msg}");
    assert!(entries(&dir).is_empty(), "{:?}", entries(&dir));
    assert_eq!(state.refusals().not_allowed, 1);
    let (st, msg) = raw(&client("127.0.0.2"), to, &up).await;
    assert_eq!(st, Status::Ok, "{msg}");
    // A sender with a key is told that this receiver has none.
    let src = tempdir("allow-src");
    let file = src.join("k.bin");
    std::fs::write(&file, &body).unwrap();
    let opts = SendOptions {
        key: Some(key(5)),
        ..SendOptions::default()
    };
    let e = send_file(&client("127.0.0.2"), to, &file, &opts)
        .await
        .expect_err("a keyless receiver confirmed a keyed upload");
    assert!(e.contains("has no key"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&src);
}
