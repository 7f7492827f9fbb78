//! Congestion control: the [`Controller`] trait, the registry of controllers by name
//! ([`REGISTRY`], [`CcConfig`]), STRIDE's Algorithm 1 ([`Stride`]) and a fixed-rate controller
//! ([`FixedRate`]). The baselines live in submodules, one per paper.
//!
//! Rates are `u32` in units of 2^-20 bytes per nanosecond ([`RATE_FRAC_BITS`]); 10 Gbit/s is
//! 1 310 720. The per-sample update of [`Stride`] uses only shifts, adds, subtracts, compares and a
//! leading-one detector: no multiply, no divide (see `docs/spec.md`, section "Rate control").

pub mod dcqcn;
pub mod hpcc;
pub mod qcn;
pub mod swift;
pub mod timely;

/// Fractional bits of a rate: one unit is 2^-20 bytes per nanosecond (about 7.63 bit/s).
pub const RATE_FRAC_BITS: u32 = 20;

/// Converts Gbit/s (as a float, configuration time only) to rate units.
pub fn rate_from_gbps(gbps: f64) -> u32 {
    let v = gbps / 8.0 * f64::from(1u32 << RATE_FRAC_BITS);
    v.round().clamp(0.0, u32::MAX as f64) as u32
}

/// Converts rate units to Gbit/s (reporting only).
pub fn rate_to_gbps(rate: u32) -> f64 {
    f64::from(rate) * 8.0 / f64::from(1u32 << RATE_FRAC_BITS)
}

/// One INT (in-band network telemetry) hop record, as HPCC's switches stamp them and the
/// receiver echoes them (simulator only: the wire format has no room for them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Queue length at the egress port when the packet left (bytes).
    pub qlen: u64,
    /// Bytes the egress port had transmitted in total when the packet left.
    pub tx_bytes: u64,
    /// When the packet left the port (ns).
    pub ts: u64,
    /// The port's line rate (bit/s).
    pub rate_bps: u64,
}

/// What a controller is told when an ACK arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// The echoed single trip time: receiver clock minus sender clock, mod 2^32 ns.
    pub stt: u32,
    /// Bytes newly acknowledged by this ACK.
    pub acked: u32,
    /// Round-trip time of this sample (ns; 0 when the sample gave none).
    pub rtt: u64,
    /// CE-marked DATA packets newly echoed by this ACK (difference of the wire's `ce_count`).
    pub ce: u32,
    /// Bytes sent but not yet acknowledged after this ACK.
    pub inflight: u32,
}

impl AckSample {
    /// A sample carrying only an STT and the acknowledged bytes (what Algorithm 1 reads).
    pub fn stt_only(stt: u32, acked: u32) -> Self {
        AckSample {
            stt,
            acked,
            rtt: 0,
            ce: 0,
            inflight: 0,
        }
    }
}

/// A congestion controller, driven by the connection's events (shaped like quinn-proto's
/// `Controller`, but rate-first: every STRIDE sender is paced). All times are ns on the
/// caller's clock. Only [`Controller::on_ack`], [`Controller::on_nack`],
/// [`Controller::on_timeout`] and [`Controller::rate`] are required; the rest default to
/// "this signal means nothing to me".
pub trait Controller: Send {
    /// A DATA packet of `bytes` payload bytes left at `now`.
    fn on_sent(&mut self, _now: u64, _bytes: u32) {}
    /// A pure ACK acknowledging new data arrived.
    fn on_ack(&mut self, now: u64, sample: &AckSample);
    /// A NACK arrived (a gap at the receiver; go-back-N follows).
    fn on_nack(&mut self, now: u64);
    /// The retransmission timer fired.
    fn on_timeout(&mut self, now: u64);
    /// The handshake completed (client side, on the SYN-ACK): `syn_stt` is the STT of the SYN
    /// as the listener measured it and `grant_shift` the start-rate share the listener granted
    /// (start at most `rate_max >> grant_shift`), each when the SYN-ACK carried it (spec §8.6).
    fn on_handshake(&mut self, _now: u64, _syn_stt: Option<u32>, _grant_shift: Option<u8>) {}
    /// A congestion notification (DCQCN's CNP: an `ACK|CN` packet) arrived.
    fn on_cnp(&mut self, _now: u64) {}
    /// A QCN congestion point's feedback frame arrived: `fb` is the quantised |Fb| (6 bits).
    fn on_qcn_feedback(&mut self, _now: u64, _fb: u8) {}
    /// The INT hop records echoed by an ACK (HPCC), after [`Controller::on_ack`].
    fn on_int(&mut self, _now: u64, _hops: &[IntHop]) {}
    /// The path to the peer crosses `hops` switches (see `Connection::set_path_hops`).
    fn on_path(&mut self, _hops: u32) {}
    /// When the controller's own timer next wants [`Controller::on_timer`] (None: no timer).
    fn timer(&self) -> Option<u64> {
        None
    }
    /// The controller's timer is due.
    fn on_timer(&mut self, _now: u64) {}
    /// The pacing rate, in 2^-20 bytes/ns.
    fn rate(&self) -> u32;
    /// A cap on bytes in flight (None: rate only).
    fn window(&self) -> Option<u32> {
        None
    }
    /// A name for the decision of the latest event, for traces (None: not reported).
    fn trace_branch(&self) -> Option<&'static str> {
        None
    }
}

/// The older name of [`Controller`].
pub use Controller as RateController;

/// Builds controllers of one algorithm with one parameter set: what [`CcConfig`] holds. The
/// parameters are set by name ([`ControllerFactory::set`]), so configuration code needs no
/// case per algorithm.
pub trait ControllerFactory: Send + Sync + std::fmt::Debug + 'static {
    /// The registered name.
    fn name(&self) -> &'static str;
    /// A new controller for a connection opened at `now`.
    fn build(&self, now: u64) -> Box<dyn Controller>;
    /// Checks ranges; returns the first bad field and why.
    fn validate(&self) -> Result<(), (&'static str, &'static str)>;
    /// Sets the parameter `key` from its decimal text; the error names the field.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;
    /// Every settable parameter's name and current value.
    fn params(&self) -> Vec<(&'static str, String)>;
    /// A copy behind a new box.
    fn clone_box(&self) -> Box<dyn ControllerFactory>;
    /// The parameters as `Any`, for typed access ([`CcConfig::params_mut`]).
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any;
    /// The parameters as `Any`.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Which controller a connection uses: a factory from the [`REGISTRY`] (or any other).
#[derive(Debug)]
pub struct CcConfig(Box<dyn ControllerFactory>);

impl Clone for CcConfig {
    fn clone(&self) -> Self {
        CcConfig(self.0.clone_box())
    }
}

impl CcConfig {
    /// Wraps a factory.
    pub fn new(f: impl ControllerFactory) -> Self {
        CcConfig(Box::new(f))
    }
    /// Algorithm 1 with these parameters.
    pub fn stride(p: StrideParams) -> Self {
        CcConfig::new(p)
    }
    /// A fixed rate (rate units).
    pub fn fixed(rate: u32) -> Self {
        CcConfig::new(FixedParams { rate })
    }
    /// The registered controller `name` with its defaults for a host whose line rate is
    /// `line` (rate units); the error lists the known names.
    pub fn by_name(name: &str, line: u32) -> Result<Self, String> {
        match REGISTRY.iter().find(|e| e.name == name) {
            Some(e) => Ok((e.make)(line)),
            None => Err(format!(
                "unknown controller {name:?}; known: {}",
                names().collect::<Vec<_>>().join(", ")
            )),
        }
    }
    /// The algorithm's registered name.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }
    /// Builds a controller for a connection opened at `now`.
    pub fn build(&self, now: u64) -> Box<dyn Controller> {
        self.0.build(now)
    }
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        self.0.validate()
    }
    /// Sets a parameter by name (see [`ControllerFactory::set`]).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        self.0.set(key, value)
    }
    /// Every parameter's name and value.
    pub fn params(&self) -> Vec<(&'static str, String)> {
        self.0.params()
    }
    /// The parameters when they are a `T` (e.g. `StrideParams`).
    pub fn params_ref<T: 'static>(&self) -> Option<&T> {
        self.0.as_any().downcast_ref()
    }
    /// The parameters when they are a `T`, mutably.
    pub fn params_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.0.as_any_mut().downcast_mut()
    }
}

