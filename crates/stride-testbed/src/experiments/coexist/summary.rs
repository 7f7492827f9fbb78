//! The coexistence report: each case over its steady window ([`window`]), STRIDE before and
//! after the competitor leaves ([`leaves`]), the medians per pairing over the repetitions, and
//! the tables.

use super::{Case, Sample};
use crate::report::mean;
use crate::scenario::Testbed;
use serde_json::{json, Map, Value};
use stride_units::stats::median;

/// How long STRIDE's queue must stay at or below its level alone to count as back there, s
/// (or half of what is left of the run after the competitor left, if that is less).
pub(crate) const SETTLED_S: f64 = 1.0;

/// A case's figures over a window of its samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Window {
    /// STRIDE's mean throughput, bit/s.
    pub(crate) stride_bps: f64,
    /// TCP's, likewise.
    pub(crate) tcp_bps: f64,
    /// Jain's index of the two (NaN alone).
    pub(crate) jain: f64,
    /// The bottleneck's queueing delay p50 and p99, µs.
    pub(crate) q50: f64,
    /// See `q50`.
    pub(crate) q99: f64,
    /// STRIDE's own queueing delay p50 and p99, µs.
    pub(crate) stride_q50: f64,
    /// See `stride_q50`.
    pub(crate) stride_q99: f64,
}

/// The quantile `q` of `v` (sorted in place): the sample at rank `floor((n - 1) q)`; NaN when
/// empty.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    v[((v.len() - 1) as f64 * q) as usize]
}

/// The mean of `f` over the samples `s`, each weighted by its period: bits over seconds.
fn weighted(s: &[&Sample], f: fn(&Sample) -> f64) -> f64 {
    let secs: f64 = s.iter().map(|x| x.dt).sum();
    if secs > 0.0 {
        s.iter().map(|x| f(x) * x.dt).sum::<f64>() / secs
    } else {
        mean(&s.iter().map(|x| f(x)).collect::<Vec<_>>())
    }
}

/// The figures of the samples `s` (alone: Jain's index NaN).
fn figures(s: &[&Sample], alone: bool) -> Window {
    let col = |f: fn(&Sample) -> f64| -> Vec<f64> { s.iter().map(|x| f(x)).collect() };
    let (x, y) = (weighted(s, |s| s.stride_bps), weighted(s, |s| s.tcp_bps));
    let (mut q, mut sq) = (col(|s| s.queue_us), col(|s| s.stride_queue_us));
    Window {
        stride_bps: x,
        tcp_bps: y,
        jain: if alone {
            f64::NAN
        } else {
            (x + y).powi(2) / (2.0 * (x * x + y * y))
        },
        q50: quantile(&mut q, 0.5),
        q99: quantile(&mut q, 0.99),
        stride_q50: quantile(&mut sq, 0.5),
        stride_q99: quantile(&mut sq, 0.99),
    }
}

/// A case's steady window: after the first second (start-up excluded), and, when the
/// competitor leaves early, up to its leaving.
pub(crate) fn window(tb: &Testbed, case: &Case) -> Window {
    let end = match tb.file.coexistence.competitor_stop_s {
        Some(stop) if case.cc != "none" => stop,
        _ => f64::INFINITY,
    };
    let s: Vec<&Sample> = case
        .samples
        .iter()
        .filter(|s| s.t > 1.0 && s.t <= end)
        .collect();
    figures(&s, case.cc == "none")
}

/// STRIDE once the competitor has left.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Leaves {
    /// When the competitor's last bytes arrived, s: it stops writing at `stop`, but what its
    /// socket still held drains after that. The start of the first sampling period after `stop`
    /// from which on it carries less than 1 % of the bottleneck rate (the run's end if none).
    pub(crate) left_s: f64,
    /// The window before (from 1 s to `stop`).
    pub(crate) before: Window,
    /// The window after (from `left_s` to the end).
    pub(crate) after: Window,
    /// Seconds from `left_s` until STRIDE's queueing delay is at or below its level alone and
    /// stays there for [`SETTLED_S`]; None if it never does.
    pub(crate) settled_s: Option<f64>,
}

