//! QCN reaction point (IEEE 802.1Qau), as the NetFPGA QCN NIC of seed 004
//! (`/work/shared/seeds/004_*`: Kabbani, Prabhakar, Yasuda, "QCN Hardware Evaluation",
//! compliant with QCN pseudo-code v2.3) with its "QCN Parameters / NIC" and every item of its
//! "Functionality / QCN NIC" list that concerns rate control.
//!
//! - **Cut.** A feedback frame with quantised |Fb| (1..=63) cuts the current rate,
//!   `CR -= CR·Gd·|Fb|` (not below `MIN_RATE`), and restarts the timer, the byte counter and
//!   both stage counts (seed 004, "Pausing Details": every Fb resets timer, timer_scount,
//!   tx_bcount and si_count and decreases crate).
//! - **Extra fast recovery.** The cut sets the target `TR = CR` (the rate it found) only if
//!   the byte counter has ended a cycle since the previous cut; a cut that comes sooner keeps
//!   the target, so the rate recovers towards the rate before the earlier cut.
//! - **Cycles.** The byte counter ends a cycle after `BC_LIMIT` bytes, counted as frames on
//!   the wire (`frame_overhead` added to each payload), the timer after `TIMER_PERIOD`; each
//!   is halved once its counter has ended more than `FAST_RECOVERY_THRESHOLD` cycles
//!   ("150K/75K byte counter stretching", "timer counter stretching"), and each is drawn with
//!   30 % randomness ("byte counter jitter", "timer counter jitter").
//! - **Self-increase**, at the end of each cycle, after the counter's stage has counted it:
//!   fast recovery while neither stage exceeds the threshold; active increase `TR += AI_INC`
//!   once one does; hyper-active increase once both do, `TR += HAI_INC·(min(stages) − F)`, a
//!   step that grows with the cycles since the last cut. Then `CR = (CR + TR)/2`.
//! - **Target-rate reduction.** On the first cycle of either counter after a cut, a target
//!   above `10·CR` becomes `TR/8` instead of that cycle's increase.
//! - **Release.** When `CR` reaches the line the rate limiter is released (no timer, no
//!   byte counting) until the next feedback frame.
//!
//! | parameter | seed 004 / pseudo-code | here | source |
//! |---|---|---|---|
//! | FAST_RECOVERY_THRESHOLD | 5 | `fr_threshold` = 5 | seed 004, "QCN Parameters" |
//! | AI_INC | 0.5 Mbit/s | `ai_inc` | seed 004 |
//! | HAI_INC | 5 Mbit/s, times the cycles past F | `hai_inc` | seed 004; step: (P), (N) |
//! | BC_LIMIT | 150 KB, 75 KB after F, 30 % randomness | `bc_limit`, `jitter_pct` = 30 | seed 004 |
//! | bytes counted | frames on the wire | `frame_overhead` = 98 B | (P), (N) line 307 |
//! | TIMER_PERIOD | 25 ms, 12.5 ms after F, 30 % randomness | `timer`, `jitter_pct` | seed 004 |
//! | MIN_RATE | 0.5 Mbit/s | `rate_min` | seed 004 |
//! | GD | 1/128 | `gd_shift` = 7 | seed 004 |
//! | target-rate reduction | TR > 10·CR: TR/8 | `trr_ratio` = 10, `trr_shift` = 3 | (N) |
//! | line rate | CR's start and ceiling | `rate_max` | |
//!
//! Sources of the rules beyond seed 004's lists (the v2.3 pseudo-code itself was not at hand):
//! (P) "802.1Qau QCN 筆記" (summerr0007.github.io, `_posts/2024-01-28-qcn.md`, section
//! "self_increase"), a reading of the QCN pseudo-code: each frame sent takes its size off
//! the byte counter, the three phases by stage against the threshold, the hyper-active step
//! `R_HAI·(min(si_count, timer_scount) − threshold)`, the halved periods past the threshold,
//! the release at the maximum rate. (N) the ns-3 QCN reaction point kept in DCQCN's
//! simulator (bobzhuyb/ns3-rdma, `src/point-to-point/model/qbb-net-device.cc` at c414c6b):
//! the byte counter takes whole packets (line 307), `rpr_hyper_increase` (line 1353: the
//! same growing step, its stages counted from one lower), `AdjustRates` (line 1361:
//! target-rate reduction), `rpr_cnm_received` (line 1380, default branch: the target is set
//! only after a byte-counter cycle);
//! htsim's QCN (nets-cs-pub-ro/NDP, `sim/qcn.cpp`, `QcnReactor::onFeedback`) keeps the target
//! the same way. Both halve a counter's period from the (F+2)-th cycle after a cut: (P) once
//! its stage exceeds the threshold, (N) counting one lower; so here the first cycle that ends
//! outside fast recovery still has the full length. The congestion point (Q_EQ = 33 KB,
//! W = 2, 6-bit Fb) is the switch's.

