//! Congestion control: the [`Controller`] trait, the registry of controllers by name
//! ([`REGISTRY`], [`CcConfig`]), STRIDE's Algorithm 1 ([`Stride`]) and a fixed-rate controller
//! ([`FixedRate`]). The baselines live in submodules, one per paper.
//!
//! Rates are `u32` in units of 2^-20 bytes per nanosecond ([`RATE_FRAC_BITS`]); 10 Gbit/s is
//! 1 310 720. The per-sample update of [`Stride`] uses only shifts, adds, subtracts, compares and a
//! leading-one detector: no multiply, no divide (see `docs/spec.md`, section "Rate control").

pub mod compete;
pub mod dcqcn;
pub mod hpcc;
pub mod params;
pub mod qcn;
pub mod stride;
pub mod stride_ext;
pub mod swift;
pub mod timely;

pub use compete::{Mode, ModeStats};
pub use stride::{Branch, Stride, StrideParams};

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
    /// The mode counters of a controller with modes (STRIDE's competitive mode, spec §8.7):
    /// `None` for controllers without modes or with the mode switched off.
    fn mode_stats(&self) -> Option<ModeStats> {
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
    /// Every settable parameter's declaration (name, unit, doc), in the order of `params`.
    fn specs(&self) -> Vec<params::Param>;
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
        match find(name) {
            Some(e) => Ok((e.make)(line)),
            None => Err(format!(
                "unknown controller {name:?}; known: {}",
                names().join(", ")
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
    /// Every parameter's declaration (name, unit, doc).
    pub fn specs(&self) -> Vec<params::Param> {
        self.0.specs()
    }
    /// The signals the controller needs beyond STT, NACKs and timeouts (those of its
    /// registry entry; none for a controller not in the registry).
    pub fn needs(&self) -> Signals {
        find(self.name()).map(|r| r.needs).unwrap_or_default()
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

/// Signals a controller needs beyond what every STRIDE connection delivers (STT samples,
/// NACKs, timeouts). A host that cannot deliver one refuses the controller instead of running
/// it blind (a DCQCN sender that never sees a CNP is a line-rate sender).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// ECN: the hosts send ECN-capable packets and the receiver echoes CE marks as CNPs.
    pub ecn: bool,
    /// INT records stamped by the switches and echoed on ACKs ([`Controller::on_int`]).
    pub int: bool,
    /// QCN feedback frames from the switches' congestion points.
    pub qcn: bool,
}

impl Signals {
    /// No signal beyond STT samples, NACKs and timeouts.
    pub const NONE: Signals = Signals {
        ecn: false,
        int: false,
        qcn: false,
    };

    /// The names of the signals set in `self` and not in `have`.
    pub fn missing(self, have: Signals) -> Vec<&'static str> {
        let mut m = Vec::new();
        for (need, got, name) in [
            (self.ecn, have.ecn, "ECN marks"),
            (self.int, have.int, "INT records"),
            (self.qcn, have.qcn, "QCN feedback"),
        ] {
            if need && !got {
                m.push(name);
            }
        }
        m
    }
}

/// What a harness knows about the network a controller runs in, for the controllers that
/// derive parameters from it ([`Registered::fit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fabric {
    /// The host's line rate (rate units).
    pub line: u32,
    /// The largest base round-trip time of the fabric, ns (a full data packet out, its ACK
    /// back, serialisation included).
    pub base_rtt_ns: u64,
    /// Bytes each data frame carries on the wire around its payload.
    pub frame_overhead: u32,
}

/// One registered controller.
#[derive(Clone, Copy, Debug)]
pub struct Registered {
    /// The name configuration uses (`--cc NAME`, `cc = "NAME"`).
    pub name: &'static str,
    /// One line for help texts.
    pub about: &'static str,
    /// The signals it needs beyond STT, NACKs and timeouts.
    pub needs: Signals,
    /// Designed for an RDMA NIC: a harness runs it with go-back-N recovery and without
    /// STRIDE's receive share, as RoCE NICs (and the baselines' reference simulators) do.
    pub rdma_nic: bool,
    /// Whether lists of "every controller" (`stride sim compare --cc all`) include it: false
    /// for variants of a listed controller and for `fixed`.
    pub listed: bool,
    /// Defaults for a line rate (rate units).
    pub make: fn(u32) -> CcConfig,
    /// Defaults that follow the network, set by a harness that knows it (the simulator):
    /// applied over `make`'s, before the user's own settings.
    pub fit: Option<fn(&mut CcConfig, &Fabric)>,
}

/// Every built-in controller by name. A new algorithm is one module and one line here (or one
/// [`register`] call from outside the crate).
pub static REGISTRY: &[Registered] = &[
    Registered {
        name: "stride",
        about: "STRIDE: Algorithm 1 with the profile mechanisms of spec §8.6 (handshake minimum, NACK gate)",
        needs: Signals::NONE,
        rdma_nic: false,
        listed: true,
        make: |l| CcConfig::stride(StrideParams::for_line_rate(l)),
        fit: None,
    },
    Registered {
        name: "stride-paper",
        about: "STRIDE's Algorithm 1 exactly as the paper (spec §8.4, every mechanism off)",
        needs: Signals::NONE,
        rdma_nic: false,
        listed: true,
        make: |l| CcConfig::stride(StrideParams::paper(l)),
        fit: None,
    },
    Registered {
        name: "stride-ext",
        about: "STRIDE with per-sample mechanisms the RTL lacks (hyper-active increase, rate-scaled steps, first-sample cut)",
        needs: Signals::NONE,
        rdma_nic: false,
        listed: false,
        make: |l| CcConfig::new(stride_ext::StrideExtParams::for_line_rate(l)),
        fit: None,
    },
    Registered {
        name: "fixed",
        about: "no congestion control: a fixed rate (the line rate)",
        needs: Signals::NONE,
        rdma_nic: false,
        listed: false,
        make: CcConfig::fixed,
        fit: None,
    },
    Registered {
        name: "timely",
        about: "TIMELY (Mittal et al. 2015): RTT gradient",
        needs: Signals::NONE,
        rdma_nic: true,
        listed: true,
        make: |l| CcConfig::new(timely::TimelyParams::for_line_rate(l)),
        fit: None,
    },
    Registered {
        name: "dcqcn",
        about: "DCQCN reaction point (Zhu et al. 2015): ECN marks -> CNP",
        needs: Signals { ecn: true, ..Signals::NONE },
        rdma_nic: true,
        listed: true,
        make: |l| CcConfig::new(dcqcn::DcqcnParams::for_line_rate(l)),
        fit: None,
    },
    Registered {
        name: "swift",
        about: "Swift (Kumar et al. 2020): delay target with flow and topology scaling",
        needs: Signals::NONE,
        rdma_nic: true,
        listed: true,
        make: |l| CcConfig::new(swift::SwiftParams::for_line_rate(l)),
        fit: None,
    },
    Registered {
        name: "qcn",
        about: "QCN reaction point (IEEE 802.1Qau, the QCN seed's values): switch feedback frames",
        needs: Signals { qcn: true, ..Signals::NONE },
        rdma_nic: true,
        listed: true,
        make: |l| CcConfig::new(qcn::QcnParams::for_line_rate(l)),
        fit: Some(qcn::fit),
    },
    Registered {
        name: "hpcc",
        about: "HPCC (Li et al. 2019): INT-based window, utilisation target eta",
        needs: Signals { int: true, ..Signals::NONE },
        rdma_nic: true,
        listed: true,
        make: |l| CcConfig::new(hpcc::HpccParams::for_line_rate(l)),
        fit: Some(hpcc::fit),
    },
];

static EXTRA: std::sync::RwLock<Vec<&'static Registered>> = std::sync::RwLock::new(Vec::new());

/// Registers a controller defined outside this crate: from then on it is known by name
/// everywhere the registry is read (`CcConfig::by_name`, `--cc`, scenario `transports`). A
/// name already registered is refused.
pub fn register(r: &'static Registered) -> Result<(), String> {
    if find(r.name).is_some() {
        return Err(format!(
            "a controller named {:?} is already registered",
            r.name
        ));
    }
    EXTRA.write().unwrap_or_else(|e| e.into_inner()).push(r);
    Ok(())
}

/// Every registered controller: the built-in ones, then those added by [`register`].
pub fn registry() -> Vec<&'static Registered> {
    let extra = EXTRA.read().unwrap_or_else(|e| e.into_inner());
    REGISTRY.iter().chain(extra.iter().copied()).collect()
}

/// The registered controller `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    registry().into_iter().find(|r| r.name == name)
}

/// The registered names, in registry order.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|e| e.name).collect()
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

crate::controller_params! {
    /// Parameters of [`FixedRate`].
    pub struct FixedParams for |_p| "fixed", (line) {
        /// The rate.
        rate: u32 [Rate] = line;
    }
    build: |p, _now| FixedRate(p.rate)
}

impl FixedParams {
    /// The rate must be positive.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.rate == 0 {
            return Err(("rate", "a fixed rate must be positive"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
