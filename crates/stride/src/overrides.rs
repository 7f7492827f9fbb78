//! Controller overrides on top of the host profile ([`crate::host_config`]): what `stride send`,
//! `stride perf client` and `stride demo` expose as `--line-rate`, `--t-low`, `--t-high`,
//! `--norm-shift`, `--min-rto`, `--pin-rate`, `--cc` and `--cc-param`, for library users too.
//!
//! ```
//! let o = stride::ControllerOverrides { t_high_ns: Some(200_000), ..Default::default() };
//! let cfg = o.config(1_000_000_000).unwrap();
//! assert_eq!(cfg.min_rto_ns, stride::HOST_MIN_RTO_NS);
//! ```

use stride_proto::cc::{rate_from_gbps, CcConfig, Signals};
use stride_proto::Config;

/// The signals a UDP host delivers to its controller beyond STT samples, NACKs and timeouts:
/// none (it reads no ECN marks from its socket, and no switch sends it INT records or QCN
/// feedback). A controller that needs one is refused.
pub const HOST_SIGNALS: Signals = Signals::NONE;

/// Changes to the host profile; `None` keeps the profile's value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerOverrides {
    /// The sending host's line rate, bit/s: the controller's ceiling (at least 10 Mbit/s).
    pub line_bps: Option<u64>,
    /// T_low, ns of queueing delay.
    pub t_low_ns: Option<u64>,
    /// T_high, ns of queueing delay.
    pub t_high_ns: Option<u64>,
    /// Gradient normaliser shift (0..=31).
    pub norm_shift: Option<u8>,
    /// Floor of the retransmission timeout, ns.
    pub min_rto_ns: Option<u64>,
    /// No congestion control: pace at the line rate (the same as `cc = Some("fixed")`).
    pub pin_rate: bool,
    /// A registered controller by name (`stride_proto::cc::REGISTRY`); `None` keeps the
    /// profile's (`stride`).
    pub cc: Option<String>,
    /// Controller parameters by name, applied last (integers in the controller's units).
    pub cc_params: Vec<(String, String)>,
}

/// Which override was refused and why (`field` is the struct field's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OverrideError {
    /// The refused field of [`ControllerOverrides`].
    pub field: &'static str,
    /// Why.
    pub why: String,
}

impl std::fmt::Display for OverrideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.why)
    }
}
impl std::error::Error for OverrideError {}

impl ControllerOverrides {
    /// The line rate for a sender to `to`: [`Self::line_bps`] when set, else the speed of the
    /// interface that carries the route to `to`, else [`crate::DEFAULT_LINE_BPS`] (see
    /// [`crate::line_rate`]; loopback and most virtual NICs report no speed).
    pub fn line_rate(&self, to: std::net::SocketAddr) -> crate::LineRate {
        match self.line_bps {
            Some(bps) => crate::LineRate::given(bps),
            None => crate::LineRate::of_route(to),
        }
    }

    /// The configuration of a sender to `to`: [`Self::config`] at [`Self::line_rate`], which
    /// is returned too (for reports: where the rate came from).
    pub fn config_to(
        &self,
        to: std::net::SocketAddr,
    ) -> Result<(Config, crate::LineRate), OverrideError> {
        let lr = self.line_rate(to);
        Ok((self.config(lr.bps)?, lr))
    }

