//! Network elements: packets, unidirectional ports (queue + link), switches with ECMP routing,
//! and the topology graph they form.

use crate::control::ControlFrame;
use crate::qdisc::{EnqueueRule, QueueDiscipline};
use crate::routes::{Routes, RoutesBuilder};
use std::collections::VecDeque;

/// Bytes added to every datagram on the wire: Ethernet header + FCS (18), IPv4 (20), UDP (8),
/// and the preamble + inter-frame gap (20). TCP segments pay the same (TCP's 20-byte header
/// replaces UDP's 8 + STRIDE's 32 inside the payload accounting, see `tcp`).
pub const WIRE_OVERHEAD: u32 = 18 + 20 + 8 + 20;

/// What a packet carries.
#[derive(Clone, Debug)]
pub enum Payload {
    /// A STRIDE datagram as stride-proto emitted it: the 32-byte header, and the payload's
    /// length. The simulator's senders write only zero bytes, so a DATA payload is
    /// `payload_len` zeros and the receiving host rebuilds the identical datagram without
    /// carrying (or allocating) it per packet. A control packet's payload (a selective NACK's
    /// missing ranges) is carried in `ctrl`.
    Stride {
        /// The header bytes.
        header: [u8; stride_proto::wire::HEADER_LEN],
        /// Payload bytes (all zero unless `ctrl` holds them).
        payload_len: u16,
        /// The payload of a packet without DATA (e.g. a selective NACK's ranges); `None` for
        /// DATA and for packets without payload.
        ctrl: Option<Box<[u8]>>,
    },
    /// A TCP segment of the packet-level TCP models.
    Tcp(crate::tcp::Segment),
    /// A control frame the network makes (QCN feedback, a PFC pause, ...): one variant for
    /// every type, handled on one path (see [`crate::control`]). Boxed, so only control
    /// frames allocate.
    Control(Box<dyn ControlFrame>),
}

impl Payload {
    /// The control frame of type `T` this payload carries, if it is one.
    pub fn control<T: ControlFrame>(&self) -> Option<&T> {
        match self {
            Payload::Control(f) => f.as_any().downcast_ref(),
            _ => None,
        }
    }
}

/// One in-band network telemetry record, pushed by each switch egress port a packet leaves
/// through (HPCC's per-hop fields, Li et al. 2019, Section 3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntHop {
    /// Bytes queued at the egress port when the packet was dequeued.
    pub qlen_bytes: u64,
    /// Bytes the port had transmitted in total, this packet included.
    pub tx_bytes: u64,
    /// Time the packet's last bit left the port, ns (with `tx_bytes`, which counts the
    /// packet, two records give the port's exact rate between them).
    pub ts_ns: u64,
    /// The port's link rate, bit/s.
    pub rate_bps: u64,
}

/// The most hops an INT stack holds (a FatTree path has 5 switches); more are not recorded.
pub const INT_MAX_HOPS: usize = 8;

/// The INT records of one packet, in path order. Carried boxed behind `Option` in [`Packet`],
/// so a packet without INT costs one null pointer and no allocation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntStack {
    /// Records written.
    pub n: u8,
    /// The records; only `..n` are meaningful.
    pub hops: [IntHop; INT_MAX_HOPS],
    /// A receiver's echo of a data packet's records, riding back to the sender on an ACK:
    /// switches leave it alone.
    pub echo: bool,
}

impl IntStack {
    /// The records written, in path order.
    pub fn hops(&self) -> &[IntHop] {
        &self.hops[..usize::from(self.n)]
    }

    /// Appends a record; returns false (and records nothing) when the stack is full.
    pub fn push(&mut self, h: IntHop) -> bool {
        let i = usize::from(self.n);
        if i >= INT_MAX_HOPS {
            return false;
        }
        self.hops[i] = h;
        self.n += 1;
        true
    }
}

