//! Scenario files (TOML): topology, queues, workload, transports and their parameters, seed.
//! Unknown fields are errors; every semantic error names its field.

use crate::engine::{Flow, HostStack, LossModel, Sim};
use crate::net::{LinkSpec, QueueSpec, Topology};
use crate::workload::{incast, permutation, poisson, Cdf};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use stride_proto::cc::{rate_from_gbps, CcConfig, StrideParams};
use stride_proto::EchoPolicy;

/// A whole scenario file.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Name used in reports.
    pub name: String,
    /// Seed of the workload and of every random choice.
    #[serde(default = "one")]
    pub seed: u64,
    /// Stop after this much simulated time even if flows are unfinished, ms.
    #[serde(default = "default_limit")]
    pub limit_ms: f64,
    /// Transports `stride sim run` simulates (each on identical flows).
    #[serde(default = "default_transports")]
    pub transports: Vec<String>,
    /// The network.
    pub topology: TopologySpec,
    /// Switch queues.
    #[serde(default)]
    pub queue: QueueCfg,
    /// Traffic.
    pub workload: WorkloadSpec,
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
    /// Where ECN step marking happens (see `switchcfg`).
    pub ecn: Option<crate::switchcfg::EcnCfg>,
    /// RED-style ECN in bytes.
    pub red: Option<crate::switchcfg::RedCfg>,
    /// QCN congestion points.
    pub qcn: Option<crate::switchcfg::QcnCfg>,
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
}

/// One `[[rate_change]]` entry: at `at_ms`, port `port` of switch `switch` (its output ports
/// in the order `[watch]` lists them, 0-based) serves at `gbps`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RateChangeCfg {
    /// When, ms of simulated time.
    pub at_ms: f64,
    /// Switch name (`left`, `leaf0`, `edge0.0`, ...).
    pub switch: String,
    /// Output port of that switch, 0-based.
    pub port: u32,
    /// The new link rate, Gbit/s.
    pub gbps: f64,
}

/// `[trace]`: flows whose sender state (cwnd / rate / DCTCP alpha / RTT and queueing delay) is
/// sampled, and the period; Jain's index over time is sampled with it.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct TraceCfg {
    /// Flow indices (0-based, in workload order).
    #[serde(default)]
    pub flows: Vec<u32>,
    /// Every flow sourced at these hosts.
    #[serde(default)]
    pub hosts: Vec<u32>,
    /// Sampling period, ns.
    pub every_ns: u64,
}

/// Random loss on links, counted apart from queue drops (`link_losses`).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct LossCfg {
    /// `bernoulli` or `gilbert_elliott`.
    pub model: String,
    /// bernoulli: loss probability per packet.
    pub p: Option<f64>,
    /// gilbert_elliott: P(good -> bad) per packet.
    pub p_good_bad: Option<f64>,
    /// gilbert_elliott: P(bad -> good) per packet.
    pub p_bad_good: Option<f64>,
    /// gilbert_elliott: loss probability in the good state (default 0).
    pub loss_good: Option<f64>,
    /// gilbert_elliott: loss probability in the bad state (default 1).
    pub loss_bad: Option<f64>,
    /// Lossy links: every output link of these switches. With neither this nor `hosts`,
    /// every link of the fabric (host NICs included).
    #[serde(default)]
    pub switches: Vec<String>,
    /// Lossy links: the NIC links of these hosts (by index).
    #[serde(default)]
    pub hosts: Vec<u32>,
}

fn one() -> u64 {
    1
}
fn default_limit() -> f64 {
    10_000.0
}
fn default_transports() -> Vec<String> {
    vec!["stride".into(), "dctcp".into(), "vegas".into()]
}

/// Kinds of topology.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TopologyKind {
    /// `senders` hosts, one bottleneck link, `receivers` hosts.
    Dumbbell,
    /// `leaves` x `hosts_per_leaf` hosts, every leaf linked to every spine.
    LeafSpine,
    /// FatTree(k) with `hosts_per_edge` hosts per edge switch.
    FatTree,
}

