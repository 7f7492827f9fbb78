//! `experiment = "fct"`: Fig. 6 (median flow completion time per KiB by block category) and
//! Fig. 7 (packets dropped at the bottleneck, TCP / STRIDE), each per background pattern, with
//! flows back to back or in Poisson arrivals.

use crate::env::{
    join, sender_options, spawn_async, start_background, start_receiver, stride_config,
    DropCounter, Env, QdiscProbe,
};
use crate::flows::{self, BackgroundStats, FlowOutcome, Receiver};
use crate::report::{link_json, mean, Figure, FlowRecord, Outcome, Series};
use crate::scenario::{Pattern, Testbed, Transport, BLOCKS_KIB, BLOCK_LABELS};
use anyhow::bail;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stride::Endpoint;
use stride_apps::relay::{Relay, RelayConfig};
use stride_units::stats::median;

/// Runs the experiment.
pub(crate) fn run(tb: &Testbed, env: &Env) -> anyhow::Result<Outcome> {
    let (transports, notes) = transports_here(tb, env)?;
    let path = FlowPath::open(tb, env)?;
    let mut records: Vec<FlowRecord> = Vec::new();
    let mut bg_stats: Vec<BackgroundStats> = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(tb.file.seed);
    for pattern in &tb.patterns {
        let bg = match pattern {
            Pattern::None => None,
            p => Some(start_background(tb, env, p, path.background_to())?),
        };
        std::thread::sleep(Duration::from_millis(300));
        let plan = flow_plan(tb, &mut rng);
        let sender = Sender::new(tb, &transports, pattern, plan, &path);
        records.extend(join(
            spawn_async(&env.sender, "tb-sender", move || sender.send()),
            "sender thread",
        )?);
        if let Some(bg) = bg {
            let s = bg.stop()?;
            eprintln!(
                "stride testbed: background {} by {}: mean {:.1} Mbit/s offered",
                s.pattern,
                s.generator,
                s.mean_bps / 1e6
            );
            bg_stats.push(s);
        }
    }
    drop(path);
    let summary = summarize(tb, &transports, &records);
    let (tables, figures) = tables_and_figures(tb, &transports, &summary);
    Ok(Outcome {
        report: json!({
            "name": tb.file.name,
            "experiment": "fct",
            "mode": env.mode,
            "bottleneck": link_json(tb),
            "stride": {"line_rate_bps": tb.line_bps, "ack_interval": tb.ack_interval},
            "arrival": tb.file.foreground.arrival,
            "background": bg_stats,
            "notes": notes,
            "summary": summary,
            "flows": records,
        }),
        tables,
        figures,
    })
}

/// The file's transports that can run here, and a note for those that cannot: the relay
/// fallback carries STRIDE only.
fn transports_here(tb: &Testbed, env: &Env) -> anyhow::Result<(Vec<Transport>, Vec<String>)> {
    let mut transports = tb.transports.clone();
    let mut notes = Vec::new();
    if env.mode == "relay" {
        let dropped: Vec<String> = transports
            .iter()
            .filter(|t| **t != Transport::Stride)
            .map(|t| t.name().to_string())
            .collect();
        if !dropped.is_empty() {
            let n = format!(
                "relay fallback: kernel TCP ({}) cannot cross the UDP relay and is not run",
                dropped.join(", ")
            );
            eprintln!("stride testbed: {n}");
            notes.push(n);
        }
        transports.retain(|t| *t == Transport::Stride);
        if transports.is_empty() {
            bail!("field `foreground.transports`: the relay fallback runs only stride");
        }
    }
    Ok((transports, notes))
}

/// Where foreground flows go: STRIDE's address (the relay's, in the fallback) and kernel TCP's.
#[derive(Clone, Copy)]
struct Targets {
    stride: SocketAddr,
    tcp: SocketAddr,
}

/// The receiver, the relay in front of it (fallback only) and the bottleneck's drop counter,
/// for the whole experiment; dropping it stops the receiver, then the relay.
struct FlowPath {
    recv: Receiver,
    relay: Option<Arc<Relay>>,
    drops: DropCounter,
    to: Targets,
}

