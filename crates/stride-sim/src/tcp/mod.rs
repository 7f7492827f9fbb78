//! Packet-level TCP models. One sender / receiver (SYN handshake, cumulative ACKs with a
//! timestamp echo, an out-of-order buffer at the receiver, fast retransmit and NewReno recovery,
//! RTO with RFC 6298 estimation) runs any window algorithm behind the [`Congestion`] trait:
//! [`newreno`], [`dctcp`], [`vegas`], [`aimd`]. Each is registered as a transport in
//! `crate::transport`.
//!
//! Not modelled: SACK, pacing, receive windows.

pub mod aimd;
pub mod dctcp;
pub mod newreno;
pub mod vegas;

use crate::engine::{flow_hash, Ctx, FlowTrace, HostStack};
use crate::net::{Packet, Payload};
use crate::scenario::{Scenario, ScenarioError};
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Bytes on the wire around a TCP payload: Ethernet header + FCS (18), preamble + gap (20),
/// IPv4 (20), TCP (20). A full 1460-byte segment is 1538 bytes, like a full STRIDE packet.
pub const TCP_OVERHEAD: u32 = 18 + 20 + 20 + 20;

/// The congestion window a [`Congestion`] algorithm governs, bytes.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// Congestion window.
    pub cwnd: f64,
    /// Slow-start threshold.
    pub ssthresh: f64,
    /// Segment payload size.
    pub mss: f64,
}

impl Window {
    /// RFC 5681 growth with RFC 3465's L = 2: slow start below ssthresh (at most two MSS per
    /// ACK, so an ACK for two segments under delayed ACKs counts both), else one MSS per window.
    pub fn reno_grow(&mut self, newly: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += (newly as f64).min(2.0 * self.mss);
        } else {
            self.cwnd += self.mss * self.mss / self.cwnd;
        }
    }
}

/// What one arriving ACK told the sender (after the shared sender processed it).
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// Time, ns.
    pub now: u64,
    /// Bytes newly acknowledged (0 for a duplicate).
    pub newly: u64,
    /// The ACK carried ECN-Echo.
    pub ece: bool,
    /// New data was acknowledged outside loss recovery: the window may grow.
    pub grow: bool,
    /// The sender is in fast recovery after this ACK.
    pub in_recovery: bool,
    /// First unacknowledged byte after this ACK.
    pub snd_una: u64,
    /// Next byte to send.
    pub snd_nxt: u64,
}

/// A TCP window algorithm. One value per flow (cloned from the host's template), so it may
/// keep per-flow state. The shared sender does the reliability; the algorithm sets the window.
pub trait Congestion: Clone + 'static {
    /// Data segments carry ECT (the algorithm reacts to ECN).
    fn ect(&self) -> bool {
        false
    }
    /// An RTT sample, ns.
    fn on_rtt(&mut self, _rtt_ns: f64) {}
    /// Every ACK, after the shared sender updated `snd_una` and its recovery state.
    fn on_ack(&mut self, w: &mut Window, a: &Ack);
    /// Whether three duplicate ACKs trigger fast retransmit / recovery.
    fn fast_retransmit(&self) -> bool {
        true
    }
    /// Fast retransmit: set ssthresh (the sender then inflates cwnd to ssthresh + 3 MSS).
    fn on_fast_loss(&mut self, w: &mut Window) {
        w.ssthresh = (w.cwnd / 2.0).max(2.0 * w.mss);
    }
    /// The retransmission timer fired.
    fn on_timeout(&mut self, w: &mut Window) {
        w.ssthresh = (w.cwnd / 2.0).max(2.0 * w.mss);
        w.cwnd = w.mss;
    }
    /// A fixed retransmission timeout instead of the RFC 6298 estimate with backoff.
    fn fixed_rto(&self) -> Option<u64> {
        None
    }
    /// DCTCP's alpha, for traces.
    fn alpha(&self) -> Option<f64> {
        None
    }
}

