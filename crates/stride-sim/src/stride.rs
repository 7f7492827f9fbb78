//! STRIDE in the simulator: each host runs one unmodified `stride_proto::Endpoint`. The engine
//! supplies the time (exact, as hardware timestamps would be) and carries the datagrams.

use crate::control::QcnFeedback;
use crate::engine::{flow_hash, Ctx, FlowTrace, HostStack, ModeStats};
use crate::net::{IntStack, Packet, Payload, WIRE_OVERHEAD};
use rustc_hash::FxHashMap;
use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use stride_proto::wire::HEADER_LEN;
use stride_proto::{Config, ConnHandle, Endpoint, Event};

/// The address standing for host `h` (a key: nothing is sent anywhere).
pub fn host_addr(h: u32) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::from(0x0a00_0000 | h), 4791))
}

fn addr_host(a: SocketAddr) -> u32 {
    match a {
        SocketAddr::V4(v) => u32::from(*v.ip()) & 0x00ff_ffff,
        SocketAddr::V6(_) => unreachable!("the simulator only makes IPv4 keys"),
    }
}

/// Which flow a connection of this host belongs to.
struct Sending {
    flow: u32,
    written: u64,
    closed: bool,
}

/// One host's STRIDE stack.
pub struct StrideHost {
    id: u32,
    ep: Endpoint,
    sending: FxHashMap<ConnHandle, Sending>,
    receiving: FxHashMap<ConnHandle, u32>,
    /// Flow ids by (source host, source connection id), shared by all hosts of a run.
    registry: std::rc::Rc<std::cell::RefCell<HashMap<(u32, u32), u32>>>,
    /// Transmit scratch.
    buf: Vec<u8>,
    /// Receive scratch: a header is copied in front of zeros that are never written.
    rx: Vec<u8>,
    /// Send ECN-capable (ECT) datagrams: on for controllers that read CE marks (DCQCN), off
    /// for the rest so that their runs are the same whatever the switches mark.
    ect: bool,
    /// HPCC: data packets carry an INT stack for the switches to fill, and the receiver
    /// echoes the latest stack from each source on its next ACK there.
    int: bool,
    /// The latest INT stack received from each source host, not yet echoed.
    echo: FxHashMap<u32, IntStack>,
    /// Controllers that scale with the path's length (Swift): the switch count of the
    /// latest packet from each host, told to the connections sending there when it changes
    /// (`None`: not reported).
    path_hops: Option<FxHashMap<u32, u8>>,
}

/// What every simulated application writes (a shared page of zeros, not a buffer per host).
static ZEROS: [u8; 1 << 16] = [0; 1 << 16];

/// The first `n` bytes of [`ZEROS`] as a chunk the endpoint can hold without copying.
fn zero_chunk(n: usize) -> bytes::Bytes {
    bytes::Bytes::from_static(&ZEROS[..n])
}

