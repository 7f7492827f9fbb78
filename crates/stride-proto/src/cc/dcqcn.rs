//! DCQCN reaction point (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015): a CNP cuts the current rate by α/2 and remembers the target; α decays by
//! (1-g) per quiet `K`; rate increase events come from a timer `T` and a byte counter `B`,
//! giving fast recovery (first F events: `Rc = (Rt + Rc)/2`), additive increase (`Rt += R_AI`)
//! and hyper increase (`Rt += i·R_HAI`, once both counters passed F).
//!
//! | parameter | paper | here |
//! |---|---|---|
//! | g (α gain) | 1/256 | `g_shift` = 8 |
//! | K (α update period) | 55 µs | `alpha_timer_ns` |
//! | T (rate increase timer) | 55 µs | `rate_timer_ns` |
//! | B (byte counter) | 10 MB | `byte_counter` |
//! | F (fast recovery steps) | 5 | `fast_recovery` |
//! | R_AI | 40 Mbit/s | `rate_ai` |
//! | R_HAI | not fixed by the paper; 5 × R_AI here | `rate_hai` |
//! | CNP interval at the notification point (N) | 50 µs | `Config::cnp_interval_ns` |
//!
//! The ECN marking (Kmin/Kmax/Pmax, RED-like) is the switch's; see the simulator's queue
//! disciplines. α is kept in 2^-20 units.

use super::{rate_from_gbps, AckSample, Controller};

const ONE: u64 = 1 << 20;

/// DCQCN reaction point parameters (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcqcnParams {
    /// α gain g = 2^-g_shift.
    pub g_shift: u8,
    /// α decays once per this quiet period (ns).
    pub alpha_timer_ns: u64,
    /// Rate increase timer (ns).
    pub rate_timer_ns: u64,
    /// Rate increase byte counter (bytes sent).
    pub byte_counter: u64,
    /// Fast recovery steps F.
    pub fast_recovery: u32,
    /// Additive increase step (rate units).
    pub rate_ai: u32,
    /// Hyper increase step (rate units).
    pub rate_hai: u32,
    /// Lowest rate.
    pub rate_min: u32,
    /// Line rate: the start and the ceiling.
    pub rate_max: u32,
}

impl DcqcnParams {
    /// The paper's values at line rate `line`.
    pub fn for_line_rate(line: u32) -> Self {
        DcqcnParams {
            g_shift: 8,
            alpha_timer_ns: 55_000,
            rate_timer_ns: 55_000,
            byte_counter: 10_000_000,
            fast_recovery: 5,
            rate_ai: rate_from_gbps(0.04).max(1),
            rate_hai: rate_from_gbps(0.2).max(1),
            rate_min: rate_from_gbps(0.01).min(line).max(1),
            rate_max: line,
        }
    }

    /// Checks ranges.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.g_shift == 0 || self.g_shift > 20 {
            return Err(("g_shift", "must be in 1..=20"));
        }
        if self.alpha_timer_ns == 0 {
            return Err(("alpha_timer_ns", "must be positive"));
        }
        if self.rate_timer_ns == 0 {
            return Err(("rate_timer_ns", "must be positive"));
        }
        if self.byte_counter == 0 {
            return Err(("byte_counter", "must be positive"));
        }
        if self.rate_min == 0 || self.rate_min > self.rate_max {
            return Err(("rate_min", "must be positive and at most rate_max"));
        }
        Ok(())
    }
}

/// A DCQCN reaction point.
#[derive(Clone, Debug)]
pub struct Dcqcn {
    p: DcqcnParams,
    /// Current rate Rc and target rate Rt (rate units).
    rc: u64,
    rt: u64,
    alpha: u64,
    /// Timer and byte-counter events since the last cut.
    t_count: u32,
    bc_count: u32,
    bytes: u64,
    /// Hyper increase multiplier i.
    hai: u64,
    next_rate_timer: Option<u64>,
    next_alpha_timer: Option<u64>,
    cnp_since_alpha: bool,
}