/// One registered controller.
pub struct Registered {
    /// The name configuration uses (`--cc NAME`, `cc = "NAME"`).
    pub name: &'static str,
    /// One line for help texts.
    pub about: &'static str,
    /// Whether it needs a signal that only the simulator carries (INT, QCN feedback).
    pub sim_only: bool,
    /// Defaults for a line rate (rate units).
    pub make: fn(u32) -> CcConfig,
}

/// Every controller known by name. A new algorithm is one module and one line here.
pub static REGISTRY: &[Registered] = &[
    Registered {
        name: "stride",
        about: "STRIDE: Algorithm 1 with the §8.6 mechanisms (start grant, handshake minimum, ...)",
        sim_only: false,
        make: |l| CcConfig::stride(StrideParams::for_line_rate(l)),
    },
    Registered {
        name: "stride-paper",
        about: "STRIDE's Algorithm 1 exactly as the paper (spec §8.4, every mechanism off)",
        sim_only: false,
        make: |l| CcConfig::stride(StrideParams::paper(l)),
    },
    Registered {
        name: "fixed",
        about: "no congestion control: a fixed rate (the line rate)",
        sim_only: false,
        make: CcConfig::fixed,
    },
    Registered {
        name: "timely",
        about: "TIMELY (Mittal et al. 2015): RTT gradient",
        sim_only: false,
        make: |l| CcConfig::new(timely::TimelyParams::for_line_rate(l)),
    },
    Registered {
        name: "dcqcn",
        about: "DCQCN reaction point (Zhu et al. 2015): ECN marks -> CNP",
        sim_only: false,
        make: |l| CcConfig::new(dcqcn::DcqcnParams::for_line_rate(l)),
    },
    Registered {
        name: "swift",
        about: "Swift (Kumar et al. 2020): delay target with flow and topology scaling",
        sim_only: false,
        make: |l| CcConfig::new(swift::SwiftParams::for_line_rate(l)),
    },
    Registered {
        name: "qcn",
        about: "QCN reaction point (IEEE 802.1Qau, seed 004's values): switch feedback frames",
        sim_only: true,
        make: |l| CcConfig::new(qcn::QcnParams::for_line_rate(l)),
    },
    Registered {
        name: "hpcc",
        about: "HPCC (Li et al. 2019): INT-based window, utilisation target eta",
        sim_only: true,
        make: |l| CcConfig::new(hpcc::HpccParams::for_line_rate(l)),
    },
];

/// The registered names, in registry order.
pub fn names() -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().map(|e| e.name)
}

/// Parses a parameter's decimal text for [`ControllerFactory::set`].
pub fn parse_param<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{key}: cannot read {value:?} as a number of the right range"))
}

/// Implements [`ControllerFactory`]'s by-name accessors for a parameter struct whose fields
/// are all numbers: `factory_params!(Type, "name", build_expr, field, field, ...)`.
#[macro_export]
macro_rules! factory_params {
    ($t:ty, $name:expr, |$p:ident, $now:ident| $build:expr, [$($f:ident),* $(,)?]) => {
        impl $crate::cc::ControllerFactory for $t {
            fn name(&self) -> &'static str {
                $name
            }
            fn build(&self, $now: u64) -> Box<dyn $crate::cc::Controller> {
                let $p = *self;
                let _ = $now;
                Box::new($build)
            }
            fn validate(&self) -> Result<(), (&'static str, &'static str)> {
                <$t>::validate(self)
            }
            fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
                match key {
                    $(stringify!($f) => self.$f = $crate::cc::parse_param(key, value)?,)*
                    _ => {
                        return Err(format!(
                            "{key}: not a parameter of {}; it has: {}",
                            $name,
                            [$(stringify!($f)),*].join(", ")
                        ))
                    }
                }
                Ok(())
            }
            fn params(&self) -> Vec<(&'static str, String)> {
                vec![$((stringify!($f), self.$f.to_string())),*]
            }
            fn clone_box(&self) -> Box<dyn $crate::cc::ControllerFactory> {
                Box::new(*self)
            }
            fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
                self
            }
            fn as_any(&self) -> &dyn std::any::Any {
                self
            }
        }
    };
}

