//! Testbed files (TOML), in the simulator's style: unknown fields are errors, and every
//! semantic error names its field (`field `bottleneck.rate`: ...`).

use crate::topo::Bottleneck;
use serde::Deserialize;
use std::path::Path;

mod check;

/// The paper's block-size categories (Fig. 6/7), in KiB: [lo, hi).
pub const BLOCKS_KIB: [(u64, u64); 5] =
    [(1, 10), (10, 128), (128, 256), (256, 2048), (2048, 10240)];
/// Their labels.
pub const BLOCK_LABELS: [&str; 5] = ["<10K", "10-128K", "128-256K", "256-2048K", "2048-10240K"];

/// A whole testbed file.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct TestbedFile {
    /// Name used in reports and the output directory.
    pub name: String,
    /// Seed of flow sizes, arrivals and the random background.
    #[serde(default = "one")]
    pub seed: u64,
    /// `netns` (kernel bottleneck, needs root), `relay` (userspace relay on loopback, STRIDE
    /// only) or `auto` (netns when privileged, else relay).
    #[serde(default = "auto")]
    pub mode: String,
    /// `fct` (Fig. 6/7), `ack_interval` (Fig. 5), `stt` (Fig. 8a/8b) or `coexistence`.
    pub experiment: String,
    /// Interleaved repetitions (each repeats every transport once per block).
    #[serde(default = "one")]
    pub repetitions: u64,
    /// The bottleneck.
    pub bottleneck: BottleneckCfg,
    /// Background traffic.
    #[serde(default)]
    pub background: BackgroundCfg,
    /// Foreground flows.
    #[serde(default)]
    pub foreground: ForegroundCfg,
    /// STRIDE settings.
    #[serde(default)]
    pub stride: StrideCfg,
    /// ACK-interval sweep (experiment = "ack_interval").
    #[serde(default)]
    pub ack_sweep: AckSweepCfg,
    /// STT probe (experiment = "stt").
    #[serde(default)]
    pub stt: SttCfg,
    /// Coexistence (experiment = "coexistence").
    #[serde(default)]
    pub coexistence: CoexistCfg,
}

fn one() -> u64 {
    1
}
fn auto() -> String {
    "auto".into()
}

/// `[bottleneck]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct BottleneckCfg {
    /// Egress rate ("500mbit").
    pub rate: String,
    /// Drop-tail queue ("128KiB").
    pub queue: String,
    /// Token bucket depth ("16KiB").
    #[serde(default = "default_burst")]
    pub burst: String,
    /// `tbf`, `htb`, or `htb-dscp`: STRIDE's DSCP (`stride.dscp`) in a class of its own next
    /// to everything else, each guaranteed half the rate and borrowing the rest, each with a
    /// queue of `queue` bytes ([`crate::topo::Qdisc::HtbDscp`]).
    #[serde(default = "default_qdisc")]
    pub qdisc: String,
    /// `htb-dscp`: each class may borrow what the other leaves unused (default true); false
    /// holds each at half the rate, whatever the other does.
    pub class_borrow: Option<bool>,
}
fn default_burst() -> String {
    "16KiB".into()
}
fn default_qdisc() -> String {
    "tbf".into()
}

