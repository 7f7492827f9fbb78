//! The competitive mode of STRIDE's default profile (spec §8.7): a delay-based controller that
//! shares a queue with a loss-based one (TCP cubic, Reno, BBR filling its own model's queue)
//! backs off from a queue the other fills on purpose, and ends at its rate floor. Following
//! Copa's competitive mode (Arun and Balakrishnan, NSDI 2018, §4: switch when the queue never
//! empties over several RTTs although Copa itself backs off), the controller watches whether
//! the queue it keeps cutting for ever drains:
//!
//! - **drained**: a sample less than `t_high >> compete_qd_shift` (half of `t_high`) above the long-horizon
//!   base STT (below). Algorithm 1 cuts on every sample at or above `t_high` and on a rising
//!   gradient below it, so STRIDE flows alone or among themselves let the queue fall below
//!   that now and then; a loss-based flow holds it until its buffer overflows;
//! - **enter** the competitive mode when no sample has been drained for `compete_after` ns and
//!   for at least `compete_samples` samples in a row, and the rate has backed off meanwhile (to
//!   `2^-compete_backoff` of its rate at the last drained sample, or near `rate_min`): a queue
//!   STRIDE keeps itself falls as it cuts;
//! - **compete**: the rate grows as a Reno sender's would (one `2^compete_ai`-byte packet per
//!   RTT per RTT, in shifts: `dt << (20 + ai) >> log2(rtt²)`) and a NACK cuts
//!   `rate >> compete_md` at most once per RTT (TCP's one reaction per loss episode);
//! - **leave** when the queue stays empty (within `t_low` of the smallest STT since the mode
//!   began) for `compete_hold` ns while the rate is held: a loss-based competitor refills a
//!   drained queue, a departed one does not.
//!
//! The base is a minimum of STT over `base_window` ns in two buckets (as §8.4's minimum, in
//! time rather than samples) that turns over only while the queue drains now and then: a
//! standing queue held by a competitor never becomes the base (the windowed minimum of §8.4
//! does, after 256 to 512 samples). With the mode never entered, the controller is §8.4's
//! event for event. Shifts, adds, subtracts and compares only (`tests/update_path.rs`).

use super::stride::StrideParams;

/// Which mode the controller is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Algorithm 1 (§8.4) on the delay signal.
    #[default]
    Delay,
    /// Loss-driven additive increase, multiplicative decrease next to a loss-based competitor.
    Competitive,
}

/// What a sample asks of the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Algorithm 1's update applies.
    Delay,
    /// Competitive mode: add this much to the rate (rate units).
    Increase(u32),
    /// Competitive mode with the queue drained: hold the rate while watching it stay drained.
    Hold,
}

/// Counters of the mode for statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModeStats {
    /// Entries into the competitive mode.
    pub switches: u32,
    /// Time spent in the competitive mode, ns (up to the last event).
    pub competitive_ns: u64,
    /// Whether the controller is in the competitive mode now.
    pub competitive: bool,
}

/// State of the competitive-mode detector and of its loss-driven rate.
#[derive(Clone, Debug, Default)]
pub(crate) struct Compete {
    mode: Mode,
    started: bool,
    base_cur: u32,
    base_prev: u32,
    base_ts: u64,
    /// Last drained sample.
    drain_ts: u64,
    /// Samples since the last drained one.
    undrained: u16,
    /// The rate at the last drained sample (the back-off test's reference).
    drained_rate: u32,
    /// Competitive mode: the queue has been drained since `hold_ts`.
    holding: bool,
    hold_ts: u64,
    /// Competitive mode: the smallest STT since it began (the queue's trough, or the path's
    /// new base when the path changed and no competitor is there).
    floor: u32,
    /// Last cut in the competitive mode.
    cut_ts: u64,
    cut_any: bool,
    /// Time of the last event.
    last_ts: u64,
    /// Latest RTT sample, ns (0: none yet).
    rtt: u64,
    mode_ts: u64,
    switches: u32,
    competitive_ns: u64,
}

/// `(a - b)` on the mod-2^32 clock, read as a signed distance.
#[inline]
fn wdiff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