use super::{rate_from_gbps, AckSample, Controller};

/// Bytes a frame on the wire carries besides a STRIDE DATA packet's payload: the STRIDE
/// header, UDP (8), IPv4 (20), the Ethernet header and FCS (18), the preamble and the
/// inter-frame gap (20). The default of [`QcnParams::frame_overhead`].
pub const FRAME_OVERHEAD: u32 = crate::wire::HEADER_LEN as u32 + 8 + 20 + 18 + 20;

/// The registry's fit: the byte counter counts frames as the harness puts them on the wire.
pub fn fit(c: &mut super::CcConfig, f: &super::Fabric) {
    if let Some(p) = c.params_mut::<QcnParams>() {
        p.frame_overhead = f.frame_overhead;
    }
}

crate::controller_params! {
    /// QCN reaction point parameters (see the module table).
    pub struct QcnParams for |_p| "qcn", (line) {
        /// Cycles of each counter that end fast recovery.
        fr_threshold: u32 [Count] = 5;
        /// Active increase step (rate units).
        ai_inc: u32 [Rate] = rate_from_gbps(0.0005).max(1);
        /// Hyper-active increase step (rate units).
        hai_inc: u32 [Rate] = rate_from_gbps(0.005).max(1);
        /// Bytes per byte-counter cycle in fast recovery (half after), counted as frames on the
        /// wire, the way the NIC's rate limiter sees them.
        bc_limit: u64 [Bytes] = 150_000;
        /// Bytes the byte counter adds to each DATA packet's payload to count its frame on the
        /// wire (the controller is told payload bytes).
        frame_overhead: u32 [Bytes] = FRAME_OVERHEAD;
        /// Timer cycle in fast recovery (ns; half after).
        timer: u64 [Nanos, was "timer_ns"] = 25_000_000;
        /// Randomness of both cycles: each is drawn uniformly within ± jitter_pct/2 %.
        jitter_pct: u32 [Percent] = 30;
        /// Decrease gain Gd = 2^-gd_shift.
        gd_shift: u8 [Shift] = 7;
        /// Target-rate reduction: on the first cycle of either counter after a cut, a target
        /// more than `trr_ratio` times the current rate is cut to `TR >> trr_shift` (instead of
        /// that cycle's increase).
        trr_ratio: u32 [Count] = 10;
        /// See `trr_ratio` (0: no reduction).
        trr_shift: u8 [Shift] = 3;
        /// Lowest rate.
        rate_min: u32 [Rate] = rate_from_gbps(0.0005).min(line).max(1);
        /// Line rate: the start and the ceiling.
        rate_max: u32 [Rate] = line;
    }
    build: |p, now| Qcn::new(p, now ^ 0x9e37_79b9_7f4a_7c15)
}

