//! TIMELY (Mittal et al., "TIMELY: RTT-based Congestion Control for the Datacenter",
//! SIGCOMM 2015): rate control from the RTT gradient, with thresholds `T_low`/`T_high` that
//! bound the gradient's reach, and hyper-active increase after a run of increases.
//!
//! The update follows the TIMELY model of the HPCC authors' simulator
//! (`alibaba-edu/High-Precision-Congestion-Control`, `simulation/src/point-to-point/model/
//! rdma-hw.cc`, `UpdateRateTimely`): every increase, below `T_low` or on a non-positive
//! gradient, counts a stage; the first `hai_after` increases add δ, the later ones `δ_HAI`;
//! any decrease resets the count. A positive gradient g cuts the rate by β·g, down to the
//! minimum rate when β·g ≥ 1. Every value and its source is in `docs/baselines.md` ("TIMELY").
//!
//! One "completion" is one ACK sample (STRIDE acknowledges per 64 KiB segment, the paper's
//! segment size). Integer arithmetic with multiplies and divides: this is a baseline, not the
//! hardware path.

use super::{rate_from_gbps, AckSample, Controller};

crate::controller_params! {
    /// TIMELY's parameters (see the module table).
    pub struct TimelyParams for |_p| "timely", (line) {
        /// EWMA weight of the new RTT difference, in 1/1024.
        alpha_1024: u32 [Frac1024] = 896;
        /// Multiplicative decrease factor β, in 1/1024.
        beta_1024: u32 [Frac1024] = 819;
        /// Additive increase step δ (rate units).
        // 10 and 50 Mbit/s per 10 Gbit/s of line rate
        delta: u32 [Rate] = (line / 1000).max(1);
        /// Hyper-active increase step δ_HAI (rate units).
        delta_hai: u32 [Rate] = 5 * (line / 1000).max(1);
        /// Below this RTT (ns) the rate increases additively whatever the gradient.
        t_low: u32 [Nanos] = 50_000;
        /// Above this RTT (ns) the rate decreases by β(1 - T_high/RTT).
        t_high: u32 [Nanos] = 500_000;
        /// The gradient's normaliser (ns): the fabric's minimum RTT.
        min_rtt: u32 [Nanos] = 20_000;
        /// Consecutive increases after which the step is δ_HAI (hyper-active increase).
        hai_after: u32 [Count] = 5;
        /// Lowest rate.
        rate_min: u32 [Rate] = rate_from_gbps(0.1).min(line).max(1);
        /// Highest rate (the line rate).
        rate_max: u32 [Rate] = line;
        /// Starting rate.
        rate_init: u32 [Rate] = line;
    }
    build: |p, now| Timely::new(p)
}

impl TimelyParams {
    /// Checks ranges.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.alpha_1024 == 0 || self.alpha_1024 > 1024 {
            return Err(("alpha_1024", "must be in 1..=1024"));
        }
        if self.beta_1024 == 0 || self.beta_1024 > 1024 {
            return Err(("beta_1024", "must be in 1..=1024"));
        }
        if self.t_low >= self.t_high {
            return Err(("t_low", "must be below t_high"));
        }
        if self.min_rtt == 0 {
            return Err(("min_rtt", "must be positive"));
        }
        if self.rate_min == 0 || self.rate_min > self.rate_max {
            return Err(("rate_min", "must be positive and at most rate_max"));
        }
        if self.rate_init < self.rate_min || self.rate_init > self.rate_max {
            return Err(("rate_init", "must lie in rate_min..=rate_max"));
        }
        Ok(())
    }
}

/// A TIMELY sender.
#[derive(Clone, Debug)]
pub struct Timely {
    p: TimelyParams,
    rate: u64,
    prev_rtt: Option<u64>,
    /// Smoothed RTT difference (ns, signed).
    rtt_diff: i64,
    /// Increases since the last decrease.
    inc_stage: u32,
}

impl Timely {
    /// A sender with these parameters.
    pub fn new(p: TimelyParams) -> Self {
        Timely {
            p,
            rate: u64::from(p.rate_init),
            prev_rtt: None,
            rtt_diff: 0,
            inc_stage: 0,
        }
    }

    /// The smoothed RTT difference (ns).
    pub fn rtt_diff(&self) -> i64 {
        self.rtt_diff
    }

    fn clamp(&mut self) {
        self.rate = self
            .rate
            .clamp(u64::from(self.p.rate_min), u64::from(self.p.rate_max));
    }