/// A packet in flight.
#[derive(Clone, Debug)]
pub struct Packet {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes on the wire (serialization time and buffer occupancy).
    pub wire: u32,
    /// ECMP hash (per connection).
    pub hash: u64,
    /// ECN-capable transport.
    pub ect: bool,
    /// Congestion experienced (set by a switch).
    pub ce: bool,
    /// Contents.
    pub payload: Payload,
    /// In-band telemetry: `Some` when the sender asks switches to stamp the packet (HPCC),
    /// each INT-enabled switch port then appends an [`IntHop`]. `None` costs no allocation.
    pub int: Option<Box<IntStack>>,
    /// Switches the packet has crossed (what a receiver reads from the IP TTL).
    pub hops: u8,
}

impl Packet {
    /// A control frame from node `src` to node `dst` (ECMP hash `hash`), of the frame's size.
    pub fn control(src: NodeId, dst: NodeId, hash: u64, frame: impl ControlFrame) -> Packet {
        Packet {
            src,
            dst,
            wire: frame.wire(),
            hash,
            ect: false,
            ce: false,
            payload: Payload::Control(Box::new(frame)),
            int: None,
            hops: 0,
        }
    }
}

/// Node identifier: hosts are `0..hosts`, switches follow.
pub type NodeId = u32;

/// A unidirectional port: an output queue feeding a link.
///
/// Laid out in declaration order (`repr(C)`), the fields a packet's hop reads first: those of a
/// switch port's fast path fill the first two cache lines, counters and PFC state follow.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Port {
    /// Switch ports: (start of serialization, wire bytes) of packets accepted but not yet
    /// started. A switch port's schedule is computed at enqueue (FIFO, work-conserving), so a
    /// packet costs one event per hop; entries leave this list lazily as time passes them.
    pub sched: VecDeque<(u64, u32)>,
    /// Bytes queued (waiting, not being serialized). For switch ports, exact after
    /// [`Port::advance`] to the current time.
    pub qbytes: u64,
    /// Switch ports: when the last accepted packet finishes serializing.
    pub free_at: u64,
    /// Link rate, bit/s.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// Buffer, bytes (drop-tail).
    pub cap_bytes: u64,
    /// Node owning the queue.
    pub from: NodeId,
    /// Node at the far end of the link.
    pub to: NodeId,
    /// `qdisc`'s enqueue rule, taken when it is set.
    pub(crate) rule: EnqueueRule,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Busy time, ns.
    pub busy_ns: u64,
    /// Largest queue seen, bytes.
    pub max_qbytes: u64,
    /// Switch ports: run per packet (a real FIFO of packets and a `PortFree` event per packet)
    /// instead of fixing each departure at enqueue. Needed when the discipline acts at dequeue
    /// and for PFC and INT; off, a packet costs one event per hop.
    pub per_packet: bool,
    /// A packet is being serialized.
    pub busy: bool,
    /// Stamp INT records on packets that carry an INT stack (switch ports with INT on).
    pub int: bool,
    /// What happens to an accepted packet (ECN marks, congestion notification); set with the
    /// port ([`Topology::set_qdisc`]), read with [`Port::qdisc`].
    pub(crate) qdisc: Box<dyn QueueDiscipline>,
    /// Host NIC ports and per-packet switch ports: queued packets (indices into the arena).
    pub queue: VecDeque<usize>,
    /// Packets dropped at this port.
    pub drops: u64,
    /// Packets marked CE at this port.
    pub marks: u64,
    /// When this port marked its first packet CE, ns (`u64::MAX`: never).
    pub first_mark_ns: u64,
    /// PFC ingress accounting at the far end (`to`): bytes that arrived over this link and
    /// still wait in the switch `to`.
    pub in_bytes: u64,
    /// PFC: the far end has paused this link (sent XOFF, not yet XON).
    pub xoff_sent: bool,
    /// PFC at the far end: the XOFF threshold of this ingress, bytes.
    pub xoff_bytes: u64,
    /// PFC at the far end: the XON threshold of this ingress, bytes.
    pub xon_bytes: u64,
    /// PFC at the far end: bytes accepted above `xoff_bytes` (what is in flight when the
    /// pause takes effect); beyond it a packet is dropped.
    pub headroom_bytes: u64,
    /// This port may not start a packet before this time (`u64::MAX`: until an XON; 0: free).
    pub paused_until: u64,
    /// When the current pause began.
    pub paused_since: u64,
    /// Total time paused, ns.
    pub pause_ns: u64,
    /// XOFF frames this port obeyed.
    pub pauses: u64,
    /// PFC at the far end: when it first sent XOFF over this link, ns (`u64::MAX`: never).
    pub first_xoff_ns: u64,
}

