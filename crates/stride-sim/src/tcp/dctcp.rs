//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257): the receiver echoes CE, the sender keeps
//! alpha, an EWMA with gain g of the fraction of bytes marked per window, and cuts the window by
//! alpha/2 at most once per window. Growth is NewReno's.

use super::{Ack, Congestion, Window};
use crate::scenario::ScenarioError;

/// DCTCP parameters and per-flow state.
#[derive(Clone, Copy, Debug)]
pub struct Dctcp {
    /// EWMA gain g (1/16 in the paper).
    pub g: f64,
    /// The marked-fraction estimate.
    pub alpha: f64,
    win_end: u64,
    acked: u64,
    marked: u64,
    cut_until: u64,
}

impl Dctcp {
    /// DCTCP with gain `g` and alpha starting at `alpha_init`.
    pub fn new(g: f64, alpha_init: f64) -> Self {
        Dctcp {
            g,
            alpha: alpha_init,
            win_end: 0,
            acked: 0,
            marked: 0,
            cut_until: 0,
        }
    }
}

impl Congestion for Dctcp {
    fn ect(&self) -> bool {
        true
    }

    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if a.newly > 0 {
            self.acked += a.newly;
            if a.ece {
                self.marked += a.newly;
            }
            if a.snd_una >= self.win_end {
                let f = if self.acked > 0 {
                    self.marked as f64 / self.acked as f64
                } else {
                    0.0
                };
                self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
                self.acked = 0;
                self.marked = 0;
                self.win_end = a.snd_nxt;
            }
        }
        if a.grow {
            w.reno_grow(a.newly);
        }
        if a.ece && a.snd_una > self.cut_until && !a.in_recovery {
            w.cwnd = (w.cwnd * (1.0 - self.alpha / 2.0)).max(w.mss);
            w.ssthresh = w.cwnd;
            self.cut_until = a.snd_nxt;
        }
    }

    fn alpha(&self) -> Option<f64> {
        Some(self.alpha)
    }
}

/// Registry entry: `[tcp] dctcp_g`, `dctcp_alpha_init`.
pub const TRANSPORT: crate::transport::Transport = crate::transport::Transport {
    name: "dctcp",
    about: "DCTCP (Alizadeh et al. 2010)",
    build: crate::transport::Build::Fn(|sc, n| {
        let t = &sc.tcp;
        if !(t.dctcp_g > 0.0 && t.dctcp_g <= 1.0) {
            return Err(ScenarioError::field("tcp.dctcp_g", "must be in (0, 1]"));
        }
        if !(0.0..=1.0).contains(&t.dctcp_alpha_init) {
            return Err(ScenarioError::field(
                "tcp.dctcp_alpha_init",
                "must be in [0, 1]",
            ));
        }
        super::hosts(sc, n, Dctcp::new(t.dctcp_g, t.dctcp_alpha_init))
    }),
};
