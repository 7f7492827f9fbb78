//! Swift (Kumar et al., "Swift: Delay is Simple and Effective for Congestion Control in the
//! Datacenter", SIGCOMM 2020): a congestion window in packets, additive increase below a target
//! delay, multiplicative decrease proportional to the excess above it (at most once per RTT,
//! bounded by `max_mdf`), and a target that grows with the path's length (topology scaling:
//! `hop_scale` per switch crossed, from the path the connection's packets take) and with a
//! small window (flow scaling: α/√cwnd + β, clamped to `[0, fs_range]`, with `fs_range` a
//! multiple of the base target so that it follows it). Always paced at cwnd·MSS per RTT; the
//! window caps bytes in flight.
//!
//! The values follow the Swift model of `Broadcom/csg-htsim` (`sim/swift.cpp`, the `SwiftSrc`
//! constructor and `targetDelay`); every value and its source is in `docs/baselines.md`
//! ("Swift"). The window is kept in 1/1000 packets; the flow-scaling term uses one square root
//! per ACK in floating point (a baseline, not the hardware path).

use super::{AckSample, Controller};

crate::controller_params! {
    /// Swift's parameters (see the module table).
    pub struct SwiftParams for |_p| "swift", (line) {
        /// Payload bytes per packet (the window's unit).
        mss: u32 [Bytes] = 1440;
        /// Additive increment per RTT, 1/1000 packets.
        ai_milli: u32 [Milli] = 1000;
        /// Multiplicative decrease factor β, 1/1000.
        beta_milli: u32 [Milli] = 800;
        /// Largest decrease per RTT, 1/1000.
        max_mdf_milli: u32 [Milli] = 500;
        /// Target fabric delay before scaling (ns).
        base_target: u32 [Nanos, was "base_target_ns"] = BASE_TARGET_NS;
        /// Target added per switch on the path (ns).
        // h = base target / 6.55
        hop_scale: u32 [Nanos, was "hop_scale_ns"] = (BASE_TARGET_NS as u64 * 100 / 655) as u32;
        /// Switches on the path until the path reports its own count (`Controller::on_path`; the
        /// simulator does, a UDP host does not).
        hops: u32 [Count] = 0;
        /// Flow-scaling range, in multiples of the base target.
        fs_range_mult: u32 [Count] = 5;
        /// Window (1/1000 packets) at which flow scaling adds the whole range.
        fs_min_cwnd_milli: u32 [Milli] = 100;
        /// Window (1/1000 packets) at which flow scaling adds nothing.
        fs_max_cwnd_milli: u32 [Milli] = 100_000;
        /// Smallest window (1/1000 packets).
        min_cwnd_milli: u32 [Milli] = 1;
        /// Largest window (1/1000 packets).
        max_cwnd_milli: u32 [Milli] = 10_000_000;
        /// Starting window (1/1000 packets).
        init_cwnd_milli: u32 [Milli] = 10_000;
        /// Pacing ceiling: the line rate (rate units).
        rate_max: u32 [Rate] = line;
    }
    build: |p, now| Swift::new(p)
}

/// The base target delay (ns).
const BASE_TARGET_NS: u32 = 20_000;

impl SwiftParams {
    /// Checks ranges.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.mss == 0 {
            return Err(("mss", "must be positive"));
        }
        if self.beta_milli > 1000 {
            return Err(("beta_milli", "must be at most 1000"));
        }
        if self.max_mdf_milli > 1000 {
            return Err(("max_mdf_milli", "must be at most 1000"));
        }
        if self.fs_min_cwnd_milli == 0 || self.fs_min_cwnd_milli >= self.fs_max_cwnd_milli {
            return Err((
                "fs_min_cwnd_milli",
                "must be positive and below fs_max_cwnd_milli",
            ));
        }
        if self.min_cwnd_milli == 0 || self.min_cwnd_milli > self.max_cwnd_milli {
            return Err((
                "min_cwnd_milli",
                "must be positive and at most max_cwnd_milli",
            ));
        }
        if self.init_cwnd_milli < self.min_cwnd_milli || self.init_cwnd_milli > self.max_cwnd_milli
        {
            return Err((
                "init_cwnd_milli",
                "must lie in min_cwnd_milli..=max_cwnd_milli",
            ));
        }
        if self.rate_max == 0 {
            return Err(("rate_max", "must be positive"));
        }
        Ok(())
    }
}

/// A Swift sender.
#[derive(Clone, Debug)]
pub struct Swift {
    p: SwiftParams,
    cwnd: u64,
    srtt: u64,
    last_decrease: Option<u64>,
    rate: u32,
}

impl Swift {
    /// A sender with these parameters.
    pub fn new(p: SwiftParams) -> Self {
        let mut s = Swift {
            p,
            cwnd: u64::from(p.init_cwnd_milli),
            srtt: 0,
            last_decrease: None,
            rate: 0,
        };
        s.update_rate();
        s
    }

    /// The window in 1/1000 packets.
    pub fn cwnd_milli(&self) -> u64 {
        self.cwnd
    }

    /// The target delay at the current window (ns): base + hops·h + flow scaling.
    pub fn target(&self) -> u64 {
        let p = &self.p;
        let inv = |w: u32| 1.0 / (f64::from(w) / 1000.0).sqrt();
        let range = f64::from(p.fs_range_mult) * f64::from(p.base_target);
        let alpha = range / (inv(p.fs_min_cwnd_milli) - inv(p.fs_max_cwnd_milli));
        let beta = -alpha * inv(p.fs_max_cwnd_milli);
        let w = (self.cwnd as f64 / 1000.0).max(1e-3);
        let fs = (alpha / w.sqrt() + beta).clamp(0.0, range);
        u64::from(p.base_target) + u64::from(p.hops) * u64::from(p.hop_scale) + fs as u64
    }