/// Parameters of Algorithm 1. Every field is an integer so that the same values configure the
/// Verilog core (`hw/rtl/stride_cc.v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct StrideParams {
    /// EWMA gain of the STT gradient is 2^-alpha_shift (paper's `a = 2^-i`). 0..=15.
    pub alpha_shift: u8,
    /// Additive increase step (rate units) below `t_low` (paper's beta).
    pub beta: u32,
    /// Increase step when the gradient is not positive (paper's `w * beta`, precomputed).
    pub wbeta: u32,
    /// Queueing delay (STT above its windowed minimum, ns) under which the rate increases.
    pub t_low: u32,
    /// Queueing delay (ns) at or above which the rate decreases by 2^-md_shift.
    pub t_high: u32,
    /// Multiplicative decrease shift (paper: k = 3, `r -= r >> 3`).
    pub md_shift: u8,
    /// The gradient is normalised by 2^norm_shift ns (the base delay). 0..=31.
    pub norm_shift: u8,
    /// Lowest rate.
    pub rate_min: u32,
    /// Highest rate (normally the line rate).
    pub rate_max: u32,
    /// Rate before the first sample.
    pub rate_init: u32,
    /// Samples per window of the two-bucket windowed minimum of STT. >= 1.
    pub min_window: u16,
    // ---- profile mechanisms (spec §8.6): each one a switch; all off is `stride-paper` ----
    /// Start at no more than the start rate the listener granted in its SYN-ACK
    /// (`rate_max >> grant_shift`, spec §8.6). Handshake only: nothing on the per-packet path.
    #[cfg_attr(feature = "serde", serde(default))]
    pub grant: bool,
    /// Seed the windowed minimum STT (and the previous sample) with the SYN's STT echoed in the
    /// SYN-ACK, so the first data sample already sees a queue that built during the first
    /// window instead of taking it for the base delay. Handshake only.
    #[cfg_attr(feature = "serde", serde(default))]
    pub hs_min: bool,
    /// Hyper-active increase: after this many consecutive "low" samples the additive step
    /// doubles with every further one, up to `beta << 4` (0: off). Per-sample path; not yet in
    /// `hw/rtl/stride_cc.v`, hence off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub hai_after: u16,
    /// Steps scaled to the rate: the increase steps (`beta`, `wbeta`) become at most
    /// `rate >> step_shift` (0: off), so a sender far below its line rate (a 10 Gbit/s host
    /// behind a 1 Gbit/s bottleneck) moves in steps sized to what it gets through. Per-sample
    /// path; not yet in `hw/rtl/stride_cc.v`, hence off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub step_shift: u8,
    /// Faster first reaction: the first sample after a handshake-seeded minimum (`hs_min`)
    /// that is at or above `t_high` cuts `rate >> first_md_shift` instead of
    /// `rate >> md_shift` (0: off). Per-sample path; not in the RTL, off by default.
    #[cfg_attr(feature = "serde", serde(default))]
    pub first_md_shift: u8,
    /// NACK gate: a NACK cuts the rate only when the last STT sample's queueing delay (STT above
    /// the windowed minimum) is at or above `t_low`; below it the loss is taken for
    /// non-congestion loss and the rate is left as it is (branch `nack_held`). Before the first
    /// sample the NACK cuts as in §8.4. A compare on the NACK event (spec §8.6); on by default
    /// and in `hw/rtl/stride_cc.v` (`NACK_GATE`).
    #[cfg_attr(feature = "serde", serde(default))]
    pub nack_gate: bool,
    /// With `nack_gate`: the gate's threshold is `t_high` instead of `t_low`, so a NACK cuts
    /// only behind a queue the delay signal would cut for anyway. For software hosts, whose
    /// STT noise alone reaches past `t_low` (user-space stamps and wake-ups: a sender pinned
    /// below a 1 Gbit/s bottleneck reads p99 131-262 us of "queue" with none there), so that
    /// random loss is not read as congestion (spec §8.6, §11.1). On in the host profile; off
    /// by default and not in `hw/rtl/stride_cc.v`, whose NIC stamps have no such noise.
    #[cfg_attr(feature = "serde", serde(default))]
    pub gate_high: bool,
    /// Gradient dead band (ns): a smoothed gradient `0 < d < grad_dead` counts as zero (the
    /// `grad_inc` branch), so the jitter of one or two packets of another flow does not cut
    /// (0: off). A compare on the per-sample path; not in `hw/rtl/stride_cc.v`, off by default:
    /// it lost on the paper FatTree (docs/results.md, "Ablation of the STRIDE mechanisms").
    #[cfg_attr(feature = "serde", serde(default))]
    pub grad_dead: u32,
    /// Cut floor (ns): between `t_low` and `t_high` a positive gradient cuts only while the
    /// queueing delay is at least `cut_floor`; below it the rate is held (branch `grad_hold`)
    /// (0: off). A compare on the per-sample path; not in the RTL, off by default (no gain on
    /// the paper FatTree, docs/results.md, "Ablation of the STRIDE mechanisms").
    #[cfg_attr(feature = "serde", serde(default))]
    pub cut_floor: u32,
    /// Delivery floor: a gradient cut never takes the rate below `delivered - (delivered >>
    /// md_shift)`, `delivered` being the bytes acknowledged in the last whole window of
    /// 2^dr_shift ns, shifted to rate units (0: off; else 10..=20). Per-ACK bookkeeping and a
    /// compare; not in the RTL, off by default (it lost on the paper FatTree, docs/results.md,
    /// "Ablation of the STRIDE mechanisms").
    #[cfg_attr(feature = "serde", serde(default))]
    pub dr_shift: u8,
}

impl StrideParams {
    /// Defaults for a given line rate (rate units); see the defaults table in `docs/spec.md`.
    pub fn for_line_rate(line: u32) -> Self {
        StrideParams {
            // Chosen by the simulator sweep (docs/results.md, "Choosing the defaults"):
            // additive step 1/64 of the line rate per sample (156 Mbit/s at 10 Gbit/s), a
            // quarter of that on a falling gradient, T_high 80 us, start at a quarter of the
            // line rate (a synchronised start at line rate overflows the first shared queue).
            alpha_shift: 3,
            beta: (line >> 6).max(1),
            wbeta: (line >> 8).max(1),
            t_low: 5_000,
            t_high: 80_000,
            md_shift: 3,
            norm_shift: 13,
            rate_min: rate_from_gbps(0.01).min(line),
            rate_max: line,
            rate_init: (line >> 2).max(rate_from_gbps(0.01).min(line)),
            min_window: 256,
            // Off since the receive share (`Config::rx_share`, spec §8.6) bounds the first
            // window of a burst of starts: the start grant then only slows the later flows.
            grant: false,
            hs_min: true,
            hai_after: 0,
            step_shift: 0,
            first_md_shift: 0,
            // Random loss under no queue is not congestion (docs/results.md, the NACK gate: 5 %
            // loss 0.32 -> 0.81 of the line in the loss model; incast and FatTree unchanged).
            nack_gate: true,
            gate_high: false,
            grad_dead: 0,
            cut_floor: 0,
            dr_shift: 0,
        }
    }

    /// The `stride-paper` profile: Algorithm 1 exactly as spec §8.4 (the defaults of
    /// [`StrideParams::for_line_rate`] with every profile mechanism of spec §8.6 switched off).
    pub fn paper(line: u32) -> Self {
        StrideParams::for_line_rate(line).without_mechanisms()
    }

    /// The same parameters with every profile mechanism of spec §8.6 off (Algorithm 1 as the
    /// paper).
    pub fn without_mechanisms(self) -> Self {
        StrideParams {
            grant: false,
            hs_min: false,
            hai_after: 0,
            step_shift: 0,
            first_md_shift: 0,
            nack_gate: false,
            gate_high: false,
            grad_dead: 0,
            cut_floor: 0,
            dr_shift: 0,
            ..self
        }
    }

    /// Whether every profile mechanism of spec §8.6 is off (the controller is the paper's
    /// Algorithm 1).
    pub fn is_paper(&self) -> bool {
        *self == self.without_mechanisms()
    }

    /// The small parameter set of the hand-computed unit tests and of the branch vectors in
    /// `vectors/cc/`, chosen so every branch is reachable with round numbers.
    pub fn hand_checked() -> Self {
        StrideParams {
            alpha_shift: 2,
            beta: 100,
            wbeta: 500,
            t_low: 1_000,
            t_high: 10_000,
            md_shift: 3,
            norm_shift: 10,
            rate_min: 1_000,
            rate_max: 1_000_000,
            rate_init: 80_000,
            min_window: 4,
            grant: false,
            hs_min: false,
            hai_after: 0,
            step_shift: 0,
            first_md_shift: 0,
            nack_gate: false,
            gate_high: false,
            grad_dead: 0,
            cut_floor: 0,
            dr_shift: 0,
        }
    }