    /// The host profile for `line_bps` (or [`Self::line_bps`] when set) with these overrides,
    /// validated.
    pub fn config(&self, default_line_bps: u64) -> Result<Config, OverrideError> {
        let line_bps = self.line_bps.unwrap_or(default_line_bps);
        if line_bps < 10_000_000 {
            return Err(OverrideError {
                field: "line_bps",
                why: "must be at least 10 Mbit/s".into(),
            });
        }
        let mut c = crate::host_config(line_bps);
        if let Some(r) = self.min_rto_ns {
            c.min_rto_ns = r;
        }
        let line = rate_from_gbps(line_bps as f64 / 1e9);
        let name = if self.pin_rate {
            Some("fixed")
        } else {
            self.cc.as_deref()
        };
        if let Some(name) = name {
            if name == "stride-paper" {
                // The paper's profile on the host's thresholds: no §8.6 mechanism in the
                // controller or the connection.
                c = c.into_paper();
            } else if name != c.cc.name() {
                c.cc = CcConfig::by_name(name, line)
                    .map_err(|why| OverrideError { field: "cc", why })?;
            }
        }
        let missing = c.cc.needs().missing(HOST_SIGNALS);
        if !missing.is_empty() {
            return Err(OverrideError {
                field: "cc",
                why: format!(
                    "{} needs {}, which a UDP host does not deliver (run it in the simulator: \
                     stride sim)",
                    c.cc.name(),
                    missing.join(" and ")
                ),
            });
        }
        // The threshold overrides are by-name parameters like any other.
        let named = [
            ("t_low_ns", "t_low", self.t_low_ns),
            ("t_high_ns", "t_high", self.t_high_ns),
            ("norm_shift", "norm_shift", self.norm_shift.map(u64::from)),
        ];
        for (field, key, v) in named {
            if let Some(v) = v {
                let v = v.min(i32::MAX as u64);
                c.cc.set(key, &v.to_string())
                    .map_err(|why| OverrideError { field, why })?;
            }
        }
        for (k, v) in &self.cc_params {
            c.cc.set(k.trim(), v.trim()).map_err(|why| OverrideError {
                field: "cc_params",
                why,
            })?;
        }
        if c.cc.name() == "fixed" {
            // Nothing reads delay: a pinned sender sends in batches (fewer system calls).
            c.send_batch_bytes = crate::endpoint::HOST_SEND_BATCH_BYTES;
        }
        c.validate().map_err(|(field, why)| OverrideError {
            field: match field {
                "min_rto_ns" => "min_rto_ns",
                "t_low" => "t_low_ns",
                "t_high" => "t_high_ns",
                other => other,
            },
            why: why.to_string(),
        })?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stride_proto::cc::StrideParams;

    #[test]
    fn a_controller_needing_a_signal_the_host_lacks_is_refused() {
        for (cc, signal) in [("hpcc", "INT"), ("qcn", "QCN"), ("dcqcn", "ECN")] {
            let o = ControllerOverrides {
                cc: Some(cc.into()),
                ..Default::default()
            };
            let e = o.config(1_000_000_000).unwrap_err();
            assert_eq!(e.field, "cc");
            assert!(e.why.contains(cc) && e.why.contains(signal), "{e}");
        }
        for cc in [
            "stride",
            "stride-paper",
            "stride-ext",
            "timely",
            "swift",
            "fixed",
        ] {
            let o = ControllerOverrides {
                cc: Some(cc.into()),
                ..Default::default()
            };
            assert_eq!(o.config(1_000_000_000).unwrap().cc.name(), cc);
        }
    }

    #[test]
    fn overrides_change_only_what_they_name() {
        let base = ControllerOverrides::default()
            .config(1_000_000_000)
            .unwrap();
        let o = ControllerOverrides {
            t_low_ns: Some(90_000),
            ..Default::default()
        };
        let c = o.config(1_000_000_000).unwrap();
        let (mut base, mut c) = (base, c);
        let b = *base.cc.params_mut::<StrideParams>().expect("stride");
        let p = *c.cc.params_mut::<StrideParams>().expect("stride");
        assert_eq!(p.t_low, 90_000);
        assert_eq!(p.t_high, b.t_high);
        assert_eq!(p.norm_shift, b.norm_shift);
        let pinned = ControllerOverrides {
            pin_rate: true,
            ..Default::default()
        };
        assert_eq!(pinned.config(1_000_000_000).unwrap().cc.name(), "fixed");
        // Only the pinned sender batches its sends (nothing reads the delay a batch adds).
        assert_eq!(
            pinned.config(1_000_000_000).unwrap().send_batch_bytes,
            crate::endpoint::HOST_SEND_BATCH_BYTES
        );
        assert_eq!(base.send_batch_bytes, 0);
        let paper = ControllerOverrides {
            cc: Some("stride-paper".into()),
            ..Default::default()
        };
        let mut pc = paper.config(1_000_000_000).unwrap();
        assert_eq!(pc.cc.name(), "stride-paper");
        assert!(!pc.handshake_rtt);
        let pp = *pc.cc.params_mut::<StrideParams>().unwrap();
        assert_eq!(
            (pp.t_low, pp.t_high),
            (b.t_low, b.t_high),
            "host thresholds kept"
        );
        let unknown = ControllerOverrides {
            cc: Some("no-such-cc".into()),
            ..Default::default()
        };
        assert_eq!(unknown.config(1_000_000_000).unwrap_err().field, "cc");
        let slow = ControllerOverrides {
            line_bps: Some(1_000_000),
            ..Default::default()
        };
        assert_eq!(slow.config(1_000_000_000).unwrap_err().field, "line_bps");
    }
}
