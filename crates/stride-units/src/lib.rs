//! The one unit grammar STRIDE uses for every duration, rate and size, on the command line
//! (`stride send --connect-timeout 3s`, `stride relay --rate 1gbit --delay 20us`) and in
//! scenario files (`link_delay = "1us"`, `host_rate = "100gbit"`).
//!
//! A value is a non-negative finite decimal number (`20`, `1.5`, `1e3`, `10_000`) followed by
//! an optional unit, with optional space between:
//!
//! | kind     | units (case-insensitive unless noted)                                      | bare number |
//! |----------|----------------------------------------------------------------------------|-------------|
//! | duration | `ns`, `us` (`µs`, `μs`), `ms`, `s`, `min`, `h`                             | only `0`    |
//! | rate     | bit/s: `bit`, `kbit`, `mbit`, `gbit`, `tbit` (also `bps`/`bit/s` spellings, `k`/`m`/`g`/`t`) | only `0` |
//! | size     | `B`; `k`/`KB`, `M`/`MB`, `G`/`GB`, `T`/`TB` (x1000); `KiB`, `MiB`, `GiB`, `TiB` (x1024) | bytes |
//!
//! A bare number is refused for durations and rates (is `--delay 20` 20 s or 20 µs? is
//! `--rate 100` bit/s or Gbit/s?) except `0`, which means the same in every unit. Sizes default
//! to bytes. Rates are in bits per second: `1GB/s`-style byte rates are refused with a hint.
//! `inf`, `nan`, negative values and values beyond the 64-bit range of the result (about 584
//! years in nanoseconds) are refused, each with an error that quotes the input.
//!
//! ```
//! use stride_units::{parse_duration_ns, parse_rate_bps, parse_bytes};
//! assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
//! assert_eq!(parse_rate_bps("100gbit"), Ok(100_000_000_000));
//! assert_eq!(parse_bytes("64KiB"), Ok(65_536));
//! assert!(parse_duration_ns("20").unwrap_err().contains("needs a unit"));
//! ```
//!
//! Around the grammar, two small pieces every front end shares: `overrides::apply_set`, the
//! `--set dotted.key=value` override of a TOML file (feature `toml`), and
//! [`stats::median`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "toml")]
pub mod overrides;
pub mod stats;

/// Splits `s` into its number and its unit (unit trimmed, original case kept).
fn split(s: &str) -> Result<(f64, &str), String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty value".into());
    }
    if t.starts_with('-') {
        return Err(format!("{s:?} is negative"));
    }
    let b = t.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && (b[*i].is_ascii_digit() || b[*i] == b'_') {
            *i += 1;
        }
        *i > st
    };
    let mut any = digits(&mut i);
    if i < b.len() && b[i] == b'.' {
        i += 1;
        any |= digits(&mut i);
    }
    if !any {
        return Err(format!(
            "{s:?} is not a number (expected e.g. 20us, 1.5ms, 10gbit, 64KiB)"
        ));
    }
    // An exponent only when digits follow (`1e9`, `2.5E-3`); otherwise the `e` starts a unit.
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            i = j;
            digits(&mut i);
        }
    }
    let n: f64 = t[..i]
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if !n.is_finite() {
        return Err(format!("{s:?} is out of range"));
    }
    Ok((n, t[i..].trim()))
}

/// `n * mul` as a u64, refusing results beyond u64 and (if `whole`) fractions of the base unit.
fn scale(s: &str, n: f64, mul: f64, what: &str) -> Result<u64, String> {
    let v = n * mul;
    // 2^64 is exactly representable; anything at or above it does not fit.
    if !v.is_finite() || v >= 18_446_744_073_709_551_616.0 {
        return Err(format!("{s:?} is out of range (too large a {what})"));
    }
    Ok(v.round() as u64)
}

/// A duration in nanoseconds. See the crate documentation for the grammar.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let (n, u) = split(s)?;
    let mul = match u.to_ascii_lowercase().as_str() {
        "" if n == 0.0 => 1.0,
        "" => {
            return Err(format!(
                "{s:?} needs a unit (ns, us, ms, s, min, h): did you mean {s}s or {s}us?",
                s = s.trim()
            ))
        }
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => {
            return Err(format!(
                "unknown time unit {u:?} in {s:?} (use ns, us, ms, s, min, h)"
            ))
        }
    };
    scale(s, n, mul, "duration")
}

/// A duration that must be more than zero (timeouts, sampling periods).
pub fn parse_positive_duration_ns(s: &str) -> Result<u64, String> {
    match parse_duration_ns(s)? {
        0 => Err(format!("{s:?} must be more than zero")),
        v => Ok(v),
    }
}

/// A duration as a [`std::time::Duration`].
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    parse_duration_ns(s).map(std::time::Duration::from_nanos)
}

/// A rate in bits per second. See the crate documentation for the grammar.
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let (n, u) = split(s)?;
    // Upper-case `B` before `/s` or `ps` is bytes: refuse rather than guess.
    if u.ends_with("B/s") || u.ends_with("Bps") || u.ends_with('B') {
        return Err(format!(
            "{s:?}: rates are in bits per second (write e.g. 8gbit for 1 GB/s)"
        ));
    }
    let l = u.to_ascii_lowercase();
    let prefix = l
        .strip_suffix("bit/s")
        .or_else(|| l.strip_suffix("bps"))
        .or_else(|| l.strip_suffix("bit"))
        .or_else(|| l.strip_suffix("b/s"))
        .unwrap_or(&l);
    let has_unit = !l.is_empty();
    let mul = match prefix {
        "" if has_unit => 1.0,
        "" if n == 0.0 => 1.0,
        "" => {
            return Err(format!(
                "{s:?} needs a unit (bit, kbit, mbit, gbit, tbit): did you mean {s}gbit?",
                s = s.trim()
            ))
        }
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        _ => {
            return Err(format!(
                "unknown rate unit {u:?} in {s:?} (use bit, kbit, mbit, gbit, tbit)"
            ))
        }
    };
    scale(s, n, mul, "rate")
}

