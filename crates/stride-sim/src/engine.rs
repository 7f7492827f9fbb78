//! The discrete-event engine: integer nanoseconds, a binary heap ordered by (time, sequence) so
//! equal-time events run in the order they were scheduled (deterministic for a seed).

use crate::net::{IntHop, Packet, Payload, Topology, CONTROL_FRAME_WIRE};
use crate::qdisc::SimRng;
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
    /// A timed PFC pause of a port may end.
    PauseEnd { port: u32 },
    /// A port's link rate changes (entry `idx` of the rate schedule).
    RateChange { idx: u32 },
}

/// No ingress link: a packet a host or a switch itself originates.
const LOCAL: u32 = u32::MAX;

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
    /// The sender state of `flow` (sourced at this host) for `[trace]`, if it is still sending.
    fn trace(&self, _flow: u32) -> Option<FlowTrace> {
        None
    }
}

/// What a transport exposes of one flow's sender for traces (fields it does not have: None).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTrace {
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<f64>,
    /// Sending rate, bit/s.
    pub rate_bps: Option<f64>,
    /// DCTCP's alpha.
    pub alpha: Option<f64>,
    /// Latest RTT sample, ns.
    pub rtt_ns: Option<f64>,
    /// Queueing delay: latest RTT (or STT) sample minus the smallest seen, ns.
    pub queueing_ns: Option<f64>,
    /// STRIDE's STT, ns.
    pub stt_ns: Option<f64>,
    /// STRIDE's rate-update branch last taken.
    pub branch: Option<&'static str>,
}

/// One `[trace]` sample.
#[derive(Clone, Copy, Debug)]
pub struct TraceSample {
    /// Time, ns.
    pub t: u64,
    /// Flow.
    pub flow: u32,
    /// Sender state.
    pub trace: FlowTrace,
    /// Payload bytes the flow's receiver read so far.
    pub delivered: u64,
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
    /// QCN feedback frames switches sent.
    pub qcn_feedback: u64,
    /// PFC pause and resume frames switches sent.
    pub pause_frames: u64,
    /// Time ports spent paused, summed over ports, ns.
    pub pause_ns: u64,
    /// Ports (host NICs included) that were paused at least once.
    pub ports_paused: u64,
    /// Switches that sent at least one PFC pause.
    pub pausing_switches: u64,
    /// Switches that sent a PFC pause before they had marked any packet CE.
    pub paused_before_marking: u64,
    /// Packets dropped because a PFC ingress headroom was full (included in `drops`).
    pub headroom_drops: u64,
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
    /// Per packet id: the link it arrived by / waits in a switch for (PFC accounting).
    via: Vec<u32>,
    free: Vec<u32>,
    wake_at: Vec<u64>,
    /// Flows.
    pub flows: Vec<Flow>,
    /// Completion times.
    pub done: Vec<u64>,
    /// Counters.
    pub stats: RunStats,
    completed: u64,
    rng: SimRng,
    /// Ports whose queue is sampled, and the sampling period.
    pub watch: Vec<usize>,
    /// Sampling period of watched ports, ns (0 = off).
    pub watch_every: u64,
    next_watch: u64,
    /// Queue samples.
    pub samples: Vec<QueueSample>,
    /// PFC events, if set to `Some` before the run.
    pub pfc_trace: Option<Vec<PfcEvent>>,
    /// Payload bytes delivered to the receiving application, per flow.
    pub flow_delivered: Vec<u64>,
    loss: Vec<Option<LinkLoss>>,
    loss_rng: u64,
    /// Flows whose sender state is sampled every `trace_every` ns (with Jain's index).
    pub trace_flows: Vec<u32>,
    /// Trace period, ns (0 = off).
    pub trace_every: u64,
    next_trace: u64,
    /// Trace samples.
    pub traces: Vec<TraceSample>,
    /// Scheduled link-rate changes: (port, new rate in bit/s), see [`Sim::change_rate_at`].
    rate_changes: Vec<(usize, u64)>,
    /// (time, Jain's index of the goodputs over the last period of the flows running through
    /// all of it, how many such flows), every `trace_every` ns.
    pub jain_samples: Vec<(u64, f64, usize)>,
    last_delivered: Vec<u64>,
    routes: RouteTable,
    /// An observer of one port (`stride sim --pcap PORT`): called with the time and every
    /// packet the port accepts into its queue (after ECN marking; drops are not seen).
    pub tap: Option<(usize, PortTap)>,
}

