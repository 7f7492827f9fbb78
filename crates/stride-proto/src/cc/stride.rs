//! STRIDE's Algorithm 1 ([`Stride`]) and its parameters ([`StrideParams`]): the controller
//! `hw/rtl/stride_cc.v` implements branch for branch. The per-sample update uses only shifts,
//! adds, subtracts, compares and a leading-one detector (checked by a test that parses this
//! file). Mechanisms not in the RTL live in a separately registered variant
//! ([`super::stride_ext`]).

use super::compete::{Compete, Mode, ModeStats, Verdict};
use super::{rate_from_gbps, AckSample, Controller};

crate::controller_params! {
    /// Parameters of Algorithm 1. Every field is an integer so that the same values configure
    /// the Verilog core (`hw/rtl/stride_cc.v`). Defaults: the table in `docs/spec.md` §11,
    /// chosen by the simulator sweep (docs/results.md): an additive step of 1/64 of the line
    /// rate per sample (156 Mbit/s at 10 Gbit/s), a quarter of that on a falling gradient,
    /// T_high 80 us, a start at a quarter of the line rate (a synchronised start at line rate
    /// overflows the first shared queue).
    pub struct StrideParams for |p| if p.is_paper() { "stride-paper" } else { "stride" }, (line) {
        /// EWMA gain of the STT gradient is 2^-alpha_shift (the paper's `a = 2^-i`). 0..=15.
        alpha_shift: u8 [Shift] = 3;
        /// Additive increase step below `t_low` (the paper's beta).
        beta: u32 [Rate] = (line >> 6).max(1);
        /// Increase step when the gradient is not positive (the paper's `w * beta`).
        wbeta: u32 [Rate] = (line >> 8).max(1);
        /// Queueing delay (STT above its windowed minimum) under which the rate increases.
        t_low: u32 [Nanos] = 5_000;
        /// Queueing delay at or above which the rate decreases by 2^-md_shift.
        t_high: u32 [Nanos] = 80_000;
        /// Multiplicative decrease shift (the paper's k = 3: `r -= r >> 3`). 1..=31.
        md_shift: u8 [Shift] = 3;
        /// The gradient is normalised by 2^norm_shift ns (the base delay). 0..=31.
        norm_shift: u8 [Shift] = 13;
        /// Lowest rate.
        rate_min: u32 [Rate] = rate_from_gbps(0.01).min(line);
        /// Highest rate (normally the line rate).
        rate_max: u32 [Rate] = line;
        /// Rate before the first sample.
        rate_init: u32 [Rate] = (line >> 2).max(rate_from_gbps(0.01).min(line));
        /// Samples per window of the two-bucket windowed minimum of STT. At least 1.
        min_window: u16 [Count] = 256;
        /// Start at no more than the start rate the listener granted in its SYN-ACK
        /// (`rate_max >> grant_shift`, spec §8.6). Handshake only. Off since the receive
        /// share (`Config::rx_share`) bounds the first window of a burst of starts.
        grant: bool [Switch, off false] = false;
        /// Seed the windowed minimum STT (and the previous sample) with the SYN's STT echoed
        /// in the SYN-ACK, so the first data sample already sees a queue that built during
        /// the first window instead of taking it for the base delay. Handshake only.
        hs_min: bool [Switch, off false] = true;
        /// NACK gate: a NACK cuts the rate only when the last sample's queueing delay is at
        /// or above `t_low`; below it the loss is taken for non-congestion loss and the rate
        /// is held (branch `nack_held`). Before the first sample a NACK cuts as in §8.4. In
        /// `hw/rtl/stride_cc.v` (`NACK_GATE`); random loss under no queue is not congestion
        /// (docs/results.md, the NACK gate).
        nack_gate: bool [Switch, off false] = true;
        /// With `nack_gate`: the gate's threshold is `t_high` instead of `t_low`, so a NACK
        /// cuts only behind a queue the delay signal would cut for anyway. For software hosts,
        /// whose STT noise alone reaches past `t_low` (spec §8.6, §11.1): on in the host
        /// profile, off by default; the RTL gates at `t_low`.
        gate_high: bool [Switch, off false] = false;
        /// First window (spec §8.6 `first_window`): the first this many bytes a connection
        /// sends leave at `rate_max` (at most the listener's start grant's rate) while
        /// Algorithm 1 runs from `rate_init` underneath; a sample that sees a queue (any
        /// branch but `low`), a NACK or a timeout ends it and the pacer takes Algorithm 1's
        /// rate. 0: off (every byte at `rate_init`).
        first_window: u32 [Bytes, off 0] = first_window_default(line);
        /// With `first_window`: a first window sent whole, with samples during it and none
        /// that saw a queue, leaves Algorithm 1 at least `rate_max >> first_window_keep` (of the
        /// first window's rate under a start grant). At most 31.
        first_window_keep: u8 [Shift] = 1;
        /// Competitive mode (spec §8.7): next to a loss-based competitor that keeps a queue
        /// of `t_high >> compete_qd_shift` or more although STRIDE cuts, grow and cut on loss as Reno does, until
        /// the queue stays drained. Not in the RTL.
        compete: bool [Switch, off false] = true;
        /// With `compete`: a sample less than `t_high >> compete_qd_shift` above the base STT
        /// shows the queue drained. Half of `t_high` by default: below the buffer of a shallow
        /// switch port (a 98 KB share is 79 us at 10 Gbit/s), above what flows that back off
        /// hold for long. At most 31.
        compete_qd_shift: u8 [Shift] = 1;
        /// With `compete`: enter the competitive mode after this long without a drained sample.
        compete_after: u32 [Nanos] = 1_000_000;
        /// With `compete`: ... and after at least this many such samples in a row.
        compete_samples: u16 [Count] = 8;
        /// With `compete`: ... and only once the rate has backed off to at most its rate at
        /// the last drained sample `>> compete_backoff` (or to within twice `rate_min`): a
        /// queue STRIDE keeps itself falls when it cuts, one held by a competitor does not.
        /// 0: no such test. At most 31.
        compete_backoff: u8 [Shift] = 2;
        /// With `compete`: leave the competitive mode once the queue has stayed empty (within
        /// `t_low` of the mode's smallest STT) this long while the rate was held.
        compete_hold: u32 [Nanos] = 4_000_000;
        /// With `compete`: the base STT is the minimum over one to two windows of this length
        /// (turned over only while the queue drains now and then).
        base_window: u32 [Nanos] = 100_000_000;
        /// With `compete`: in the competitive mode the rate grows by `2^compete_ai` bytes per
        /// RTT per RTT. At most 12. A third of Reno's packet per RTT: a paced sender loses its
        /// packets one at a time where an ACK-clocked window loses them in bursts, so at
        /// Reno's step STRIDE took 85-90 % of a drop-tail dumbbell from NewReno (spec §8.7).
        compete_ai: u8 [Shift] = 9;
        /// With `compete`: in the competitive mode a loss episode cuts `rate >> compete_md`.
        /// 1..=31.
        compete_md: u8 [Shift] = 1;
    }
    build: |p, _now| Stride::new(p)
}