    /// Checks ranges; returns the name of the first bad field and why.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.alpha_shift > 15 {
            return Err(("alpha_shift", "must be at most 15"));
        }
        if self.md_shift == 0 || self.md_shift > 31 {
            return Err(("md_shift", "must be in 1..=31"));
        }
        if self.norm_shift > 31 {
            return Err(("norm_shift", "must be at most 31"));
        }
        if self.t_low > i32::MAX as u32 {
            return Err(("t_low", "must be below 2^31 ns"));
        }
        if self.t_high > i32::MAX as u32 {
            return Err(("t_high", "must be below 2^31 ns"));
        }
        if self.t_low > self.t_high {
            return Err(("t_low", "must not exceed t_high"));
        }
        if self.rate_min == 0 {
            return Err(("rate_min", "must be positive"));
        }
        if self.rate_min > self.rate_max {
            return Err(("rate_min", "must not exceed rate_max"));
        }
        if self.rate_init < self.rate_min || self.rate_init > self.rate_max {
            return Err(("rate_init", "must lie in rate_min..=rate_max"));
        }
        if self.min_window == 0 {
            return Err(("min_window", "must be at least 1"));
        }
        if self.first_md_shift > 31 {
            return Err(("first_md_shift", "must be at most 31"));
        }
        if self.step_shift > 31 {
            return Err(("step_shift", "must be at most 31"));
        }
        if self.dr_shift != 0 && !(10..=20).contains(&self.dr_shift) {
            return Err(("dr_shift", "must be 0 (off) or in 10..=20"));
        }
        Ok(())
    }
}

/// Which branch of Algorithm 1 the last event took (for tests, vectors and tracing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// No event yet.
    None,
    /// Queueing delay below `t_low`: `r += beta`.
    Low,
    /// Queueing delay at or above `t_high`: `r -= r >> md_shift`.
    High,
    /// Between thresholds, gradient <= 0: `r += wbeta`.
    GradInc,
    /// Between thresholds, gradient > 0: `r -= r >> sh`.
    GradDec,
    /// NACK: `r -= r >> md_shift`.
    Nack,
    /// Timeout: `r -= r >> 1`.
    Timeout,
    /// NACK while the last sample showed no queue (`nack_gate`): rate unchanged.
    NackHeld,
    /// Positive gradient below `cut_floor` of queueing delay: rate unchanged.
    GradHold,
}

impl Branch {
    /// The name used in `vectors/cc/*.jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            Branch::None => "none",
            Branch::Low => "low",
            Branch::High => "high",
            Branch::GradInc => "grad_inc",
            Branch::GradDec => "grad_dec",
            Branch::Nack => "nack",
            Branch::Timeout => "timeout",
            Branch::NackHeld => "nack_held",
            Branch::GradHold => "grad_hold",
        }
    }
}

/// STRIDE's rate controller (Algorithm 1 of the paper, in fixed point, open points resolved as in
/// `docs/spec.md`).
#[derive(Clone, Debug)]
pub struct Stride {
    p: StrideParams,
    rate: u32,
    /// EWMA of the STT difference between consecutive samples (ns, signed).
    d: i32,
    stt_old: u32,
    min_cur: u32,
    min_prev: u32,
    count: u16,
    init: bool,
    branch: Branch,
    /// Consecutive "low" samples (hyper-active increase).
    low_run: u16,
    /// The handshake seeded the minimum and no sample has come since.
    seeded: bool,
    /// The sample being processed is the first after the seed.
    first: bool,
    /// Delivery floor: the window (now >> dr_shift) being counted, its acknowledged bytes,
    /// and the rate delivered in the last whole window (rate units).
    dr_win: u64,
    dr_acc: u32,
    delivered: u32,
}

/// `(a - b)` on the mod-2^32 clock, read as a signed distance.
#[inline]
fn wdiff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

const D_LIMIT: i32 = 1 << 30;

