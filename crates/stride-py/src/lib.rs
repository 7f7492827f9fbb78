//! `stride_sim._native`: the simulator (`stride-sim`) as a Python extension module. This is
//! the thin layer between Python and the simulator's library (no second implementation):
//! scenarios loaded with the same overrides as `--set`, runs and comparisons with the GIL
//! released, results as columns (lists), summaries as the JSON `stride sim compare --json`
//! prints, and sweeps with a pluggable executor (a Ray cluster). The typed API users import is
//! the pure Python package around it (`python/stride_sim`).
#![forbid(unsafe_code)]

mod results;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use results::{Progress, Run};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use stride_sim::scenario::{Loaded, Scenario as SimScenario, ScenarioError as SimError};

pyo3::create_exception!(
    _native,
    ScenarioError,
    PyValueError,
    "A scenario or an override the simulator refuses; `field` names the bad field when the message does."
);

/// The field an error message names (``field `tcp.mss`: ...``, ``unknown field `x` ...``).
fn field_of(msg: &str) -> Option<&str> {
    let i = msg.find("field `")? + "field `".len();
    let n = msg[i..].find('`')?;
    Some(&msg[i..i + n])
}

/// A Python `ScenarioError` with its `field` attribute.
fn scenario_err(py: Python<'_>, msg: &str) -> PyErr {
    let e = ScenarioError::new_err(msg.to_string());
    let _ = e.value(py).setattr("field", field_of(msg));
    e
}

/// A loaded, validated scenario and what it was loaded from (to apply further overrides).
#[pyclass(frozen, module = "stride_sim._native")]
pub struct Scenario {
    table: toml::Table,
    dir: PathBuf,
    what: String,
    sets: Vec<String>,
    path: Option<PathBuf>,
    loaded: Arc<Loaded>,
}

impl Scenario {
    fn make(
        py: Python<'_>,
        table: toml::Table,
        dir: PathBuf,
        what: String,
        sets: Vec<String>,
        path: Option<PathBuf>,
    ) -> PyResult<Self> {
        let loaded = SimScenario::load_table(table.clone(), &dir, &what, &sets)
            .map_err(|e: SimError| scenario_err(py, &e.0))?;
        Ok(Scenario {
            table,
            dir,
            what,
            sets,
            path,
            loaded: Arc::new(loaded),
        })
    }
}

fn check_transport(name: &str) -> PyResult<()> {
    if stride_sim::transport::find(name).is_none() {
        return Err(PyValueError::new_err(format!(
            "unknown transport {name:?}: use {}",
            stride_sim::transport::names().join(", ")
        )));
    }
    Ok(())
}

#[pymethods]
impl Scenario {
    /// Loads a scenario file with `sets` overrides (`section.field=value`).
    #[staticmethod]
    #[pyo3(signature = (path, sets=Vec::new()))]
    fn load(py: Python<'_>, path: PathBuf, sets: Vec<String>) -> PyResult<Self> {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| scenario_err(py, &format!("{}: {e}", path.display())))?;
        let table: toml::Table = toml::from_str(&text)
            .map_err(|e| scenario_err(py, &format!("{}: {e}", path.display())))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let what = path.display().to_string();
        Self::make(py, table, dir, what, sets, Some(path))
    }

    /// A scenario from TOML text; relative workload paths resolve against `base_dir`.
    #[staticmethod]
    #[pyo3(signature = (text, base_dir, sets=Vec::new()))]
    fn from_toml(
        py: Python<'_>,
        text: &str,
        base_dir: PathBuf,
        sets: Vec<String>,
    ) -> PyResult<Self> {
        let table: toml::Table =
            toml::from_str(text).map_err(|e| scenario_err(py, &format!("<toml>: {e}")))?;
        Self::make(py, table, base_dir, "<toml>".into(), sets, None)
    }

    /// A scenario from a JSON object (a Python dict, dumped); paths resolve against `base_dir`.
    #[staticmethod]
    #[pyo3(signature = (text, base_dir, sets=Vec::new()))]
    fn from_json(
        py: Python<'_>,
        text: &str,
        base_dir: PathBuf,
        sets: Vec<String>,
    ) -> PyResult<Self> {
        let table: toml::Table =
            serde_json::from_str(text).map_err(|e| scenario_err(py, &format!("<dict>: {e}")))?;
        Self::make(py, table, base_dir, "<dict>".into(), sets, None)
    }

