//! Parsing of sizes, rates, durations and probabilities on the command line, and the shared
//! report fields of `send`, `perf client` and `demo`.

use serde_json::{json, Map, Value};
use stride::ConnStats;

// One grammar for every command and scenario key: see the `stride-units` crate.
pub use stride_units::{parse_bytes, parse_duration_ns, parse_rate_bps as parse_rate};

/// A timeout or run time: a duration of at least 1 ms (`0`, `1ns`, `inf`, `nan`, `-1s` and
/// bare numbers are refused rather than clamped or left to panic later).
pub fn parse_timeout_ns(s: &str) -> Result<u64, String> {
    let ns = parse_duration_ns(s)?;
    if ns < 1_000_000 {
        return Err(format!("{s:?} is too short (at least 1ms)"));
    }
    Ok(ns)
}

/// [`parse_timeout_ns`] as a [`std::time::Duration`].
pub fn parse_timeout(s: &str) -> Result<std::time::Duration, String> {
    parse_timeout_ns(s).map(std::time::Duration::from_nanos)
}

/// Probability: `0.01` or `1%`.
pub fn parse_prob(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let p = if let Some(pct) = t.strip_suffix('%') {
        pct.trim()
            .parse::<f64>()
            .map_err(|_| format!("not a probability: {s:?}"))?
            / 100.0
    } else {
        t.parse::<f64>()
            .map_err(|_| format!("not a probability: {s:?}"))?
    };
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("probability out of 0..1: {s:?}"));
    }
    Ok(p)
}

/// `1.23 µs`-style rendering of nanoseconds.
pub fn fmt_ns(ns: u64) -> String {
    if ns >= 1_000_000_000 {
        format!("{:.2} s", ns as f64 / 1e9)
    } else if ns >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else if ns >= 1_000 {
        format!("{:.1} µs", ns as f64 / 1e3)
    } else {
        format!("{ns} ns")
    }
}

/// The transfer report fields shared by `send`, `perf client` and `demo`.
pub fn report(bytes: u64, seconds: f64, cs: &ConnStats) -> Map<String, Value> {
    let gbps = if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e9
    } else {
        0.0
    };
    let mut m = Map::new();
    m.insert("bytes".into(), json!(bytes));
    m.insert("seconds".into(), json!((seconds * 1e6).round() / 1e6));
    m.insert("goodput_gbps".into(), json!((gbps * 1e4).round() / 1e4));
    m.insert("packets_sent".into(), json!(cs.packets_sent));
    m.insert(
        "retransmitted_packets".into(),
        json!(cs.retransmitted_packets),
    );
    m.insert("nacks_received".into(), json!(cs.nacks_received));
    m.insert("timeouts".into(), json!(cs.timeouts));
    m.insert("stt_min_ns".into(), json!(cs.stt_min));
    m.insert(
        "queue_delay_p50_ns".into(),
        json!(cs.queue_delay.quantile(0.5)),
    );
    m.insert(
        "queue_delay_p99_ns".into(),
        json!(cs.queue_delay.quantile(0.99)),
    );
    m.insert(
        "pacing_lateness_p50_ns".into(),
        json!(cs.pacing_lateness.quantile(0.5)),
    );
    m.insert(
        "pacing_lateness_p99_ns".into(),
        json!(cs.pacing_lateness.quantile(0.99)),
    );
    m.insert("pacing_forfeit_ns".into(), json!(cs.pacing_forfeit_ns));
    m.insert("cc_mode_switches".into(), json!(cs.cc_mode_switches));
    m.insert("cc_competitive_ns".into(), json!(cs.cc_competitive_ns));
    m
}

/// One human line for a report.
pub fn human(m: &Map<String, Value>) -> String {
    let g = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    format!(
        "{} bytes in {:.3} s = {:.3} Gbit/s; packets {} (retransmitted {}), NACKs {}, timeouts {}; queueing delay estimated by the sender from STT (STT minus its minimum, software timestamps) p50 {} p99 {}",
        g("bytes"),
        g("seconds").as_f64().unwrap_or(0.0),
        g("goodput_gbps").as_f64().unwrap_or(0.0),
        g("packets_sent"),
        g("retransmitted_packets"),
        g("nacks_received"),
        g("timeouts"),
        fmt_ns(g("queue_delay_p50_ns").as_u64().unwrap_or(0)),
        fmt_ns(g("queue_delay_p99_ns").as_u64().unwrap_or(0)),
    )
}

/// A multi-threaded tokio runtime sized for this machine (at most two workers).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Prints `stride CMD: MSG` on stderr and exits with status 1.
pub fn fail(cmd: &str, msg: impl std::fmt::Display) -> ! {
    eprintln!("stride {cmd}: {msg}");
    std::process::exit(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_bytes("256KB"), Ok(256_000));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("10M"), Ok(10_000_000));
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert!(parse_bytes("1x").is_err());
        assert_eq!(parse_rate("1gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate("500Mbps"), Ok(500_000_000));
        assert!(parse_rate("1e9").is_err());
        assert_eq!(parse_duration_ns("20us"), Ok(20_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert!(parse_duration_ns("2").is_err());
        assert_eq!(parse_timeout("3s"), Ok(std::time::Duration::from_secs(3)));
        for bad in ["0", "0s", "1ns", "inf", "1e20", "1e20s", "nan", "-1s", "3"] {
            assert!(parse_timeout(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_prob("1%"), Ok(0.01));
        assert_eq!(parse_prob("0.05"), Ok(0.05));
        assert!(parse_prob("2").is_err());
    }
}
