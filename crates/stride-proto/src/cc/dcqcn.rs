//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015), following the DCQCN first author's public simulator, `bobzhuyb/ns3-rdma`
//! (`src/point-to-point/model/qbb-net-device.cc`, the `rpr_*` functions and `AdjustRates`,
//! with the parameter values of its released `mix/config.txt`):
//!
//! - a CNP sets the target to the current rate (`CLAMP_TARGET_RATE 1`), resets both stage
//!   counters, updates α ← (1 − g)·α + g and then cuts the current rate by α/2 (never below
//!   the minimum rate);
//! - α decays by (1 − g) once per `K` without a CNP (the decay timer restarts at each CNP);
//! - rate increase events come from a timer `T` and a byte counter `B`; each event first
//!   counts itself in its stage counter: while that counter is below `F` the event is fast
//!   recovery (`Rc ← (Rc + Rt)/2`), then additive increase (`Rt += R_AI`), and once both
//!   counters reached `F`, hyper increase (`Rt += R_HAI·(min(stages) − F + 1)`), during which
//!   the timer runs at `T/2` and the byte counter at `B/2`;
//! - target-rate reduction: on the first event after a cut, a target more than ten times the
//!   current rate is divided by 8 instead of increased;
//! - the rate limiter reacts to CNPs only: a loss (RoCE's go-back-N) does not change the rate.
//!
//! Every value and its source is in `docs/baselines.md` ("DCQCN"). α is kept in 2^-20 units.

use super::{rate_from_gbps, AckSample, Controller};

const ONE: u64 = 1 << 20;

crate::controller_params! {
    /// DCQCN reaction point parameters (values and sources: `docs/baselines.md`).
    pub struct DcqcnParams for |_p| "dcqcn", (line) {
        /// α gain g = 2^-g_shift.
        g_shift: u8 [Shift] = 8;
        /// α starts at this value, in 2^-20.
        alpha_init: u32 [Frac2p20] = (ONE / 2) as u32;
        /// α decays once per this quiet period K (ns).
        alpha_timer: u64 [Nanos, was "alpha_timer_ns"] = 55_000;
        /// Rate increase timer T (ns; T/2 in hyper increase).
        rate_timer: u64 [Nanos, was "rate_timer_ns"] = 60_000;
        /// Rate increase byte counter B (bytes sent; B/2 in hyper increase).
        byte_counter: u64 [Bytes] = 300_000_000;
        /// Stage count F that ends fast recovery.
        fast_recovery: u32 [Count] = 5;
        /// Additive increase step R_AI (rate units).
        rate_ai: u32 [Rate] = rate_from_gbps(0.04).max(1);
        /// Hyper increase step R_HAI (rate units), times the stages past F.
        rate_hai: u32 [Rate] = rate_from_gbps(0.2).max(1);
        /// Lowest rate.
        rate_min: u32 [Rate] = rate_from_gbps(0.1).min(line).max(1);
        /// Line rate: the start and the ceiling.
        rate_max: u32 [Rate] = line;
    }
    build: |p, now| Dcqcn::new(p)
}

impl DcqcnParams {
    /// Checks ranges.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.g_shift == 0 || self.g_shift > 20 {
            return Err(("g_shift", "must be in 1..=20"));
        }
        if u64::from(self.alpha_init) > ONE {
            return Err(("alpha_init", "must be at most 2^20 (alpha = 1)"));
        }
        if self.alpha_timer == 0 {
            return Err(("alpha_timer", "must be positive"));
        }
        if self.rate_timer < 2 {
            return Err(("rate_timer", "must be at least 2 ns"));
        }
        if self.byte_counter < 2 {
            return Err(("byte_counter", "must be at least 2"));
        }
        if self.fast_recovery == 0 {
            return Err(("fast_recovery", "must be positive"));
        }
        if self.rate_min == 0 || self.rate_min > self.rate_max {
            return Err(("rate_min", "must be positive and at most rate_max"));
        }
        Ok(())
    }
}

/// Where a reaction point is after its last cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// No CNP yet (or fully recovered): nothing counts.
    Idle,
    FastRecovery,
    Additive,
    Hyper,
}

/// A DCQCN reaction point.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// Current rate Rc and target rate Rt (rate units).
    rc: u64,
    rt: u64,
    alpha: u64,
    stage: Stage,
    /// Timer and byte-counter events since the last cut, this one included once counted.
    time_stage: u32,
    byte_stage: u32,
    /// Bytes left before the byte counter's next event.
    bytes_left: u64,
    next_rate_timer: Option<u64>,
    next_alpha_timer: Option<u64>,
}

impl Dcqcn {
    /// A reaction point at line rate.
    pub fn new(p: DcqcnParams) -> Self {
        Dcqcn {
            p,
            rc: u64::from(p.rate_max),
            rt: u64::from(p.rate_max),
            alpha: u64::from(p.alpha_init),
            stage: Stage::Idle,
            time_stage: 0,
            byte_stage: 0,
            bytes_left: p.byte_counter,
            next_rate_timer: None,
            next_alpha_timer: None,
        }
    }