impl StrideHost {
    /// A host with its own endpoint (listening), keyed and seeded from `seed`.
    pub fn new(
        id: u32,
        cfg: Config,
        seed: u64,
        registry: std::rc::Rc<std::cell::RefCell<HashMap<(u32, u32), u32>>>,
    ) -> Self {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..12].copy_from_slice(&id.to_le_bytes());
        let mut ep = Endpoint::new(cfg, key, seed ^ (u64::from(id) << 20));
        ep.listen(true);
        StrideHost {
            id,
            ep,
            sending: FxHashMap::default(),
            receiving: FxHashMap::default(),
            registry,
            buf: vec![0u8; 65_536],
            rx: vec![0u8; 65_536],
            ect: false,
            int: false,
            echo: FxHashMap::default(),
            path_hops: None,
        }
    }

    /// Tells each sending connection how many switches its path crosses, as its packets
    /// from the peer show (see the `path_hops` field).
    pub fn with_path_hops(mut self, on: bool) -> Self {
        self.path_hops = on.then(FxHashMap::default);
        self
    }

    /// A packet from host `src` crossed `hops` switches: the connections sending there learn
    /// it when it is new.
    fn note_path(&mut self, src: u32, hops: u8) {
        let Some(seen) = self.path_hops.as_mut() else {
            return;
        };
        if seen.insert(src, hops) == Some(hops) {
            return;
        }
        for h in self.senders_to(src) {
            let _ = self.ep.set_path_hops(h, u32::from(hops));
        }
    }

    /// This host's connections sending to host `host`, in handle order (a HashMap's order is
    /// randomised per process: sorted, a seed replays exactly).
    fn senders_to(&self, host: u32) -> Vec<ConnHandle> {
        let to = host_addr(host);
        let mut hs: Vec<ConnHandle> = self
            .sending
            .keys()
            .copied()
            .filter(|h| self.ep.remote(*h) == Some(to))
            .collect();
        hs.sort_unstable();
        hs
    }

    /// Carries INT stacks on data packets and echoes them on ACKs (see the `int` field).
    pub fn with_int(mut self, on: bool) -> Self {
        self.int = on;
        self
    }

    /// Marks every datagram this host sends ECN-capable (see the `ect` field).
    pub fn with_ect(mut self, on: bool) -> Self {
        self.ect = on;
        self
    }

    /// The application of the flow on `h` writes what the send buffer takes.
    ///
    /// Nothing is copied, and the endpoint ends in the state `write` of each chunk would leave:
    /// what fits goes in by `write_bytes` of the static zeros (the buffer grows by the same
    /// bytes, and no wake-up is armed while the whole slice fits); the rest of a chunk that
    /// does not fit is offered to `write` once the buffer is full, which takes none of it and
    /// arms the Writable wake-up its own way, as it would have for the whole chunk.
    fn fill(&mut self, ctx: &mut Ctx, h: ConnHandle) {
        let Some(s) = self.sending.get_mut(&h) else {
            return;
        };
        let total = ctx.flows[s.flow as usize].bytes;
        let cap = self.ep.config().send_buffer;
        while s.written < total {
            let n = (total - s.written).min(ZEROS.len() as u64) as usize;
            let room = self
                .ep
                .conn(h)
                .map_or(0, |c| cap.saturating_sub(c.unacked()));
            let took = if n <= room {
                self.ep.write_bytes(h, &zero_chunk(n)).unwrap_or(0)
            } else {
                let fit = if room > 0 {
                    self.ep.write_bytes(h, &zero_chunk(room)).unwrap_or(0)
                } else {
                    0
                };
                fit + self.ep.write(h, &ZEROS[fit..n]).unwrap_or(0)
            };
            s.written += took as u64;
            if took < n {
                break;
            }
        }
        if s.written == total && !s.closed {
            s.closed = self.ep.close(h).is_ok();
        }
    }

    fn events(&mut self, ctx: &mut Ctx) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Accepted => {
                    let (Some(remote), Some(conn)) = (self.ep.remote(h), self.ep.conn(h)) else {
                        continue;
                    };
                    let key = (addr_host(remote), conn.remote_cid());
                    if let Some(&flow) = self.registry.borrow().get(&key) {
                        self.receiving.insert(h, flow);
                    }
                }
                Event::Connected | Event::Writable => self.fill(ctx, h),
                Event::Readable => {
                    // Counted, never copied: the chunks are the received datagrams' bytes.
                    while let Ok(Some(chunk)) = self.ep.read_chunk(h, 1 << 16) {
                        let n = chunk.len();
                        match self.receiving.get(&h) {
                            Some(&flow) => ctx.deliver(flow, n as u64),
                            None => *ctx.delivered += n as u64,
                        }
                    }
                    if self.ep.is_eof(h) {
                        if let Some(flow) = self.receiving.remove(&h) {
                            ctx.complete(flow);
                            let _ = self.ep.close(h);
                        }
                    }
                }
                Event::Closed(_) => {
                    self.sending.remove(&h);
                    self.receiving.remove(&h);
                }
            }
        }
    }
}

impl HostStack for StrideHost {
    fn start_flow(&mut self, ctx: &mut Ctx, flow: u32) {
        let f = ctx.flows[flow as usize];
        let h = self
            .ep
            .connect(ctx.now, host_addr(f.dst))
            .expect("connection table has room");
        self.registry.borrow_mut().insert((self.id, h.0), flow);
        if let Some(&hops) = self.path_hops.as_ref().and_then(|s| s.get(&f.dst)) {
            let _ = self.ep.set_path_hops(h, u32::from(hops));
        }
        self.sending.insert(
            h,
            Sending {
                flow,
                written: 0,
                closed: false,
            },
        );
        self.fill(ctx, h);
        self.events(ctx);
    }

    fn receive(&mut self, ctx: &mut Ctx, pkt: Packet) {
        if let Payload::Stride {
            header,
            payload_len,
            ctrl,
        } = &pkt.payload
        {
            self.note_path(pkt.src, pkt.hops);
            self.rx[..HEADER_LEN].copy_from_slice(header);
            let len = HEADER_LEN + usize::from(*payload_len);
            // The buffer's payload area is kept zero: a control payload is written in and
            // cleared again after the endpoint has read it.
            if let Some(c) = ctrl {
                self.rx[HEADER_LEN..len].copy_from_slice(c);
            }
            self.ep
                .handle_ecn(ctx.now, host_addr(pkt.src), &self.rx[..len], pkt.ce);
            if let Some(stack) = pkt.int.as_deref() {
                if stack.echo {
                    // The sender: the records the path wrote on our data, after the ACK that
                    // carried them (HPCC compares the ACK's sequence with the last update's).
                    let hops: Vec<stride_proto::cc::IntHop> = stack
                        .hops()
                        .iter()
                        .map(|h| stride_proto::cc::IntHop {
                            qlen: h.qlen_bytes,
                            tx_bytes: h.tx_bytes,
                            ts: h.ts_ns,
                            rate_bps: h.rate_bps,
                        })
                        .collect();
                    for h in self.senders_to(pkt.src) {
                        let _ = self.ep.congestion_signal(ctx.now, h, None, &hops);
                    }
                } else {
                    self.echo.insert(pkt.src, *stack);
                }
            }
            if ctrl.is_some() {
                self.rx[HEADER_LEN..len].fill(0);
            }
            self.events(ctx);
        } else if let Some(q) = pkt.payload.control::<QcnFeedback>() {
            // The reaction point: this host's connections sending to the sampled packet's
            // destination (one per flow pair in the simulated workloads).
            for h in self.senders_to(q.flow_dst) {
                let _ = self.ep.congestion_signal(ctx.now, h, Some(q.fb), &[]);
            }
            self.events(ctx);
        }
    }