impl Stride {
    /// A controller with the given parameters. Panics on parameters that fail
    /// [`StrideParams::validate`] (configuration is checked before reaching here).
    pub fn new(p: StrideParams) -> Self {
        if let Err((f, why)) = p.validate() {
            panic!("invalid STRIDE parameter {f}: {why}");
        }
        Stride {
            p,
            rate: p.rate_init,
            d: 0,
            stt_old: 0,
            min_cur: 0,
            min_prev: 0,
            count: 0,
            init: false,
            branch: Branch::None,
            low_run: 0,
            seeded: false,
            first: false,
            dr_win: 0,
            dr_acc: 0,
            delivered: 0,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &StrideParams {
        &self.p
    }

    /// Smoothed STT gradient (ns per sample interval).
    pub fn gradient(&self) -> i32 {
        self.d
    }
    /// Previous STT sample.
    pub fn stt_old(&self) -> u32 {
        self.stt_old
    }
    /// Minimum of the current window.
    pub fn min_cur(&self) -> u32 {
        self.min_cur
    }
    /// Minimum of the previous window.
    pub fn min_prev(&self) -> u32 {
        self.min_prev
    }
    /// Samples in the current window.
    pub fn count(&self) -> u16 {
        self.count
    }
    /// The branch the last event took.
    pub fn branch(&self) -> Branch {
        self.branch
    }

    /// The windowed minimum STT (the older of the two buckets when smaller).
    pub fn stt_min(&self) -> u32 {
        if wdiff(self.min_prev, self.min_cur) < 0 {
            self.min_prev
        } else {
            self.min_cur
        }
    }

    /// Queueing delay estimate for a sample: STT above the windowed minimum, floored at 0.
    pub fn queue_delay(&self, stt: u32) -> u32 {
        wdiff(stt, self.stt_min()).max(0) as u32
    }

    fn clamp(&mut self) {
        self.rate = self.rate.clamp(self.p.rate_min, self.p.rate_max);
    }

    // BEGIN UPDATE PATH: shifts, adds, subtracts and compares only (checked by a test).
    /// One STT sample (Algorithm 1, lines 3-24).
    pub fn on_sample(&mut self, s: u32) {
        if !self.init {
            self.init = true;
            self.stt_old = s;
            self.min_cur = s;
            self.min_prev = s;
            self.d = 0;
            self.count = 0;
        }
        // Line 4: dSTT = (1-a) dSTT + a (new - old) = dSTT + ((new - old - dSTT) >> i).
        self.first = self.seeded;
        self.seeded = false;
        let diff = wdiff(s, self.stt_old).clamp(-D_LIMIT, D_LIMIT - 1);
        self.d += (diff - self.d) >> self.p.alpha_shift;
        self.stt_old = s;
        // Windowed minimum in two buckets: tolerates clock drift and route changes.
        if wdiff(s, self.min_cur) < 0 {
            self.min_cur = s;
        }
        self.count += 1;
        if self.count == self.p.min_window {
            self.min_prev = self.min_cur;
            self.min_cur = s;
            self.count = 0;
        }
        let qd = wdiff(s, self.stt_min()).max(0);
        if qd < self.p.t_low as i32 {
            self.low_run = self.low_run.saturating_add(1);
            let mut inc = self.p.beta;
            if self.p.step_shift != 0 && (self.rate >> self.p.step_shift) < inc {
                inc = self.rate >> self.p.step_shift;
            }
            if self.p.hai_after != 0 && self.low_run > self.p.hai_after {
                // Hyper-active increase: the step doubles per further low sample, at most x16.
                let k = u32::from((self.low_run - self.p.hai_after).min(4));
                inc = if inc > (u32::MAX >> k) {
                    u32::MAX
                } else {
                    inc << k
                };
            }
            self.rate = self.rate.saturating_add(inc);
            self.branch = Branch::Low;
            self.clamp();
            return;
        }
        self.low_run = 0;
        if qd >= self.p.t_high as i32 {
            if self.first && self.p.first_md_shift != 0 {
                self.rate -= self.rate >> self.p.first_md_shift;
            } else {
                self.rate -= self.rate >> self.p.md_shift;
            }
            self.branch = Branch::High;
        } else if self.d <= 0 || self.d < self.p.grad_dead as i32 {
            let mut inc = self.p.wbeta;
            if self.p.step_shift != 0 && (self.rate >> self.p.step_shift) < inc {
                inc = self.rate >> self.p.step_shift;
            }
            self.rate = self.rate.saturating_add(inc);
            self.branch = Branch::GradInc;
        } else {
            // Normalised gradient g = d / 2^norm_shift, quantised to the power of two below d:
            // the leading-one position replaces the paper's repeated-subtraction loop.
            let p = 31 - self.d.leading_zeros();
            let ns = u32::from(self.p.norm_shift);
            // sh is in 1..=31 because norm_shift <= 31 and p >= 0.
            let sh = if p >= ns { 1 } else { ns - p };
            if qd < self.p.cut_floor as i32 {
                self.branch = Branch::GradHold;
            } else {
                self.rate -= self.rate >> sh;
                if self.p.dr_shift != 0 {
                    let floor = self.delivered - (self.delivered >> self.p.md_shift);
                    if self.rate < floor {
                        self.rate = floor;
                    }
                }
                self.branch = Branch::GradDec;
            }
        }
        self.clamp();
    }

    /// A NACK: decrease by 2^-md_shift (with `nack_gate`, only when the last sample showed a
    /// queueing delay of at least `t_low`, or `t_high` with `gate_high`).
    pub fn nack(&mut self) {
        // The queueing delay of the last sample, floored at 0 as in `on_sample`.
        let qd = wdiff(self.stt_old, self.stt_min()).max(0);
        let gate = if self.p.gate_high {
            self.p.t_high
        } else {
            self.p.t_low
        };
        if self.p.nack_gate && self.init && qd < gate as i32 {
            self.branch = Branch::NackHeld;
            return;
        }
        self.rate -= self.rate >> self.p.md_shift;
        self.branch = Branch::Nack;
        self.clamp();
    }

    /// The handshake's hints (see [`Controller::on_handshake`]); each applies only when its
    /// switch is on. Runs once per connection, before the first sample (host software in a NIC).
    pub fn handshake(&mut self, syn_stt: Option<u32>, grant_shift: Option<u8>) {
        if let (true, Some(s)) = (self.p.hs_min, syn_stt) {
            // A SYN crosses each hop faster than a full DATA packet (store and forward:
            // ~1.2 us per hop at 10 Gbit/s), so the seed tolerates t_low of such bias; any
            // smaller data sample replaces it as the windowed minimum.
            let s = s.wrapping_add(self.p.t_low);
            self.init = true;
            self.stt_old = s;
            self.min_cur = s;
            self.min_prev = s;
            self.d = 0;
            self.count = 0;
            self.seeded = true;
        }
        if let (true, Some(g)) = (self.p.grant, grant_shift) {
            let cap = self.p.rate_max >> g.min(31);
            self.rate = self.rate.min(cap);
            self.clamp();
        }
    }

    /// Delivery floor bookkeeping: `acked` bytes acknowledged at `now` (counted per window of
    /// 2^dr_shift ns; a window that ends latches its rate, a skipped window means none).
    pub fn delivered_bytes(&mut self, now: u64, acked: u32) {
        if self.p.dr_shift == 0 {
            return;
        }
        let w = now >> self.p.dr_shift;
        if w != self.dr_win {
            let rate = if w == self.dr_win + 1 {
                u64::from(self.dr_acc) << (RATE_FRAC_BITS - u32::from(self.p.dr_shift))
            } else {
                0
            };
            self.delivered = rate.min(u64::from(self.p.rate_max)) as u32;
            self.dr_win = w;
            self.dr_acc = 0;
        }
        self.dr_acc = self.dr_acc.saturating_add(acked);
    }

    /// A retransmission timeout: halve.
    pub fn timeout(&mut self) {
        self.rate -= self.rate >> 1;
        self.branch = Branch::Timeout;
        self.clamp();
    }
    // END UPDATE PATH
}

impl Controller for Stride {
    fn on_ack(&mut self, now: u64, sample: &AckSample) {
        self.delivered_bytes(now, sample.acked);
        self.on_sample(sample.stt);
    }
    fn on_nack(&mut self, _now: u64) {
        self.nack();
    }
    fn on_timeout(&mut self, _now: u64) {
        self.timeout();
    }
    fn on_handshake(&mut self, _now: u64, syn_stt: Option<u32>, grant_shift: Option<u8>) {
        self.handshake(syn_stt, grant_shift);
    }
    fn rate(&self) -> u32 {
        self.rate
    }
    fn trace_branch(&self) -> Option<&'static str> {
        Some(self.branch.name())
    }
}

/// Parameter names of [`StrideParams`] settable by name, in order.
const STRIDE_KEYS: &[&str] = &[
    "alpha_shift",
    "beta",
    "wbeta",
    "t_low",
    "t_high",
    "md_shift",
    "norm_shift",
    "rate_min",
    "rate_max",
    "rate_init",
    "min_window",
    "grant",
    "hs_min",
    "hai_after",
    "step_shift",
    "first_md_shift",
    "nack_gate",
    "gate_high",
    "grad_dead",
    "cut_floor",
    "dr_shift",
];

// By hand rather than `factory_params!`: the name follows the switches (every mechanism off
// is the paper's Algorithm 1, `stride-paper`), and the switches are booleans.
impl ControllerFactory for StrideParams {
    fn name(&self) -> &'static str {
        if self.is_paper() {
            "stride-paper"
        } else {
            "stride"
        }
    }
    fn build(&self, _now: u64) -> Box<dyn Controller> {
        Box::new(Stride::new(*self))
    }
    fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        StrideParams::validate(self)
    }
    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "alpha_shift" => self.alpha_shift = parse_param(key, value)?,
            "beta" => self.beta = parse_param(key, value)?,
            "wbeta" => self.wbeta = parse_param(key, value)?,
            "t_low" => self.t_low = parse_param(key, value)?,
            "t_high" => self.t_high = parse_param(key, value)?,
            "md_shift" => self.md_shift = parse_param(key, value)?,
            "norm_shift" => self.norm_shift = parse_param(key, value)?,
            "rate_min" => self.rate_min = parse_param(key, value)?,
            "rate_max" => self.rate_max = parse_param(key, value)?,
            "rate_init" => self.rate_init = parse_param(key, value)?,
            "min_window" => self.min_window = parse_param(key, value)?,
            "grant" => self.grant = parse_switch(key, value)?,
            "hs_min" => self.hs_min = parse_switch(key, value)?,
            "hai_after" => self.hai_after = parse_param(key, value)?,
            "step_shift" => self.step_shift = parse_param(key, value)?,
            "first_md_shift" => self.first_md_shift = parse_param(key, value)?,
            "nack_gate" => self.nack_gate = parse_switch(key, value)?,
            "gate_high" => self.gate_high = parse_switch(key, value)?,
            "grad_dead" => self.grad_dead = parse_param(key, value)?,
            "cut_floor" => self.cut_floor = parse_param(key, value)?,
            "dr_shift" => self.dr_shift = parse_param(key, value)?,
            _ => {
                return Err(format!(
                    "{key}: not a parameter of {}; it has: {}",
                    self.name(),
                    STRIDE_KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }
    fn params(&self) -> Vec<(&'static str, String)> {
        let p = self;
        let v = [
            p.alpha_shift.to_string(),
            p.beta.to_string(),
            p.wbeta.to_string(),
            p.t_low.to_string(),
            p.t_high.to_string(),
            p.md_shift.to_string(),
            p.norm_shift.to_string(),
            p.rate_min.to_string(),
            p.rate_max.to_string(),
            p.rate_init.to_string(),
            p.min_window.to_string(),
            p.grant.to_string(),
            p.hs_min.to_string(),
            p.hai_after.to_string(),
            p.step_shift.to_string(),
            p.first_md_shift.to_string(),
            p.nack_gate.to_string(),
            p.gate_high.to_string(),
            p.grad_dead.to_string(),
            p.cut_floor.to_string(),
            p.dr_shift.to_string(),
        ];
        STRIDE_KEYS.iter().copied().zip(v).collect()
    }
    fn clone_box(&self) -> Box<dyn ControllerFactory> {
        Box::new(*self)
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Parses a mechanism switch: `true`/`false`, `on`/`off` or `1`/`0`.
pub fn parse_switch(key: &str, value: &str) -> Result<bool, String> {
    match value.trim() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(format!(
            "{key}: cannot read {value:?} as a switch (true/false, on/off, 1/0)"
        )),
    }
}

/// A controller that never changes its rate (a controller-less sender pinned at a rate).
#[derive(Clone, Copy, Debug)]
pub struct FixedRate(pub u32);

impl Controller for FixedRate {
    fn on_ack(&mut self, _: u64, _: &AckSample) {}
    fn on_nack(&mut self, _: u64) {}
    fn on_timeout(&mut self, _: u64) {}
    fn rate(&self) -> u32 {
        self.0
    }
}

/// Parameters of [`FixedRate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedParams {
    /// The rate (rate units).
    pub rate: u32,
}

impl FixedParams {
    /// The rate must be positive.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.rate == 0 {
            return Err(("rate", "a fixed rate must be positive"));
        }
        Ok(())
    }
}

