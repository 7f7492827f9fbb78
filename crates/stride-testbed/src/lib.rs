//! The paper's testbed (two hosts, a bottleneck, a background traffic generator) rebuilt on one
//! machine with network namespaces and a kernel rate limiter, running STRIDE against kernel TCP
//! (`stride testbed run FILE`).
//!
//! - [`topo`]: the namespaces, veth links and the `tbf`/`htb` bottleneck (root only), torn down
//!   on drop; without privilege the userspace relay of `stride_apps::relay` is the fallback
//!   (STRIDE only, since kernel TCP cannot cross a UDP relay);
//! - [`flows`]: foreground flows through one harness for both transports, the receiver, and the
//!   pinned-rate background generator (fixed, seeded random, linear patterns);
//! - [`scenario`]: the TOML format;
//! - [`plot`]: the figures.
//!
//! Experiments: `fct` (Fig. 6 time per KB and Fig. 7 packets lost per block category),
//! `ack_interval` (Fig. 5), `stt` (Fig. 8a/8b) and `coexistence` (one STRIDE flow next to one
//! kernel TCP flow). Transports are interleaved flow by flow and figures use medians, because
//! the machine is shared.

pub mod flows;
pub mod plot;
pub mod scenario;
pub mod topo;
pub mod units;

use anyhow::{bail, Context};
use flows::{Background, BackgroundStats, FlowOutcome, Receiver};
use plot::{line_chart, Series};
use rand::{Rng, SeedableRng};
use scenario::{Mode, Pattern, Testbed, Transport, BLOCKS_KIB, BLOCK_LABELS};
use serde_json::{json, Value};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stride::{Endpoint, EndpointConfig};
use stride_apps::relay::{Relay, RelayConfig};
use topo::{Host, Topology};

/// The environment an experiment runs in.
struct Env {
    topo: Option<Topology>,
    sender: Host,
    receiver: Host,
    generator: Host,
    recv_ip: IpAddr,
    mode: &'static str,
}

impl Env {
    fn new(tb: &Testbed, mode: Mode) -> anyhow::Result<Env> {
        let netns = match mode {
            Mode::Netns => {
                if let Some(why) = topo::netns_unavailable(topo::euid()) {
                    bail!("{why}");
                }
                true
            }
            Mode::Relay => false,
            Mode::Auto => {
                let why = topo::netns_unavailable(topo::euid());
                if let Some(w) = &why {
                    eprintln!("stride testbed: falling back to the userspace relay: {w}");
                }
                why.is_none()
            }
        };
        if netns {
            let t = Topology::up(tb.link.clone())?;
            Ok(Env {
                sender: t.sender_host(),
                receiver: t.receiver_host(),
                generator: t.generator_host(),
                recv_ip: topo::receiver_ip(),
                topo: Some(t),
                mode: "netns",
            })
        } else {
            Ok(Env {
                topo: None,
                sender: Host::Local,
                receiver: Host::Local,
                generator: Host::Local,
                recv_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                mode: "relay",
            })
        }
    }
}

/// Counts packets dropped at the bottleneck (qdisc counters, or the relay's queue drops).
type DropCounter = Arc<dyn Fn() -> u64 + Send + Sync>;

fn stride_config(line_bps: u64, ack: u32) -> stride::Config {
    let mut c = stride::host_config(line_bps);
    c.ack_interval = ack;
    c
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        f64::NAN
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Runs a testbed file; results (JSON, tables, plots) go to `out`. Returns the JSON report.
pub fn run(tb: &Testbed, mode: Option<Mode>, out: &Path) -> anyhow::Result<Value> {
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    let mode = mode.unwrap_or(tb.mode);
    let env = Env::new(tb, mode)?;
    let exp = tb.file.experiment.as_str();
    if env.mode == "relay" && exp != "fct" {
        bail!(
            "experiment {exp:?} needs the namespace testbed (root); the relay fallback runs only experiment = \"fct\" (STRIDE only)"
        );
    }
    let report = match exp {
        "fct" => fct_experiment(tb, &env, out)?,
        "ack_interval" => ack_experiment(tb, &env, out)?,
        "stt" => stt_experiment(tb, &env, out)?,
        "coexistence" => coexist_experiment(tb, &env, out)?,
        _ => unreachable!("validated"),
    };
    let path = out.join("results.json");
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    Ok(report)
}

/// One foreground flow's record.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FlowRecord {
    /// Background pattern.
    pub pattern: String,
    /// Transport name.
    pub transport: String,
    /// Block category, 1..=5.
    pub block: u64,
    /// Bytes.
    pub size: u64,
    /// Repetition.
    pub rep: u64,
    /// Packets the bottleneck dropped while this flow ran (back to back: all of them are this
    /// flow's or the background's).
    pub bottleneck_drops: u64,
    /// The flow itself.
    #[serde(flatten)]
    pub outcome: FlowOutcome,
}