/// Topology section (which fields are required depends on `kind`).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct TopologySpec {
    /// dumbbell, leaf_spine or fat_tree.
    pub kind: TopologyKind,
    /// Host NIC rate, Gbit/s.
    pub host_gbps: f64,
    /// Switch-to-switch rate (leaf_spine, fat_tree), Gbit/s.
    pub fabric_gbps: Option<f64>,
    /// Bottleneck rate (dumbbell), Gbit/s.
    pub bottleneck_gbps: Option<f64>,
    /// Propagation delay of every link, ns.
    pub link_delay_ns: u64,
    /// dumbbell: sending hosts.
    pub senders: Option<u32>,
    /// dumbbell: receiving hosts.
    pub receivers: Option<u32>,
    /// leaf_spine: leaf switches.
    pub leaves: Option<u32>,
    /// leaf_spine: spine switches.
    pub spines: Option<u32>,
    /// leaf_spine: hosts per leaf.
    pub hosts_per_leaf: Option<u32>,
    /// fat_tree: switch radix (even).
    pub k: Option<u32>,
    /// fat_tree: hosts per edge switch (k/2 is the canonical, non-oversubscribed tree).
    pub hosts_per_edge: Option<u32>,
}

/// Switch queue section.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct QueueCfg {
    /// Buffer per port, packets of `mtu_bytes`.
    pub buffer_packets: u64,
    /// ECN marking threshold K, packets (0 = off).
    pub ecn_k_packets: u64,
    /// RED marking instead of a step: [kmin packets, kmax packets, pmax].
    pub red: Option<(u64, u64, f64)>,
    /// Bytes of a full packet on the wire (1538 for 1500-byte IP packets).
    pub mtu_bytes: u64,
    /// Shared buffer per switch, packets of `mtu_bytes` (absent = no shared limit).
    pub shared_buffer_packets: Option<u64>,
}

impl Default for QueueCfg {
    fn default() -> Self {
        QueueCfg {
            buffer_packets: 100,
            ecn_k_packets: 65,
            red: None,
            mtu_bytes: 1538,
            shared_buffer_packets: None,
        }
    }
}

/// Kinds of workload.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    /// Poisson arrivals over random host pairs, sizes from an empirical CDF (`cdf`, `load`, `flows`).
    Poisson,
    /// Every host sends one flow of `bytes` to a distinct host.
    Permutation,
    /// `senders` hosts send `bytes` each to host 0 at once.
    Incast,
}

/// Workload section (which fields are required depends on `kind`).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// poisson, permutation or incast.
    pub kind: WorkloadKind,
    /// poisson: CDF file, relative to the scenario file.
    pub cdf: Option<String>,
    /// poisson: offered load, fraction of total host bandwidth, in (0, 1].
    pub load: Option<f64>,
    /// poisson: number of flows.
    pub flows: Option<usize>,
    /// permutation, incast: bytes per flow; poisson: a fixed flow size instead of `cdf`.
    pub bytes: Option<u64>,
    /// incast: senders.
    pub senders: Option<u32>,
}

