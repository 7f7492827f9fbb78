//! Sender-side transport options shared by `send`, `perf client` and `demo`: the controller's
//! line rate and thresholds, and the retransmission timeout floor.

use crate::units::{parse_duration_ns, parse_rate};
use clap::Args;

/// Options of the sending side's controller (defaults: [`stride::host_config`]).
#[derive(Args, Debug, Clone)]
pub struct ControlArgs {
    /// Line rate of the sending host: the controller's ceiling (it starts at a quarter)
    /// [default: the speed the kernel reports for the interface of the route to the peer,
    /// else 10gbit (loopback and most virtual NICs report none; veth reports 10gbit); for
    /// `demo`, the relay's --rate].
    #[arg(long, value_name = "R", value_parser = parse_rate)]
    pub line_rate: Option<u64>,
    /// Controller's T_low: queueing delay (STT above its minimum) under which the rate climbs
    /// by line/64 per ACK [default: 60us, the host profile's `stride::HOST_T_LOW_NS`].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub t_low: Option<u64>,
    /// Controller's T_high: queueing delay at or above which the rate drops by 1/8 per ACK
    /// [default: 300us, the host profile's `stride::HOST_T_HIGH_NS`].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub t_high: Option<u64>,
    /// Controller's gradient normaliser: between T_low and T_high a rising (smoothed) STT
    /// gradient of 2^(N-1) ns or more per sample halves the rate, and each halving of the
    /// gradient halves the cut (0..=31) [default: 19, the host profile's `stride::HOST_NORM_SHIFT`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=31))]
    pub norm_shift: Option<u8>,
    /// Lower bound of the retransmission timeout [default: 10ms, the host profile's
    /// `stride::HOST_MIN_RTO_NS`].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub min_rto: Option<u64>,
    /// No congestion control: pace at the line rate whatever the path does (what a sender
    /// without a controller does; for comparisons). The same as `--cc fixed`.
    #[arg(long, conflicts_with_all = ["t_low", "t_high", "norm_shift", "cc"])]
    pub pin_rate: bool,
    /// Congestion controller by its registered name (`stride`, `stride-paper`, `stride-ext`,
    /// `fixed`, `timely`, `swift`; those that need switch signals, `dcqcn`, `qcn`, `hpcc`, run
    /// only in the simulator; docs/controllers.md) [default: stride].
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// A controller parameter by name, repeatable: `--cc-param t_low=20us`, `beta=156mbit`,
    /// `nack_gate=off` (in the unit grammar, or a whole number in the parameter's unit; an
    /// unknown name lists the known ones; every parameter: docs/controllers.md).
    #[arg(long = "cc-param", value_name = "KEY=VALUE")]
    pub cc_param: Vec<String>,
    /// Loss recovery: `selective` (offered in the handshake; missing ranges resent alone) or
    /// `go-back-n` (the paper's: everything from the first missing byte) [default: selective].
    #[arg(long, value_name = "MODE")]
    pub recovery: Option<stride::proto::Recovery>,
    /// Path MTU in bytes, or `route`: each datagram carries as much payload as fits (e.g.
    /// 9000 for jumbo frames). Always lowered to the MTU of this host's route to the peer
    /// (also when an ICMP message lowers it during a connection: nothing is fragmented), so
    /// `route` (the same as 65536) means "as large as the route allows", as TCP sizes its
    /// segments: on loopback (MTU 65536) that is 64 KiB datagrams, which move about twice the
    /// bytes of 1500-byte ones and so are not the default. The receiver needs no setting
    /// [default: 1500 or the route's MTU if smaller; 1440 bytes of payload].
    #[arg(long, value_name = "BYTES|route", value_parser = parse_mtu)]
    pub mtu: Option<u32>,
}

/// `--mtu`: 68..=65536 bytes, or `route` (65536: the route's MTU, whatever it is).
fn parse_mtu(s: &str) -> Result<u32, String> {
    if s.eq_ignore_ascii_case("route") {
        return Ok(65_536);
    }
    match s.parse::<u32>() {
        Ok(v) if (68..=65_536).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?}: expected a number of bytes from 68 to 65536, or `route`"
        )),
    }
}

