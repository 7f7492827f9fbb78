//! `stride sim sweep`: one transport over a grid of parameter values, all points in parallel,
//! optionally against a baseline transport run on the same flows.
use crate::sim::{check_transport, one};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use stride_sim::report::TransportReport;
use stride_sim::scenario::Scenario;

pub struct SweepArgs {
    pub scenario: PathBuf,
    pub vary: Vec<String>,
    pub cc: String,
    pub baseline: Option<String>,
    pub sets: Vec<String>,
    pub jobs: Option<usize>,
    pub out: Option<PathBuf>,
    pub json: bool,
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
fn grid(vary: &[String]) -> anyhow::Result<(Vec<String>, Vec<Vec<String>>)> {
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

struct Job {
    transport: String,
    sets: Vec<String>,
}

pub fn sweep(a: SweepArgs) -> anyhow::Result<()> {
    check_transport(&a.cc)?;
    if let Some(b) = &a.baseline {
        check_transport(b)?;
    }
    let (keys, points) = grid(&a.vary)?;
    let own = format!("{}.", section(&a.cc));
    // Jobs: the swept transport at every point; the baseline once per distinct setting of the
    // fields outside the swept transport's section (those are the ones that change its run).
    let mut jobs = Vec::new();
    let mut base_of_point = Vec::new();
    let mut base_index: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for p in &points {
        let mut sets = a.sets.clone();
        sets.extend(p.iter().cloned());
        jobs.push(Job {
            transport: a.cc.clone(),
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
                jobs.push(Job {
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
    for n in &loaded[0].deprecations {
        eprintln!("stride sim sweep: note: {n}");
    }
    let workers = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, jobs.len());
    if !a.json {
        eprintln!(
            "sweep: {} points of {}{}, {} simulations on {workers} threads",
            points.len(),
            a.cc,
            a.baseline
                .as_ref()
                .map(|b| format!(" + baseline {b}"))
                .unwrap_or_default(),
            jobs.len()
        );
    }
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
                let r = one(l, &j.transport, None).map(|o| o.report);
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
            let imp = stride_sim::report::improvement(r, &reports[bi]);
            row.insert("improvement".into(), serde_json::to_value(imp)?);
        }
        rows.push(Value::Object(row));
    }
    let result = json!({
        "scenario": a.scenario.display().to_string(),
        "transport": a.cc,
        "baseline": a.baseline,
        "fixed": a.sets,
        "keys": keys,
        "points": rows,
    });
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("sweep.json"),
            serde_json::to_string_pretty(&result)? + "\n",
        )?;
        std::fs::write(dir.join("sweep.csv"), to_csv(&keys, &rows))?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&result)?);
    } else {
        print!("{}", table(&keys, &rows, a.baseline.as_deref()));
    }
    Ok(())
}

fn cat(r: &Value, c: &str, f: &str) -> f64 {
    r["categories"][c][f].as_f64().unwrap_or(f64::NAN)
}

fn to_csv(keys: &[String], rows: &[Value]) -> String {
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

fn table(keys: &[String], rows: &[Value], baseline: Option<&str>) -> String {
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
