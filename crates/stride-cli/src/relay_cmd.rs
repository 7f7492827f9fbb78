//! `stride relay`: a userspace bottleneck in front of a server (see `stride_apps::relay`).

use crate::units::{fmt_ns, parse_bytes, parse_duration_ns, parse_prob, parse_rate, runtime};
use clap::Args;
use serde_json::json;
use std::net::SocketAddr;
use stride_apps::relay::{Capture, CaptureError, Relay, RelayConfig, RelayStats};

/// Arguments of `stride relay`.
#[derive(Args, Debug)]
#[command(
    after_help = "Client-to-server datagrams meet loss, duplication, a drop-tail queue drained at --rate, \
the delay and reordering; the way back only gets the delay. Prints drops, utilization and \
queueing delay p50/p99/max on exit (SIGINT, SIGTERM or --duration).\n\n\
Example:\n  stride relay --listen 127.0.0.1:7001 --to 127.0.0.1:7000 --rate 1gbit --delay 20us --queue 256KiB --loss 1%"
)]
pub struct RelayArgs {
    /// Address clients send to.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The server to forward to.
    #[arg(long, value_name = "ADDR")]
    pub to: SocketAddr,
    /// Bottleneck rate on the forward path (e.g. 1gbit, 500mbit; 0 = unlimited).
    #[arg(long, value_name = "R", value_parser = parse_rate, default_value = "0")]
    pub rate: u64,
    /// One-way propagation delay, each direction (e.g. 20us, 1ms; at most 1 day).
    #[arg(long, value_name = "D", value_parser = parse_delay, default_value = "0us")]
    pub delay: u64,
    /// Drop-tail queue capacity (e.g. 256KiB).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "256KiB")]
    pub queue: u64,
    /// Forward-path loss probability (0.01 or 1%).
    #[arg(long, value_name = "P", value_parser = parse_prob, default_value = "0")]
    pub loss: f64,
    /// Forward-path reordering probability: a packet is held back by up to --reorder-by.
    #[arg(long, value_name = "P", value_parser = parse_prob, default_value = "0")]
    pub reorder: f64,
    /// Largest extra hold of a reordered packet.
    #[arg(long, value_name = "D", value_parser = parse_delay, default_value = "100us")]
    pub reorder_by: u64,
    /// Forward-path duplication probability.
    #[arg(long, value_name = "P", value_parser = parse_prob, default_value = "0")]
    pub dup: f64,
    /// Random seed.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Most bytes held while they wait out --delay, both directions together, with or without
    /// --rate (beyond it datagrams are dropped and counted): bounds the relay's memory.
    #[arg(long, value_name = "BYTES", value_parser = parse_positive_bytes, default_value = "64MiB")]
    pub delay_line: u64,
    /// Most client addresses served at once (datagrams from more are dropped and counted).
    #[arg(long, value_name = "N", default_value_t = stride_apps::relay::DEFAULT_MAX_SESSIONS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub max_sessions: usize,
    /// Close a client's socket towards the server after this long without a datagram either
    /// way.
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout_ns, default_value = "60s")]
    pub idle_timeout: u64,
    /// Stop after this long, e.g. 10s (default: until SIGINT/SIGTERM).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout)]
    pub duration: Option<std::time::Duration>,
    /// Write every datagram the relay sends (both directions, as it leaves the relay) to FILE
    /// as a standard pcap (IP/UDP records; open it in Wireshark with `tools/wireshark/stride.lua`).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<std::path::PathBuf>,
    /// Print the final counters as one JSON object on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A delay of at most [`stride_apps::relay::MAX_DELAY_NS`] (longer ones would overflow the
/// relay's clock arithmetic).
fn parse_delay(s: &str) -> Result<u64, String> {
    let ns = parse_duration_ns(s)?;
    if ns > stride_apps::relay::MAX_DELAY_NS {
        return Err(format!("{s:?} is too long (at most 1 day)"));
    }
    Ok(ns)
}

/// A size of at least one byte.
fn parse_positive_bytes(s: &str) -> Result<u64, String> {
    match parse_bytes(s)? {
        0 => Err(format!("{s:?} must be positive")),
        n => Ok(n),
    }
}

