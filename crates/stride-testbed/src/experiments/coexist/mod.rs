//! `experiment = "coexistence"`: one STRIDE flow next to one kernel TCP flow (per congestion
//! control in `against`; `none` is STRIDE alone) for `duration_s`: throughput of each, Jain's
//! index, queueing delay at the bottleneck and in STRIDE's own queue, drops. Every pairing runs
//! `repetitions` times, interleaved (each repetition runs every pairing once), and the report
//! gives every case and the medians per pairing.
//!
//! With `bottleneck.qdisc = "htb-dscp"` STRIDE's datagrams (marked with `stride.dscp`) have a
//! class and a queue of their own: STRIDE's queueing delay is then that queue's backlog, and the
//! report counts what each class carried (the classification). With
//! `coexistence.competitor_stop_s` the TCP flow leaves early: STRIDE before and after, and how
//! long its queue takes to come back to its level alone (`summary`).

mod summary;

use crate::env::{
    join, sender_options, spawn_async, start_receiver, stride_config, Env, ProbeSample, QdiscProbe,
};
use crate::flows::{self, FlowOutcome, Receiver};
use crate::report::{link_json, Figure, Outcome, Series};
use crate::scenario::Testbed;
use crate::topo::QdiscStats;
use serde_json::json;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use stride::Endpoint;

/// One sample of a pairing.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Sample {
    /// Seconds since the start.
    pub(crate) t: f64,
    /// The period's length, s (longer than `sample_ms` when the sampling thread ran late).
    pub(crate) dt: f64,
    /// STRIDE's throughput over the period, bit/s (bytes the receiver counted).
    pub(crate) stride_bps: f64,
    /// TCP's, likewise.
    pub(crate) tcp_bps: f64,
    /// The bottleneck's queueing delay, µs: its whole backlog at the bottleneck rate.
    pub(crate) queue_us: f64,
    /// STRIDE's queueing delay, µs: with a class of its own, its class's backlog at the rate
    /// the class drained over the period (at least its guaranteed half of the bottleneck);
    /// otherwise `queue_us` (one queue for all).
    pub(crate) stride_queue_us: f64,
}

/// What each class's leaf queue did during a case ([`crate::topo::Qdisc::HtbDscp`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Bands {
    /// STRIDE's class: bytes and packets sent, packets dropped.
    pub(crate) stride: QdiscStats,
    /// The other class (TCP), likewise.
    pub(crate) other: QdiscStats,
}

/// One pairing in one repetition, as measured.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// The congestion control next to STRIDE (`none`: alone).
    pub(crate) cc: String,
    /// Repetition, from 0.
    pub(crate) rep: u64,
    /// Samples every `sample_ms`.
    pub(crate) samples: Vec<Sample>,
    /// Packets the bottleneck dropped.
    pub(crate) drops: u64,
    /// Bytes the receiver counted for STRIDE and for TCP.
    pub(crate) bytes: (u64, u64),
    /// The class counters, with STRIDE in a class of its own.
    pub(crate) bands: Option<Bands>,
    /// The flows.
    pub(crate) stride: FlowOutcome,
    /// The TCP flow (default when alone).
    pub(crate) tcp: FlowOutcome,
}

/// Runs the experiment.
pub(crate) fn run(tb: &Testbed, env: &Env) -> anyhow::Result<Outcome> {
    let c = &tb.file.coexistence;
    let probe = QdiscProbe::of(env.topo.as_ref().expect("netns"));
    let reps = tb.file.repetitions;
    let mut cases = Vec::new();
    for rep in 0..reps {
        for cc in &c.against {
            let case = run_case(tb, env, &probe, cc, rep)?;
            let s = summary::window(tb, &case);
            eprintln!(
                "stride testbed: coexistence {}/{reps}, stride + {cc}: STRIDE {:.1} Mbit/s, TCP {:.1} Mbit/s, STRIDE's queue p99 {:.0} µs",
                rep + 1,
                s.stride_bps / 1e6,
                s.tcp_bps / 1e6,
                s.stride_q99
            );
            cases.push(case);
        }
    }
    let rate = tb.link.rate_bps as f64;
    let (pairs, per_case, tables) = summary::summarize(tb, &cases);
    let mut figures = Vec::new();
    for case in cases.iter().filter(|k| k.rep == 0) {
        figures.extend(case_figures(&case.cc, rate, &case.samples));
    }
    Ok(Outcome {
        report: json!({
            "name": tb.file.name, "experiment": "coexistence", "mode": env.mode,
            "bottleneck": link_json(tb), "stride_dscp": tb.dscp.value(),
            "duration_s": c.duration_s, "competitor_stop_s": c.competitor_stop_s,
            "repetitions": reps, "pairs": pairs, "cases": per_case,
        }),
        tables,
        figures,
    })
}

