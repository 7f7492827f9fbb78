//! The checks of a parsed testbed file, section by section in file order, each deriving the
//! values the experiments use.

use super::{
    bad, positive, AckSweepCfg, BackgroundCfg, BottleneckCfg, CoexistCfg, ForegroundCfg, Mode,
    Pattern, StrideCfg, SttCfg, TestbedError, TestbedFile, Transport,
};
use crate::topo::{Bottleneck, Qdisc};
use stride_units::{parse_bytes, parse_rate_bps};

/// `mode`, `experiment` and `repetitions`.
pub(super) fn header(file: &TestbedFile) -> Result<Mode, TestbedError> {
    let mode = match file.mode.as_str() {
        "netns" => Mode::Netns,
        "relay" => Mode::Relay,
        "auto" => Mode::Auto,
        m => return Err(bad("mode", format!("{m:?} is not netns, relay or auto"))),
    };
    if !["fct", "ack_interval", "stt", "coexistence"].contains(&file.experiment.as_str()) {
        return Err(bad(
            "experiment",
            format!(
                "{:?} is not fct, ack_interval, stt or coexistence",
                file.experiment
            ),
        ));
    }
    if file.repetitions == 0 {
        return Err(bad("repetitions", "must be at least 1"));
    }
    Ok(mode)
}

/// `[bottleneck]`.
pub(super) fn bottleneck(b: &BottleneckCfg) -> Result<Bottleneck, TestbedError> {
    let rate = parse_rate_bps(&b.rate).map_err(|e| bad("bottleneck.rate", e))?;
    if rate < 1_000_000 {
        return Err(bad("bottleneck.rate", "must be at least 1mbit"));
    }
    let queue = parse_bytes(&b.queue).map_err(|e| bad("bottleneck.queue", e))?;
    if queue < 3000 {
        return Err(bad(
            "bottleneck.queue",
            "must hold at least two 1500-byte packets",
        ));
    }
    let burst = parse_bytes(&b.burst).map_err(|e| bad("bottleneck.burst", e))?;
    if burst < 1600 {
        return Err(bad(
            "bottleneck.burst",
            "must hold at least one 1500-byte packet",
        ));
    }
    let qdisc = match b.qdisc.as_str() {
        "tbf" => Qdisc::Tbf,
        "htb" => Qdisc::Htb,
        // The codepoint comes from `stride.dscp` ([`classes`]).
        "htb-dscp" => Qdisc::HtbDscp {
            dscp: 0,
            borrow: b.class_borrow.unwrap_or(true),
        },
        q => {
            return Err(bad(
                "bottleneck.qdisc",
                format!(
                    "{q:?} is not tbf, htb or htb-dscp (netem is not available in this kernel)"
                ),
            ))
        }
    };
    if b.class_borrow.is_some() && !matches!(qdisc, Qdisc::HtbDscp { .. }) {
        return Err(bad(
            "bottleneck.class_borrow",
            "applies to qdisc = \"htb-dscp\" only (the classes it borrows between)",
        ));
    }
    Ok(Bottleneck {
        rate_bps: rate,
        queue_bytes: queue,
        burst_bytes: burst,
        qdisc,
        overhead: 0,
    })
}

/// A background rate: absolute (`60mbit`) or a percentage of the bottleneck's `rate` (`30%`).
fn bg_rate(rate: u64, field: &str, v: &str) -> Result<u64, TestbedError> {
    let r = if let Some(p) = v.trim().strip_suffix('%') {
        let f: f64 = p
            .trim()
            .parse()
            .map_err(|_| bad(field, format!("{v:?} is not a rate or a percentage")))?;
        if !(0.0..=200.0).contains(&f) {
            return Err(bad(field, "percentage must be within 0..200"));
        }
        (rate as f64 * f / 100.0) as u64
    } else {
        parse_rate_bps(v).map_err(|e| bad(field, e))?
    };
    Ok(r)
}