impl Port {
    /// The port's queue discipline.
    pub fn qdisc(&self) -> &dyn QueueDiscipline {
        self.qdisc.as_ref()
    }

    /// Whether the port is paused at `now`.
    pub fn paused(&self, now: u64) -> bool {
        self.paused_until > now
    }
}

impl Port {
    /// Drops from the waiting bytes every packet whose serialization started by `now`.
    pub fn advance(&mut self, now: u64) {
        while let Some(&(start, wire)) = self.sched.front() {
            if start > now {
                break;
            }
            self.sched.pop_front();
            self.qbytes -= u64::from(wire);
        }
    }

    /// Serialization time of `bytes` on this link, ns (rounded up).
    pub fn ser_ns(&self, bytes: u32) -> u64 {
        (u64::from(bytes) * 8 * 1_000_000_000).div_ceil(self.rate_bps)
    }
}

/// A switch: its output ports (its routes are in [`Topology::routes`]).
#[derive(Debug, Default)]
pub struct Switch {
    /// Ports owned by this switch (indices into the port table).
    pub ports: Vec<usize>,
}

/// The network graph.
#[derive(Debug, Default)]
pub struct Topology {
    /// Number of hosts (node ids `0..hosts`).
    pub hosts: u32,
    /// Switches (node id = hosts + index).
    pub switches: Vec<Switch>,
    /// Every switch's ECMP set per destination host (all shortest-path next hops).
    pub routes: Routes,
    /// All ports.
    pub ports: Vec<Port>,
    /// Each host's uplink port.
    pub host_port: Vec<usize>,
    /// Host NIC rate, bit/s (of each host's uplink).
    pub host_rate_bps: Vec<u64>,
    /// A human-readable name per switch (for queue reports).
    pub switch_names: Vec<String>,
    /// Shared buffer per switch, bytes (0 = off): a packet is dropped when the switch's
    /// queued bytes over all its ports would exceed it, on top of the per-port limit.
    pub shared_cap_bytes: u64,
    /// PFC on every switch ingress (see [`Topology::enable_pfc`]).
    pub pfc: Option<PfcSpec>,
}

/// Priority flow control (IEEE 802.1Qbb), one traffic class: every switch counts, per
/// ingress link, the bytes that came in over it and still wait in the switch. At `xoff_bytes`
/// it sends a pause frame back over that link, which stops the upstream port (a switch port
/// or a host NIC) once it arrives; at `xon_bytes` or below it sends the resume frame. Bytes in
/// flight while the pause travels land in the headroom above `xoff_bytes`; a packet that finds
/// the headroom full is dropped. With PFC the per-port buffer limit does not apply (the class
/// is lossless; the shared-buffer limit still does).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcSpec {
    /// Pause threshold per ingress, bytes.
    pub xoff_bytes: u64,
    /// Resume threshold per ingress, bytes (below `xoff_bytes`).
    pub xon_bytes: u64,
    /// Headroom per ingress, bytes; `None`: what a pause round trip lets in,
    /// 2 x (propagation delay x link rate) + 2 x `mtu_bytes` + one pause frame.
    pub headroom_bytes: Option<u64>,
    /// Largest packet on the wire, bytes (for the default headroom).
    pub mtu_bytes: u64,
}