fn bg_target(env: &Env, recv: &Receiver, relay: Option<&Relay>) -> SocketAddr {
    match relay {
        Some(r) => r.local_addr(),
        None => {
            let _ = env;
            recv.addrs.sink
        }
    }
}

fn fct_experiment(tb: &Testbed, env: &Env, out: &Path) -> anyhow::Result<Value> {
    let fg = &tb.file.foreground;
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
    let recv = Receiver::start(
        &env.receiver,
        env.recv_ip,
        vec![stride_config(tb.line_bps, tb.ack_interval)],
    )?;
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
            let name = t.bottleneck.clone();
            let link = t.link.clone();
            let probe = Arc::new(QdiscProbe {
                ns: name,
                _link: link,
            });
            Arc::new(move || probe.dropped())
        }
        (None, Some(r)) => {
            let r = r.clone();
            Arc::new(move || r.stats().queue_drops)
        }
        _ => unreachable!(),
    };
    let stride_to = relay
        .as_ref()
        .map(|r| r.local_addr())
        .unwrap_or(recv.addrs.stride[0]);
    let tcp_to = recv.addrs.tcp;
    let mut records: Vec<FlowRecord> = Vec::new();
    let mut bg_stats: Vec<BackgroundStats> = Vec::new();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(tb.file.seed);
    for pattern in &tb.patterns {
        let bg = match pattern {
            Pattern::None => None,
            p => Some(start_background(
                tb,
                env,
                p,
                bg_target(env, &recv, relay.as_deref()),
            )?),
        };
        std::thread::sleep(Duration::from_millis(300));
        // The flow plan (identical for every transport).
        let mut plan = Vec::new();
        for rep in 0..tb.file.repetitions {
            for &b in &fg.blocks {
                let (lo, hi) = BLOCKS_KIB[b as usize - 1];
                for _ in 0..fg.flows_per_block {
                    plan.push((rep, b, rng.gen_range(lo * 1024..hi * 1024)));
                }
            }
        }
        let line = tb.line_bps;
        let ack = tb.ack_interval;
        let ts = transports.clone();
        let d = drops.clone();
        let pname = pattern.name().to_string();
        let timeout = Duration::from_secs_f64(fg.timeout_s);
        let poisson = fg.arrival == "poisson";
        let mean_gap_ns = {
            let mean_bytes: f64 = plan.iter().map(|p| p.2 as f64).sum::<f64>() / plan.len() as f64;
            mean_bytes * 8.0 / (fg.load * tb.link.rate_bps as f64) * 1e9
        };
        let seed = tb.file.seed;
        let recs = env
            .sender
            .spawn("tb-sender", move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let ep = Endpoint::bind_with(
                        SocketAddr::new(
                            if stride_to.ip().is_loopback() {
                                IpAddr::V4(Ipv4Addr::LOCALHOST)
                            } else {
                                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
                            },
                            0,
                        ),
                        EndpointConfig {
                            proto: stride_config(line, ack),
                            listen: false,
                            ..EndpointConfig::default()
                        },
                    )?;
                    // One unmeasured flow per transport: neighbour resolution and the first
                    // handshake are not part of any FCT.
                    for t in &ts {
                        let _ = match t {
                            Transport::Stride => {
                                flows::stride_flow(&ep, stride_to, 0, 1000, None, timeout).await
                            }
                            Transport::Tcp(cc) => {
                                flows::tcp_flow(cc, tcp_to, 0, 1000, None, timeout).await
                            }
                        };
                    }
                    let mut recs = Vec::new();
                    if !poisson {
                        for (i, &(rep, block, size)) in plan.iter().enumerate() {
                            // Rotate the transport order so none always runs first.
                            for k in 0..ts.len() {
                                let t = &ts[(i + k) % ts.len()];
                                let d0 = d();
                                let o = match t {
                                    Transport::Stride => {
                                        flows::stride_flow(&ep, stride_to, 1, size, None, timeout)
                                            .await
                                    }
                                    Transport::Tcp(cc) => {
                                        flows::tcp_flow(cc, tcp_to, 1, size, None, timeout).await
                                    }
                                };
                                let d1 = d();
                                recs.push(FlowRecord {
                                    pattern: pname.clone(),
                                    transport: t.name().to_string(),
                                    block,
                                    size,
                                    rep,
                                    bottleneck_drops: d1.saturating_sub(d0),
                                    outcome: o,
                                });
                            }
                        }
                    } else {
                        // Poisson arrivals: per repetition, each transport in turn (rotated)
                        // replays the same arrival times and sizes; drops are per phase and
                        // shared out over the phase's flows by bytes.
                        let mut arng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0xA55A);
                        let reps: Vec<u64> = {
                            let mut r: Vec<u64> = plan.iter().map(|p| p.0).collect();
                            r.dedup();
                            r
                        };
                        for rep in reps {
                            let mine: Vec<(u64, u64)> = plan
                                .iter()
                                .filter(|p| p.0 == rep)
                                .map(|p| (p.1, p.2))
                                .collect();
                            let mut at = Vec::new();
                            let mut t = 0f64;
                            for _ in &mine {
                                at.push(t as u64);
                                let u: f64 = arng.gen_range(1e-12..1.0);
                                t += -u.ln() * mean_gap_ns;
                            }
                            for k in 0..ts.len() {
                                let tr = ts[(rep as usize + k) % ts.len()].clone();
                                let d0 = d();
                                let start = Instant::now();
                                let mut hs = Vec::new();
                                for (j, &(block, size)) in mine.iter().enumerate() {
                                    let when = start + Duration::from_nanos(at[j]);
                                    let ep = ep.clone();
                                    let tr = tr.clone();
                                    hs.push(tokio::spawn(async move {
                                        tokio::time::sleep_until(when.into()).await;
                                        let o = match &tr {
                                            Transport::Stride => {
                                                flows::stride_flow(
                                                    &ep, stride_to, 1, size, None, timeout,
                                                )
                                                .await
                                            }
                                            Transport::Tcp(cc) => {
                                                flows::tcp_flow(cc, tcp_to, 1, size, None, timeout)
                                                    .await
                                            }
                                        };
                                        (block, size, o)
                                    }));
                                }
                                let mut phase = Vec::new();
                                for h in hs {
                                    phase.push(h.await?);
                                }
                                let pd = d().saturating_sub(d0);
                                let total: u64 = phase.iter().map(|p| p.1).sum::<u64>().max(1);
                                for (block, size, o) in phase {
                                    recs.push(FlowRecord {
                                        pattern: pname.clone(),
                                        transport: tr.name().to_string(),
                                        block,
                                        size,
                                        rep,
                                        bottleneck_drops: pd * size / total,
                                        outcome: o,
                                    });
                                }
                            }
                        }
                    }
                    anyhow::Ok(recs)
                })
            })
            .join()
            .map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
        records.extend(recs);
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
    if let Some(r) = relay {
        if let Ok(r) = Arc::try_unwrap(r) {
            r.stop();
        }
    }
    drop(recv);
    let summary = summarize_fct(tb, &transports, &records);
    write_fct_figures(tb, &transports, &summary, out)?;
    Ok(json!({
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
    }))
}