/// `[background]`: the patterns in order, with their rates resolved against the bottleneck's
/// `rate`.
pub(super) fn background(file: &TestbedFile, rate: u64) -> Result<Vec<Pattern>, TestbedError> {
    let bg = &file.background;
    if !["pinned", "iperf3"].contains(&bg.generator.as_str()) {
        return Err(bad(
            "background.generator",
            format!("{:?} is not pinned or iperf3", bg.generator),
        ));
    }
    if !(64..=1472).contains(&bg.packet) {
        return Err(bad("background.packet", "must be within 64..=1472 bytes"));
    }
    if bg.patterns.is_empty() {
        return Err(bad("background.patterns", "must name at least one pattern"));
    }
    let mut patterns = Vec::new();
    for p in &bg.patterns {
        let pat = pattern(bg, p, rate, file.seed)?;
        if bg.generator == "iperf3"
            && matches!(pat, Pattern::Random { .. } | Pattern::Linear { .. })
        {
            return Err(bad(
                "background.generator",
                "iperf3 holds one fixed rate per run: use generator = \"pinned\" for the random and linear patterns",
            ));
        }
        patterns.push(pat);
    }
    Ok(patterns)
}

/// The background pattern called `name`.
fn pattern(bg: &BackgroundCfg, name: &str, rate: u64, seed: u64) -> Result<Pattern, TestbedError> {
    Ok(match name {
        "none" => Pattern::None,
        "fixed" => Pattern::Fixed(bg_rate(rate, "background.fixed_rate", &bg.fixed_rate)?),
        "random" => {
            let min = bg_rate(rate, "background.random_min", &bg.random_min)?;
            let max = bg_rate(rate, "background.random_max", &bg.random_max)?;
            if max < min {
                return Err(bad("background.random_max", "is below random_min"));
            }
            if !positive(bg.random_period_ms) {
                return Err(bad("background.random_period_ms", "must be positive"));
            }
            Pattern::Random {
                min,
                max,
                period_ns: (bg.random_period_ms * 1e6) as u64,
                seed,
            }
        }
        "linear" => {
            if !positive(bg.linear_period_s) {
                return Err(bad("background.linear_period_s", "must be positive"));
            }
            Pattern::Linear {
                from: bg_rate(rate, "background.linear_from", &bg.linear_from)?,
                to: bg_rate(rate, "background.linear_to", &bg.linear_to)?,
                period_ns: (bg.linear_period_s * 1e9) as u64,
            }
        }
        other => {
            return Err(bad(
                "background.patterns",
                format!("unknown pattern {other:?} (none, fixed, random, linear)"),
            ))
        }
    })
}

/// `[foreground]`: its transports, each `stride` or one of the `kernel`'s congestion controls.
pub(super) fn foreground(
    fg: &ForegroundCfg,
    kernel: &[String],
) -> Result<Vec<Transport>, TestbedError> {
    let mut transports = Vec::new();
    if fg.transports.is_empty() {
        return Err(bad(
            "foreground.transports",
            "must name at least one transport",
        ));
    }
    for t in &fg.transports {
        if t == "stride" {
            transports.push(Transport::Stride);
        } else if kernel.iter().any(|k| k == t) {
            transports.push(Transport::Tcp(t.clone()));
        } else {
            return Err(bad(
                "foreground.transports",
                format!(
                    "{t:?} is neither stride nor a congestion control this kernel offers ({})",
                    kernel.join(", ")
                ),
            ));
        }
    }
    if fg.blocks.is_empty() || fg.blocks.iter().any(|b| !(1..=5).contains(b)) {
        return Err(bad(
            "foreground.blocks",
            "must list categories within 1..=5",
        ));
    }
    if fg.flows_per_block == 0 {
        return Err(bad("foreground.flows_per_block", "must be at least 1"));
    }
    if !["back_to_back", "poisson"].contains(&fg.arrival.as_str()) {
        return Err(bad(
            "foreground.arrival",
            format!("{:?} is not back_to_back or poisson", fg.arrival),
        ));
    }
    if !(fg.load > 0.0 && fg.load < 1.0) {
        return Err(bad("foreground.load", "must be within (0, 1)"));
    }
    if !positive(fg.timeout_s) {
        return Err(bad("foreground.timeout_s", "must be positive"));
    }
    Ok(transports)
}

/// An ACK interval: 1440 bytes ..= 4 MiB.
fn ack_bytes(field: &str, s: &str) -> Result<u32, TestbedError> {
    let v = parse_bytes(s).map_err(|e| bad(field, e))?;
    if !(1440..=4 << 20).contains(&v) {
        return Err(bad(field, "must be within 1440 bytes ..= 4 MiB"));
    }
    Ok(v as u32)
}