/// One pairing: the receiver, the pair of flows, the samples until `duration_s`.
fn run_case(
    tb: &Testbed,
    env: &Env,
    probe: &QdiscProbe,
    cc: &str,
    rep: u64,
) -> anyhow::Result<Case> {
    let c = &tb.file.coexistence;
    let recv = start_receiver(tb, env)?;
    let p0 = probe.sample();
    let t0 = Instant::now();
    let until = t0 + Duration::from_secs_f64(c.duration_s);
    let tcp_until = c
        .competitor_stop_s
        .map_or(until, |s| t0 + Duration::from_secs_f64(s));
    let h = spawn_pair(tb, env, &recv, cc, (until, tcp_until));
    let samples = sample(
        &recv,
        probe,
        tb.link.rate_bps as f64,
        t0,
        until,
        c.sample_ms,
    );
    let (stride, tcp) = join(h, "coexistence sender")?;
    let p1 = probe.sample();
    let bytes = (
        recv.counters[1].load(Ordering::Relaxed),
        recv.counters[2].load(Ordering::Relaxed),
    );
    drop(recv);
    let bands = match (p0.bands, p1.bands) {
        (Some(a), Some(b)) => Some(Bands {
            stride: delta(&a.0, &b.0),
            other: delta(&a.1, &b.1),
        }),
        _ => None,
    };
    Ok(Case {
        cc: cc.to_string(),
        rep,
        samples,
        drops: p1.root.dropped.saturating_sub(p0.root.dropped),
        bytes,
        bands,
        stride,
        tcp,
    })
}

/// What a queue sent and dropped between two readings (the backlog of the later one).
fn delta(a: &QdiscStats, b: &QdiscStats) -> QdiscStats {
    QdiscStats {
        sent_bytes: b.sent_bytes.saturating_sub(a.sent_bytes),
        sent_packets: b.sent_packets.saturating_sub(a.sent_packets),
        dropped: b.dropped.saturating_sub(a.dropped),
        backlog_bytes: b.backlog_bytes,
    }
}

/// Starts the pair on the sender host: one STRIDE flow sending until `until.0` and (unless
/// `cc` is `none`) one kernel TCP flow with congestion control `cc` until `until.1`.
fn spawn_pair(
    tb: &Testbed,
    env: &Env,
    recv: &Receiver,
    cc: &str,
    (until, tcp_until): (Instant, Instant),
) -> std::thread::JoinHandle<anyhow::Result<(FlowOutcome, FlowOutcome)>> {
    let stride_to = recv.addrs.stride[0];
    let tcp_to = recv.addrs.tcp;
    let opts = sender_options(tb, stride_config(tb.line_bps, tb.ack_interval));
    let cc = cc.to_string();
    spawn_async(&env.sender, "tb-coexist", move || async move {
        let ep = Endpoint::bind_with("0.0.0.0:0".parse().unwrap(), opts)?;
        let big = Duration::from_secs(3600);
        if cc == "none" {
            let a = flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big).await;
            return anyhow::Ok((a, FlowOutcome::default()));
        }
        let (a, b) = tokio::join!(
            flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big),
            flows::tcp_flow(&cc, tcp_to, 2, 0, Some(tcp_until), big)
        );
        anyhow::Ok((a, b))
    })
}

