//! Scenario files (TOML): topology, queues, workload, transports and their parameters, seed.
//! Unknown fields are errors; every semantic error names its field.
//!
//! One module per concern: `sections` (the section structs), `load` (reading a file with its
//! overrides), `validate` (the checks, one function per section), `build` (the topology, the
//! flows and the simulator a scenario describes) and `hosts` (STRIDE's configuration, the
//! controllers' parameters and the host stacks of a transport).

mod build;
mod hosts;
mod load;
mod sections;
mod validate;

pub use sections::{
    CoexistCfg, GroupCfg, LossCfg, QueueCfg, RateChangeCfg, StrideCfg, TcpCfg, TopologyKind,
    TopologySpec, TraceCfg, WatchCfg, WorkloadKind, WorkloadSpec, LONG_LIVED_BYTES,
};

use crate::engine::Flow;
use serde::Deserialize;

/// The keys of a scenario file other than the queue disciplines' sections, in the order
/// error messages list them; the sections come after `KEYS[..KEYS_BEFORE_SECTIONS]`.
const KEYS: &[&str] = &[
    "name",
    "seed",
    "limit_ms",
    "transports",
    "topology",
    "queue",
    "workload",
    "stride",
    "tcp",
    "watch",
    "loss",
    "trace",
    "pfc",
    "int",
    "rate_change",
    "cc",
    "group",
    "coexist",
];
const KEYS_BEFORE_SECTIONS: usize = 12;

/// A whole scenario file. Keys it does not know are caught by `qdisc` and refused by
/// [`Scenario::load`] unless a queue discipline reads them.
#[derive(Debug, Deserialize, Clone)]
pub struct Scenario {
    /// Name used in reports.
    pub name: String,
    /// Seed of the workload and of every random choice.
    #[serde(default = "one")]
    pub seed: u64,
    /// Stop after this much simulated time even if flows are unfinished, ms.
    #[serde(default = "default_limit")]
    pub limit_ms: f64,
    /// Transports `stride sim run` simulates (each on identical flows); read it with
    /// [`Scenario::transports`] (absent: the default list). Not with `[group.NAME]`.
    pub transports: Option<Vec<String>>,
    /// The network.
    pub topology: TopologySpec,
    /// Switch queues.
    #[serde(default)]
    pub queue: QueueCfg,
    /// Traffic (required unless the scenario has `[group.NAME]` sections, then refused).
    pub workload: Option<WorkloadSpec>,
    /// STRIDE parameters.
    #[serde(default)]
    pub stride: StrideCfg,
    /// TCP model parameters.
    #[serde(default)]
    pub tcp: TcpCfg,
    /// Ports (by `switch-name:port-number-in-switch`) whose queue is sampled, and how often.
    #[serde(default)]
    pub watch: WatchCfg,
    /// Random link loss (absent: none).
    pub loss: Option<LossCfg>,
    /// Sender-state time series of chosen flows, and Jain's index over time (absent: none).
    pub trace: Option<TraceCfg>,
    /// The queue disciplines' sections (`[ecn]`, `[red]`, `[qcn]`, and any other a registered
    /// discipline reads), unread: each discipline of `crate::qdisc::REGISTRY` reads its own.
    /// Any other key left over here is refused when the file is loaded.
    #[serde(flatten)]
    pub qdisc: crate::qdisc::Sections,
    /// Priority flow control.
    pub pfc: Option<crate::switchcfg::PfcCfg>,
    /// INT stamping.
    pub int: Option<crate::switchcfg::IntCfg>,
    /// `[[rate_change]]`: switch ports whose link rate changes at given times (a hotspot).
    #[serde(default)]
    pub rate_change: Vec<RateChangeCfg>,
    /// `[cc.NAME]`: parameters of the registry's host controllers (`timely`, `dcqcn`, `swift`,
    /// `qcn`, `hpcc`, ...) by their names in `stride_proto::cc`, over the defaults at the hosts'
    /// line rate (STRIDE's own are `[stride]`).
    #[serde(default)]
    pub cc: std::collections::BTreeMap<String, toml::Table>,
    /// `[group.NAME]`: groups of flows with a transport each, run together in one simulation
    /// (a mixed run, see `crate::coexist`), in name order.
    #[serde(default)]
    pub group: std::collections::BTreeMap<String, GroupCfg>,
    /// `[coexist]`: how a mixed run is measured.
    pub coexist: Option<CoexistCfg>,
}

fn one() -> u64 {
    1
}
fn default_limit() -> f64 {
    10_000.0
}
/// The transports of a scenario without `transports`.
const DEFAULT_TRANSPORTS: [&str; 3] = ["stride", "dctcp", "vegas"];

/// A scenario error: the field and the reason.
#[derive(Debug)]
pub struct ScenarioError(pub String);

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error about one field: ``field `tcp.mss`: must be at least 1``.
    pub fn field(field: &str, why: impl std::fmt::Display) -> Self {
        bad(field, why)
    }
}

fn bad(field: &str, why: impl std::fmt::Display) -> ScenarioError {
    ScenarioError(format!("field `{field}`: {why}"))
}

fn need<T>(v: Option<T>, field: &str, kind: &str) -> Result<T, ScenarioError> {
    v.ok_or_else(|| bad(field, format!("required when kind = \"{kind}\"")))
}

/// A scenario ready to run: topology builder inputs, flows and the file's directory.
pub struct Loaded {
    /// The parsed file.
    pub sc: Scenario,
    /// Flows (identical for every transport).
    pub flows: Vec<Flow>,
    /// One note per deprecated key the file or an override used (see [`crate::units`]).
    pub deprecations: Vec<String>,
}

impl Scenario {
    /// Number of hosts of the topology (after validation).
    pub fn hosts(&self) -> u32 {
        let t = &self.topology;
        let g = |v: Option<u32>| v.unwrap_or(0);
        match t.kind {
            TopologyKind::Dumbbell => g(t.senders) + g(t.receivers),
            TopologyKind::LeafSpine => g(t.leaves) * g(t.hosts_per_leaf),
            TopologyKind::FatTree => g(t.k) * (g(t.k) / 2) * g(t.hosts_per_edge),
        }
    }

    /// Host NIC rate, bit/s.
    pub fn host_bps(&self) -> u64 {
        (self.topology.host_gbps * 1e9) as u64
    }

    /// The transports `transports` lists (absent: stride, dctcp and vegas).
    pub fn transports(&self) -> Vec<String> {
        match &self.transports {
            Some(t) => t.clone(),
            None => DEFAULT_TRANSPORTS.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// Whether the scenario is a mixed run (`[group.NAME]` sections).
    pub fn is_mixed(&self) -> bool {
        !self.group.is_empty()
    }

    /// What `stride sim run` simulates: the mixed run (one simulation, named by its groups'
    /// transports, see [`Scenario::mixed_name`]), else each of [`Scenario::transports`].
    pub fn runs(&self) -> Vec<String> {
        if self.is_mixed() {
            vec![self.mixed_name()]
        } else {
            self.transports()
        }
    }
}
