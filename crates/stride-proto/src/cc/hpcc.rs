//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019): switches stamp
//! each packet with INT records (queue length, transmitted bytes, timestamp, link rate); the
//! receiver echoes them; the sender estimates each hop's normalised inflight
//! `u = qlen/(B·T) + txRate/B`, keeps an EWMA `U` of the most loaded hop over the base RTT `T`,
//! and sets its window `W = Wc/(U/η) + W_AI` when `U ≥ η` or after `max_stage` additive
//! steps, else `W = Wc + W_AI`; the reference window `Wc` is updated once per RTT. Pacing rate
//! `W/T`. Simulator only: the wire format has no room for INT.
//!
//! | parameter | paper | here |
//! |---|---|---|
//! | target utilisation η | 0.95 | `eta_milli` = 950 |
//! | maxStage | 5 | `max_stage` |
//! | W_AI | 80 bytes at 100 Gbit/s (it scales with the BDP) | `w_ai` = 80 B × line/100 Gbit/s |
//! | T (base RTT) | the fabric's base RTT | `base_rtt_ns` |
//!
//! The utilisation estimate uses floating point once per ACK (a baseline, not the hardware
//! path).

use super::{AckSample, Controller, IntHop, RATE_FRAC_BITS};

/// HPCC's parameters (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HpccParams {
    /// Target utilisation η, 1/1000.
    pub eta_milli: u32,
    /// Additive steps before a multiplicative update is forced.
    pub max_stage: u32,
    /// Additive increase (bytes).
    pub w_ai: u32,
    /// Base RTT T (ns).
    pub base_rtt_ns: u64,
    /// Line rate (rate units): the ceiling, and `W_init = line × T`.
    pub rate_max: u32,
}

impl HpccParams {
    /// The paper's values at line rate `line` for a fabric of base RTT 10 µs (W_AI scaled to
    /// the line rate like the BDP).
    pub fn for_line_rate(line: u32) -> Self {
        HpccParams {
            eta_milli: 950,
            max_stage: 5,
            w_ai: ((80 * u64::from(line)) / u64::from(super::rate_from_gbps(100.0))).max(1) as u32,
            base_rtt_ns: 10_000,
            rate_max: line,
        }
    }

    /// Checks ranges.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.eta_milli == 0 || self.eta_milli > 1000 {
            return Err(("eta_milli", "must be in 1..=1000"));
        }
        if self.base_rtt_ns == 0 {
            return Err(("base_rtt_ns", "must be positive"));
        }
        if self.rate_max == 0 {
            return Err(("rate_max", "must be positive"));
        }
        Ok(())
    }
}

/// An HPCC sender.
#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    /// Window and reference window (bytes).
    w: f64,
    wc: f64,
    u: f64,
    stage: u32,
    last: Vec<IntHop>,
    last_wc_update: Option<u64>,
}

impl Hpcc {
    /// A sender starting at the line rate's window.
    pub fn new(p: HpccParams) -> Self {
        let w = p.rate_max as f64 / f64::from(1u32 << RATE_FRAC_BITS) * p.base_rtt_ns as f64;
        Hpcc {
            p,
            w,
            wc: w,
            u: 0.0,
            stage: 0,
            last: Vec::new(),
            last_wc_update: None,
        }
    }

    /// The window (bytes).
    pub fn window_bytes(&self) -> f64 {
        self.w
    }
    /// The utilisation estimate U.
    pub fn utilisation(&self) -> f64 {
        self.u
    }

    /// One set of echoed INT records at `now`.
    pub fn on_records(&mut self, now: u64, hops: &[IntHop]) {
        let t = self.p.base_rtt_ns as f64;
        if self.last.len() == hops.len() && !hops.is_empty() {
            let mut u = 0.0f64;
            let mut tau = t;
            for (h, l) in hops.iter().zip(&self.last) {
                let dt = h.ts.saturating_sub(l.ts);
                if dt == 0 || h.rate_bps == 0 {
                    continue;
                }
                let b = h.rate_bps as f64 / 8e9; // bytes per ns
                let tx = h.tx_bytes.saturating_sub(l.tx_bytes) as f64 / dt as f64;
                let hop_u = h.qlen.min(l.qlen) as f64 / (b * t) + tx / b;
                if hop_u > u {
                    u = hop_u;
                    tau = dt as f64;
                }
            }
            let tau = tau.min(t);
            self.u = (1.0 - tau / t) * self.u + tau / t * u;
            let update_wc = self
                .last_wc_update
                .is_none_or(|x| now.saturating_sub(x) >= self.p.base_rtt_ns);
            let eta = f64::from(self.p.eta_milli) / 1000.0;
            let w = if self.u >= eta || self.stage >= self.p.max_stage {
                if update_wc {
                    self.stage = 0;
                }
                self.wc / (self.u / eta) + f64::from(self.p.w_ai)
            } else {
                if update_wc {
                    self.stage += 1;
                }
                self.wc + f64::from(self.p.w_ai)
            };
            let max = Hpcc::new(self.p).w;
            self.w = w.clamp(f64::from(self.p.w_ai), max);
            if update_wc {
                self.wc = self.w;
                self.last_wc_update = Some(now);
            }
        }
        self.last.clear();
        self.last.extend_from_slice(hops);
    }
}

