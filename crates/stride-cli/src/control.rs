//! Sender-side transport options shared by `send`, `perf client` and `demo`: the controller's
//! line rate and thresholds, and the retransmission timeout floor.

use crate::units::{parse_duration_ns, parse_rate};
use clap::Args;

/// Options of the sending side's controller (defaults: [`stride::host_config`]).
#[derive(Args, Debug, Clone)]
pub struct ControlArgs {
    /// Line rate of the sending host: the controller's ceiling (it starts at a quarter)
    /// [default: 10gbit; for `demo`, the relay's --rate].
    #[arg(long, value_name = "R", value_parser = parse_rate)]
    pub line_rate: Option<u64>,
    /// Controller's T_low: queueing delay (STT above its minimum) under which the rate climbs
    /// by line/64 per ACK [default: the host profile's, see `stride::host_config`].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub t_low: Option<u64>,
    /// Controller's T_high: queueing delay at or above which the rate drops by 1/8 per ACK
    /// [default: the host profile's].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub t_high: Option<u64>,
    /// Controller's gradient normaliser: between T_low and T_high a rising (smoothed) STT
    /// gradient of 2^(N-1) ns or more per sample halves the rate, and each halving of the
    /// gradient halves the cut (0..=31) [default: the host profile's, 19].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(0..=31))]
    pub norm_shift: Option<u8>,
    /// Lower bound of the retransmission timeout [default: the host profile's].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub min_rto: Option<u64>,
    /// No congestion control: pace at the line rate whatever the path does (what a sender
    /// without a controller does; for comparisons). The same as `--cc fixed`.
    #[arg(long, conflicts_with_all = ["t_low", "t_high", "norm_shift", "cc"])]
    pub pin_rate: bool,
    /// Congestion controller by its registered name (`stride`, `fixed`, `timely`, `dcqcn`,
    /// `swift`, ...; see `stride_proto::cc::REGISTRY`) [default: stride].
    #[arg(long, value_name = "NAME")]
    pub cc: Option<String>,
    /// A controller parameter by name, repeatable: `--cc-param t_low=20000` (integers, in the
    /// controller's units; an unknown name lists the known ones).
    #[arg(long = "cc-param", value_name = "KEY=VALUE")]
    pub cc_param: Vec<String>,
}

impl ControlArgs {
    /// The protocol configuration these options describe.
    pub fn config(&self) -> anyhow::Result<stride::Config> {
        self.config_for(10_000_000_000)
    }

    /// The configuration, with `default_line_bps` when `--line-rate` is absent (the demo's
    /// sender runs at its relay's rate unless told otherwise).
    pub fn config_for(&self, default_line_bps: u64) -> anyhow::Result<stride::Config> {
        use stride::proto::cc::{rate_from_gbps, CcConfig};
        let line_bps = self.line_rate.unwrap_or(default_line_bps);
        if line_bps < 10_000_000 {
            anyhow::bail!("--line-rate must be at least 10 Mbit/s");
        }
        let mut c = stride::host_config(line_bps);
        if let Some(r) = self.min_rto {
            c.min_rto_ns = r;
        }
        let line = rate_from_gbps(line_bps as f64 / 1e9);
        let name = match (&self.cc, self.pin_rate) {
            (_, true) => Some("fixed"),
            (Some(n), false) => Some(n.as_str()),
            (None, false) => None,
        };
        if let Some(name) = name {
            if name != c.cc.name() {
                c.cc = CcConfig::by_name(name, line).map_err(|e| anyhow::anyhow!("--cc: {e}"))?;
            }
        }
        // The threshold flags are by-name parameters like any other.
        let named = [
            ("--t-low", "t_low", self.t_low),
            ("--t-high", "t_high", self.t_high),
            ("--norm-shift", "norm_shift", self.norm_shift.map(u64::from)),
        ];
        for (flag, key, v) in named {
            if let Some(v) = v {
                let v = v.min(i32::MAX as u64);
                c.cc.set(key, &v.to_string())
                    .map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
            }
        }
        for kv in &self.cc_param {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| anyhow::anyhow!("--cc-param {kv:?}: expected KEY=VALUE"))?;
            c.cc.set(k.trim(), v)
                .map_err(|e| anyhow::anyhow!("--cc-param: {e}"))?;
        }
        if let Err((field, why)) = c.validate() {
            let flag = match field {
                "min_rto_ns" => "--min-rto",
                "t_low" => "--t-low",
                "t_high" => "--t-high",
                other => other,
            };
            anyhow::bail!("{flag}: {}", why.replace("t_high", "--t-high"));
        }
        Ok(c)
    }
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
        let c = cli.c.config_for(1_000_000_000).unwrap();
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
    fn out_of_range_norm_shift_and_pinned_rate_with_it_are_refused() {
        assert!(Cli::try_parse_from(["t", "--norm-shift", "32"]).is_err());
        assert!(Cli::try_parse_from(["t", "--norm-shift", "15", "--pin-rate"]).is_err());
    }

    fn config(args: &[&str]) -> anyhow::Result<stride::Config> {
        let cli = Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        cli.c.config_for(1_000_000_000)
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
}
