//! The IEEE 802.1Qbb (PFC) pause frame.

use super::ControlFrame;
use crate::engine::Sim;
use crate::net::NodeId;

/// A PFC pause frame, hop by hop: it crosses one link and the node at the far end stops (or
/// restarts) its port back to the frame's sender. Never delivered to a transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pause {
    /// How long the upstream port stays paused, ns: 0 resumes it at once (XON); `u64::MAX`
    /// pauses until an XON arrives (what the simulated switches send).
    pub pause_ns: u64,
}

impl ControlFrame for Pause {
    fn name(&self) -> &'static str {
        "pfc-pause"
    }
    fn hop_by_hop(&self) -> bool {
        true
    }
    fn arrive(&self, sim: &mut Sim, node: NodeId, from: NodeId) {
        sim.obey_pause(node, from, self.pause_ns);
    }
}
