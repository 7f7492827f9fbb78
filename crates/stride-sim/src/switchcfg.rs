//! Scenario sections of the switch features: the queue discipline (picked by name from
//! `crate::qdisc::REGISTRY`, whose modules define `[ecn]`, `[red]` and `[qcn]`), `[pfc]`,
//! `[int]`. Each is optional; unknown fields are errors and every semantic error names its
//! field.

use crate::net::{PfcSpec, QueueSpec, Topology};
use crate::qdisc::{self, Discipline, Settings};
use crate::scenario::{Scenario, ScenarioError};
use serde::Deserialize;

pub use crate::qdisc::ecn::EcnCfg;
pub use crate::qdisc::qcn::QcnCfg;
pub use crate::qdisc::red::RedCfg;

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
    /// The switch queues' settings in bytes.
    pub fn queue_spec(&self) -> QueueSpec {
        let mtu = self.queue.mtu_bytes;
        QueueSpec {
            cap_bytes: self.queue.buffer_packets * mtu,
            ecn_k_bytes: self.queue.ecn_k_packets * mtu,
            red: self.queue.red.map(|(a, b, p)| (a * mtu, b * mtu, p)),
        }
    }

    /// What the queue disciplines are configured from.
    pub fn qdisc_settings(&self) -> Settings<'_> {
        Settings {
            queue: self.queue_spec(),
            sections: &self.qdisc,
            named: self.queue.discipline.as_deref(),
        }
    }

    /// The discipline of every switch port: the one `queue.discipline` names, else the one
    /// the settings imply (see `crate::qdisc::choose`).
    pub fn discipline(&self) -> &'static Discipline {
        qdisc::choose(&self.qdisc_settings())
    }

    /// Checks the switch sections.
    pub(crate) fn validate_switch(&self) -> Result<(), ScenarioError> {
        qdisc::check(&self.qdisc_settings())?;
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
        let s = self.qdisc_settings();
        let d = qdisc::choose(&s);
        topo.set_qdisc(|_| (d.build)(&s));
        if let Some(p) = &self.pfc {
            topo.enable_pfc(PfcSpec {
                xoff_bytes: p.xoff_bytes,
                xon_bytes: p.xon_bytes,
                headroom_bytes: p.headroom_bytes,
                mtu_bytes: self.queue.mtu_bytes,
            });
        }
        if self.int.as_ref().is_some_and(|i| i.enabled) {
            topo.enable_int();
        }
    }
}