impl FlowPath {
    fn open(tb: &Testbed, env: &Env) -> anyhow::Result<FlowPath> {
        let recv = start_receiver(tb, env)?;
        let relay = if env.mode == "relay" {
            let mut rc = RelayConfig::new("127.0.0.1:0".parse().unwrap(), recv.addrs.stride[0]);
            rc.rate_bps = tb.link.rate_bps;
            rc.queue_bytes = tb.link.queue_bytes;
            rc.seed = tb.file.seed;
            Some(Arc::new(Relay::spawn(rc)?))
        } else {
            None
        };
        let drops: DropCounter = match (&env.topo, &relay) {
            (Some(t), _) => {
                let probe = Arc::new(QdiscProbe::of(t));
                Arc::new(move || probe.dropped())
            }
            (None, Some(r)) => {
                let r = r.clone();
                Arc::new(move || r.stats().queue_drops)
            }
            _ => unreachable!(),
        };
        let to = Targets {
            stride: relay
                .as_ref()
                .map(|r| r.local_addr())
                .unwrap_or(recv.addrs.stride[0]),
            tcp: recv.addrs.tcp,
        };
        Ok(FlowPath {
            recv,
            relay,
            drops,
            to,
        })
    }

    /// Where the background goes: through the relay in the fallback, else the receiver's sink.
    fn background_to(&self) -> SocketAddr {
        match &self.relay {
            Some(r) => r.local_addr(),
            None => self.recv.addrs.sink,
        }
    }
}

/// One planned flow: repetition, block category, bytes.
type Planned = (u64, u64, u64);

/// The flow plan of one background pattern (identical for every transport): per repetition,
/// per block category, `flows_per_block` sizes drawn from the category.
fn flow_plan(tb: &Testbed, rng: &mut rand_chacha::ChaCha8Rng) -> Vec<Planned> {
    let fg = &tb.file.foreground;
    let mut plan = Vec::new();
    for rep in 0..tb.file.repetitions {
        for &b in &fg.blocks {
            let (lo, hi) = BLOCKS_KIB[b as usize - 1];
            for _ in 0..fg.flows_per_block {
                plan.push((rep, b, rng.gen_range(lo * 1024..hi * 1024)));
            }
        }
    }
    plan
}

/// One flow of transport `t`.
async fn flow(
    ep: &Endpoint,
    t: &Transport,
    to: Targets,
    tag: u8,
    size: u64,
    timeout: Duration,
) -> FlowOutcome {
    match t {
        Transport::Stride => flows::stride_flow(ep, to.stride, tag, size, None, timeout).await,
        Transport::Tcp(cc) => flows::tcp_flow(cc, to.tcp, tag, size, None, timeout).await,
    }
}

/// Poisson arrivals: the mean gap between flow starts and the seed of the gaps.
struct Arrivals {
    mean_gap_ns: f64,
    seed: u64,
}

/// The sender side of one background pattern: every transport's flows of the plan.
struct Sender {
    transports: Vec<Transport>,
    plan: Vec<Planned>,
    pattern: String,
    to: Targets,
    drops: DropCounter,
    options: stride::EndpointConfig,
    timeout: Duration,
    poisson: Option<Arrivals>,
}

impl Sender {
    fn new(
        tb: &Testbed,
        transports: &[Transport],
        pattern: &Pattern,
        plan: Vec<Planned>,
        path: &FlowPath,
    ) -> Sender {
        let fg = &tb.file.foreground;
        let mean_bytes: f64 = plan.iter().map(|p| p.2 as f64).sum::<f64>() / plan.len() as f64;
        let poisson = (fg.arrival == "poisson").then(|| Arrivals {
            mean_gap_ns: mean_bytes * 8.0 / (fg.load * tb.link.rate_bps as f64) * 1e9,
            seed: tb.file.seed,
        });
        Sender {
            transports: transports.to_vec(),
            plan,
            pattern: pattern.name().to_string(),
            to: path.to,
            drops: path.drops.clone(),
            options: sender_options(tb, stride_config(tb.line_bps, tb.ack_interval)),
            timeout: Duration::from_secs_f64(fg.timeout_s),
            poisson,
        }
    }

