//! A run's results as Python columns, the progress of runs in flight, and the sweep's executor
//! call.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use stride_sim::outcome::Outcome;
use stride_sim::report::{TransportReport, CATEGORIES};
use stride_sim::scenario::Loaded;
use stride_sim::sweep::SweepJob;

/// Where a run is, written by the simulation without the GIL.
#[derive(Default)]
pub struct Counters {
    started: AtomicBool,
    finished: AtomicBool,
    events: AtomicU64,
    now_ns: AtomicU64,
    completed: AtomicU64,
}

/// The progress of a run, readable from any thread while the run goes on (updated every 2^20
/// events): pass one to `Scenario.run(..., progress=p)`.
#[pyclass(frozen, module = "stride_sim._native")]
pub struct Progress {
    c: Arc<Counters>,
}

#[pymethods]
impl Progress {
    #[new]
    fn new() -> Self {
        Progress {
            c: Arc::new(Counters::default()),
        }
    }
    /// The run has started.
    #[getter]
    fn started(&self) -> bool {
        self.c.started.load(Ordering::Acquire)
    }
    /// The run has ended.
    #[getter]
    fn finished(&self) -> bool {
        self.c.finished.load(Ordering::Acquire)
    }
    /// Started and not yet ended.
    #[getter]
    fn running(&self) -> bool {
        self.started() && !self.finished()
    }
    /// Events processed so far.
    #[getter]
    fn events(&self) -> u64 {
        self.c.events.load(Ordering::Relaxed)
    }
    /// Simulated time so far, ns.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.c.now_ns.load(Ordering::Relaxed)
    }
    /// Flows completed so far.
    #[getter]
    fn completed(&self) -> u64 {
        self.c.completed.load(Ordering::Relaxed)
    }
}

impl Progress {
    /// The counters a run updates.
    pub fn counters(&self) -> Arc<Counters> {
        self.c.clone()
    }
}

/// Runs `transport`, keeping `counters` (if any) up to date; call without the GIL.
pub fn run_counted(
    loaded: &Loaded,
    transport: &str,
    counters: Option<Arc<Counters>>,
) -> PyResult<Outcome> {
    if let Some(c) = &counters {
        c.finished.store(false, Ordering::Release);
        c.started.store(true, Ordering::Release);
    }
    let r = stride_sim::outcome::run_with(
        loaded,
        transport,
        |_| Ok(()),
        |p| {
            if let Some(c) = &counters {
                c.events.store(p.events, Ordering::Relaxed);
                c.now_ns.store(p.now, Ordering::Relaxed);
                c.completed.store(p.completed, Ordering::Relaxed);
            }
        },
    );
    if let (Some(c), Ok(o)) = (&counters, &r) {
        c.events.store(o.report.events, Ordering::Relaxed);
        c.now_ns
            .store((o.report.simulated_ms * 1e6) as u64, Ordering::Relaxed);
        c.completed
            .store(o.report.completed as u64, Ordering::Relaxed);
    }
    if let Some(c) = &counters {
        c.finished.store(true, Ordering::Release);
    }
    r.map_err(|e| PyRuntimeError::new_err(format!("{e:#}")))
}

/// One transport's finished run: its report, and its measurements as columns.
#[pyclass(frozen, module = "stride_sim._native")]
pub struct Run {
    o: Outcome,
}

impl Run {
    pub fn new(o: Outcome) -> Self {
        Run { o }
    }
}

/// The size category (`I`..`IV`, the paper's Table 2) of a flow of `bytes`.
fn category(bytes: u64) -> &'static str {
    CATEGORIES
        .iter()
        .find(|(n, lo, hi)| *n != "all" && bytes >= *lo && bytes < *hi)
        .map_or("all", |c| c.0)
}

#[pymethods]
impl Run {
    /// Transport name.
    #[getter]
    fn transport(&self) -> String {
        self.o.transport.clone()
    }