impl ControlArgs {
    /// With kernel TCP (`perf client --tcp`) only `--pin-rate --line-rate R` applies: the
    /// kernel paces the socket at R (returned in bytes per second); without `--pin-rate`
    /// nothing is paced. Any controller option is refused: TCP runs its own.
    pub fn tcp_pacing(&self) -> anyhow::Result<Option<u64>> {
        let stride_only = [
            (self.t_low.is_some(), "--t-low"),
            (self.t_high.is_some(), "--t-high"),
            (self.norm_shift.is_some(), "--norm-shift"),
            (self.min_rto.is_some(), "--min-rto"),
            (self.cc.is_some(), "--cc"),
            (!self.cc_param.is_empty(), "--cc-param"),
            (self.recovery.is_some(), "--recovery"),
            (self.mtu.is_some(), "--mtu"),
        ];
        if let Some((_, flag)) = stride_only.iter().find(|(set, _)| *set) {
            anyhow::bail!("{flag} is a STRIDE option; kernel TCP (--tcp) runs its own controller");
        }
        match (self.pin_rate, self.line_rate) {
            (true, Some(bps)) => Ok(Some(bps / 8)),
            (true, None) => anyhow::bail!("--tcp --pin-rate needs --line-rate (the pacing rate)"),
            (false, Some(_)) => {
                anyhow::bail!("--line-rate with --tcp paces only with --pin-rate")
            }
            (false, None) => Ok(None),
        }
    }

    /// The protocol configuration these options describe, for a path to `to`, and its line
    /// rate: `--line-rate`, else the speed of the route's interface, else 10 Gbit/s
    /// ([`stride::ControllerOverrides::line_rate`]).
    pub fn config(
        &self,
        to: std::net::SocketAddr,
    ) -> anyhow::Result<(stride::Config, stride::LineRate)> {
        let lr = self.overrides()?.line_rate(to);
        Ok((self.config_for(lr.bps, to.is_ipv6())?, lr))
    }

    /// The library's form of the controller options.
    fn overrides(&self) -> anyhow::Result<stride::ControllerOverrides> {
        let mut cc_params = Vec::new();
        for kv in &self.cc_param {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--cc-param {kv:?}: expected KEY=VALUE"))?;
            cc_params.push((k.to_string(), v.to_string()));
        }
        Ok(stride::ControllerOverrides {
            line_bps: self.line_rate,
            t_low_ns: self.t_low,
            t_high_ns: self.t_high,
            norm_shift: self.norm_shift,
            min_rto_ns: self.min_rto,
            pin_rate: self.pin_rate,
            cc: self.cc.clone(),
            cc_params,
        })
    }

    /// The configuration, with `default_line_bps` when `--line-rate` is absent (the demo's
    /// sender runs at its relay's rate unless told otherwise), for an IPv6 path or not.
    pub fn config_for(&self, default_line_bps: u64, ipv6: bool) -> anyhow::Result<stride::Config> {
        let o = self.overrides()?;
        let mut c = o.config(default_line_bps).map_err(|e| {
            let flag = match e.field {
                "line_bps" => "--line-rate",
                "cc" => "--cc",
                "cc_params" => "--cc-param",
                "norm_shift" => "--norm-shift",
                "min_rto_ns" => "--min-rto",
                "t_low_ns" => "--t-low",
                "t_high_ns" => "--t-high",
                other => other,
            };
            // A threshold flag's check names the other threshold by its flag too.
            let why = match e.field {
                "t_low_ns" | "t_high_ns" => e.why.replace("t_high", "--t-high"),
                _ => e.why,
            };
            anyhow::anyhow!("{flag}: {why}")
        })?;
        if let Some(r) = self.recovery {
            c.recovery = r;
        }
        if let Some(mtu) = self.mtu {
            c.max_payload = stride::max_payload_for_mtu(mtu, ipv6).ok_or_else(|| {
                anyhow::anyhow!("--mtu {mtu}: no room for a payload after the headers")
            })?;
        }
        Ok(c)
    }
}

/// Where a sender's line rate came from, for a JSON report: `line_rate_bps`,
/// `line_rate_source` (`flag`, `interface` or `default`) and `line_rate_device` (the route's
/// interface, when one was looked up).
pub fn line_rate_fields(lr: &stride::LineRate, m: &mut serde_json::Map<String, serde_json::Value>) {
    use serde_json::json;
    let kind = match lr.source {
        stride::LineRateSource::Given => "flag",
        ref s => s.kind(),
    };
    m.insert("line_rate_bps".into(), json!(lr.bps));
    m.insert("line_rate_source".into(), json!(kind));
    m.insert("line_rate_device".into(), json!(lr.source.device()));
}

