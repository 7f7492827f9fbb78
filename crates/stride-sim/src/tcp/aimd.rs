//! The minimal AIMD window of seed 003 (Fang and Lao, "TCP over SoNIC"): the window grows by a
//! constant once a whole window is acknowledged ("increases linearly"), and is halved when the
//! retransmission timer fires ("decreases by half"); the timeout is fixed (their tuning knob,
//! Fig. 4), with no RTT estimate, no backoff, no slow start and no fast retransmit. Sending
//! resumes from the first unacknowledged byte (go-back-N, as their sender rewinds to the last
//! acknowledged sequence number).

use super::{Ack, Congestion, Window};
use crate::scenario::ScenarioError;

/// AIMD parameters.
#[derive(Clone, Copy, Debug)]
pub struct Aimd {
    /// Window increase per fully acknowledged window, segments.
    pub step: f64,
    /// The fixed retransmission timeout, ns.
    pub rto_ns: u64,
}

impl Congestion for Aimd {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if a.newly > 0 {
            // `step` segments per window's worth of ACKed bytes.
            w.cwnd += self.step * w.mss * (a.newly as f64) / w.cwnd;
        }
    }

    fn fast_retransmit(&self) -> bool {
        false
    }

    fn on_timeout(&mut self, w: &mut Window) {
        w.cwnd = (w.cwnd / 2.0).max(w.mss);
        w.ssthresh = w.cwnd;
    }

    fn fixed_rto(&self) -> Option<u64> {
        Some(self.rto_ns)
    }
}

/// Registry entry: `[tcp] aimd_step`, `aimd_rto`.
pub const TRANSPORT: crate::transport::Transport = crate::transport::Transport {
    name: "aimd",
    about: "the minimal AIMD window of seed 003 (linear increase, halve on timeout, fixed RTO)",
    build: crate::transport::Build::Fn(|sc, n| {
        let t = &sc.tcp;
        if !(t.aimd_step > 0.0 && t.aimd_step.is_finite()) {
            return Err(ScenarioError::field("tcp.aimd_step", "must be positive"));
        }
        if t.aimd_rto_us == 0 {
            return Err(ScenarioError::field("tcp.aimd_rto", "must be at least 1us"));
        }
        super::hosts(
            sc,
            n,
            Aimd {
                step: t.aimd_step,
                rto_ns: t.aimd_rto_us * 1000,
            },
        )
    }),
};