/// [`Leaves`] of the samples `s` of a bottleneck of `rate` bit/s, the competitor stopping at
/// `stop` s, STRIDE's level alone `level_us`.
pub(crate) fn leaves(s: &[Sample], stop: f64, level_us: f64, rate: f64) -> Leaves {
    let end = s.last().map_or(stop, |x| x.t);
    let left_s = (0..s.len())
        .find(|&i| s[i].t > stop && s[i..].iter().all(|y| y.tcp_bps < 0.01 * rate))
        .map_or(end, |i| if i > 0 { s[i - 1].t.max(stop) } else { stop });
    let before: Vec<&Sample> = s.iter().filter(|x| x.t > 1.0 && x.t <= stop).collect();
    let after: Vec<&Sample> = s.iter().filter(|x| x.t > left_s).collect();
    let hold = SETTLED_S.min((end - left_s) / 2.0);
    let settled_s = after.iter().enumerate().find_map(|(i, x)| {
        let fits = x.t + hold <= end + 1e-9;
        let stays = after[i..]
            .iter()
            .take_while(|y| y.t <= x.t + hold)
            .all(|y| y.stride_queue_us <= level_us);
        (fits && stays).then_some(x.t - left_s)
    });
    Leaves {
        left_s,
        before: figures(&before, false),
        after: figures(&after, false),
        settled_s,
    }
}

/// STRIDE's queueing-delay level alone: the median over the `none` cases of their p99, at
/// least one 1500-byte packet at the bottleneck rate (a queue holding one packet is empty
/// enough). NaN without such cases.
fn level_alone(tb: &Testbed, cases: &[Case]) -> f64 {
    let mut v: Vec<f64> = cases
        .iter()
        .filter(|k| k.cc == "none")
        .map(|k| window(tb, k).stride_q99)
        .collect();
    median(&mut v).max(1500.0 * 8.0 / tb.link.rate_bps as f64 * 1e6)
}

/// A window's figures as report fields (`suffix` after each name).
fn window_fields(m: &mut Map<String, Value>, w: &Window, suffix: &str) {
    for (k, v) in [
        ("stride_bps", w.stride_bps),
        ("tcp_bps", w.tcp_bps),
        ("jain", w.jain),
        ("queue_delay_p50_us", w.q50),
        ("queue_delay_p99_us", w.q99),
        ("stride_queue_delay_p50_us", w.stride_q50),
        ("stride_queue_delay_p99_us", w.stride_q99),
    ] {
        m.insert(format!("{k}{suffix}"), json!(v));
    }
}

/// A case's report entry: its figures, and with the competitor leaving, before / after.
fn case_json(tb: &Testbed, case: &Case, level_us: f64) -> Value {
    let mut m = Map::new();
    m.insert("against".into(), json!(case.cc));
    m.insert("rep".into(), json!(case.rep));
    window_fields(&mut m, &window(tb, case), "");
    // What STRIDE's sender saw: STT less its minimum, every ACK of the whole flow.
    if let Some([p50, p99]) = case.stride.stt_queue_delay_ns {
        m.insert(
            "stride_stt_queue_delay_p50_us".into(),
            json!(p50 as f64 / 1e3),
        );
        m.insert(
            "stride_stt_queue_delay_p99_us".into(),
            json!(p99 as f64 / 1e3),
        );
    }
    m.insert("drops".into(), json!(case.drops));
    if let Some([switches, ns]) = case.stride.cc_mode {
        m.insert("stride_mode_switches".into(), json!(switches));
        m.insert("stride_competitive_s".into(), json!(ns as f64 / 1e9));
    }
    m.insert("stride_bytes".into(), json!(case.bytes.0));
    m.insert("tcp_bytes".into(), json!(case.bytes.1));
    m.insert(
        "bands".into(),
        case.bands.map_or(Value::Null, |b| {
            let q = |s: &crate::topo::QdiscStats| {
                json!({"sent_bytes": s.sent_bytes, "sent_packets": s.sent_packets, "dropped": s.dropped})
            };
            json!({"stride": q(&b.stride), "other": q(&b.other)})
        }),
    );
    m.insert("stride".into(), json!(case.stride));
    m.insert("tcp".into(), json!(case.tcp));
    if let (Some(stop), true) = (tb.file.coexistence.competitor_stop_s, case.cc != "none") {
        let l = leaves(&case.samples, stop, level_us, tb.link.rate_bps as f64);
        let mut c = Map::new();
        c.insert("competitor_left_s".into(), json!(l.left_s));
        window_fields(&mut c, &l.before, "_before");
        window_fields(&mut c, &l.after, "_after");
        c.insert("stride_level_alone_us".into(), json!(level_us));
        c.insert("settled_s".into(), json!(l.settled_s));
        m.insert("competitor_leaves".into(), Value::Object(c));
    }
    let samples: Vec<Value> = case
        .samples
        .iter()
        .map(|s| json!([s.t, s.stride_bps, s.tcp_bps, s.queue_us, s.stride_queue_us]))
        .collect();
    m.insert("samples".into(), json!(samples));
    Value::Object(m)
}