/// Bytes of a pause or QCN frame on the wire (a minimum Ethernet frame, preamble and gap).
pub const CONTROL_FRAME_WIRE: u32 = 64 + 20;

/// Link parameters used when building a topology.
#[derive(Clone, Copy, Debug)]
pub struct LinkSpec {
    /// bit/s
    pub rate_bps: u64,
    /// ns
    pub delay_ns: u64,
}

/// Queue parameters of every switch port.
#[derive(Clone, Copy, Debug)]
pub struct QueueSpec {
    /// Buffer per port, bytes.
    pub cap_bytes: u64,
    /// ECN threshold, bytes (0 = off).
    pub ecn_k_bytes: u64,
    /// RED marking (kmin, kmax, pmax).
    pub red: Option<(u64, u64, f64)>,
}

impl Topology {
    fn add_switch(&mut self, name: String) -> NodeId {
        self.switches.push(Switch::default());
        self.switch_names.push(name);
        self.hosts + self.switches.len() as u32 - 1
    }

    fn add_port(&mut self, from: NodeId, to: NodeId, l: LinkSpec, q: QueueSpec) -> usize {
        let idx = self.ports.len();
        let qdisc = crate::qdisc::from_spec(&q);
        self.ports.push(Port {
            from,
            to,
            rate_bps: l.rate_bps,
            delay_ns: l.delay_ns,
            cap_bytes: q.cap_bytes,
            rule: qdisc.enqueue_rule(),
            qdisc,
            per_packet: false,
            queue: VecDeque::new(),
            sched: VecDeque::new(),
            free_at: 0,
            qbytes: 0,
            busy: false,
            drops: 0,
            marks: 0,
            first_mark_ns: u64::MAX,
            max_qbytes: 0,
            tx_bytes: 0,
            busy_ns: 0,
            int: false,
            in_bytes: 0,
            xoff_sent: false,
            xoff_bytes: u64::MAX,
            xon_bytes: 0,
            headroom_bytes: 0,
            paused_until: 0,
            paused_since: 0,
            pause_ns: 0,
            pauses: 0,
            first_xoff_ns: u64::MAX,
        });
        if from >= self.hosts {
            self.switches[(from - self.hosts) as usize].ports.push(idx);
        } else {
            self.host_port[from as usize] = idx;
            self.host_rate_bps[from as usize] = l.rate_bps;
        }
        idx
    }

    /// A bidirectional link (two ports). Host NIC queues are unbounded (the host's own transport
    /// decides when to hand a packet to an idle NIC, so they never hold more than one).
    fn link(&mut self, a: NodeId, b: NodeId, l: LinkSpec, q: QueueSpec) {
        let host_q = QueueSpec {
            cap_bytes: u64::MAX,
            ecn_k_bytes: 0,
            red: None,
        };
        self.add_port(a, b, l, if a < self.hosts { host_q } else { q });
        self.add_port(b, a, l, if b < self.hosts { host_q } else { q });
    }

    fn new_hosts(n: u32) -> Topology {
        Topology {
            hosts: n,
            host_port: vec![usize::MAX; n as usize],
            host_rate_bps: vec![0; n as usize],
            ..Default::default()
        }
    }

    /// `senders` hosts on a left switch, `receivers` hosts on a right switch, one bottleneck
    /// link between the switches. Hosts 0..senders are senders.
    pub fn dumbbell(
        senders: u32,
        receivers: u32,
        host: LinkSpec,
        bottleneck: LinkSpec,
        q: QueueSpec,
    ) -> Topology {
        let mut t = Topology::new_hosts(senders + receivers);
        let left = t.add_switch("left".into());
        let right = t.add_switch("right".into());
        for h in 0..senders {
            t.link(h, left, host, q);
        }
        for h in senders..senders + receivers {
            t.link(h, right, host, q);
        }
        t.link(left, right, bottleneck, q);
        t.route();
        t
    }