    /// The same scenario with more overrides, applied after the ones it has.
    fn with_sets(&self, py: Python<'_>, sets: Vec<String>) -> PyResult<Self> {
        let mut all = self.sets.clone();
        all.extend(sets);
        let (t, d, w, p) = (
            self.table.clone(),
            self.dir.clone(),
            self.what.clone(),
            self.path.clone(),
        );
        Self::make(py, t, d, w, all, p)
    }

    #[getter]
    fn name(&self) -> String {
        self.loaded.sc.name.clone()
    }
    #[getter]
    fn seed(&self) -> u64 {
        self.loaded.sc.seed
    }
    #[getter]
    fn transports(&self) -> Vec<String> {
        self.loaded.sc.runs()
    }
    #[getter]
    fn hosts(&self) -> u32 {
        self.loaded.sc.hosts()
    }
    #[getter]
    fn flow_count(&self) -> usize {
        self.loaded.flows.len()
    }
    #[getter]
    fn sets(&self) -> Vec<String> {
        self.sets.clone()
    }
    #[getter]
    fn path(&self) -> Option<String> {
        self.path.as_ref().map(|p| p.to_string_lossy().into_owned())
    }
    #[getter]
    fn base_dir(&self) -> String {
        self.dir.to_string_lossy().into_owned()
    }
    /// Deprecation notes of the keys the scenario or its overrides used.
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.loaded.deprecations.clone()
    }

    /// The scenario as TOML text, overrides applied.
    fn to_toml(&self, py: Python<'_>) -> PyResult<String> {
        let t = self.applied(py)?;
        toml::to_string(&t).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The scenario as JSON text, overrides applied.
    fn to_json(&self, py: Python<'_>) -> PyResult<String> {
        let t = self.applied(py)?;
        serde_json::to_string(&t).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The files the scenario reads besides itself, as `(key, path)`.
    fn files(&self) -> Vec<(String, String)> {
        self.loaded
            .sc
            .files(&self.dir)
            .into_iter()
            .map(|(k, p)| (k.to_string(), p.to_string_lossy().into_owned()))
            .collect()
    }

    /// Runs one transport to the scenario's end, with the GIL released.
    #[pyo3(signature = (transport, progress=None))]
    fn run(&self, py: Python<'_>, transport: &str, progress: Option<&Progress>) -> PyResult<Run> {
        self.check(transport)?;
        let loaded = self.loaded.clone();
        let counters = progress.map(Progress::counters);
        let o = py.detach(move || results::run_counted(&loaded, transport, counters))?;
        Ok(Run::new(o))
    }

    /// Runs each transport on identical flows, in parallel threads, with the GIL released;
    /// returns the runs and the summary as JSON (that of `stride sim compare --json`).
    fn compare(&self, py: Python<'_>, transports: Vec<String>) -> PyResult<(Vec<Run>, String)> {
        for t in &transports {
            self.check(t)?;
        }
        let loaded = self.loaded.clone();
        let (outcomes, summary) = py
            .detach(move || -> anyhow::Result<_> {
                let t0 = std::time::Instant::now();
                let o = stride_sim::outcome::compare(&loaded, &transports)?;
                let s = stride_sim::outcome::summary(&loaded, &o, t0.elapsed().as_secs_f64())?;
                Ok((o, serde_json::to_string(&s)?))
            })
            .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))?;
        Ok((outcomes.into_iter().map(Run::new).collect(), summary))
    }

    fn __repr__(&self) -> String {
        let l = &self.loaded;
        format!(
            "Scenario({:?}, {} hosts, {} flows, seed {}{})",
            l.sc.name,
            l.sc.hosts(),
            l.flows.len(),
            l.sc.seed,
            if self.sets.is_empty() {
                String::new()
            } else {
                format!(", sets {:?}", self.sets)
            }
        )
    }
}

