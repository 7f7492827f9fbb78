//! Priority flow control in the engine: pause frames sent over a link, obeyed at its far
//! end, and the ports they stop and restart.

use super::{Ev, Sim};
use crate::control::Pause;

/// A PFC event, recorded when [`Sim::pfc_trace`] is `Some`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfcEvent {
    /// The switch at the end of `link` sent XOFF (`xoff`) or XON back over it, with
    /// `in_bytes` of that ingress waiting in the switch.
    Sent {
        /// Time, ns.
        t: u64,
        /// The paused link (port index).
        link: usize,
        /// XOFF (true) or XON.
        xoff: bool,
        /// Ingress bytes at the decision.
        in_bytes: u64,
    },
    /// Port `port` obeyed a pause frame: stopped (`paused`) or restarted.
    Obeyed {
        /// Time, ns.
        t: u64,
        /// Port index.
        port: usize,
        /// Stopped (true) or restarted.
        paused: bool,
    },
}

impl Sim {
    /// Switches that sent a PFC pause, and those of them that paused before they had marked a
    /// single packet CE (on a lossless fabric ECN should act first, PFC being the backstop).
    pub fn pauses_before_marks(&self) -> (u64, u64) {
        let n = self.topo.switches.len();
        let (mut mark, mut xoff) = (vec![u64::MAX; n], vec![u64::MAX; n]);
        for p in &self.topo.ports {
            if p.from >= self.topo.hosts {
                let s = (p.from - self.topo.hosts) as usize;
                mark[s] = mark[s].min(p.first_mark_ns);
            }
            if p.to >= self.topo.hosts {
                let s = (p.to - self.topo.hosts) as usize;
                xoff[s] = xoff[s].min(p.first_xoff_ns);
            }
        }
        let pausing = xoff.iter().filter(|&&x| x != u64::MAX);
        let unmarked = mark
            .iter()
            .zip(&xoff)
            .filter(|&(m, x)| *x != u64::MAX && m > x);
        (pausing.count() as u64, unmarked.count() as u64)
    }

    /// The switch at the far end of link `link` sends a PFC frame back over it to the node
    /// feeding the link (XOFF for `u64::MAX`, XON for 0).
    pub(super) fn send_pause(&mut self, link: usize, pause_ns: u64) {
        let l = &self.topo.ports[link];
        if let Some(tr) = self.pfc_trace.as_mut() {
            tr.push(PfcEvent::Sent {
                t: self.now,
                link,
                xoff: pause_ns != 0,
                in_bytes: l.in_bytes,
            });
        }
        self.stats.pause_frames += 1;
        if pause_ns != 0 {
            let l = &mut self.topo.ports[link];
            l.first_xoff_ns = l.first_xoff_ns.min(self.now);
        }
        self.send_back(link, Pause { pause_ns });
    }

    /// A PFC frame from neighbour `from` arrived at `node`: pause the port to it for
    /// `pause_ns` (until an XON for `u64::MAX`), or resume it (0).
    pub fn obey_pause(&mut self, node: u32, from: u32, pause_ns: u64) {
        let Some(port) = self.topo.port_between(node, from) else {
            return;
        };
        if pause_ns == 0 {
            self.resume(port);
            return;
        }
        let now = self.now;
        let pt = &mut self.topo.ports[port];
        if pt.paused_until == 0 {
            pt.paused_since = now;
            pt.pauses += 1;
            if let Some(tr) = self.pfc_trace.as_mut() {
                tr.push(PfcEvent::Obeyed {
                    t: now,
                    port,
                    paused: true,
                });
            }
        }
        pt.paused_until = now.saturating_add(pause_ns);
        if pt.paused_until != u64::MAX {
            let t = pt.paused_until;
            self.push(t, Ev::PauseEnd { port: port as u32 });
        }
    }

    /// Ends a pause of `port` and restarts it.
    pub(super) fn resume(&mut self, port: usize) {
        let now = self.now;
        let pt = &mut self.topo.ports[port];
        if pt.paused_until == 0 {
            return;
        }
        pt.pause_ns += now - pt.paused_since;
        pt.paused_until = 0;
        if let Some(tr) = self.pfc_trace.as_mut() {
            tr.push(PfcEvent::Obeyed {
                t: now,
                port,
                paused: false,
            });
        }
        let from = pt.from;
        if from < self.topo.hosts {
            if !pt.busy && pt.queue.is_empty() {
                self.kick(from);
            } else {
                self.start_tx(port);
            }
        } else {
            self.start_tx(port);
        }
    }
}