    /// Leaf-spine: `leaves` leaf switches with `hosts_per_leaf` hosts each, every leaf linked
    /// to every one of `spines` spine switches.
    pub fn leaf_spine(
        leaves: u32,
        spines: u32,
        hosts_per_leaf: u32,
        host: LinkSpec,
        fabric: LinkSpec,
        q: QueueSpec,
    ) -> Topology {
        let mut t = Topology::new_hosts(leaves * hosts_per_leaf);
        let leaf_ids: Vec<NodeId> = (0..leaves)
            .map(|i| t.add_switch(format!("leaf{i}")))
            .collect();
        let spine_ids: Vec<NodeId> = (0..spines)
            .map(|i| t.add_switch(format!("spine{i}")))
            .collect();
        for (i, &l) in leaf_ids.iter().enumerate() {
            for h in 0..hosts_per_leaf {
                t.link(i as u32 * hosts_per_leaf + h, l, host, q);
            }
            for &s in &spine_ids {
                t.link(l, s, fabric, q);
            }
        }
        t.route();
        t
    }

    /// FatTree(k) (Al-Fares et al.): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2
    /// core switches; each edge switch holds `hosts_per_edge` hosts (k/2 in the canonical tree;
    /// more means oversubscription hosts_per_edge : k/2 at the edge).
    pub fn fat_tree(
        k: u32,
        hosts_per_edge: u32,
        host: LinkSpec,
        fabric: LinkSpec,
        q: QueueSpec,
    ) -> Topology {
        let half = k / 2;
        let mut t = Topology::new_hosts(k * half * hosts_per_edge);
        let mut edges = Vec::new();
        let mut aggs = Vec::new();
        for p in 0..k {
            for i in 0..half {
                edges.push(t.add_switch(format!("edge{p}.{i}")));
            }
            for i in 0..half {
                aggs.push(t.add_switch(format!("agg{p}.{i}")));
            }
        }
        let cores: Vec<NodeId> = (0..half * half)
            .map(|i| t.add_switch(format!("core{i}")))
            .collect();
        for p in 0..k {
            for e in 0..half {
                let edge = edges[(p * half + e) as usize];
                for h in 0..hosts_per_edge {
                    t.link((p * half + e) * hosts_per_edge + h, edge, host, q);
                }
                for a in 0..half {
                    t.link(edge, aggs[(p * half + a) as usize], fabric, q);
                }
            }
            for a in 0..half {
                for c in 0..half {
                    t.link(
                        aggs[(p * half + a) as usize],
                        cores[(a * half + c) as usize],
                        fabric,
                        q,
                    );
                }
            }
        }
        t.route();
        t
    }

    /// Gives every switch output port the discipline `make(port index)` returns (host NICs
    /// keep drop-tail) and moves the port to the per-packet path if the discipline acts at
    /// dequeue.
    pub fn set_qdisc(&mut self, mut make: impl FnMut(usize) -> Box<dyn QueueDiscipline>) {
        for i in 0..self.ports.len() {
            if self.ports[i].from >= self.hosts {
                let d = make(i);
                self.ports[i].per_packet |= d.acts_at_dequeue();
                self.ports[i].rule = d.enqueue_rule();
                self.ports[i].qdisc = d;
            }
        }
    }

    /// Turns PFC on for every link that ends at a switch (host NICs become pausable) and puts
    /// every switch port on the per-packet path.
    pub fn enable_pfc(&mut self, spec: PfcSpec) {
        assert!(spec.xon_bytes < spec.xoff_bytes, "PFC needs xon < xoff");
        self.pfc = Some(spec);
        for i in 0..self.ports.len() {
            let hosts = self.hosts;
            let p = &mut self.ports[i];
            if p.from >= hosts {
                p.per_packet = true;
            }
            if p.to >= hosts {
                p.xoff_bytes = spec.xoff_bytes;
                p.xon_bytes = spec.xon_bytes;
                let bdp = u128::from(p.delay_ns) * u128::from(p.rate_bps) / 8_000_000_000;
                p.headroom_bytes = spec
                    .headroom_bytes
                    .unwrap_or(2 * bdp as u64 + 2 * spec.mtu_bytes + u64::from(CONTROL_FRAME_WIRE));
            }
        }
    }