/// The first window's default at line rate `line`: 13 µs of line (16 KiB at 10 Gbit/s), half a
/// base bandwidth-delay product of a three-tier fabric, rounded down to whole KiB and at least
/// 4 KiB (spec §8.6 `first_window`).
fn first_window_default(line: u32) -> u32 {
    // line is in 2^-20 bytes/ns: bytes per 2^14 ns (16.4 us) = line >> 6; 13.1 us is 4/5 of it.
    let bytes = (u64::from(line) >> 6) * 4 / 5;
    ((bytes as u32) >> 10 << 10).max(4096)
}

impl StrideParams {
    /// The `stride-paper` profile: Algorithm 1 exactly as spec §8.4 (the defaults of
    /// [`StrideParams::for_line_rate`] with every profile mechanism of spec §8.6 switched off).
    pub fn paper(line: u32) -> Self {
        StrideParams::for_line_rate(line).without_mechanisms()
    }

    /// Whether every profile mechanism of spec §8.6 is off (the controller is the paper's
    /// Algorithm 1).
    pub fn is_paper(&self) -> bool {
        *self == self.without_mechanisms()
    }

    /// The small parameter set of the hand-computed unit tests and of the branch vectors in
    /// `vectors/cc/`, chosen so every branch is reachable with round numbers.
    pub fn hand_checked() -> Self {
        StrideParams {
            alpha_shift: 2,
            beta: 100,
            wbeta: 500,
            t_low: 1_000,
            t_high: 10_000,
            md_shift: 3,
            norm_shift: 10,
            rate_min: 1_000,
            rate_max: 1_000_000,
            rate_init: 80_000,
            min_window: 4,
            ..StrideParams::paper(1_000_000)
        }
    }

