//! `stride sim run|compare`: runs a scenario file with one or several transports on identical
//! flows (in parallel threads), writes per-flow CSV, a summary JSON and queue samples.
use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value;
use std::fs::File;
use std::io::BufWriter;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use stride_sim::net::Payload;
use stride_sim::outcome::Outcome;
use stride_sim::scenario::{Loaded, Scenario};

#[derive(clap::Args)]
pub struct SimArgs {
    #[command(subcommand)]
    cmd: SimCmd,
}

#[derive(clap::Subcommand)]
enum SimCmd {
    /// Run a scenario with the transports it lists, or its groups' transports together in one
    /// network (a scenario with [group.NAME] sections).
    ///
    /// Example: stride sim run scenarios/quick.toml --out out/quick
    Run {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Directory for flows-<transport>.csv, summary.json and queue-<transport>.csv.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the summary as JSON on stdout (no progress bar).
        #[arg(long)]
        json: bool,
        /// Override a scenario field: `section.field=value` (repeatable), e.g.
        /// `--set stride.t_high=20us --set workload.load=0.7`.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Capture every packet port PORT accepts (the `port` column of queue-*.csv) into
        /// OUT/<transport>-port<PORT>.pcap (needs --out; STRIDE packets only, TCP models have
        /// no wire format): hosts are 10.0.x.y, CE marks are shown in the IP ECN field.
        #[arg(long, value_name = "PORT", requires = "out")]
        pcap: Option<usize>,
    },
    /// Run a scenario with each of the given transports on identical flow arrivals.
    ///
    /// Example: stride sim compare scenarios/paper-fattree.toml --cc stride,dctcp,vegas,newreno
    Compare {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Comma-separated transports by name: STRIDE's profiles, the TCP models (dctcp, vegas,
        /// newreno, aimd) and every registered controller (timely, dcqcn, swift, qcn, hpcc, ...;
        /// an unknown name lists them all); `all` for every listed one the scenario can run.
        #[arg(long, value_delimiter = ',', default_value = "stride,dctcp,vegas")]
        cc: Vec<String>,
        /// Output directory.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print the summary as JSON on stdout (no progress bar).
        #[arg(long)]
        json: bool,
        /// Override a scenario field: `section.field=value` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        sets: Vec<String>,
        /// Capture every packet port PORT accepts (the `port` column of queue-*.csv) into
        /// OUT/<transport>-port<PORT>.pcap (needs --out; STRIDE packets only, TCP models have
        /// no wire format): hosts are 10.0.x.y, CE marks are shown in the IP ECN field.
        #[arg(long, value_name = "PORT", requires = "out")]
        pcap: Option<usize>,
    },
    /// Redraw the plots of an --out directory from its summary.json and queue-*.csv.
    ///
    /// Example: stride sim plot out/paper
    Plot {
        /// A directory written by `run` or `compare` with --out.
        dir: PathBuf,
    },
    /// Run one transport over a grid of parameter values (every combination of the --vary
    /// lists), in parallel on all cores, and tabulate FCT per point; with --baseline, also the
    /// improvement factor (baseline FCT / transport FCT) at every point.
    ///
    /// Example: stride sim sweep scenarios/quick.toml --vary stride.t_high=20us,40us,80us
    /// --vary stride.beta=10mbit,40mbit --baseline dctcp
    Sweep(SweepArgs),
}

pub fn run(a: SimArgs) -> anyhow::Result<()> {
    match a.cmd {
        SimCmd::Run {
            scenario,
            out,
            json,
            sets,
            pcap,
        } => {
            let loaded = load_noting(&scenario, &sets)?;
            let cc = loaded.sc.runs();
            execute(&loaded, &cc, out.as_deref(), json, pcap)
        }
        SimCmd::Compare {
            scenario,
            cc,
            out,
            json,
            sets,
            pcap,
        } => {
            let mut loaded = load_noting(&scenario, &sets)?;
            if loaded.sc.is_mixed() {
                bail!(
                    "{}: its groups run their transports together in one network: \
                     `stride sim run` runs it",
                    scenario.display()
                );
            }
            let cc = expand_all(cc, &loaded.sc);
            loaded.sc.transports = Some(cc.clone());
            execute(&loaded, &cc, out.as_deref(), json, pcap)
        }
        SimCmd::Plot { dir } => plot_dir(&dir),
        SimCmd::Sweep(a) => sweep(a),
    }
}