    /// The transport's report as JSON (one value of the summary's `transports`).
    fn report_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.o.report).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// Per flow, as columns: `src, dst, bytes, start_ns, fct_ns, ideal_ns, slowdown,
    /// delivered_bytes, goodput_gbps, category` (`fct_ns` and `slowdown` are None for a flow
    /// that did not finish).
    fn flows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let f = &self.o.flows;
        let d = PyDict::new(py);
        d.set_item("src", f.iter().map(|r| r.flow.src).collect::<Vec<_>>())?;
        d.set_item("dst", f.iter().map(|r| r.flow.dst).collect::<Vec<_>>())?;
        d.set_item("bytes", f.iter().map(|r| r.flow.bytes).collect::<Vec<_>>())?;
        d.set_item(
            "start_ns",
            f.iter().map(|r| r.flow.start).collect::<Vec<_>>(),
        )?;
        d.set_item("fct_ns", f.iter().map(|r| r.fct_ns).collect::<Vec<_>>())?;
        d.set_item("ideal_ns", f.iter().map(|r| r.ideal_ns).collect::<Vec<_>>())?;
        let slowdown: Vec<Option<f64>> = f
            .iter()
            .map(|r| r.fct_ns.map(|x| x as f64 / r.ideal_ns as f64))
            .collect();
        d.set_item("slowdown", slowdown)?;
        d.set_item(
            "delivered_bytes",
            f.iter().map(|r| r.delivered).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "goodput_gbps",
            f.iter().map(|r| r.goodput_gbps).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "category",
            f.iter().map(|r| category(r.flow.bytes)).collect::<Vec<_>>(),
        )?;
        Ok(d)
    }

    /// Queue samples of the watched ports, as columns: `t_ns, port, from, to, bytes`.
    fn queue<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let q = &self.o.queue;
        let d = PyDict::new(py);
        d.set_item("t_ns", q.iter().map(|s| s.t).collect::<Vec<_>>())?;
        d.set_item("port", q.iter().map(|s| s.port).collect::<Vec<_>>())?;
        d.set_item("from", q.iter().map(|s| s.from).collect::<Vec<_>>())?;
        d.set_item("to", q.iter().map(|s| s.to).collect::<Vec<_>>())?;
        d.set_item("bytes", q.iter().map(|s| s.bytes).collect::<Vec<_>>())?;
        Ok(d)
    }

    /// Sender-state samples of the traced flows (`[trace]`), as columns: `t_ns, flow,
    /// cwnd_bytes, rate_gbps, alpha, rtt_ns, queueing_ns, stt_ns, branch, delivered_bytes`
    /// (None where the transport has no such state).
    fn trace<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let x = &self.o.traces;
        let d = PyDict::new(py);
        d.set_item("t_ns", x.iter().map(|s| s.t).collect::<Vec<_>>())?;
        d.set_item("flow", x.iter().map(|s| s.flow).collect::<Vec<_>>())?;
        let col = |f: fn(&stride_sim::engine::FlowTrace) -> Option<f64>| -> Vec<Option<f64>> {
            x.iter().map(|s| f(&s.trace)).collect()
        };
        d.set_item("cwnd_bytes", col(|t| t.cwnd_bytes))?;
        d.set_item("rate_gbps", col(|t| t.rate_bps.map(|r| r / 1e9)))?;
        d.set_item("alpha", col(|t| t.alpha))?;
        d.set_item("rtt_ns", col(|t| t.rtt_ns))?;
        d.set_item("queueing_ns", col(|t| t.queueing_ns))?;
        d.set_item("stt_ns", col(|t| t.stt_ns))?;
        d.set_item(
            "branch",
            x.iter().map(|s| s.trace.branch).collect::<Vec<_>>(),
        )?;
        d.set_item(
            "delivered_bytes",
            x.iter().map(|s| s.delivered).collect::<Vec<_>>(),
        )?;
        Ok(d)
    }

    /// Jain's index over time (`[trace]`), as columns: `t_ns, jain, flows`.
    fn jain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let j = &self.o.jain;
        let d = PyDict::new(py);
        d.set_item("t_ns", j.iter().map(|s| s.0).collect::<Vec<_>>())?;
        d.set_item("jain", j.iter().map(|s| s.1).collect::<Vec<_>>())?;
        d.set_item("flows", j.iter().map(|s| s.2).collect::<Vec<_>>())?;
        Ok(d)
    }

    /// The CSV files `stride sim run --out` writes for this transport: `flows`, `queue`,
    /// `trace` or `jain`.
    fn csv(&self, which: &str) -> PyResult<String> {
        Ok(match which {
            "flows" => self.o.flows_csv(),
            "queue" => self.o.queue_csv(),
            "trace" => self.o.trace_csv(),
            "jain" => self.o.jain_csv(),
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "no {which:?} table: flows, queue, trace or jain"
                )))
            }
        })
    }
}

/// Hands a sweep's simulations to a Python executor: `executor(bundle_dir, [(transport, sets),
/// ...])` returns `([report JSON, ...], workers)`.
pub fn call_executor(
    py: Python<'_>,
    executor: &Py<PyAny>,
    dir: &Path,
    jobs: &[SweepJob],
) -> anyhow::Result<(Vec<TransportReport>, usize)> {
    let jobs: Vec<(String, Vec<String>)> = jobs
        .iter()
        .map(|j| (j.transport.clone(), j.sets.clone()))
        .collect();
    let ret = executor.call1(py, (dir.to_string_lossy().into_owned(), jobs))?;
    let (texts, workers): (Vec<String>, usize) = ret.extract(py)?;
    let reports = texts
        .iter()
        .map(|t| serde_json::from_str(t))
        .collect::<Result<Vec<TransportReport>, _>>()?;
    Ok((reports, workers))
}