/// The relay's counters as JSON.
pub fn stats_json(s: &RelayStats) -> serde_json::Value {
    json!({
        "sessions": s.sessions,
        "forwarded_packets": s.fwd_out,
        "forwarded_bytes": s.fwd_bytes,
        "returned_packets": s.rev_out,
        "queue_drops": s.queue_drops,
        "queue_drops_after_10ms": s.queue_drops_late,
        "random_drops": s.random_drops,
        "duplicated": s.duplicated,
        "reordered": s.reordered,
        "utilization": (s.utilization() * 1e4).round() / 1e4,
        "queue_delay_p50_ns": s.queue_delay.quantile(0.5),
        "queue_delay_p99_ns": s.queue_delay.quantile(0.99),
        "queue_delay_max_ns": s.queue_delay.max(),
        "socket_drops": s.socket_drops,
        "delay_line_drops": s.delay_line_drops,
        "delay_line_peak_bytes": s.delay_line_peak,
        "session_drops": s.session_drops,
        "idle_sockets_closed": s.idle_closed,
        "late_p99_ns": s.late.quantile(0.99),
        "late_max_ns": s.late.max(),
    })
}

/// A human summary of the relay's counters.
pub fn stats_human(s: &RelayStats) -> String {
    format!(
        "relay: forwarded {} packets ({} bytes), drops: queue {} ({} after the first 10 ms) random {} socket {} delay line {} (peak {} bytes) sessions {}; duplicated {}, reordered {}; bottleneck utilization {:.1} %; queueing delay measured in the relay's queue p50 {} p99 {} max {}; sent late (relay thread off its CPU) p99 {} max {}",
        s.fwd_out,
        s.fwd_bytes,
        s.queue_drops,
        s.queue_drops_late,
        s.random_drops,
        s.socket_drops,
        s.delay_line_drops,
        s.delay_line_peak,
        s.session_drops,
        s.duplicated,
        s.reordered,
        s.utilization() * 100.0,
        fmt_ns(s.queue_delay.quantile(0.5)),
        fmt_ns(s.queue_delay.quantile(0.99)),
        fmt_ns(s.queue_delay.max()),
        fmt_ns(s.late.quantile(0.99)),
        fmt_ns(s.late.max()),
    )
}

/// Builds the relay settings from the arguments.
pub fn config(a: &RelayArgs) -> RelayConfig {
    RelayConfig {
        listen: a.listen,
        to: a.to,
        rate_bps: a.rate,
        delay_ns: a.delay,
        queue_bytes: a.queue,
        loss: a.loss,
        reorder: a.reorder,
        reorder_ns: a.reorder_by,
        dup: a.dup,
        seed: a.seed,
        delay_line_bytes: a.delay_line,
        max_sessions: a.max_sessions,
        idle_ns: a.idle_timeout,
    }
}

/// `stride relay`.
pub fn run(a: RelayArgs) -> anyhow::Result<()> {
    let capture = match &a.pcap {
        Some(path) => Some(
            Capture::create(path).map_err(|e| anyhow::anyhow!("--pcap {}: {e}", path.display()))?,
        ),
        None => None,
    };
    let relay = match Relay::spawn_tapped(config(&a), capture.as_ref().map(Capture::tap)) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => crate::units::fail("relay", e),
        Err(e) => crate::units::fail("relay", format!("cannot listen on {}: {e}", a.listen)),
    };
    let rt = runtime()?;
    // The handlers are in place before the address is announced: a script that signals the
    // relay as soon as it read the line does not find the inherited disposition.
    let stop = rt.block_on(async { stride_apps::stop::stop_signals() })?;
    eprintln!("relay {} -> {}", relay.local_addr(), a.to);
    rt.block_on(async {
        let dur = async {
            match a.duration {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            sig = stop => eprintln!("relay: stopping on {}", sig.name()),
            _ = dur => {}
        }
    });
    let s = relay.stop();
    if let (Some(c), Some(path)) = (capture, &a.pcap) {
        match c.finish() {
            Ok(n) => eprintln!("relay: {n} packets written to {}", path.display()),
            Err(CaptureError::Stopped(e)) => {
                anyhow::bail!("--pcap {}: capture stopped: {e}", path.display())
            }
            Err(CaptureError::Flush(e)) => anyhow::bail!("--pcap {}: {e}", path.display()),
        }
    }
    if a.json {
        println!("{}", stats_json(&s));
    }
    eprintln!("{}", stats_human(&s));
    Ok(())
}
