//! Open connections that carry nothing cost their driver threads nothing but the protocol's
//! own timers: no fixed poll interval.

use std::time::{Duration, Instant};
use stride::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Connections held open and idle.
const CONNS: usize = 100;

/// 100 connections on loopback exchange one byte each, then stay open and idle for a second:
/// neither driver may wake more than a few times in it. Nothing is due in that second (the
/// keepalive comes after a quarter of the 30 s idle timeout, the delayed ACKs and the
/// retransmission timers are done), so the bound allows one sleep per side for the second
/// plus the wake-ups a slow machine spends finishing the set-up. (A driver that capped its
/// sleep at a few milliseconds woke 200 times a second or more.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_do_not_wake_their_drivers() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            listen: false,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let srv = tokio::spawn(async move {
        let mut held = Vec::new();
        for _ in 0..CONNS {
            let mut s = server.accept().await.unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).await.unwrap();
            held.push(s);
        }
        (server, held)
    });
    let mut conns = Vec::new();
    for _ in 0..CONNS {
        let mut c = client.connect(addr).await.unwrap();
        c.write_all(b"x").await.unwrap();
        conns.push(c);
    }
    let (server, held) = srv.await.unwrap();
    // Let the delayed ACKs and the retransmission timers of the set-up run out.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s0, c0) = (server.io_stats(), client.io_stats());
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let secs = start.elapsed().as_secs_f64();
    let (s1, c1) = (server.io_stats(), client.io_stats());
    let woke = [
        s1.driver_sleeps - s0.driver_sleeps,
        c1.driver_sleeps - c0.driver_sleeps,
    ];
    println!(
        "driver sleeps in {secs:.2} s with {CONNS} idle connections (server, client): {woke:?}"
    );
    // An idle driver sleeps up to a second between looks; the bound leaves room for the
    // last turns of the set-up and a second that ends late.
    let most = secs as u64 + 3;
    for w in woke {
        assert!(w <= most, "{woke:?} sleeps, at most {most}");
    }
    drop((conns, held));
}