/// `stride sim plot DIR`: the plots of a `--out` directory, redrawn from its files.
fn plot_dir(dir: &Path) -> anyhow::Result<()> {
    let path = dir.join("summary.json");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let summary: Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a summary", path.display()))?;
    let names: Vec<String> = summary["transports"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut queues = Vec::new();
    for n in names {
        if let Ok(q) = std::fs::read_to_string(dir.join(format!("queue-{n}.csv"))) {
            queues.push((n, crate::plot::queue_series(&q)));
        }
    }
    for f in crate::plot::write_plots(dir, &summary, &queues)? {
        println!("{}", f.display());
    }
    Ok(())
}

/// The arguments of `stride sim sweep`.
#[derive(clap::Args)]
pub struct SweepArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// `section.field=v1,v2,...` (repeatable): the values to try for one field.
    #[arg(long, value_name = "KEY=V1,V2,..", required = true)]
    pub vary: Vec<String>,
    /// The transport whose parameters are swept.
    #[arg(long, default_value = "stride")]
    pub cc: String,
    /// A transport to compare every point against (run once per distinct setting of the
    /// fields outside the swept transport's own section).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Fixed overrides applied to every point (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Parallel simulations (default: all cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Directory for sweep.csv and sweep.json.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Print the results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Run the simulations as Ray tasks on the Ray cluster at ADDRESS (`auto`, HOST:6379,
    /// ray://HOST:10001, or `local` for a private instance started for this sweep) instead of
    /// on this machine; same table and files. Needs a Python with `ray` (STRIDE_RAY_PYTHON,
    /// default python3), and this `stride` binary and the scenario at the same paths on every
    /// worker. See tools/ray/stride_ray_sweep.py.
    #[arg(long, value_name = "ADDRESS", conflicts_with = "jobs")]
    pub ray: Option<String>,
}

/// `stride sim sweep`: the points on this machine or a Ray cluster, then the table and files.
fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    let SweepArgs {
        scenario,
        vary,
        cc,
        baseline,
        sets,
        jobs,
        out,
        json,
        ray,
    } = a;
    check_transport(&cc)?;
    if let Some(b) = &baseline {
        check_transport(b)?;
    }
    let spec = stride_sim::sweep::SweepSpec {
        scenario,
        vary,
        transport: cc,
        baseline,
        sets,
        jobs,
    };
    let spec_ray = ray.is_some();
    let o = match ray {
        None => stride_sim::sweep::run(&spec)?,
        Some(address) => {
            let opts = crate::ray::RayOptions {
                address,
                python: std::env::var_os("STRIDE_RAY_PYTHON")
                    .map_or_else(|| PathBuf::from("python3"), PathBuf::from),
                stride: std::env::current_exe().context("locating the stride binary")?,
            };
            crate::ray::run_on_ray(&spec, &opts)?
        }
    };
    for n in &o.notes {
        eprintln!("stride sim sweep: note: {n}");
    }
    if !json {
        eprintln!(
            "sweep: {} points of {}{}, {} simulations on {} {}",
            o.rows.len(),
            spec.transport,
            spec.baseline
                .as_ref()
                .map(|b| format!(" + baseline {b}"))
                .unwrap_or_default(),
            o.simulations,
            o.workers,
            if spec_ray { "Ray CPUs" } else { "threads" }
        );
    }
    if let Some(dir) = &out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("sweep.json"),
            serde_json::to_string_pretty(&o.result)? + "\n",
        )?;
        std::fs::write(
            dir.join("sweep.csv"),
            stride_sim::sweep::to_csv(&o.keys, &o.rows),
        )?;
    }
    if json {
        println!("{}", serde_json::to_string(&o.result)?);
    } else {
        print!(
            "{}",
            stride_sim::sweep::table(&o.keys, &o.rows, spec.baseline.as_deref())
        );
    }
    Ok(())
}

/// Whether some flow cannot finish within `limit_ms` even at its host's line rate (long-lived
/// flows): then progress is simulated time, else completed flows.
fn open_ended(loaded: &Loaded) -> bool {
    let bps = loaded.sc.host_bps() as f64;
    let limit_ns = loaded.sc.limit_ms * 1e6;
    loaded
        .flows
        .iter()
        .any(|f| f.start as f64 + f.bytes as f64 * 8e9 / bps > limit_ns)
}

type SimCapture = Arc<Mutex<(stride_pcap::Writer<BufWriter<File>>, Option<std::io::Error>)>>;

