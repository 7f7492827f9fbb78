//! The per-hop forwarding path: ECMP, admission to an output queue (buffers, PFC headroom,
//! the queue discipline), the schedule of a port and the start of each transmission.

use super::{mix, Ev, Sim, LOCAL};
use crate::control::QcnFeedback;
use crate::net::IntHop;
use crate::qdisc::{EnqueueRule, Verdict};

impl Sim {
    /// Packet `id`, arrived at switch `node` over link `via`, goes to an output port (ECMP).
    pub(super) fn forward(&mut self, node: u32, id: u32, via: u32) {
        let p = self.pkt(id);
        p.hops = p.hops.saturating_add(1);
        let (dst, hash) = (p.dst, p.hash);
        let sw = (node - self.topo.hosts) as usize;
        let cands = self.topo.routes.candidates(sw, dst);
        let pick = (mix(hash ^ u64::from(node)) % cands.len() as u64) as usize;
        let port = cands[pick] as usize;
        self.enqueue(port, id, via);
    }

    /// Offers packet `id` (in the arena) to output `port`; `via` is the link it arrived by
    /// (`LOCAL` if none). A packet the port refuses leaves the arena.
    pub(super) fn enqueue(&mut self, port: usize, id: u32, via: u32) {
        let now = self.now;
        let p = self.packets[id as usize].pkt.as_ref().expect("live packet");
        let (wire, ect) = (p.wire, p.ect);
        self.topo.ports[port].advance(now);
        let from = self.topo.ports[port].from;
        let shared_full = self.topo.shared_cap_bytes > 0
            && from >= self.topo.hosts
            && self.switch_queued(from, now) + u64::from(wire) > self.topo.shared_cap_bytes;
        let pfc_in = self.topo.pfc.is_some() && via != LOCAL && from >= self.topo.hosts;
        if pfc_in {
            // Lossless class: the ingress headroom, not the egress buffer, decides.
            let ing = &self.topo.ports[via as usize];
            if shared_full
                || ing.in_bytes + u64::from(wire)
                    > ing.xoff_bytes.saturating_add(ing.headroom_bytes)
            {
                self.topo.ports[port].drops += 1;
                self.stats.headroom_drops += u64::from(!shared_full);
                self.take(id);
                return;
            }
        }
        let pt = &mut self.topo.ports[port];
        let q = pt.qbytes;
        if !pfc_in && (shared_full || q + u64::from(wire) > pt.cap_bytes) {
            pt.drops += 1;
            self.take(id);
            return;
        }
        let verdict = match pt.rule {
            EnqueueRule::Accept => Verdict::default(),
            EnqueueRule::MarkAbove(k) => Verdict {
                mark: ect && q > k,
                feedback: None,
            },
            EnqueueRule::Call => pt.qdisc.enqueue(q, wire, ect, &mut self.rng),
        };
        let slot = &mut self.packets[id as usize];
        slot.via = LOCAL;
        let p = slot.pkt.as_mut().expect("live packet");
        if verdict.mark && ect {
            p.ce = true;
            pt.marks += 1;
            pt.first_mark_ns = pt.first_mark_ns.min(now);
        }
        let notify = verdict.feedback.map(|f| (f, p.src, p.dst, p.hash));
        if let Some((_, f)) = self.tap.as_mut().filter(|(tp, _)| *tp == port) {
            f(now, p);
        }
        if pt.from >= self.topo.hosts && !pt.per_packet {
            // Switch port: FIFO and work-conserving, so the packet's start is known now.
            let start = pt.free_at.max(now);
            let ser = pt.ser_ns(wire);
            pt.free_at = start + ser;
            if start > now {
                pt.sched.push_back((start, wire));
                pt.qbytes += u64::from(wire);
                pt.max_qbytes = pt.max_qbytes.max(pt.qbytes);
            }
            pt.busy_ns += ser;
            pt.tx_bytes += u64::from(wire);
            let (to, delay) = (pt.to, pt.delay_ns);
            self.stats.packet_hops += 1;
            if self.lost(port) {
                self.take(id);
            } else {
                self.packets[id as usize].node = to;
                self.push(start + ser + delay, Ev::Arrive { pkt: id });
            }
        } else {
            pt.qbytes += u64::from(wire);
            pt.max_qbytes = pt.max_qbytes.max(pt.qbytes);
            pt.queue.push_back(id as usize);
            if pfc_in {
                self.packets[id as usize].via = via;
                let ing = &mut self.topo.ports[via as usize];
                ing.in_bytes += u64::from(wire);
                if !ing.xoff_sent && ing.in_bytes >= ing.xoff_bytes {
                    ing.xoff_sent = true;
                    self.send_pause(via as usize, u64::MAX);
                }
            }
            self.start_tx(port);
        }
        if let Some(n) = notify {
            self.congestion_notification(from, port, n);
        }
    }