impl Compete {
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    pub(crate) fn stats(&self) -> ModeStats {
        let open = if self.mode == Mode::Competitive {
            self.last_ts.saturating_sub(self.mode_ts)
        } else {
            0
        };
        ModeStats {
            switches: self.switches,
            competitive_ns: self.competitive_ns.saturating_add(open),
            competitive: self.mode == Mode::Competitive,
        }
    }

    /// The long-horizon base: the smaller of the two buckets.
    pub(crate) fn base(&self) -> u32 {
        if wdiff(self.base_prev, self.base_cur) < 0 {
            self.base_prev
        } else {
            self.base_cur
        }
    }

    /// One STT sample `s` at `now` with the RTT sample `rtt` (0: none), the rate being `rate`.
    pub(crate) fn sample(
        &mut self,
        p: &StrideParams,
        now: u64,
        s: u32,
        rtt: u64,
        rate: u32,
    ) -> Verdict {
        if !self.started {
            self.started = true;
            self.drained_rate = rate;
            self.base_cur = s;
            self.base_prev = s;
            self.base_ts = now;
            self.drain_ts = now;
            self.last_ts = now;
        }
        if rtt != 0 {
            self.rtt = rtt;
        }
        let dt = now.saturating_sub(self.last_ts);
        self.last_ts = now;
        if wdiff(s, self.base_cur) < 0 {
            self.base_cur = s;
        }
        let q = wdiff(s, self.base());
        let drained = q < (p.t_high >> p.compete_qd_shift) as i32;
        if drained {
            self.drain_ts = now;
            self.undrained = 0;
            self.drained_rate = rate;
        } else {
            self.undrained = self.undrained.saturating_add(1);
        }
        let stale = now.saturating_sub(self.drain_ts) >= u64::from(p.compete_after);
        if !stale && now.saturating_sub(self.base_ts) >= u64::from(p.base_window) {
            self.base_prev = self.base_cur;
            self.base_cur = s;
            self.base_ts = now;
        }
        match self.mode {
            Mode::Delay => {
                // Backed off: cut to a share of the rate it had when the queue last drained,
                // or down to (twice) its floor.
                let backed_off = p.compete_backoff == 0
                    || rate <= (self.drained_rate >> p.compete_backoff).max(p.rate_min << 1);
                if !stale || self.undrained < p.compete_samples || !backed_off {
                    return Verdict::Delay;
                }
                self.mode = Mode::Competitive;
                self.mode_ts = now;
                self.floor = s;
                self.switches = self.switches.saturating_add(1);
                self.holding = false;
                Verdict::Increase(self.increase(p, dt))
            }
            Mode::Competitive => self.competitive(p, now, s, dt, rate),
        }
    }

    /// A sample in the competitive mode. A hold starts on an empty queue (within `t_low` of
    /// the mode's floor) and lasts while it stays so and no loss comes: a loss-based
    /// competitor seldom empties the queue and refills it within a few round trips, or keeps
    /// it full and loses STRIDE's packets. (Lasting while the queue stayed within `qd` of the
    /// floor ended the mode beside a sawtooth whose troughs stay within `qd` of each other.) Measured from the floor,
    /// not the base, so that a path whose delay rose (a slower link, a longer route) lets the
    /// mode end; the floor then becomes the base.
    fn competitive(&mut self, p: &StrideParams, now: u64, s: u32, dt: u64, rate: u32) -> Verdict {
        if wdiff(s, self.floor) < 0 {
            self.floor = s;
        }
        let q = wdiff(s, self.floor);
        if q < p.t_low as i32 {
            if !self.holding {
                self.holding = true;
                self.hold_ts = now;
            }
            if now.saturating_sub(self.hold_ts) < u64::from(p.compete_hold) {
                return Verdict::Hold;
            }
            self.mode = Mode::Delay;
            self.holding = false;
            self.competitive_ns = self
                .competitive_ns
                .saturating_add(now.saturating_sub(self.mode_ts));
            self.base_prev = self.floor;
            self.base_cur = self.floor;
            self.base_ts = now;
            self.drain_ts = now;
            self.undrained = 0;
            self.drained_rate = rate;
            return Verdict::Delay;
        }
        self.holding = false;
        Verdict::Increase(self.increase(p, dt))
    }

