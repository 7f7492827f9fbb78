//! `stride-ext`: Algorithm 1 ([`Stride`]) with three per-sample mechanisms that
//! `hw/rtl/stride_cc.v` does not have, kept apart so the default controller matches the RTL
//! branch for branch (spec §8.6). Each changes only the step of a branch the core took:
//!
//! - hyper-active increase (`hai_after`): after that many consecutive `low` samples the
//!   additive step doubles with every further one, up to `beta << 4`;
//! - steps scaled to the rate (`step_shift`): the increase steps are at most
//!   `rate >> step_shift`, so a sender far below its line rate moves in steps sized to what it
//!   gets through;
//! - a faster first reaction (`first_md_shift`): the first sample after a handshake-seeded
//!   minimum (`hs_min`) that is at or above `t_high` cuts `rate >> first_md_shift`.
//!
//! With all three at 0 it is the core controller, event for event.

use super::stride::{Branch, Stride, StrideParams};
use super::{AckSample, Controller};

crate::controller_params! {
    /// Parameters of `stride-ext`: STRIDE's, and the three mechanisms (0: off).
    pub struct StrideExtParams for |_p| "stride-ext", (line)
        extends stride: StrideParams = { StrideParams::for_line_rate(line) } {
        /// Hyper-active increase after this many consecutive low samples (0: off).
        hai_after: u16 [Count, off 0] = 0;
        /// Increase steps at most `rate >> step_shift` (0: off). At most 31.
        step_shift: u8 [Shift, off 0] = 0;
        /// The first high sample after a seeded minimum cuts `rate >> first_md_shift`
        /// (0: off). At most 31.
        first_md_shift: u8 [Shift, off 0] = 0;
    }
    build: |p, _now| StrideExt::new(p)
}

impl StrideExtParams {
    /// Checks ranges; returns the first bad field and why.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        self.stride.check()?;
        if self.step_shift > 31 {
            return Err(("step_shift", "must be at most 31"));
        }
        if self.first_md_shift > 31 {
            return Err(("first_md_shift", "must be at most 31"));
        }
        Ok(())
    }
}

/// Algorithm 1 with the mechanisms of [`StrideExtParams`].
#[derive(Clone, Debug)]
pub struct StrideExt {
    core: Stride,
    x: StrideExtParams,
    /// Consecutive low samples.
    low_run: u16,
    /// The handshake seeded the minimum and no sample has come since.
    seeded: bool,
}

impl StrideExt {
    /// A controller with these parameters (panics on parameters that fail the check).
    pub fn new(x: StrideExtParams) -> Self {
        if let Err((f, why)) = x.check() {
            panic!("invalid stride-ext parameter {f}: {why}");
        }
        StrideExt {
            core: Stride::new(x.stride),
            x,
            low_run: 0,
            seeded: false,
        }
    }

    /// The core controller's state.
    pub fn core(&self) -> &Stride {
        &self.core
    }

    /// The step `inc`, at most `rate >> step_shift`.
    fn scaled(&self, inc: u32, rate: u32) -> u32 {
        if self.x.step_shift != 0 && (rate >> self.x.step_shift) < inc {
            rate >> self.x.step_shift
        } else {
            inc
        }
    }

    /// One STT sample without a clock (the competitive mode stays off).
    pub fn on_sample(&mut self, s: u32) {
        self.on_sample_at(0, s, 0);
    }

    /// One STT sample at `now` with the RTT sample `rtt`: the core's update, then the step of
    /// the branch it took replaced.
    pub fn on_sample_at(&mut self, now: u64, s: u32, rtt: u64) {
        let before = self.core.algorithm_rate();
        let first = self.seeded;
        self.seeded = false;
        self.core.on_sample_at(now, s, rtt);
        let p = self.x.stride;
        match self.core.branch() {
            Branch::Low => {
                self.low_run = self.low_run.saturating_add(1);
                let mut inc = self.scaled(p.beta, before);
                if self.x.hai_after != 0 && self.low_run > self.x.hai_after {
                    // The step doubles per further low sample, at most x16.
                    let k = u32::from((self.low_run - self.x.hai_after).min(4));
                    inc = if inc > (u32::MAX >> k) {
                        u32::MAX
                    } else {
                        inc << k
                    };
                }
                self.core.set_rate(before.saturating_add(inc));
            }
            Branch::High => {
                self.low_run = 0;
                if first && self.x.first_md_shift != 0 {
                    self.core
                        .set_rate(before - (before >> self.x.first_md_shift));
                }
            }
            Branch::GradInc => {
                self.low_run = 0;
                self.core
                    .set_rate(before.saturating_add(self.scaled(p.wbeta, before)));
            }
            _ => self.low_run = 0,
        }
    }
}

