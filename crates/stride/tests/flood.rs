//! A transfer survives a flood of garbage and SYNs aimed at the receiver's socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use stride::proto::wire::{Flags, Header, HEADER_LEN};
use stride::Endpoint;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn header(flags: Flags, dst: u32, src: u32, seq: u32) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    Header::new(flags, dst, src, seq, 0, 0)
        .emit(&mut b)
        .expect("32 bytes");
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_survives_garbage_and_syn_flood() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let target = server.local_addr();
    let data: Vec<u8> = (0..5_000_000u32).map(|i| (i ^ (i >> 9)) as u8).collect();
    let done = Arc::new(AtomicBool::new(false));
    let d2 = done.clone();
    // The flooder: bounded in count and time.
    let flooder = std::thread::spawn(move || {
        let socks: Vec<std::net::UdpSocket> = (0..4)
            .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut rng = Rng(0x1234_5678_9abc_def1);
        let mut sent = 0u64;
        let start = std::time::Instant::now();
        while sent < 40_000 && start.elapsed() < std::time::Duration::from_secs(20) {
            if d2.load(Ordering::Relaxed) && sent > 2_000 {
                break;
            }
            let r = rng.next();
            let kind = r % 6;
            let mut buf: Vec<u8> = match kind {
                // Random bytes of random length.
                0 => (0..(r >> 8) % 200).map(|_| rng.next() as u8).collect(),
                // A truncated header.
                1 => header(Flags::ACK | Flags::DATA, rng.next() as u32, 7, 1)
                    [..((r >> 8) % HEADER_LEN as u64) as usize]
                    .to_vec(),
                // Wrong version.
                2 => {
                    let mut h = header(Flags::ACK, rng.next() as u32, 7, 1).to_vec();
                    h[0] = 0x7f;
                    h
                }
                // Forged identifiers: well-formed DATA for connections that do not exist.
                3 => {
                    let mut h = header(
                        Flags::ACK | Flags::DATA,
                        rng.next() as u32,
                        rng.next() as u32,
                        5,
                    )
                    .to_vec();
                    h[2..4].copy_from_slice(&100u16.to_be_bytes());
                    h.extend_from_slice(&[0xee; 100]);
                    h
                }
                // SYN flood.
                _ => header(Flags::SYN, 0, rng.next() as u32, rng.next() as u32).to_vec(),
            };
            if buf.is_empty() {
                buf.push(0);
            }
            let s = &socks[(r >> 40) as usize % socks.len()];
            let _ = s.send_to(&buf, target);
            sent += 1;
            if sent & 63 == 0 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        sent
    });
    let expect = data.clone();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        (got, server)
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let mut c = client.connect(target).await.unwrap();
    c.write_all(&data).await.unwrap();
    c.shutdown().await.unwrap();
    let (got, server) = srv.await.unwrap();
    done.store(true, Ordering::Relaxed);
    let sent = flooder.join().unwrap();
    assert!(got == expect, "stream differs");
    let st = server.stats();
    eprintln!("flood of {sent}: {st:?}");
    assert!(st.malformed > 100, "{st:?}");
    assert!(st.syns > 100 && st.syn_acks_sent > 0, "{st:?}");
    assert!(st.unknown > 100, "{st:?}");
    assert_eq!(st.accepted, 1, "{st:?}");
}