/// TCP model parameters shared by every algorithm.
#[derive(Clone, Copy, Debug)]
pub struct TcpConfig {
    /// Payload bytes per segment.
    pub mss: u32,
    /// Initial window, segments.
    pub init_cwnd: u32,
    /// Minimum retransmission timeout, ns.
    pub min_rto_ns: u64,
    /// Initial retransmission timeout, ns.
    pub init_rto_ns: u64,
    /// Delayed ACKs at the receiver (`None`: an ACK per segment).
    pub delack: Option<DelAck>,
}

/// Linux-like delayed ACKs (RFC 1122 4.2.3.2, RFC 5681 4.2): an ACK once more than one full
/// segment is unacknowledged, else when the timer fires; at once for out-of-order or duplicate
/// data, for data that fills a hole, for the first `quickack` segments of a connection (Linux's
/// quick-ACK mode, at most 16 segments), and, for DCTCP, when the CE bit of arriving data differs
/// from the previous segment's (the receiver state machine of the DCTCP paper, Fig. 10: the
/// pending ACK goes out with the old ECE value, so the sender sees exactly the marked bytes).
#[derive(Clone, Copy, Debug)]
pub struct DelAck {
    /// Delayed-ACK timer, ns.
    pub timeout_ns: u64,
    /// Segments ACKed at once at the start of a connection.
    pub quickack: u32,
}

impl TcpConfig {
    /// The shared parameters of a scenario's `[tcp]` section.
    pub fn from_scenario(sc: &Scenario) -> Result<TcpConfig, ScenarioError> {
        let t = &sc.tcp;
        if t.mss == 0 {
            return Err(ScenarioError::field("tcp.mss", "must be at least 1"));
        }
        if t.init_cwnd == 0 {
            return Err(ScenarioError::field("tcp.init_cwnd", "must be at least 1"));
        }
        if t.delayed_ack && t.delack_timeout_us == 0 {
            return Err(ScenarioError::field(
                "tcp.delack_timeout",
                "must be at least 1us (or set delayed_ack = false)",
            ));
        }
        Ok(TcpConfig {
            mss: t.mss,
            init_cwnd: t.init_cwnd,
            min_rto_ns: t.min_rto_us * 1000,
            init_rto_ns: (t.min_rto_us * 1000).max(10_000_000),
            delack: t.delayed_ack.then_some(DelAck {
                timeout_ns: t.delack_timeout_us * 1000,
                quickack: t.delack_quickack,
            }),
        })
    }
}

/// `n` TCP hosts of a scenario running algorithm `cc` (registry builders call this).
pub fn hosts<C: Congestion>(
    sc: &Scenario,
    n: u32,
    cc: C,
) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
    let cfg = TcpConfig::from_scenario(sc)?;
    Ok((0..n)
        .map(|i| Box::new(TcpHost::new(i, cfg, cc.clone())) as Box<dyn HostStack>)
        .collect())
}

/// A TCP segment (the simulator carries fields, not bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct Segment {
    /// Flow id.
    pub flow: u32,
    /// First byte (0-based stream offset).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative ACK (valid when `is_ack`).
    pub ack: u64,
    /// SYN (from sender) / SYN-ACK (from receiver, with `is_ack`).
    pub syn: bool,
    /// An acknowledgement.
    pub is_ack: bool,
    /// ECN echo: the acknowledged segment carried CE.
    pub ece: bool,
    /// Sender's time when this segment left.
    pub ts: u64,
    /// Echo of the `ts` of the segment being acknowledged.
    pub ts_echo: u64,
}

struct Sender<C> {
    dst: u32,
    size: u64,
    established: bool,
    syn_due: bool,
    snd_una: u64,
    snd_nxt: u64,
    w: Window,
    cc: C,
    dupacks: u32,
    recovery: Option<u64>,
    rtx_now: bool,
    rto: u64,
    rto_at: Option<u64>,
    srtt: f64,
    rttvar: f64,
    last_rtt: f64,
    min_rtt: f64,
}

