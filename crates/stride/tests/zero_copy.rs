//! The zero-copy stream calls over real loopback sockets: chunks written with `write_chunk`
//! (mixed with ordinary writes) arrive intact through `read_chunk` (mixed with `read_chunks` and ordinary reads).

mod common;

use common::pattern;
use stride::{Bytes, Endpoint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_and_copies_interleave_both_ways() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr();
    // Sizes: tiny, one datagram, a GSO run, larger than the send buffer's slice.
    let sizes = [1usize, 7, 1_400, 1_441, 65_536, 300_000, 3, 1_000_000];
    let mut sent = Vec::new();
    let chunks: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| pattern(n, k as u8))
        .collect();
    for c in &chunks {
        sent.extend_from_slice(c);
    }
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        let mut small = [0u8; 1000];
        let mut turn = 0u32;
        loop {
            if turn % 3 == 2 {
                let n = s.read(&mut small).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&small[..n]);
            } else if turn % 3 == 1 {
                let mut v = Vec::new();
                let n = s.read_chunks(&mut v, 30_000).await.unwrap();
                if n == 0 {
                    break;
                }
                assert!(n <= 30_000 + 65_536 && n == v.iter().map(|b| b.len()).sum::<usize>());
                for b in v {
                    got.extend_from_slice(&b);
                }
            } else {
                match s.read_chunk(50_000).await.unwrap() {
                    Some(b) => {
                        assert!(!b.is_empty() && b.len() <= 50_000);
                        got.extend_from_slice(&b);
                    }
                    None => break,
                }
            }
            turn += 1;
        }
        // Echo it back as one chunk.
        s.write_chunk(Bytes::from(got.clone())).await.unwrap();
        s.shutdown().await.unwrap();
        got
    });
    let mut c = client.connect(addr).await.unwrap();
    for (k, ch) in chunks.iter().enumerate() {
        if k % 2 == 0 {
            c.write_chunk(Bytes::from(ch.clone())).await.unwrap();
        } else {
            c.write_all(ch).await.unwrap();
        }
    }
    c.shutdown().await.unwrap();
    let mut back = Vec::new();
    while let Some(b) = c.read_chunk(usize::MAX).await.unwrap() {
        back.extend_from_slice(&b);
    }
    let at_server = srv.await.unwrap();
    assert!(
        at_server == sent,
        "up stream differs ({} of {} bytes)",
        at_server.len(),
        sent.len()
    );
    assert!(
        back == sent,
        "echo differs ({} of {} bytes)",
        back.len(),
        sent.len()
    );
}
