//! Runs with everything they measured: one transport on a loaded scenario ([`run`]), several on
//! identical flows in parallel threads ([`compare`]), and the summary of several runs
//! ([`summary`]: the document `stride sim run|compare --json` prints and the Python package
//! returns). Every face of the simulator (the CLI, this API, the Python package) goes through
//! here, so they give the same numbers.
//!
//! ```no_run
//! use stride_sim::scenario::Scenario;
//! let loaded = Scenario::load_with("scenarios/quick.toml".as_ref(), &["workload.flows=50".into()])?;
//! let started = std::time::Instant::now();
//! let runs = stride_sim::outcome::compare(&loaded, &["stride".into(), "dctcp".into()])?;
//! let s = stride_sim::outcome::summary(&loaded, &runs, started.elapsed().as_secs_f64())?;
//! println!("{}", s["improvement"]["dctcp"]["all"]["avg"]);
//! # Ok::<(), anyhow::Error>(())
//! ```
use crate::engine::{Progress, Sim, TraceSample};
use crate::net::NodeId;
use crate::report::{improvement, rows, summarize, FlowRow, TransportReport};
use crate::scenario::Loaded;
use serde_json::{json, Value};
use std::time::Instant;

/// A queue sample of a watched port, with the port's ends.
#[derive(Clone, Copy, Debug)]
pub struct PortSample {
    /// Time, ns.
    pub t: u64,
    /// Port index (`Topology::ports`).
    pub port: usize,
    /// Node owning the queue.
    pub from: NodeId,
    /// Node at the far end of the link.
    pub to: NodeId,
    /// Bytes queued.
    pub bytes: u64,
}

/// One transport's finished run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Transport name.
    pub transport: String,
    /// Its summary.
    pub report: TransportReport,
    /// Per flow, in the scenario's flow order.
    pub flows: Vec<FlowRow>,
    /// Queue samples of the watched ports (`[watch]`).
    pub queue: Vec<PortSample>,
    /// Sender-state samples of the traced flows (`[trace]`).
    pub traces: Vec<TraceSample>,
    /// Jain's index over time (`[trace]`): (time ns, index, flows counted).
    pub jain: Vec<(u64, f64, usize)>,
    /// A mixed run's measurements (a scenario with `[group.NAME]` sections).
    pub coexist: Option<crate::coexist::report::CoexistReport>,
}

/// Runs `transport` on a loaded scenario to its end (or its time limit): `setup` may change the
/// simulator first (e.g. tap a port), `progress` is called every 2^20 events.
pub fn run_with(
    loaded: &Loaded,
    transport: &str,
    setup: impl FnOnce(&mut Sim) -> anyhow::Result<()>,
    progress: impl FnMut(Progress),
) -> anyhow::Result<Outcome> {
    let sc = &loaded.sc;
    let mut sim = sc
        .sim(transport, &loaded.flows)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    setup(&mut sim)?;
    let t0 = Instant::now();
    sim.run_with_progress((sc.limit_ms * 1e6) as u64, progress);
    let wall = t0.elapsed().as_secs_f64();
    let flows = rows(&sim);
    let queue = sim
        .samples
        .iter()
        .map(|s| {
            let p = &sim.topo.ports[s.port];
            PortSample {
                t: s.t,
                port: s.port,
                from: p.from,
                to: p.to,
                bytes: s.bytes,
            }
        })
        .collect();
    Ok(Outcome {
        transport: transport.to_string(),
        coexist: crate::coexist::report::report(sc, &sim),
        report: summarize(&flows, &sim.stats, &sim.samples, wall),
        flows,
        queue,
        traces: std::mem::take(&mut sim.traces),
        jain: std::mem::take(&mut sim.jain_samples),
    })
}

/// [`run_with`] without setup or progress.
pub fn run(loaded: &Loaded, transport: &str) -> anyhow::Result<Outcome> {
    run_with(loaded, transport, |_| Ok(()), |_| {})
}