fn link_json(tb: &Testbed) -> Value {
    json!({
        "rate_bps": tb.link.rate_bps,
        "queue_bytes": tb.link.queue_bytes,
        "burst_bytes": tb.link.burst_bytes,
        "qdisc": format!("{:?}", tb.link.qdisc).to_lowercase(),
    })
}

struct QdiscProbe {
    ns: String,
    _link: topo::Bottleneck,
}
impl QdiscProbe {
    fn stats(&self) -> topo::QdiscStats {
        let out = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "tc",
                "-s",
                "qdisc",
                "show",
                "dev",
                topo::BOTTLENECK_DEV,
            ])
            .output();
        out.ok()
            .and_then(|o| topo::parse_qdisc_stats(&String::from_utf8_lossy(&o.stdout)))
            .unwrap_or_default()
    }
    fn dropped(&self) -> u64 {
        self.stats().dropped
    }
}

fn start_background(
    tb: &Testbed,
    env: &Env,
    p: &Pattern,
    to: SocketAddr,
) -> anyhow::Result<Background> {
    if tb.file.background.generator == "iperf3" {
        let (Some(t), Pattern::Fixed(rate)) = (&env.topo, p) else {
            bail!(
                "field `background.generator`: iperf3 runs only the fixed pattern in the namespace testbed; use \"pinned\""
            );
        };
        return Background::start_iperf3(
            &t.generator,
            &t.receiver,
            SocketAddr::new(env.recv_ip, 5201),
            *rate,
            tb.file.background.packet as usize,
        );
    }
    Ok(Background::start(
        &env.generator,
        p.clone(),
        to,
        tb.file.background.packet as usize,
    ))
}