/// Records STRIDE packets at a port as IPv4/UDP (10.0.x.y per host, a source port per
/// connection, destination port 7000, CE in the ECN field).
fn capture_tap(c: SimCapture) -> stride_sim::engine::PortTap {
    Box::new(move |now, p| {
        let Payload::Stride {
            header,
            payload_len,
            ctrl,
        } = &p.payload
        else {
            return;
        };
        let ip = |h: u32| std::net::Ipv4Addr::new(10, (h >> 16) as u8, (h >> 8) as u8, h as u8);
        let sport = 49_152 + (p.hash % 16_384) as u16;
        let src = std::net::SocketAddr::from((ip(p.src), sport));
        let dst = std::net::SocketAddr::from((ip(p.dst), 7000));
        let mut d = header.to_vec();
        match ctrl {
            Some(c) => d.extend_from_slice(c),
            None => d.resize(header.len() + usize::from(*payload_len), 0),
        }
        let mut g = c.lock().unwrap_or_else(|e| e.into_inner());
        if g.1.is_none() {
            let ecn = if p.ce { 3 } else { u8::from(p.ect) << 1 };
            if let Err(e) = g.0.write_udp_ecn(now, src, dst, &d, ecn) {
                g.1 = Some(e);
            }
        }
    })
}

/// Runs one transport on a loaded scenario (with a progress bar if given), capturing the
/// packets of port `cap.0` into the file `cap.1` when asked.
pub(crate) fn one_captured(
    loaded: &Loaded,
    transport: &str,
    bar: Option<ProgressBar>,
    cap: Option<(usize, PathBuf)>,
) -> anyhow::Result<Outcome> {
    let mut capture: Option<(SimCapture, PathBuf)> = None;
    let setup = |sim: &mut stride_sim::engine::Sim| -> anyhow::Result<()> {
        if let Some((port, path)) = cap {
            let n = sim.topo.ports.len();
            if port >= n {
                bail!("--pcap {port}: the topology has ports 0..{}", n - 1);
            }
            let f = File::create(&path).with_context(|| format!("--pcap: {}", path.display()))?;
            let w = stride_pcap::Writer::new(BufWriter::new(f))?;
            let c: SimCapture = Arc::new(Mutex::new((w, None)));
            sim.tap = Some((port, capture_tap(c.clone())));
            capture = Some((c, path));
        }
        Ok(())
    };
    let t0 = Instant::now();
    let limit = (loaded.sc.limit_ms * 1e6) as u64;
    let by_time = open_ended(loaded);
    let total = loaded.flows.len() as u64;
    let o = stride_sim::outcome::run_with(loaded, transport, setup, |p| {
        if let Some(b) = &bar {
            let secs = t0.elapsed().as_secs_f64().max(1e-9);
            b.set_position(if by_time {
                (p.now / 1000).min(limit / 1000)
            } else {
                p.completed
            });
            b.set_message(format!(
                "{transport}: {}/{total} flows, {:.2} of {:.0} ms simulated, {:.1} M events/s",
                p.completed,
                p.now as f64 / 1e6,
                limit as f64 / 1e6,
                p.events as f64 / secs / 1e6
            ));
        }
    })?;
    if let Some(b) = &bar {
        b.finish_with_message(format!(
            "{transport}: done in {:.1} s",
            o.report.wall_seconds
        ));
    }
    // the simulator (and its tap's share of the capture) is gone
    if let Some((c, path)) = capture {
        let (w, e) = Arc::try_unwrap(c)
            .map_err(|_| anyhow::anyhow!("capture still shared"))?
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(e) = e {
            bail!("--pcap {}: {e}", path.display());
        }
        let n = w.packets();
        use std::io::Write;
        w.into_inner()
            .flush()
            .with_context(|| format!("--pcap {}", path.display()))?;
        eprintln!("{transport}: {n} packets written to {}", path.display());
    }
    Ok(o)
}