    /// Turns INT stamping on at every switch port (which then runs per packet).
    pub fn enable_int(&mut self) {
        for p in &mut self.ports {
            if p.from >= self.hosts {
                p.int = true;
                p.per_packet = true;
            }
        }
    }

    /// The port from node `from` to its neighbour `to`.
    pub fn port_between(&self, from: NodeId, to: NodeId) -> Option<usize> {
        if from < self.hosts {
            let p = self.host_port[from as usize];
            return (self.ports[p].to == to).then_some(p);
        }
        self.switches[(from - self.hosts) as usize]
            .ports
            .iter()
            .copied()
            .find(|&p| self.ports[p].to == to)
    }

    /// Fills every switch's ECMP table with all shortest-path next hops (BFS per destination).
    fn route(&mut self) {
        let n = (self.hosts as usize) + self.switches.len();
        let mut out: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, p) in self.ports.iter().enumerate() {
            out[p.from as usize].push(i);
        }
        let mut into: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, p) in self.ports.iter().enumerate() {
            into[p.to as usize].push(i);
        }
        let mut table = RoutesBuilder::new(self.hosts as usize, self.switches.len());
        let mut cands = Vec::new();
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for dst in 0..self.hosts {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[dst as usize] = 0;
            q.push_back(dst as usize);
            while let Some(v) = q.pop_front() {
                for &pi in &into[v] {
                    let u = self.ports[pi].from as usize;
                    if dist[u] == u32::MAX {
                        dist[u] = dist[v] + 1;
                        // hosts do not forward
                        if u >= self.hosts as usize {
                            q.push_back(u);
                        }
                    }
                }
            }
            for si in 0..self.switches.len() {
                let u = self.hosts as usize + si;
                cands.clear();
                for &pi in &out[u] {
                    let v = self.ports[pi].to as usize;
                    if dist[v] != u32::MAX && dist[v] + 1 == dist[u] {
                        cands.push(pi as u32);
                    }
                }
                table.set(si, dst as usize, &cands);
            }
        }
        self.routes = table.finish();
    }

    /// Sum of propagation delays and store-and-forward times of one `mtu_wire`-byte packet
    /// along one shortest path from `src` to `dst`, ns (the first ECMP choice at each hop).
    pub fn path_latency(&self, src: u32, dst: u32, mtu_wire: u32) -> (u64, u64) {
        let mut port = self.host_port[src as usize];
        let mut lat = 0;
        let mut min_rate = u64::MAX;
        loop {
            let p = &self.ports[port];
            lat += p.delay_ns + p.ser_ns(mtu_wire);
            min_rate = min_rate.min(p.rate_bps);
            let node = p.to;
            if node == dst {
                return (lat, min_rate);
            }
            port = self.routes.candidates((node - self.hosts) as usize, dst)[0] as usize;
        }
    }

    /// The largest base RTT between two hosts, ns: a `data_wire`-byte packet's path latency
    /// out plus an `ack_wire`-byte packet's back, over every ordered pair of hosts (empty
    /// queues, serialisation and propagation at every hop). 0 with fewer than two hosts.
    pub fn max_base_rtt(&self, data_wire: u32, ack_wire: u32) -> u64 {
        let mut max = 0;
        for a in 0..self.hosts {
            for b in 0..self.hosts {
                if a != b {
                    let rtt =
                        self.path_latency(a, b, data_wire).0 + self.path_latency(b, a, ack_wire).0;
                    max = max.max(rtt);
                }
            }
        }
        max
    }
}