/// A size in bytes. See the crate documentation for the grammar.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (n, u) = split(s)?;
    let mul = match u.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1_048_576.0,
        "g" | "gb" => 1e9,
        "gib" => 1_073_741_824.0,
        "t" | "tb" => 1e12,
        "tib" => 1_099_511_627_776.0,
        _ => {
            return Err(format!(
                "unknown size unit {u:?} in {s:?} (use B, KB, KiB, MB, MiB, GB, GiB, TB, TiB)"
            ))
        }
    };
    let v = n * mul;
    if v.fract() != 0.0 && v < 1e15 {
        return Err(format!("{s:?} is not a whole number of bytes"));
    }
    scale(s, n, mul, "size")
}

/// Renders nanoseconds in the grammar, exactly (`1us`, `1500ns`, `2s`), so that the output
/// parses back to the same value.
pub fn fmt_duration_ns(ns: u64) -> String {
    for (m, u) in [
        (3_600_000_000_000, "h"),
        (60_000_000_000, "min"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
    ] {
        if ns >= m && ns % m == 0 {
            return format!("{}{u}", ns / m);
        }
    }
    format!("{ns}ns")
}

/// Renders bits per second in the grammar, exactly (`10gbit`, `1500mbit`, `7bit`).
pub fn fmt_rate_bps(bps: u64) -> String {
    if bps == 0 {
        return "0".into();
    }
    for (m, u) in [
        (1_000_000_000_000, "tbit"),
        (1_000_000_000, "gbit"),
        (1_000_000, "mbit"),
        (1_000, "kbit"),
    ] {
        if bps >= m && bps % m == 0 {
            return format!("{}{u}", bps / m);
        }
    }
    format!("{bps}bit")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("20us"), Ok(20_000));
        assert_eq!(parse_duration_ns("20 µs"), Ok(20_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("3s"), Ok(3_000_000_000));
        assert_eq!(parse_duration_ns("1e3ns"), Ok(1_000));
        assert_eq!(parse_duration_ns("2min"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert_eq!(
            parse_duration(" 10_000us "),
            Ok(std::time::Duration::from_millis(10))
        );
    }

    #[test]
    fn ambiguous_or_impossible_durations_are_refused_with_the_input_quoted() {
        for (bad, why) in [
            ("20", "needs a unit"),
            ("inf", "not a number"),
            ("infs", "not a number"),
            ("nan", "not a number"),
            ("-1s", "negative"),
            ("-1", "negative"),
            ("1e30s", "out of range"),
            ("1e20s", "out of range"),
            ("600years", "unknown time unit"),
            ("3m", "unknown time unit"),
            ("", "empty"),
            ("s", "not a number"),
        ] {
            let e = parse_duration_ns(bad).unwrap_err();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
        assert!(parse_positive_duration_ns("0s")
            .unwrap_err()
            .contains("more than zero"));
        assert_eq!(parse_positive_duration_ns("1ns"), Ok(1));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("1gbit"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("1Gbps"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("500Mbit/s"), Ok(500_000_000));
        assert_eq!(parse_rate_bps("10g"), Ok(10_000_000_000));
        assert_eq!(parse_rate_bps("1e9bit"), Ok(1_000_000_000));
        assert_eq!(parse_rate_bps("0"), Ok(0));
        assert!(parse_rate_bps("100").unwrap_err().contains("needs a unit"));
        assert!(parse_rate_bps("1GB/s")
            .unwrap_err()
            .contains("bits per second"));
        assert!(parse_rate_bps("1e30gbit")
            .unwrap_err()
            .contains("out of range"));
        assert!(parse_rate_bps("1x")
            .unwrap_err()
            .contains("unknown rate unit"));
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("1500"), Ok(1500));
        assert_eq!(parse_bytes("256KB"), Ok(256_000));
        assert_eq!(parse_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_bytes("1.5k"), Ok(1500));
        assert_eq!(parse_bytes("10M"), Ok(10_000_000));
        assert!(parse_bytes("0.5").unwrap_err().contains("whole number"));
        assert!(parse_bytes("1x").unwrap_err().contains("unknown size unit"));
        assert!(parse_bytes("1e30GB").unwrap_err().contains("out of range"));
    }

    #[test]
    fn rendering_parses_back_exactly() {
        for ns in [
            0,
            1,
            999,
            1_000,
            1_500,
            20_000,
            1_500_000,
            3_000_000_000,
            7_200_000_000_000,
        ] {
            assert_eq!(parse_duration_ns(&fmt_duration_ns(ns)), Ok(ns), "{ns}");
        }
        assert_eq!(fmt_duration_ns(1_000), "1us");
        for bps in [0, 7, 1_000, 1_500_000_000, 10_000_000_000, 400_000_000_000] {
            assert_eq!(parse_rate_bps(&fmt_rate_bps(bps)), Ok(bps), "{bps}");
        }
        assert_eq!(fmt_rate_bps(10_000_000_000), "10gbit");
    }
}
