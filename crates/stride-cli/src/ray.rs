//! `stride sim sweep --ray`: the sweep's simulations as Ray tasks. The simulator library only
//! plans the sweep and builds its table (`stride_sim::sweep::run_with`); this module ships the
//! Python driver (`tools/ray/stride_ray_sweep.py`, embedded in the binary) and runs it.

use anyhow::{bail, Context};
use serde_json::json;
use std::path::PathBuf;
use stride_sim::report::TransportReport;
use stride_sim::sweep::{SweepOutcome, SweepSpec};

/// Where and how [`run_on_ray`] runs a sweep's simulations.
#[derive(Debug, Clone)]
pub struct RayOptions {
    /// What `ray.init(address=...)` takes: `auto`, `HOST:6379`, `ray://HOST:10001`, or `local`
    /// for a private Ray instance started for this sweep and stopped after it.
    pub address: String,
    /// The Python with the `ray` package (e.g. a virtualenv's `bin/python`).
    pub python: PathBuf,
    /// The `stride` binary the Ray workers run (`stride sim compare ... --json` per simulation);
    /// it must exist at this path on every worker, as must the scenario and its workload files.
    pub stride: PathBuf,
}

/// The Python driver of [`run_on_ray`] (`tools/ray/stride_ray_sweep.py`, embedded).
pub const RAY_DRIVER: &str = include_str!("../../../tools/ray/stride_ray_sweep.py");

/// Runs the sweep's simulations as Ray tasks on a Ray cluster (one task per simulation, each
/// running `stride sim compare SCENARIO --cc T --set ... --json` on a worker) and builds the same
/// table, CSV and JSON as `stride_sim::sweep::run`. `spec.jobs` is ignored: Ray places the tasks.
pub fn run_on_ray(a: &SweepSpec, ray: &RayOptions) -> anyhow::Result<SweepOutcome> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let scenario = std::fs::canonicalize(&a.scenario)
        .with_context(|| format!("scenario {}", a.scenario.display()))?;
    stride_sim::sweep::run_with(a, |jobs, _| {
        let req = json!({
            "address": ray.address,
            "stride": ray.stride,
            "scenario": scenario,
            "jobs": jobs,
        });
        let mut child = Command::new(&ray.python)
            .arg("-c")
            .arg(RAY_DRIVER)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {} (the Python with ray)", ray.python.display()))?;
        let mut stdin = child.stdin.take().context("driver stdin")?;
        stdin.write_all(serde_json::to_string(&req)?.as_bytes())?;
        drop(stdin);
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "the Ray driver ({} -c RAY_DRIVER, address {}) failed: {}",
                ray.python.display(),
                ray.address,
                out.status
            );
        }
        #[derive(serde::Deserialize)]
        struct Answer {
            reports: Vec<TransportReport>,
            workers: usize,
        }
        let ans: Answer =
            serde_json::from_slice(&out.stdout).context("the Ray driver's answer is not JSON")?;
        Ok((ans.reports, ans.workers))
    })
}
