//! The sections of a scenario file other than the switch features (`crate::switchcfg`).

use serde::Deserialize;

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
    /// The queue discipline of every switch port, by its name in `crate::qdisc::REGISTRY`
    /// (absent: the one the settings imply, see `crate::qdisc::choose`).
    pub discipline: Option<String>,
}

impl Default for QueueCfg {
    fn default() -> Self {
        QueueCfg {
            buffer_packets: 100,
            ecn_k_packets: 65,
            red: None,
            mtu_bytes: 1538,
            shared_buffer_packets: None,
            discipline: None,
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

/// `[group.NAME]`: flows that run one transport, in a scenario whose groups share the network
/// in one simulation (a mixed run). A flow's source and destination hosts run its group's
/// transport; a host runs one transport.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct GroupCfg {
    /// The transport, by its name in the registry (`crate::transport`).
    pub transport: String,
    /// (source host, destination host) of the group's flows.
    pub pairs: Vec<(u32, u32)>,
    /// Flows per pair.
    #[serde(default = "one_flow")]
    pub flows: u32,
    /// Bytes per flow (absent: long-lived, [`LONG_LIVED_BYTES`]).
    pub bytes: Option<u64>,
    /// When the flows start, ns (the scenario writes a duration).
    #[serde(default)]
    pub start: u64,
    /// When the flows' applications leave, ns (absent: never): their senders stop sending.
    pub stop: Option<u64>,
}

/// The size of a long-lived flow: one that no simulated run finishes (36 years at 10 Gbit/s).
pub const LONG_LIVED_BYTES: u64 = 1 << 60;

fn one_flow() -> u32 {
    1
}

/// `[coexist]`: how a mixed run is measured (every field optional).
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct CoexistCfg {
    /// Throughput sample interval, ns (absent: a twentieth of `limit`).
    pub every: Option<u64>,
    /// Period of the bottleneck queue samples, ns (absent: 10 µs, or a millionth of `limit`
    /// if longer).
    pub queue_every: Option<u64>,
    /// Time left out at the start of each phase before its means are taken, ns (absent: a
    /// fifth of the phase).
    pub settle: Option<u64>,
    /// The switch whose output port is the bottleneck (absent on a dumbbell: `left`).
    pub switch: Option<String>,
    /// That switch's output port, 0-based (absent on a dumbbell: the one to `right`).
    pub port: Option<u32>,
}
