//! `experiment = "ack_interval"` (Fig. 5): STRIDE's median time per byte against its ACK
//! interval, for blocks of one size, per background pattern.

use crate::env::{join, sender_options, spawn_async, start_background, stride_config, Env};
use crate::flows::{self, FlowOutcome, Receiver};
use crate::report::{fmt_size, link_json, mean, Figure, Outcome, Series};
use crate::scenario::{Pattern, Testbed};
use serde_json::{json, Value};
use std::time::Duration;
use stride::Endpoint;
use stride_units::stats::median;

/// Runs the experiment.
pub(crate) fn run(tb: &Testbed, env: &Env) -> anyhow::Result<Outcome> {
    let ivs = &tb.sweep_intervals;
    let configs: Vec<stride::Config> = ivs.iter().map(|&a| stride_config(tb.line_bps, a)).collect();
    let recv = Receiver::start(&env.receiver, env.recv_ip, configs.clone(), tb.dscp)?;
    let mut rows = Vec::new();
    let mut bg_stats = Vec::new();
    for pattern in &tb.patterns {
        let bg = match pattern {
            Pattern::None => None,
            p => Some(start_background(tb, env, p, recv.addrs.sink)?),
        };
        std::thread::sleep(Duration::from_millis(300));
        let res = measure(tb, env, &recv, &configs)?;
        if let Some(bg) = bg {
            bg_stats.push(bg.stop()?);
        }
        rows.extend(summarize(tb, pattern, &res));
    }
    drop(recv);
    Ok(Outcome {
        report: json!({
            "name": tb.file.name, "experiment": "ack_interval", "mode": env.mode,
            "bottleneck": link_json(tb), "block": tb.sweep_block, "background": bg_stats,
            "summary": rows,
        }),
        tables: table(tb, &rows),
        figures: vec![figure(tb, &rows)],
    })
}

/// The sweep's flows under one pattern: one endpoint per ACK interval (each to its own receiver
/// endpoint), the intervals interleaved flow by flow; (interval, outcome) per flow.
fn measure(
    tb: &Testbed,
    env: &Env,
    recv: &Receiver,
    configs: &[stride::Config],
) -> anyhow::Result<Vec<(u32, FlowOutcome)>> {
    let addrs = recv.addrs.stride.clone();
    let opts: Vec<_> = configs
        .iter()
        .map(|c| sender_options(tb, c.clone()))
        .collect();
    let ivs = tb.sweep_intervals.clone();
    let block = tb.sweep_block;
    let n = (tb.file.repetitions * tb.file.ack_sweep.flows) as usize;
    let timeout = Duration::from_secs_f64(tb.file.foreground.timeout_s);
    let job = move || async move {
        let mut eps = Vec::new();
        for o in opts {
            eps.push(Endpoint::bind_with("0.0.0.0:0".parse().unwrap(), o)?);
        }
        for (ep, to) in eps.iter().zip(&addrs) {
            let _ = flows::stride_flow(ep, *to, 0, 1000, None, timeout).await;
        }
        let mut res = Vec::new();
        for i in 0..n {
            for k in 0..ivs.len() {
                let j = (i + k) % ivs.len();
                let o = flows::stride_flow(&eps[j], addrs[j], 1, block, None, timeout).await;
                res.push((ivs[j], o));
            }
        }
        anyhow::Ok(res)
    };
    join(spawn_async(&env.sender, "tb-sender", job), "sender thread")
}

/// One row per ACK interval of `pattern`: flows, completed, mean and median ns per byte,
/// retransmits.
fn summarize(tb: &Testbed, pattern: &Pattern, res: &[(u32, FlowOutcome)]) -> Vec<Value> {
    let block = tb.sweep_block;
    let mut rows = Vec::new();
    for &iv in &tb.sweep_intervals {
        let sel: Vec<&FlowOutcome> = res.iter().filter(|r| r.0 == iv).map(|r| &r.1).collect();
        let mut ns_per_b: Vec<f64> = sel
            .iter()
            .filter(|o| o.error.is_none())
            .map(|o| o.fct_ns as f64 / block as f64)
            .collect();
        let completed = ns_per_b.len();
        rows.push(json!({
            "pattern": pattern.name(),
            "ack_interval": iv,
            "flows": sel.len(),
            "completed": completed,
            "mean_ns_per_byte": mean(&ns_per_b),
            "median_ns_per_byte": median(&mut ns_per_b),
            "retransmits": sel.iter().map(|o| o.retransmits).sum::<u64>(),
        }));
    }
    rows
}

/// The row of pattern `p` and interval `iv`.
fn row<'a>(rows: &'a [Value], p: &Pattern, iv: u32) -> Option<&'a Value> {
    rows.iter()
        .find(|r| r["pattern"] == p.name() && r["ack_interval"] == iv)
}

/// Fig. 5: one line per pattern.
fn figure(tb: &Testbed, rows: &[Value]) -> Figure {
    let ivs = &tb.sweep_intervals;
    let mut f = Figure::new(
        "fig5".into(),
        format!(
            "Fig. 5: time per byte vs ACK interval ({} blocks)",
            fmt_size(tb.sweep_block)
        ),
        "ACK interval",
        "median FCT per byte (ns)",
    );
    f.xs = ivs.iter().map(|&a| fmt_size(a as u64)).collect();
    f.series = tb
        .patterns
        .iter()
        .map(|p| Series {
            name: format!("stride / {}", p.name()),
            ys: ivs
                .iter()
                .map(|&iv| {
                    row(rows, p, iv)
                        .and_then(|r| r["median_ns_per_byte"].as_f64())
                        .unwrap_or(f64::NAN)
                })
                .collect(),
        })
        .collect();
    f
}

/// Median ns per byte [completed/flows] per interval and pattern.
fn table(tb: &Testbed, rows: &[Value]) -> String {
    let mut md = String::from("\n| ACK interval |");
    for p in &tb.patterns {
        md.push_str(&format!(" {} ns/B [done] |", p.name()));
    }
    md.push_str("\n|---|");
    for _ in &tb.patterns {
        md.push_str("---|");
    }
    md.push('\n');
    for &iv in &tb.sweep_intervals {
        md.push_str(&format!("| {} |", fmt_size(iv as u64)));
        for p in &tb.patterns {
            let r = row(rows, p, iv).unwrap();
            md.push_str(&format!(
                " {:.2} [{}/{}] |",
                r["median_ns_per_byte"].as_f64().unwrap_or(f64::NAN),
                r["completed"],
                r["flows"]
            ));
        }
        md.push('\n');
    }
    md
}