    /// Reno's growth over `dt` ns (at most `compete_after`): `2^compete_ai` bytes per RTT per
    /// RTT, with the RTT squared read as a power of two from its two leading bits.
    fn increase(&self, p: &StrideParams, dt: u64) -> u32 {
        let rtt = if self.rtt == 0 {
            u64::from(p.t_high).max(1)
        } else {
            self.rtt
        };
        let dt = dt.min(u64::from(p.compete_after)).min(u64::MAX >> 33);
        let k = 63 - rtt.leading_zeros();
        let half = if k == 0 { 0 } else { (rtt >> (k - 1)) & 1 };
        let sh = k + k + half as u32;
        let inc = (dt << (20 + u32::from(p.compete_ai))) >> sh.min(63);
        inc.min(u64::from(u32::MAX)) as u32
    }

    /// A NACK at `now`: in the competitive mode, whether it cuts (the first NACK of a loss
    /// episode, at least one RTT after the last cut).
    pub(crate) fn nack_cuts(&mut self, now: u64) -> bool {
        if self.cut_any && now.saturating_sub(self.cut_ts) < self.rtt {
            return false;
        }
        self.cut_any = true;
        self.cut_ts = now;
        // A loss while holding: the queue is full, not drained.
        self.holding = false;
        if now > self.last_ts {
            self.last_ts = now;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::{Branch, Controller, Stride};

    const MS: u64 = 1_000_000;

    /// The hand-checked parameters (t_low 1 us, t_high 10 us) with the mode on: drained below
    /// 10 us, enter after 1 ms and 4 samples, leave after 2 ms drained, base window 100 ms.
    fn params() -> StrideParams {
        crate::vectors::compete_params()
    }

    /// Samples every `step` ns from `t`, each `s`, until `end`; returns the next time.
    fn feed(c: &mut Stride, mut t: u64, end: u64, step: u64, s: u32, rtt: u64) -> u64 {
        while t < end {
            c.on_sample_at(t, s, rtt);
            t += step;
        }
        t
    }

    /// A loss-based competitor's sawtooth: 20, 25, 30 and 35 us of queue over a 50 us base,
    /// one sample per 100 us, from `t` until `end`; returns the next time.
    fn saw(c: &mut Stride, mut t: u64, end: u64) -> u64 {
        let mut i = 0;
        while t < end {
            c.on_sample_at(t, 70_000 + 5_000 * (i % 4), 65_536);
            t += 100_000;
            i += 1;
        }
        t
    }

    #[test]
    fn a_queue_that_never_drains_switches_to_the_competitive_mode() {
        let mut c = Stride::new(params());
        let t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536); // base 50 us, drained
        assert_eq!(c.mode(), Mode::Delay);
        // 20 us of queue (>= t_high) from now on (Algorithm 1's own minimum, 4 samples here,
        // takes the standing queue for the base after a window); the last drained sample was
        // at 0.9 ms.
        let t = feed(&mut c, t, t + 900_000, 100_000, 70_000, 65_536);
        assert_eq!(c.mode(), Mode::Delay);
        let r = c.rate();
        c.on_sample_at(t, 70_000, 65_536);
        assert_eq!(
            (c.mode(), c.branch()),
            (Mode::Competitive, Branch::CompeteInc)
        );
        // Reno's growth: 1 KiB per RTT per RTT with RTT 2^16 ns: over dt = 100 us,
        // (100_000 << 30) >> 32 = 25_000 rate units.
        assert_eq!(c.rate(), r + 25_000);
        c.on_sample_at(t + 100_000, 80_000, 65_536); // 10 us above the mode's floor
        assert_eq!(c.rate(), r + 50_000);
        let m = c.mode_stats();
        assert_eq!(
            (m.switches, m.competitive_ns, m.competitive),
            (1, 100_000, true)
        );
    }

    #[test]
    fn flows_that_back_off_never_switch() {
        // Queue at or above t_high most of the time, but drained once per 0.9 ms.
        let mut c = Stride::new(params());
        let mut t = 0;
        for _ in 0..200 {
            t = feed(&mut c, t, t + 800_000, 100_000, 75_000, 65_536);
            c.on_sample_at(t, 59_000, 65_536); // 9 us above the base of 50 us
            t += 100_000;
            c.on_sample_at(t, 50_000, 65_536);
            t += 100_000;
        }
        assert_eq!(c.mode_stats().switches, 0);
        // Without a clock (the vectors, `on_sample`) the mode is never entered.
        let mut c = Stride::new(params());
        for _ in 0..100 {
            c.on_sample(90_000);
        }
        assert_eq!(c.mode(), Mode::Delay);
        // Nor with the switch off (the paper's profile), whatever the clock says.
        let mut c = Stride::new(StrideParams {
            compete: false,
            ..params()
        });
        feed(&mut c, 0, 10 * MS, 100_000, 90_000, 65_536);
        assert_eq!((c.mode(), Controller::mode_stats(&c)), (Mode::Delay, None));
    }

    #[test]
    fn the_mode_waits_for_the_rate_to_back_off() {
        let p = StrideParams {
            compete_backoff: 2,
            ..params()
        };
        // A standing queue that Algorithm 1's own minimum takes for the base after a few
        // cuts: its rate grows again, so this queue is no reason to compete (with no
        // back-off test it is).
        for (backoff, switches) in [(2, 0), (0, 1)] {
            let mut c = Stride::new(StrideParams {
                compete_backoff: backoff,
                ..p
            });
            let t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
            let r = c.rate();
            feed(&mut c, t, t + 5 * MS, 100_000, 70_000, 65_536);
            assert_eq!(c.mode_stats().switches, switches, "backoff {backoff}");
            assert!(backoff == 0 || c.rate() > r >> 2);
        }
        // A queue that grows whatever STRIDE does: cut on every sample to below a quarter of
        // its rate at the last drained sample, then the mode.
        let mut c = Stride::new(p);
        let mut t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
        let r = c.rate();
        let (mut stt, mut before) = (70_000, r);
        while c.mode() == Mode::Delay && t < 10 * MS {
            before = c.rate();
            c.on_sample_at(t, stt, 65_536);
            stt += 2_000;
            t += 100_000;
        }
        assert_eq!(c.mode(), Mode::Competitive);
        assert!(
            before <= r >> 2 && t >= 2 * MS,
            "{before} against {r} at {t}"
        );
    }

    #[test]
    fn a_single_slow_sample_does_not_count_as_a_standing_queue() {
        // Two samples 5 ms apart, both behind a queue: too few samples to switch.
        let mut c = Stride::new(params());
        c.on_sample_at(0, 50_000, 0);
        for i in 1..4 {
            c.on_sample_at(i * 5 * MS, 80_000, 0);
        }
        assert_eq!(c.mode(), Mode::Delay);
        c.on_sample_at(20 * MS, 80_000, 0);
        assert_eq!(c.mode(), Mode::Competitive, "the fourth undrained sample");
    }

    #[test]
    fn the_mode_ends_once_the_queue_stays_drained_while_the_rate_holds() {
        let mut c = Stride::new(params());
        let t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
        let t = saw(&mut c, t, t + 3 * MS);
        assert_eq!(c.mode(), Mode::Competitive);
        // At the sawtooth's trough (the mode's floor, 70 us) a hold starts; the competitor
        // refills the queue past qd (t_high here) within it: growing again.
        let r = c.rate();
        c.on_sample_at(t, 70_000, 65_536);
        assert_eq!((c.branch(), c.rate()), (Branch::CompeteHold, r));
        c.on_sample_at(t + 100_000, 80_000, 65_536);
        assert_eq!(c.branch(), Branch::CompeteInc);
        assert!(c.rate() > r);
        // A loss during a hold ends it too (a full queue is not a drained one).
        let t = t + 200_000;
        c.on_sample_at(t, 70_000, 65_536);
        c.nack_at(t + 10_000);
        c.on_sample_at(t + 100_000, 72_000, 65_536);
        assert_eq!(c.branch(), Branch::CompeteInc);
        // A competitor whose sawtooth stays within qd of the mode's floor (but not within
        // t_low of it) is still there: no hold lasts.
        let t = t + 200_000;
        c.on_sample_at(t, 70_000, 65_536); // at the floor: a hold starts
        assert_eq!(c.branch(), Branch::CompeteHold);
        let t = feed(&mut c, t + 100_000, t + 3 * MS, 100_000, 75_000, 65_536);
        assert_eq!(
            (c.mode(), c.branch()),
            (Mode::Competitive, Branch::CompeteInc)
        );
        // It left: the queue empties and stays empty (within t_low of the floor) for the
        // hold, then Algorithm 1 again, with the floor as its base.
        let left = t;
        c.on_sample_at(t, 50_500, 65_536);
        let t = feed(&mut c, t + 100_000, t + 2 * MS, 100_000, 51_000, 65_536);
        assert_eq!(
            (c.mode(), c.branch()),
            (Mode::Competitive, Branch::CompeteHold)
        );
        c.on_sample_at(t, 51_000, 65_536);
        assert_eq!(c.mode(), Mode::Delay);
        assert_eq!(c.base_stt(), 50_500, "the mode's floor");
        let m = c.mode_stats();
        assert_eq!(m.switches, 1);
        assert!(!m.competitive && m.competitive_ns > t - left);
    }

    #[test]
    fn a_loss_episode_cuts_once_per_round_trip() {
        let mut c = Stride::new(params());
        let t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
        let t = feed(&mut c, t, t + 3 * MS, 100_000, 70_000, 65_536);
        assert_eq!(c.mode(), Mode::Competitive);
        let r = c.rate();
        c.nack_at(t);
        assert_eq!((c.branch(), c.rate()), (Branch::CompeteCut, r - (r >> 1)));
        c.nack_at(t + 60_000); // within one RTT (65.5 us) of the cut: same episode
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, r - (r >> 1)));
        c.nack_at(t + 70_000);
        assert_eq!(c.rate(), (r - (r >> 1)) - ((r - (r >> 1)) >> 1));
    }

    #[test]
    fn a_standing_queue_never_becomes_the_base() {
        let mut p = params();
        p.base_window = MS as u32;
        let mut c = Stride::new(p);
        let t = feed(&mut c, 0, 3 * MS, 100_000, 50_000, 65_536);
        // Ten base windows of a competitor's queue: still measured against 50 us.
        saw(&mut c, t, t + 10 * MS);
        assert_eq!(c.mode(), Mode::Competitive);
        assert_eq!(c.base_stt(), 50_000);
        // While the queue drains now and then the base follows a rise (a longer path, drift).
        let mut c = Stride::new(p);
        let mut t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
        for _ in 0..4 {
            t = feed(&mut c, t, t + MS, 100_000, 55_000, 65_536);
        }
        assert_eq!(c.base_stt(), 55_000);
        // A rise past qd with no competitor (a slower link: flat, no loss) is taken
        // for one at first; the flat floor ends the mode after a hold and becomes the base.
        let mut c = Stride::new(p);
        let t = feed(&mut c, 0, MS, 100_000, 50_000, 65_536);
        let t = feed(&mut c, t, t + 5 * MS, 100_000, 80_000, 65_536);
        assert_eq!((c.mode(), c.mode_stats().switches), (Mode::Delay, 1));
        assert_eq!(c.base_stt(), 80_000);
        feed(&mut c, t, t + 20 * MS, 100_000, 80_000, 65_536);
        assert_eq!(c.mode_stats().switches, 1, "not entered again");
    }

    #[test]
    fn the_increase_reads_the_rtt_from_its_two_leading_bits() {
        let c = Compete {
            rtt: 3 << 15, // 1.5 * 2^16: squared read as 2^33
            ..Compete::default()
        };
        let p = params();
        assert_eq!(c.increase(&p, 100_000), ((100_000u64 << 30) >> 33) as u32);
        // Without an RTT sample, t_high stands for it; dt is capped at compete_after.
        let c = Compete::default();
        let k = 63 - 10_000u64.leading_zeros(); // 13; second bit of 10_000 is 0
        assert_eq!(c.increase(&p, 10 * MS), ((MS << 30) >> (2 * k)) as u32);
    }
}