factory_params!(FixedParams, "fixed", |p, now| FixedRate(p.rate), [rate]);

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> StrideParams {
        StrideParams::hand_checked()
    }

    #[test]
    fn first_sample_is_low_branch() {
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        assert_eq!(c.branch(), Branch::Low);
        assert_eq!(c.rate(), 80_100);
        assert_eq!(c.gradient(), 0);
        assert_eq!(c.stt_min(), 50_000);
    }

    #[test]
    fn high_branch_cuts_by_one_eighth() {
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        c.on_sample(60_000); // qd = 10_000 >= t_high
        assert_eq!(c.branch(), Branch::High);
        // 80_100 - (80_100 >> 3) = 80_100 - 10_012 = 70_088
        assert_eq!(c.rate(), 70_088);
        // d = 0 + ((10_000 - 0) >> 2) = 2_500
        assert_eq!(c.gradient(), 2_500);
    }

    #[test]
    fn gradient_decrease_uses_leading_one() {
        let mut c = Stride::new(params());
        c.on_sample(50_000); // rate 80_100
        c.on_sample(55_000); // qd 5_000 in band; d = 5_000 >> 2 = 1_250 > 0
        assert_eq!(c.gradient(), 1_250);
        // p = floor(log2 1250) = 10 >= norm_shift 10 -> sh = 1 -> halve
        assert_eq!(c.branch(), Branch::GradDec);
        assert_eq!(c.rate(), 80_100 - 40_050);
    }

    #[test]
    fn gradient_decrease_small_gradient() {
        let mut p = params();
        p.norm_shift = 20;
        let mut c = Stride::new(p);
        c.on_sample(50_000); // 80_100
        c.on_sample(52_000); // d = 2_000 >> 2 = 500; p = 8; sh = 12
        assert_eq!(c.gradient(), 500);
        assert_eq!(c.rate(), 80_100 - (80_100 >> 12));
        assert_eq!(c.branch(), Branch::GradDec);
    }

    #[test]
    fn gradient_dead_band_counts_a_small_gradient_as_zero() {
        // d = 1_250 after the second sample (see gradient_decrease_uses_leading_one).
        let run = |dead: u32| {
            let mut p = params();
            p.grad_dead = dead;
            let mut c = Stride::new(p);
            c.on_sample(50_000); // 80_100
            c.on_sample(55_000);
            (c.branch(), c.rate())
        };
        assert_eq!(run(0), (Branch::GradDec, 80_100 - 40_050));
        assert_eq!(run(1_251), (Branch::GradInc, 80_100 + 500));
        // The band is open at its top: d = grad_dead cuts.
        assert_eq!(run(1_250), (Branch::GradDec, 80_100 - 40_050));
    }

    #[test]
    fn cut_floor_holds_the_rate_under_a_small_queue() {
        // qd = 5_000 ns, between t_low (1_000) and t_high (10_000), gradient positive.
        let run = |floor: u32| {
            let mut p = params();
            p.cut_floor = floor;
            let mut c = Stride::new(p);
            c.on_sample(50_000);
            c.on_sample(55_000);
            (c.branch(), c.rate())
        };
        assert_eq!(run(0), (Branch::GradDec, 40_050));
        assert_eq!(run(5_001), (Branch::GradHold, 80_100));
        assert_eq!(run(5_000), (Branch::GradDec, 40_050));
        assert_eq!(Branch::GradHold.name(), "grad_hold");
    }

    #[test]
    fn delivery_floor_bounds_the_gradient_cut() {
        let run = |dr: u8, second_at: u64| {
            let mut p = params();
            p.dr_shift = dr;
            let mut c = Stride::new(p);
            // 60 bytes acknowledged in the window [0, 1024) ns: 60 / 1024 bytes/ns, i.e.
            // 60 << (20 - 10) = 61_440 rate units once that window has ended.
            c.on_ack(100, &AckSample::stt_only(50_000, 60)); // low: 80_100
            c.on_ack(second_at, &AckSample::stt_only(55_000, 0)); // halves to 40_050
            (c.branch(), c.rate())
        };
        assert_eq!(run(0, 1_100), (Branch::GradDec, 40_050));
        // Floor 61_440 - (61_440 >> 3) = 53_760.
        assert_eq!(run(10, 1_100), (Branch::GradDec, 53_760));
        // A window with no ACK in between: nothing was delivered in the last whole window.
        assert_eq!(run(10, 3_100), (Branch::GradDec, 40_050));
        let mut p = params();
        p.dr_shift = 9;
        assert_eq!(
            p.validate(),
            Err(("dr_shift", "must be 0 (off) or in 10..=20"))
        );
    }

    #[test]
    fn dead_band_cut_floor_and_delivery_floor_are_off_by_default_and_in_the_paper_profile() {
        for p in [
            StrideParams::for_line_rate(rate_from_gbps(10.0)),
            StrideParams::paper(rate_from_gbps(10.0)),
        ] {
            assert_eq!((p.grad_dead, p.cut_floor, p.dr_shift), (0, 0, 0));
        }
        let mut p = StrideParams::paper(rate_from_gbps(10.0));
        p.grad_dead = 1;
        assert!(!p.is_paper());
        assert!(p.without_mechanisms().is_paper());
        let mut c = CcConfig::stride(StrideParams::paper(rate_from_gbps(10.0)));
        c.set("cut_floor", "16000").unwrap();
        c.set("grad_dead", "1024").unwrap();
        c.set("dr_shift", "16").unwrap();
        assert_eq!(c.name(), "stride");
        let q = c.params_ref::<StrideParams>().unwrap();
        assert_eq!((q.grad_dead, q.cut_floor, q.dr_shift), (1024, 16_000, 16));
    }

    #[test]
    fn gradient_decrease_tiny_factor_at_largest_norm() {
        let mut p = params();
        p.norm_shift = 31;
        p.alpha_shift = 0;
        let mut c = Stride::new(p);
        c.on_sample(50_000); // 80_100
        c.on_sample(51_005); // d = 1005, p = 9, sh = 22 -> 80_100 >> 22 = 0
        assert_eq!(c.branch(), Branch::GradDec);
        assert_eq!(c.rate(), 80_100);
    }

    #[test]
    fn gradient_increase_when_falling() {
        let mut c = Stride::new(params());
        c.on_sample(50_000); // 80_100
        c.on_sample(58_000); // qd 8000 band, d = 2000 -> p=10 -> halve: 40_050
        c.on_sample(55_000); // diff -3000, d = 2000 + ((-3000-2000)>>2) = 2000 - 1250 = 750 > 0
        assert_eq!(c.gradient(), 750);
        // p = 9, sh = 1 -> 40_050 - 20_025 = 20_025
        assert_eq!(c.rate(), 20_025);
        c.on_sample(53_000); // diff -2000, d = 750 + ((-2000-750)>>2) = 750 - 688 = 62
        assert_eq!(c.gradient(), 62);
        c.on_sample(52_000); // diff -1000: d = 62 + ((-1062)>>2) = 62 - 266 = -204 ; qd 2000 band
        assert_eq!(c.gradient(), -204);
        assert_eq!(c.branch(), Branch::GradInc);
    }

    #[test]
    fn arithmetic_shift_rounds_towards_negative_infinity() {
        let mut c = Stride::new(params());
        c.on_sample(100);
        c.on_sample(99); // diff -1 -> d = 0 + (-1 >> 2) = -1
        assert_eq!(c.gradient(), -1);
    }

    #[test]
    fn windowed_minimum_rolls_over() {
        let mut c = Stride::new(params()); // window 4
        for s in [10_000u32, 9_000, 12_000] {
            c.on_sample(s);
        }
        assert_eq!(c.stt_min(), 9_000);
        assert_eq!(c.count(), 3);
        c.on_sample(12_500); // count reaches 4: prev = 9000, cur = 12500
        assert_eq!(c.count(), 0);
        assert_eq!(c.min_prev(), 9_000);
        assert_eq!(c.min_cur(), 12_500);
        assert_eq!(c.stt_min(), 9_000);
        for _ in 0..4 {
            c.on_sample(12_500);
        }
        // the 9_000 has aged out after two windows
        assert_eq!(c.stt_min(), 12_500);
    }

    #[test]
    fn stt_wraps_around_2_pow_32() {
        let mut c = Stride::new(params());
        c.on_sample(u32::MAX - 100);
        c.on_sample(200); // +301 ns across the wrap
        assert_eq!(c.gradient(), 301 >> 2);
        assert_eq!(c.stt_min(), u32::MAX - 100);
        assert_eq!(c.queue_delay(200), 301);
        c.on_sample(u32::MAX - 200); // smaller than the min across the wrap
        assert_eq!(c.stt_min(), u32::MAX - 200);
    }

    #[test]
    fn huge_jumps_saturate_the_gradient() {
        let mut p = params();
        p.alpha_shift = 0;
        let mut c = Stride::new(p);
        c.on_sample(0);
        c.on_sample(0x7fff_ffff);
        assert_eq!(c.gradient(), (1 << 30) - 1);
        c.on_sample(0);
        assert_eq!(c.gradient(), -(1 << 30));
    }

    #[test]
    fn rate_clamps_and_saturates() {
        let mut p = params();
        p.beta = u32::MAX;
        p.rate_max = u32::MAX;
        let mut c = Stride::new(p);
        c.on_sample(1);
        assert_eq!(c.rate(), u32::MAX);
        let mut p = params();
        p.rate_min = 75_000;
        let mut c = Stride::new(p);
        c.timeout();
        assert_eq!(c.rate(), 75_000);
        assert_eq!(c.branch(), Branch::Timeout);
        c.nack();
        assert_eq!(c.rate(), 75_000);
        assert_eq!(c.branch(), Branch::Nack);
    }

    #[test]
    fn validate_names_the_field() {
        let mut p = params();
        p.t_low = 20_000;
        assert_eq!(p.validate().unwrap_err().0, "t_low");
        let mut p = params();
        p.min_window = 0;
        assert_eq!(p.validate().unwrap_err().0, "min_window");
        assert!(params().validate().is_ok());
        assert!(StrideParams::for_line_rate(rate_from_gbps(10.0))
            .validate()
            .is_ok());
    }

    #[test]
    fn update_path_has_no_multiply_or_divide() {
        let src = include_str!("cc.rs");
        let begin = src.find("// BEGIN UPDATE PATH").expect("begin marker");
        let end = src.find("// END UPDATE PATH").expect("end marker");
        assert!(end > begin);
        let mut code_lines = 0;
        for line in src[begin..end].lines().skip(1) {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains('*') && !code.contains('/') && !code.contains('%'),
                "arithmetic beyond shift/add/subtract in the update path: {line}"
            );
            if !code.trim().is_empty() {
                code_lines += 1;
            }
        }
        assert!(
            code_lines > 30,
            "the marked region must hold the update code"
        );
    }

    #[test]
    fn registry_builds_by_name_and_sets_by_name() {
        let line = rate_from_gbps(10.0);
        for e in REGISTRY {
            let c = CcConfig::by_name(e.name, line).unwrap();
            assert_eq!(c.name(), e.name);
            assert!(c.validate().is_ok(), "{} defaults invalid", e.name);
            let ctl = c.build(0);
            assert!(ctl.rate() > 0, "{} starts at rate 0", e.name);
            assert!(!c.params().is_empty());
        }
        assert!(CcConfig::by_name("nosuch", line)
            .unwrap_err()
            .contains("stride"));
        let mut c = CcConfig::by_name("stride", line).unwrap();
        c.set("t_low", "1234").unwrap();
        assert_eq!(c.params_ref::<StrideParams>().unwrap().t_low, 1234);
        assert!(c.set("t_lo", "1").unwrap_err().contains("t_low"));
        assert!(c.set("t_low", "-1").unwrap_err().starts_with("t_low"));
        c.set("t_low", "90000").unwrap();
        assert_eq!(c.validate().unwrap_err().0, "t_low");
        let f = CcConfig::fixed(0);
        assert_eq!(f.validate().unwrap_err().0, "rate");
    }

    #[test]
    fn stride_behind_the_interface_is_algorithm_1() {
        let mut direct = Stride::new(params());
        let mut boxed = CcConfig::stride(params()).build(0);
        for (i, s) in [50_000u32, 55_000, 61_000, 52_000, 51_000]
            .into_iter()
            .enumerate()
        {
            direct.on_sample(s);
            boxed.on_ack(i as u64, &AckSample::stt_only(s, 1440));
            assert_eq!(direct.rate(), boxed.rate());
        }
        direct.nack();
        boxed.on_nack(9);
        assert_eq!(direct.rate(), boxed.rate());
        direct.timeout();
        boxed.on_timeout(10);
        assert_eq!(direct.rate(), boxed.rate());
    }

    #[test]
    fn handshake_hints_apply_only_with_their_switches() {
        let mut p = params();
        p.grant = true;
        p.hs_min = true;
        let mut c = Stride::new(p);
        c.handshake(Some(40_000), Some(5)); // cap 1_000_000 >> 5 = 31_250
        assert_eq!(c.rate(), 31_250);
        assert_eq!(c.stt_min(), 41_000, "the SYN's STT plus t_low");
        c.on_sample(51_000); // qd 10_000 >= t_high against the handshake's minimum
        assert_eq!(c.branch(), Branch::High);
        c.on_sample(40_500); // a data sample below the seed becomes the minimum
        assert_eq!(c.stt_min(), 40_500);
        // A grant above the start rate does not raise it.
        let mut c = Stride::new(p);
        c.handshake(None, Some(0));
        assert_eq!(c.rate(), 80_000);
        // Switches off: the paper's controller, whatever the SYN-ACK says.
        let mut c = Stride::new(params());
        assert!(params().is_paper());
        c.handshake(Some(40_000), Some(5));
        assert_eq!(c.rate(), 80_000);
        c.on_sample(52_000);
        assert_eq!(c.branch(), Branch::Low);
        assert!(!StrideParams::for_line_rate(1 << 20).is_paper());
        assert!(StrideParams::paper(1 << 20).is_paper());
    }

    #[test]
    fn hyper_active_increase_doubles_the_step_after_a_run_of_low_samples() {
        let mut p = params();
        p.hai_after = 2;
        let mut c = Stride::new(p);
        let mut steps = Vec::new();
        for _ in 0..7 {
            let r = c.rate();
            c.on_sample(50_000);
            assert_eq!(c.branch(), Branch::Low);
            steps.push(c.rate() - r);
        }
        assert_eq!(steps, [100, 100, 200, 400, 800, 1_600, 1_600]);
        c.on_sample(70_000); // high: the run ends
        c.on_sample(50_000);
        let r = c.rate();
        c.on_sample(50_000);
        assert_eq!(c.rate() - r, 100, "a new run starts at beta");
        // Off (0): beta every time, as the paper.
        let mut c = Stride::new(params());
        for _ in 0..7 {
            c.on_sample(50_000);
        }
        assert_eq!(c.rate(), 80_000 + 700);
    }

    #[test]
    fn steps_scale_with_the_rate() {
        let mut p = params();
        p.step_shift = 10; // 80_000 >> 10 = 78 < beta 100
        p.alpha_shift = 0; // d = the last difference
        let mut c = Stride::new(p);
        c.on_sample(50_000);
        assert_eq!(c.rate(), 80_078);
        c.on_sample(54_000); // band, d = 4_000 >= 2^norm_shift: halve
        assert_eq!(c.rate(), 40_039);
        c.on_sample(53_000); // band, d = -1_000: grad_inc, wbeta 500 capped at 40_039 >> 10
        assert_eq!(c.branch(), Branch::GradInc);
        assert_eq!(c.rate(), 40_039 + 39);
        // Saturating hyper-active step.
        let mut p = params();
        p.beta = u32::MAX >> 1;
        p.rate_max = u32::MAX;
        p.hai_after = 1;
        let mut c = Stride::new(p);
        c.on_sample(1);
        c.on_sample(1);
        assert_eq!(c.rate(), u32::MAX);
    }

    #[test]
    fn first_sample_after_the_seed_cuts_harder() {
        let mut p = params();
        p.hs_min = true;
        p.first_md_shift = 1;
        let mut c = Stride::new(p);
        c.handshake(Some(40_000), None); // seed 41_000
        c.on_sample(51_000); // qd 10_000 >= t_high, first sample: halve
        assert_eq!((c.branch(), c.rate()), (Branch::High, 40_000));
        c.on_sample(61_000); // later samples: 1/8
        assert_eq!(c.rate(), 35_000);
        // Without a seed the switch does nothing.
        let mut c = Stride::new(p);
        c.on_sample(41_000);
        c.on_sample(51_000);
        assert_eq!(c.rate(), 80_100 - (80_100 >> 3));
    }

    #[test]
    fn nack_gate_cuts_only_behind_a_queue() {
        let mut p = params();
        p.nack_gate = true;
        let mut c = Stride::new(p);
        c.nack(); // no sample yet: cut as §8.4
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, 70_000));
        c.on_sample(50_000); // qd 0: low, +100
        c.nack(); // last sample showed no queue: held
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, 70_100));
        c.on_sample(50_999); // qd 999 < t_low: still held
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, 70_200));
        c.on_sample(51_000); // qd = t_low (band): the NACK cuts
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // Off: every NACK cuts.
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        c.nack();
        assert_eq!(
            (c.branch(), c.rate()),
            (Branch::Nack, 80_100 - (80_100 >> 3))
        );
    }

    #[test]
    fn gate_high_holds_nacks_below_t_high() {
        let mut p = params();
        p.nack_gate = true;
        p.gate_high = true;
        let mut c = Stride::new(p);
        c.on_sample(50_000);
        c.on_sample(55_000); // qd 5_000: between t_low and t_high
        let r = c.rate();
        c.nack(); // held: below t_high
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, r));
        c.on_sample(60_000); // qd = t_high: the NACK cuts
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // The same samples with the gate at t_low: the first NACK cuts.
        p.gate_high = false;
        let mut c = Stride::new(p);
        c.on_sample(50_000);
        c.on_sample(55_000);
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // Not a mechanism of the paper's profile.
        p.gate_high = true;
        assert!(!p.is_paper());
        assert!(p.without_mechanisms().is_paper() && !p.without_mechanisms().gate_high);
    }

    #[test]
    fn profiles_are_named_by_their_switches() {
        let line = rate_from_gbps(10.0);
        let mut c = CcConfig::by_name("stride-paper", line).unwrap();
        assert_eq!(c.name(), "stride-paper");
        c.set("grant", "on").unwrap();
        assert_eq!(c.name(), "stride");
        assert!(c.set("grant", "maybe").unwrap_err().starts_with("grant"));
        assert_eq!(CcConfig::by_name("stride", line).unwrap().name(), "stride");
    }

    #[test]
    fn rate_units() {
        assert_eq!(rate_from_gbps(10.0), 1_310_720);
        assert!((rate_to_gbps(1_310_720) - 10.0).abs() < 1e-9);
    }
}
