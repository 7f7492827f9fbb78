//! Parsing of sizes, rates, durations and probabilities on the command line, and the shared
//! report fields of `send`, `perf client` and `demo`.

use serde_json::{json, Map, Value};
use stride::ConnStats;

fn split_num(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '_'))
        .unwrap_or(s.len());
    // "1e9" is a number; "1e" followed by letters is not: keep it simple and strict.
    let (n, unit) = s.split_at(end);
    let n: f64 = n
        .replace('_', "")
        .parse()
        .map_err(|_| format!("not a number: {s:?}"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("out of range: {s:?}"));
    }
    Ok((n, unit.trim().to_ascii_lowercase()))
}

/// Bytes: `1500`, `64k`/`64KB` (x1000), `64KiB` (x1024), `10M`, `10MB`, `10MiB`, `1G`, `1GiB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, u) = split_num(s)?;
    let m: f64 = match u.as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "unknown size unit in {s:?} (use B, KB, KiB, MB, MiB, GB, GiB)"
            ))
        }
    };
    Ok((n * m).round() as u64)
}

/// Rate in bits per second: `1g`, `1gbit`, `1Gbps`, `500m`, `100mbit`, `1e9`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let (n, u) = split_num(s)?;
    let u = u
        .trim_end_matches("bit/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit")
        .to_string();
    let m = match u.as_str() {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(format!(
                "unknown rate unit in {s:?} (use e.g. 1gbit, 500mbit)"
            ))
        }
    };
    Ok((n * m).round() as u64)
}

/// Duration in ns: `20us`, `20µs`, `1.5ms`, `100ns`, `2s`; a bare number is seconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let (n, u) = split_num(s)?;
    let m = match u.as_str() {
        "" | "s" => 1e9,
        "ms" => 1e6,
        "us" | "µs" => 1e3,
        "ns" => 1.0,
        _ => return Err(format!("unknown time unit in {s:?} (use ns, us, ms, s)")),
    };
    Ok((n * m).round() as u64)
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
    m
}

/// Reads `s` to its end, discarding the bytes; returns how many there were.
pub use stride::perf::discard_to_end;

/// One human line for a report.
pub fn human(m: &Map<String, Value>) -> String {
    let g = |k: &str| m.get(k).cloned().unwrap_or(Value::Null);
    format!(
        "{} bytes in {:.3} s = {:.3} Gbit/s; packets {} (retransmitted {}), NACKs {}, timeouts {}, queueing delay p50 {} p99 {}",
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
        assert_eq!(parse_rate("1e9"), Ok(1_000_000_000));
        assert_eq!(parse_duration_ns("20us"), Ok(20_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("2"), Ok(2_000_000_000));
        assert_eq!(parse_prob("1%"), Ok(0.01));
        assert_eq!(parse_prob("0.05"), Ok(0.05));
        assert!(parse_prob("2").is_err());
    }
}
