//! TCP Vegas (Brakmo and Peterson, JSAC 1995): once per RTT, diff = cwnd x (1 - baseRTT/RTT)
//! in packets; grow by one packet below alpha, shrink by one above beta; leave slow start when
//! diff exceeds one packet. baseRTT is the smallest RTT seen, RTT the smallest of the epoch.

use super::{Ack, Congestion, Window};
use crate::scenario::ScenarioError;

/// Vegas thresholds and per-flow state.
#[derive(Clone, Copy, Debug)]
pub struct Vegas {
    /// Increase below this many queued packets.
    pub alpha: f64,
    /// Decrease above this many queued packets.
    pub beta: f64,
    base_rtt: f64,
    epoch_min_rtt: f64,
    epoch_end: u64,
}

impl Vegas {
    /// Vegas with thresholds `alpha` < `beta` packets.
    pub fn new(alpha: f64, beta: f64) -> Self {
        Vegas {
            alpha,
            beta,
            base_rtt: 0.0,
            epoch_min_rtt: 0.0,
            epoch_end: 0,
        }
    }
}

impl Congestion for Vegas {
    fn on_rtt(&mut self, r: f64) {
        self.base_rtt = if self.base_rtt == 0.0 {
            r
        } else {
            self.base_rtt.min(r)
        };
        self.epoch_min_rtt = if self.epoch_min_rtt == 0.0 {
            r
        } else {
            self.epoch_min_rtt.min(r)
        };
    }

    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if a.grow && w.cwnd < w.ssthresh {
            w.cwnd += (a.newly as f64).min(w.mss);
        }
        if a.newly > 0 && a.snd_una >= self.epoch_end && self.epoch_min_rtt > 0.0 {
            let diff = w.cwnd / w.mss * (1.0 - self.base_rtt / self.epoch_min_rtt);
            if w.cwnd < w.ssthresh {
                if diff > 1.0 {
                    w.ssthresh = w.cwnd;
                }
            } else if diff < self.alpha {
                w.cwnd += w.mss;
            } else if diff > self.beta {
                w.cwnd = (w.cwnd - w.mss).max(2.0 * w.mss);
            }
            self.epoch_min_rtt = 0.0;
            self.epoch_end = a.snd_nxt;
        }
    }
}

/// Registry entry: `[tcp] vegas_alpha`, `vegas_beta`.
pub const TRANSPORT: crate::transport::Transport = crate::transport::Transport {
    name: "vegas",
    about: "TCP Vegas (Brakmo and Peterson 1995)",
    build: crate::transport::Build::Fn(|sc, n| {
        let t = &sc.tcp;
        if !(t.vegas_alpha >= 0.0 && t.vegas_alpha < t.vegas_beta && t.vegas_beta.is_finite()) {
            return Err(ScenarioError::field(
                "tcp.vegas_alpha",
                "needs 0 <= vegas_alpha < vegas_beta",
            ));
        }
        super::hosts(sc, n, Vegas::new(t.vegas_alpha, t.vegas_beta))
    }),
};
