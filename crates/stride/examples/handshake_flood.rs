//! Flood benchmark (admission control): one host opens as many connections as it can to a
//! receiver with default limits and never sends data, then a real sender from another address
//! transfers a file.
//!
//! `cargo run --release -p stride --example handshake_flood -- [ATTEMPTS]` (default 20000).
//! Prints one JSON object: connections the flooder got, handshakes the server refused, the
//! server's connection count and resident memory, whether the real sender got through, and
//! how many fake connections remain after the server's unused-connection timeout (10 s).

use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn rss_mib() -> f64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / 1048576.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let attempts: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("ATTEMPTS"))
        .unwrap_or(20_000);
    let server = stride::Endpoint::bind("127.0.0.1:0".parse()?)?;
    let to = server.local_addr();
    // The application accepts everything it is given and waits for data (like stride recv).
    {
        let server = server.clone();
        tokio::spawn(async move {
            while let Ok(mut s) = server.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 256];
                    while matches!(s.read(&mut b).await, Ok(n) if n > 0) {}
                });
            }
        });
    }
    let mut proto = stride::host_config(10_000_000_000);
    proto.max_connections = attempts + 16;
    let flooder = stride::Endpoint::bind_with(
        "127.0.0.1:0".parse()?,
        stride::EndpointConfig {
            proto,
            listen: false,
            ..Default::default()
        },
    )?;
    let t = Instant::now();
    let mut held = Vec::new();
    let mut failed = 0usize;
    let mut left = attempts;
    while left > 0 {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..left.min(512) {
            let f = flooder.clone();
            set.spawn(async move { f.connect_timeout(to, Duration::from_millis(500)).await });
        }
        left -= left.min(512);
        while let Some(r) = set.join_next().await {
            match r? {
                Ok(s) => held.push(s),
                Err(_) => failed += 1,
            }
        }
    }
    let flood_s = t.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let during = server.connection_count();
    let rss = rss_mib();
    // A real sender from another address.
    let real = stride::Endpoint::client("127.0.0.2:0".parse()?)?;
    let t = Instant::now();
    let ok = match real.connect_timeout(to, Duration::from_secs(3)).await {
        Ok(mut s) => s.write_all(&[7u8; 100_000]).await.is_ok() && s.shutdown().await.is_ok(),
        Err(_) => false,
    };
    let real_ms = t.elapsed().as_secs_f64() * 1e3;
    // The fake connections carry nothing: the server culls them after unused_timeout.
    tokio::time::sleep(Duration::from_secs(12)).await;
    let after = server.connection_count();
    let st = server.stats();
    println!(
        "{{\"attempts\":{attempts},\"flooder_connected\":{},\"flooder_failed\":{failed},\"flood_seconds\":{flood_s:.2},\
\"server_connections_during\":{during},\"server_refused_per_source\":{},\"server_refused_full\":{},\
\"rss_mib_during\":{rss:.1},\"real_sender_ok\":{ok},\"real_sender_ms\":{real_ms:.1},\
\"server_connections_after_12s\":{after}}}",
        held.len(),
        st.refused_per_source,
        st.refused_full,
    );
    drop(held);
    if !ok {
        return Err("the real sender was locked out".into());
    }
    Ok(())
}