impl Scenario {
    /// A transport name this scenario can run: a registered one, or any for a mixed scenario
    /// (its `[group.NAME]` sections name the transports; the run is named after them).
    fn check(&self, transport: &str) -> PyResult<()> {
        if self.loaded.sc.is_mixed() {
            return Ok(());
        }
        check_transport(transport)
    }

    /// The table with the overrides applied (as the simulator read it).
    fn applied(&self, py: Python<'_>) -> PyResult<toml::Table> {
        let mut t = self.table.clone();
        for s in &self.sets {
            stride_units::overrides::apply_set(&mut t, s).map_err(|e| scenario_err(py, &e))?;
        }
        Ok(t)
    }
}

/// Every transport name the simulator knows.
#[pyfunction]
fn transports() -> Vec<&'static str> {
    stride_sim::transport::names()
}

/// One simulation of a sweep on a worker: the scenario file with `sets`, `transport`'s report
/// as JSON (the GIL released).
#[pyfunction]
fn simulate_report(
    py: Python<'_>,
    path: PathBuf,
    sets: Vec<String>,
    transport: &str,
) -> PyResult<String> {
    check_transport(transport)?;
    let loaded = SimScenario::load_with(&path, &sets).map_err(|e| scenario_err(py, &e.0))?;
    py.detach(move || -> anyhow::Result<String> {
        let r = stride_sim::sweep::simulate(&loaded, transport)?;
        Ok(serde_json::to_string(&r)?)
    })
    .map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))
}

/// A sweep (`stride sim sweep`): on this machine's threads (GIL released), or, with
/// `executor`, by calling `executor(bundle_dir, jobs)` with the sweep's simulations as
/// `(transport, sets)` pairs to run on `bundle_dir/scenario.toml` (the scenario and its files
/// copied there: see `stride_sim::sweep::bundle`); it returns one report (JSON text) per job,
/// in order, and the number of workers. Returns `(result JSON, CSV, table text, simulations,
/// workers)`.
#[pyfunction]
#[pyo3(signature = (scenario, vary, transport, baseline=None, sets=Vec::new(), jobs=None, executor=None, bundle_dir=None))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    py: Python<'_>,
    scenario: PathBuf,
    vary: Vec<String>,
    transport: String,
    baseline: Option<String>,
    sets: Vec<String>,
    jobs: Option<usize>,
    executor: Option<Py<PyAny>>,
    bundle_dir: Option<PathBuf>,
) -> PyResult<(String, String, String, usize, usize)> {
    check_transport(&transport)?;
    if let Some(b) = &baseline {
        check_transport(b)?;
    }
    let spec = stride_sim::sweep::SweepSpec {
        scenario,
        vary,
        transport,
        baseline,
        sets,
        jobs,
    };
    let out = match executor {
        None => py.detach(|| stride_sim::sweep::run(&spec)),
        Some(exec) => {
            let dir =
                bundle_dir.ok_or_else(|| PyValueError::new_err("executor needs bundle_dir"))?;
            stride_sim::sweep::run_with(&spec, |jobs, loaded| {
                let shipped = stride_sim::sweep::bundle(&spec.scenario, jobs, loaded, &dir)?;
                results::call_executor(py, &exec, &dir, &shipped)
            })
        }
    }
    .map_err(|e| match e.downcast::<PyErr>() {
        Ok(pe) => pe,
        Err(e) => {
            let msg = format!("{e:#}");
            if field_of(&msg).is_some() {
                scenario_err(py, &msg)
            } else {
                PyRuntimeError::new_err(msg)
            }
        }
    })?;
    Ok((
        serde_json::to_string(&out.result).map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
        stride_sim::sweep::to_csv(&out.keys, &out.rows),
        stride_sim::sweep::table(&out.keys, &out.rows, spec.baseline.as_deref()),
        out.simulations,
        out.workers,
    ))
}

/// The summary keys that measure the machine, not the simulation.
#[pyfunction]
fn wall_clock_keys<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, stride_sim::outcome::WALL_CLOCK_KEYS)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Scenario>()?;
    m.add_class::<Run>()?;
    m.add_class::<Progress>()?;
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add_function(wrap_pyfunction!(transports, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_report, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(wall_clock_keys, m)?)?;
    Ok(())
}