/// STRIDE section: any field left out keeps the core's default for the host line rate. Besides
/// these connection fields it takes every parameter of STRIDE's controller by its name
/// (`t_high = "80us"`, `beta = "156mbit"`, `nack_gate = false`: `StrideParams::PARAMS`),
/// read in the unit grammar and validated by the controller's declaration.
#[derive(Debug, Deserialize, Clone, Default)]
pub struct StrideCfg {
    /// Start rate as a fraction of the line rate.
    pub start_fraction: Option<f64>,
    /// STT echo: "last" or "min".
    pub echo: Option<String>,
    /// ACK interval, bytes.
    pub ack_interval: Option<u32>,
    /// Delayed-ACK timeout: an ACK at the latest this long after the first unacknowledged
    /// byte (the core's `delayed_ack_ns`).
    pub delayed_ack_ns: Option<u64>,
    /// Minimum retransmission timeout, µs.
    pub min_rto_us: Option<u64>,
    /// Payload per packet, bytes.
    pub max_payload: Option<u16>,
    /// Send buffer per connection, bytes (unacknowledged + unsent data the sender holds).
    pub send_buffer: Option<usize>,
    /// Loss recovery of `stride`: `selective` (default) or `go-back-n`
    /// (`stride-paper` and the RDMA baselines always go back N).
    pub recovery: Option<String>,
    /// Mechanism switch (spec §8.6): an RTT sample from the handshake.
    pub handshake_rtt: Option<bool>,
    /// Mechanism (spec §8.6): receive share budget in bytes (0: off).
    pub rx_share: Option<u32>,
    /// ACKs ride on DATA leaving at the same moment (spec §6.4 `ack_ride`; 0: off, the
    /// default; the UDP host uses 1 ms).
    pub ack_ride_ns: Option<u64>,
    /// Send batch in bytes (spec §9 `send_batch_bytes`; 0: off, the default).
    pub send_batch: Option<u32>,
    /// The controller's parameters by name (every other key of the section).
    #[serde(flatten)]
    pub controller: std::collections::BTreeMap<String, toml::Value>,
}

/// TCP section (every field optional).
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields, default)]
pub struct TcpCfg {
    /// Payload per segment, bytes.
    pub mss: u32,
    /// Initial window, segments.
    pub init_cwnd: u32,
    /// Minimum retransmission timeout, µs.
    pub min_rto_us: u64,
    /// DCTCP gain g.
    pub dctcp_g: f64,
    /// DCTCP alpha of a new flow, in [0, 1].
    pub dctcp_alpha_init: f64,
    /// Vegas alpha, packets.
    pub vegas_alpha: f64,
    /// Vegas beta, packets.
    pub vegas_beta: f64,
    /// AIMD (seed 003): window increase per acknowledged window, segments.
    pub aimd_step: f64,
    /// AIMD (seed 003): the fixed retransmission timeout, µs.
    pub aimd_rto_us: u64,
    /// Delayed ACKs at TCP receivers (Linux-like; see `tcp::DelAck`).
    pub delayed_ack: bool,
    /// Delayed-ACK timer, µs.
    pub delack_timeout_us: u64,
    /// Segments ACKed at once at the start of a connection (Linux's quick-ACK mode).
    pub delack_quickack: u32,
}

impl Default for TcpCfg {
    fn default() -> Self {
        TcpCfg {
            mss: 1460,
            init_cwnd: 10,
            min_rto_us: 1000,
            dctcp_g: 1.0 / 16.0,
            // Linux's default (dctcp_alpha_on_init = 1024/1024) and ns-3's: a new flow reacts
            // to its first marks with a full halving until alpha has learnt the path.
            dctcp_alpha_init: 1.0,
            vegas_alpha: 2.0,
            vegas_beta: 4.0,
            aimd_step: 1.0,
            // The TCP models' minimum RTO; seed 003 tunes it (0.2 ms in its loopback Fig. 3).
            aimd_rto_us: 1000,
            delayed_ack: true,
            // Linux's delayed-ACK minimum (40 ms) is a fifth of its minimum RTO (200 ms); the
            // same fraction of the models' 1 ms minimum RTO.
            delack_timeout_us: 200,
            // Linux's TCP_MAX_QUICKACKS.
            delack_quickack: 16,
        }
    }
}

/// Queue sampling.
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct WatchCfg {
    /// Switch names (`left`, `edge0.0`, `core3`, ...) whose every output port is sampled.
    pub switches: Vec<String>,
    /// Sampling period, ns.
    pub every_ns: u64,
}

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