    /// Binds the sender's endpoint, warms up, and runs the plan.
    async fn send(self) -> anyhow::Result<Vec<FlowRecord>> {
        let ip = if self.to.stride.ip().is_loopback() {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        let ep = Endpoint::bind_with(SocketAddr::new(ip, 0), self.options.clone())?;
        // One unmeasured flow per transport: neighbour resolution and the first handshake are
        // not part of any FCT.
        for t in &self.transports {
            let _ = flow(&ep, t, self.to, 0, 1000, self.timeout).await;
        }
        match &self.poisson {
            None => Ok(self.back_to_back(&ep).await),
            Some(a) => self.poisson(&ep, a).await,
        }
    }

    /// Flow after flow, every transport in turn per planned flow.
    async fn back_to_back(&self, ep: &Endpoint) -> Vec<FlowRecord> {
        let ts = &self.transports;
        let mut recs = Vec::new();
        for (i, &(rep, block, size)) in self.plan.iter().enumerate() {
            // Rotate the transport order so none always runs first.
            for k in 0..ts.len() {
                let t = &ts[(i + k) % ts.len()];
                let d0 = (self.drops)();
                let o = flow(ep, t, self.to, 1, size, self.timeout).await;
                let d1 = (self.drops)();
                recs.push(self.record(t, rep, block, size, d1.saturating_sub(d0), o));
            }
        }
        recs
    }

    /// Poisson arrivals: per repetition, each transport in turn (rotated) replays the same
    /// arrival times and sizes; drops are per phase and shared out over the phase's flows by
    /// bytes.
    async fn poisson(&self, ep: &Endpoint, a: &Arrivals) -> anyhow::Result<Vec<FlowRecord>> {
        let ts = &self.transports;
        let mut arng = rand_chacha::ChaCha8Rng::seed_from_u64(a.seed ^ 0xA55A);
        let mut reps: Vec<u64> = self.plan.iter().map(|p| p.0).collect();
        reps.dedup();
        let mut recs = Vec::new();
        for rep in reps {
            let mine: Vec<(u64, u64)> = self
                .plan
                .iter()
                .filter(|p| p.0 == rep)
                .map(|p| (p.1, p.2))
                .collect();
            let mut at = Vec::new();
            let mut t = 0f64;
            for _ in &mine {
                at.push(t as u64);
                let u: f64 = arng.gen_range(1e-12..1.0);
                t += -u.ln() * a.mean_gap_ns;
            }
            for k in 0..ts.len() {
                let tr = &ts[(rep as usize + k) % ts.len()];
                let d0 = (self.drops)();
                let phase = self.phase(ep, tr, &mine, &at).await?;
                let pd = (self.drops)().saturating_sub(d0);
                let total: u64 = phase.iter().map(|p| p.1).sum::<u64>().max(1);
                for (block, size, o) in phase {
                    recs.push(self.record(tr, rep, block, size, pd * size / total, o));
                }
            }
        }
        Ok(recs)
    }

    /// One transport's flows `mine` (block, size), each started at its offset `at` (ns).
    async fn phase(
        &self,
        ep: &Endpoint,
        tr: &Transport,
        mine: &[(u64, u64)],
        at: &[u64],
    ) -> anyhow::Result<Vec<(u64, u64, FlowOutcome)>> {
        let start = Instant::now();
        let mut hs = Vec::new();
        for (j, &(block, size)) in mine.iter().enumerate() {
            let when = start + Duration::from_nanos(at[j]);
            let (ep, tr, to, timeout) = (ep.clone(), tr.clone(), self.to, self.timeout);
            hs.push(tokio::spawn(async move {
                tokio::time::sleep_until(when.into()).await;
                (block, size, flow(&ep, &tr, to, 1, size, timeout).await)
            }));
        }
        let mut phase = Vec::new();
        for h in hs {
            phase.push(h.await?);
        }
        Ok(phase)
    }

    fn record(
        &self,
        t: &Transport,
        rep: u64,
        block: u64,
        size: u64,
        drops: u64,
        outcome: FlowOutcome,
    ) -> FlowRecord {
        FlowRecord {
            pattern: self.pattern.clone(),
            transport: t.name().to_string(),
            block,
            size,
            rep,
            bottleneck_drops: drops,
            outcome,
        }
    }
}

/// Per pattern, transport and block: flows, completed, median and mean time per KB (µs/KB),
/// drops and retransmits.
fn summarize(tb: &Testbed, transports: &[Transport], recs: &[FlowRecord]) -> Value {
    let mut rows = Vec::new();
    for p in &tb.patterns {
        for t in transports {
            for &b in &tb.file.foreground.blocks {
                let sel: Vec<&FlowRecord> = recs
                    .iter()
                    .filter(|r| r.pattern == p.name() && r.transport == t.name() && r.block == b)
                    .collect();
                let ok: Vec<&&FlowRecord> =
                    sel.iter().filter(|r| r.outcome.error.is_none()).collect();
                let mut per_kb: Vec<f64> = ok
                    .iter()
                    .map(|r| r.outcome.fct_ns as f64 / 1e3 / (r.size as f64 / 1024.0))
                    .collect();
                let mean_kb = mean(&per_kb);
                let med_kb = median(&mut per_kb);
                let mut fct: Vec<f64> = ok.iter().map(|r| r.outcome.fct_ns as f64).collect();
                rows.push(json!({
                    "pattern": p.name(),
                    "transport": t.name(),
                    "block": b,
                    "label": BLOCK_LABELS[b as usize - 1],
                    "flows": sel.len(),
                    "completed": ok.len(),
                    "median_us_per_kb": med_kb,
                    "mean_us_per_kb": mean_kb,
                    "median_fct_ns": median(&mut fct),
                    "drops": sel.iter().map(|r| r.bottleneck_drops).sum::<u64>(),
                    "retransmits": sel.iter().map(|r| r.outcome.retransmits).sum::<u64>(),
                }));
            }
        }
    }
    Value::Array(rows)
}

/// The summary row of pattern `p`, transport `t`, block `b`.
fn row<'a>(s: &'a Value, p: &str, t: &str, b: u64) -> Option<&'a Value> {
    s.as_array()?
        .iter()
        .find(|r| r["pattern"] == p && r["transport"] == t && r["block"] == b)
}