    /// One RTT sample (ns): the paper's Algorithm 1.
    pub fn on_rtt(&mut self, rtt: u64) {
        let p = self.p;
        let Some(prev) = self.prev_rtt.replace(rtt) else {
            return;
        };
        let new_diff = rtt as i64 - prev as i64;
        let a = i64::from(p.alpha_1024);
        self.rtt_diff = ((1024 - a) * self.rtt_diff + a * new_diff) / 1024;
        let cut_1024 = if rtt < u64::from(p.t_low) {
            0
        } else if rtt > u64::from(p.t_high) {
            // rate *= 1 - beta (1 - T_high / rtt)
            u64::from(p.beta_1024) * (rtt - u64::from(p.t_high)) / rtt
        } else if self.rtt_diff <= 0 {
            0
        } else {
            // rate *= max(0, 1 - beta * gradient), gradient = rtt_diff / min_rtt
            (u64::from(p.beta_1024) * self.rtt_diff as u64 / u64::from(p.min_rtt)).min(1024)
        };
        let decrease =
            rtt > u64::from(p.t_high) || (rtt >= u64::from(p.t_low) && self.rtt_diff > 0);
        if decrease {
            self.inc_stage = 0;
            self.rate -= self.rate * cut_1024 / 1024;
        } else {
            let step = if self.inc_stage < p.hai_after {
                p.delta
            } else {
                p.delta_hai
            };
            self.inc_stage += 1;
            self.rate += u64::from(step);
        }
        self.clamp();
    }
}

impl Controller for Timely {
    fn on_ack(&mut self, _now: u64, s: &AckSample) {
        if s.rtt > 0 {
            self.on_rtt(s.rtt);
        }
    }
    fn on_nack(&mut self, _now: u64) {
        // Loss is rare in TIMELY's (PFC) fabrics; treat it like a delay above T_high.
        self.rate -= self.rate * u64::from(self.p.beta_1024) / 2048;
        self.clamp();
    }
    fn on_timeout(&mut self, _now: u64) {
        self.rate /= 2;
        self.clamp();
    }
    fn rate(&self) -> u32 {
        self.rate as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctl() -> Timely {
        let mut p = TimelyParams::for_line_rate(rate_from_gbps(10.0));
        p.rate_init = rate_from_gbps(5.0);
        Timely::new(p)
    }

    #[test]
    fn rate_falls_on_a_rising_gradient_and_rises_on_a_falling_one() {
        let mut c = ctl();
        let r0 = c.rate();
        for rtt in [100_000u64, 110_000, 120_000, 130_000] {
            c.on_rtt(rtt);
        }
        assert!(c.rtt_diff() > 0);
        let r1 = c.rate();
        assert!(
            r1 < r0 * 3 / 4,
            "positive gradient must cut hard: {r0} -> {r1}"
        );
        for rtt in [120_000u64, 110_000, 100_000, 90_000, 80_000, 70_000, 60_000] {
            c.on_rtt(rtt);
        }
        assert!(c.rtt_diff() < 0);
        assert!(c.rate() > r1, "negative gradient must increase");
    }

    #[test]
    fn hyper_active_increase_after_five_increases_of_either_kind() {
        let mut c = ctl();
        c.on_rtt(100_000);
        let mut steps = vec![];
        // Flat gradients, then samples below T_low: all count as increases.
        for rtt in [100_000u64, 100_000, 100_000, 40_000, 40_000, 40_000, 40_000] {
            let r = c.rate();
            c.on_rtt(rtt);
            steps.push(c.rate() - r);
        }
        let (d, h) = (c.p.delta, c.p.delta_hai);
        assert_eq!(h, 5 * d);
        assert_eq!(steps, [d, d, d, d, d, h, h]);
        // A decrease resets the count.
        let r = c.rate();
        c.on_rtt(150_000);
        assert!(c.rate() < r);
        let r = c.rate();
        c.on_rtt(40_000);
        assert_eq!(c.rate() - r, d);
    }

    #[test]
    fn a_steep_gradient_cuts_to_the_minimum_rate() {
        let mut c = ctl();
        c.on_rtt(100_000);
        // rtt_diff 0.875 x 40 us = 35 us against min_rtt 20 us: beta x g = 1.4 > 1
        c.on_rtt(140_000);
        assert_eq!(c.rate(), c.p.rate_min);
    }

    #[test]
    fn thresholds_override_the_gradient() {
        let mut c = ctl();
        c.on_rtt(600_000);
        let r = c.rate();
        c.on_rtt(600_000); // flat gradient, but above T_high: cut by 0.8 * (1 - 500/600)
        let expect = r - r * (819 * 100_000 / 600_000) / 1024;
        assert_eq!(c.rate(), expect);
        let mut c = ctl();
        c.on_rtt(40_000);
        let r = c.rate();
        c.on_rtt(45_000); // rising, but below T_low: additive increase
        assert_eq!(c.rate(), r + c.p.delta);
    }
}