    /// Checks ranges; returns the name of the first bad field and why.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.alpha_shift > 15 {
            return Err(("alpha_shift", "must be at most 15"));
        }
        if self.md_shift == 0 || self.md_shift > 31 {
            return Err(("md_shift", "must be in 1..=31"));
        }
        if self.norm_shift > 31 {
            return Err(("norm_shift", "must be at most 31"));
        }
        if self.t_low > i32::MAX as u32 {
            return Err(("t_low", "must be below 2^31 ns"));
        }
        if self.t_high > i32::MAX as u32 {
            return Err(("t_high", "must be below 2^31 ns"));
        }
        if self.t_low > self.t_high {
            return Err(("t_low", "must not exceed t_high"));
        }
        if self.rate_min == 0 {
            return Err(("rate_min", "must be positive"));
        }
        if self.rate_min > self.rate_max {
            return Err(("rate_min", "must not exceed rate_max"));
        }
        if self.rate_init < self.rate_min || self.rate_init > self.rate_max {
            return Err(("rate_init", "must lie in rate_min..=rate_max"));
        }
        if self.min_window == 0 {
            return Err(("min_window", "must be at least 1"));
        }
        if self.compete_qd_shift > 31 {
            return Err(("compete_qd_shift", "must be at most 31"));
        }
        if self.compete_ai > 12 {
            return Err(("compete_ai", "must be at most 12"));
        }
        if self.compete_backoff > 31 {
            return Err(("compete_backoff", "must be at most 31"));
        }
        if self.compete_md == 0 || self.compete_md > 31 {
            return Err(("compete_md", "must be in 1..=31"));
        }
        if self.first_window_keep > 31 {
            return Err(("first_window_keep", "must be at most 31"));
        }
        if self.base_window == 0 {
            return Err(("base_window", "must be positive"));
        }
        Ok(())
    }

    /// Checks ranges (the same as [`StrideParams::check`]).
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        self.check()
    }
}

/// Which branch of Algorithm 1 the last event took (for tests, vectors and tracing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// No event yet.
    None,
    /// Queueing delay below `t_low`: `r += beta`.
    Low,
    /// Queueing delay at or above `t_high`: `r -= r >> md_shift`.
    High,
    /// Between thresholds, gradient <= 0: `r += wbeta`.
    GradInc,
    /// Between thresholds, gradient > 0: `r -= r >> sh`.
    GradDec,
    /// NACK: `r -= r >> md_shift`.
    Nack,
    /// Timeout: `r -= r >> 1`.
    Timeout,
    /// NACK while the last sample showed no queue (`nack_gate`): rate unchanged.
    NackHeld,
    /// Competitive mode (`compete`), queue not drained: Reno's increase.
    CompeteInc,
    /// Competitive mode, the queue drained: rate held while it stays drained.
    CompeteHold,
    /// Competitive mode, the first NACK of a loss episode: `r -= r >> compete_md`.
    CompeteCut,
}

impl Branch {
    /// The name used in `vectors/cc/*.jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            Branch::None => "none",
            Branch::Low => "low",
            Branch::High => "high",
            Branch::GradInc => "grad_inc",
            Branch::GradDec => "grad_dec",
            Branch::Nack => "nack",
            Branch::Timeout => "timeout",
            Branch::NackHeld => "nack_held",
            Branch::CompeteInc => "compete_inc",
            Branch::CompeteHold => "compete_hold",
            Branch::CompeteCut => "compete_cut",
        }
    }
}

/// STRIDE's rate controller (Algorithm 1 of the paper, in fixed point, open points resolved as in
/// `docs/spec.md`).
#[derive(Clone, Debug)]
pub struct Stride {
    p: StrideParams,
    rate: u32,
    /// EWMA of the STT difference between consecutive samples (ns, signed).
    d: i32,
    stt_old: u32,
    min_cur: u32,
    min_prev: u32,
    count: u16,
    init: bool,
    branch: Branch,
    cm: Compete,
    /// Bytes of the first window not yet sent (0: over, or `first_window` off).
    fw_left: u32,
    /// The first window's rate.
    fw_rate: u32,
    /// A sample arrived during the first window (and, since it did not end it, saw no queue).
    fw_sampled: bool,
}

/// `(a - b)` on the mod-2^32 clock, read as a signed distance.
#[inline]
fn wdiff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

const D_LIMIT: i32 = 1 << 30;

