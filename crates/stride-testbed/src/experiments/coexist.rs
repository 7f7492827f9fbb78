//! `experiment = "coexistence"`: one STRIDE flow next to one kernel TCP flow (per congestion
//! control in `against`; `none` is STRIDE alone) for `duration_s`: throughput of each, Jain's
//! index, queueing delay at the bottleneck, drops.

use crate::env::{join, spawn_async, stride_config, Env, QdiscProbe};
use crate::flows::{self, FlowOutcome, Receiver};
use crate::report::{link_json, mean, Figure, Outcome, Series};
use crate::scenario::Testbed;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use stride::{Endpoint, EndpointConfig};

/// One sample: seconds since the start, STRIDE's and TCP's throughput (bit/s) over the last
/// period, and the bottleneck's queueing delay (µs).
type Sample = (f64, f64, f64, f64);

/// Runs the experiment.
pub(crate) fn run(tb: &Testbed, env: &Env) -> anyhow::Result<Outcome> {
    let c = tb.file.coexistence.clone();
    let probe = QdiscProbe::of(env.topo.as_ref().expect("netns"));
    let rate = tb.link.rate_bps as f64;
    let mut results = Vec::new();
    let mut figures = Vec::new();
    let mut md = String::from("\n| pair | STRIDE Mbit/s | TCP Mbit/s | Jain | queue delay p50 / p99 (µs) | drops | STRIDE retx | TCP retx |\n|---|---|---|---|---|---|---|---|\n");
    for cc in &c.against {
        let recv = Receiver::start(
            &env.receiver,
            env.recv_ip,
            vec![stride_config(tb.line_bps, tb.ack_interval)],
        )?;
        let d0 = probe.stats().dropped;
        let t0 = Instant::now();
        let until = t0 + Duration::from_secs_f64(c.duration_s);
        let h = spawn_pair(tb, env, &recv, cc, until);
        let samples = sample(&recv, &probe, rate, t0, until, c.sample_ms);
        let (a, b) = join(h, "coexistence sender")?;
        let drops = probe.stats().dropped.saturating_sub(d0);
        drop(recv);
        let (row, result) = summarize(cc, &samples, drops, &a, &b);
        md.push_str(&row);
        results.push(result);
        figures.push(figure(cc, rate, &samples));
    }
    Ok(Outcome {
        report: json!({
            "name": tb.file.name, "experiment": "coexistence", "mode": env.mode,
            "bottleneck": link_json(tb), "duration_s": c.duration_s, "pairs": results,
        }),
        tables: md,
        figures,
    })
}

/// Starts the pair on the sender host: one STRIDE flow and (unless `cc` is `none`) one kernel
/// TCP flow with congestion control `cc`, both sending until `until`.
fn spawn_pair(
    tb: &Testbed,
    env: &Env,
    recv: &Receiver,
    cc: &str,
    until: Instant,
) -> std::thread::JoinHandle<anyhow::Result<(FlowOutcome, FlowOutcome)>> {
    let stride_to = recv.addrs.stride[0];
    let tcp_to = recv.addrs.tcp;
    let config = stride_config(tb.line_bps, tb.ack_interval);
    let cc = cc.to_string();
    spawn_async(&env.sender, "tb-coexist", move || async move {
        let ep = Endpoint::bind_with(
            "0.0.0.0:0".parse().unwrap(),
            EndpointConfig {
                proto: config,
                listen: false,
                ..EndpointConfig::default()
            },
        )?;
        let big = Duration::from_secs(3600);
        if cc == "none" {
            let a = flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big).await;
            return anyhow::Ok((a, FlowOutcome::default()));
        }
        let (a, b) = tokio::join!(
            flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big),
            flows::tcp_flow(&cc, tcp_to, 2, 0, Some(until), big)
        );
        anyhow::Ok((a, b))
    })
}

/// Every `sample_ms` from `t0` to `until`: the bytes the receiver counted per flow since the
/// last sample, as throughput, and the bottleneck's backlog as queueing delay at `rate`.
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
    let mut last = (0u64, 0u64);
    let mut next = t0 + every;
    while Instant::now() < until {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += every;
        let s = recv.counters[1].load(Ordering::Relaxed);
        let t = recv.counters[2].load(Ordering::Relaxed);
        let q = probe.stats().backlog_bytes;
        let secs = every.as_secs_f64();
        samples.push((
            t0.elapsed().as_secs_f64(),
            (s - last.0) as f64 * 8.0 / secs,
            (t - last.1) as f64 * 8.0 / secs,
            q as f64 * 8.0 / rate * 1e6,
        ));
        last = (s, t);
    }
    samples
}

/// The pair's table row and report entry: mean throughputs after the first second (start-up
/// excluded), Jain's index, queueing delay p50/p99, drops, retransmits.
fn summarize(
    cc: &str,
    samples: &[Sample],
    drops: u64,
    a: &FlowOutcome,
    b: &FlowOutcome,
) -> (String, Value) {
    let steady: Vec<&Sample> = samples.iter().filter(|s| s.0 > 1.0).collect();
    let xs_: Vec<f64> = steady.iter().map(|s| s.1).collect();
    let ys_: Vec<f64> = steady.iter().map(|s| s.2).collect();
    let (x, y) = (mean(&xs_), mean(&ys_));
    let jain = if cc == "none" {
        f64::NAN
    } else {
        (x + y).powi(2) / (2.0 * (x * x + y * y))
    };
    let mut qd: Vec<f64> = steady.iter().map(|s| s.3).collect();
    qd.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q50 = qd.get(qd.len() / 2).copied().unwrap_or(f64::NAN);
    let q99 = qd
        .get(((qd.len().max(1) - 1) as f64 * 0.99) as usize)
        .copied()
        .unwrap_or(f64::NAN);
    let row = format!(
        "| stride + {cc} | {:.1} | {:.1} | {:.3} | {:.0} / {:.0} | {} | {} | {} |\n",
        x / 1e6,
        y / 1e6,
        jain,
        q50,
        q99,
        drops,
        a.retransmits,
        b.retransmits
    );
    let result = json!({
        "against": cc, "stride_bps": x, "tcp_bps": y, "jain": jain,
        "queue_delay_p50_us": q50, "queue_delay_p99_us": q99, "drops": drops,
        "stride": a, "tcp": b,
        "samples": samples.iter().map(|s| json!([s.0, s.1, s.2, s.3])).collect::<Vec<_>>(),
    });
    (row, result)
}

/// Both flows' throughput against time.
fn figure(cc: &str, rate: f64, samples: &[Sample]) -> Figure {
    let mut f = Figure::new(
        format!("coexist-{cc}"),
        format!(
            "STRIDE and {cc} sharing a {:.0} Mbit/s bottleneck",
            rate / 1e6
        ),
        "time (s)",
        "throughput (Mbit/s)",
    );
    f.xs = samples.iter().map(|s| format!("{:.0}", s.0)).collect();
    f.series = vec![
        Series {
            name: "stride".into(),
            ys: samples.iter().map(|s| s.1 / 1e6).collect(),
        },
        Series {
            name: cc.to_string(),
            ys: samples.iter().map(|s| s.2 / 1e6).collect(),
        },
    ];
    f
}