/// Per pattern, transport and block: flows, completed, median and mean time per KB (µs/KB),
/// drops and retransmits.
fn summarize_fct(tb: &Testbed, transports: &[Transport], recs: &[FlowRecord]) -> Value {
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

fn row<'a>(s: &'a Value, p: &str, t: &str, b: u64) -> Option<&'a Value> {
    s.as_array()?
        .iter()
        .find(|r| r["pattern"] == p && r["transport"] == t && r["block"] == b)
}

fn write_fct_figures(
    tb: &Testbed,
    transports: &[Transport],
    s: &Value,
    out: &Path,
) -> anyhow::Result<()> {
    let blocks = &tb.file.foreground.blocks;
    let xs: Vec<String> = blocks
        .iter()
        .map(|&b| BLOCK_LABELS[b as usize - 1].to_string())
        .collect();
    let mut md = String::new();
    for p in &tb.patterns {
        let pn = p.name();
        let series: Vec<Series> = transports
            .iter()
            .map(|t| Series {
                name: t.name().to_string(),
                ys: blocks
                    .iter()
                    .map(|&b| {
                        row(s, pn, t.name(), b)
                            .and_then(|r| r["median_us_per_kb"].as_f64())
                            .unwrap_or(f64::NAN)
                    })
                    .collect(),
            })
            .collect();
        line_chart(
            &out.join(format!("fig6-{pn}")),
            &format!("Fig. 6: time per KB by block size, background {pn}"),
            "block size (KiB)",
            "median FCT per KiB (us)",
            &xs,
            &series,
            None,
        )?;
        // Table: time per KB and improvement factor (TCP / STRIDE).
        md.push_str(&format!("\nBackground `{pn}`: median FCT per KiB (µs), [completed/flows], and TCP/STRIDE factor\n\n| block |"));
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
            let st = row(s, pn, "stride", b).and_then(|r| r["median_us_per_kb"].as_f64());
            for t in transports.iter().filter(|t| **t != Transport::Stride) {
                let v = row(s, pn, t.name(), b).and_then(|r| r["median_us_per_kb"].as_f64());
                match (v, st) {
                    (Some(v), Some(st)) => md.push_str(&format!(" {:.2}x |", v / st)),
                    _ => md.push_str(" - |"),
                }
            }
            md.push('\n');
        }
        // Fig. 7: drops TCP / STRIDE.
        if transports.contains(&Transport::Stride) && transports.len() > 1 {
            md.push_str(&format!("\nBackground `{pn}`: packets dropped at the bottleneck while the flow ran (sum), sender retransmits in brackets\n\n| block |"));
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
            let series: Vec<Series> = transports
                .iter()
                .filter(|t| **t != Transport::Stride)
                .map(|t| Series {
                    name: t.name().to_string(),
                    ys: blocks
                        .iter()
                        .map(|&b| {
                            let tcp = row(s, pn, t.name(), b)
                                .and_then(|r| r["drops"].as_f64())
                                .unwrap_or(0.0);
                            let st = row(s, pn, "stride", b)
                                .and_then(|r| r["drops"].as_f64())
                                .unwrap_or(0.0);
                            // +1 on both sides keeps blocks where STRIDE lost nothing finite;
                            // log10 because the ratios span several decades.
                            ((tcp + 1.0) / (st + 1.0)).log10()
                        })
                        .collect(),
                })
                .collect();
            line_chart(
                &out.join(format!("fig7-{pn}")),
                &format!("Fig. 7: packets dropped, TCP / STRIDE, background {pn}"),
                "block size (KiB)",
                "log10 of (TCP drops + 1) / (STRIDE drops + 1)",
                &xs,
                &series,
                Some(0.0),
            )?;
        }
    }
    std::fs::write(out.join("tables.md"), &md)?;
    println!("{md}");
    Ok(())
}

