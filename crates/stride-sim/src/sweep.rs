//! Parameter sweeps (`stride sim sweep`): one transport over a grid of scenario values, all
//! points in parallel on this machine, optionally against a baseline transport run on the same
//! flows. The result is one JSON document ([`SweepOutcome::result`]), a CSV ([`to_csv`]) and a
//! text table ([`table`]).
//!
//! ```no_run
//! use stride_sim::sweep::{run, SweepSpec};
//! let spec = SweepSpec {
//!     scenario: "scenarios/quick.toml".into(),
//!     vary: vec!["stride.t_high=40us,80us".into()],
//!     transport: "stride".into(),
//!     baseline: Some("dctcp".into()),
//!     sets: vec![],
//!     jobs: None,
//! };
//! let out = run(&spec).unwrap();
//! print!("{}", stride_sim::sweep::table(&out.keys, &out.rows, spec.baseline.as_deref()));
//! ```
use crate::report::TransportReport;
use crate::scenario::{Loaded, Scenario};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// Scenario file.
    pub scenario: PathBuf,
    /// `section.field=v1,v2,...` lists; every combination is one point.
    pub vary: Vec<String>,
    /// The transport whose parameters are swept.
    pub transport: String,
    /// A transport each point is compared with (run once per distinct setting of the fields
    /// outside the swept transport's section).
    pub baseline: Option<String>,
    /// Fixed `section.field=value` overrides of every point.
    pub sets: Vec<String>,
    /// Parallel simulations (default: all cores).
    pub jobs: Option<usize>,
}

/// A finished sweep.
#[derive(Debug, Clone)]
pub struct SweepOutcome {
    /// The swept keys, in order.
    pub keys: Vec<String>,
    /// One JSON object per point: the key values, `completed`, `flows`, `drops`,
    /// `categories` and (with a baseline) `improvement`, `baseline_drops` and
    /// `baseline_completed`.
    pub rows: Vec<Value>,
    /// The whole result: scenario, transport, baseline, fixed overrides, keys and points.
    pub result: Value,
    /// Deprecation notes of the scenario's keys.
    pub notes: Vec<String>,
    /// Simulations run and the threads they ran on.
    pub simulations: usize,
    /// Threads used.
    pub workers: usize,
}

/// Runs one transport on a loaded scenario to its end (or its time limit) and reports it.
pub fn simulate(loaded: &Loaded, transport: &str) -> anyhow::Result<TransportReport> {
    Ok(crate::outcome::run(loaded, transport)?.report)
}

/// The scenario section holding a transport's own parameters.
fn section(t: &str) -> &'static str {
    if t == "stride" {
        "stride"
    } else {
        "tcp"
    }
}

/// Every combination of the `key=v1,v2` lists, as lists of `key=v` overrides.
pub fn grid(vary: &[String]) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
    let mut keys = Vec::new();
    let mut points: Vec<Vec<String>> = vec![Vec::new()];
    for v in vary {
        let Some((k, vals)) = v.split_once('=') else {
            bail!("--vary {v:?}: expected `section.field=v1,v2,...`");
        };
        let vals: Vec<&str> = vals
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if vals.is_empty() {
            bail!("--vary {v:?}: no values");
        }
        keys.push(k.trim().to_string());
        points = points
            .into_iter()
            .flat_map(|p| {
                vals.iter().map(move |x| {
                    let mut q = p.clone();
                    q.push(format!("{}={x}", k.trim()));
                    q
                })
            })
            .collect();
    }
    Ok((keys, points))
}

/// One simulation of a sweep: a transport with the overrides of its point (the fixed ones,
/// then the point's own), to apply to the scenario file with `--set`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SweepJob {
    /// Transport name.
    pub transport: String,
    /// `section.field=value` overrides, in order.
    pub sets: Vec<String>,
}

/// Runs the sweep: validates every point first, then simulates them on `jobs` threads.
pub fn run(a: &SweepSpec) -> anyhow::Result<SweepOutcome> {
    run_with(a, |jobs, loaded| {
        let workers = a
            .jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .clamp(1, jobs.len());
        Ok((run_local(jobs, loaded, workers)?, workers))
    })
}