impl Controller for StrideExt {
    fn on_ack(&mut self, now: u64, sample: &AckSample) {
        self.on_sample_at(now, sample.stt, sample.rtt);
    }
    fn on_nack(&mut self, now: u64) {
        self.core.nack_at(now);
    }
    fn on_timeout(&mut self, _now: u64) {
        self.core.timeout();
    }
    fn on_handshake(&mut self, _now: u64, syn_stt: Option<u32>, grant_shift: Option<u8>) {
        self.core.handshake(syn_stt, grant_shift);
        self.seeded = self.x.stride.hs_min && syn_stt.is_some();
    }
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        self.core.sent(bytes);
    }
    fn rate(&self) -> u32 {
        Controller::rate(&self.core)
    }
    fn trace_branch(&self) -> Option<&'static str> {
        Some(self.core.branch().name())
    }
    fn mode_stats(&self) -> Option<super::ModeStats> {
        Controller::mode_stats(&self.core)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-checked parameters with every mechanism off.
    fn params() -> StrideExtParams {
        StrideExtParams {
            stride: StrideParams::hand_checked(),
            ..StrideExtParams::for_line_rate(1_000_000)
        }
    }

    fn new(p: StrideExtParams) -> StrideExt {
        StrideExt::new(p)
    }

    impl StrideExt {
        fn branch(&self) -> Branch {
            self.core.branch()
        }
        fn handshake(&mut self, syn_stt: Option<u32>, grant: Option<u8>) {
            self.on_handshake(0, syn_stt, grant);
        }
    }

    #[test]
    fn hyper_active_increase_doubles_the_step_after_a_run_of_low_samples() {
        let mut p = params();
        p.hai_after = 2;
        let mut c = new(p);
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
        let mut c = new(params());
        for _ in 0..7 {
            c.on_sample(50_000);
        }
        assert_eq!(c.rate(), 80_000 + 700);
    }

    #[test]
    fn steps_scale_with_the_rate() {
        let mut p = params();
        p.step_shift = 10; // 80_000 >> 10 = 78 < beta 100
        p.stride.alpha_shift = 0; // d = the last difference
        let mut c = new(p);
        c.on_sample(50_000);
        assert_eq!(c.rate(), 80_078);
        c.on_sample(54_000); // band, d = 4_000 >= 2^norm_shift: halve
        assert_eq!(c.rate(), 40_039);
        c.on_sample(53_000); // band, d = -1_000: grad_inc, wbeta 500 capped at 40_039 >> 10
        assert_eq!(c.branch(), Branch::GradInc);
        assert_eq!(c.rate(), 40_039 + 39);
        // Saturating hyper-active step.
        let mut p = params();
        p.stride.beta = u32::MAX >> 1;
        p.stride.rate_max = u32::MAX;
        p.hai_after = 1;
        let mut c = new(p);
        c.on_sample(1);
        c.on_sample(1);
        assert_eq!(c.rate(), u32::MAX);
    }

    #[test]
    fn first_sample_after_the_seed_cuts_harder() {
        let mut p = params();
        p.stride.hs_min = true;
        p.first_md_shift = 1;
        let mut c = new(p);
        c.handshake(Some(40_000), None); // seed 41_000
        c.on_sample(51_000); // qd 10_000 >= t_high, first sample: halve
        assert_eq!((c.branch(), c.rate()), (Branch::High, 40_000));
        c.on_sample(61_000); // later samples: 1/8
        assert_eq!(c.rate(), 35_000);
        // Without a seed the switch does nothing.
        let mut c = new(p);
        c.on_sample(41_000);
        c.on_sample(51_000);
        assert_eq!(c.rate(), 80_100 - (80_100 >> 3));
    }
}