impl Dcqcn {
    /// A reaction point at line rate with α = 1.
    pub fn new(p: DcqcnParams) -> Self {
        Dcqcn {
            p,
            rc: u64::from(p.rate_max),
            rt: u64::from(p.rate_max),
            alpha: ONE,
            t_count: 0,
            bc_count: 0,
            bytes: 0,
            hai: 0,
            next_rate_timer: None,
            next_alpha_timer: None,
            cnp_since_alpha: false,
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

    /// A congestion notification: cut.
    pub fn cnp(&mut self, now: u64) {
        self.rt = self.rc;
        self.rc -= self.rc * self.alpha / (2 * ONE);
        self.alpha = self.alpha - (self.alpha >> self.p.g_shift) + (ONE >> self.p.g_shift);
        self.rc = self.rc.max(u64::from(self.p.rate_min));
        self.t_count = 0;
        self.bc_count = 0;
        self.bytes = 0;
        self.hai = 0;
        self.cnp_since_alpha = true;
        self.next_rate_timer = Some(now + self.p.rate_timer_ns);
        self.next_alpha_timer = Some(now + self.p.alpha_timer_ns);
    }

    /// One increase event; the counters hold the events before this one, so the first F
    /// events are fast recovery.
    fn increase(&mut self) {
        let f = self.p.fast_recovery;
        if self.t_count.max(self.bc_count) < f {
            // fast recovery: towards the target
        } else if self.t_count.min(self.bc_count) > f {
            self.hai += 1;
            self.rt += self.hai * u64::from(self.p.rate_hai);
        } else {
            self.rt += u64::from(self.p.rate_ai);
        }
        let max = u64::from(self.p.rate_max);
        self.rt = self.rt.min(max);
        self.rc = (self.rt + self.rc) / 2;
        if self.rc + 1 >= max {
            self.rc = max;
        }
    }

    fn idle(&self) -> bool {
        self.rc >= u64::from(self.p.rate_max) && self.alpha == 0
    }
}

impl Controller for Dcqcn {
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        if self.next_rate_timer.is_none() {
            return; // at line rate, nothing to recover
        }
        self.bytes += u64::from(bytes);
        if self.bytes >= self.p.byte_counter {
            self.bytes = 0;
            self.increase();
            self.bc_count += 1;
        }
    }
    fn on_ack(&mut self, _now: u64, _s: &AckSample) {}
    fn on_nack(&mut self, now: u64) {
        // RoCE's go-back-N after a loss: treated as one notification.
        self.cnp(now);
    }
    fn on_timeout(&mut self, now: u64) {
        self.cnp(now);
    }
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
            if !self.cnp_since_alpha {
                self.alpha -= self.alpha >> self.p.g_shift;
                if self.alpha < 1 << self.p.g_shift {
                    self.alpha = 0;
                }
            }
            self.cnp_since_alpha = false;
            self.next_alpha_timer = (self.alpha > 0).then_some(now + self.p.alpha_timer_ns);
        }
        if self.next_rate_timer.is_some_and(|t| now >= t) {
            self.increase();
            self.t_count += 1;
            self.next_rate_timer =
                (self.rc < u64::from(self.p.rate_max)).then_some(now + self.p.rate_timer_ns);
        }
        if self.idle() {
            self.next_rate_timer = None;
            self.next_alpha_timer = None;
        }
    }
    fn rate(&self) -> u32 {
        self.rc as u32
    }
}

crate::factory_params!(
    DcqcnParams,
    "dcqcn",
    |p, now| Dcqcn::new(p),
    [
        g_shift,
        alpha_timer_ns,
        rate_timer_ns,
        byte_counter,
        fast_recovery,
        rate_ai,
        rate_hai,
        rate_min,
        rate_max
    ]
);

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
    fn first_cnp_halves_and_alpha_follows_g() {
        let line = rate_from_gbps(40.0);
        let mut c = Dcqcn::new(DcqcnParams::for_line_rate(line));
        c.on_cnp(0);
        assert_eq!(u64::from(c.rate()), u64::from(line) / 2);
        assert_eq!(c.target(), u64::from(line));
        // alpha = (1 - 1/256) * 1 + 1/256 = 1
        assert_eq!(c.alpha(), ONE);
        let r = c.rate();
        c.on_cnp(1);
        assert_eq!(c.rate(), r / 2);
    }

    #[test]
    fn recovers_fast_then_additively_then_hyper_to_line_rate() {
        let line = rate_from_gbps(40.0);
        let p = DcqcnParams::for_line_rate(line);
        let mut c = Dcqcn::new(p);
        c.on_cnp(0);
        c.on_cnp(1);
        let target = c.target();
        // Fast recovery: F timer events halve the distance to the unchanged target.
        let mut gaps = vec![];
        for k in 1..=5u64 {
            run_timers(&mut c, 1 + k * p.rate_timer_ns);
            gaps.push(target - u64::from(c.rate()));
        }
        assert_eq!(c.target(), target, "fast recovery keeps the target");
        for w in gaps.windows(2) {
            assert!(w[1] <= w[0] / 2 + 1, "{gaps:?}");
        }
        // Then the target itself grows (additive by the timer alone) ...
        run_timers(&mut c, 1 + 6 * p.rate_timer_ns);
        assert_eq!(c.target(), target + u64::from(p.rate_ai));
        // ... hyper increase once the byte counter also passed F, back to line rate, quiet.
        for _ in 0..6 * (p.byte_counter / 1440 + 1) {
            c.on_sent(0, 1440);
        }
        run_timers(&mut c, 1 + 1_000 * p.rate_timer_ns);
        assert_eq!(c.rate(), line);
        run_timers(&mut c, 10_000_000_000);
        assert!(c.timer().is_none(), "a recovered sender keeps no timer");
        assert_eq!(c.alpha(), 0);
    }
}