/// `[background]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct BackgroundCfg {
    /// `pinned` (the testbed's own pinned-rate UDP sender) or `iperf3` (fixed pattern only).
    #[serde(default = "default_generator")]
    pub generator: String,
    /// Patterns, each run with the whole foreground set: `none`, `fixed`, `random`, `linear`.
    #[serde(default = "default_patterns")]
    pub patterns: Vec<String>,
    /// Rate of the fixed pattern.
    #[serde(default = "default_fixed")]
    pub fixed_rate: String,
    /// Lowest rate of the random pattern.
    #[serde(default = "default_rmin")]
    pub random_min: String,
    /// Highest rate of the random pattern.
    #[serde(default = "default_rmax")]
    pub random_max: String,
    /// The random pattern draws a new rate this often, ms.
    #[serde(default = "default_rperiod")]
    pub random_period_ms: f64,
    /// The linear pattern's starting rate.
    #[serde(default = "default_lfrom")]
    pub linear_from: String,
    /// The linear pattern's final rate (then it starts over).
    #[serde(default = "default_lto")]
    pub linear_to: String,
    /// Length of one linear ramp, s.
    #[serde(default = "default_lperiod")]
    pub linear_period_s: f64,
    /// UDP payload of the background datagrams, bytes.
    #[serde(default = "default_packet")]
    pub packet: u64,
}
fn default_generator() -> String {
    "pinned".into()
}
fn default_patterns() -> Vec<String> {
    vec!["fixed".into(), "random".into(), "linear".into()]
}
fn default_fixed() -> String {
    "30%".into()
}
fn default_rmin() -> String {
    "10%".into()
}
fn default_rmax() -> String {
    "50%".into()
}
fn default_rperiod() -> f64 {
    100.0
}
fn default_lfrom() -> String {
    "0%".into()
}
fn default_lto() -> String {
    "60%".into()
}
fn default_lperiod() -> f64 {
    5.0
}
fn default_packet() -> u64 {
    1400
}
impl Default for BackgroundCfg {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

/// `[foreground]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct ForegroundCfg {
    /// `stride` and kernel congestion controls (`cubic`, `bbr`, `reno`, ...).
    #[serde(default = "default_transports")]
    pub transports: Vec<String>,
    /// Block categories to run, 1..=5 (Fig. 6's < 10 KB ... 2048-10240 KB).
    #[serde(default = "default_blocks")]
    pub blocks: Vec<u64>,
    /// Flows per block category and transport in each repetition.
    #[serde(default = "default_fpb")]
    pub flows_per_block: u64,
    /// `back_to_back` or `poisson`.
    #[serde(default = "default_arrival")]
    pub arrival: String,
    /// Offered foreground load (fraction of the bottleneck) of the Poisson arrivals.
    #[serde(default = "default_load")]
    pub load: f64,
    /// A flow not finished after this long counts as failed, s.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
}
fn default_transports() -> Vec<String> {
    vec!["stride".into(), "cubic".into(), "bbr".into(), "reno".into()]
}
fn default_blocks() -> Vec<u64> {
    vec![1, 2, 3, 4, 5]
}
fn default_fpb() -> u64 {
    3
}
fn default_arrival() -> String {
    "back_to_back".into()
}
fn default_load() -> f64 {
    0.3
}
fn default_timeout() -> f64 {
    30.0
}
impl Default for ForegroundCfg {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

/// `[stride]`.
#[derive(Debug, Deserialize, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct StrideCfg {
    /// The sender's line rate (default: the bottleneck rate, like `stride demo`).
    pub line_rate: Option<String>,
    /// ACK interval (default 64 KiB, the paper's data segment).
    pub ack_interval: Option<String>,
    /// The DSCP of every STRIDE datagram, both directions (`af41`, `46`, ...; the grammar of
    /// `stride send --dscp`). Default 0, the class TCP is in.
    pub dscp: Option<String>,
}

