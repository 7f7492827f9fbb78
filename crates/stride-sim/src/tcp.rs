//! Packet-level TCP models: NewReno (slow start, fast retransmit / recovery, RTO), DCTCP (ECN
//! echo per packet, alpha with gain g, one cut per window) and Vegas (alpha/beta in packets
//! against the base RTT). One sender/receiver implementation; the variant decides the reaction.
//!
//! Modelled: a SYN / SYN-ACK exchange before data (one RTT, like STRIDE's handshake), an ACK per
//! segment carrying a timestamp echo, cumulative ACKs with an out-of-order buffer at the
//! receiver, no SACK, no delayed ACKs, no pacing.

use crate::engine::{flow_hash, Ctx, HostStack};
use crate::net::{Packet, Payload};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

/// Bytes on the wire around a TCP payload: Ethernet header + FCS (18), preamble + gap (20),
/// IPv4 (20), TCP (20). A full 1460-byte segment is 1538 bytes, like a full STRIDE packet.
pub const TCP_OVERHEAD: u32 = 18 + 20 + 20 + 20;

/// Which TCP.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variant {
    /// TCP NewReno.
    NewReno,
    /// DCTCP with gain `g`.
    Dctcp {
        /// EWMA gain of the marked fraction (1/16 in the DCTCP paper).
        g: f64,
    },
    /// TCP Vegas with thresholds in packets.
    Vegas {
        /// Increase below this many queued packets.
        alpha: f64,
        /// Decrease above this many queued packets.
        beta: f64,
    },
}

/// TCP model parameters.
#[derive(Clone, Copy, Debug)]
pub struct TcpConfig {
    /// Variant.
    pub variant: Variant,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Initial window, segments.
    pub init_cwnd: u32,
    /// Minimum retransmission timeout, ns.
    pub min_rto_ns: u64,
    /// Initial retransmission timeout, ns.
    pub init_rto_ns: u64,
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

struct Sender {
    dst: u32,
    size: u64,
    established: bool,
    syn_due: bool,
    snd_una: u64,
    snd_nxt: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    recovery: Option<u64>,
    rtx_now: bool,
    rto: u64,
    rto_at: Option<u64>,
    srtt: f64,
    rttvar: f64,
    // DCTCP
    alpha: f64,
    win_end: u64,
    acked: u64,
    marked: u64,
    cut_until: u64,
    // Vegas
    base_rtt: f64,
    epoch_min_rtt: f64,
    epoch_end: u64,
}

struct Receiver {
    src: u32,
    size: u64,
    rcv_nxt: u64,
    ooo: BTreeMap<u64, u32>,
}

/// One host's TCP stack (all flows it sends and receives).
pub struct TcpHost {
    id: u32,
    cfg: TcpConfig,
    senders: HashMap<u32, Sender>,
    receivers: HashMap<u32, Receiver>,
    ready: VecDeque<u32>,
    acks: VecDeque<(u32, Segment)>,
    timers: BTreeSet<(u64, u32)>,
}

impl TcpHost {
    /// A host running `cfg`.
    pub fn new(id: u32, cfg: TcpConfig) -> Self {
        TcpHost {
            id,
            cfg,
            senders: HashMap::new(),
            receivers: HashMap::new(),
            ready: VecDeque::new(),
            acks: VecDeque::new(),
            timers: BTreeSet::new(),
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
            ect: matches!(self.cfg.variant, Variant::Dctcp { .. }),
            ce: false,
            payload: Payload::Tcp(seg),
            int: None,
        }
    }

    fn can_send(s: &Sender) -> bool {
        if s.syn_due || s.rtx_now {
            return true;
        }
        s.established
            && s.snd_nxt < s.size
            && (s.snd_nxt - s.snd_una) as f64 + 1.0 <= s.cwnd.max(1.0)
    }