fn execute(
    loaded: &Loaded,
    cc: &[String],
    out: Option<&Path>,
    json_out: bool,
    pcap: Option<usize>,
) -> anyhow::Result<()> {
    if let (Some(dir), Some(_)) = (out, pcap) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    if cc.is_empty() {
        bail!("no transport to run (--cc or `transports` in the scenario)");
    }
    if !loaded.sc.is_mixed() {
        for t in cc {
            check_transport(t)?;
        }
    }
    let started = Instant::now();
    let outcomes = simulate_all(loaded, cc, out, !json_out, pcap)?;
    let summary = summary_of(loaded, &outcomes, started)?;
    let wrote = match out {
        Some(dir) => write_out(dir, loaded, &outcomes, &summary)?,
        None => {
            "(no files written: give --out DIR for per-flow CSV, summary.json and plots)".into()
        }
    };
    if json_out {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print_table(&summary);
        for o in &outcomes {
            if let Some(c) = &o.coexist {
                print!("\n{}", c.text(&o.transport));
            }
        }
    }
    // stderr, so that --json keeps stdout pure JSON
    eprintln!("{wrote}");
    Ok(())
}

/// Each transport of `cc` simulated on its own thread (the simulations share nothing), with a
/// progress bar each when `bars` and stderr is a terminal.
fn simulate_all(
    loaded: &Loaded,
    cc: &[String],
    out: Option<&Path>,
    bars: bool,
    pcap: Option<usize>,
) -> anyhow::Result<Vec<Outcome>> {
    let show = bars && std::io::stderr().is_terminal();
    let multi = indicatif::MultiProgress::new();
    let limit_us = (loaded.sc.limit_ms * 1e3) as u64;
    let (len, unit) = if open_ended(loaded) {
        (limit_us, "µs simulated")
    } else {
        (loaded.flows.len() as u64, "flows done")
    };
    // Each transport on its own thread: the simulations share nothing.
    let results: Vec<anyhow::Result<Outcome>> = std::thread::scope(|s| {
        let handles: Vec<_> = cc
            .iter()
            .map(|t| {
                let bar = show.then(|| {
                    let b = multi.add(ProgressBar::new(len));
                    b.set_style(
                        ProgressStyle::with_template(&format!(
                            "{{bar:30}} {{pos}}/{{len}} {unit}, ETA {{eta}}  {{msg}}"
                        ))
                        .expect("template"),
                    );
                    b
                });
                let cap = pcap
                    .zip(out)
                    .map(|(p, d)| (p, d.join(format!("{t}-port{p}.pcap"))));
                s.spawn(move || one_captured(loaded, t, bar, cap))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("simulation thread panicked")))
            })
            .collect()
    });
    let mut outcomes = Vec::new();
    for r in results {
        outcomes.push(r?);
    }
    Ok(outcomes)
}

/// The summary of a run: per transport its report, and STRIDE's improvement over each other.
fn summary_of(loaded: &Loaded, outcomes: &[Outcome], started: Instant) -> anyhow::Result<Value> {
    stride_sim::outcome::summary(loaded, outcomes, started.elapsed().as_secs_f64())
}

/// Writes the per-flow, queue and trace CSVs, summary.json and the plots into `dir`; returns
/// the line that names them.
fn write_out(
    dir: &Path,
    loaded: &Loaded,
    outcomes: &[Outcome],
    summary: &Value,
) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for o in outcomes {
        let name = &o.transport;
        std::fs::write(dir.join(format!("flows-{name}.csv")), o.flows_csv())?;
        if !o.queue.is_empty() {
            std::fs::write(dir.join(format!("queue-{name}.csv")), o.queue_csv())?;
        }
        if loaded.sc.trace.is_some() {
            std::fs::write(dir.join(format!("trace-{name}.csv")), o.trace_csv())?;
            std::fs::write(dir.join(format!("jain-{name}.csv")), o.jain_csv())?;
        }
        if let Some(c) = &o.coexist {
            std::fs::write(dir.join("coexist.csv"), c.series_table(','))?;
        }
    }
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_string_pretty(&summary)? + "\n",
    )?;
    let queues: Vec<(String, Vec<(f64, f64)>)> = outcomes
        .iter()
        .map(|o| {
            (
                o.transport.clone(),
                crate::plot::queue_series(&o.queue_csv()),
            )
        })
        .collect();
    let traces: Vec<crate::plot::TraceSeries> = outcomes
        .iter()
        .map(|o| crate::plot::TraceSeries {
            name: o.transport.clone(),
            trace_csv: o.trace_csv(),
            jain_csv: o.jain_csv(),
        })
        .collect();
    crate::plot::write_plots(dir, summary, &queues)
        .and_then(|_| crate::plot::write_trace_plots(dir, summary, &traces))
        .with_context(|| {
            format!(
                "the CSV and JSON files are in {}, but the plots could not be drawn",
                dir.display()
            )
        })?;
    let mut files: Vec<String> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    Ok(format!("wrote {}: {}", dir.display(), files.join(", ")))
}