impl Stride {
    /// A controller with the given parameters. Panics on parameters that fail
    /// [`StrideParams::validate`] (configuration is checked before reaching here).
    pub fn new(p: StrideParams) -> Self {
        if let Err((f, why)) = p.check() {
            panic!("invalid STRIDE parameter {f}: {why}");
        }
        Stride {
            p,
            rate: p.rate_init,
            d: 0,
            stt_old: 0,
            min_cur: 0,
            min_prev: 0,
            count: 0,
            init: false,
            branch: Branch::None,
            cm: Compete::default(),
            fw_left: p.first_window,
            fw_rate: p.rate_max,
            fw_sampled: false,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &StrideParams {
        &self.p
    }

    /// Smoothed STT gradient (ns per sample interval).
    pub fn gradient(&self) -> i32 {
        self.d
    }
    /// Previous STT sample.
    pub fn stt_old(&self) -> u32 {
        self.stt_old
    }
    /// Minimum of the current window.
    pub fn min_cur(&self) -> u32 {
        self.min_cur
    }
    /// Minimum of the previous window.
    pub fn min_prev(&self) -> u32 {
        self.min_prev
    }
    /// Samples in the current window.
    pub fn count(&self) -> u16 {
        self.count
    }
    /// The rate Algorithm 1 holds: what [`Controller::rate`] gives once the first window is
    /// over.
    pub fn algorithm_rate(&self) -> u32 {
        self.rate
    }
    /// Bytes of the first window still to send at its rate (0: over or off).
    pub fn first_window_left(&self) -> u32 {
        self.fw_left
    }
    /// The branch the last event took.
    pub fn branch(&self) -> Branch {
        self.branch
    }
    /// The mode (delay, or competitive with `compete`).
    pub fn mode(&self) -> Mode {
        self.cm.mode()
    }
    /// The mode's counters.
    pub fn mode_stats(&self) -> ModeStats {
        self.cm.stats()
    }
    /// The competitive mode's long-horizon base STT (spec §8.7; the first sample's before
    /// any).
    pub fn base_stt(&self) -> u32 {
        self.cm.base()
    }

    /// The windowed minimum STT (the older of the two buckets when smaller).
    pub fn stt_min(&self) -> u32 {
        if wdiff(self.min_prev, self.min_cur) < 0 {
            self.min_prev
        } else {
            self.min_cur
        }
    }

    /// Queueing delay estimate for a sample: STT above the windowed minimum, floored at 0.
    pub fn queue_delay(&self, stt: u32) -> u32 {
        wdiff(stt, self.stt_min()).max(0) as u32
    }

    /// Replaces the rate (clamped to `rate_min..=rate_max`): for variants that change a
    /// branch's step ([`super::stride_ext`]).
    pub(crate) fn set_rate(&mut self, rate: u32) {
        self.rate = rate;
        self.clamp();
    }

    fn clamp(&mut self) {
        self.rate = self.rate.clamp(self.p.rate_min, self.p.rate_max);
    }

    // The update path: `on_sample`, `nack`, `handshake`, `timeout` and what they call use
    // shifts, adds, subtracts and compares only (`tests/update_path.rs` parses this file).
    /// The state of a first sample `s`: previous sample and both minimum buckets at `s`, no
    /// gradient, an empty window.
    fn start_from(&mut self, s: u32) {
        self.init = true;
        self.stt_old = s;
        self.min_cur = s;
        self.min_prev = s;
        self.d = 0;
        self.count = 0;
    }

    /// One STT sample (Algorithm 1, lines 3-24) without a clock: the competitive mode, which
    /// needs one, stays off.
    pub fn on_sample(&mut self, s: u32) {
        self.on_sample_at(0, s, 0);
    }

    /// One STT sample `s` at `now` (ns) with the RTT sample `rtt` (ns, 0: none): Algorithm 1,
    /// or with `compete` the competitive mode's update when it holds (spec §8.7).
    pub fn on_sample_at(&mut self, now: u64, s: u32, rtt: u64) {
        self.update(now, s, rtt);
        // A sample that saw a queue ends the first window.
        if self.branch != Branch::Low {
            self.fw_left = 0;
        }
        self.fw_sampled = true;
    }

    fn update(&mut self, now: u64, s: u32, rtt: u64) {
        if !self.init {
            self.start_from(s);
        }
        // Line 4: dSTT = (1-a) dSTT + a (new - old) = dSTT + ((new - old - dSTT) >> i).
        let diff = wdiff(s, self.stt_old).clamp(-D_LIMIT, D_LIMIT - 1);
        self.d += (diff - self.d) >> self.p.alpha_shift;
        self.stt_old = s;
        // Windowed minimum in two buckets: tolerates clock drift and route changes.
        if wdiff(s, self.min_cur) < 0 {
            self.min_cur = s;
        }
        self.count += 1;
        if self.count == self.p.min_window {
            self.min_prev = self.min_cur;
            self.min_cur = s;
            self.count = 0;
        }
        if self.p.compete {
            match self.cm.sample(&self.p, now, s, rtt, self.rate) {
                Verdict::Delay => {}
                Verdict::Increase(inc) => {
                    self.rate = self.rate.saturating_add(inc);
                    self.branch = Branch::CompeteInc;
                    self.clamp();
                    return;
                }
                Verdict::Hold => {
                    self.branch = Branch::CompeteHold;
                    return;
                }
            }
        }
        let qd = wdiff(s, self.stt_min()).max(0);
        if qd < self.p.t_low as i32 {
            self.rate = self.rate.saturating_add(self.p.beta);
            self.branch = Branch::Low;
        } else if qd >= self.p.t_high as i32 {
            self.rate -= self.rate >> self.p.md_shift;
            self.branch = Branch::High;
        } else if self.d <= 0 {
            self.rate = self.rate.saturating_add(self.p.wbeta);
            self.branch = Branch::GradInc;
        } else {
            // Normalised gradient g = d / 2^norm_shift, quantised to the power of two below d:
            // the leading-one position replaces the paper's repeated-subtraction loop.
            let p = 31 - self.d.leading_zeros();
            let ns = u32::from(self.p.norm_shift);
            // sh is in 1..=31 because norm_shift <= 31 and p >= 0.
            let sh = if p >= ns { 1 } else { ns - p };
            self.rate -= self.rate >> sh;
            self.branch = Branch::GradDec;
        }
        self.clamp();
    }

    /// A NACK: decrease by 2^-md_shift (with `nack_gate`, only when the last sample showed a
    /// queueing delay of at least `t_low`, or `t_high` with `gate_high`).
    pub fn nack(&mut self) {
        self.nack_at(0);
    }

    /// A NACK at `now`: in the competitive mode the first of a loss episode cuts
    /// `rate >> compete_md` and the others are held; otherwise as [`Stride::nack`].
    pub fn nack_at(&mut self, now: u64) {
        self.fw_left = 0;
        if self.p.compete && self.cm.mode() == Mode::Competitive {
            if self.cm.nack_cuts(now) {
                self.rate -= self.rate >> self.p.compete_md;
                self.branch = Branch::CompeteCut;
                self.clamp();
            } else {
                self.branch = Branch::NackHeld;
            }
            return;
        }
        // The queueing delay of the last sample, floored at 0 as in `on_sample`.
        let qd = wdiff(self.stt_old, self.stt_min()).max(0);
        let gate = if self.p.gate_high {
            self.p.t_high
        } else {
            self.p.t_low
        };
        if self.p.nack_gate && self.init && qd < gate as i32 {
            self.branch = Branch::NackHeld;
            return;
        }
        self.rate -= self.rate >> self.p.md_shift;
        self.branch = Branch::Nack;
        self.clamp();
    }

    /// The handshake's hints (see [`Controller::on_handshake`]); each applies only when its
    /// switch is on. Runs once per connection, before the first sample (host software in a NIC).
    pub fn handshake(&mut self, syn_stt: Option<u32>, grant_shift: Option<u8>) {
        if let (true, Some(s)) = (self.p.hs_min, syn_stt) {
            // A SYN crosses each hop faster than a full DATA packet (store and forward:
            // ~1.2 us per hop at 10 Gbit/s), so the seed tolerates t_low of such bias; any
            // smaller data sample replaces it as the windowed minimum.
            self.start_from(s.wrapping_add(self.p.t_low));
        }
        if let Some(g) = grant_shift {
            let cap = self.p.rate_max >> g.min(31);
            if self.p.grant {
                self.rate = self.rate.min(cap);
                self.clamp();
            }
            // The first window follows the grant whatever the switch: with n starts at the
            // receiver together each leaves at most at 1/n of the line (never below `rate`).
            self.fw_rate = self.fw_rate.min(cap).max(self.rate);
        }
    }

    /// `bytes` of DATA left: counted against the first window.
    pub fn sent(&mut self, bytes: u32) {
        if self.fw_left > 0 {
            self.fw_left = self.fw_left.saturating_sub(bytes);
            if self.fw_left == 0 && self.fw_sampled {
                // Sent whole, sampled, and no sample saw a queue: the path carried the first
                // window's rate, so Algorithm 1 goes on from a share of it, not rate_init.
                self.rate = self.rate.max(self.fw_rate >> self.p.first_window_keep);
                self.clamp();
            }
        }
    }

    /// A retransmission timeout: halve.
    pub fn timeout(&mut self) {
        self.fw_left = 0;
        self.rate -= self.rate >> 1;
        self.branch = Branch::Timeout;
        self.clamp();
    }
}

impl Controller for Stride {
    fn on_ack(&mut self, now: u64, sample: &AckSample) {
        self.on_sample_at(now, sample.stt, sample.rtt);
    }
    fn on_nack(&mut self, now: u64) {
        self.nack_at(now);
    }
    fn on_timeout(&mut self, _now: u64) {
        self.timeout();
    }
    fn on_handshake(&mut self, _now: u64, syn_stt: Option<u32>, grant_shift: Option<u8>) {
        self.handshake(syn_stt, grant_shift);
    }
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        self.sent(bytes);
    }
    fn rate(&self) -> u32 {
        if self.fw_left > 0 {
            self.fw_rate.max(self.rate)
        } else {
            self.rate
        }
    }
    fn trace_branch(&self) -> Option<&'static str> {
        Some(self.branch.name())
    }
    fn mode_stats(&self) -> Option<ModeStats> {
        self.p.compete.then(|| self.cm.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcConfig;

    fn params() -> StrideParams {
        StrideParams::hand_checked()
    }

    #[test]
    fn first_sample_is_low_branch() {
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        assert_eq!(c.branch(), Branch::Low);
        assert_eq!(c.rate(), 80_100);
        assert_eq!(c.gradient(), 0);
        assert_eq!(c.stt_min(), 50_000);
    }

    #[test]
    fn high_branch_cuts_by_one_eighth() {
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        c.on_sample(60_000); // qd = 10_000 >= t_high
        assert_eq!(c.branch(), Branch::High);
        // 80_100 - (80_100 >> 3) = 80_100 - 10_012 = 70_088
        assert_eq!(c.rate(), 70_088);
        // d = 0 + ((10_000 - 0) >> 2) = 2_500
        assert_eq!(c.gradient(), 2_500);
    }

    #[test]
    fn gradient_decrease_uses_leading_one() {
        let mut c = Stride::new(params());
        c.on_sample(50_000); // rate 80_100
        c.on_sample(55_000); // qd 5_000 in band; d = 5_000 >> 2 = 1_250 > 0
        assert_eq!(c.gradient(), 1_250);
        // p = floor(log2 1250) = 10 >= norm_shift 10 -> sh = 1 -> halve
        assert_eq!(c.branch(), Branch::GradDec);
        assert_eq!(c.rate(), 80_100 - 40_050);
    }

    #[test]
    fn gradient_decrease_small_gradient() {
        let mut p = params();
        p.norm_shift = 20;
        let mut c = Stride::new(p);
        c.on_sample(50_000); // 80_100
        c.on_sample(52_000); // d = 2_000 >> 2 = 500; p = 8; sh = 12
        assert_eq!(c.gradient(), 500);
        assert_eq!(c.rate(), 80_100 - (80_100 >> 12));
        assert_eq!(c.branch(), Branch::GradDec);
    }

    #[test]
    fn gradient_decrease_tiny_factor_at_largest_norm() {
        let mut p = params();
        p.norm_shift = 31;
        p.alpha_shift = 0;
        let mut c = Stride::new(p);
        c.on_sample(50_000); // 80_100
        c.on_sample(51_005); // d = 1005, p = 9, sh = 22 -> 80_100 >> 22 = 0
        assert_eq!(c.branch(), Branch::GradDec);
        assert_eq!(c.rate(), 80_100);
    }

    #[test]
    fn gradient_increase_when_falling() {
        let mut c = Stride::new(params());
        c.on_sample(50_000); // 80_100
        c.on_sample(58_000); // qd 8000 band, d = 2000 -> p=10 -> halve: 40_050
        c.on_sample(55_000); // diff -3000, d = 2000 + ((-3000-2000)>>2) = 2000 - 1250 = 750 > 0
        assert_eq!(c.gradient(), 750);
        // p = 9, sh = 1 -> 40_050 - 20_025 = 20_025
        assert_eq!(c.rate(), 20_025);
        c.on_sample(53_000); // diff -2000, d = 750 + ((-2000-750)>>2) = 750 - 688 = 62
        assert_eq!(c.gradient(), 62);
        c.on_sample(52_000); // diff -1000: d = 62 + ((-1062)>>2) = 62 - 266 = -204 ; qd 2000 band
        assert_eq!(c.gradient(), -204);
        assert_eq!(c.branch(), Branch::GradInc);
    }

    #[test]
    fn arithmetic_shift_rounds_towards_negative_infinity() {
        let mut c = Stride::new(params());
        c.on_sample(100);
        c.on_sample(99); // diff -1 -> d = 0 + (-1 >> 2) = -1
        assert_eq!(c.gradient(), -1);
    }

    #[test]
    fn windowed_minimum_rolls_over() {
        let mut c = Stride::new(params()); // window 4
        for s in [10_000u32, 9_000, 12_000] {
            c.on_sample(s);
        }
        assert_eq!(c.stt_min(), 9_000);
        assert_eq!(c.count(), 3);
        c.on_sample(12_500); // count reaches 4: prev = 9000, cur = 12500
        assert_eq!(c.count(), 0);
        assert_eq!(c.min_prev(), 9_000);
        assert_eq!(c.min_cur(), 12_500);
        assert_eq!(c.stt_min(), 9_000);
        for _ in 0..4 {
            c.on_sample(12_500);
        }
        // the 9_000 has aged out after two windows
        assert_eq!(c.stt_min(), 12_500);
    }

    #[test]
    fn stt_wraps_around_2_pow_32() {
        let mut c = Stride::new(params());
        c.on_sample(u32::MAX - 100);
        c.on_sample(200); // +301 ns across the wrap
        assert_eq!(c.gradient(), 301 >> 2);
        assert_eq!(c.stt_min(), u32::MAX - 100);
        assert_eq!(c.queue_delay(200), 301);
        c.on_sample(u32::MAX - 200); // smaller than the min across the wrap
        assert_eq!(c.stt_min(), u32::MAX - 200);
    }

    #[test]
    fn huge_jumps_saturate_the_gradient() {
        let mut p = params();
        p.alpha_shift = 0;
        let mut c = Stride::new(p);
        c.on_sample(0);
        c.on_sample(0x7fff_ffff);
        assert_eq!(c.gradient(), (1 << 30) - 1);
        c.on_sample(0);
        assert_eq!(c.gradient(), -(1 << 30));
    }

    #[test]
    fn rate_clamps_and_saturates() {
        let mut p = params();
        p.beta = u32::MAX;
        p.rate_max = u32::MAX;
        let mut c = Stride::new(p);
        c.on_sample(1);
        assert_eq!(c.rate(), u32::MAX);
        let mut p = params();
        p.rate_min = 75_000;
        let mut c = Stride::new(p);
        c.timeout();
        assert_eq!(c.rate(), 75_000);
        assert_eq!(c.branch(), Branch::Timeout);
        c.nack();
        assert_eq!(c.rate(), 75_000);
        assert_eq!(c.branch(), Branch::Nack);
    }

    #[test]
    fn validate_names_the_field() {
        let mut p = params();
        p.t_low = 20_000;
        assert_eq!(p.validate().unwrap_err().0, "t_low");
        let mut p = params();
        p.min_window = 0;
        assert_eq!(p.validate().unwrap_err().0, "min_window");
        assert!(params().validate().is_ok());
        assert!(StrideParams::for_line_rate(rate_from_gbps(10.0))
            .validate()
            .is_ok());
    }

    #[test]
    fn stride_behind_the_interface_is_algorithm_1() {
        let mut direct = Stride::new(params());
        let mut boxed = CcConfig::stride(params()).build(0);
        for (i, s) in [50_000u32, 55_000, 61_000, 52_000, 51_000]
            .into_iter()
            .enumerate()
        {
            direct.on_sample(s);
            boxed.on_ack(i as u64, &AckSample::stt_only(s, 1440));
            assert_eq!(direct.rate(), boxed.rate());
        }
        direct.nack();
        boxed.on_nack(9);
        assert_eq!(direct.rate(), boxed.rate());
        direct.timeout();
        boxed.on_timeout(10);
        assert_eq!(direct.rate(), boxed.rate());
    }

    #[test]
    fn handshake_hints_apply_only_with_their_switches() {
        let mut p = params();
        p.grant = true;
        p.hs_min = true;
        let mut c = Stride::new(p);
        c.handshake(Some(40_000), Some(5)); // cap 1_000_000 >> 5 = 31_250
        assert_eq!(c.rate(), 31_250);
        assert_eq!(c.stt_min(), 41_000, "the SYN's STT plus t_low");
        c.on_sample(51_000); // qd 10_000 >= t_high against the handshake's minimum
        assert_eq!(c.branch(), Branch::High);
        c.on_sample(40_500); // a data sample below the seed becomes the minimum
        assert_eq!(c.stt_min(), 40_500);
        // A grant above the start rate does not raise it.
        let mut c = Stride::new(p);
        c.handshake(None, Some(0));
        assert_eq!(c.rate(), 80_000);
        // Switches off: the paper's controller, whatever the SYN-ACK says.
        let mut c = Stride::new(params());
        assert!(params().is_paper());
        c.handshake(Some(40_000), Some(5));
        assert_eq!(c.rate(), 80_000);
        c.on_sample(52_000);
        assert_eq!(c.branch(), Branch::Low);
        assert!(!StrideParams::for_line_rate(1 << 20).is_paper());
        assert!(StrideParams::paper(1 << 20).is_paper());
    }

    #[test]
    fn nack_gate_cuts_only_behind_a_queue() {
        let mut p = params();
        p.nack_gate = true;
        let mut c = Stride::new(p);
        c.nack(); // no sample yet: cut as §8.4
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, 70_000));
        c.on_sample(50_000); // qd 0: low, +100
        c.nack(); // last sample showed no queue: held
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, 70_100));
        c.on_sample(50_999); // qd 999 < t_low: still held
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, 70_200));
        c.on_sample(51_000); // qd = t_low (band): the NACK cuts
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // Off: every NACK cuts.
        let mut c = Stride::new(params());
        c.on_sample(50_000);
        c.nack();
        assert_eq!(
            (c.branch(), c.rate()),
            (Branch::Nack, 80_100 - (80_100 >> 3))
        );
    }

    #[test]
    fn gate_high_holds_nacks_below_t_high() {
        let mut p = params();
        p.nack_gate = true;
        p.gate_high = true;
        let mut c = Stride::new(p);
        c.on_sample(50_000);
        c.on_sample(55_000); // qd 5_000: between t_low and t_high
        let r = c.rate();
        c.nack(); // held: below t_high
        assert_eq!((c.branch(), c.rate()), (Branch::NackHeld, r));
        c.on_sample(60_000); // qd = t_high: the NACK cuts
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // The same samples with the gate at t_low: the first NACK cuts.
        p.gate_high = false;
        let mut c = Stride::new(p);
        c.on_sample(50_000);
        c.on_sample(55_000);
        let r = c.rate();
        c.nack();
        assert_eq!((c.branch(), c.rate()), (Branch::Nack, r - (r >> 3)));
        // Not a mechanism of the paper's profile.
        p.gate_high = true;
        assert!(!p.is_paper());
        assert!(p.without_mechanisms().is_paper() && !p.without_mechanisms().gate_high);
    }

    /// The hand-checked parameters with a first window of 10 000 bytes.
    fn with_first_window() -> StrideParams {
        StrideParams {
            first_window: 10_000,
            ..params()
        }
    }

    #[test]
    fn the_first_window_leaves_at_rate_max_then_algorithm_1_paces() {
        let mut c = Stride::new(with_first_window());
        assert_eq!(c.rate(), 1_000_000, "the first window at rate_max");
        c.on_sent(0, 6_000);
        assert_eq!((c.rate(), c.first_window_left()), (1_000_000, 4_000));
        // Sent whole before any sample: no evidence about the path, rate_init.
        c.on_sent(0, 6_000);
        assert_eq!((c.rate(), c.first_window_left()), (80_000, 0));
        c.on_sample(50_000);
        assert_eq!(c.rate(), 80_100, "Algorithm 1 from rate_init");
    }

    #[test]
    fn a_first_window_sampled_without_a_queue_keeps_half_its_rate() {
        let mut c = Stride::new(with_first_window());
        c.on_sent(0, 3_000);
        c.on_sample(50_000); // low: no queue, the window goes on
        assert_eq!((c.branch(), c.rate()), (Branch::Low, 1_000_000));
        assert_eq!(c.algorithm_rate(), 80_100);
        c.on_sent(0, 7_000);
        assert_eq!(c.rate(), 500_000, "rate_max >> first_window_keep");
        // The listener's start grant caps the first window's rate, and what it keeps, whether
        // or not the `grant` switch applies it to rate_init too; never below rate_init.
        for grant in [false, true] {
            let mut c = Stride::new(StrideParams {
                grant,
                ..with_first_window()
            });
            c.handshake(None, Some(2));
            assert_eq!(c.rate(), 250_000);
            c.on_sample(50_000);
            c.on_sent(0, 10_000);
            assert_eq!(c.rate(), 125_000);
            let mut c = Stride::new(StrideParams {
                grant,
                ..with_first_window()
            });
            c.handshake(None, Some(4));
            // rate_max >> 4 is below rate_init: the `grant` switch lowers rate_init to it.
            assert_eq!(c.rate(), if grant { 62_500 } else { 80_000 });
        }
    }

    #[test]
    fn a_queue_a_nack_or_a_timeout_ends_the_first_window() {
        let mut c = Stride::new(with_first_window());
        c.on_sample(50_000);
        c.on_sample(60_000); // qd = t_high: high
        assert_eq!((c.branch(), c.first_window_left()), (Branch::High, 0));
        assert_eq!(c.rate(), 80_100 - (80_100 >> 3));
        c.on_sent(0, 10_000); // nothing left to count: the rate stays Algorithm 1's
        assert_eq!(c.rate(), 80_100 - (80_100 >> 3));
        let mut c = Stride::new(with_first_window());
        c.nack();
        assert_eq!((c.rate(), c.first_window_left()), (70_000, 0));
        let mut c = Stride::new(with_first_window());
        c.timeout();
        assert_eq!((c.rate(), c.first_window_left()), (40_000, 0));
        // Off in the paper's profile, and 0 turns it off.
        assert_eq!(StrideParams::paper(1_000_000).first_window, 0);
        let mut c = Stride::new(params());
        assert_eq!(c.rate(), 80_000);
        c.on_sent(0, 1_000);
        assert_eq!(c.rate(), 80_000);
    }

    #[test]
    fn the_first_window_default_is_13_us_of_line() {
        let p = StrideParams::for_line_rate(rate_from_gbps(10.0));
        assert_eq!(p.first_window, 16 * 1024);
        let p = StrideParams::for_line_rate(rate_from_gbps(100.0));
        assert_eq!(p.first_window, 160 * 1024);
        let p = StrideParams::for_line_rate(rate_from_gbps(0.1));
        assert_eq!(p.first_window, 4096, "at least 4 KiB");
    }
}
