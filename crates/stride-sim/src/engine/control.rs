//! Sending control frames (see [`crate::control`]), either kind; a hop-by-hop frame's arrival
//! is the event loop's (`Ev::Arrive`).

use super::{Ev, Sim, LOCAL};
use crate::control::ControlFrame;
use crate::net::{NodeId, Packet};

impl Sim {
    /// The node at the far end of link `link` sends `frame` back over it to the node feeding
    /// the link. The frame skips the data queue: it pays its own serialization and the link's
    /// propagation delay.
    pub fn send_back(&mut self, link: usize, frame: impl ControlFrame) {
        let l = &self.topo.ports[link];
        let (far, up) = (l.to, l.from);
        let at = self.now + l.ser_ns(frame.wire()) + l.delay_ns;
        let id = self.store(Packet::control(far, up, 0, frame));
        self.packets[id as usize].node = up;
        self.push(at, Ev::Arrive { pkt: id });
    }

    /// Switch node `node` sends `frame` to host `dst`, routed like any packet (ECMP on `hash`)
    /// through the data queues.
    pub fn send_routed(&mut self, node: NodeId, dst: NodeId, hash: u64, frame: impl ControlFrame) {
        let id = self.store(Packet::control(node, dst, hash, frame));
        self.forward(node, id, LOCAL);
    }
}
