//! Benchmark: one STRIDE endpoint holding many concurrent connections, each moving a little
//! data at a low rate, on loopback.
//!
//! `cargo run --release -p stride --example many_connections -- [N] [SECONDS] [BYTES]`
//! (defaults 10000, 10, 200): N connections from one client endpoint (one UDP socket) to one
//! server endpoint, in one process. Each connection writes BYTES once a second for SECONDS
//! (starts spread over the first second), then closes; the server reads every stream to its
//! end. Prints, as one JSON object: resident memory per connection while idle (both ends of
//! each connection live in this process, so per connection *end* = delta / 2N), the CPU time
//! per delivered write, and whether every byte arrived.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// CPU time (user + system) this process has used so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers: N SECONDS BYTES"))
        .collect();
    let n = args.first().copied().unwrap_or(10_000) as usize;
    let secs = args.get(1).copied().unwrap_or(10);
    let bytes = args.get(2).copied().unwrap_or(200) as usize;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(run(n, secs, bytes))
}

async fn run(n: usize, secs: u64, bytes: usize) -> Result<(), Box<dyn std::error::Error>> {
    let mut proto = stride::host_config(10_000_000_000);
    // Every connection comes from one address here; the default per-source limit is 1024.
    proto.max_per_source = n + 16;
    proto.max_connections = proto.max_connections.max(2 * n + 16);
    let server = stride::Endpoint::bind_with(
        "127.0.0.1:0".parse()?,
        stride::EndpointConfig {
            proto: proto.clone(),
            ..Default::default()
        },
    )?;
    let client = stride::Endpoint::bind_with(
        "127.0.0.1:0".parse()?,
        stride::EndpointConfig {
            proto,
            listen: false,
            ..Default::default()
        },
    )?;
    let to = server.local_addr();
    let received = Arc::new(AtomicU64::new(0));
    let ended = Arc::new(AtomicU64::new(0));
    {
        let (server, received, ended) = (server.clone(), received.clone(), ended.clone());
        tokio::spawn(async move {
            while let Ok(mut s) = server.accept().await {
                let (received, ended) = (received.clone(), ended.clone());
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(k) = s.read(&mut buf).await {
                        if k == 0 {
                            ended.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        received.fetch_add(k as u64, Ordering::Relaxed);
                    }
                });
            }
        });
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let rss0 = rss_bytes();

    // Open every connection (256 handshakes in flight at a time) and write once.
    let t = Instant::now();
    let mut streams = Vec::with_capacity(n);
    let chunk = vec![0x42u8; bytes];
    while streams.len() < n {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..(n - streams.len()).min(256) {
            let c = client.clone();
            set.spawn(async move { c.connect_timeout(to, Duration::from_secs(10)).await });
        }
        while let Some(r) = set.join_next().await {
            let mut s = r??;
            s.write_all(&chunk).await?;
            streams.push(s);
        }
    }
    let connect_s = t.elapsed().as_secs_f64();
    while received.load(Ordering::Relaxed) < (n * bytes) as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_idle = rss_bytes();
    let conns = (client.connection_count(), server.connection_count());

    // Traffic: each connection writes once a second, staggered, then closes.
    let cpu0 = cpu_seconds();
    let t = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (i, mut s) in streams.into_iter().enumerate() {
        let chunk = chunk.clone();
        let offset = Duration::from_micros((i as u64 * 1_000_000) / n as u64);
        set.spawn(async move {
            tokio::time::sleep(offset).await;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            for _ in 0..secs {
                tick.tick().await;
                s.write_all(&chunk).await?;
            }
            s.shutdown().await?;
            Ok::<_, std::io::Error>(())
        });
    }
    let mut failed = 0;
    while let Some(r) = set.join_next().await {
        if !matches!(r, Ok(Ok(()))) {
            failed += 1;
        }
    }
    let want = (n * bytes) as u64 * (1 + secs);
    let deadline = Instant::now() + Duration::from_secs(30);
    while (received.load(Ordering::Relaxed) < want || ended.load(Ordering::Relaxed) < n as u64)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let traffic_s = t.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let writes = n as u64 * secs;
    let got = received.load(Ordering::Relaxed);
    let s = server.stats();
    println!(
        "{{\"connections\":{n},\"held_client\":{},\"held_server\":{},\"connect_seconds\":{connect_s:.3},\
\"rss_base_mib\":{:.1},\"rss_idle_mib\":{:.1},\"rss_per_connection_end_bytes\":{},\
\"writes\":{writes},\"traffic_seconds\":{traffic_s:.2},\"cpu_seconds\":{cpu:.2},\
\"cpu_us_per_write\":{:.1},\"bytes_expected\":{want},\"bytes_received\":{got},\"streams_ended\":{},\
\"write_failures\":{failed},\"server_accepted\":{},\"server_refused\":{}}}",
        conns.0,
        conns.1,
        rss0 as f64 / 1048576.0,
        rss_idle as f64 / 1048576.0,
        rss_idle.saturating_sub(rss0) / (2 * n as u64),
        cpu * 1e6 / writes.max(1) as f64,
        ended.load(Ordering::Relaxed),
        s.accepted,
        s.refused_full + s.refused_per_source,
    );
    if got != want || failed > 0 {
        return Err("not every byte arrived".into());
    }
    Ok(())
}