fn ack_experiment(tb: &Testbed, env: &Env, out: &Path) -> anyhow::Result<Value> {
    let ivs = tb.sweep_intervals.clone();
    let configs: Vec<stride::Config> = ivs.iter().map(|&a| stride_config(tb.line_bps, a)).collect();
    let recv = Receiver::start(&env.receiver, env.recv_ip, configs.clone())?;
    let mut rows = Vec::new();
    let mut bg_stats = Vec::new();
    let block = tb.sweep_block;
    let flows = tb.file.ack_sweep.flows;
    let reps = tb.file.repetitions;
    let timeout = Duration::from_secs_f64(tb.file.foreground.timeout_s);
    for pattern in &tb.patterns {
        let bg = match pattern {
            Pattern::None => None,
            p => Some(start_background(tb, env, p, recv.addrs.sink)?),
        };
        std::thread::sleep(Duration::from_millis(300));
        let addrs = recv.addrs.stride.clone();
        let cfgs = configs.clone();
        let ivs2 = ivs.clone();
        let res: Vec<(u32, FlowOutcome)> = env
            .sender
            .spawn("tb-sender", move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?;
                rt.block_on(async move {
                    let mut eps = Vec::new();
                    for c in cfgs {
                        eps.push(Endpoint::bind_with(
                            "0.0.0.0:0".parse().unwrap(),
                            EndpointConfig {
                                proto: c,
                                listen: false,
                                ..EndpointConfig::default()
                            },
                        )?);
                    }
                    for (ep, to) in eps.iter().zip(&addrs) {
                        let _ = flows::stride_flow(ep, *to, 0, 1000, None, timeout).await;
                    }
                    let mut res = Vec::new();
                    for i in 0..(reps * flows) as usize {
                        for k in 0..ivs2.len() {
                            let j = (i + k) % ivs2.len();
                            let o = flows::stride_flow(&eps[j], addrs[j], 1, block, None, timeout)
                                .await;
                            res.push((ivs2[j], o));
                        }
                    }
                    anyhow::Ok(res)
                })
            })
            .join()
            .map_err(|_| anyhow::anyhow!("sender thread panicked"))??;
        if let Some(bg) = bg {
            bg_stats.push(bg.stop()?);
        }
        for &iv in &ivs {
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
    }
    drop(recv);
    let xs: Vec<String> = ivs.iter().map(|&a| fmt_size(a as u64)).collect();
    let series: Vec<Series> = tb
        .patterns
        .iter()
        .map(|p| Series {
            name: format!("stride / {}", p.name()),
            ys: ivs
                .iter()
                .map(|&iv| {
                    rows.iter()
                        .find(|r| r["pattern"] == p.name() && r["ack_interval"] == iv)
                        .and_then(|r| r["median_ns_per_byte"].as_f64())
                        .unwrap_or(f64::NAN)
                })
                .collect(),
        })
        .collect();
    line_chart(
        &out.join("fig5"),
        &format!(
            "Fig. 5: time per byte vs ACK interval ({} blocks)",
            fmt_size(block)
        ),
        "ACK interval",
        "median FCT per byte (ns)",
        &xs,
        &series,
        None,
    )?;
    let mut md = String::from("\n| ACK interval |");
    for p in &tb.patterns {
        md.push_str(&format!(" {} ns/B [done] |", p.name()));
    }
    md.push_str("\n|---|");
    for _ in &tb.patterns {
        md.push_str("---|");
    }
    md.push('\n');
    for &iv in &ivs {
        md.push_str(&format!("| {} |", fmt_size(iv as u64)));
        for p in &tb.patterns {
            let r = rows
                .iter()
                .find(|r| r["pattern"] == p.name() && r["ack_interval"] == iv)
                .unwrap();
            md.push_str(&format!(
                " {:.2} [{}/{}] |",
                r["median_ns_per_byte"].as_f64().unwrap_or(f64::NAN),
                r["completed"],
                r["flows"]
            ));
        }
        md.push('\n');
    }
    std::fs::write(out.join("tables.md"), &md)?;
    println!("{md}");
    Ok(json!({
        "name": tb.file.name, "experiment": "ack_interval", "mode": env.mode,
        "bottleneck": link_json(tb), "block": block, "background": bg_stats, "summary": rows,
    }))
}

fn fmt_size(b: u64) -> String {
    if b >= 1 << 20 && b.is_multiple_of(1 << 20) {
        format!("{}MiB", b >> 20)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{}KiB", b >> 10)
    } else {
        format!("{b}B")
    }
}