/// `[stride]`: the line rate (default: the bottleneck's `rate`), the ACK interval and the DSCP.
pub(super) fn stride(s: &StrideCfg, rate: u64) -> Result<(u64, u32, stride::Dscp), TestbedError> {
    let line_bps = match &s.line_rate {
        Some(s) => parse_rate_bps(s).map_err(|e| bad("stride.line_rate", e))?,
        None => rate,
    };
    if line_bps < 1_000_000 {
        return Err(bad("stride.line_rate", "must be at least 1mbit"));
    }
    let ack_interval = match &s.ack_interval {
        Some(s) => ack_bytes("stride.ack_interval", s)?,
        None => 64 * 1024,
    };
    let dscp = match &s.dscp {
        Some(d) => d.parse().map_err(|e| bad("stride.dscp", e))?,
        None => stride::Dscp::DEFAULT,
    };
    Ok((line_bps, ack_interval, dscp))
}

/// `bottleneck.qdisc = "htb-dscp"` classifies by STRIDE's codepoint, which must then be set
/// and not 0 (the class of unmarked traffic, TCP's).
pub(super) fn classes(
    mut link: Bottleneck,
    dscp: stride::Dscp,
) -> Result<Bottleneck, TestbedError> {
    if let Qdisc::HtbDscp { borrow, .. } = link.qdisc {
        if dscp == stride::Dscp::DEFAULT {
            return Err(bad(
                "bottleneck.qdisc",
                "htb-dscp gives STRIDE's DSCP a class of its own: set `stride.dscp` (not 0, the class unmarked TCP is in)",
            ));
        }
        link.qdisc = Qdisc::HtbDscp {
            dscp: dscp.value(),
            borrow,
        };
    }
    Ok(link)
}

/// `[ack_sweep]`: the intervals and the block size.
pub(super) fn ack_sweep(a: &AckSweepCfg) -> Result<(Vec<u32>, u64), TestbedError> {
    let mut intervals = Vec::new();
    for s in &a.intervals {
        intervals.push(ack_bytes("ack_sweep.intervals", s)?);
    }
    if intervals.is_empty() {
        return Err(bad(
            "ack_sweep.intervals",
            "must list at least one interval",
        ));
    }
    let block = parse_bytes(&a.block).map_err(|e| bad("ack_sweep.block", e))?;
    if block == 0 {
        return Err(bad("ack_sweep.block", "must be positive"));
    }
    if a.flows == 0 {
        return Err(bad("ack_sweep.flows", "must be at least 1"));
    }
    Ok((intervals, block))
}

/// `[stt]`.
pub(super) fn stt(s: &SttCfg) -> Result<(), TestbedError> {
    if s.interval_us == 0 {
        return Err(bad("stt.interval_us", "must be positive"));
    }
    if !positive(s.duration_s) {
        return Err(bad("stt.duration_s", "must be positive"));
    }
    if !(16..=1472).contains(&s.packet) {
        return Err(bad("stt.packet", "must be within 16..=1472 bytes"));
    }
    Ok(())
}

/// `[coexistence]`: every `against` is `none` or one of the `kernel`'s congestion controls.
pub(super) fn coexistence(c: &CoexistCfg, kernel: &[String]) -> Result<(), TestbedError> {
    for a in &c.against {
        if a != "none" && !kernel.iter().any(|k| k == a) {
            return Err(bad(
                "coexistence.against",
                format!(
                    "{a:?} is not a congestion control this kernel offers ({})",
                    kernel.join(", ")
                ),
            ));
        }
    }
    if !positive(c.duration_s) {
        return Err(bad("coexistence.duration_s", "must be positive"));
    }
    if c.sample_ms == 0 {
        return Err(bad("coexistence.sample_ms", "must be positive"));
    }
    if let Some(stop) = c.competitor_stop_s {
        let f = "coexistence.competitor_stop_s";
        if !positive(stop) || stop >= c.duration_s {
            return Err(bad(f, "must be within (0, duration_s)"));
        }
        if !c.against.iter().any(|a| a == "none") || c.against.iter().all(|a| a == "none") {
            return Err(bad(
                f,
                "compares STRIDE after the competitor left with STRIDE alone: `against` must include \"none\" and a congestion control",
            ));
        }
    }
    Ok(())
}