    fn update_rate(&mut self) {
        let rtt = if self.srtt > 0 {
            self.srtt
        } else {
            u64::from(self.p.base_target)
        };
        // cwnd * mss bytes per rtt, in 2^-20 bytes/ns.
        let r = ((self.cwnd * u64::from(self.p.mss)) << 20) / (1000 * rtt.max(1));
        self.rate = r.clamp(1, u64::from(self.p.rate_max)) as u32;
    }

    fn clamp(&mut self) {
        self.cwnd = self.cwnd.clamp(
            u64::from(self.p.min_cwnd_milli),
            u64::from(self.p.max_cwnd_milli),
        );
    }

    /// One delay sample (`delay` ns, the fabric delay) acknowledging `acked` bytes at `now`.
    pub fn on_delay(&mut self, now: u64, delay: u64, acked: u32) {
        let p = self.p;
        self.srtt = if self.srtt == 0 {
            delay
        } else {
            self.srtt - (self.srtt >> 3) + (delay >> 3)
        };
        let target = self.target();
        let pkts_milli = u64::from(acked) * 1000 / u64::from(p.mss);
        if delay < target {
            if self.cwnd >= 1000 {
                // ai / cwnd per acknowledged packet: ai per window.
                self.cwnd += u64::from(p.ai_milli) * pkts_milli / self.cwnd;
            } else {
                self.cwnd += u64::from(p.ai_milli) * pkts_milli / 1000;
            }
        } else if self
            .last_decrease
            .is_none_or(|t| now.saturating_sub(t) >= self.srtt)
        {
            let excess_milli = (delay - target) * 1000 / delay;
            let md =
                (u64::from(p.beta_milli) * excess_milli / 1000).min(u64::from(p.max_mdf_milli));
            self.cwnd -= self.cwnd * md / 1000;
            self.last_decrease = Some(now);
        }
        self.clamp();
        self.update_rate();
    }
}

impl Controller for Swift {
    fn on_ack(&mut self, now: u64, s: &AckSample) {
        if s.rtt > 0 {
            self.on_delay(now, s.rtt, s.acked);
        }
    }
    fn on_nack(&mut self, now: u64) {
        if self
            .last_decrease
            .is_none_or(|t| now.saturating_sub(t) >= self.srtt)
        {
            self.cwnd -= self.cwnd * u64::from(self.p.max_mdf_milli) / 1000;
            self.last_decrease = Some(now);
            self.clamp();
            self.update_rate();
        }
    }
    fn on_timeout(&mut self, now: u64) {
        self.cwnd = u64::from(self.p.min_cwnd_milli).max(1000);
        self.last_decrease = Some(now);
        self.clamp();
        self.update_rate();
    }
    fn on_path(&mut self, hops: u32) {
        self.p.hops = hops;
    }
    fn rate(&self) -> u32 {
        self.rate
    }
    fn window(&self) -> Option<u32> {
        Some((self.cwnd * u64::from(self.p.mss) / 1000).min(u64::from(u32::MAX)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::rate_from_gbps;

    fn ctl() -> Swift {
        Swift::new(SwiftParams::for_line_rate(rate_from_gbps(100.0)))
    }

    #[test]
    fn target_scales_with_the_paths_hops_and_shrinks_with_the_window() {
        let mut c = ctl();
        let p = c.p;
        let h = u64::from(p.hop_scale);
        c.cwnd = 100_000; // at fs_max_cwnd: no flow scaling
        assert_eq!(c.target(), 20_000, "no hop count known yet");
        c.on_path(5);
        assert_eq!(c.target(), 20_000 + 5 * h);
        c.on_path(1);
        assert_eq!(c.target(), 20_000 + h);
        c.cwnd = 100; // at fs_min_cwnd: the whole range, 5 x the base target
        assert!(
            c.target().abs_diff(20_000 + h + 100_000) <= 1,
            "{}",
            c.target()
        );
        c.cwnd = 1_000;
        let mid = c.target();
        assert!(mid > 20_000 + h && mid < 120_000 + h);
        // The flow-scaling range follows the base target.
        c.p.base_target = 40_000;
        c.cwnd = 100;
        assert!(
            c.target().abs_diff(40_000 + h + 200_000) <= 1,
            "{}",
            c.target()
        );
    }

    #[test]
    fn holds_delay_near_target_window_grows_below_and_shrinks_above() {
        let mut c = ctl();
        c.p.hop_scale = 2_000;
        c.on_path(5); // target 20 + 5 x 2 = 30 us
        c.cwnd = 100_000;
        let w0 = c.cwnd_milli();
        c.on_delay(0, 20_000, 64 * 1024);
        assert!(c.cwnd_milli() > w0);
        let w1 = c.cwnd_milli();
        // 60 us against a 30 us target: cut by 0.8 * (60-30)/60 = 0.4
        c.on_delay(100_000, 60_000, 64 * 1024);
        assert_eq!(c.cwnd_milli(), w1 - w1 * 400 / 1000);
        // at most once per RTT
        let w2 = c.cwnd_milli();
        c.on_delay(100_001, 60_000, 64 * 1024);
        assert_eq!(c.cwnd_milli(), w2);
        // a huge delay cuts by max_mdf only
        c.on_delay(10_000_000, 10_000_000, 1440);
        assert_eq!(c.cwnd_milli(), w2 - w2 / 2);
        assert!(c.window().unwrap() > 0);
    }
}
