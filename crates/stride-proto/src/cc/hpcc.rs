//! HPCC (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019, Algorithm 1):
//! switches stamp each data packet with one INT record per hop (queue length, bytes
//! transmitted, timestamp, link rate); the receiver echoes them on the packet's ACK. On every
//! echo the sender estimates each hop's normalised inflight
//! `u = min(qlen, qlen') / (B·T) + txRate / B` (`qlen'` and the rate from the previous echo
//! of the same hop), takes the most loaded hop and folds it into an EWMA `U` whose weight is
//! that hop's record interval over the base RTT `T`. The window follows a reference window
//! `Wc`: `W = Wc / (U/η) + W_AI` when `U ≥ η` or after `max_stage` additive steps, else
//! `W = Wc + W_AI`. `Wc` (and the stage count) move only once per RTT: on the first ACK
//! beyond the sequence that was next to send at the previous update. Every other ACK sets `W`
//! from the same `Wc` (the paper's fast reaction without overreaction). `W` caps the bytes
//! in flight and sets the pacing rate `W/T`. Simulator only: the wire format has no room for
//! INT.
//!
//! `T` is the fabric's largest base RTT (serialisation included) and the start window is one
//! line-rate BDP `W_init = line × T`; the simulator derives `T` from the topology
//! ([`HpccParams::for_fabric`]). `W_AI` scales like the reference's additive step, a rate of
//! line/2500 held for `T`: `W_AI = line × T / 2500 = W_init / 2500`, so it grows with both the
//! line rate and T.
//!
//! Paper: Li et al., SIGCOMM 2019 (Algorithm 1; its text could not be read here, so every value
//! is the authors' code's). Authors' code: `alibaba-edu/High-Precision-Congestion-Control`,
//! paths under `simulation/`.
//!
//! | parameter | authors' code | here |
//! |---|---|---|
//! | target utilisation η | `U_TARGET 0.95` (`mix/config.txt`:36; `run.py`:71 default 95) | `eta_milli` = 950 |
//! | maxStage | ns-3 attribute default 5 (`rdma-hw.cc`:112-116); `MI_THRESH 0` in the experiment configurations (`run.py`:72, `mix/config.txt`:37) | `max_stage` = 5 |
//! | W_AI | `RATE_AI` = 10 Mb/s per 25 Gb/s of line (`run.py`:112) with window = rate × T (`rdma-queue-pair.cc`:125-137) | `w_ai` = line × T / 2500 (27 B at 10 Gbit/s, T = 55.86 µs) |
//! | T | largest host-pair RTT: 2 × propagation + one-way serialisation of a payload (`scratch/third.cc`:250, 910-928; `GLOBAL_T 1`, `third.cc`:138) | `base_rtt`: largest host-pair RTT, a full packet out and its ACK back |
//! | W_init | `maxBdp` (`third.cc`:921-925); the rate starts at line (`rdma-hw.cc`:239-245) | `rate_max` × T |
//! | u per hop | `min(qlen, qlen')/(B·T) + txRate/B` (`rdma-hw.cc`:797-800) | same |
//! | EWMA of U | weight τ/T, τ ≤ T (`rdma-hw.cc`:827-829); U starts at 1 (`rdma-queue-pair.cc`:49) | same |
//! | Wc update | `ack_seq > m_lastUpdateSeq`, then `= snd_nxt` (`rdma-hw.cc`:747, 908-911) | once per RTT, by sequence |
//! | rate floor | `MIN_RATE` 100 Mb/s (`mix/config.txt`:24, `rdma-hw.cc`:22-26); 1 Gb/s at 100 Gb/s (`run.py`:28) | `rate_min` = line / 100 |
//! | window | a packet may leave while inflight < W (`rdma-queue-pair.cc`:120-123); rate-paced (`rdma-hw.cc`:591-598) | W rounded up to whole packets; paced at W/T |
//!
//! The utilisation estimate uses floating point once per ACK (a baseline, not the hardware
//! path).

use super::{AckSample, Controller, IntHop, RATE_FRAC_BITS};

/// The reference's additive step is the line rate over this (10 Mbit/s per 25 Gbit/s of line,
/// `simulation/run.py`:112 of the authors' code), held for one base RTT.
pub const W_AI_DIVISOR: u64 = 2500;

/// The window floor is the line rate over this (100 Mbit/s at 10 Gbit/s, 1 Gbit/s at
/// 100 Gbit/s: the authors' `MIN_RATE`).
pub const RATE_MIN_DIVISOR: u32 = 100;