impl QcnParams {
    /// Checks ranges.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.bc_limit < 2 {
            return Err(("bc_limit", "must be at least 2"));
        }
        if self.timer < 2 {
            return Err(("timer", "must be at least 2 ns"));
        }
        if self.jitter_pct > 100 {
            return Err(("jitter_pct", "must be at most 100"));
        }
        if self.gd_shift == 0 || self.gd_shift > 20 {
            return Err(("gd_shift", "must be in 1..=20"));
        }
        if self.trr_ratio == 0 {
            return Err(("trr_ratio", "must be at least 1"));
        }
        if self.trr_shift > 16 {
            return Err(("trr_shift", "must be at most 16"));
        }
        if self.rate_min == 0 || self.rate_min > self.rate_max {
            return Err(("rate_min", "must be positive and at most rate_max"));
        }
        Ok(())
    }
}

/// A QCN reaction point (rate limiter state).
#[derive(Clone, Debug)]
pub struct Qcn {
    p: QcnParams,
    cr: u64,
    tr: u64,
    /// Byte-counter cycles ended since the last cut (the pseudo-code's `si_count`).
    bc_stage: u32,
    /// Timer cycles ended since the last cut (`timer_scount`).
    timer_stage: u32,
    bytes: u64,
    bytes_limit: u64,
    timer_at: Option<u64>,
    rng: u64,
}

impl Qcn {
    /// A reaction point at line rate (no feedback yet: counters off).
    pub fn new(p: QcnParams, seed: u64) -> Self {
        Qcn {
            p,
            cr: u64::from(p.rate_max),
            tr: u64::from(p.rate_max),
            bc_stage: 0,
            timer_stage: 0,
            bytes: 0,
            bytes_limit: p.bc_limit,
            timer_at: None,
            rng: seed | 1,
        }
    }

    /// Target rate TR.
    pub fn target(&self) -> u64 {
        self.tr
    }

    /// `x` with the configured randomness (xorshift; deterministic per seed).
    fn jitter(&mut self, x: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let span = x * u64::from(self.p.jitter_pct) / 100;
        if span == 0 {
            return x;
        }
        x - span / 2 + self.rng % (span + 1)
    }

    /// The next byte-counter cycle: `bc_limit` until the counter has ended more than
    /// `fr_threshold` cycles, half after (the "150K/75K stretching"): the first cycle that
    /// ends outside fast recovery still has the full length.
    fn next_bytes_limit(&mut self) -> u64 {
        let base = if self.bc_stage <= self.p.fr_threshold {
            self.p.bc_limit
        } else {
            self.p.bc_limit / 2
        };
        self.jitter(base)
    }

    /// The next timer expiry: `timer` until the timer has ended more than `fr_threshold`
    /// cycles, half after (timer stretching), like the byte counter.
    fn next_timer(&mut self, now: u64) -> Option<u64> {
        let base = if self.timer_stage <= self.p.fr_threshold {
            self.p.timer
        } else {
            self.p.timer / 2
        };
        Some(now + self.jitter(base))
    }

    /// A feedback frame with quantised |Fb| (0..=63): `CR -= CR·Gd·|Fb|`, both counters and
    /// their stages restart.
    pub fn feedback(&mut self, now: u64, fb: u8) {
        let fb = u64::from(fb.min(63));
        if fb == 0 {
            return;
        }
        // Extra fast recovery: the target becomes the current rate only if the byte counter
        // has ended a cycle since the last cut. A cut that comes sooner keeps the target
        // (the rate before the earlier cut), so the rate recovers towards that.
        if self.bc_stage > 0 {
            self.tr = self.cr;
        }
        self.cr -= (self.cr * fb) >> self.p.gd_shift;
        self.cr = self.cr.max(u64::from(self.p.rate_min));
        self.bc_stage = 0;
        self.timer_stage = 0;
        self.bytes = 0;
        self.bytes_limit = self.next_bytes_limit();
        self.timer_at = self.next_timer(now);
    }

