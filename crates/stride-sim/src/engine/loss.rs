//! Random loss on links, drawn from a stream of its own.

use super::{mix, Sim};

/// A random loss process on a link (applied per packet as it leaves the port).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// Each packet is lost independently with probability `p`.
    Bernoulli {
        /// Loss probability.
        p: f64,
    },
    /// Gilbert-Elliott: a two-state Markov chain stepped once per packet; the packet is lost
    /// with `loss_good` or `loss_bad` depending on the state after the step (bursty loss).
    GilbertElliott {
        /// P(good -> bad) per packet.
        p_good_bad: f64,
        /// P(bad -> good) per packet.
        p_bad_good: f64,
        /// Loss probability in the good state.
        loss_good: f64,
        /// Loss probability in the bad state.
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run loss probability.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let bad = p_good_bad / (p_good_bad + p_bad_good);
                bad * loss_bad + (1.0 - bad) * loss_good
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct LinkLoss {
    model: LossModel,
    bad: bool,
    prev_lost: bool,
}

impl Sim {
    /// Puts a random loss process on the link of `port` (seeded from the simulator's seed,
    /// apart from every other random choice).
    pub fn set_loss(&mut self, port: usize, model: LossModel) {
        if self.loss.is_empty() {
            self.loss = vec![None; self.topo.ports.len()];
        }
        self.loss[port] = Some(LinkLoss {
            model,
            bad: false,
            prev_lost: false,
        });
    }

    fn loss_draw(&mut self) -> f64 {
        self.loss_rng = mix(self.loss_rng);
        (self.loss_rng >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Whether the packet leaving `port` now is lost on its link.
    pub(super) fn lost(&mut self, port: usize) -> bool {
        let Some(Some(mut l)) = self.loss.get(port).copied() else {
            return false;
        };
        let p = match l.model {
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p_good_bad,
                p_bad_good,
                loss_good,
                loss_bad,
            } => {
                let flip = if l.bad { p_bad_good } else { p_good_bad };
                if self.loss_draw() < flip {
                    l.bad = !l.bad;
                }
                if l.bad {
                    loss_bad
                } else {
                    loss_good
                }
            }
        };
        let lost = p > 0.0 && self.loss_draw() < p;
        if lost {
            self.stats.link_losses += 1;
            if !l.prev_lost {
                self.stats.link_loss_bursts += 1;
            }
        }
        l.prev_lost = lost;
        self.loss[port] = Some(l);
        lost
    }
}
