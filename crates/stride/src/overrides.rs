//! Controller overrides on top of the host profile ([`crate::host_config`]): what `stride send`,
//! `stride perf client` and `stride demo` expose as `--line-rate`, `--t-low`, `--t-high`,
//! `--norm-shift`, `--min-rto` and `--pin-rate`, for library users too.
//!
//! ```
//! let o = stride::ControllerOverrides { t_high_ns: Some(200_000), ..Default::default() };
//! let cfg = o.config(1_000_000_000).unwrap();
//! assert_eq!(cfg.min_rto_ns, stride::HOST_MIN_RTO_NS);
//! ```

use stride_proto::cc::{rate_from_gbps, CcConfig};
use stride_proto::Config;

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
    /// No congestion control: pace at the line rate.
    pub pin_rate: bool,
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
        if let CcConfig::Stride(p) = &mut c.cc {
            if let Some(t) = self.t_low_ns {
                p.t_low = t.min(i32::MAX as u64) as u32;
            }
            if let Some(t) = self.t_high_ns {
                p.t_high = t.min(i32::MAX as u64) as u32;
            }
            if let Some(n) = self.norm_shift {
                p.norm_shift = n;
            }
        }
        if self.pin_rate {
            c.cc = CcConfig::Fixed(rate_from_gbps(line_bps as f64 / 1e9));
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
        match (&base.cc, &c.cc) {
            (CcConfig::Stride(b), CcConfig::Stride(p)) => {
                assert_eq!(p.t_low, 90_000);
                assert_eq!(p.t_high, b.t_high);
                assert_eq!(p.norm_shift, b.norm_shift);
            }
            other => panic!("{other:?}"),
        }
        let slow = ControllerOverrides {
            line_bps: Some(1_000_000),
            ..Default::default()
        };
        assert_eq!(slow.config(1_000_000_000).unwrap_err().field, "line_bps");
    }
}
