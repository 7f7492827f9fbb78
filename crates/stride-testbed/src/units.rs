//! Rates, sizes and durations as written in testbed files ("1gbit", "256KiB", "64KB").

/// A rate in bit/s: a number with an optional `kbit`, `mbit`, `gbit` suffix (decimal).
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mul) = split_suffix(
        &t,
        &[("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)],
    );
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a rate (e.g. 1gbit, 300mbit)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{s:?} is not a rate (e.g. 1gbit, 300mbit)"));
    }
    Ok((v * mul).round() as u64)
}

/// A size in bytes: a number with an optional `B`, `KB`/`MB` (decimal) or `KiB`/`MiB` suffix.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mul) = split_suffix(
        &t,
        &[
            ("kib", 1024.0),
            ("mib", 1048576.0),
            ("gib", 1073741824.0),
            ("kb", 1e3),
            ("mb", 1e6),
            ("gb", 1e9),
            ("b", 1.0),
        ],
    );
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 256KiB, 64KB, 1MiB)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{s:?} is not a size (e.g. 256KiB, 64KB, 1MiB)"));
    }
    Ok((v * mul).round() as u64)
}

fn split_suffix<'a>(t: &'a str, sfx: &[(&str, f64)]) -> (&'a str, f64) {
    for (s, m) in sfx {
        if let Some(n) = t.strip_suffix(s) {
            return (n, *m);
        }
    }
    (t, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rates_and_sizes() {
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("2.5Mbit").unwrap(), 2_500_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65536);
        assert_eq!(parse_bytes("10KB").unwrap(), 10_000);
        assert_eq!(parse_bytes("1500").unwrap(), 1500);
        assert!(parse_rate("fast").is_err());
        assert!(parse_bytes("-3KB").is_err());
    }
}