/// A summary value as a number.
fn num(s: &Value, p: &str, t: &str, b: u64, key: &str) -> Option<f64> {
    row(s, p, t, b).and_then(|r| r[key].as_f64())
}

/// Per pattern: Fig. 6 and its table, and (with STRIDE and another transport) Fig. 7 and its
/// table.
fn tables_and_figures(tb: &Testbed, transports: &[Transport], s: &Value) -> (String, Vec<Figure>) {
    let blocks = &tb.file.foreground.blocks;
    let xs: Vec<String> = blocks
        .iter()
        .map(|&b| BLOCK_LABELS[b as usize - 1].to_string())
        .collect();
    let mut md = String::new();
    let mut figures = Vec::new();
    for p in &tb.patterns {
        let pn = p.name();
        let mut f = Figure::new(
            format!("fig6-{pn}"),
            format!("Fig. 6: time per KB by block size, background {pn}"),
            "block size (KiB)",
            "median FCT per KiB (us)",
        );
        f.xs = xs.clone();
        f.series = transports
            .iter()
            .map(|t| Series {
                name: t.name().to_string(),
                ys: blocks
                    .iter()
                    .map(|&b| num(s, pn, t.name(), b, "median_us_per_kb").unwrap_or(f64::NAN))
                    .collect(),
            })
            .collect();
        figures.push(f);
        md.push_str(&time_table(transports, blocks, s, pn));
        if transports.contains(&Transport::Stride) && transports.len() > 1 {
            md.push_str(&drops_table(transports, blocks, s, pn));
            figures.push(fig7(transports, blocks, &xs, s, pn));
        }
    }
    (md, figures)
}