    /// The self-increase at the end of a byte-counter or timer cycle, after that counter's
    /// stage has counted it. Fast recovery while neither counter has ended more than
    /// `fr_threshold` cycles; active increase (`TR += ai_inc`) once one has; hyper-active
    /// increase once both have, by `hai_inc` times the cycles the slower counter has ended
    /// past the threshold, so the step grows the longer no cut comes. Then `CR = (CR + TR)/2`.
    fn self_increase(&mut self) {
        let f = self.p.fr_threshold;
        let (b, t) = (self.bc_stage, self.timer_stage);
        let inc = if b > f && t > f {
            u64::from(self.p.hai_inc) * u64::from(b.min(t) - f)
        } else if b > f || t > f {
            u64::from(self.p.ai_inc)
        } else {
            0
        };
        let max = u64::from(self.p.rate_max);
        if (b == 1 || t == 1) && self.tr > u64::from(self.p.trr_ratio) * self.cr {
            // Target-rate reduction: a target that extra fast recovery kept while repeated
            // cuts took the rate far below it is cut, not recovered to.
            self.tr >>= self.p.trr_shift;
        } else {
            self.tr = (self.tr + inc).min(max);
        }
        self.cr = (self.cr + self.tr).div_ceil(2).min(max);
    }

    fn recovered(&self) -> bool {
        self.cr >= u64::from(self.p.rate_max)
    }
}