/// `all` stands for every registered transport the scenario can run (its build accepts the
/// scenario: e.g. `qcn` only with a `[qcn]` section), in registry order.
fn expand_all(cc: Vec<String>, sc: &stride_sim::scenario::Scenario) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in cc {
        if t == "all" {
            for tr in stride_sim::transport::transports() {
                if tr.listed() && tr.build(sc, 0).is_ok() && !out.iter().any(|o| o == tr.name) {
                    out.push(tr.name.to_string());
                }
            }
        } else if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

pub(crate) fn check_transport(t: &str) -> anyhow::Result<()> {
    if stride_sim::transport::find(t).is_none() {
        bail!(
            "unknown transport {t:?}: use {}",
            stride_sim::transport::names().join(", ")
        );
    }
    Ok(())
}

fn print_table(s: &Value) {
    println!(
        "scenario {}: {} hosts, {} flows",
        s["scenario"].as_str().unwrap_or("?"),
        s["hosts"],
        s["flows"]
    );
    let Some(ts) = s["transports"].as_object() else {
        return;
    };
    println!(
        "{:<8} {:>11} {:>8} {:>8} {:>9} {:>9} {:>8} {:>8} {:>10} {:>6} {:>9} {:>8}",
        "cc",
        "done/flows",
        "drops",
        "lost",
        "ECN",
        "pause ms",
        "q50 KB",
        "q99 KB",
        "Gbit/s",
        "Jain",
        "Mev/s",
        "wall s"
    );
    for (name, t) in ts {
        let u = |k: &str| t[k].as_u64().unwrap_or(0);
        let f = |k: &str| t[k].as_f64().unwrap_or(0.0);
        println!(
            "{:<8} {:>11} {:>8} {:>8} {:>9} {:>9.3} {:>8.1} {:>8.1} {:>10.2} {:>6.3} {:>9.2} {:>8.2}",
            name,
            format!("{}/{}", u("completed"), u("flows_total")),
            u("drops"),
            u("link_losses"),
            u("ecn_marks"),
            f("pause_ms"),
            t["queue_p50_kb"].as_f64().unwrap_or(f64::NAN),
            t["queue_p99_kb"].as_f64().unwrap_or(f64::NAN),
            f("goodput_gbps"),
            f("jain"),
            f("events_per_sec") / 1e6,
            f("wall_seconds")
        );
    }
    println!();
    println!(
        "{:<8} {:>4} {:>7} {:>12} {:>12} {:>10}",
        "cc", "cat", "flows", "avg FCT us", "p99 FCT us", "avg slow"
    );
    for (name, t) in ts {
        for cat in ["I", "II", "III", "IV", "all"] {
            let c = &t["categories"][cat];
            println!(
                "{:<8} {:>4} {:>7} {:>12.1} {:>12.1} {:>10.2}",
                name,
                cat,
                c["flows"].as_u64().unwrap_or(0),
                c["avg_fct_us"].as_f64().unwrap_or(0.0),
                c["p99_fct_us"].as_f64().unwrap_or(0.0),
                c["avg_slowdown"].as_f64().unwrap_or(0.0),
            );
        }
    }
    if let Some(imp) = s["improvement"].as_object() {
        for (other, cats) in imp {
            let line: Vec<String> = ["I", "II", "III", "IV", "all"]
                .iter()
                .filter_map(|c| {
                    let v = &cats[*c];
                    Some(format!(
                        "{c}: {:.2}x avg, {:.2}x p99",
                        v["avg"].as_f64()?,
                        v["p99"].as_f64()?
                    ))
                })
                .collect();
            println!(
                "improvement vs {other} (other FCT / STRIDE FCT): {}",
                line.join("; ")
            );
        }
    }
}

/// Loads a scenario and prints its deprecation notes (old `_ns`/`_gbps` keys) on stderr.
pub(crate) fn load_noting(
    path: &std::path::Path,
    sets: &[String],
) -> anyhow::Result<stride_sim::scenario::Loaded> {
    let l = Scenario::load_with(path, sets).map_err(|e| anyhow::anyhow!("{e}"))?;
    for n in &l.deprecations {
        eprintln!("stride sim: note: {n}");
    }
    Ok(l)
}