/// The switches' ECMP sets, compacted for the forwarding hot path: each switch has only a few
/// distinct candidate sets (in a FatTree: its up-links, or one down-link), so a (switch,
/// destination) pair maps to a small id of a shared list. `perf` showed 37 % of the DCTCP
/// permutation's time in `forward`, nearly all of it cache misses on the per-destination
/// `Vec`s of `Switch::routes`; the id table is 4 bytes per pair and the lists stay in cache.
/// Same sets, same order, same hash: the same port as `Switch::routes` gives.
#[derive(Debug, Default)]
struct RouteTable {
    hosts: usize,
    /// `ids[switch * hosts + dst]`: index into `lists`.
    ids: Vec<u32>,
    /// (start, len) in `ports`.
    lists: Vec<(u32, u32)>,
    ports: Vec<u32>,
}

impl RouteTable {
    fn new(topo: &Topology) -> Self {
        let hosts = topo.hosts as usize;
        let mut t = RouteTable {
            hosts,
            ids: Vec::with_capacity(topo.switches.len() * hosts),
            ..RouteTable::default()
        };
        for sw in &topo.switches {
            let mut seen: std::collections::HashMap<&[usize], u32> =
                std::collections::HashMap::new();
            for dst in 0..hosts {
                let cands: &[usize] = sw.routes.get(dst).map_or(&[], |v| v.as_slice());
                let id = *seen.entry(cands).or_insert_with(|| {
                    t.lists.push((t.ports.len() as u32, cands.len() as u32));
                    t.ports.extend(cands.iter().map(|&p| p as u32));
                    (t.lists.len() - 1) as u32
                });
                t.ids.push(id);
            }
        }
        t
    }
}

/// See [`Sim::tap`].
pub type PortTap = Box<dyn FnMut(u64, &Packet) + Send>;