impl Controller for Qcn {
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        if self.timer_at.is_none() {
            return;
        }
        self.bytes += u64::from(bytes) + u64::from(self.p.frame_overhead);
        if self.bytes >= self.bytes_limit {
            self.bytes = 0;
            self.bc_stage = self.bc_stage.saturating_add(1);
            self.bytes_limit = self.next_bytes_limit();
            self.self_increase();
            if self.recovered() {
                // Back at the line: the rate limiter is released, whichever counter took it
                // there (the next feedback frame starts it again).
                self.timer_at = None;
            }
        }
    }
    fn on_ack(&mut self, _now: u64, _s: &AckSample) {}
    fn on_nack(&mut self, _now: u64) {}
    fn on_timeout(&mut self, _now: u64) {}
    fn on_qcn_feedback(&mut self, now: u64, fb: u8) {
        self.feedback(now, fb);
    }
    fn timer(&self) -> Option<u64> {
        self.timer_at
    }
    fn on_timer(&mut self, now: u64) {
        if self.timer_at.is_some_and(|t| now >= t) {
            self.timer_stage = self.timer_stage.saturating_add(1);
            self.self_increase();
            self.timer_at = if self.recovered() {
                None
            } else {
                self.next_timer(now)
            };
        }
    }
    fn rate(&self) -> u32 {
        self.cr as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_cuts_by_gd_fb_and_recovers_in_fast_recovery_cycles() {
        let line = rate_from_gbps(1.0);
        let mut p = QcnParams::for_line_rate(line);
        p.jitter_pct = 0;
        let mut c = Qcn::new(p, 1);
        c.on_qcn_feedback(0, 63);
        let cut = u64::from(line) - ((u64::from(line) * 63) >> 7);
        assert_eq!(u64::from(c.rate()), cut);
        assert_eq!(c.target(), u64::from(line));
        // Five timer cycles of fast recovery: each halves the distance to the target.
        let mut gaps = vec![u64::from(line) - u64::from(c.rate())];
        for k in 1..=5 {
            c.on_timer(k * p.timer);
            gaps.push(u64::from(line) - u64::from(c.rate()));
        }
        assert_eq!(c.target(), u64::from(line));
        for w in gaps.windows(2) {
            assert!(w[1] <= w[0] / 2 + 1, "{gaps:?}");
        }
        // The hotspot is over: the rate reaches the line and the timer stops.
        while let Some(t) = c.timer() {
            c.on_timer(t);
            assert!(t < 60 * p.timer, "no recovery");
        }
        assert_eq!(c.rate(), line);
    }

    #[test]
    fn active_then_hyper_active_increase_raise_the_target() {
        let line = rate_from_gbps(1.0);
        let mut p = QcnParams::for_line_rate(line);
        p.jitter_pct = 0;
        let mut c = Qcn::new(p, 1);
        // Below the line, so that the target can grow: a cut, a byte-counter cycle, a cut.
        c.on_qcn_feedback(0, 32);
        c.on_sent(0, 150_000);
        c.on_qcn_feedback(1, 32);
        let tr = c.target();
        assert!(tr < u64::from(line));
        for k in 1..=5 {
            c.on_timer(1 + k * p.timer);
        }
        assert_eq!(c.target(), tr, "fast recovery keeps the target");
        c.on_timer(1 + 6 * p.timer); // timer past F, bytes not: active increase
        assert_eq!(c.target(), tr + u64::from(p.ai_inc));
        // Six 150 KB byte-counter cycles (the sixth takes both counters past F: hyper-active
        // increase by one step), then 75 KB cycles.
        for _ in 0..6 {
            c.on_sent(0, 75_000);
            c.on_sent(0, 75_000);
        }
        let before = c.target();
        c.on_sent(0, 75_000);
        assert_eq!(c.target(), before + u64::from(p.hai_inc), "hyper-active");
    }

    /// Seed 004's parameters at 1 Gbit/s without randomness.
    fn params() -> QcnParams {
        let mut p = QcnParams::for_line_rate(rate_from_gbps(1.0));
        p.jitter_pct = 0;
        p
    }

    /// Ends one byte-counter cycle (one packet as large as the cycle).
    fn byte_cycle(c: &mut Qcn) {
        let n = c.bytes_limit as u32;
        c.on_sent(0, n);
    }

    /// Ends one timer cycle; its time.
    fn timer_cycle(c: &mut Qcn) -> u64 {
        let t = c.timer().expect("rate limiter active");
        c.on_timer(t);
        t
    }

    #[test]
    fn hyper_active_step_grows_with_the_cycles_since_the_cut() {
        let p = params();
        let mut c = Qcn::new(p, 1);
        // Below the line, so that the target can grow: a cut, a byte-counter cycle, a cut.
        c.on_qcn_feedback(0, 32);
        byte_cycle(&mut c);
        c.on_qcn_feedback(0, 32);
        // The timer leaves fast recovery first (10 cycles), the byte counter's first 5
        // cycles are active increase, its 6th to 9th hyper-active: min(6..=9, 10) - 5 steps.
        for _ in 0..10 {
            timer_cycle(&mut c);
        }
        for _ in 0..5 {
            byte_cycle(&mut c);
        }
        let mut steps = Vec::new();
        for _ in 0..4 {
            let before = c.target();
            byte_cycle(&mut c);
            steps.push(c.target() - before);
        }
        let h = u64::from(p.hai_inc);
        assert_eq!(steps, [h, 2 * h, 3 * h, 4 * h]);
        // The slower counter bounds the step: the timer's 11th cycle steps by
        // min(9, 11) - 5 = 4, the byte counter's 10th by min(10, 11) - 5 = 5.
        let before = c.target();
        timer_cycle(&mut c);
        assert_eq!(c.target() - before, 4 * h);
        let before = c.target();
        byte_cycle(&mut c);
        assert_eq!(c.target() - before, 5 * h);
    }

    #[test]
    fn extra_fast_recovery_keeps_the_target_until_a_byte_counter_cycle() {
        let p = params();
        let line = u64::from(p.rate_max);
        let mut c = Qcn::new(p, 1);
        c.on_qcn_feedback(0, 32);
        // A second cut before any byte-counter cycle: the target stays at the rate before
        // the first (the line), the rate falls again.
        c.on_qcn_feedback(1, 32);
        assert_eq!(c.target(), line);
        assert_eq!(u64::from(c.rate()), line * 3 / 4 * 3 / 4);
        // A timer cycle is not a byte-counter cycle: the target is still kept.
        let t = timer_cycle(&mut c);
        c.on_qcn_feedback(t, 32);
        assert_eq!(c.target(), line);
        // After a byte-counter cycle a cut sets the target to the rate it finds.
        byte_cycle(&mut c);
        let cr = u64::from(c.rate());
        c.on_qcn_feedback(t + 1, 8);
        assert_eq!(c.target(), cr);
        assert!(cr < line);
    }

    #[test]
    fn target_far_above_the_rate_is_cut_to_an_eighth() {
        let p = params();
        let line = u64::from(p.rate_max);
        let mut c = Qcn::new(p, 1);
        // Four cuts by 63/128 without a byte-counter cycle: extra fast recovery keeps the
        // target at the line while the rate falls to ~7 % of it.
        for k in 0..4 {
            c.on_qcn_feedback(k, 63);
        }
        let cr = u64::from(c.rate());
        assert_eq!(c.target(), line);
        assert!(line > 10 * cr);
        // The first cycle after the cut reduces the target to an eighth, and fast recovery
        // moves the rate half way to it.
        byte_cycle(&mut c);
        assert_eq!(c.target(), line >> 3);
        assert_eq!(u64::from(c.rate()), (cr + (line >> 3)).div_ceil(2));
        // Only the first cycle of a counter does: the second leaves the target.
        byte_cycle(&mut c);
        assert_eq!(c.target(), line >> 3);
        // A target within 10 times the rate is not reduced on a first cycle.
        c.on_qcn_feedback(10, 63);
        let tr = c.target();
        assert!(tr <= 10 * u64::from(c.rate()));
        byte_cycle(&mut c);
        assert_eq!(c.target(), tr);
    }

    #[test]
    fn byte_counter_counts_frames_on_the_wire() {
        let p = params();
        assert_eq!(
            p.frame_overhead, 98,
            "32 B header + UDP, IPv4, Ethernet, preamble, gap"
        );
        let mut c = Qcn::new(p, 1);
        c.on_qcn_feedback(0, 32);
        let cut = c.rate();
        // 1440 B payloads are 1538 B frames: 98 of them end the first 150 KB cycle (by
        // payload it would take 105).
        let mut n = 0u64;
        while c.rate() == cut {
            c.on_sent(0, 1440);
            n += 1;
            assert!(n < 1000, "no byte-counter cycle");
        }
        assert_eq!(n, p.bc_limit.div_ceil(1440 + u64::from(p.frame_overhead)));
        assert_eq!(n, 98);
    }

    #[test]
    fn rate_limiter_released_at_line_rate_by_the_byte_counter() {
        let p = params();
        let mut c = Qcn::new(p, 1);
        c.on_qcn_feedback(0, 1);
        let mut n = 0;
        while c.rate() < p.rate_max {
            byte_cycle(&mut c);
            n += 1;
            assert!(n < 100, "no recovery");
        }
        // No timer left and nothing counted: the flow is not rate limited.
        assert_eq!(c.timer(), None);
        c.on_sent(0, 1_000_000);
        assert_eq!((c.rate(), c.bytes), (p.rate_max, 0));
    }

    #[test]
    fn counters_halve_their_period_after_the_first_cycle_outside_fast_recovery() {
        let p = params();
        let mut c = Qcn::new(p, 1);
        c.on_qcn_feedback(0, 32);
        // Six full periods (five of fast recovery, the first active-increase one), then half.
        let mut periods = Vec::new();
        let mut last = 0;
        for _ in 0..8 {
            let t = timer_cycle(&mut c);
            periods.push(t - last);
            last = t;
        }
        let (full, half) = (p.timer, p.timer / 2);
        assert_eq!(periods, [full, full, full, full, full, full, half, half]);
        let mut limits = Vec::new();
        for _ in 0..8 {
            limits.push(c.bytes_limit);
            byte_cycle(&mut c);
        }
        let (full, half) = (p.bc_limit, p.bc_limit / 2);
        assert_eq!(limits, [full, full, full, full, full, full, half, half]);
    }

    #[test]
    fn jitter_stays_within_its_band() {
        let mut c = Qcn::new(QcnParams::for_line_rate(rate_from_gbps(1.0)), 42);
        for _ in 0..1000 {
            let x = c.jitter(150_000);
            assert!((127_500..=172_500).contains(&x), "{x}");
        }
    }
}