struct Receiver {
    src: u32,
    size: u64,
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u32>,
    /// Bytes received and not yet acknowledged.
    pending: u64,
    /// `ts` of the first unacknowledged segment (RFC 7323's TS.Recent under delayed ACKs).
    pending_ts: u64,
    /// CE of the last data segment (DCTCP's receiver state).
    ce_state: bool,
    quick_left: u32,
    delack_at: Option<u64>,
}

/// One host's TCP stack (all flows it sends and receives), running window algorithm `C`.
pub struct TcpHost<C: Congestion> {
    id: u32,
    cfg: TcpConfig,
    cc: C,
    senders: HashMap<u32, Sender<C>>,
    receivers: HashMap<u32, Receiver>,
    ready: VecDeque<u32>,
    acks: VecDeque<(u32, Segment)>,
    timers: BTreeSet<(u64, u32)>,
    delacks: BTreeSet<(u64, u32)>,
}

impl<C: Congestion> TcpHost<C> {
    /// A host running `cfg`; every flow it starts gets a copy of `cc`.
    pub fn new(id: u32, cfg: TcpConfig, cc: C) -> Self {
        TcpHost {
            id,
            cfg,
            cc,
            senders: HashMap::default(),
            receivers: HashMap::default(),
            ready: VecDeque::new(),
            acks: VecDeque::new(),
            timers: BTreeSet::new(),
            delacks: BTreeSet::new(),
        }
    }

    fn set_rto(&mut self, flow: u32, at: Option<u64>) {
        let s = self.senders.get_mut(&flow).expect("sender");
        if let Some(old) = s.rto_at {
            self.timers.remove(&(old, flow));
        }
        s.rto_at = at;
        if let Some(t) = at {
            self.timers.insert((t, flow));
        }
    }

    fn packet(&self, dst: u32, seg: Segment) -> Packet {
        Packet {
            src: self.id,
            dst,
            wire: seg.len + TCP_OVERHEAD,
            hash: flow_hash(self.id, dst, u64::from(seg.flow)),
            ect: self.cc.ect(),
            ce: false,
            payload: Payload::Tcp(seg),
            int: None,
            hops: 0,
        }
    }

    fn can_send(s: &Sender<C>) -> bool {
        if s.syn_due || s.rtx_now {
            return true;
        }
        s.established
            && s.snd_nxt < s.size
            && (s.snd_nxt - s.snd_una) as f64 + 1.0 <= s.w.cwnd.max(1.0)
    }