/// SplitMix64's output function: the hash of ECMP and of the random stream.
pub(crate) fn mix(mut z: u64) -> u64 {
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
            via: Vec::new(),
            free: Vec::new(),
            wake_at: vec![u64::MAX; n],
            done: vec![u64::MAX; flows.len()],
            flows,
            stats: RunStats::default(),
            completed: 0,
            rng: SimRng(seed),
            watch: Vec::new(),
            watch_every: 0,
            next_watch: 0,
            samples: Vec::new(),
            pfc_trace: None,
            flow_delivered: Vec::new(),
            loss: Vec::new(),
            loss_rng: mix(seed ^ 0x6c6f_7373),
            trace_flows: Vec::new(),
            trace_every: 0,
            next_trace: 0,
            traces: Vec::new(),
            rate_changes: Vec::new(),
            jain_samples: Vec::new(),
            last_delivered: Vec::new(),
            routes: RouteTable::default(),
            tap: None,
        };
        s.routes = RouteTable::new(&s.topo);
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

    /// Changes the link rate of `port` to `rate_bps` at time `at` (a hotspot whose service
    /// rate drops, then recovers). Call before [`Sim::run`]: a switch port so scheduled runs
    /// per packet from the start, so that packets already queued leave at the new rate.
    pub fn change_rate_at(&mut self, at: u64, port: usize, rate_bps: u64) {
        assert!(rate_bps > 0, "a link rate must be positive");
        assert!(
            self.stats.events == 0,
            "rate changes are scheduled before the run"
        );
        self.topo.ports[port].per_packet = true;
        let idx = self.rate_changes.len() as u32;
        self.rate_changes.push((port, rate_bps));
        self.push(at, Ev::RateChange { idx });
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
            self.via[i as usize] = LOCAL;
            i
        } else {
            self.packets.push(Some(p));
            self.via.push(LOCAL);
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
            if self.trace_every > 0 && t >= self.next_trace {
                self.sample_traces(t);
                self.next_trace = t + self.trace_every;
            }
            match ev {
                Ev::FlowStart { flow } => {
                    let src = self.flows[flow as usize].src;
                    self.with_host(src, |h, ctx| h.start_flow(ctx, flow));
                    self.kick(src);
                }
                Ev::Arrive { node, pkt } => {
                    let via = self.via[pkt as usize];
                    let p = self.take(pkt);
                    if let Payload::Pause { pause_ns } = p.payload {
                        self.on_pause(node, p.src, pause_ns);
                    } else if node < self.topo.hosts {
                        self.stats.packets_delivered += 1;
                        self.with_host(node, |h, ctx| h.receive(ctx, p));
                        self.kick(node);
                    } else {
                        self.forward(node, p, via);
                    }
                }
                Ev::PauseEnd { port } => {
                    if self.topo.ports[port as usize].paused_until == t {
                        self.resume(port as usize);
                    }
                }
                Ev::RateChange { idx } => {
                    let (port, bps) = self.rate_changes[idx as usize];
                    self.topo.ports[port].rate_bps = bps;
                }
                Ev::PortFree { port } => {
                    // Host NICs and per-packet switch ports (fast-path switch ports are
                    // scheduled at enqueue).
                    let pt = &mut self.topo.ports[port as usize];
                    pt.busy = false;
                    let from = pt.from;
                    if from < self.topo.hosts {
                        self.kick(from);
                    } else {
                        self.start_tx(port as usize);
                    }
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
        for p in &mut self.topo.ports {
            if p.paused_until > 0 {
                p.pause_ns += self.now.saturating_sub(p.paused_since);
                p.paused_since = self.now;
            }
        }
        self.stats.pause_ns = self.topo.ports.iter().map(|p| p.pause_ns).sum();
        self.stats.ports_paused = self.topo.ports.iter().filter(|p| p.pauses > 0).count() as u64;
        self.stats.drops = self.topo.ports.iter().map(|p| p.drops).sum();
        self.stats.ecn_marks = self.topo.ports.iter().map(|p| p.marks).sum();
        let (pausing, unmarked) = self.pauses_before_marks();
        self.stats.pausing_switches = pausing;
        self.stats.paused_before_marking = unmarked;
        self.completed == total
    }

    fn sample_traces(&mut self, t: u64) {
        for &f in &self.trace_flows {
            let fl = self.flows[f as usize];
            if fl.start > t || self.done[f as usize] != u64::MAX {
                continue;
            }
            if let Some(tr) = self.hosts[fl.src as usize].trace(f) {
                self.traces.push(TraceSample {
                    t,
                    flow: f,
                    trace: tr,
                    delivered: self.flow_delivered[f as usize],
                });
            }
        }
        // Jain's index over the flows that ran through the whole last period.
        if !self.last_delivered.is_empty() {
            let since = t.saturating_sub(self.trace_every);
            let xs: Vec<f64> = (0..self.flows.len())
                .filter(|&i| self.flows[i].start <= since && self.done[i] == u64::MAX)
                .map(|i| (self.flow_delivered[i] - self.last_delivered[i]) as f64)
                .collect();
            if !xs.is_empty() {
                let s: f64 = xs.iter().sum();
                let s2: f64 = xs.iter().map(|x| x * x).sum();
                let j = if s2 > 0.0 {
                    s * s / (xs.len() as f64 * s2)
                } else {
                    0.0
                };
                self.jain_samples.push((t, j, xs.len()));
            }
        }
        self.last_delivered.clone_from(&self.flow_delivered);
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
        if !self.topo.ports[port].busy && !self.topo.ports[port].paused(self.now) {
            let mut out = None;
            self.with_host(h, |hs, ctx| out = hs.poll_packet(ctx));
            if let Some(p) = out {
                self.stats.packets_sent += 1;
                self.enqueue(port, p, LOCAL);
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

    fn forward(&mut self, node: u32, mut p: Packet, via: u32) {
        p.hops = p.hops.saturating_add(1);
        let rt = &self.routes;
        let sw = (node - self.topo.hosts) as usize;
        let (start, len) = rt.lists[rt.ids[sw * rt.hosts + p.dst as usize] as usize];
        let pick = (mix(p.hash ^ u64::from(node)) % u64::from(len)) as usize;
        let port = rt.ports[start as usize + pick] as usize;
        self.enqueue(port, p, via);
    }

    /// Offers `p` to output `port`; `via` is the link it arrived by (`LOCAL` if none).
    fn enqueue(&mut self, port: usize, mut p: Packet, via: u32) {
        let now = self.now;
        self.topo.ports[port].advance(now);
        let from = self.topo.ports[port].from;
        let shared_full = self.topo.shared_cap_bytes > 0
            && from >= self.topo.hosts
            && self.switch_queued(from, now) + u64::from(p.wire) > self.topo.shared_cap_bytes;
        let pfc_in = self.topo.pfc.is_some() && via != LOCAL && from >= self.topo.hosts;
        if pfc_in {
            // Lossless class: the ingress headroom, not the egress buffer, decides.
            let ing = &self.topo.ports[via as usize];
            if shared_full
                || ing.in_bytes + u64::from(p.wire)
                    > ing.xoff_bytes.saturating_add(ing.headroom_bytes)
            {
                self.topo.ports[port].drops += 1;
                self.stats.headroom_drops += u64::from(!shared_full);
                return;
            }
        }
        let pt = &mut self.topo.ports[port];
        let q = pt.qbytes;
        if !pfc_in && (shared_full || q + u64::from(p.wire) > pt.cap_bytes) {
            pt.drops += 1;
            return;
        }
        let verdict = pt.qdisc.enqueue(q, p.wire, p.ect, &mut self.rng);
        if verdict.mark && p.ect {
            p.ce = true;
            pt.marks += 1;
            pt.first_mark_ns = pt.first_mark_ns.min(now);
        }
        let notify = verdict.feedback.map(|f| (f, p.src, p.dst, p.hash));
        if let Some((_, f)) = self.tap.as_mut().filter(|(tp, _)| *tp == port) {
            f(now, &p);
        }
        if pt.from >= self.topo.hosts && !pt.per_packet {
            // Switch port: FIFO and work-conserving, so the packet's start is known now.
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
            if !self.lost(port) {
                let id = self.store(p);
                self.push(start + ser + delay, Ev::Arrive { node: to, pkt: id });
            }
        } else {
            pt.qbytes += u64::from(p.wire);
            pt.max_qbytes = pt.max_qbytes.max(pt.qbytes);
            let wire = p.wire;
            let id = self.store(p);
            self.topo.ports[port].queue.push_back(id as usize);
            if pfc_in {
                self.via[id as usize] = via;
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
    /// QCN feedback frame (a minimum-size Ethernet frame), routed like any packet.
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
        let frame = Packet {
            src: node,
            dst: src,
            wire: 64 + 20,
            hash,
            ect: false,
            ce: false,
            payload: Payload::QcnFeedback {
                fb: f.fb,
                cpid: port as u32,
                flow_src: src,
                flow_dst: dst,
                hash,
                qoff: f.qoff,
                qdelta: f.qdelta,
            },
            int: None,
            hops: 0,
        };
        self.forward(node, frame, LOCAL);
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

    /// Starts serializing the head of a per-packet port's queue (host NICs, and switch ports
    /// whose discipline acts at dequeue): the dequeue hooks run here.
    fn start_tx(&mut self, port: usize) {
        let now = self.now;
        let pt = &mut self.topo.ports[port];
        if pt.busy || pt.paused(now) {
            return;
        }
        let Some(id) = pt.queue.pop_front() else {
            return;
        };
        let p = self.packets[id].as_mut().expect("queued packet");
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
        let ing = std::mem::replace(&mut self.via[id], port as u32);
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
        self.push(
            now + ser + delay,
            Ev::Arrive {
                node: to,
                pkt: id as u32,
            },
        );
    }

    /// The switch at the far end of link `link` sends a PFC frame back over it to the node
    /// feeding the link. Control frames skip the data queue; the frame pays its own
    /// serialization and the link's propagation delay.
    fn send_pause(&mut self, link: usize, pause_ns: u64) {
        let l = &self.topo.ports[link];
        let (sw, up) = (l.to, l.from);
        let at = self.now + l.ser_ns(CONTROL_FRAME_WIRE) + l.delay_ns;
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
        let frame = Packet {
            src: sw,
            dst: up,
            wire: CONTROL_FRAME_WIRE,
            hash: 0,
            ect: false,
            ce: false,
            payload: Payload::Pause { pause_ns },
            int: None,
            hops: 0,
        };
        let id = self.store(frame);
        self.push(at, Ev::Arrive { node: up, pkt: id });
    }

    /// A PFC frame from neighbour `from` arrived at `node`: pause or resume the port to it.
    fn on_pause(&mut self, node: u32, from: u32, pause_ns: u64) {
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
    fn resume(&mut self, port: usize) {
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
        Payload::QcnFeedback { .. } | Payload::Pause { .. } => 0,
    }
}
