//! The discrete-event engine: integer nanoseconds, a binary heap ordered by (time, sequence) so
//! equal-time events run in the order they were scheduled (deterministic for a seed).

use crate::net::{Packet, Payload, Topology};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// One event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ev {
    /// A packet finished crossing a link and arrives at a node.
    Arrive { node: u32, pkt: u32 },
    /// A port finished serializing a packet.
    PortFree { port: u32 },
    /// A host's transport asked to be woken.
    Wake { host: u32 },
    /// A flow arrives at its source host.
    FlowStart { flow: u32 },
}

/// A flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes the application sends.
    pub bytes: u64,
    /// Arrival time, ns.
    pub start: u64,
}

/// What a host's transport may do to the world during a callback.
pub struct Ctx<'a> {
    /// Current time.
    pub now: u64,
    /// Flows (read-only).
    pub flows: &'a [Flow],
    /// Completion time of each flow (u64::MAX until the receiver read the last byte).
    pub done: &'a mut [u64],
    /// Payload bytes delivered to receiving applications.
    pub delivered: &'a mut u64,
    /// The same per flow.
    pub flow_delivered: &'a mut [u64],
    /// Flows completed so far.
    pub completed: &'a mut u64,
}

impl Ctx<'_> {
    /// The receiving application of `flow` read `bytes` more (counts total and per flow).
    pub fn deliver(&mut self, flow: u32, bytes: u64) {
        *self.delivered += bytes;
        self.flow_delivered[flow as usize] += bytes;
    }

    /// The receiving application read the last byte of `flow`.
    pub fn complete(&mut self, flow: u32) {
        if self.done[flow as usize] == u64::MAX {
            self.done[flow as usize] = self.now;
            *self.completed += 1;
        }
    }
}

/// A host's transport stack. The engine asks it for a packet whenever the host's NIC is idle.
pub trait HostStack {
    /// A flow starts at this host (its source).
    fn start_flow(&mut self, ctx: &mut Ctx, flow: u32);
    /// A packet addressed to this host arrived.
    fn receive(&mut self, ctx: &mut Ctx, pkt: Packet);
    /// The NIC is idle: the next packet to send now, if any.
    fn poll_packet(&mut self, ctx: &mut Ctx) -> Option<Packet>;
    /// The earliest time the stack has timer work or may send (pacing), if any.
    fn next_wake(&mut self) -> Option<u64>;
    /// Timers due at `ctx.now`.
    fn wake(&mut self, ctx: &mut Ctx);
}

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Events processed.
    pub events: u64,
    /// Packets that crossed one queue and link.
    pub packet_hops: u64,
    /// Packets dropped at switch queues.
    pub drops: u64,
    /// Packets lost on links by a random loss model (not counted in `drops`).
    pub link_losses: u64,
    /// Runs of consecutive link losses on the same link (mean burst = losses / bursts).
    pub link_loss_bursts: u64,
    /// Packets marked CE.
    pub ecn_marks: u64,
    /// Packets handed to the network by hosts.
    pub packets_sent: u64,
    /// Packets delivered to hosts.
    pub packets_delivered: u64,
    /// Payload bytes delivered to applications.
    pub bytes_delivered: u64,
    /// Simulated time at the end, ns.
    pub end_ns: u64,
}

/// Where a run is (see [`Sim::run_with_progress`]).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time, ns.
    pub now: u64,
    /// Events processed.
    pub events: u64,
    /// Flows completed.
    pub completed: u64,
}

/// A queue-occupancy sample of a watched port.
#[derive(Clone, Copy, Debug)]
pub struct QueueSample {
    /// Time, ns.
    pub t: u64,
    /// Port index.
    pub port: usize,
    /// Bytes queued.
    pub bytes: u64,
}

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
struct LinkLoss {
    model: LossModel,
    bad: bool,
    prev_lost: bool,
}