/// Every `sample_ms` from `t0` to `until` (a tick the thread missed is skipped, not caught up
/// with): the bytes the receiver counted per flow since the last sample, as throughput over the
/// time that really passed, and the queues' backlogs as queueing delay ([`Sample`]).
fn sample(
    recv: &Receiver,
    probe: &QdiscProbe,
    rate: f64,
    t0: Instant,
    until: Instant,
    sample_ms: u64,
) -> Vec<Sample> {
    let every = Duration::from_millis(sample_ms);
    let mut samples = Vec::new();
    // (STRIDE's bytes, TCP's, when read; the probe, when it returned)
    let mut last = (0u64, 0u64, t0, probe.sample(), Instant::now());
    let mut next = t0 + every;
    while Instant::now() < until {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        while next <= Instant::now() {
            next += every;
        }
        let at = Instant::now();
        let s = recv.counters[1].load(Ordering::Relaxed);
        let t = recv.counters[2].load(Ordering::Relaxed);
        let p = probe.sample();
        let probed = Instant::now();
        let secs = (at - last.2).as_secs_f64().max(1e-6);
        let probe_secs = (probed - last.4).as_secs_f64().max(1e-6);
        samples.push(Sample {
            t: (at - t0).as_secs_f64(),
            dt: secs,
            stride_bps: (s - last.0) as f64 * 8.0 / secs,
            tcp_bps: (t - last.1) as f64 * 8.0 / secs,
            queue_us: p.root.backlog_bytes as f64 * 8.0 / rate * 1e6,
            stride_queue_us: stride_queue_us(&last.3, &p, rate, probe_secs),
        });
        last = (s, t, at, p, probed);
    }
    samples
}

/// STRIDE's queueing delay at `now` (µs): its class's backlog at the rate the class drained
/// since `before` (`secs` ago), at least half the bottleneck `rate` (its guarantee: a class
/// with a backlog is served at least that fast); the whole backlog at `rate` without classes.
fn stride_queue_us(before: &ProbeSample, now: &ProbeSample, rate: f64, secs: f64) -> f64 {
    match (before.bands, now.bands) {
        (Some((b, _)), Some((n, _))) => {
            let drained = n.sent_bytes.saturating_sub(b.sent_bytes) as f64 * 8.0 / secs;
            n.backlog_bytes as f64 * 8.0 / drained.max(rate / 2.0) * 1e6
        }
        _ => now.root.backlog_bytes as f64 * 8.0 / rate * 1e6,
    }
}

/// A pairing's figures: both flows' throughput, and STRIDE's queueing delay, against time.
fn case_figures(cc: &str, rate: f64, samples: &[Sample]) -> [Figure; 2] {
    let xs: Vec<String> = samples.iter().map(|s| format!("{:.0}", s.t)).collect();
    let mut f = Figure::new(
        format!("coexist-{cc}"),
        format!(
            "STRIDE and {cc} sharing a {:.0} Mbit/s bottleneck",
            rate / 1e6
        ),
        "time (s)",
        "throughput (Mbit/s)",
    );
    f.xs = xs.clone();
    f.series = vec![
        Series {
            name: "stride".into(),
            ys: samples.iter().map(|s| s.stride_bps / 1e6).collect(),
        },
        Series {
            name: cc.to_string(),
            ys: samples.iter().map(|s| s.tcp_bps / 1e6).collect(),
        },
    ];
    let mut q = Figure::new(
        format!("coexist-{cc}-queue"),
        format!("STRIDE's queueing delay next to {cc}"),
        "time (s)",
        "queueing delay (µs)",
    );
    q.xs = xs;
    q.series = vec![Series {
        name: "stride".into(),
        ys: samples.iter().map(|s| s.stride_queue_us).collect(),
    }];
    [f, q]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(backlog: u64, sent: u64) -> ProbeSample {
        let q = QdiscStats {
            sent_bytes: sent,
            backlog_bytes: backlog,
            ..QdiscStats::default()
        };
        ProbeSample {
            root: QdiscStats {
                backlog_bytes: 2 * backlog,
                ..QdiscStats::default()
            },
            bands: Some((q, QdiscStats::default())),
        }
    }

    #[test]
    fn stride_queue_is_its_class_backlog_at_its_drain_rate() {
        let rate = 200e6;
        // 25 kB queued; the class sent 2.5 MB in 0.1 s (200 Mbit/s): 1 ms.
        let d = stride_queue_us(&probe(0, 0), &probe(25_000, 2_500_000), rate, 0.1);
        assert!((d - 1000.0).abs() < 1e-6, "{d}");
        // It drained slower than its guarantee (an idle moment): counted at half the rate.
        let d = stride_queue_us(&probe(0, 0), &probe(25_000, 10_000), rate, 0.1);
        assert!((d - 2000.0).abs() < 1e-6, "{d}");
        // No classes: the whole backlog at the rate.
        let one = ProbeSample {
            root: QdiscStats {
                backlog_bytes: 25_000,
                ..QdiscStats::default()
            },
            bands: None,
        };
        let d = stride_queue_us(&one, &one, rate, 0.1);
        assert!((d - 1000.0).abs() < 1e-6, "{d}");
    }
}