    fn on_ack(&mut self, now: u64, seg: Segment) {
        let cfg = self.cfg;
        let mss = f64::from(cfg.mss);
        let Some(s) = self.senders.get_mut(&seg.flow) else {
            return;
        };
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
            s.rto = ((s.srtt + 4.0 * s.rttvar) as u64).max(cfg.min_rto_ns);
            s.base_rtt = if s.base_rtt == 0.0 {
                r
            } else {
                s.base_rtt.min(r)
            };
            s.epoch_min_rtt = if s.epoch_min_rtt == 0.0 {
                r
            } else {
                s.epoch_min_rtt.min(r)
            };
        }
        let mut cut = false;
        if seg.ack > s.snd_una {
            let newly = seg.ack - s.snd_una;
            s.snd_una = seg.ack;
            if s.snd_nxt < s.snd_una {
                s.snd_nxt = s.snd_una;
            }
            s.dupacks = 0;
            if let Variant::Dctcp { g } = cfg.variant {
                s.acked += newly;
                if seg.ece {
                    s.marked += newly;
                }
                if s.snd_una >= s.win_end {
                    let f = if s.acked > 0 {
                        s.marked as f64 / s.acked as f64
                    } else {
                        0.0
                    };
                    s.alpha = (1.0 - g) * s.alpha + g * f;
                    s.acked = 0;
                    s.marked = 0;
                    s.win_end = s.snd_nxt;
                }
            }
            match s.recovery {
                Some(rec) if s.snd_una < rec => {
                    // Partial ACK: the next hole is lost too.
                    s.rtx_now = true;
                    s.cwnd = (s.cwnd - newly as f64 + mss).max(mss);
                }
                Some(_) => {
                    s.recovery = None;
                    s.cwnd = s.ssthresh;
                }
                None => {
                    if s.cwnd < s.ssthresh {
                        s.cwnd += (newly as f64).min(mss);
                    } else if !matches!(cfg.variant, Variant::Vegas { .. }) {
                        s.cwnd += mss * mss / s.cwnd;
                    }
                }
            }
            if let Variant::Vegas { alpha, beta } = cfg.variant {
                if s.snd_una >= s.epoch_end && s.epoch_min_rtt > 0.0 {
                    let diff = s.cwnd / mss * (1.0 - s.base_rtt / s.epoch_min_rtt);
                    if s.cwnd < s.ssthresh {
                        if diff > 1.0 {
                            s.ssthresh = s.cwnd;
                        }
                    } else if diff < alpha {
                        s.cwnd += mss;
                    } else if diff > beta {
                        s.cwnd = (s.cwnd - mss).max(2.0 * mss);
                    }
                    s.epoch_min_rtt = 0.0;
                    s.epoch_end = s.snd_nxt;
                }
            }
        } else if seg.ack == s.snd_una && s.snd_una < s.snd_nxt && seg.len == 0 && !seg.syn {
            s.dupacks += 1;
            if s.recovery.is_some() {
                s.cwnd += mss;
            } else if s.dupacks == 3 {
                s.ssthresh = (s.cwnd / 2.0).max(2.0 * mss);
                s.cwnd = s.ssthresh + 3.0 * mss;
                s.recovery = Some(s.snd_nxt);
                s.rtx_now = true;
            }
        }
        if let Variant::Dctcp { .. } = cfg.variant {
            if seg.ece && s.snd_una > s.cut_until && s.recovery.is_none() {
                cut = true;
            }
        }
        if cut {
            s.cwnd = (s.cwnd * (1.0 - s.alpha / 2.0)).max(mss);
            s.ssthresh = s.cwnd;
            s.cut_until = s.snd_nxt;
        }
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
        let r = self.receivers.entry(flow).or_insert(Receiver {
            src,
            size,
            rcv_nxt: 0,
            ooo: BTreeMap::new(),
        });
        let mut reply = Segment {
            flow,
            is_ack: true,
            ece: ce,
            ts_echo: seg.ts,
            ts: ctx.now,
            ..Default::default()
        };
        if seg.syn {
            reply.syn = true;
        } else if seg.seq == r.rcv_nxt {
            r.rcv_nxt += u64::from(seg.len);
            *ctx.delivered += u64::from(seg.len);
            while let Some((&s, &l)) = r.ooo.iter().next() {
                if s > r.rcv_nxt {
                    break;
                }
                r.ooo.remove(&s);
                let end = s + u64::from(l);
                if end > r.rcv_nxt {
                    *ctx.delivered += end - r.rcv_nxt;
                    r.rcv_nxt = end;
                }
            }
        } else if seg.seq > r.rcv_nxt {
            r.ooo.insert(seg.seq, seg.len);
        }
        reply.ack = r.rcv_nxt;
        if r.rcv_nxt >= r.size {
            ctx.complete(flow);
        }
        let to = r.src;
        self.acks.push_back((to, reply));
    }
}

impl HostStack for TcpHost {
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
            cwnd: f64::from(cfg.init_cwnd * cfg.mss),
            ssthresh: f64::INFINITY,
            dupacks: 0,
            recovery: None,
            rtx_now: false,
            rto: cfg.init_rto_ns,
            rto_at: None,
            srtt: 0.0,
            rttvar: 0.0,
            alpha: 1.0,
            win_end: 0,
            acked: 0,
            marked: 0,
            cut_until: 0,
            base_rtt: 0.0,
            epoch_min_rtt: 0.0,
            epoch_end: 0,
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

    fn next_wake(&mut self) -> Option<u64> {
        self.timers.iter().next().map(|&(t, _)| t)
    }

    fn wake(&mut self, ctx: &mut Ctx) {
        let now = ctx.now;
        let mss = f64::from(self.cfg.mss);
        while let Some(&(t, flow)) = self.timers.iter().next() {
            if t > now {
                break;
            }
            self.timers.remove(&(t, flow));
            let Some(s) = self.senders.get_mut(&flow) else {
                continue;
            };
            s.rto_at = None;
            // Retransmission timeout: back to one segment, go back to the first unacked byte.
            s.ssthresh = (s.cwnd / 2.0).max(2.0 * mss);
            s.cwnd = mss;
            s.recovery = None;
            s.dupacks = 0;
            s.rto = (s.rto * 2).min(1_000_000_000);
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