    fn poll_packet(&mut self, ctx: &mut Ctx) -> Option<Packet> {
        let t = self.ep.poll_transmit(ctx.now, &mut self.buf)?;
        self.events(ctx);
        let d = &self.buf[..t.len];
        let dst = addr_host(t.remote);
        // Per-connection ECMP, as if every connection had its own UDP source port: the two
        // identifiers XOR to the same key in both directions (the SYN, with no server id, aside).
        let key = u64::from(
            u32::from_be_bytes([d[4], d[5], d[6], d[7]])
                ^ u32::from_be_bytes([d[8], d[9], d[10], d[11]]),
        );
        debug_assert!(t.len >= HEADER_LEN);
        let is_data = d[1] & stride_proto::wire::Flags::DATA.bits() != 0;
        debug_assert!(
            !is_data || d[HEADER_LEN..].iter().all(|&b| b == 0),
            "simulated DATA payloads are zeros, rebuilt on receipt"
        );
        let ctrl = (!is_data && t.len > HEADER_LEN).then(|| Box::from(&d[HEADER_LEN..]));
        let mut header = [0u8; HEADER_LEN];
        header.copy_from_slice(&d[..HEADER_LEN]);
        let int = if !self.int {
            None
        } else if t.len > HEADER_LEN {
            Some(Box::default())
        } else {
            self.echo.remove(&dst).map(|mut s| {
                s.echo = true;
                Box::new(s)
            })
        };
        Some(Packet {
            src: self.id,
            dst,
            wire: t.len as u32 + WIRE_OVERHEAD,
            hash: flow_hash(self.id, dst, key),
            ect: self.ect,
            ce: false,
            payload: Payload::Stride {
                header,
                payload_len: (t.len - HEADER_LEN) as u16,
                ctrl,
            },
            int,
            hops: 0,
        })
    }

    fn trace(&self, flow: u32) -> Option<FlowTrace> {
        // The flow's sending connection (a host sources few flows: a scan is cheap).
        let (&h, _) = self.sending.iter().find(|(_, s)| s.flow == flow)?;
        let c = self.ep.conn(h)?;
        let stt = c.last_stt();
        Some(FlowTrace {
            rate_bps: Some(stride_proto::cc::rate_to_gbps(c.rate()) * 1e9),
            rtt_ns: c.last_rtt().map(|r| r as f64),
            stt_ns: stt.map(f64::from),
            // The same estimate as the connection's queue_delay histogram: the latest STT
            // minus the smallest echoed so far (mod 2^32, as the STT clock wraps).
            queueing_ns: stt
                .zip(c.stats().stt_min)
                .map(|(s, m)| f64::from(s.wrapping_sub(m))),
            branch: c.cc_branch(),
            ..FlowTrace::default()
        })
    }

    fn stop_flow(&mut self, ctx: &mut Ctx, flow: u32) {
        // The application leaves at once: an abort (RST), not a close that would first
        // deliver the send buffer.
        let Some((&h, _)) = self.sending.iter().find(|(_, s)| s.flow == flow) else {
            return;
        };
        let _ = self.ep.abort(h);
        self.sending.remove(&h);
        self.events(ctx);
    }

    fn mode_stats(&self, flow: u32) -> Option<ModeStats> {
        let (&h, _) = self.sending.iter().find(|(_, s)| s.flow == flow)?;
        controller_modes(self.ep.conn(h)?)
    }

    fn next_wake(&mut self) -> Option<u64> {
        // Datagrams ready now wait for the NIC (the engine polls when it frees), so only real
        // deadlines (timers, pacing) wake the host.
        self.ep.next_timer()
    }

    fn wake(&mut self, ctx: &mut Ctx) {
        self.ep.handle_timeout(ctx.now);
        self.events(ctx);
    }
}

/// The mode counters of a connection's congestion controller (switches into its competitive
/// mode, time in it; spec §8.7), for controllers with such modes.
fn controller_modes(conn: &stride_proto::Connection) -> Option<ModeStats> {
    conn.cc_mode_stats().map(|m| ModeStats {
        switches: m.switches,
        competitive_ns: m.competitive_ns,
    })
}