/// The median of field `k` over `entries` (NaN and null left out; a `settled_s` of null,
/// never settled, counts as longer than any). Null when nothing is left or the median never
/// settled.
fn median_of(entries: &[&Map<String, Value>], k: &str) -> Value {
    let mut v: Vec<f64> = entries
        .iter()
        .filter_map(|e| match e.get(k) {
            Some(Value::Null) if k == "settled_s" => Some(f64::INFINITY),
            Some(x) => x.as_f64().filter(|f| !f.is_nan()),
            None => None,
        })
        .collect();
    let m = median(&mut v);
    if m.is_finite() {
        json!(m)
    } else {
        Value::Null
    }
}

/// The medians of every numeric field of `entries` (one pairing's cases).
fn medians(entries: &[&Map<String, Value>]) -> Map<String, Value> {
    let mut m = Map::new();
    let Some(first) = entries.first() else {
        return m;
    };
    for (k, v) in first.iter() {
        if v.is_number() || k == "settled_s" {
            m.insert(k.clone(), median_of(entries, k));
        }
    }
    m
}

/// The report's `pairs` (medians per pairing), `cases` (every case) and the tables.
pub(super) fn summarize(tb: &Testbed, cases: &[Case]) -> (Vec<Value>, Vec<Value>, String) {
    let level = level_alone(tb, cases);
    let per_case: Vec<Value> = cases.iter().map(|k| case_json(tb, k, level)).collect();
    let mut pairs = Vec::new();
    for cc in &tb.file.coexistence.against {
        let mine: Vec<&Map<String, Value>> = per_case
            .iter()
            .filter_map(Value::as_object)
            .filter(|o| o["against"] == json!(cc))
            .collect();
        let mut p = medians(&mine);
        p.remove("rep");
        // Every repetition's switches count ("never entered" must hold in each).
        let most = mine
            .iter()
            .filter_map(|e| e.get("stride_mode_switches").and_then(Value::as_u64))
            .max();
        if let Some(most) = most {
            p.insert("stride_mode_switches_max".into(), json!(most));
        }
        p.insert("against".into(), json!(cc));
        p.insert("cases".into(), json!(mine.len()));
        let leaving: Vec<&Map<String, Value>> = mine
            .iter()
            .filter_map(|o| o.get("competitor_leaves").and_then(Value::as_object))
            .collect();
        if !leaving.is_empty() {
            p.insert("competitor_leaves".into(), Value::Object(medians(&leaving)));
        }
        pairs.push(Value::Object(p));
    }
    let tables = tables(tb, &pairs);
    (pairs, per_case, tables)
}