/// T of [`HpccParams::for_line_rate`] when the fabric is not known (the simulator replaces it
/// with the fabric's largest base RTT, see [`HpccParams::for_fabric`]).
pub const DEFAULT_BASE_RTT_NS: u64 = 10_000;

crate::controller_params! {
    /// HPCC's parameters (see the module table).
    pub struct HpccParams for |_p| "hpcc", (line) {
        /// Target utilisation η, 1/1000.
        eta_milli: u32 [Milli] = 950;
        /// Additive steps before a multiplicative update is forced.
        max_stage: u32 [Count] = 5;
        /// Additive increase W_AI (bytes).
        w_ai: u32 [Bytes] = w_ai(line, DEFAULT_BASE_RTT_NS);
        /// Base RTT T: the fabric's largest, serialisation included.
        base_rtt: u64 [Nanos, was "base_rtt_ns"] = DEFAULT_BASE_RTT_NS;
        /// Line rate: the ceiling, and `W_init = line × T`.
        rate_max: u32 [Rate] = line;
        /// Floor of the pacing rate; the window floor is `rate_min × T`.
        rate_min: u32 [Rate] = (line / RATE_MIN_DIVISOR).max(1);
    }
    build: |p, _now| Hpcc::new(p)
}

/// W_AI = W_init / 2500 with W_init = line × T (bytes).
fn w_ai(line: u32, base_rtt: u64) -> u32 {
    let w_init = (u128::from(line) * u128::from(base_rtt)) >> RATE_FRAC_BITS;
    (w_init / u128::from(W_AI_DIVISOR)).clamp(1, u128::from(u32::MAX)) as u32
}

/// The registry's fit: T is the fabric's largest base RTT, as the authors' simulator sets it
/// from the topology, and W_AI follows it.
pub fn fit(c: &mut super::CcConfig, f: &super::Fabric) {
    if let Some(p) = c.params_mut::<HpccParams>() {
        *p = HpccParams::for_fabric(f.line, f.base_rtt_ns.max(1));
    }
}

impl HpccParams {
    /// The reference's values at line rate `line` on a fabric whose largest base RTT is
    /// `base_rtt`: `W_init = line × T`, `W_AI = W_init / 2500`.
    pub fn for_fabric(line: u32, base_rtt: u64) -> Self {
        HpccParams {
            w_ai: w_ai(line, base_rtt),
            base_rtt,
            ..Self::for_line_rate(line)
        }
    }

    /// Checks ranges.
    pub fn check(&self) -> Result<(), (&'static str, &'static str)> {
        if self.eta_milli == 0 || self.eta_milli > 1000 {
            return Err(("eta_milli", "must be in 1..=1000"));
        }
        if self.base_rtt == 0 {
            return Err(("base_rtt", "must be positive"));
        }
        if self.rate_max == 0 {
            return Err(("rate_max", "must be positive"));
        }
        if self.rate_min == 0 || self.rate_min > self.rate_max {
            return Err(("rate_min", "must be in 1..=rate_max"));
        }
        if self.w_ai == 0 {
            return Err(("w_ai", "must be positive"));
        }
        Ok(())
    }

    /// Bytes per ns at `rate` (rate units).
    fn bytes_per_ns(rate: u32) -> f64 {
        f64::from(rate) / f64::from(1u32 << RATE_FRAC_BITS)
    }

    /// The start window `W_init = line × T` (bytes).
    pub fn w_init(&self) -> f64 {
        Self::bytes_per_ns(self.rate_max) * self.base_rtt as f64
    }

    /// The window floor `rate_min × T` (bytes).
    fn w_min(&self) -> f64 {
        Self::bytes_per_ns(self.rate_min) * self.base_rtt as f64
    }
}

/// An HPCC sender.
#[derive(Clone, Debug)]
pub struct Hpcc {
    p: HpccParams,
    /// Window and reference window (bytes).
    w: f64,
    wc: f64,
    /// EWMA of the most loaded hop's normalised inflight.
    u: f64,
    /// Additive steps since the last multiplicative one (counted at reference updates).
    stage: u32,
    /// The previous echo's records, one per hop.
    last: Vec<IntHop>,
    /// Bytes acknowledged so far (the ACK sequence).
    acked: u64,
    /// Bytes sent so far, highest sequence (the next sequence to send).
    sent: u64,
    /// The sequence an ACK must pass before the next reference update (None before the
    /// first echo).
    last_update_seq: Option<u64>,
    /// The largest DATA payload sent so far (bytes): the window's unit.
    packet: u32,
}

