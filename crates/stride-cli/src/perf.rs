//! `stride perf`: memory-to-memory throughput test with per-second interval reports.

use crate::units::{fail, human, parse_bytes, report, runtime};
use clap::{Args, Subcommand};
use serde_json::json;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use stride::Endpoint;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Arguments of `stride perf`.
#[derive(Args, Debug)]
#[command(
    after_help = "Example:\n  stride perf server --listen 0.0.0.0:7100\n  stride perf client --to 10.0.0.2:7100 --time 10"
)]
pub struct PerfArgs {
    #[command(subcommand)]
    pub role: Role,
}

/// Server or client.
#[derive(Subcommand, Debug)]
pub enum Role {
    /// Accept connections and discard what they send; one report line per connection.
    Server {
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        /// One JSON object per connection.
        #[arg(long)]
        json: bool,
        /// Serve kernel TCP instead of STRIDE (same harness, for comparison).
        #[arg(long)]
        tcp: bool,
    },
    /// Send a fixed amount of data or for a fixed time and report goodput every second.
    Client {
        /// The `perf server` address.
        #[arg(long, value_name = "ADDR")]
        to: SocketAddr,
        /// Send this many bytes (e.g. 1GB, 100MiB).
        #[arg(long, value_name = "N", value_parser = parse_bytes, conflicts_with = "time", required_unless_present = "time")]
        bytes: Option<u64>,
        /// Send for this many seconds.
        #[arg(long, value_name = "SECS")]
        time: Option<f64>,
        /// Only the final report, as one JSON object.
        #[arg(long)]
        json: bool,
        /// Use kernel TCP instead of STRIDE (same harness, for comparison).
        #[arg(long)]
        tcp: bool,
    },
}

/// `stride perf`.
pub fn run(a: PerfArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    let code = rt.block_on(async move {
        match a.role {
            Role::Server { listen, json, tcp } if tcp => tcp_server(listen, json).await,
            Role::Server { listen, json, .. } => server(listen, json).await,
            Role::Client {
                to,
                bytes,
                time,
                json,
                tcp,
            } if tcp => tcp_client(to, bytes, time, json).await,
            Role::Client {
                to,
                bytes,
                time,
                json,
                ..
            } => client(to, bytes, time, json).await,
        }
    });
    drop(rt);
    std::process::exit(code)
}

