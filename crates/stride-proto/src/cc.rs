//! Congestion control: the [`RateController`] trait, STRIDE's Algorithm 1 ([`Stride`]) and a
//! fixed-rate controller ([`FixedRate`]).
//!
//! Rates are `u32` in units of 2^-20 bytes per nanosecond ([`RATE_FRAC_BITS`]); 10 Gbit/s is
//! 1 310 720. The per-sample update of [`Stride`] uses only shifts, adds, subtracts, compares and a
//! leading-one detector: no multiply, no divide (see `docs/spec.md`, section "Rate control").

/// Fractional bits of a rate: one unit is 2^-20 bytes per nanosecond (about 7.63 bit/s).
pub const RATE_FRAC_BITS: u32 = 20;

/// Converts Gbit/s (as a float, configuration time only) to rate units.
pub fn rate_from_gbps(gbps: f64) -> u32 {
    let v = gbps / 8.0 * f64::from(1u32 << RATE_FRAC_BITS);
    v.round().clamp(0.0, u32::MAX as f64) as u32
}

/// Converts rate units to Gbit/s (reporting only).
pub fn rate_to_gbps(rate: u32) -> f64 {
    f64::from(rate) * 8.0 / f64::from(1u32 << RATE_FRAC_BITS)
}

/// What a controller is told when an ACK arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckSample {
    /// The echoed single trip time: receiver clock minus sender clock, mod 2^32 ns.
    pub stt: u32,
    /// Bytes newly acknowledged by this ACK.
    pub acked: u32,
}

/// A rate-based congestion controller driven by acknowledgement events.
pub trait RateController: Send {
    /// An ACK arrived carrying an STT sample.
    fn on_ack(&mut self, sample: AckSample);
    /// A NACK arrived (a gap at the receiver).
    fn on_nack(&mut self);
    /// The retransmission timer fired.
    fn on_timeout(&mut self);
    /// The current sending rate, in 2^-20 bytes/ns.
    fn rate(&self) -> u32;
}

/// Parameters of Algorithm 1. Every field is an integer so that the same values configure the
/// Verilog core (`hw/rtl/stride_cc.v`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct StrideParams {
    /// EWMA gain of the STT gradient is 2^-alpha_shift (paper's `a = 2^-i`). 0..=15.
    pub alpha_shift: u8,
    /// Additive increase step (rate units) below `t_low` (paper's beta).
    pub beta: u32,
    /// Increase step when the gradient is not positive (paper's `w * beta`, precomputed).
    pub wbeta: u32,
    /// Queueing delay (STT above its windowed minimum, ns) under which the rate increases.
    pub t_low: u32,
    /// Queueing delay (ns) at or above which the rate decreases by 2^-md_shift.
    pub t_high: u32,
    /// Multiplicative decrease shift (paper: k = 3, `r -= r >> 3`).
    pub md_shift: u8,
    /// The gradient is normalised by 2^norm_shift ns (the base delay). 0..=31.
    pub norm_shift: u8,
    /// Lowest rate.
    pub rate_min: u32,
    /// Highest rate (normally the line rate).
    pub rate_max: u32,
    /// Rate before the first sample.
    pub rate_init: u32,
    /// Samples per window of the two-bucket windowed minimum of STT. >= 1.
    pub min_window: u16,
}

impl StrideParams {
    /// Defaults for a given line rate (rate units); see the defaults table in `docs/spec.md`.
    pub fn for_line_rate(line: u32) -> Self {
        StrideParams {
            // Chosen by the simulator sweep (docs/results.md, "Choosing the defaults"):
            // additive step 1/64 of the line rate per sample (156 Mbit/s at 10 Gbit/s), a
            // quarter of that on a falling gradient, T_high 80 us, start at a quarter of the
            // line rate (a synchronised start at line rate overflows the first shared queue).
            alpha_shift: 3,
            beta: (line >> 6).max(1),
            wbeta: (line >> 8).max(1),
            t_low: 5_000,
            t_high: 80_000,
            md_shift: 3,
            norm_shift: 13,
            rate_min: rate_from_gbps(0.01).min(line),
            rate_max: line,
            rate_init: (line >> 2).max(rate_from_gbps(0.01).min(line)),
            min_window: 256,
        }
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
        }
    }

    /// Checks ranges; returns the name of the first bad field and why.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
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
        Ok(())
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
        if let Err((f, why)) = p.validate() {
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
    /// The branch the last event took.
    pub fn branch(&self) -> Branch {
        self.branch
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

    fn clamp(&mut self) {
        self.rate = self.rate.clamp(self.p.rate_min, self.p.rate_max);
    }

    // BEGIN UPDATE PATH: shifts, adds, subtracts and compares only (checked by a test).
    /// One STT sample (Algorithm 1, lines 3-24).
    pub fn on_sample(&mut self, s: u32) {
        if !self.init {
            self.init = true;
            self.stt_old = s;
            self.min_cur = s;
            self.min_prev = s;
            self.d = 0;
            self.count = 0;
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

    /// A NACK: decrease by 2^-md_shift.
    pub fn nack(&mut self) {
        self.rate -= self.rate >> self.p.md_shift;
        self.branch = Branch::Nack;
        self.clamp();
    }

    /// A retransmission timeout: halve.
    pub fn timeout(&mut self) {
        self.rate -= self.rate >> 1;
        self.branch = Branch::Timeout;
        self.clamp();
    }
    // END UPDATE PATH
}

impl RateController for Stride {
    fn on_ack(&mut self, sample: AckSample) {
        self.on_sample(sample.stt);
    }
    fn on_nack(&mut self) {
        self.nack();
    }
    fn on_timeout(&mut self) {
        self.timeout();
    }
    fn rate(&self) -> u32 {
        self.rate
    }
}

/// A controller that never changes its rate (a controller-less sender pinned at a rate).
#[derive(Clone, Copy, Debug)]
pub struct FixedRate(pub u32);

impl RateController for FixedRate {
    fn on_ack(&mut self, _: AckSample) {}
    fn on_nack(&mut self) {}
    fn on_timeout(&mut self) {}
    fn rate(&self) -> u32 {
        self.0
    }
}

/// Which controller a connection uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CcConfig {
    /// Algorithm 1.
    Stride(StrideParams),
    /// A fixed rate (rate units).
    Fixed(u32),
}

impl CcConfig {
    /// Builds the controller.
    pub fn build(&self) -> Box<dyn RateController> {
        match *self {
            CcConfig::Stride(p) => Box::new(Stride::new(p)),
            CcConfig::Fixed(r) => Box::new(FixedRate(r)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn update_path_has_no_multiply_or_divide() {
        let src = include_str!("cc.rs");
        let begin = src.find("// BEGIN UPDATE PATH").expect("begin marker");
        let end = src.find("// END UPDATE PATH").expect("end marker");
        assert!(end > begin);
        let mut code_lines = 0;
        for line in src[begin..end].lines().skip(1) {
            let code = line.split("//").next().unwrap_or("");
            assert!(
                !code.contains('*') && !code.contains('/') && !code.contains('%'),
                "arithmetic beyond shift/add/subtract in the update path: {line}"
            );
            if !code.trim().is_empty() {
                code_lines += 1;
            }
        }
        assert!(
            code_lines > 30,
            "the marked region must hold the update code"
        );
    }

    #[test]
    fn rate_units() {
        assert_eq!(rate_from_gbps(10.0), 1_310_720);
        assert!((rate_to_gbps(1_310_720) - 10.0).abs() < 1e-9);
    }
}