/// Fig. 6's table: time per KB and improvement factor (TCP / STRIDE).
fn time_table(transports: &[Transport], blocks: &[u64], s: &Value, pn: &str) -> String {
    let mut md = format!("\nBackground `{pn}`: median FCT per KiB (µs), [completed/flows], and TCP/STRIDE factor\n\n| block |");
    for t in transports {
        md.push_str(&format!(" {} |", t.name()));
    }
    for t in transports.iter().filter(|t| **t != Transport::Stride) {
        md.push_str(&format!(" {}/stride |", t.name()));
    }
    md.push_str("\n|---|");
    for _ in 0..transports.len() * 2 - 1 {
        md.push_str("---|");
    }
    md.push('\n');
    for &b in blocks {
        md.push_str(&format!("| {} |", BLOCK_LABELS[b as usize - 1]));
        for t in transports {
            let r = row(s, pn, t.name(), b).unwrap();
            md.push_str(&format!(
                " {:.2} [{}/{}] |",
                r["median_us_per_kb"].as_f64().unwrap_or(f64::NAN),
                r["completed"],
                r["flows"]
            ));
        }
        let st = num(s, pn, "stride", b, "median_us_per_kb");
        for t in transports.iter().filter(|t| **t != Transport::Stride) {
            match (num(s, pn, t.name(), b, "median_us_per_kb"), st) {
                (Some(v), Some(st)) => md.push_str(&format!(" {:.2}x |", v / st)),
                _ => md.push_str(" - |"),
            }
        }
        md.push('\n');
    }
    md
}

/// Fig. 7's table: packets dropped at the bottleneck and sender retransmits.
fn drops_table(transports: &[Transport], blocks: &[u64], s: &Value, pn: &str) -> String {
    let mut md = format!("\nBackground `{pn}`: packets dropped at the bottleneck while the flow ran (sum), sender retransmits in brackets\n\n| block |");
    for t in transports {
        md.push_str(&format!(" {} |", t.name()));
    }
    md.push_str("\n|---|");
    for _ in transports {
        md.push_str("---|");
    }
    md.push('\n');
    for &b in blocks {
        md.push_str(&format!("| {} |", BLOCK_LABELS[b as usize - 1]));
        for t in transports {
            let r = row(s, pn, t.name(), b).unwrap();
            md.push_str(&format!(" {} ({}) |", r["drops"], r["retransmits"]));
        }
        md.push('\n');
    }
    md
}

/// Fig. 7: drops TCP / STRIDE per block, log10.
fn fig7(transports: &[Transport], blocks: &[u64], xs: &[String], s: &Value, pn: &str) -> Figure {
    let mut f = Figure::new(
        format!("fig7-{pn}"),
        format!("Fig. 7: packets dropped, TCP / STRIDE, background {pn}"),
        "block size (KiB)",
        "log10 of (TCP drops + 1) / (STRIDE drops + 1)",
    );
    f.xs = xs.to_vec();
    f.ref_line = Some(0.0);
    f.series = transports
        .iter()
        .filter(|t| **t != Transport::Stride)
        .map(|t| Series {
            name: t.name().to_string(),
            ys: blocks
                .iter()
                .map(|&b| {
                    let tcp = num(s, pn, t.name(), b, "drops").unwrap_or(0.0);
                    let st = num(s, pn, "stride", b, "drops").unwrap_or(0.0);
                    // +1 on both sides keeps blocks where STRIDE lost nothing finite; log10
                    // because the ratios span several decades.
                    ((tcp + 1.0) / (st + 1.0)).log10()
                })
                .collect(),
        })
        .collect();
    f
}