impl Hpcc {
    /// A sender starting at the line rate's window.
    pub fn new(p: HpccParams) -> Self {
        let w = p.w_init();
        Hpcc {
            p,
            w,
            wc: w,
            u: 1.0,
            stage: 0,
            last: Vec::new(),
            acked: 0,
            sent: 0,
            last_update_seq: None,
            packet: 1,
        }
    }

    /// The window (bytes).
    pub fn window_bytes(&self) -> f64 {
        self.w
    }
    /// The reference window Wc (bytes).
    pub fn reference_window(&self) -> f64 {
        self.wc
    }
    /// The utilisation estimate U.
    pub fn utilisation(&self) -> f64 {
        self.u
    }

    /// The largest normalised inflight over the hops of an echo and that hop's record
    /// interval (ns), against the previous echo; None when no hop has a usable interval.
    fn measure(&self, hops: &[IntHop]) -> Option<(f64, u64)> {
        let t = self.p.base_rtt as f64;
        let mut best: Option<(f64, u64)> = None;
        for (h, l) in hops.iter().zip(&self.last) {
            let dt = h.ts.saturating_sub(l.ts);
            if dt == 0 || h.rate_bps == 0 {
                continue;
            }
            let b = h.rate_bps as f64 / 8e9; // bytes per ns
            let tx = h.tx_bytes.saturating_sub(l.tx_bytes) as f64 / dt as f64;
            let u = h.qlen.min(l.qlen) as f64 / (b * t) + tx / b;
            if best.is_none_or(|(m, _)| u > m) {
                best = Some((u, dt));
            }
        }
        best
    }

    /// One echo of INT records at `now`: Algorithm 1's `NewAck` (the ACK itself was counted
    /// by [`Controller::on_ack`] first).
    pub fn on_records(&mut self, _now: u64, hops: &[IntHop]) {
        let Some(last_update) = self.last_update_seq else {
            // The first echo only sets the baseline (and the first RTT's end).
            self.last_update_seq = Some(self.sent);
            self.last.clear();
            self.last.extend_from_slice(hops);
            return;
        };
        let update_wc = self.acked > last_update;
        if self.last.len() == hops.len() {
            if let Some((u, tau)) = self.measure(hops) {
                let t = self.p.base_rtt;
                let g = tau.min(t) as f64 / t as f64;
                self.u = (1.0 - g) * self.u + g * u;
                let eta = f64::from(self.p.eta_milli) / 1000.0;
                let multiplicative = self.u >= eta || self.stage >= self.p.max_stage;
                let w = if multiplicative {
                    self.wc / (self.u / eta) + f64::from(self.p.w_ai)
                } else {
                    self.wc + f64::from(self.p.w_ai)
                };
                self.w = w.clamp(self.p.w_min(), self.p.w_init());
                if update_wc {
                    self.wc = self.w;
                    self.stage = if multiplicative { 0 } else { self.stage + 1 };
                }
            }
        }
        if update_wc {
            self.last_update_seq = Some(self.sent.max(last_update));
        }
        self.last.clear();
        self.last.extend_from_slice(hops);
    }
}