fn stt_experiment(tb: &Testbed, env: &Env, out: &Path) -> anyhow::Result<Value> {
    let s = tb.file.stt.clone();
    let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
    let dur = Duration::from_secs_f64(s.duration_s);
    let ip = env.recv_ip;
    let recv = env.receiver.spawn("tb-stt-recv", move || {
        use std::os::fd::AsRawFd;
        let sock = std::net::UdpSocket::bind(SocketAddr::new(ip, 0))?;
        sock.set_nonblocking(true)?;
        let fd = sock.as_raw_fd();
        let kts = stride::sys::enable_rx_timestamps(fd);
        tx.send(sock.local_addr()?).ok();
        let mut batch = stride::sys::RxBatch::new();
        let mut samples: Vec<(u64, u64)> = Vec::new();
        let end = Instant::now() + dur + Duration::from_secs(2);
        while Instant::now() < end {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd we own.
            unsafe { libc::poll(&mut p, 1, 50) };
            match batch.recv(fd) {
                Ok(n) => {
                    for i in 0..n {
                        let d = batch.data(i);
                        if d.len() < 8 {
                            continue;
                        }
                        let txts = u64::from_le_bytes(d[..8].try_into().unwrap());
                        if txts == u64::MAX {
                            return Ok((kts, samples));
                        }
                        let rxts = batch.got[i].kernel_ts.unwrap_or_else(stride::sys::now_ns);
                        samples.push((txts, rxts.saturating_sub(txts)));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok((kts, samples))
    });
    let to = rx
        .recv_timeout(Duration::from_secs(5))
        .context("STT receiver did not start")?;
    let iv = Duration::from_micros(s.interval_us);
    let pkt = s.packet as usize;
    env.sender
        .spawn("tb-stt-send", move || {
            let sock = std::net::UdpSocket::bind("0.0.0.0:0")?;
            sock.connect(to)?;
            let mut buf = vec![0u8; pkt];
            let t0 = Instant::now();
            let mut next = t0;
            while t0.elapsed() < dur + Duration::from_millis(100) {
                next += iv;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                }
                buf[..8].copy_from_slice(&stride::sys::now_ns().to_le_bytes());
                let _ = sock.send(&buf);
            }
            std::thread::sleep(Duration::from_millis(100));
            buf[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            for _ in 0..3 {
                let _ = sock.send(&buf);
            }
            anyhow::Ok(())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("probe sender panicked"))??;
    let (kts, samples) = recv
        .join()
        .map_err(|_| anyhow::anyhow!("probe receiver panicked"))??;
    // The first 100 ms are warm-up (neighbour resolution delays the very first datagram).
    let samples: Vec<(u64, u64)> = match samples.first() {
        Some(&(t0, _)) => samples
            .into_iter()
            .filter(|s| s.0 >= t0 + 100_000_000)
            .collect(),
        None => samples,
    };
    if samples.len() < 2 {
        bail!("the STT probe received {} samples", samples.len());
    }
    let first = samples[0].1 as f64;
    let r_first: Vec<f64> = samples.iter().map(|s| s.1 as f64 / first).collect();
    let r_next: Vec<f64> = samples
        .windows(2)
        .map(|w| w[0].1 as f64 / w[1].1 as f64)
        .collect();
    let dev = |v: &[f64]| {
        let mut d: Vec<f64> = v.iter().map(|x| (x - 1.0).abs()).collect();
        d.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |p: f64| d[((d.len() - 1) as f64 * p) as usize];
        json!({"p50_abs_dev": q(0.5), "p99_abs_dev": q(0.99), "max_abs_dev": q(1.0),
               "min_ratio": v.iter().cloned().fold(f64::INFINITY, f64::min),
               "max_ratio": v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)})
    };
    let mut stts: Vec<f64> = samples.iter().map(|s| s.1 as f64).collect();
    let stt_med = median(&mut stts);
    let xs: Vec<String> = (0..r_first.len())
        .map(|i| format!("{:.1}", i as f64 * s.interval_us as f64 / 1e6))
        .collect();
    line_chart(
        &out.join("fig8a"),
        "Fig. 8a: STT(t) / STT(first)",
        "time (s)",
        "ratio",
        &xs,
        &[Series {
            name: "probe: tx CLOCK_REALTIME, rx SO_TIMESTAMPNS".into(),
            ys: r_first.clone(),
        }],
        Some(1.0),
    )?;
    line_chart(
        &out.join("fig8b"),
        "Fig. 8b: STT(t) / STT(t+1)",
        "time (s)",
        "ratio",
        &xs[..r_next.len()],
        &[Series {
            name: "probe: tx CLOCK_REALTIME, rx SO_TIMESTAMPNS".into(),
            ys: r_next.clone(),
        }],
        Some(1.0),
    )?;
    let a = dev(&r_first);
    let b = dev(&r_next);
    let md = format!(
        "\n| ratio r | samples | median dev | p99 dev | max dev | min r | max r |\n|---|---|---|---|---|---|---|\n| STT(t)/STT(first) | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |\n| STT(t)/STT(t+1) | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |\n\ndev = abs(r - 1). First STT {} ns, median STT {:.0} ns, kernel rx timestamps: {}\n",
        r_first.len(), a["p50_abs_dev"].as_f64().unwrap(), a["p99_abs_dev"].as_f64().unwrap(), a["max_abs_dev"].as_f64().unwrap(), a["min_ratio"].as_f64().unwrap(), a["max_ratio"].as_f64().unwrap(),
        r_next.len(), b["p50_abs_dev"].as_f64().unwrap(), b["p99_abs_dev"].as_f64().unwrap(), b["max_abs_dev"].as_f64().unwrap(), b["min_ratio"].as_f64().unwrap(), b["max_ratio"].as_f64().unwrap(),
        first as u64, stt_med, kts
    );
    std::fs::write(out.join("tables.md"), &md)?;
    println!("{md}");
    Ok(json!({
        "name": tb.file.name, "experiment": "stt", "mode": env.mode, "bottleneck": link_json(tb),
        "kernel_rx_timestamps": kts, "samples": samples.len(), "first_stt_ns": first, "median_stt_ns": stt_med,
        "stt_over_first": a, "stt_over_next": b,
    }))
}

fn coexist_experiment(tb: &Testbed, env: &Env, out: &Path) -> anyhow::Result<Value> {
    let c = tb.file.coexistence.clone();
    let topo = env.topo.as_ref().expect("netns");
    let probe = Arc::new(QdiscProbe {
        ns: topo.bottleneck.clone(),
        _link: topo.link.clone(),
    });
    let rate = tb.link.rate_bps as f64;
    let mut results = Vec::new();
    let mut md = String::from("\n| pair | STRIDE Mbit/s | TCP Mbit/s | Jain | queue delay p50 / p99 (µs) | drops | STRIDE retx | TCP retx |\n|---|---|---|---|---|---|---|---|\n");
    for cc in &c.against {
        let recv = Receiver::start(
            &env.receiver,
            env.recv_ip,
            vec![stride_config(tb.line_bps, tb.ack_interval)],
        )?;
        let stride_to = recv.addrs.stride[0];
        let tcp_to = recv.addrs.tcp;
        let dur = Duration::from_secs_f64(c.duration_s);
        let line = tb.line_bps;
        let ack = tb.ack_interval;
        let cc2 = cc.clone();
        let d0 = probe.stats().dropped;
        let t0 = Instant::now();
        let until = t0 + dur;
        let h = env.sender.spawn("tb-coexist", move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let ep = Endpoint::bind_with(
                    "0.0.0.0:0".parse().unwrap(),
                    EndpointConfig {
                        proto: stride_config(line, ack),
                        listen: false,
                        ..EndpointConfig::default()
                    },
                )?;
                let big = Duration::from_secs(3600);
                if cc2 == "none" {
                    let a = flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big).await;
                    return anyhow::Ok((a, FlowOutcome::default()));
                }
                let (a, b) = tokio::join!(
                    flows::stride_flow(&ep, stride_to, 1, 0, Some(until), big),
                    flows::tcp_flow(&cc2, tcp_to, 2, 0, Some(until), big)
                );
                anyhow::Ok((a, b))
            })
        });
        let every = Duration::from_millis(c.sample_ms);
        let mut samples = Vec::new();
        let mut last = (0u64, 0u64);
        let mut next = t0 + every;
        while Instant::now() < until {
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            next += every;
            let s = recv.counters[1].load(std::sync::atomic::Ordering::Relaxed);
            let t = recv.counters[2].load(std::sync::atomic::Ordering::Relaxed);
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
        let (a, b) = h
            .join()
            .map_err(|_| anyhow::anyhow!("coexistence sender panicked"))??;
        let drops = probe.stats().dropped.saturating_sub(d0);
        drop(recv);
        // Throughput over the run after the first second (start-up excluded).
        let steady: Vec<&(f64, f64, f64, f64)> = samples.iter().filter(|s| s.0 > 1.0).collect();
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
        md.push_str(&format!(
            "| stride + {cc} | {:.1} | {:.1} | {:.3} | {:.0} / {:.0} | {} | {} | {} |\n",
            x / 1e6,
            y / 1e6,
            jain,
            q50,
            q99,
            drops,
            a.retransmits,
            b.retransmits
        ));
        let xs: Vec<String> = samples.iter().map(|s| format!("{:.0}", s.0)).collect();
        line_chart(
            &out.join(format!("coexist-{cc}")),
            &format!(
                "STRIDE and {cc} sharing a {:.0} Mbit/s bottleneck",
                rate / 1e6
            ),
            "time (s)",
            "throughput (Mbit/s)",
            &xs,
            &[
                Series {
                    name: "stride".into(),
                    ys: samples.iter().map(|s| s.1 / 1e6).collect(),
                },
                Series {
                    name: cc.clone(),
                    ys: samples.iter().map(|s| s.2 / 1e6).collect(),
                },
            ],
            None,
        )?;
        results.push(json!({
            "against": cc, "stride_bps": x, "tcp_bps": y, "jain": jain,
            "queue_delay_p50_us": q50, "queue_delay_p99_us": q99, "drops": drops,
            "stride": a, "tcp": b,
            "samples": samples.iter().map(|s| json!([s.0, s.1, s.2, s.3])).collect::<Vec<_>>(),
        }));
    }
    std::fs::write(out.join("tables.md"), &md)?;
    println!("{md}");
    Ok(json!({
        "name": tb.file.name, "experiment": "coexistence", "mode": env.mode,
        "bottleneck": link_json(tb), "duration_s": c.duration_s, "pairs": results,
    }))
}

/// The default output directory of a testbed file: `target/testbed/NAME`.
pub fn default_out(tb: &Testbed) -> PathBuf {
    PathBuf::from("target/testbed").join(&tb.file.name)
}

/// `stride testbed` command line.
pub mod cli {
    use super::*;
    use clap::{Args, Subcommand};

    /// Arguments of `stride testbed`.
    #[derive(Args, Debug)]
    #[command(
        after_help = "Builds sender, bottleneck, receiver and generator network namespaces \
(root), a tbf/htb rate limit with a drop-tail queue on the bottleneck, background traffic, and runs \
STRIDE and kernel TCP flows through it. Without root, mode = auto falls back to the userspace relay \
(STRIDE only).\n\nExample:\n  stride testbed run scenarios/testbed-fig6.toml --out target/testbed/fig6"
    )]
    pub struct TestbedArgs {
        #[command(subcommand)]
        pub cmd: TestbedCmd,
    }

    /// Subcommands.
    #[derive(Subcommand, Debug)]
    pub enum TestbedCmd {
        /// Run the experiment a testbed file describes.
        Run {
            /// The testbed file (TOML).
            file: PathBuf,
            /// Output directory for results.json, tables.md and the plots (default target/testbed/NAME).
            #[arg(long)]
            out: Option<PathBuf>,
            /// Override the file's mode: netns, relay or auto.
            #[arg(long)]
            mode: Option<String>,
            /// Override a field: `section.field=value` (repeatable), e.g.
            /// `--set stride.line_rate=800mbit --set foreground.blocks=[1,2]`.
            #[arg(long, value_name = "KEY=VALUE")]
            set: Vec<String>,
        },
    }

    /// Blocks SIGINT and SIGTERM in this thread (and so in every thread started after) and
    /// starts a thread that waits for them: on either it stops the iperf3 processes this run
    /// started, deletes this process's namespaces and exits with 130, so an interrupted run
    /// leaves nothing behind.
    fn clean_up_on_interrupt() {
        // SAFETY: signal-set manipulation on sets we own; sigwait in a dedicated thread.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                return;
            }
            std::thread::spawn(move || {
                let mut sig = 0;
                libc::sigwait(&set, &mut sig);
                eprintln!("stride testbed: interrupted, removing the namespaces");
                for pid in flows::CHILD_PIDS
                    .lock()
                    .map(|v| v.clone())
                    .unwrap_or_default()
                {
                    libc::kill(pid as libc::pid_t, libc::SIGKILL);
                }
                for ns in topo::namespaces_with_prefix(&topo::ns_prefix()) {
                    let _ = std::process::Command::new("ip")
                        .args(["netns", "del", &ns])
                        .output();
                }
                std::process::exit(130);
            });
        }
    }

    /// `stride testbed`.
    pub fn run(a: TestbedArgs) -> anyhow::Result<()> {
        clean_up_on_interrupt();
        match a.cmd {
            TestbedCmd::Run {
                file,
                out,
                mode,
                set,
            } => {
                let tb = Testbed::load_with(&file, &set)?;
                let mode = match mode.as_deref() {
                    None => None,
                    Some("netns") => Some(Mode::Netns),
                    Some("relay") => Some(Mode::Relay),
                    Some("auto") => Some(Mode::Auto),
                    Some(m) => bail!("--mode {m:?} is not netns, relay or auto"),
                };
                let out = out.unwrap_or_else(|| default_out(&tb));
                super::run(&tb, mode, &out)?;
                eprintln!("stride testbed: results in {}", out.display());
                Ok(())
            }
        }
    }
}
