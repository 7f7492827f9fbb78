//! The discrete-event engine: integer nanoseconds, a radix heap of events (`queue`) from which
//! equal-time events come out in the order they were scheduled (deterministic for a seed).
//!
//! `run` is the event loop and the counters of a run, `forward` the per-hop path of a packet
//! (ECMP, admission to a queue, transmission), `control` the one path of control frames,
//! `host` the transports' side (the [`HostStack`]
//! trait, NIC polling, traces), `pfc` pause frames and the ports they stop, `loss` random loss
//! on links, `meter` the measurements of a run by class of flows.

mod control;
mod forward;
mod host;
mod loss;
mod meter;
mod pfc;
mod queue;
mod run;

pub use host::{Ctx, Flow, FlowTrace, HostStack, ModeStats, TraceSample};
pub use loss::LossModel;
pub use meter::{DeliveredSample, Meter, QueueDelaySample};
pub use pfc::PfcEvent;
pub use run::{Progress, QueueSample, RunStats};

use crate::net::{Packet, Payload, Topology};
use crate::qdisc::SimRng;
use loss::LinkLoss;
use queue::EventQueue;

/// One event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ev {
    /// A packet finished crossing a link and arrives at a node (the one its arena slot names).
    Arrive { pkt: u32 },
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
    /// The application of a flow leaves: its source stops sending it.
    FlowStop { flow: u32 },
}

/// No ingress link: a packet a host or a switch itself originates.
const LOCAL: u32 = u32::MAX;

/// A packet in the arena and what the engine keeps beside it, the fields a hop reads first.
#[derive(Debug)]
#[repr(C)]
struct Slot {
    /// The link the packet arrived by / waits in a switch for (PFC accounting), or `LOCAL`.
    via: u32,
    /// The node the packet is travelling to over its current link.
    node: u32,
    /// The packet (`None`: a free slot).
    pkt: Option<Packet>,
}

/// The simulator: topology, hosts, events, packets.
pub struct Sim {
    /// The network.
    pub topo: Topology,
    hosts: Vec<Box<dyn HostStack>>,
    events: EventQueue,
    now: u64,
    /// The packet arena: a packet keeps its slot from the host that sends it to the host that
    /// receives it (switches pass its id along), so a hop moves no packet bytes.
    packets: Vec<Slot>,
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
    /// An observer of one port (`stride sim --pcap PORT`): called with the time and every
    /// packet the port accepts into its queue (after ECN marking; drops are not seen).
    pub tap: Option<(usize, PortTap)>,
    /// Measurements by class of flows (a mixed run's groups), if set before the run.
    pub meter: Option<Box<Meter>>,
    /// The earliest time a sampler (`watch`, `trace`, `meter`) is due.
    next_sample: u64,
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
            events: EventQueue::default(),
            now: 0,
            packets: Vec::new(),
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
            tap: None,
            meter: None,
            next_sample: 0,
        };
        s.flow_delivered = vec![0; s.flows.len()];
        for i in 0..s.flows.len() {
            let t = s.flows[i].start;
            s.push(t, Ev::FlowStart { flow: i as u32 });
        }
        s
    }

    fn push(&mut self, t: u64, ev: Ev) {
        self.events.push(t, ev);
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

    /// Stops `flow` at time `at`: its source's transport stops sending it (see
    /// [`HostStack::stop_flow`]); it stays unfinished. Call before [`Sim::run`].
    pub fn stop_flow_at(&mut self, at: u64, flow: u32) {
        assert!((flow as usize) < self.flows.len(), "no flow {flow}");
        assert!(
            self.stats.events == 0,
            "flow stops are scheduled before the run"
        );
        self.push(at, Ev::FlowStop { flow });
    }

    /// Puts `p` in the arena (no ingress link yet); returns its id.
    fn store(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            let slot = &mut self.packets[i as usize];
            let old = slot.pkt.replace(p);
            debug_assert!(old.is_none(), "a free slot");
            // Nothing to drop in a free slot: no drop glue on the per-hop path.
            std::mem::forget(old);
            slot.via = LOCAL;
            i
        } else {
            self.packets.push(Slot {
                via: LOCAL,
                node: LOCAL,
                pkt: Some(p),
            });
            (self.packets.len() - 1) as u32
        }
    }

    /// Takes packet `i` out of the arena (it leaves the network).
    fn take(&mut self, i: u32) -> Packet {
        self.free.push(i);
        self.packets[i as usize].pkt.take().expect("live packet")
    }

    /// Packet `i`, in the arena.
    #[inline]
    fn pkt(&mut self, i: u32) -> &mut Packet {
        self.packets[i as usize].pkt.as_mut().expect("live packet")
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
        Payload::Control(_) => 0,
    }
}