    fn on_ack(&mut self, now: u64, seg: Segment) {
        let cfg = self.cfg;
        let Some(s) = self.senders.get_mut(&seg.flow) else {
            return;
        };
        let mss = s.w.mss;
        if seg.syn && !s.established {
            s.established = true;
            s.syn_due = false;
        }
        // RTT sample from the timestamp echo. Every ACK echoes the `ts` of the segment it
        // answers, and 0 is a valid time (a flow starting at t = 0 sends its SYN then), so
        // there is no "no timestamp" value to test for.
        if now >= seg.ts_echo {
            let r = (now - seg.ts_echo) as f64;
            if s.srtt == 0.0 {
                s.srtt = r;
                s.rttvar = r / 2.0;
            } else {
                s.rttvar = 0.75 * s.rttvar + 0.25 * (s.srtt - r).abs();
                s.srtt = 0.875 * s.srtt + 0.125 * r;
            }
            s.rto =
                s.cc.fixed_rto()
                    .unwrap_or(((s.srtt + 4.0 * s.rttvar) as u64).max(cfg.min_rto_ns));
            s.cc.on_rtt(r);
            s.last_rtt = r;
            s.min_rtt = s.min_rtt.min(r);
        }
        let mut newly = 0;
        let mut grow = false;
        if seg.ack > s.snd_una {
            newly = seg.ack - s.snd_una;
            s.snd_una = seg.ack;
            if s.snd_nxt < s.snd_una {
                s.snd_nxt = s.snd_una;
            }
            s.dupacks = 0;
            match s.recovery {
                Some(rec) if s.snd_una < rec => {
                    // Partial ACK: the next hole is lost too.
                    s.rtx_now = true;
                    s.w.cwnd = (s.w.cwnd - newly as f64 + mss).max(mss);
                }
                Some(_) => {
                    s.recovery = None;
                    s.w.cwnd = s.w.ssthresh;
                }
                None => grow = true,
            }
        } else if seg.ack == s.snd_una && s.snd_una < s.snd_nxt && seg.len == 0 && !seg.syn {
            s.dupacks += 1;
            if s.recovery.is_some() {
                s.w.cwnd += mss;
            } else if s.dupacks == 3 && s.cc.fast_retransmit() {
                s.cc.on_fast_loss(&mut s.w);
                s.w.cwnd = s.w.ssthresh + 3.0 * mss;
                s.recovery = Some(s.snd_nxt);
                s.rtx_now = true;
            }
        }
        let a = Ack {
            now,
            newly,
            ece: seg.ece,
            grow,
            in_recovery: s.recovery.is_some(),
            snd_una: s.snd_una,
            snd_nxt: s.snd_nxt,
        };
        s.cc.on_ack(&mut s.w, &a);
        let flow = seg.flow;
        let (done, outstanding, rto) = (
            s.snd_una >= s.size && s.established,
            s.snd_una < s.snd_nxt,
            s.rto,
        );
        if done {
            self.set_rto(flow, None);
            self.senders.remove(&flow);
            return;
        }
        self.set_rto(flow, if outstanding { Some(now + rto) } else { None });
        if Self::can_send(self.senders.get(&flow).expect("sender")) && !self.ready.contains(&flow) {
            self.ready.push_back(flow);
        }
    }

    fn on_data(&mut self, ctx: &mut Ctx, src: u32, seg: Segment, ce: bool) {
        let flow = seg.flow;
        let size = ctx.flows[flow as usize].bytes;
        let now = ctx.now;
        let delack = self.cfg.delack;
        let r = self.receivers.entry(flow).or_insert(Receiver {
            src,
            size,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
            pending: 0,
            pending_ts: 0,
            ce_state: false,
            quick_left: delack.map_or(0, |d| d.quickack),
            delack_at: None,
        });
        let to = r.src;
        let ack = |r: &Receiver, ece: bool, ts_echo: u64| Segment {
            flow,
            is_ack: true,
            ack: r.rcv_nxt,
            ece,
            ts_echo,
            ts: now,
            ..Default::default()
        };
        if seg.syn {
            let mut reply = ack(r, ce, seg.ts);
            reply.syn = true;
            self.acks.push_back((to, reply));
            return;
        }
        // At most two ACKs leave per segment (the state change's, then this one's): a
        // fixed pair, not a vector allocated per segment.
        let mut out: [Option<Segment>; 2] = [None, None];
        if ce != r.ce_state {
            // DCTCP receiver: the bytes received so far were (not) marked; acknowledge them
            // with the old ECE before this segment changes the state.
            if r.pending > 0 {
                out[0] = Some(ack(r, r.ce_state, r.pending_ts));
                r.pending = 0;
            }
            r.ce_state = ce;
        }
        let in_order = seg.seq == r.rcv_nxt;
        let had_holes = !r.ooo.is_empty();
        if in_order {
            r.rcv_nxt += u64::from(seg.len);
            ctx.deliver(flow, u64::from(seg.len));
            while let Some((&s, &l)) = r.ooo.iter().next() {
                if s > r.rcv_nxt {
                    break;
                }
                r.ooo.remove(&s);
                let end = s + u64::from(l);
                if end > r.rcv_nxt {
                    ctx.deliver(flow, end - r.rcv_nxt);
                    r.rcv_nxt = end;
                }
            }
        } else if seg.seq > r.rcv_nxt {
            r.ooo.insert(seg.seq, seg.len);
        }
        if r.rcv_nxt >= r.size {
            ctx.complete(flow);
        }
        if r.pending == 0 {
            r.pending_ts = seg.ts;
        }
        r.pending += u64::from(seg.len).max(1);
        let now_ack = match delack {
            None => true,
            Some(_) => {
                !in_order || had_holes || r.quick_left > 0 || r.pending > u64::from(self.cfg.mss)
            }
        };
        let old_timer = r.delack_at;
        if now_ack {
            out[1] = Some(ack(r, r.ce_state, r.pending_ts));
            r.pending = 0;
            r.quick_left = r.quick_left.saturating_sub(1);
            r.delack_at = None;
        } else if r.delack_at.is_none() {
            r.delack_at = Some(now + delack.map_or(0, |d| d.timeout_ns));
        }
        let new_timer = r.delack_at;
        if old_timer != new_timer {
            if let Some(t) = old_timer {
                self.delacks.remove(&(t, flow));
            }
            if let Some(t) = new_timer {
                self.delacks.insert((t, flow));
            }
        }
        for a in out.into_iter().flatten() {
            self.acks.push_back((to, a));
        }
    }
}