async fn server(listen: SocketAddr, json_out: bool) -> i32 {
    let ep = match Endpoint::bind(listen) {
        Ok(ep) => ep,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    eprintln!("perf server listening on {}", ep.local_addr());
    loop {
        let mut s = match ep.accept().await {
            Ok(s) => s,
            Err(e) => fail("perf server", e),
        };
        tokio::spawn(async move {
            let t = Instant::now();
            let mut buf = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            let r = loop {
                match s.read(&mut buf).await {
                    Ok(0) => break Ok(()),
                    Ok(n) => total += n as u64,
                    Err(e) => break Err(e),
                }
            };
            let _ = s.shutdown().await;
            let secs = t.elapsed().as_secs_f64();
            let gbps = total as f64 * 8.0 / secs.max(1e-9) / 1e9;
            if json_out {
                println!(
                    "{}",
                    json!({"remote": s.remote_addr().to_string(), "bytes": total, "seconds": secs,
                           "goodput_gbps": gbps, "ok": r.is_ok()})
                );
            } else {
                match r {
                    Ok(()) => println!(
                        "{}: received {total} bytes in {secs:.3} s = {gbps:.3} Gbit/s",
                        s.remote_addr()
                    ),
                    Err(e) => eprintln!("{}: failed after {total} bytes: {e}", s.remote_addr()),
                }
            }
        });
    }
}

async fn client(to: SocketAddr, bytes: Option<u64>, time: Option<f64>, json_out: bool) -> i32 {
    let bind: SocketAddr = if to.is_ipv6() {
        "[::]:0".parse().expect("addr")
    } else {
        "0.0.0.0:0".parse().expect("addr")
    };
    let ep = match Endpoint::client(bind) {
        Ok(ep) => ep,
        Err(e) => fail("perf client", e),
    };
    let mut s = match ep.connect_timeout(to, Duration::from_secs(3)).await {
        Ok(s) => s,
        Err(e) => fail(
            "perf client",
            format!("peer unreachable or refused at {to}: {e}"),
        ),
    };
    let chunk = vec![0u8; 256 * 1024];
    let start = Instant::now();
    let limit = time.map(Duration::from_secs_f64);
    let mut written = 0u64;
    let mut next_report = Duration::from_secs(1);
    let mut last_acked = 0u64;
    let mut last_retx = 0u64;
    if !json_out {
        println!("connected to {to}");
        println!(
            "{:>15}  {:>10}  {:>12}  {:>8}  {:>10}",
            "interval", "MBytes", "Gbit/s", "retx", "qdelay p50"
        );
    }
    loop {
        let el = start.elapsed();
        if let Some(l) = limit {
            if el >= l {
                break;
            }
        }
        let n = match bytes {
            Some(b) if written >= b => break,
            Some(b) => (b - written).min(chunk.len() as u64) as usize,
            None => chunk.len(),
        };
        if let Err(e) = s.write_all(&chunk[..n]).await {
            fail("perf client", format!("transfer failed: {e}"));
        }
        written += n as u64;
        let el = start.elapsed();
        if el >= next_report {
            let acked = written - s.unacked() as u64;
            let cs = s.stats().unwrap_or_default();
            if !json_out {
                let d = acked - last_acked;
                println!(
                    "{:>6.2}-{:>6.2} s  {:>10.2}  {:>12.3}  {:>8}  {:>10}",
                    next_report.as_secs_f64() - 1.0,
                    el.as_secs_f64(),
                    d as f64 / 1e6,
                    d as f64 * 8.0 / 1e9 / (el.as_secs_f64() - (next_report.as_secs_f64() - 1.0)),
                    cs.retransmitted_packets - last_retx,
                    crate::units::fmt_ns(cs.queue_delay.quantile(0.5)),
                );
            }
            last_acked = acked;
            last_retx = cs.retransmitted_packets;
            next_report += Duration::from_secs(1);
        }
    }
    if let Err(e) = s.shutdown().await {
        fail("perf client", format!("transfer failed: {e}"));
    }
    let secs = start.elapsed().as_secs_f64();
    let cs = s.stats().unwrap_or_default();
    let m = report(written, secs, &cs);
    if json_out {
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!("total: {}", human(&m));
    }
    let mut sink = [0u8; 64];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    0
}

async fn tcp_server(listen: SocketAddr, json_out: bool) -> i32 {
    let l = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    if let Ok(a) = l.local_addr() {
        eprintln!("perf server (tcp) listening on {a}");
    }
    loop {
        let (mut s, remote) = match l.accept().await {
            Ok(s) => s,
            Err(e) => fail("perf server", e),
        };
        tokio::spawn(async move {
            let t = Instant::now();
            let mut buf = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            let _ = s.write_all(b"k").await;
            let secs = t.elapsed().as_secs_f64();
            let gbps = total as f64 * 8.0 / secs.max(1e-9) / 1e9;
            if json_out {
                println!(
                    "{}",
                    json!({"remote": remote.to_string(), "bytes": total, "seconds": secs, "goodput_gbps": gbps})
                );
            } else {
                println!("{remote}: received {total} bytes in {secs:.3} s = {gbps:.3} Gbit/s");
            }
        });
    }
}

/// The TCP twin of `client`: same chunking and timing; the end is the server's one-byte
/// confirmation after it read everything (TCP has no "all acknowledged" signal).
async fn tcp_client(to: SocketAddr, bytes: Option<u64>, time: Option<f64>, json_out: bool) -> i32 {
    let mut s = match tokio::net::TcpStream::connect(to).await {
        Ok(s) => s,
        Err(e) => fail("perf client", format!("cannot connect to {to}: {e}")),
    };
    let chunk = vec![0u8; 256 * 1024];
    let start = Instant::now();
    let limit = time.map(Duration::from_secs_f64);
    let mut written = 0u64;
    loop {
        if limit.is_some_and(|l| start.elapsed() >= l) {
            break;
        }
        let n = match bytes {
            Some(b) if written >= b => break,
            Some(b) => (b - written).min(chunk.len() as u64) as usize,
            None => chunk.len(),
        };
        if let Err(e) = s.write_all(&chunk[..n]).await {
            fail("perf client", format!("transfer failed: {e}"));
        }
        written += n as u64;
    }
    let _ = s.shutdown().await;
    let mut k = [0u8; 1];
    if let Err(e) = s.read_exact(&mut k).await {
        fail("perf client", format!("no confirmation: {e}"));
    }
    let secs = start.elapsed().as_secs_f64();
    let gbps = written as f64 * 8.0 / secs / 1e9;
    if json_out {
        println!(
            "{}",
            json!({"bytes": written, "seconds": secs, "goodput_gbps": gbps, "transport": "tcp"})
        );
    } else {
        println!("total: {written} bytes in {secs:.3} s = {gbps:.3} Gbit/s (tcp)");
    }
    0
}