    /// A congestion point at `port` of switch `node` sends the source of a sampled packet a
    /// QCN feedback frame, routed like any packet. Cold: kept out of the per-hop path.
    #[cold]
    fn congestion_notification(
        &mut self,
        node: u32,
        port: usize,
        (f, src, dst, hash): (crate::qdisc::Feedback, u32, u32, u64),
    ) {
        // Frames from switches (feedback itself) are never the subject of feedback.
        if src >= self.topo.hosts {
            return;
        }
        self.stats.qcn_feedback += 1;
        let frame = QcnFeedback {
            fb: f.fb,
            cpid: port as u32,
            flow_src: src,
            flow_dst: dst,
            hash,
            qoff: f.qoff,
            qdelta: f.qdelta,
        };
        self.send_routed(node, src, hash, frame);
    }

    /// Bytes queued over every output port of switch node `node` at `now`.
    fn switch_queued(&mut self, node: u32, now: u64) -> u64 {
        let sw = (node - self.topo.hosts) as usize;
        let mut total = 0;
        for &i in &self.topo.switches[sw].ports {
            let pt = &mut self.topo.ports[i];
            pt.advance(now);
            total += pt.qbytes;
        }
        total
    }

    /// Starts serializing the head of a per-packet port's queue (host NICs, and switch ports
    /// whose discipline acts at dequeue): the dequeue hooks run here.
    pub(super) fn start_tx(&mut self, port: usize) {
        let now = self.now;
        let pt = &mut self.topo.ports[port];
        if pt.busy || pt.paused(now) {
            return;
        }
        let Some(id) = pt.queue.pop_front() else {
            return;
        };
        let slot = &mut self.packets[id];
        let p = slot.pkt.as_mut().expect("queued packet");
        let wire = p.wire;
        pt.qbytes -= u64::from(wire);
        if pt.qdisc.dequeue(pt.qbytes, p.ect) && p.ect {
            p.ce = true;
            pt.marks += 1;
            pt.first_mark_ns = pt.first_mark_ns.min(now);
        }
        pt.busy = true;
        let ser = pt.ser_ns(wire);
        pt.busy_ns += ser;
        pt.tx_bytes += u64::from(wire);
        if pt.int {
            if let Some(stack) = p.int.as_mut().filter(|s| !s.echo) {
                // The byte count includes this packet, so the time is its last bit's: two
                // records then give the port's exact rate between them.
                stack.push(IntHop {
                    qlen_bytes: pt.qbytes,
                    tx_bytes: pt.tx_bytes,
                    ts_ns: now + ser,
                    rate_bps: pt.rate_bps,
                });
            }
        }
        let ing = std::mem::replace(&mut slot.via, port as u32);
        if ing != LOCAL && self.topo.pfc.is_some() && pt.from >= self.topo.hosts {
            let ip = &mut self.topo.ports[ing as usize];
            ip.in_bytes -= u64::from(wire);
            if ip.xoff_sent && ip.in_bytes <= ip.xon_bytes {
                ip.xoff_sent = false;
                self.send_pause(ing as usize, 0);
            }
        }
        let pt = &self.topo.ports[port];
        let (to, delay) = (pt.to, pt.delay_ns);
        self.stats.packet_hops += 1;
        self.push(now + ser, Ev::PortFree { port: port as u32 });
        if self.lost(port) {
            self.take(id as u32);
            return;
        }
        self.packets[id].node = to;
        self.push(now + ser + delay, Ev::Arrive { pkt: id as u32 });
    }
}
