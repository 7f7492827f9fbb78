//! Shared by the endpoint tests: test data, one stream from a client endpoint to a server
//! endpoint, and request/response exchanges on one.
// Each test crate that includes this module uses only some of it.
#![allow(dead_code)]

use stride::{Endpoint, Stream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `n` bytes of test data, different for each `seed` and without short repeats.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ seed)
        .collect()
}

/// Sends `data` from `client` to `server` on one connection, closes it, and returns what the
/// server read.
pub async fn one_way(server: &Endpoint, client: &Endpoint, data: &[u8]) -> Vec<u8> {
    let addr = server.local_addr();
    let srv = server.clone();
    let rx = tokio::spawn(async move {
        let mut s = srv.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    let mut c = client.connect(addr).await.unwrap();
    c.write_all(data).await.unwrap();
    c.shutdown().await.unwrap();
    rx.await.unwrap()
}

/// `rounds` request/response exchanges of 64 bytes on one connection from `client` to
/// `server` (the server answers each request reversed; every answer is checked), then the
/// stream is closed. Returns the server's I/O counters, read after its last write, and its
/// connection's counters.
pub async fn reverse_echo(
    server: Endpoint,
    client: &Endpoint,
    rounds: u32,
) -> (stride::IoStats, stride::ConnStats) {
    let addr = server.local_addr();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        answer_reversed(&mut s, rounds).await;
        (server.io_stats(), s.stats().unwrap_or_default())
    });
    let mut c = client.connect(addr).await.unwrap();
    ask_reversed(&mut c, rounds, 0).await;
    c.shutdown().await.unwrap();
    srv.await.unwrap()
}

/// Answers `rounds` 64-byte requests on `s`, each with the request reversed, then closes it.
pub async fn answer_reversed(s: &mut Stream, rounds: u32) {
    let mut buf = [0u8; 64];
    for _ in 0..rounds {
        s.read_exact(&mut buf).await.unwrap();
        buf.reverse();
        s.write_all(&buf).await.unwrap();
    }
    s.shutdown().await.unwrap();
}

/// Sends `rounds` 64-byte requests on `s` (their bytes differ per round and per `salt`) and
/// checks that each answer is its request reversed.
pub async fn ask_reversed(s: &mut Stream, rounds: u32, salt: u32) {
    let mut resp = [0u8; 64];
    for i in 0..rounds {
        let req: Vec<u8> = (0..64u32)
            .map(|k| (salt * 5 + i * 7 + k * 13) as u8)
            .collect();
        s.write_all(&req).await.unwrap();
        s.read_exact(&mut resp).await.unwrap();
        assert!(
            resp.iter().eq(req.iter().rev()),
            "salt {salt}, round trip {i}"
        );
    }
}