    /// The congestion estimate α in 2^-20.
    pub fn alpha(&self) -> u64 {
        self.alpha
    }
    /// The target rate Rt.
    pub fn target(&self) -> u64 {
        self.rt
    }

    /// A congestion notification: update α, then cut.
    pub fn cnp(&mut self, now: u64) {
        self.rt = self.rc;
        self.bytes_left = self.p.byte_counter;
        self.time_stage = 0;
        self.byte_stage = 0;
        self.alpha = self.alpha - (self.alpha >> self.p.g_shift) + (ONE >> self.p.g_shift);
        self.rc -= self.rc * self.alpha / (2 * ONE);
        self.rc = self.rc.max(u64::from(self.p.rate_min));
        self.stage = Stage::FastRecovery;
        self.next_rate_timer = Some(now + self.p.rate_timer);
        self.next_alpha_timer = Some(now + self.p.alpha_timer);
    }

    /// Moves the target by `inc` (or reduces it, on the first event after a cut, when it is
    /// more than ten times the current rate) and the current rate halfway to it.
    fn adjust(&mut self, inc: u64) {
        let max = u64::from(self.p.rate_max);
        if (self.byte_stage == 1 || self.time_stage == 1) && self.rt > 10 * self.rc {
            self.rt /= 8;
        } else {
            self.rt = (self.rt + inc).min(max);
        }
        self.rc = ((self.rc + self.rt) / 2).min(max);
        if self.rc + 1 >= max {
            self.rc = max;
        }
    }

    /// Additive increase, or hyper increase once both counters reached F.
    fn active_select(&mut self) {
        let f = self.p.fast_recovery;
        if self.byte_stage < f || self.time_stage < f {
            self.adjust(u64::from(self.p.rate_ai));
            self.stage = Stage::Additive;
        } else {
            self.hyper();
        }
    }

    fn hyper(&mut self) {
        let past = self.byte_stage.min(self.time_stage) + 1 - self.p.fast_recovery;
        self.adjust(u64::from(past) * u64::from(self.p.rate_hai));
        self.stage = Stage::Hyper;
    }

    /// The byte counter's event.
    fn byte_event(&mut self) {
        self.byte_stage += 1;
        self.bytes_left = self.p.byte_counter;
        match self.stage {
            Stage::FastRecovery if self.byte_stage < self.p.fast_recovery => self.adjust(0),
            Stage::FastRecovery => self.active_select(),
            Stage::Additive => {
                self.adjust(u64::from(self.p.rate_ai));
            }
            Stage::Hyper => {
                self.bytes_left = self.p.byte_counter / 2;
                self.hyper();
            }
            Stage::Idle => {}
        }
    }

    /// The rate timer's event; returns the next timer period.
    fn time_event(&mut self) -> u64 {
        self.time_stage += 1;
        match self.stage {
            Stage::FastRecovery if self.time_stage < self.p.fast_recovery => self.adjust(0),
            Stage::FastRecovery | Stage::Additive => self.active_select(),
            Stage::Hyper => {
                self.hyper();
                return self.p.rate_timer / 2;
            }
            Stage::Idle => {}
        }
        self.p.rate_timer
    }
}