/// `[ack_sweep]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct AckSweepCfg {
    /// ACK intervals compared.
    #[serde(default = "default_intervals")]
    pub intervals: Vec<String>,
    /// Block size of every flow.
    #[serde(default = "default_sweep_block")]
    pub block: String,
    /// Flows per interval per repetition.
    #[serde(default = "default_sweep_flows")]
    pub flows: u64,
}
fn default_intervals() -> Vec<String> {
    ["4KiB", "16KiB", "64KiB", "256KiB", "1MiB"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}
fn default_sweep_block() -> String {
    "4MiB".into()
}
fn default_sweep_flows() -> u64 {
    2
}
impl Default for AckSweepCfg {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

/// `[stt]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct SttCfg {
    /// One probe datagram this often, µs (the paper compares STTs 1 ms apart).
    #[serde(default = "default_stt_interval")]
    pub interval_us: u64,
    /// Probe duration, s.
    #[serde(default = "default_stt_duration")]
    pub duration_s: f64,
    /// Probe payload, bytes.
    #[serde(default = "default_stt_packet")]
    pub packet: u64,
}
fn default_stt_interval() -> u64 {
    1000
}
fn default_stt_duration() -> f64 {
    10.0
}
fn default_stt_packet() -> u64 {
    1400
}
impl Default for SttCfg {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

/// `[coexistence]`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct CoexistCfg {
    /// Kernel congestion controls that each share the bottleneck with one STRIDE flow (`none`:
    /// STRIDE alone, the baseline).
    #[serde(default = "default_against")]
    pub against: Vec<String>,
    /// Length of each pairing, s.
    #[serde(default = "default_coexist_duration")]
    pub duration_s: f64,
    /// Throughput and queue sampling period, ms.
    #[serde(default = "default_sample")]
    pub sample_ms: u64,
    /// The TCP flow leaves this many seconds into each pairing (STRIDE goes on to
    /// `duration_s`): STRIDE's throughput and queue before and after, and how long its queue
    /// takes to come back to its level alone (`against` must include `none`). Default: TCP
    /// stays to the end.
    pub competitor_stop_s: Option<f64>,
}
fn default_against() -> Vec<String> {
    vec!["cubic".into(), "bbr".into()]
}
fn default_coexist_duration() -> f64 {
    30.0
}
fn default_sample() -> u64 {
    100
}
impl Default for CoexistCfg {
    fn default() -> Self {
        toml::from_str("").expect("defaults")
    }
}

/// A testbed-file error: the field and the reason.
#[derive(Debug)]
pub struct TestbedError(pub String);
impl std::fmt::Display for TestbedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for TestbedError {}

fn positive(v: f64) -> bool {
    v > 0.0 && v.is_finite()
}

fn bad(field: &str, why: impl std::fmt::Display) -> TestbedError {
    TestbedError(format!("field `{field}`: {why}"))
}

/// Background rate pattern, in bit/s.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// No background.
    None,
    /// A constant rate.
    Fixed(u64),
    /// A new uniform rate in [min, max] every period (seeded).
    Random {
        /// Lowest rate.
        min: u64,
        /// Highest rate.
        max: u64,
        /// Period, ns.
        period_ns: u64,
        /// Seed.
        seed: u64,
    },
    /// From `from` to `to` linearly over `period_ns`, then again.
    Linear {
        /// Start rate.
        from: u64,
        /// End rate.
        to: u64,
        /// Ramp length, ns.
        period_ns: u64,
    },
}

impl Pattern {
    /// The pattern's name.
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::None => "none",
            Pattern::Fixed(_) => "fixed",
            Pattern::Random { .. } => "random",
            Pattern::Linear { .. } => "linear",
        }
    }
    /// The rate `t_ns` after the start.
    pub fn rate_at(&self, t_ns: u64) -> u64 {
        match *self {
            Pattern::None => 0,
            Pattern::Fixed(r) => r,
            Pattern::Random {
                min,
                max,
                period_ns,
                seed,
            } => {
                use rand::{Rng, SeedableRng};
                let idx = t_ns / period_ns.max(1);
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(
                    seed ^ idx.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                rng.gen_range(min..=max)
            }
            Pattern::Linear {
                from,
                to,
                period_ns,
            } => {
                let p = period_ns.max(1);
                let f = (t_ns % p) as f64 / p as f64;
                (from as f64 + (to as f64 - from as f64) * f) as u64
            }
        }
    }
}

/// A validated testbed file.
#[derive(Debug, Clone)]
pub struct Testbed {
    /// The file as parsed.
    pub file: TestbedFile,
    /// Run mode: `netns`, `relay` or `auto`.
    pub mode: Mode,
    /// The bottleneck.
    pub link: Bottleneck,
    /// Background patterns in order.
    pub patterns: Vec<Pattern>,
    /// Foreground transports.
    pub transports: Vec<Transport>,
    /// STRIDE line rate, bit/s.
    pub line_bps: u64,
    /// STRIDE ACK interval, bytes.
    pub ack_interval: u32,
    /// The DSCP of STRIDE's datagrams.
    pub dscp: stride::Dscp,
    /// ACK intervals of the sweep.
    pub sweep_intervals: Vec<u32>,
    /// Block size of the sweep.
    pub sweep_block: u64,
    /// Kernel congestion controls of the coexistence runs.
    pub against: Vec<String>,
}