impl<C: Congestion> HostStack for TcpHost<C> {
    fn start_flow(&mut self, ctx: &mut Ctx, flow: u32) {
        let f = ctx.flows[flow as usize];
        let cfg = self.cfg;
        let s = Sender {
            dst: f.dst,
            size: f.bytes,
            established: false,
            syn_due: true,
            snd_una: 0,
            snd_nxt: 0,
            w: Window {
                cwnd: f64::from(cfg.init_cwnd * cfg.mss),
                ssthresh: f64::INFINITY,
                mss: f64::from(cfg.mss),
            },
            cc: self.cc.clone(),
            dupacks: 0,
            recovery: None,
            rtx_now: false,
            rto: self.cc.fixed_rto().unwrap_or(cfg.init_rto_ns),
            rto_at: None,
            srtt: 0.0,
            rttvar: 0.0,
            last_rtt: 0.0,
            min_rtt: f64::INFINITY,
        };
        self.senders.insert(flow, s);
        self.ready.push_back(flow);
    }

    fn receive(&mut self, ctx: &mut Ctx, pkt: Packet) {
        let Payload::Tcp(seg) = pkt.payload else {
            return;
        };
        if seg.is_ack {
            self.on_ack(ctx.now, seg);
        } else {
            self.on_data(ctx, pkt.src, seg, pkt.ce);
        }
    }

    fn poll_packet(&mut self, ctx: &mut Ctx) -> Option<Packet> {
        if let Some((to, seg)) = self.acks.pop_front() {
            return Some(self.packet(to, seg));
        }
        let now = ctx.now;
        let mss = u64::from(self.cfg.mss);
        while let Some(flow) = self.ready.pop_front() {
            let Some(s) = self.senders.get_mut(&flow) else {
                continue;
            };
            if !Self::can_send(s) {
                continue;
            }
            let mut seg = Segment {
                flow,
                ts: now,
                ..Default::default()
            };
            if s.syn_due {
                s.syn_due = false;
                seg.syn = true;
            } else {
                let seq = if s.rtx_now {
                    s.rtx_now = false;
                    s.snd_una
                } else {
                    s.snd_nxt
                };
                let len = (s.size - seq).min(mss) as u32;
                seg.seq = seq;
                seg.len = len;
                if seq == s.snd_nxt {
                    s.snd_nxt += u64::from(len);
                }
            }
            let (dst, again, rto, armed) = (s.dst, Self::can_send(s), s.rto, s.rto_at.is_some());
            if again {
                self.ready.push_back(flow);
            }
            if !armed {
                self.set_rto(flow, Some(now + rto));
            }
            return Some(self.packet(dst, seg));
        }
        None
    }