/// Runs the sweep with another executor (e.g. a cluster): validates every point, then hands
/// `exec` the simulations to run, in order, with their loaded scenarios; `exec` returns one
/// report per job, in the same order, and the number of workers it used. The table, CSV and
/// JSON are then built exactly as for [`run`].
pub fn run_with<F>(a: &SweepSpec, exec: F) -> anyhow::Result<SweepOutcome>
where
    F: FnOnce(&[SweepJob], &[Loaded]) -> anyhow::Result<(Vec<TransportReport>, usize)>,
{
    let (keys, points) = grid(&a.vary)?;
    let own = format!("{}.", section(&a.transport));
    // Jobs: the swept transport at every point; the baseline once per distinct setting of the
    // fields outside the swept transport's section (those are the ones that change its run).
    let mut jobs = Vec::new();
    let mut base_of_point = Vec::new();
    let mut base_index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for p in &points {
        let mut sets = a.sets.clone();
        sets.extend(p.iter().cloned());
        jobs.push(SweepJob {
            transport: a.transport.clone(),
            sets,
        });
    }
    if let Some(b) = &a.baseline {
        for p in &points {
            let shared: Vec<String> = p.iter().filter(|s| !s.starts_with(&own)).cloned().collect();
            let next = jobs.len();
            let idx = *base_index.entry(shared.clone()).or_insert_with(|| {
                let mut sets = a.sets.clone();
                sets.extend(shared);
                jobs.push(SweepJob {
                    transport: b.clone(),
                    sets,
                });
                next
            });
            base_of_point.push(idx);
        }
    }
    // Load (and so validate) every point before spending minutes on the first ones.
    let loaded = jobs
        .iter()
        .map(|j| Scenario::load_with(&a.scenario, &j.sets).map_err(|e| anyhow::anyhow!("{e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (reports, workers) = exec(&jobs, &loaded)?;
    if reports.len() != jobs.len() {
        bail!(
            "the sweep executor returned {} reports for {} simulations",
            reports.len(),
            jobs.len()
        );
    }
    let mut rows = Vec::new();
    for (pi, p) in points.iter().enumerate() {
        let r = &reports[pi];
        let mut row = serde_json::Map::new();
        for (k, s) in keys.iter().zip(p) {
            row.insert(k.clone(), json!(s.split_once('=').map_or("", |x| x.1)));
        }
        row.insert("completed".into(), json!(r.completed));
        row.insert("flows".into(), json!(r.flows_total));
        row.insert("drops".into(), json!(r.drops));
        row.insert("categories".into(), serde_json::to_value(&r.categories)?);
        if let Some(&bi) = base_of_point.get(pi) {
            let imp = crate::report::improvement(r, &reports[bi]);
            row.insert("improvement".into(), serde_json::to_value(imp)?);
            row.insert("baseline_drops".into(), json!(reports[bi].drops));
            row.insert("baseline_completed".into(), json!(reports[bi].completed));
        }
        rows.push(Value::Object(row));
    }
    let result = json!({
        "scenario": a.scenario.display().to_string(),
        "transport": a.transport,
        "baseline": a.baseline,
        "fixed": a.sets,
        "keys": keys,
        "points": rows,
    });
    Ok(SweepOutcome {
        keys,
        rows,
        result,
        notes: loaded[0].deprecations.clone(),
        simulations: jobs.len(),
        workers,
    })
}

/// Writes into `dir` what a machine without this one's files needs to run `jobs` (e.g. a
/// cluster's worker): the scenario file as `scenario.toml` and each file the jobs' scenarios
/// read (`loaded`, in job order) under `files/`. Returns the jobs with one override per such
/// file pointing at its copy (appended, so it wins), to run on `scenario.toml` with `dir` as
/// the working directory.
pub fn bundle(
    scenario: &Path,
    jobs: &[SweepJob],
    loaded: &[Loaded],
    dir: &Path,
) -> anyhow::Result<Vec<SweepJob>> {
    std::fs::create_dir_all(dir.join("files"))
        .with_context(|| format!("creating {}", dir.display()))?;
    std::fs::copy(scenario, dir.join("scenario.toml"))
        .with_context(|| format!("copying {}", scenario.display()))?;
    let home = scenario.parent().unwrap_or(Path::new(""));
    let mut copied: BTreeMap<PathBuf, String> = BTreeMap::new();
    let mut out = Vec::new();
    for (j, l) in jobs.iter().zip(loaded) {
        let mut job = j.clone();
        for (key, path) in l.sc.files(home) {
            let n = copied.len();
            let name = match copied.get(&path) {
                Some(name) => name.clone(),
                None => {
                    let base = path
                        .file_name()
                        .map_or_else(|| "file".into(), |b| b.to_string_lossy().into_owned());
                    let name = format!("files/{n}-{base}");
                    std::fs::copy(&path, dir.join(&name))
                        .with_context(|| format!("{key}: copying {}", path.display()))?;
                    copied.insert(path, name.clone());
                    name
                }
            };
            job.sets
                .push(format!("{key}={}", toml::Value::String(name)));
        }
        out.push(job);
    }
    Ok(out)
}

/// Simulates `jobs` on `workers` threads of this machine, in order.
fn run_local(
    jobs: &[SweepJob],
    loaded: &[Loaded],
    workers: usize,
) -> anyhow::Result<Vec<TransportReport>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<anyhow::Result<TransportReport>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let (Some(j), Some(l)) = (jobs.get(i), loaded.get(i)) else {
                    break;
                };
                let r = simulate(l, &j.transport);
                results.lock().expect("results")[i] = Some(r);
            });
        }
    });
    let mut reports = Vec::new();
    for (i, r) in results
        .into_inner()
        .expect("results")
        .into_iter()
        .enumerate()
    {
        let r = r.context("a sweep job did not run")?;
        reports.push(
            r.with_context(|| format!("{} with {}", jobs[i].transport, jobs[i].sets.join(" ")))?,
        );
    }
    Ok(reports)
}

