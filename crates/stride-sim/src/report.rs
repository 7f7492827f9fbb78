//! Results: per-flow rows, per-category FCT and slowdown statistics, improvement factors.
//!
//! Slowdown = FCT / ideal FCT, with ideal FCT = the latency of one full packet along the flow's
//! path (propagation + store-and-forward at every hop) + the flow's wire bytes at the host line
//! rate (`ceil(bytes / 1460) * 1538` bytes). It ignores the handshake, which every transport
//! pays once, so the smallest flows have slowdowns above 1 by construction.

use crate::engine::{Flow, QueueSample, RunStats, Sim};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// Size categories of the paper's Table 2 (read as in docs/spec.md §8.5).
pub const CATEGORIES: [(&str, u64, u64); 5] = [
    ("I", 0, 10_000),
    ("II", 10_000, 100_000),
    ("III", 100_000, 1_000_000),
    ("IV", 1_000_000, u64::MAX),
    ("all", 0, u64::MAX),
];

/// Reads a float written by serde_json, which writes NaN (e.g. the mean FCT of a category
/// without finished flows) as `null`: `null` reads back as NaN, so a report survives a JSON round
/// trip (`stride sim sweep --ray` gathers the points' reports as JSON).
fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Statistics of one category.
#[derive(Debug, Serialize, Deserialize, Clone, Default)]
pub struct CatStats {
    /// Completed flows in the category.
    pub flows: usize,
    /// Mean FCT, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub avg_fct_us: f64,
    /// Median FCT, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p50_fct_us: f64,
    /// 99th percentile FCT, µs.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p99_fct_us: f64,
    /// Mean slowdown.
    #[serde(deserialize_with = "f64_or_nan")]
    pub avg_slowdown: f64,
    /// 99th percentile slowdown.
    #[serde(deserialize_with = "f64_or_nan")]
    pub p99_slowdown: f64,
}

/// Everything about one transport's run.
#[derive(Debug, Serialize, Deserialize, Clone)]
pub struct TransportReport {
    /// Per category.
    pub categories: BTreeMap<String, CatStats>,
    /// Flows that finished / all flows.
    pub completed: usize,
    /// All flows.
    pub flows_total: usize,
    /// Packets dropped at switches (queue overflow).
    pub drops: u64,
    /// Packets lost on links by the `[loss]` model (not in `drops`).
    pub link_losses: u64,
    /// Payload bytes delivered to receiving applications, finished flows or not.
    pub delivered_bytes: u64,
    /// Aggregate goodput: delivered payload bits over the simulated time, Gbit/s.
    #[serde(deserialize_with = "f64_or_nan")]
    pub goodput_gbps: f64,
    /// Jain's fairness index of the per-flow goodputs (every flow, finished or not).
    #[serde(deserialize_with = "f64_or_nan")]
    pub jain: f64,
    /// Packets marked CE.
    pub ecn_marks: u64,
    /// PFC pause and resume frames sent.
    pub pause_frames: u64,
    /// Time ports spent paused by PFC, summed over ports, ms.
    #[serde(deserialize_with = "f64_or_nan")]
    pub pause_ms: f64,
    /// Ports (host NICs included) paused at least once.
    pub ports_paused: u64,
    /// Switches that sent a PFC pause.
    #[serde(default)]
    pub pausing_switches: u64,
    /// Switches that sent a PFC pause before they had marked any packet CE (on a lossless
    /// fabric ECN should act first).
    #[serde(default)]
    pub paused_before_marking: u64,
    /// Drops because a PFC ingress headroom was full (included in `drops`).
    pub headroom_drops: u64,
    /// QCN feedback frames sent by congestion points.
    pub qcn_feedback: u64,
    /// Median of the watched ports' queue samples (`[watch]`), KB (1000 bytes); NaN without
    /// samples.
    #[serde(deserialize_with = "f64_or_nan")]
    pub queue_p50_kb: f64,
    /// 99th percentile of the watched ports' queue samples, KB; NaN without samples.
    #[serde(deserialize_with = "f64_or_nan")]
    pub queue_p99_kb: f64,
    /// Events processed.
    pub events: u64,
    /// Events per wall-clock second.
    #[serde(deserialize_with = "f64_or_nan")]
    pub events_per_sec: f64,
    /// Packet-hops (a packet crossing one queue and link).
    pub packet_hops: u64,
    /// Packet-hops per wall-clock second.
    #[serde(deserialize_with = "f64_or_nan")]
    pub packet_hops_per_sec: f64,
    /// Simulated time, ms.
    #[serde(deserialize_with = "f64_or_nan")]
    pub simulated_ms: f64,
    /// Wall time, s.
    #[serde(deserialize_with = "f64_or_nan")]
    pub wall_seconds: f64,
}