/// Run mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Kernel bottleneck in network namespaces.
    Netns,
    /// Userspace relay on loopback.
    Relay,
    /// Netns when privileged, else relay.
    Auto,
}

/// A foreground transport.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// STRIDE over UDP.
    Stride,
    /// Kernel TCP with this congestion control.
    Tcp(String),
}

impl Transport {
    /// Its name in reports ("stride", "cubic", ...).
    pub fn name(&self) -> &str {
        match self {
            Transport::Stride => "stride",
            Transport::Tcp(cc) => cc,
        }
    }
}

/// Linux's TCP congestion controls by the names `TCP_CONGESTION` takes, the testbed's defaults
/// first: the kernel transports a testbed run can name (which of them this kernel offers is
/// [`kernel_ccs`]), listed so that figures give each a fixed colour whatever the machine.
pub const KNOWN_KERNEL_CCS: &[&str] = &[
    "cubic",
    "bbr",
    "reno",
    "dctcp",
    "vegas",
    "westwood",
    "htcp",
    "bic",
    "highspeed",
    "hybla",
    "illinois",
    "scalable",
    "lp",
    "veno",
    "yeah",
    "cdg",
    "nv",
];

/// The congestion controls this kernel offers.
pub fn kernel_ccs() -> Vec<String> {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

impl Testbed {
    /// Reads, parses and validates a testbed file.
    pub fn load(path: &Path) -> Result<Testbed, TestbedError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TestbedError(format!("{}: {e}", path.display())))?;
        Self::parse(&text).map_err(|e| TestbedError(format!("{}: {}", path.display(), e.0)))
    }

    /// Parses and validates testbed TOML.
    pub fn parse(text: &str) -> Result<Testbed, TestbedError> {
        Self::parse_with(text, &[])
    }

    /// Like [`Testbed::load`], with overrides `section.field=value` applied before validation
    /// (`stride.line_rate=800mbit`, `foreground.blocks=[1,2]`, `repetitions=5`). The value is
    /// read as a TOML value and otherwise as a bare string; unknown keys are errors naming them.
    pub fn load_with(path: &Path, sets: &[String]) -> Result<Testbed, TestbedError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TestbedError(format!("{}: {e}", path.display())))?;
        Self::parse_with(&text, sets)
            .map_err(|e| TestbedError(format!("{}: {}", path.display(), e.0)))
    }

    /// Parses testbed TOML with overrides applied, then validates.
    pub fn parse_with(text: &str, sets: &[String]) -> Result<Testbed, TestbedError> {
        let mut table: toml::Table =
            toml::from_str(text).map_err(|e| TestbedError(e.to_string()))?;
        for set in sets {
            stride_units::overrides::apply_set(&mut table, set).map_err(TestbedError)?;
        }
        let file: TestbedFile = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| TestbedError(e.to_string()))?;
        Self::validate(file)
    }

    /// Checks every field in file order and derives the values the experiments use; the first
    /// error found is returned.
    fn validate(file: TestbedFile) -> Result<Testbed, TestbedError> {
        let mode = check::header(&file)?;
        let link = check::bottleneck(&file.bottleneck)?;
        let patterns = check::background(&file, link.rate_bps)?;
        let kernel = kernel_ccs();
        let transports = check::foreground(&file.foreground, &kernel)?;
        let (line_bps, ack_interval, dscp) = check::stride(&file.stride, link.rate_bps)?;
        let link = check::classes(link, dscp)?;
        let (sweep_intervals, sweep_block) = check::ack_sweep(&file.ack_sweep)?;
        check::stt(&file.stt)?;
        check::coexistence(&file.coexistence, &kernel)?;
        Ok(Testbed {
            against: file.coexistence.against.clone(),
            mode,
            link,
            patterns,
            transports,
            line_bps,
            ack_interval,
            dscp,
            sweep_intervals,
            sweep_block,
            file,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str =
        "name = \"t\"\nexperiment = \"fct\"\n[bottleneck]\nrate = \"100mbit\"\nqueue = \"64KiB\"\n";

    fn err(extra: &str) -> String {
        Testbed::parse(&format!("{MIN}{extra}")).unwrap_err().0
    }

    #[test]
    fn minimal_file_gets_the_paper_defaults() {
        let t = Testbed::parse(MIN).unwrap();
        assert_eq!(t.link.rate_bps, 100_000_000);
        assert_eq!(t.ack_interval, 65536);
        assert_eq!(t.patterns.len(), 3);
        assert_eq!(t.patterns[0], Pattern::Fixed(30_000_000));
        assert_eq!(t.line_bps, 100_000_000);
    }

    #[test]
    fn errors_name_the_field() {
        assert!(
            err("[background]\nfixed_rate = \"fast\"\n").contains("field `background.fixed_rate`")
        );
        assert!(
            err("[background]\npatterns = [\"bursty\"]\n").contains("field `background.patterns`")
        );
        assert!(err("[foreground]\ntransports = [\"vegasx\"]\n")
            .contains("field `foreground.transports`"));
        assert!(err("[foreground]\nblocks = [6]\n").contains("field `foreground.blocks`"));
        assert!(err("[stride]\nack_interval = \"1KiB\"\n").contains("field `stride.ack_interval`"));
        assert!(err("[bottleneck2]\n").contains("bottleneck2"));
        let e = Testbed::parse("name = \"t\"\nexperiment = \"fct\"\n[bottleneck]\nrate = \"100mbit\"\nqueue = \"64KiB\"\nqdisc = \"netem\"\n").unwrap_err().0;
        assert!(e.contains("field `bottleneck.qdisc`"), "{e}");
        // Unknown keys inside a section are named too.
        let e = Testbed::parse("name = \"t\"\nexperiment = \"fct\"\n[bottleneck]\nrate = \"100mbit\"\nqueue = \"64KiB\"\nqueue_size = 3\n").unwrap_err().0;
        assert!(e.contains("queue_size"), "{e}");
    }

    #[test]
    fn rates_follow_the_one_unit_grammar() {
        // A bare number is ambiguous (bit/s? Mbit/s?): refused with the grammar's hint.
        let e = Testbed::parse(&MIN.replace("100mbit", "100"))
            .unwrap_err()
            .0;
        assert!(
            e.contains("field `bottleneck.rate`") && e.contains("needs a unit"),
            "{e}"
        );
        let e = err("[background]\nfixed_rate = \"60\"\n");
        assert!(
            e.contains("field `background.fixed_rate`") && e.contains("needs a unit"),
            "{e}"
        );
        let t = Testbed::parse_with(
            MIN,
            &[
                "stride.line_rate=1.5Gbit/s".into(),
                "background.fixed_rate=60mbps".into(),
            ],
        )
        .unwrap();
        assert_eq!(t.line_bps, 1_500_000_000);
        assert_eq!(t.patterns[0], Pattern::Fixed(60_000_000));
    }

    #[test]
    fn overrides_apply_and_unknown_keys_are_named() {
        let t = Testbed::parse_with(
            MIN,
            &[
                "stride.line_rate=800mbit".into(),
                "foreground.blocks=[1, 2]".into(),
            ],
        )
        .unwrap();
        assert_eq!(t.line_bps, 800_000_000);
        assert_eq!(t.file.foreground.blocks, vec![1, 2]);
        let e = Testbed::parse_with(MIN, &["foreground.flowz=3".into()])
            .unwrap_err()
            .0;
        assert!(e.contains("flowz"), "{e}");
        let e = Testbed::parse_with(MIN, &["bottleneck.rate=fast".into()])
            .unwrap_err()
            .0;
        assert!(e.contains("field `bottleneck.rate`"), "{e}");
        assert!(Testbed::parse_with(MIN, &["nokey".into()]).is_err());
    }

    #[test]
    fn stride_gets_a_class_of_its_own_by_its_dscp() {
        use crate::topo::Qdisc;
        let t = Testbed::parse(&format!("{MIN}[stride]\ndscp = \"af41\"\n")).unwrap();
        assert_eq!(t.dscp.value(), 34);
        assert_eq!(t.link.qdisc, Qdisc::Tbf);
        assert_eq!(Testbed::parse(MIN).unwrap().dscp, stride::Dscp::DEFAULT);
        let class = MIN.replace(
            "queue = \"64KiB\"\n",
            "queue = \"64KiB\"\nqdisc = \"htb-dscp\"\n",
        );
        let t = Testbed::parse(&format!("{class}[stride]\ndscp = \"ef\"\n")).unwrap();
        assert_eq!(
            t.link.qdisc,
            Qdisc::HtbDscp {
                dscp: 46,
                borrow: true
            }
        );
        let fixed = format!("{class}class_borrow = false\n[stride]\ndscp = \"ef\"\n");
        assert_eq!(
            Testbed::parse(&fixed).unwrap().link.qdisc,
            Qdisc::HtbDscp {
                dscp: 46,
                borrow: false
            }
        );
        let tbf = MIN.replace(
            "queue = \"64KiB\"\n",
            "queue = \"64KiB\"\nclass_borrow = true\n",
        );
        let e = Testbed::parse(&tbf).unwrap_err().0;
        assert!(e.contains("field `bottleneck.class_borrow`"), "{e}");
        assert_eq!(t.link.qdisc.name(), "htb-dscp");
        // The class needs a codepoint other than unmarked traffic's.
        for extra in ["", "[stride]\ndscp = \"0\"\n"] {
            let e = Testbed::parse(&format!("{class}{extra}")).unwrap_err().0;
            assert!(
                e.contains("field `bottleneck.qdisc`") && e.contains("stride.dscp"),
                "{e}"
            );
        }
        let e = err("[stride]\ndscp = \"af44\"\n");
        assert!(
            e.contains("field `stride.dscp`") && e.contains("0..=63"),
            "{e}"
        );
    }

    #[test]
    fn the_competitor_leaves_within_the_run() {
        let coex = "name = \"t\"\nexperiment = \"coexistence\"\n[bottleneck]\nrate = \"100mbit\"\nqueue = \"64KiB\"\n[coexistence]\nduration_s = 10\n";
        let with = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            Testbed::parse_with(coex, &sets)
        };
        let ok = with(&[
            "coexistence.against=[\"none\", \"reno\"]",
            "coexistence.competitor_stop_s=4",
        ])
        .unwrap();
        assert_eq!(ok.file.coexistence.competitor_stop_s, Some(4.0));
        for (sets, want) in [
            (
                &[
                    "coexistence.against=[\"none\", \"reno\"]",
                    "coexistence.competitor_stop_s=10",
                ][..],
                "(0, duration_s)",
            ),
            (
                &[
                    "coexistence.against=[\"none\", \"reno\"]",
                    "coexistence.competitor_stop_s=0",
                ][..],
                "(0, duration_s)",
            ),
            (
                &[
                    "coexistence.against=[\"reno\"]",
                    "coexistence.competitor_stop_s=4",
                ][..],
                "\"none\"",
            ),
            (
                &[
                    "coexistence.against=[\"none\"]",
                    "coexistence.competitor_stop_s=4",
                ][..],
                "\"none\"",
            ),
        ] {
            let e = with(sets).unwrap_err().0;
            assert!(
                e.contains("field `coexistence.competitor_stop_s`") && e.contains(want),
                "{sets:?}: {e}"
            );
        }
    }

    #[test]
    fn patterns_follow_their_shape() {
        let l = Pattern::Linear {
            from: 0,
            to: 100,
            period_ns: 1000,
        };
        assert_eq!(l.rate_at(0), 0);
        assert_eq!(l.rate_at(500), 50);
        assert_eq!(l.rate_at(1500), 50);
        let r = Pattern::Random {
            min: 10,
            max: 20,
            period_ns: 100,
            seed: 7,
        };
        let rates: Vec<u64> = (0..50).map(|i| r.rate_at(i * 100)).collect();
        assert!(rates.iter().all(|v| (10..=20).contains(v)));
        assert!(
            rates.iter().any(|&v| v != rates[0]),
            "random pattern never changes"
        );
        assert_eq!(r.rate_at(5), r.rate_at(95), "rate changes inside a period");
        let r2 = Pattern::Random {
            min: 10,
            max: 20,
            period_ns: 100,
            seed: 7,
        };
        assert_eq!(r2.rate_at(4200), r.rate_at(4200), "same seed, same rates");
    }
}