/// A TOML value as the text a controller parameter is read from.
fn toml_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        v => v.to_string(),
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
    /// Parses and validates a scenario file; CDF paths resolve against its directory.
    pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
        Self::load_with(path, &[])
    }

    /// Like [`Scenario::load`], with overrides `dotted.key=value` applied before validation
    /// (`stride.t_high_ns=20000`, `workload.load=0.7`, `topology.k=4`). The value is read as a
    /// TOML value (number, boolean, `"string"`, array) and otherwise as a bare string; a key
    /// the file format does not know is an error naming it.
    pub fn load_with(path: &Path, sets: &[String]) -> Result<Loaded, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        let mut table: toml::Table =
            toml::from_str(&text).map_err(|e| ScenarioError(format!("{}: {e}", path.display())))?;
        for s in sets {
            stride_units::overrides::apply_set(&mut table, s).map_err(ScenarioError)?;
        }
        let deprecations = crate::units::normalize(&mut table)?;
        let sc: Scenario = toml::Value::Table(table).try_into().map_err(|e| {
            let what = if sets.is_empty() {
                path.display().to_string()
            } else {
                format!("{} with {}", path.display(), sets.join(" "))
            };
            ScenarioError(format!("{what}: {e}"))
        })?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        sc.validate()
            .map_err(|e| ScenarioError(crate::units::user_names(&e.0)))?;
        let flows = sc.flows(&dir)?;
        Ok(Loaded {
            sc,
            flows,
            deprecations,
        })
    }

    fn validate(&self) -> Result<(), ScenarioError> {
        let pos = |f: &str, v: f64| {
            if v > 0.0 && v.is_finite() {
                Ok(())
            } else {
                Err(bad(f, "must be positive"))
            }
        };
        let t = &self.topology;
        pos("topology.host_gbps", t.host_gbps)?;
        match t.kind {
            TopologyKind::Dumbbell => {
                let s = need(t.senders, "topology.senders", "dumbbell")?;
                let r = need(t.receivers, "topology.receivers", "dumbbell")?;
                if s == 0 || r == 0 {
                    return Err(bad(
                        "topology.senders",
                        "senders and receivers must be at least 1",
                    ));
                }
                pos(
                    "topology.bottleneck_gbps",
                    need(t.bottleneck_gbps, "topology.bottleneck_gbps", "dumbbell")?,
                )?;
            }
            TopologyKind::LeafSpine => {
                if need(t.leaves, "topology.leaves", "leaf_spine")? < 2 {
                    return Err(bad("topology.leaves", "must be at least 2"));
                }
                if need(t.spines, "topology.spines", "leaf_spine")? == 0 {
                    return Err(bad("topology.spines", "must be at least 1"));
                }
                if need(t.hosts_per_leaf, "topology.hosts_per_leaf", "leaf_spine")? == 0 {
                    return Err(bad("topology.hosts_per_leaf", "must be at least 1"));
                }
                pos(
                    "topology.fabric_gbps",
                    need(t.fabric_gbps, "topology.fabric_gbps", "leaf_spine")?,
                )?;
            }
            TopologyKind::FatTree => {
                let k = need(t.k, "topology.k", "fat_tree")?;
                if k < 2 || k % 2 != 0 {
                    return Err(bad("topology.k", "must be even and at least 2"));
                }
                if need(t.hosts_per_edge, "topology.hosts_per_edge", "fat_tree")? == 0 {
                    return Err(bad("topology.hosts_per_edge", "must be at least 1"));
                }
                pos(
                    "topology.fabric_gbps",
                    need(t.fabric_gbps, "topology.fabric_gbps", "fat_tree")?,
                )?;
            }
        }
        if self.queue.buffer_packets == 0 {
            return Err(bad("queue.buffer_packets", "must be at least 1"));
        }
        if self.queue.shared_buffer_packets == Some(0) {
            return Err(bad("queue.shared_buffer_packets", "must be at least 1"));
        }
        if let Some((lo, hi, p)) = self.queue.red {
            if lo >= hi || !(0.0..=1.0).contains(&p) {
                return Err(bad("queue.red", "needs kmin < kmax and 0 <= pmax <= 1"));
            }
        }
        self.validate_switch()?;
        let w = &self.workload;
        match w.kind {
            WorkloadKind::Poisson => {
                match (&w.cdf, w.bytes) {
                    (Some(_), Some(_)) => {
                        return Err(bad(
                            "workload.bytes",
                            "give either `cdf` (sizes from a distribution) or `bytes` (one size)",
                        ))
                    }
                    (None, None) => {
                        return Err(bad(
                            "workload.cdf",
                            "required when kind = \"poisson\" (or `bytes` for a fixed size)",
                        ))
                    }
                    (None, Some(0)) => return Err(bad("workload.bytes", "must be at least 1")),
                    _ => {}
                }
                let load = need(w.load, "workload.load", "poisson")?;
                if !(load > 0.0 && load <= 1.0) {
                    return Err(bad("workload.load", "must be in (0, 1]"));
                }
                if need(w.flows, "workload.flows", "poisson")? == 0 {
                    return Err(bad("workload.flows", "must be at least 1"));
                }
            }
            WorkloadKind::Permutation => {
                need(w.bytes, "workload.bytes", "permutation")?;
            }
            WorkloadKind::Incast => {
                need(w.bytes, "workload.bytes", "incast")?;
                let senders = need(w.senders, "workload.senders", "incast")?;
                if senders == 0 || senders + 1 > self.hosts() {
                    return Err(bad(
                        "workload.senders",
                        format!(
                            "needs 1..={} for {} hosts",
                            self.hosts().saturating_sub(1),
                            self.hosts()
                        ),
                    ));
                }
            }
        }
        for t in &self.transports {
            let Some(tr) = crate::transport::find(t) else {
                return Err(bad(
                    "transports",
                    format!(
                        "unknown transport {t:?} ({})",
                        crate::transport::names().join(", ")
                    ),
                ));
            };
            tr.build(self, 0)?;
        }
        self.loss_model()?;
        for (i, r) in self.rate_change.iter().enumerate() {
            if !(r.at_ms.is_finite() && r.at_ms >= 0.0) {
                return Err(bad(
                    &format!("rate_change[{i}].at_ms"),
                    "must be a time >= 0",
                ));
            }
            if !(r.gbps.is_finite() && r.gbps * 1e9 >= 1.0) {
                return Err(bad(&format!("rate_change[{i}].gbps"), "must be > 0"));
            }
        }
        if !self.rate_change.is_empty() {
            self.rate_schedule(&self.topology())?;
        }
        if self.trace.as_ref().is_some_and(|t| t.every_ns == 0) {
            return Err(bad("trace.every", "must be at least 1ns"));
        }
        let line = rate_from_gbps(self.host_bps() as f64 / 1e9);
        for name in self.cc.keys() {
            self.controller(name, line)?;
        }
        self.stride_config().map(|_| ())
    }

    /// The registry's controller `name` at line rate `line` with its `[cc.NAME]` parameters
    /// applied; an error names the bad field (`cc.swift.base_target`).
    pub fn controller(&self, name: &str, line: u32) -> Result<CcConfig, ScenarioError> {
        if name == "stride" || name == "stride-paper" {
            return Err(bad(
                &format!("cc.{name}"),
                "STRIDE's parameters are set in [stride]",
            ));
        }
        let mut c = CcConfig::by_name(name, line).map_err(|e| bad(&format!("cc.{name}"), e))?;
        self.apply_cc(name, &mut c)?;
        Ok(c)
    }

    /// Sets `[stride]`'s controller parameters (the section's keys other than its connection
    /// fields) on `c`, a controller with STRIDE's parameters (not validated: the caller does, after its
    /// own settings); an error names the bad field.
    pub fn apply_stride_params(&self, c: &mut CcConfig) -> Result<(), ScenarioError> {
        for (key, value) in &self.stride.controller {
            let known = StrideParams::PARAMS.iter().any(|p| p.name == key);
            if !known {
                return Err(bad(
                    &format!("stride.{key}"),
                    format!(
                        "unknown key; STRIDE's controller has: {}",
                        StrideParams::PARAMS
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            c.set(key, &toml_text(value))
                .map_err(|e| bad(&format!("stride.{key}"), e))?;
        }
        Ok(())
    }

    /// Sets the `[cc.NAME]` parameters on `c` (a controller `name` whose defaults the caller
    /// chose, e.g. from the fabric) and validates it; an error names the bad field.
    pub fn apply_cc(&self, name: &str, c: &mut CcConfig) -> Result<(), ScenarioError> {
        for (key, value) in self.cc.get(name).into_iter().flatten() {
            c.set(key, &toml_text(value))
                .map_err(|e| bad(&format!("cc.{name}.{key}"), e))?;
        }
        c.validate()
            .map_err(|(field, why)| bad(&format!("cc.{name}.{field}"), why))
    }

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

    /// Builds the topology (after validation).
    pub fn topology(&self) -> Topology {
        let mtu = self.queue.mtu_bytes;
        let q = QueueSpec {
            cap_bytes: self.queue.buffer_packets * mtu,
            ecn_k_bytes: self.queue.ecn_k_packets * mtu,
            red: self.queue.red.map(|(a, b, p)| (a * mtu, b * mtu, p)),
        };
        let mut topo = self.topology_without_shared_buffer(q);
        topo.shared_cap_bytes = self.queue.shared_buffer_packets.unwrap_or(0) * mtu;
        self.apply_switch(&mut topo);
        topo
    }

    fn topology_without_shared_buffer(&self, q: QueueSpec) -> Topology {
        let t = &self.topology;
        let g = |v: Option<u32>| v.unwrap_or(0);
        let l = |gb: f64| LinkSpec {
            rate_bps: (gb * 1e9) as u64,
            delay_ns: t.link_delay_ns,
        };
        let host = l(t.host_gbps);
        let fabric = l(t.fabric_gbps.unwrap_or(t.host_gbps));
        match t.kind {
            TopologyKind::Dumbbell => Topology::dumbbell(
                g(t.senders),
                g(t.receivers),
                host,
                l(t.bottleneck_gbps.unwrap_or(t.host_gbps)),
                q,
            ),
            TopologyKind::LeafSpine => Topology::leaf_spine(
                g(t.leaves),
                g(t.spines),
                g(t.hosts_per_leaf),
                host,
                fabric,
                q,
            ),
            TopologyKind::FatTree => {
                Topology::fat_tree(g(t.k), g(t.hosts_per_edge), host, fabric, q)
            }
        }
    }

    fn flows(&self, dir: &Path) -> Result<Vec<Flow>, ScenarioError> {
        let w = &self.workload;
        Ok(match w.kind {
            WorkloadKind::Poisson => {
                let c = match (&w.cdf, w.bytes) {
                    (None, Some(b)) => Cdf::parse(&format!("{b} 0\n{b} 100\n"))
                        .map_err(|e| bad("workload.bytes", e))?,
                    _ => {
                        let p: PathBuf = dir.join(w.cdf.as_deref().unwrap_or_default());
                        let text = std::fs::read_to_string(&p)
                            .map_err(|e| bad("workload.cdf", format!("{}: {e}", p.display())))?;
                        Cdf::parse(&text)
                            .map_err(|e| bad("workload.cdf", format!("{}: {e}", p.display())))?
                    }
                };
                poisson(
                    &c,
                    self.hosts(),
                    self.host_bps(),
                    w.load.unwrap_or(0.5),
                    w.flows.unwrap_or(0),
                    self.seed,
                )
            }
            WorkloadKind::Permutation => permutation(self.hosts(), w.bytes.unwrap_or(0), self.seed),
            WorkloadKind::Incast => incast(w.senders.unwrap_or(0), w.bytes.unwrap_or(0)),
        })
    }

    /// The STRIDE endpoint configuration (core defaults for the host rate, overridden by the file).
    pub fn stride_config(&self) -> Result<stride_proto::Config, ScenarioError> {
        let gbps = self.host_bps() as f64 / 1e9;
        let mut cfg = stride_proto::Config::for_line_rate_gbps(gbps);
        let line = rate_from_gbps(gbps);
        let mut cc = CcConfig::stride(StrideParams::for_line_rate(line));
        self.apply_stride_params(&mut cc)?;
        let mut p = *cc.params_ref::<StrideParams>().expect("stride");
        let s = &self.stride;
        if let Some(f) = s.start_fraction {
            if !(f > 0.0 && f <= 1.0) {
                return Err(bad("stride.start_fraction", "must be in (0, 1]"));
            }
            p.rate_init = ((f64::from(line) * f) as u32).max(p.rate_min);
        }
        if let Err((f, why)) = p.validate() {
            return Err(bad(&format!("stride.{f}"), why));
        }
        cfg.cc = CcConfig::stride(p);
        if let Some(e) = &s.echo {
            cfg.echo = match e.as_str() {
                "min" => EchoPolicy::Min,
                "last" => EchoPolicy::Last,
                _ => {
                    return Err(bad(
                        "stride.echo",
                        format!("{e:?}: use \"last\" or \"min\""),
                    ))
                }
            };
        }
        if let Some(v) = s.ack_interval {
            cfg.ack_interval = v;
        }
        if let Some(v) = s.delayed_ack_ns {
            cfg.delayed_ack_ns = v;
        }
        if let Some(v) = s.min_rto_us {
            cfg.min_rto_ns = v * 1000;
        }
        if let Some(v) = s.max_payload {
            cfg.max_payload = v;
        }
        if let Some(r) = &s.recovery {
            cfg.recovery = r.parse().map_err(|e: String| bad("stride.recovery", e))?;
        }
        if let Some(v) = s.handshake_rtt {
            cfg.handshake_rtt = v;
        }
        if let Some(v) = s.rx_share {
            cfg.rx_share = v;
        }
        if let Some(v) = s.ack_ride_ns {
            cfg.ack_ride_ns = v;
        }
        if let Some(v) = s.send_batch {
            cfg.send_batch_bytes = v;
        }
        // The sender holds real bytes; the core's 4 MiB default times a thousand concurrent
        // flows is gigabytes. 400 µs at the line rate covers the fabric RTT with full queues
        // (`stride sim sweep scenarios/quick.toml --vary stride.send_buffer=...`: no change
        // in any FCT from 256 KiB to 4 MiB at 10 Gbit/s).
        cfg.send_buffer = s
            .send_buffer
            .unwrap_or(((gbps * 50_000.0) as usize).max(256 << 10));
        // a simulated flow never idles for long; keep linger short so tables stay small
        cfg.linger_ns = cfg.max_rto_ns.min(100_000_000);
        if let Err((f, why)) = cfg.validate() {
            return Err(bad(&format!("stride.{f}"), why));
        }
        Ok(cfg)
    }

    /// Host stacks for one transport (any name in `crate::transport::TRANSPORTS`).
    pub fn stacks(&self, transport: &str) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
        let Some(tr) = crate::transport::find(transport) else {
            return Err(bad(
                "transports",
                format!(
                    "unknown transport {transport:?} ({})",
                    crate::transport::names().join(", ")
                ),
            ));
        };
        tr.build(self, self.hosts())
    }

    /// The loss model of `[loss]` (after validation of its fields).
    pub fn loss_model(&self) -> Result<Option<LossModel>, ScenarioError> {
        let Some(l) = &self.loss else {
            return Ok(None);
        };
        let prob = |f: &str, v: Option<f64>, default: Option<f64>| {
            let v = v.or(default).ok_or_else(|| {
                bad(
                    &format!("loss.{f}"),
                    format!("required when model = {:?}", l.model),
                )
            })?;
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(bad(&format!("loss.{f}"), "must be a probability in [0, 1]"))
            }
        };
        Ok(Some(match l.model.as_str() {
            "bernoulli" => LossModel::Bernoulli {
                p: prob("p", l.p, None)?,
            },
            "gilbert_elliott" => {
                let m = LossModel::GilbertElliott {
                    p_good_bad: prob("p_good_bad", l.p_good_bad, None)?,
                    p_bad_good: prob("p_bad_good", l.p_bad_good, None)?,
                    loss_good: prob("loss_good", l.loss_good, Some(0.0))?,
                    loss_bad: prob("loss_bad", l.loss_bad, Some(1.0))?,
                };
                if let LossModel::GilbertElliott {
                    p_good_bad,
                    p_bad_good,
                    ..
                } = m
                {
                    if p_good_bad + p_bad_good == 0.0 {
                        return Err(bad(
                            "loss.p_bad_good",
                            "p_good_bad and p_bad_good cannot both be 0",
                        ));
                    }
                }
                m
            }
            other => {
                return Err(bad(
                    "loss.model",
                    format!("{other:?}: use \"bernoulli\" or \"gilbert_elliott\""),
                ))
            }
        }))
    }

    /// `[[rate_change]]` as (time ns, port index, rate bit/s).
    fn rate_schedule(&self, topo: &Topology) -> Result<Vec<(u64, usize, u64)>, ScenarioError> {
        let mut out = Vec::new();
        for (i, r) in self.rate_change.iter().enumerate() {
            let Some(si) = topo.switch_names.iter().position(|n| n == &r.switch) else {
                return Err(bad(
                    &format!("rate_change[{i}].switch"),
                    format!(
                        "no switch named {:?} ({})",
                        r.switch,
                        topo.switch_names.join(", ")
                    ),
                ));
            };
            let ports = &topo.switches[si].ports;
            let Some(&port) = ports.get(r.port as usize) else {
                return Err(bad(
                    &format!("rate_change[{i}].port"),
                    format!("switch {:?} has ports 0..{}", r.switch, ports.len()),
                ));
            };
            out.push(((r.at_ms * 1e6) as u64, port, (r.gbps * 1e9) as u64));
        }
        Ok(out)
    }

    /// A simulator for one transport on these flows, with watched ports set.
    pub fn sim(&self, transport: &str, flows: &[Flow]) -> Result<Sim, ScenarioError> {
        let topo = self.topology();
        let mut watch = Vec::new();
        for name in &self.watch.switches {
            let Some(si) = topo.switch_names.iter().position(|n| n == name) else {
                return Err(bad("watch.switches", format!("no switch named {name:?}")));
            };
            watch.extend(topo.switches[si].ports.iter().copied());
        }
        let mut lossy = Vec::new();
        if let (Some(l), Some(_)) = (&self.loss, self.loss_model()?) {
            for name in &l.switches {
                let Some(si) = topo.switch_names.iter().position(|n| n == name) else {
                    return Err(bad("loss.switches", format!("no switch named {name:?}")));
                };
                lossy.extend(topo.switches[si].ports.iter().copied());
            }
            for &h in &l.hosts {
                if h >= topo.hosts {
                    return Err(bad(
                        "loss.hosts",
                        format!("no host {h} ({} hosts)", topo.hosts),
                    ));
                }
                lossy.push(topo.host_port[h as usize]);
            }
            if l.switches.is_empty() && l.hosts.is_empty() {
                lossy.extend(0..topo.ports.len());
            }
        }
        let mut sim = Sim::new(topo, self.stacks(transport)?, flows.to_vec(), self.seed);
        if let Some(m) = self.loss_model()? {
            for p in lossy {
                sim.set_loss(p, m);
            }
        }
        for (at, port, bps) in self.rate_schedule(&sim.topo)? {
            sim.change_rate_at(at, port, bps);
        }
        sim.watch = watch;
        sim.watch_every = self.watch.every_ns;
        if let Some(t) = &self.trace {
            if t.every_ns == 0 {
                return Err(bad("trace.every", "must be at least 1ns"));
            }
            for &f in &t.flows {
                if f as usize >= flows.len() {
                    return Err(bad(
                        "trace.flows",
                        format!("no flow {f} ({} flows)", flows.len()),
                    ));
                }
            }
            for &h in &t.hosts {
                if h >= self.hosts() {
                    return Err(bad(
                        "trace.hosts",
                        format!("no host {h} ({} hosts)", self.hosts()),
                    ));
                }
            }
            let mut sel: Vec<u32> = (0..flows.len() as u32)
                .filter(|&i| t.flows.contains(&i) || t.hosts.contains(&flows[i as usize].src))
                .collect();
            sel.dedup();
            sim.trace_flows = sel;
            sim.trace_every = t.every_ns;
        }
        Ok(sim)
    }
}