/// One line saying what line rate a sender uses and why.
pub fn line_rate_text(lr: &stride::LineRate) -> String {
    let why = match lr.source {
        stride::LineRateSource::Given => "--line-rate".to_string(),
        ref s => s.to_string(),
    };
    format!("line rate {} ({why})", stride_units::fmt_rate_bps(lr.bps))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        c: ControlArgs,
    }

    fn stride_params(args: &[&str]) -> stride::proto::cc::StrideParams {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        let c = cli.c.config_for(1_000_000_000, false).unwrap();
        *c.cc
            .params_ref::<stride::proto::cc::StrideParams>()
            .expect("the STRIDE controller")
    }

    #[test]
    fn flags_override_the_host_profile_and_nothing_else() {
        let base = stride_params(&[]);
        assert_eq!(base.norm_shift, stride::HOST_NORM_SHIFT);
        let p = stride_params(&["--norm-shift", "15", "--t-low", "90us"]);
        assert_eq!(p.norm_shift, 15);
        assert_eq!(p.t_low, 90_000);
        assert_eq!(p.t_high, base.t_high);
    }

    #[test]
    fn help_shows_the_host_profile_defaults_as_values() {
        use clap::CommandFactory;
        let help = Cli::command().render_long_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for (what, v) in [
            (
                "t_low",
                stride_units::fmt_duration_ns(stride::HOST_T_LOW_NS.into()),
            ),
            (
                "t_high",
                stride_units::fmt_duration_ns(stride::HOST_T_HIGH_NS.into()),
            ),
            (
                "min_rto",
                stride_units::fmt_duration_ns(stride::HOST_MIN_RTO_NS),
            ),
            ("norm_shift", stride::HOST_NORM_SHIFT.to_string()),
        ] {
            assert!(
                help.contains(&format!("[default: {v}, the host profile's")),
                "{what}: the help does not show {v}: {help}"
            );
        }
    }

    #[test]
    fn out_of_range_norm_shift_and_pinned_rate_with_it_are_refused() {
        assert!(Cli::try_parse_from(["t", "--norm-shift", "32"]).is_err());
        assert!(Cli::try_parse_from(["t", "--norm-shift", "15", "--pin-rate"]).is_err());
    }

    fn config(args: &[&str]) -> anyhow::Result<stride::Config> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        cli.c.config_for(1_000_000_000, false)
    }

    #[test]
    fn controllers_are_chosen_and_tuned_by_name() {
        assert_eq!(config(&["--pin-rate"]).unwrap().cc.name(), "fixed");
        assert_eq!(config(&["--cc", "fixed"]).unwrap().cc.name(), "fixed");
        let p = stride_params(&["--cc-param", "beta=7"]);
        assert_eq!(p.beta, 7);
        let e = config(&["--cc", "nosuch"]).unwrap_err().to_string();
        assert!(e.contains("--cc") && e.contains("stride"), "{e}");
        let e = config(&["--cc-param", "nosuch=1"]).unwrap_err().to_string();
        assert!(e.contains("nosuch") && e.contains("t_low"), "{e}");
        let e = config(&["--cc", "fixed", "--t-low", "5us"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--t-low"), "{e}");
    }

    #[test]
    fn mtu_sets_the_payload_per_datagram_for_the_path_family() {
        assert_eq!(config(&[]).unwrap().max_payload, 1440);
        assert_eq!(config(&["--mtu", "9000"]).unwrap().max_payload, 8940);
        let cli = Cli::try_parse_from(["t", "--mtu", "9000"]).unwrap();
        let v6 = cli.c.config_for(1_000_000_000, true).unwrap();
        assert_eq!(v6.max_payload, 8920);
        assert_eq!(config(&["--mtu", "65536"]).unwrap().max_payload, 65_475);
        assert_eq!(config(&["--mtu", "68"]).unwrap().max_payload, 8);
        let cli = Cli::try_parse_from(["t", "--mtu", "68"]).unwrap();
        let e = cli
            .c
            .config_for(1_000_000_000, true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--mtu 68"), "{e}");
        assert!(Cli::try_parse_from(["t", "--mtu", "65537"]).is_err());
        assert!(Cli::try_parse_from(["t", "--mtu", "67"]).is_err());
        assert!(Cli::try_parse_from(["t", "--mtu", "jumbo"]).is_err());
        assert_eq!(config(&["--mtu", "route"]).unwrap().max_payload, 65_475);
        let cli = Cli::try_parse_from(["t", "--mtu", "9000"]).unwrap();
        let e = cli.c.tcp_pacing().unwrap_err().to_string();
        assert!(e.contains("--mtu"), "{e}");
    }
}