/// The simulator: topology, hosts, events, packets.
pub struct Sim {
    /// The network.
    pub topo: Topology,
    hosts: Vec<Box<dyn HostStack>>,
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    now: u64,
    packets: Vec<Option<Packet>>,
    free: Vec<u32>,
    wake_at: Vec<u64>,
    /// Flows.
    pub flows: Vec<Flow>,
    /// Completion times.
    pub done: Vec<u64>,
    /// Counters.
    pub stats: RunStats,
    completed: u64,
    rng: u64,
    /// Ports whose queue is sampled, and the sampling period.
    pub watch: Vec<usize>,
    /// Sampling period of watched ports, ns (0 = off).
    pub watch_every: u64,
    next_watch: u64,
    /// Queue samples.
    pub samples: Vec<QueueSample>,
    /// Payload bytes delivered to the receiving application, per flow.
    pub flow_delivered: Vec<u64>,
    loss: Vec<Option<LinkLoss>>,
    loss_rng: u64,
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Sim {
    /// A simulator over `topo` with one stack per host and these flows.
    pub fn new(topo: Topology, hosts: Vec<Box<dyn HostStack>>, flows: Vec<Flow>, seed: u64) -> Sim {
        assert_eq!(hosts.len(), topo.hosts as usize);
        let n = hosts.len();
        let mut s = Sim {
            topo,
            hosts,
            heap: BinaryHeap::new(),
            seq: 0,
            now: 0,
            packets: Vec::new(),
            free: Vec::new(),
            wake_at: vec![u64::MAX; n],
            done: vec![u64::MAX; flows.len()],
            flows,
            stats: RunStats::default(),
            completed: 0,
            rng: seed,
            watch: Vec::new(),
            watch_every: 0,
            next_watch: 0,
            samples: Vec::new(),
            flow_delivered: Vec::new(),
            loss: Vec::new(),
            loss_rng: mix(seed ^ 0x6c6f_7373),
        };
        s.flow_delivered = vec![0; s.flows.len()];
        for i in 0..s.flows.len() {
            let t = s.flows[i].start;
            s.push(t, Ev::FlowStart { flow: i as u32 });
        }
        s
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn rand01(&mut self) -> f64 {
        self.rng = mix(self.rng);
        (self.rng >> 11) as f64 / (1u64 << 53) as f64
    }

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
    fn lost(&mut self, port: usize) -> bool {
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

    fn store(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.packets[i as usize] = Some(p);
            i
        } else {
            self.packets.push(Some(p));
            (self.packets.len() - 1) as u32
        }
    }

    fn take(&mut self, i: u32) -> Packet {
        self.free.push(i);
        self.packets[i as usize].take().expect("live packet")
    }

    /// Runs until every flow completed, or simulated time passes `limit_ns`, or no event is
    /// left. Returns whether every flow completed. `progress(now, events)` is called every
    /// 2^20 events.
    pub fn run(&mut self, limit_ns: u64, mut progress: impl FnMut(u64, u64)) -> bool {
        self.run_with_progress(limit_ns, |p| progress(p.now, p.events))
    }

    /// Like [`Sim::run`], reporting completed flows too.
    pub fn run_with_progress(&mut self, limit_ns: u64, mut progress: impl FnMut(Progress)) -> bool {
        let total = self.flows.len() as u64;
        while self.completed < total {
            let Some(Reverse((t, _, ev))) = self.heap.pop() else {
                break;
            };
            if t > limit_ns {
                self.now = limit_ns;
                break;
            }
            self.now = t;
            self.stats.events += 1;
            if self.stats.events & 0xfffff == 0 {
                progress(Progress {
                    now: self.now,
                    events: self.stats.events,
                    completed: self.completed,
                });
            }
            if self.watch_every > 0 && t >= self.next_watch {
                for &p in &self.watch {
                    self.topo.ports[p].advance(t);
                    self.samples.push(QueueSample {
                        t,
                        port: p,
                        bytes: self.topo.ports[p].qbytes,
                    });
                }
                self.next_watch = t + self.watch_every;
            }
            match ev {
                Ev::FlowStart { flow } => {
                    let src = self.flows[flow as usize].src;
                    self.with_host(src, |h, ctx| h.start_flow(ctx, flow));
                    self.kick(src);
                }
                Ev::Arrive { node, pkt } => {
                    let p = self.take(pkt);
                    if node < self.topo.hosts {
                        self.stats.packets_delivered += 1;
                        self.with_host(node, |h, ctx| h.receive(ctx, p));
                        self.kick(node);
                    } else {
                        self.forward(node, p);
                    }
                }
                Ev::PortFree { port } => {
                    // Only host NICs: switch ports are scheduled at enqueue.
                    let pt = &mut self.topo.ports[port as usize];
                    pt.busy = false;
                    let from = pt.from;
                    self.kick(from);
                }
                Ev::Wake { host } => {
                    if self.wake_at[host as usize] == t {
                        self.wake_at[host as usize] = u64::MAX;
                        self.with_host(host, |h, ctx| h.wake(ctx));
                        self.kick(host);
                    }
                }
            }
        }
        self.stats.end_ns = self.now;
        self.stats.drops = self.topo.ports.iter().map(|p| p.drops).sum();
        self.stats.ecn_marks = self.topo.ports.iter().map(|p| p.marks).sum();
        self.completed == total
    }

    fn with_host(&mut self, h: u32, f: impl FnOnce(&mut dyn HostStack, &mut Ctx)) {
        let mut ctx = Ctx {
            now: self.now,
            flows: &self.flows,
            done: &mut self.done,
            delivered: &mut self.stats.bytes_delivered,
            flow_delivered: &mut self.flow_delivered,
            completed: &mut self.completed,
        };
        f(self.hosts[h as usize].as_mut(), &mut ctx);
    }

    /// Lets an idle host NIC take the next packet; re-arms the host's wake-up.
    fn kick(&mut self, h: u32) {
        let port = self.topo.host_port[h as usize];
        if !self.topo.ports[port].busy {
            let mut out = None;
            self.with_host(h, |hs, ctx| out = hs.poll_packet(ctx));
            if let Some(p) = out {
                self.stats.packets_sent += 1;
                self.enqueue(port, p);
            }
        }
        let mut next = None;
        self.with_host(h, |hs, _| next = hs.next_wake());
        if let Some(t) = next {
            let t = t.max(self.now + 1);
            if t < self.wake_at[h as usize] || self.wake_at[h as usize] <= self.now {
                self.wake_at[h as usize] = t;
                self.push(t, Ev::Wake { host: h });
            }
        }
    }

    fn forward(&mut self, node: u32, p: Packet) {
        let sw = &self.topo.switches[(node - self.topo.hosts) as usize];
        let cands = &sw.routes[p.dst as usize];
        let port = cands[(mix(p.hash ^ u64::from(node)) % cands.len() as u64) as usize];
        self.enqueue(port, p);
    }

    fn enqueue(&mut self, port: usize, mut p: Packet) {
        let now = self.now;
        self.topo.ports[port].advance(now);
        let from = self.topo.ports[port].from;
        let shared_full = self.topo.shared_cap_bytes > 0
            && from >= self.topo.hosts
            && self.switch_queued(from, now) + u64::from(p.wire) > self.topo.shared_cap_bytes;
        let (mark, drop) = {
            let pt = &self.topo.ports[port];
            let q = pt.qbytes;
            let drop = shared_full || q + u64::from(p.wire) > pt.cap_bytes;
            let mut mark = false;
            if p.ect && !drop {
                if pt.ecn_k_bytes > 0 && q > pt.ecn_k_bytes {
                    mark = true;
                } else if let Some((kmin, kmax, pmax)) = pt.red {
                    if q >= kmax {
                        mark = true;
                    } else if q > kmin {
                        let prob = pmax * (q - kmin) as f64 / (kmax - kmin) as f64;
                        mark = self.rand01() < prob;
                    }
                }
            }
            (mark, drop)
        };
        let pt = &mut self.topo.ports[port];
        if drop {
            pt.drops += 1;
            return;
        }
        if mark {
            p.ce = true;
            pt.marks += 1;
        }
        if pt.from >= self.topo.hosts {
            // Switch port: FIFO and work-conserving, so the packet's start is known now.
            let now = self.now;
            let wire = p.wire;
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
                return;
            }
            let id = self.store(p);
            self.push(start + ser + delay, Ev::Arrive { node: to, pkt: id });
            return;
        }
        pt.qbytes += u64::from(p.wire);
        pt.max_qbytes = pt.max_qbytes.max(pt.qbytes);
        let id = self.store(p);
        self.topo.ports[port].queue.push_back(id as usize);
        if !self.topo.ports[port].busy {
            self.start_tx(port);
        }
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

    fn start_tx(&mut self, port: usize) {
        let now = self.now;
        let pt = &mut self.topo.ports[port];
        let Some(id) = pt.queue.pop_front() else {
            return;
        };
        let wire = self.packets[id].as_ref().expect("queued packet").wire;
        pt.qbytes -= u64::from(wire);
        pt.busy = true;
        let ser = pt.ser_ns(wire);
        pt.busy_ns += ser;
        pt.tx_bytes += u64::from(wire);
        let (to, delay) = (pt.to, pt.delay_ns);
        self.stats.packet_hops += 1;
        self.push(now + ser, Ev::PortFree { port: port as u32 });
        if self.lost(port) {
            self.take(id as u32);
            return;
        }
        self.push(
            now + ser + delay,
            Ev::Arrive {
                node: to,
                pkt: id as u32,
            },
        );
    }

    /// Packets inside the network (queued or on a link) right now.
    pub fn in_flight(&self) -> u64 {
        (self.packets.len() - self.free.len()) as u64
    }

    /// Current simulated time.
    pub fn now(&self) -> u64 {
        self.now
    }
}

/// The ECMP hash of a packet between two hosts for a connection key.
pub fn flow_hash(src: u32, dst: u32, key: u64) -> u64 {
    mix((u64::from(src) << 32 | u64::from(dst)) ^ mix(key))
}

/// Payload bytes a packet carries for the application (for accounting only).
pub fn payload_len(p: &Packet) -> u32 {
    match &p.payload {
        Payload::Stride { payload_len, .. } => u32::from(*payload_len),
        Payload::Tcp(s) => s.len,
    }
}