impl Controller for Hpcc {
    fn on_ack(&mut self, _now: u64, _s: &AckSample) {}
    fn on_nack(&mut self, _now: u64) {}
    fn on_timeout(&mut self, _now: u64) {
        self.w = f64::from(self.p.w_ai).max(self.w / 2.0);
        self.wc = self.w;
    }
    fn on_int(&mut self, now: u64, hops: &[IntHop]) {
        self.on_records(now, hops);
    }
    fn rate(&self) -> u32 {
        let r = self.w / self.p.base_rtt_ns as f64 * f64::from(1u32 << RATE_FRAC_BITS);
        (r as u64).clamp(1, u64::from(self.p.rate_max)) as u32
    }
    fn window(&self) -> Option<u32> {
        Some(self.w as u32)
    }
}

crate::factory_params!(
    HpccParams,
    "hpcc",
    |p, now| Hpcc::new(p),
    [eta_milli, max_stage, w_ai, base_rtt_ns, rate_max]
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::rate_from_gbps;

    /// A fluid model of one 10 Gbit/s hop shared by `n` identical HPCC senders: each base RTT
    /// the hop carries min(offered, capacity) and queues the rest; every sender sees the records.
    fn fluid(n: u32, rtts: u32) -> (Hpcc, f64, u64) {
        let line = rate_from_gbps(10.0);
        let p = HpccParams::for_line_rate(line);
        let mut c = Hpcc::new(p);
        let cap = 10e9 / 8e9; // bytes per ns
        let (mut q, mut tx, mut ts) = (0f64, 0u64, 0u64);
        let mut carried = 0.0;
        for k in 0..rtts {
            let offered = f64::from(n) * f64::from(c.rate()) / f64::from(1u32 << RATE_FRAC_BITS);
            let dt = p.base_rtt_ns as f64;
            let sent = (offered * dt + q).min(cap * dt);
            q = (q + offered * dt - sent).max(0.0);
            tx += sent as u64;
            ts += p.base_rtt_ns;
            carried = sent / (cap * dt);
            let hop = IntHop {
                qlen: q as u64,
                tx_bytes: tx,
                ts,
                rate_bps: 10_000_000_000,
            };
            c.on_int(u64::from(k) * p.base_rtt_ns, &[hop]);
        }
        (c, carried, q as u64)
    }

    #[test]
    fn utilisation_settles_near_eta_with_an_empty_queue() {
        for n in [1u32, 4, 16] {
            let (c, carried, q) = fluid(n, 400);
            println!(
                "n {n}: U {:.3}, carried {carried:.3}, queue {q} B",
                c.utilisation()
            );
            assert!(
                (c.utilisation() - 0.95).abs() < 0.05,
                "n {n}: U {}",
                c.utilisation()
            );
            assert!(carried > 0.85, "n {n}: link carries {carried}");
            assert!(q < 2_000, "n {n}: standing queue {q} B");
        }
    }

    #[test]
    fn a_queue_shrinks_the_window_multiplicatively() {
        let mut c = Hpcc::new(HpccParams::for_line_rate(rate_from_gbps(10.0)));
        let w0 = c.window_bytes();
        let h = |qlen, tx, ts| IntHop {
            qlen,
            tx_bytes: tx,
            ts,
            rate_bps: 10_000_000_000,
        };
        c.on_int(0, &[h(50_000, 0, 0)]);
        // full link plus 50 KB of queue over T = 10 us (12.5 KB of BDP): U = 5
        c.on_int(10_000, &[h(50_000, 12_500, 10_000)]);
        assert!((c.utilisation() - 5.0).abs() < 0.01, "{}", c.utilisation());
        let expect = w0 / (5.0 / 0.95) + 8.0;
        assert!(
            (c.window_bytes() - expect).abs() < 1.0,
            "{}",
            c.window_bytes()
        );
    }
}
