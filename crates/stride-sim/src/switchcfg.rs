//! Scenario sections of the switch features: `[ecn]`, `[red]`, `[qcn]`, `[pfc]`, `[int]`.
//! Each is optional; unknown fields are errors and every semantic error names its field.

use crate::net::{PfcSpec, Topology};
use crate::qdisc::{EcnStep, QcnCp, QcnParams, Red};
use crate::scenario::{Scenario, ScenarioError};
use serde::Deserialize;

/// `[ecn]`: where the step marking of `queue.ecn_k_packets` happens.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct EcnCfg {
    /// `"enqueue"` (default; the queue ahead of an arriving packet) or `"dequeue"` (the queue
    /// a departing packet leaves behind; switch ports then run per packet).
    pub mark_at: String,
}

/// `[red]`: RED-style probabilistic ECN in bytes (DCQCN's switch setting), replacing the
/// step of `queue.ecn_k_packets`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RedCfg {
    /// No marking at or below this queue, bytes.
    pub kmin_bytes: u64,
    /// Every ECT packet marked at or above this queue, bytes.
    pub kmax_bytes: u64,
    /// Marking probability just below `kmax_bytes`, in [0, 1].
    pub pmax: f64,
}

/// `[qcn]`: a QCN congestion point on every switch port (no ECN marking); absent fields
/// take seed 004's values.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct QcnCfg {
    /// Q_eq, bytes (33 000).
    #[serde(default = "q_eq")]
    pub q_eq_bytes: u64,
    /// W (2).
    #[serde(default = "w")]
    pub w: f64,
    /// Base sampling interval, bytes (150 000).
    #[serde(default = "sample")]
    pub sample_bytes: u64,
    /// Sampling jitter, fraction (0.3).
    #[serde(default = "jitter")]
    pub jitter: f64,
}

fn q_eq() -> u64 {
    QcnParams::default().q_eq_bytes
}
fn w() -> f64 {
    QcnParams::default().w
}
fn sample() -> u64 {
    QcnParams::default().sample_bytes
}
fn jitter() -> f64 {
    QcnParams::default().jitter
}

/// `[pfc]`: priority flow control on every link into a switch.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct PfcCfg {
    /// Pause threshold per ingress, bytes.
    pub xoff_bytes: u64,
    /// Resume threshold per ingress, bytes (< `xoff_bytes`).
    pub xon_bytes: u64,
    /// Headroom per ingress above `xoff_bytes`, bytes (absent: 2 x bandwidth-delay product
    /// of the link + 2 MTU + one pause frame).
    pub headroom_bytes: Option<u64>,
}

/// `[int]`: in-band telemetry stamping at every switch port.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct IntCfg {
    /// Stamp packets that carry an INT stack.
    pub enabled: bool,
}

fn bad(field: &str, why: impl std::fmt::Display) -> ScenarioError {
    ScenarioError(format!("field `{field}`: {why}"))
}

impl Scenario {
    /// Checks the switch sections.
    pub(crate) fn validate_switch(&self) -> Result<(), ScenarioError> {
        if let Some(e) = &self.ecn {
            match e.mark_at.as_str() {
                "enqueue" => {}
                "dequeue" => {
                    if self.queue.ecn_k_packets == 0 {
                        return Err(bad(
                            "ecn.mark_at",
                            "marks at `queue.ecn_k_packets`, which is 0 (off)",
                        ));
                    }
                    if self.red.is_some() || self.qcn.is_some() || self.queue.red.is_some() {
                        return Err(bad(
                            "ecn.mark_at",
                            "applies to the ECN step; [red], queue.red and [qcn] replace it",
                        ));
                    }
                }
                other => {
                    return Err(bad(
                        "ecn.mark_at",
                        format!("{other:?}: use \"enqueue\" or \"dequeue\""),
                    ))
                }
            }
        }
        if let Some(r) = &self.red {
            if self.queue.red.is_some() {
                return Err(bad(
                    "red",
                    "give either [red] (bytes) or queue.red (packets)",
                ));
            }
            if r.kmin_bytes >= r.kmax_bytes {
                return Err(bad("red.kmax_bytes", "must be above red.kmin_bytes"));
            }
            if !(0.0..=1.0).contains(&r.pmax) {
                return Err(bad("red.pmax", "must be in [0, 1]"));
            }
        }
        if let Some(q) = &self.qcn {
            if self.red.is_some() || self.queue.red.is_some() {
                return Err(bad(
                    "qcn",
                    "a port runs one discipline: drop [red]/queue.red",
                ));
            }
            if q.q_eq_bytes == 0 {
                return Err(bad("qcn.q_eq_bytes", "must be at least 1"));
            }
            if !(q.w >= 0.0 && q.w.is_finite()) {
                return Err(bad("qcn.w", "must be a finite number >= 0"));
            }
            if q.sample_bytes == 0 {
                return Err(bad("qcn.sample_bytes", "must be at least 1"));
            }
            if !(0.0..1.0).contains(&q.jitter) {
                return Err(bad("qcn.jitter", "must be in [0, 1)"));
            }
        }
        if let Some(p) = &self.pfc {
            if p.xoff_bytes == 0 {
                return Err(bad("pfc.xoff_bytes", "must be at least 1"));
            }
            if p.xon_bytes >= p.xoff_bytes {
                return Err(bad("pfc.xon_bytes", "must be below pfc.xoff_bytes"));
            }
        }
        Ok(())
    }

    /// Applies the switch sections to a freshly built topology.
    pub(crate) fn apply_switch(&self, topo: &mut Topology) {
        let mtu = self.queue.mtu_bytes;
        let k = self.queue.ecn_k_packets * mtu;
        if let Some(q) = &self.qcn {
            let p = QcnParams {
                q_eq_bytes: q.q_eq_bytes,
                w: q.w,
                sample_bytes: q.sample_bytes,
                jitter: q.jitter,
            };
            topo.set_qdisc(|_| Box::new(QcnCp::new(p)));
        } else if let Some(r) = &self.red {
            let (a, b, p) = (r.kmin_bytes, r.kmax_bytes, r.pmax);
            topo.set_qdisc(|_| Box::new(Red::new(a, b, p)));
        } else if self.ecn.as_ref().is_some_and(|e| e.mark_at == "dequeue") {
            topo.set_qdisc(|_| Box::new(EcnStep::new(k, true)));
        }
        if let Some(p) = &self.pfc {
            topo.enable_pfc(PfcSpec {
                xoff_bytes: p.xoff_bytes,
                xon_bytes: p.xon_bytes,
                headroom_bytes: p.headroom_bytes,
                mtu_bytes: mtu,
            });
        }
        if self.int.as_ref().is_some_and(|i| i.enabled) {
            topo.enable_int();
        }
    }
}