fn cat(r: &Value, c: &str, f: &str) -> f64 {
    r["categories"][c][f].as_f64().unwrap_or(f64::NAN)
}

/// The sweep as CSV: the keys, completion, drops, FCTs per category, improvement.
pub fn to_csv(keys: &[String], rows: &[Value]) -> String {
    let mut s = keys.join(",");
    s.push_str(",completed,flows,drops");
    for c in ["all", "I", "II", "III", "IV"] {
        s.push_str(&format!(",{c}_avg_fct_us,{c}_p99_fct_us"));
    }
    s.push_str(",improvement_all_avg,improvement_all_p99\n");
    for r in rows {
        for k in keys {
            s.push_str(r[k].as_str().unwrap_or(""));
            s.push(',');
        }
        s.push_str(&format!("{},{},{}", r["completed"], r["flows"], r["drops"]));
        for c in ["all", "I", "II", "III", "IV"] {
            s.push_str(&format!(
                ",{:.3},{:.3}",
                cat(r, c, "avg_fct_us"),
                cat(r, c, "p99_fct_us")
            ));
        }
        let imp = |f: &str| {
            r["improvement"]["all"][f]
                .as_f64()
                .map(|v| format!("{v:.4}"))
        };
        s.push_str(&format!(
            ",{},{}\n",
            imp("avg").unwrap_or_default(),
            imp("p99").unwrap_or_default()
        ));
    }
    s
}

/// The sweep as a text table, with the best complete point named.
pub fn table(keys: &[String], rows: &[Value], baseline: Option<&str>) -> String {
    let mut s = String::new();
    for k in keys {
        s.push_str(&format!("{:>22} ", k));
    }
    s.push_str(&format!(
        "{:>9} {:>10} {:>10} {:>9} {:>9} {:>10} {:>7}",
        "done", "avg us", "p99 us", "I avg", "I p99", "IV avg", "drops"
    ));
    if let Some(b) = baseline {
        s.push_str(&format!(
            " {:>14} {:>14}",
            format!("{b}/x avg"),
            format!("{b}/x p99")
        ));
    }
    s.push('\n');
    let mut best: Option<(f64, usize)> = None;
    for (i, r) in rows.iter().enumerate() {
        for k in keys {
            s.push_str(&format!("{:>22} ", r[k].as_str().unwrap_or("")));
        }
        let avg = cat(r, "all", "avg_fct_us");
        s.push_str(&format!(
            "{:>9} {:>10.1} {:>10.1} {:>9.1} {:>9.1} {:>10.1} {:>7}",
            format!("{}/{}", r["completed"], r["flows"]),
            avg,
            cat(r, "all", "p99_fct_us"),
            cat(r, "I", "avg_fct_us"),
            cat(r, "I", "p99_fct_us"),
            cat(r, "IV", "avg_fct_us"),
            r["drops"]
        ));
        if baseline.is_some() {
            s.push_str(&format!(
                " {:>14.2} {:>14.2}",
                r["improvement"]["all"]["avg"].as_f64().unwrap_or(f64::NAN),
                r["improvement"]["all"]["p99"].as_f64().unwrap_or(f64::NAN)
            ));
        }
        s.push('\n');
        let complete = r["completed"] == r["flows"];
        if complete && best.is_none_or(|(b, _)| avg < b) {
            best = Some((avg, i));
        }
    }
    match best {
        Some((_, i)) => {
            let r = &rows[i];
            let p: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}={}", r[k].as_str().unwrap_or("")))
                .collect();
            s.push_str(&format!(
                "lowest average FCT with every flow complete: {}\n",
                p.join(" ")
            ));
        }
        None => s.push_str("no point completed every flow\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::grid;

    #[test]
    fn grid_is_the_cartesian_product_in_order() {
        let (k, p) = grid(&["a.x=1,2".into(), "b.y=3,4,5".into()]).unwrap();
        assert_eq!(k, ["a.x", "b.y"]);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], ["a.x=1", "b.y=3"]);
        assert_eq!(p[5], ["a.x=2", "b.y=5"]);
        assert!(grid(&["a.x".into()]).is_err());
        assert!(grid(&["a.x=".into()]).is_err());
    }
}