/// One finished (or unfinished) flow.
#[derive(Debug, Clone)]
pub struct FlowRow {
    /// The flow.
    pub flow: Flow,
    /// FCT, ns (None if unfinished).
    pub fct_ns: Option<u64>,
    /// Ideal FCT, ns.
    pub ideal_ns: u64,
    /// Payload bytes the receiving application read (all of them if finished).
    pub delivered: u64,
    /// Delivered payload bits over the flow's lifetime (start to completion, or to the end of
    /// the run if unfinished), Gbit/s.
    pub goodput_gbps: f64,
}

/// The `q` quantile (nearest rank) of `sorted`; 0 when empty.
pub(crate) fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Per-flow rows of a finished simulation.
pub fn rows(sim: &Sim) -> Vec<FlowRow> {
    let topo = &sim.topo;
    sim.flows
        .iter()
        .zip(&sim.done)
        .zip(&sim.flow_delivered)
        .map(|((f, &d), &delivered)| {
            let (lat, _) = topo.path_latency(f.src, f.dst, 1538);
            // In u128: a long-lived flow (a permutation's) has a byte count near u64::MAX,
            // whose wire time in ns overflows u64 (a panic in debug builds, a wrapped ideal
            // in release); its ideal saturates instead.
            let wire = u128::from(f.bytes.div_ceil(1460).max(1)) * 1538;
            let rate = u128::from(topo.host_rate_bps[f.src as usize]);
            let ser = (wire * 8 * 1_000_000_000).div_ceil(rate);
            let ideal = lat.saturating_add(u64::try_from(ser).unwrap_or(u64::MAX));
            let end = if d != u64::MAX { d } else { sim.stats.end_ns };
            let life = end.saturating_sub(f.start);
            FlowRow {
                flow: *f,
                fct_ns: (d != u64::MAX).then(|| d - f.start),
                ideal_ns: ideal,
                delivered,
                goodput_gbps: if life > 0 {
                    delivered as f64 * 8.0 / life as f64
                } else {
                    0.0
                },
            }
        })
        .collect()
}

/// (p50, p99) of the queue samples, KB (1000 bytes), over every watched port; NaN when empty.
pub fn queue_percentiles(samples: &[QueueSample]) -> (f64, f64) {
    if samples.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut kb: Vec<f64> = samples.iter().map(|s| s.bytes as f64 / 1e3).collect();
    kb.sort_by(f64::total_cmp);
    (pct(&kb, 0.5), pct(&kb, 0.99))
}

/// Summary of one run; `samples` are the watched ports' queue samples.
pub fn summarize(
    rows: &[FlowRow],
    stats: &RunStats,
    samples: &[QueueSample],
    wall: f64,
) -> TransportReport {
    let (queue_p50_kb, queue_p99_kb) = queue_percentiles(samples);
    let mut categories = BTreeMap::new();
    for (name, lo, hi) in CATEGORIES {
        let sel: Vec<&FlowRow> = rows
            .iter()
            .filter(|r| r.flow.bytes >= lo && r.flow.bytes < hi && r.fct_ns.is_some())
            .collect();
        let mut fct: Vec<f64> = sel
            .iter()
            .map(|r| r.fct_ns.unwrap_or(0) as f64 / 1e3)
            .collect();
        let mut sd: Vec<f64> = sel
            .iter()
            .map(|r| r.fct_ns.unwrap_or(0) as f64 / r.ideal_ns as f64)
            .collect();
        fct.sort_by(f64::total_cmp);
        sd.sort_by(f64::total_cmp);
        let n = fct.len();
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        categories.insert(
            name.to_string(),
            CatStats {
                flows: n,
                avg_fct_us: mean(&fct),
                p50_fct_us: pct(&fct, 0.5),
                p99_fct_us: pct(&fct, 0.99),
                avg_slowdown: mean(&sd),
                p99_slowdown: pct(&sd, 0.99),
            },
        );
    }
    TransportReport {
        categories,
        completed: rows.iter().filter(|r| r.fct_ns.is_some()).count(),
        flows_total: rows.len(),
        drops: stats.drops,
        link_losses: stats.link_losses,
        delivered_bytes: stats.bytes_delivered,
        goodput_gbps: if stats.end_ns > 0 {
            stats.bytes_delivered as f64 * 8.0 / stats.end_ns as f64
        } else {
            0.0
        },
        jain: jain(rows.iter().map(|r| r.goodput_gbps)),
        ecn_marks: stats.ecn_marks,
        pause_frames: stats.pause_frames,
        pause_ms: stats.pause_ns as f64 / 1e6,
        ports_paused: stats.ports_paused,
        pausing_switches: stats.pausing_switches,
        paused_before_marking: stats.paused_before_marking,
        headroom_drops: stats.headroom_drops,
        qcn_feedback: stats.qcn_feedback,
        queue_p50_kb,
        queue_p99_kb,
        events: stats.events,
        events_per_sec: stats.events as f64 / wall.max(1e-9),
        packet_hops: stats.packet_hops,
        packet_hops_per_sec: stats.packet_hops as f64 / wall.max(1e-9),
        simulated_ms: stats.end_ns as f64 / 1e6,
        wall_seconds: wall,
    }
}

/// Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n when one has all.
pub fn jain(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut s, mut s2) = (0.0, 0.0, 0.0);
    for x in xs {
        n += 1.0;
        s += x;
        s2 += x * x;
    }
    if s2 > 0.0 {
        s * s / (n * s2)
    } else {
        0.0
    }
}

/// `improvement.<other>.<category>.{avg,p99}` = other's FCT / STRIDE's FCT.
pub fn improvement(
    stride: &TransportReport,
    other: &TransportReport,
) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out = BTreeMap::new();
    for (cat, s) in &stride.categories {
        let Some(o) = other.categories.get(cat) else {
            continue;
        };
        if s.flows == 0 || o.flows == 0 {
            continue;
        }
        let mut m = BTreeMap::new();
        m.insert("avg".to_string(), o.avg_fct_us / s.avg_fct_us);
        m.insert("p99".to_string(), o.p99_fct_us / s.p99_fct_us);
        out.insert(cat.clone(), m);
    }
    out
}

/// CSV of per-flow results.
pub fn csv(transport: &str, rows: &[FlowRow]) -> String {
    let mut s = String::from(
        "src,dst,bytes,start_ns,fct_ns,slowdown,transport,delivered_bytes,goodput_gbps\n",
    );
    for r in rows {
        match r.fct_ns {
            Some(f) => s.push_str(&format!(
                "{},{},{},{},{},{:.4},{},{},{:.6}\n",
                r.flow.src,
                r.flow.dst,
                r.flow.bytes,
                r.flow.start,
                f,
                f as f64 / r.ideal_ns as f64,
                transport,
                r.delivered,
                r.goodput_gbps
            )),
            None => s.push_str(&format!(
                "{},{},{},{},,,{},{},{:.6}\n",
                r.flow.src,
                r.flow.dst,
                r.flow.bytes,
                r.flow.start,
                transport,
                r.delivered,
                r.goodput_gbps
            )),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(bytes: u64) -> QueueSample {
        QueueSample {
            t: 0,
            port: 0,
            bytes,
        }
    }

    #[test]
    fn queue_percentiles_of_samples() {
        // 100 samples 1..=100 KB: p50 is the 50th, p99 the 99th (nearest rank)
        let s: Vec<QueueSample> = (1..=100).rev().map(|k| sample(k * 1000)).collect();
        let (p50, p99) = queue_percentiles(&s);
        assert_eq!(p50, 50.0);
        assert_eq!(p99, 99.0);
        let (e50, e99) = queue_percentiles(&[]);
        assert!(e50.is_nan() && e99.is_nan());
    }

    #[test]
    fn summary_carries_queue_and_pause_and_survives_json() {
        let stats = RunStats {
            pause_ns: 2_500_000,
            drops: 7,
            ..Default::default()
        };
        let s = [sample(3000), sample(9000)];
        let r = summarize(&[], &stats, &s, 1.0);
        assert_eq!(r.queue_p50_kb, 3.0);
        assert_eq!(r.queue_p99_kb, 9.0);
        assert_eq!(r.pause_ms, 2.5);
        assert_eq!(r.drops, 7);
        let back: TransportReport =
            serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back.queue_p99_kb, 9.0);
        // without samples the percentiles are NaN, written as null and read back as NaN
        let r = summarize(&[], &stats, &[], 1.0);
        let j = serde_json::to_string(&r).unwrap();
        assert!(j.contains("\"queue_p50_kb\":null"), "{j}");
        let back: TransportReport = serde_json::from_str(&j).unwrap();
        assert!(back.queue_p50_kb.is_nan());
    }
}