impl Controller for Dcqcn {
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        if self.stage == Stage::Idle {
            return;
        }
        // A cycle ends when the counter would go below zero (`txBytes < 0` in the reference).
        match self.bytes_left.checked_sub(u64::from(bytes)) {
            Some(left) => self.bytes_left = left,
            None => self.byte_event(),
        }
    }
    fn on_ack(&mut self, _now: u64, _s: &AckSample) {}
    fn on_nack(&mut self, _now: u64) {}
    fn on_timeout(&mut self, _now: u64) {}
    fn on_cnp(&mut self, now: u64) {
        self.cnp(now);
    }
    fn timer(&self) -> Option<u64> {
        match (self.next_rate_timer, self.next_alpha_timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn on_timer(&mut self, now: u64) {
        if self.next_alpha_timer.is_some_and(|t| now >= t) {
            self.alpha -= self.alpha >> self.p.g_shift;
            if self.alpha < 1 << self.p.g_shift {
                self.alpha = 0;
            }
            self.next_alpha_timer = (self.alpha > 0).then_some(now + self.p.alpha_timer);
        }
        if self.next_rate_timer.is_some_and(|t| now >= t) {
            let period = self.time_event();
            self.next_rate_timer = Some(now + period);
        }
        if self.rc >= u64::from(self.p.rate_max) {
            // Recovered: the counters would only count until the next CNP resets them.
            self.stage = Stage::Idle;
            self.next_rate_timer = None;
        }
    }
    fn rate(&self) -> u32 {
        self.rc as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_timers(c: &mut Dcqcn, until: u64) {
        while let Some(t) = c.timer() {
            if t > until {
                break;
            }
            c.on_timer(t);
        }
    }

    #[test]
    fn a_cnp_updates_alpha_first_then_cuts_by_half_of_it() {
        let line = rate_from_gbps(40.0);
        let p = DcqcnParams::for_line_rate(line);
        let mut c = Dcqcn::new(p);
        c.on_cnp(0);
        // alpha = (1 - 1/256) * 0.5 + 1/256, then Rc = line * (1 - alpha/2)
        let a = (ONE / 2) - ((ONE / 2) >> 8) + (ONE >> 8);
        assert_eq!(c.alpha(), a);
        let l = u64::from(line);
        assert_eq!(u64::from(c.rate()), l - l * a / (2 * ONE));
        assert_eq!(c.target(), l);
        // A second CNP sets the target to the rate it cuts from.
        let r = u64::from(c.rate());
        c.on_cnp(1);
        assert_eq!(c.target(), r);
        assert!(u64::from(c.rate()) < r);
    }

    #[test]
    fn fast_recovery_lasts_f_minus_one_timer_events_then_the_target_grows() {
        let line = rate_from_gbps(40.0);
        let p = DcqcnParams::for_line_rate(line);
        let mut c = Dcqcn::new(p);
        c.on_cnp(0);
        c.on_cnp(1);
        let target = c.target();
        let mut gaps = vec![target - u64::from(c.rate())];
        for k in 1..u64::from(p.fast_recovery) {
            run_timers(&mut c, 1 + k * p.rate_timer);
            gaps.push(target - u64::from(c.rate()));
        }
        assert_eq!(c.target(), target, "fast recovery keeps the target");
        for w in gaps.windows(2) {
            assert!(w[1] <= w[0] / 2 + 1, "{gaps:?}");
        }
        // The F-th timer event is additive increase (the byte counter is still below F).
        run_timers(&mut c, 1 + u64::from(p.fast_recovery) * p.rate_timer);
        assert_eq!(c.target(), target + u64::from(p.rate_ai));
    }

    #[test]
    fn hyper_increase_grows_with_the_smaller_stage_count() {
        let line = rate_from_gbps(40.0);
        let mut p = DcqcnParams::for_line_rate(line);
        p.byte_counter = 1_000_000;
        let mut c = Dcqcn::new(p);
        // Two cuts from line rate: far enough below it that the steps do not saturate.
        c.on_cnp(0);
        c.on_cnp(0);
        c.on_cnp(0);
        let f = p.fast_recovery;
        // A cycle ends only when the counter would go below zero: B bytes exactly do not.
        c.on_sent(0, 1_000_000);
        assert_eq!(c.byte_stage, 0);
        // F byte events and F timer events: the last of them is the first hyper step (x1).
        for _ in 0..f {
            c.on_sent(0, 1_000_001);
        }
        assert_eq!(c.byte_stage, f);
        for k in 1..f as u64 {
            run_timers(&mut c, k * p.rate_timer);
        }
        let before = c.target();
        run_timers(&mut c, u64::from(f) * p.rate_timer);
        assert_eq!(c.stage, Stage::Hyper);
        assert_eq!(c.target(), before + u64::from(p.rate_hai));
        // The timer that entered hyper increase was restarted at T; from then on it runs at
        // T/2. Its next event adds R_HAI x (min(F, F + 1) - F + 1) = 1 x R_HAI: the byte
        // counter's stage is still F.
        let entered = u64::from(f) * p.rate_timer;
        assert_eq!(c.next_rate_timer, Some(entered + p.rate_timer));
        let before = c.target();
        run_timers(&mut c, entered + p.rate_timer);
        assert_eq!(c.target(), before + u64::from(p.rate_hai));
        assert_eq!(
            c.next_rate_timer,
            Some(entered + p.rate_timer + p.rate_timer / 2)
        );
        // ... and a byte event (B/2 in hyper increase) brings min(stages) to F + 1: x2.
        c.on_sent(0, 1_000_001);
        let before = c.target();
        c.on_sent(0, 500_001);
        assert_eq!(c.target(), before + 2 * u64::from(p.rate_hai));
    }

    #[test]
    fn a_far_target_is_reduced_on_the_first_event_after_a_cut() {
        let line = rate_from_gbps(40.0);
        let mut p = DcqcnParams::for_line_rate(line);
        p.alpha_init = ONE as u32;
        let mut c = Dcqcn::new(p);
        // alpha stays ~1: each cut halves; after five the rate is ~1/32 of the line, and the
        // target (the rate before the last cut) ~1/16: not more than ten times. Force it.
        for _ in 0..5 {
            c.on_cnp(0);
        }
        c.rt = 20 * c.rc;
        let rt = c.rt;
        run_timers(&mut c, p.rate_timer);
        assert_eq!(c.target(), rt / 8);
    }

    #[test]
    fn recovers_to_line_rate_then_keeps_no_rate_timer_and_loss_does_not_cut() {
        let line = rate_from_gbps(10.0);
        let p = DcqcnParams::for_line_rate(line);
        let mut c = Dcqcn::new(p);
        c.on_nack(0);
        c.on_timeout(0);
        assert_eq!(c.rate(), line, "a loss is not a congestion notification");
        assert!(c.timer().is_none());
        c.on_cnp(0);
        run_timers(&mut c, 2_000_000_000);
        assert_eq!(c.rate(), line);
        assert!(
            c.timer().is_none(),
            "a recovered, quiet sender keeps no timer"
        );
        assert_eq!(c.alpha(), 0);
    }
}