impl Controller for Hpcc {
    fn on_sent(&mut self, _now: u64, bytes: u32) {
        self.sent += u64::from(bytes);
        self.packet = self.packet.max(bytes);
    }
    fn on_ack(&mut self, _now: u64, s: &AckSample) {
        self.acked += u64::from(s.acked);
        // The connection's own count (a resend counted by `on_sent` is not new sequence).
        self.sent = self.acked + u64::from(s.inflight);
    }
    // HPCC reacts to INT alone: a loss or a timeout leaves the window where the echoes put it
    // (the authors' code recovers by going back N at the same rate).
    fn on_nack(&mut self, _now: u64) {}
    fn on_timeout(&mut self, _now: u64) {}
    fn on_int(&mut self, now: u64, hops: &[IntHop]) {
        self.on_records(now, hops);
    }
    fn rate(&self) -> u32 {
        let r = self.w / self.p.base_rtt as f64 * f64::from(1u32 << RATE_FRAC_BITS);
        (r as u64).clamp(u64::from(self.p.rate_min), u64::from(self.p.rate_max)) as u32
    }
    fn window(&self) -> Option<u32> {
        // The authors' NIC sends a whole packet while fewer than W bytes are in flight
        // (`rdma-queue-pair.cc`:120-123); the connection cuts a packet to the window's room, so
        // it gets W rounded up to whole packets (no runts).
        let w = self.w as u64;
        let pkt = u64::from(self.packet.max(1));
        Some((w.div_ceil(pkt) * pkt).min(u64::from(u32::MAX)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::rate_from_gbps;

    const T: u64 = 50_000;

    fn hop(qlen: u64, tx_bytes: u64, ts: u64) -> IntHop {
        IntHop {
            qlen,
            tx_bytes,
            ts,
            rate_bps: 10_000_000_000,
        }
    }

    /// An ACK of `acked` new bytes leaving `inflight` bytes in flight, then its echo.
    fn ack(c: &mut Hpcc, now: u64, acked: u32, inflight: u32, h: IntHop) {
        let s = AckSample {
            inflight,
            ..AckSample::stt_only(0, acked)
        };
        c.on_ack(now, &s);
        c.on_int(now, &[h]);
    }

    /// A fluid model of one 10 Gbit/s hop shared by `n` identical HPCC senders: each base RTT
    /// the hop carries min(offered, capacity) and queues the rest; every sender sees the
    /// records, and each RTT's ACK passes the previous update's sequence.
    fn fluid(n: u32, rtts: u32) -> (Hpcc, f64, u64) {
        let line = rate_from_gbps(10.0);
        let p = HpccParams::for_fabric(line, T);
        let mut c = Hpcc::new(p);
        let cap = 10e9 / 8e9; // bytes per ns
        let (mut q, mut tx, mut ts) = (0f64, 0u64, 0u64);
        let mut carried = 0.0;
        for k in 0..rtts {
            let offered = f64::from(n) * f64::from(c.rate()) / f64::from(1u32 << RATE_FRAC_BITS);
            let dt = T as f64;
            let sent = (offered * dt + q).min(cap * dt);
            q = (q + offered * dt - sent).max(0.0);
            tx += sent as u64;
            ts += T;
            carried = sent / (cap * dt);
            let mine = (offered / f64::from(n) * dt) as u32;
            c.on_sent(u64::from(k) * T, mine);
            ack(&mut c, u64::from(k) * T, mine, 0, hop(q as u64, tx, ts));
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
                (c.utilisation() - 0.95).abs() < 0.03,
                "n {n}: U {}",
                c.utilisation()
            );
            assert!(carried > 0.9, "n {n}: link carries {carried}");
            assert!(q < 2_000, "n {n}: standing queue {q} B");
        }
    }

    #[test]
    fn start_window_and_additive_step_scale_with_line_and_t() {
        let p = HpccParams::for_fabric(rate_from_gbps(10.0), 56_000);
        // 10 Gbit/s x 56 us = 70 000 B; W_AI = 70 000 / 2500 = 28 B.
        assert!((p.w_init() - 70_000.0).abs() < 1.0, "{}", p.w_init());
        assert_eq!(p.w_ai, 28);
        assert_eq!(
            HpccParams::for_fabric(rate_from_gbps(100.0), 56_000).w_ai,
            280
        );
        assert_eq!(HpccParams::for_fabric(rate_from_gbps(10.0), 5_600).w_ai, 2);
        assert_eq!(Hpcc::new(p).window(), Some(70_000));
        assert!(p.check().is_ok());
    }

    #[test]
    fn a_queue_shrinks_the_window_multiplicatively() {
        let p = HpccParams::for_fabric(rate_from_gbps(10.0), T);
        let mut c = Hpcc::new(p);
        let w0 = c.window_bytes();
        c.on_sent(0, 62_500);
        ack(&mut c, 0, 1000, 61_500, hop(250_000, 0, 0));
        // A full link plus 250 KB of queue over T = 50 us (62.5 KB of BDP): u = 1 + 4 = 5,
        // with the weight of a whole T.
        ack(&mut c, T, 1000, 60_500, hop(250_000, 62_500, T));
        assert!((c.utilisation() - 5.0).abs() < 0.01, "{}", c.utilisation());
        let expect = w0 / (5.0 / 0.95) + f64::from(p.w_ai);
        assert!(
            (c.window_bytes() - expect).abs() < 1.0,
            "{}",
            c.window_bytes()
        );
        // Inside the first RTT: the reference window has not moved.
        assert_eq!(c.reference_window(), w0);
    }

    /// A sender's sequence counts, for tests that step through ACKs.
    struct Seq {
        sent: u32,
        acked: u32,
        tx: u64,
    }

    impl Seq {
        fn send(&mut self, c: &mut Hpcc, now: u64, bytes: u32) {
            self.sent += bytes;
            c.on_sent(now, bytes);
        }
        /// One 1000-byte ACK at `now` from a half-busy link with no queue.
        fn ack(&mut self, c: &mut Hpcc, now: u64) {
            self.acked += 1_000;
            self.tx += 1_000;
            ack(c, now, 1_000, self.sent - self.acked, hop(0, self.tx, now));
        }
    }

    #[test]
    fn the_reference_window_moves_once_per_rtt() {
        let p = HpccParams::for_fabric(rate_from_gbps(10.0), T);
        let mut c = Hpcc::new(p);
        c.w = p.w_init() / 4.0;
        c.wc = c.w;
        let w0 = c.w;
        let mut s = Seq {
            sent: 0,
            acked: 0,
            tx: 0,
        };
        s.send(&mut c, 0, 10_000);
        // The first echo sets the baseline: the RTT ends past sequence 10 000.
        s.ack(&mut c, 0);
        s.send(&mut c, 1, 10_000);
        // U falls from 1 towards 0.5, and every ACK up to 10 000 computes its window from
        // the same Wc.
        for k in 1..=9 {
            s.ack(&mut c, k * 1_600);
            assert_eq!(c.reference_window(), w0, "ACK {k} is inside the first RTT");
        }
        // The ACK past 10 000 moves Wc (additively: U < eta, stage 0 < 5).
        s.ack(&mut c, 10 * 1_600);
        assert!(c.utilisation() < 0.95, "{}", c.utilisation());
        let w1 = w0 + f64::from(p.w_ai);
        assert_eq!(c.reference_window(), w1);
        assert_eq!(c.stage, 1);
        s.send(&mut c, 17_000, 10_000);
        // The next update waits for the sequence sent by the previous one (20 000).
        for k in 11..=19 {
            s.ack(&mut c, k * 1_600);
        }
        assert_eq!((c.reference_window(), c.stage), (w1, 1));
        s.ack(&mut c, 20 * 1_600);
        assert_eq!(c.stage, 2);
        assert_eq!(c.reference_window(), w1 + f64::from(p.w_ai));
    }

    #[test]
    fn max_stage_forces_a_multiplicative_step() {
        let p = HpccParams {
            max_stage: 2,
            ..HpccParams::for_fabric(rate_from_gbps(10.0), T)
        };
        let mut c = Hpcc::new(p);
        c.w = p.w_init() / 4.0;
        c.wc = c.w;
        let (mut tx, mut ts) = (0u64, 0u64);
        let mut stages = Vec::new();
        let mut windows = Vec::new();
        for _ in 0..5 {
            // One RTT: the link half busy, no queue, one packet acknowledged.
            tx += 31_250;
            ts += T;
            c.on_sent(ts, 1000);
            ack(&mut c, ts, 1000, 0, hop(0, tx, ts));
            stages.push(c.stage);
            windows.push(c.reference_window());
        }
        // baseline, then AI, AI, a forced MI (stage back to 0), AI
        assert_eq!(stages, vec![0, 1, 2, 0, 1], "{stages:?}");
        let mi = windows[2] / (0.5 / 0.95) + f64::from(p.w_ai);
        assert!((windows[3] - mi).abs() < 1e-6, "{windows:?}");
    }

    #[test]
    fn the_window_stays_between_its_floor_and_w_init() {
        let p = HpccParams::for_fabric(rate_from_gbps(10.0), T);
        let mut c = Hpcc::new(p);
        c.on_sent(0, 1000);
        ack(&mut c, 0, 1000, 0, hop(1 << 40, 0, 0));
        // An enormous queue (in both echoes: u reads the smaller): the window falls to
        // rate_min x T, not below.
        c.on_sent(1, 1000);
        ack(&mut c, T, 1000, 0, hop(1 << 40, 62_500, T));
        assert!((c.window_bytes() - p.w_min()).abs() < 1e-6);
        assert_eq!(c.rate(), p.rate_min);
        assert_eq!(Hpcc::new(p).rate(), p.rate_max);
        // An idle link: back up to W_init at most.
        for k in 2..400u64 {
            c.on_sent(k * T, 1000);
            ack(&mut c, k * T, 1000, 0, hop(0, 62_500, k * T));
        }
        assert_eq!(c.window_bytes(), p.w_init());
    }
}