/// The Markdown tables of the medians.
fn tables(tb: &Testbed, pairs: &[Value]) -> String {
    let n = tb.file.repetitions;
    let f = |p: &Value, k: &str, scale: f64, prec: usize| match p[k].as_f64() {
        Some(v) => format!("{:.prec$}", v / scale),
        None => "–".into(),
    };
    let mut md = format!(
        "\nMedians of {n} interleaved repetition(s); STRIDE's queue is its own class's with `htb-dscp`; its STT queue is what its sender estimated (STT less its minimum, every ACK).\n\n| pair | STRIDE Mbit/s | TCP Mbit/s | Jain | queue delay p50 / p99 (µs) | STRIDE's queue p50 / p99 (µs) | STRIDE's STT queue p50 / p99 (µs) | drops | STRIDE's switches / s competitive |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for p in pairs {
        md.push_str(&format!(
            "| stride + {} | {} | {} | {} | {} / {} | {} / {} | {} / {} | {} | {} / {} |\n",
            p["against"].as_str().unwrap_or(""),
            f(p, "stride_bps", 1e6, 1),
            f(p, "tcp_bps", 1e6, 1),
            f(p, "jain", 1.0, 3),
            f(p, "queue_delay_p50_us", 1.0, 0),
            f(p, "queue_delay_p99_us", 1.0, 0),
            f(p, "stride_queue_delay_p50_us", 1.0, 0),
            f(p, "stride_queue_delay_p99_us", 1.0, 0),
            f(p, "stride_stt_queue_delay_p50_us", 1.0, 0),
            f(p, "stride_stt_queue_delay_p99_us", 1.0, 0),
            f(p, "drops", 1.0, 0),
            f(p, "stride_mode_switches", 1.0, 0),
            f(p, "stride_competitive_s", 1.0, 1),
        ));
    }
    if let Some(stop) = tb.file.coexistence.competitor_stop_s {
        md.push_str(&format!(
            "\nThe competitor stops sending after {stop} s: STRIDE before / after its last bytes arrived, and the time from then until STRIDE's queue is back at its level alone (its p99 alone) for {SETTLED_S} s.\n\n| pair | STRIDE Mbit/s | TCP Mbit/s | STRIDE's queue p99 (µs) | back to its level alone after (s) |\n|---|---|---|---|---|\n"
        ));
        for p in pairs
            .iter()
            .filter(|p| p.get("competitor_leaves").is_some())
        {
            let c = &p["competitor_leaves"];
            md.push_str(&format!(
                "| stride + {} | {} / {} | {} / {} | {} / {} | {} |\n",
                p["against"].as_str().unwrap_or(""),
                f(c, "stride_bps_before", 1e6, 1),
                f(c, "stride_bps_after", 1e6, 1),
                f(c, "tcp_bps_before", 1e6, 1),
                f(c, "tcp_bps_after", 1e6, 1),
                f(c, "stride_queue_delay_p99_us_before", 1.0, 0),
                f(c, "stride_queue_delay_p99_us_after", 1.0, 0),
                match c["settled_s"].as_f64() {
                    Some(v) => format!("{v:.1}"),
                    None => "never".into(),
                },
            ));
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: f64, q: f64, tcp_until: f64) -> Sample {
        Sample {
            t,
            dt: 0.1,
            stride_bps: 1e8,
            tcp_bps: if t <= tcp_until { 1e8 } else { 0.0 },
            stride_queue_us: q,
            ..Sample::default()
        }
    }

    #[test]
    fn the_queue_counts_as_back_once_it_stays_down() {
        // Competitor leaves at 5 s; the queue is high until 6.3 s, dips at 5.5 s.
        let run = |tcp_until: f64| -> Vec<Sample> {
            (1..=100)
                .map(|i| {
                    let t = i as f64 / 10.0;
                    let q = if t <= 6.3 && t != 5.5 { 2000.0 } else { 100.0 };
                    at(t, q, tcp_until)
                })
                .collect()
        };
        let s = run(5.0);
        let l = leaves(&s, 5.0, 200.0, 1e9);
        assert_eq!(l.left_s, 5.0);
        let settled = l.settled_s.expect("settled");
        assert!((settled - 1.4).abs() < 1e-9, "{settled}");
        assert!((l.before.tcp_bps - 1e8).abs() < 1.0);
        assert_eq!(l.after.tcp_bps, 0.0);
        assert_eq!(l.after.stride_q50, 100.0);
        // Never below the level: never settled.
        assert_eq!(leaves(&s, 5.0, 50.0, 1e9).settled_s, None);
        // The competitor's socket drained until 5.3 s: it left then, and the time counts
        // from there.
        let l = leaves(&run(5.3), 5.0, 200.0, 1e9);
        assert!((l.left_s - 5.3).abs() < 1e-9, "{}", l.left_s);
        assert!((l.settled_s.unwrap() - 1.1).abs() < 1e-9);
    }

    #[test]
    fn medians_skip_gaps_and_count_never_as_longest() {
        let a = json!({"x": 1.0, "settled_s": 0.5, "s": "a"});
        let b = json!({"x": 3.0, "settled_s": null, "s": "b"});
        let c = json!({"x": null, "settled_s": null, "s": "c"});
        let e: Vec<&Map<String, Value>> = [&a, &b, &c]
            .iter()
            .map(|v| v.as_object().unwrap())
            .collect();
        let m = medians(&e);
        assert_eq!(m["x"], json!(2.0));
        // Two of three never settled: the median did not either.
        assert_eq!(m["settled_s"], Value::Null);
        assert!(!m.contains_key("s"));
        assert_eq!(median_of(&e[..2], "settled_s"), Value::Null);
        assert_eq!(median_of(&[e[0], e[0], e[1]], "settled_s"), json!(0.5));
    }

    #[test]
    fn throughput_weighs_each_period_by_its_length() {
        // 0.9 s at 100 Mbit/s, then a late 0.1 s period that read a burst at 1 Gbit/s: the
        // bytes over the second, not the mean of the two rates.
        let a = Sample {
            dt: 0.9,
            stride_bps: 1e8,
            ..Sample::default()
        };
        let b = Sample {
            dt: 0.1,
            stride_bps: 1e9,
            ..Sample::default()
        };
        let w = figures(&[&a, &b], true);
        assert!((w.stride_bps - 1.9e8).abs() < 1.0, "{}", w.stride_bps);
    }

    #[test]
    fn quantiles_take_the_lower_rank() {
        let mut v: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.99), 98.0);
        assert_eq!(quantile(&mut v, 0.5), 49.0);
        assert!(quantile(&mut [], 0.5).is_nan());
    }
}