    fn trace(&self, flow: u32) -> Option<FlowTrace> {
        let s = self.senders.get(&flow)?;
        let rtt = (s.last_rtt > 0.0).then_some(s.last_rtt);
        Some(FlowTrace {
            cwnd_bytes: Some(s.w.cwnd),
            rate_bps: rtt.map(|r| s.w.cwnd * 8.0 / r * 1e9),
            alpha: s.cc.alpha(),
            rtt_ns: rtt,
            queueing_ns: rtt.map(|r| r - s.min_rtt),
            ..FlowTrace::default()
        })
    }

    fn stop_flow(&mut self, _ctx: &mut Ctx, flow: u32) {
        // The application leaves: no segment of the flow is sent from now on (an abort; the
        // model has no RST, so the receiver keeps its state and never completes the flow).
        if self.senders.contains_key(&flow) {
            self.set_rto(flow, None);
            self.senders.remove(&flow);
        }
    }

    fn next_wake(&mut self) -> Option<u64> {
        let rto = self.timers.iter().next().map(|&(t, _)| t);
        let del = self.delacks.iter().next().map(|&(t, _)| t);
        match (rto, del) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn wake(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        while let Some(&(t, flow)) = self.delacks.iter().next() {
            if t > now {
                break;
            }
            self.delacks.remove(&(t, flow));
            let Some(r) = self.receivers.get_mut(&flow) else {
                continue;
            };
            r.delack_at = None;
            if r.pending > 0 {
                r.pending = 0;
                let a = Segment {
                    flow,
                    is_ack: true,
                    ack: r.rcv_nxt,
                    ece: r.ce_state,
                    ts_echo: r.pending_ts,
                    ts: now,
                    ..Default::default()
                };
                self.acks.push_back((r.src, a));
            }
        }
        while let Some(&(t, flow)) = self.timers.iter().next() {
            if t > now {
                break;
            }
            self.timers.remove(&(t, flow));
            let Some(s) = self.senders.get_mut(&flow) else {
                continue;
            };
            s.rto_at = None;
            // Retransmission timeout: the algorithm sets the window; go back to the first
            // unacked byte.
            s.cc.on_timeout(&mut s.w);
            s.recovery = None;
            s.dupacks = 0;
            s.rto = s.cc.fixed_rto().unwrap_or((s.rto * 2).min(1_000_000_000));
            if s.established {
                s.snd_nxt = s.snd_una;
            } else {
                s.syn_due = true;
            }
            let rto = s.rto;
            self.set_rto(flow, Some(now + rto));
            if !self.ready.contains(&flow) {
                self.ready.push_back(flow);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Flow;

    const MSS: u32 = 1000;

    fn cfg(delack: bool) -> TcpConfig {
        TcpConfig {
            mss: MSS,
            init_cwnd: 10,
            min_rto_ns: 1_000_000,
            init_rto_ns: 10_000_000,
            delack: delack.then_some(DelAck {
                timeout_ns: 200_000,
                quickack: 4,
            }),
        }
    }

    /// A receiving host (id 1) of one flow from host 0; `data` = (segment index, CE) in
    /// arrival order, one segment per µs. Returns the ACKs it sent: (time, ack, ece).
    fn receive(delack: bool, data: &[(u64, bool)], until: u64) -> Vec<(u64, u64, bool)> {
        let flows = [Flow {
            src: 0,
            dst: 1,
            bytes: 1_000_000,
            start: 0,
        }];
        let mut done = vec![u64::MAX];
        let mut per_flow = vec![0];
        let (mut delivered, mut completed) = (0, 0);
        let mut h = TcpHost::new(1, cfg(delack), newreno::NewReno);
        let mut acks = Vec::new();
        let mut step = |h: &mut TcpHost<newreno::NewReno>, now: u64, pkt: Option<Packet>| {
            let mut ctx = Ctx {
                now,
                flows: &flows,
                done: &mut done,
                delivered: &mut delivered,
                flow_delivered: &mut per_flow,
                completed: &mut completed,
            };
            if let Some(p) = pkt {
                h.receive(&mut ctx, p);
            } else {
                h.wake(&mut ctx);
            }
            while let Some(p) = h.poll_packet(&mut ctx) {
                let Payload::Tcp(s) = p.payload else {
                    unreachable!()
                };
                acks.push((now, s.ack, s.ece));
            }
        };
        for (i, &(k, ce)) in data.iter().enumerate() {
            let now = 1_000 * (i as u64 + 1);
            let seg = Segment {
                flow: 0,
                seq: k * u64::from(MSS),
                len: MSS,
                ts: now - 500,
                ..Default::default()
            };
            let pkt = Packet {
                src: 0,
                dst: 1,
                wire: MSS + TCP_OVERHEAD,
                hash: 0,
                ect: true,
                ce,
                payload: Payload::Tcp(seg),
                int: None,
                hops: 0,
            };
            step(&mut h, now, Some(pkt));
        }
        while let Some(t) = h.next_wake() {
            if t > until {
                break;
            }
            step(&mut h, t, None);
        }
        acks
    }

    fn in_order(n: u64) -> Vec<(u64, bool)> {
        (0..n).map(|k| (k, false)).collect()
    }

    #[test]
    fn without_delayed_acks_every_segment_is_acked() {
        assert_eq!(receive(false, &in_order(20), u64::MAX).len(), 20);
    }

    #[test]
    fn delayed_acks_ack_every_second_segment_after_quickack() {
        let acks = receive(true, &in_order(20), 0);
        // 4 quick ACKs, then one per two segments: (20 - 4) / 2.
        assert_eq!(acks.len(), 4 + 8, "{acks:?}");
        assert_eq!(acks.last().unwrap().1, 20 * u64::from(MSS));
    }

    #[test]
    fn a_lone_segment_waits_for_the_timer() {
        let acks = receive(true, &in_order(5), u64::MAX);
        // segment 5 (index 4) arrives at 5 µs and is acknowledged when the timer fires.
        assert_eq!(acks.len(), 5, "{acks:?}");
        assert_eq!(acks[4], (5_000 + 200_000, 5 * u64::from(MSS), false));
    }

    #[test]
    fn out_of_order_and_hole_filling_data_is_acked_at_once() {
        // 0..6 in order (4 quick + one delayed pair), then 7 (gap at 6), then 6 fills it.
        let mut d = in_order(6);
        d.push((7, false));
        d.push((6, false));
        let acks = receive(true, &d, 0);
        let m = u64::from(MSS);
        let n = acks.len();
        assert_eq!(acks[n - 2], (7_000, 6 * m, false), "duplicate ACK at once");
        assert_eq!(
            acks[n - 1],
            (8_000, 8 * m, false),
            "hole filled: ACK at once"
        );
    }

    #[test]
    fn dctcp_receiver_echoes_exactly_the_marked_bytes() {
        let pattern = [
            false, false, false, false, false, true, false, true, true, true, false, false, true,
            false, false, false, true, true, false, true, true, true, true, false, false,
        ];
        let d: Vec<(u64, bool)> = pattern
            .iter()
            .enumerate()
            .map(|(k, &c)| (k as u64, c))
            .collect();
        let acks = receive(true, &d, u64::MAX);
        let (mut una, mut echoed) = (0, 0);
        for &(_, ack, ece) in &acks {
            if ece {
                echoed += ack - una;
            }
            una = ack;
        }
        let marked = pattern.iter().filter(|&&c| c).count() as u64 * u64::from(MSS);
        assert_eq!(una, pattern.len() as u64 * u64::from(MSS));
        assert_eq!(echoed, marked, "{acks:?}");
        assert!(acks.len() < pattern.len(), "still delaying: {acks:?}");
    }
}