/// Each of `transports` on the scenario's flows, each on its own thread (the simulations share
/// nothing), in the order given.
pub fn compare(loaded: &Loaded, transports: &[String]) -> anyhow::Result<Vec<Outcome>> {
    if transports.is_empty() {
        anyhow::bail!("no transport to run");
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = transports
            .iter()
            .map(|t| s.spawn(move || run(loaded, t)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("simulation thread panicked")))
            })
            .collect()
    })
}

/// The summary of runs on one scenario: per transport its report, and STRIDE's improvement over
/// each other (`improvement.<other>.<category>.{avg,p99}` = other's FCT / STRIDE's), and a mixed
/// run's `coexist` measurements; `wall_seconds_total` is the caller's wall time of the whole.
pub fn summary(loaded: &Loaded, outcomes: &[Outcome], wall_total: f64) -> anyhow::Result<Value> {
    let mut transports = serde_json::Map::new();
    for o in outcomes {
        transports.insert(o.transport.clone(), serde_json::to_value(&o.report)?);
    }
    let mut improvements = serde_json::Map::new();
    if let Some(st) = outcomes.iter().find(|o| o.transport == "stride") {
        for o in outcomes.iter().filter(|o| o.transport != "stride") {
            improvements.insert(
                o.transport.clone(),
                serde_json::to_value(improvement(&st.report, &o.report))?,
            );
        }
    }
    let mut summary = json!({
        "scenario": loaded.sc.name,
        "hosts": loaded.sc.hosts(),
        "flows": loaded.flows.len(),
        "wall_seconds_total": wall_total,
        "transports": Value::Object(transports),
        "improvement": Value::Object(improvements),
    });
    if let Some(c) = outcomes.iter().find_map(|o| o.coexist.as_ref()) {
        summary["coexist"] = serde_json::to_value(c)?;
    }
    Ok(summary)
}

/// The keys of a [`summary`] (and of each transport's report in it) that measure this machine's
/// speed rather than the simulation: every other value is the same on every run of the same
/// scenario, seed and build.
pub const WALL_CLOCK_KEYS: [&str; 4] = [
    "wall_seconds_total",
    "wall_seconds",
    "events_per_sec",
    "packet_hops_per_sec",
];

impl Outcome {
    /// Per-flow CSV (`flows-<transport>.csv`).
    pub fn flows_csv(&self) -> String {
        crate::report::csv(&self.transport, &self.flows)
    }

    /// Queue samples as CSV (`queue-<transport>.csv`): `t_ns,port,from,to,bytes`.
    pub fn queue_csv(&self) -> String {
        let mut s = String::from("t_ns,port,from,to,bytes\n");
        for q in &self.queue {
            s.push_str(&format!(
                "{},{},{},{},{}\n",
                q.t, q.port, q.from, q.to, q.bytes
            ));
        }
        s
    }

    /// Trace samples as CSV (`trace-<transport>.csv`); a field the transport does not have is
    /// empty.
    pub fn trace_csv(&self) -> String {
        let opt = |v: Option<f64>| v.map(|x| format!("{x:.6}")).unwrap_or_default();
        let mut s = String::from(
            "t_ns,flow,cwnd_bytes,rate_gbps,alpha,rtt_ns,queueing_ns,stt_ns,branch,delivered_bytes\n",
        );
        for x in &self.traces {
            let t = &x.trace;
            s.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                x.t,
                x.flow,
                opt(t.cwnd_bytes),
                opt(t.rate_bps.map(|r| r / 1e9)),
                opt(t.alpha),
                opt(t.rtt_ns),
                opt(t.queueing_ns),
                opt(t.stt_ns),
                t.branch.unwrap_or(""),
                x.delivered
            ));
        }
        s
    }

    /// Jain's index over time as CSV (`jain-<transport>.csv`): `t_ns,jain,flows`.
    pub fn jain_csv(&self) -> String {
        let mut s = String::from("t_ns,jain,flows\n");
        for (t, j, n) in &self.jain {
            s.push_str(&format!("{t},{j:.6},{n}\n"));
        }
        s
    }
}
