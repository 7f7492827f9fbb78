//! An endpoint: many connections behind one address. Routes datagrams by connection identifier,
//! answers SYNs statelessly with a cookie, creates a connection only when the handshake's third
//! packet returns a valid cookie, and answers unknown identifiers with a rate-limited RST.
//!
//! The handshake and admission (cookies, SYN-ACKs and their start hints, the limits a new
//! connection must pass, RSTs) are in `handshake.rs`; this file routes datagrams to
//! connections and runs their transmit queue, timers and application calls.

use crate::config::Config;
use crate::conn::{Connection, Event, State};
use crate::wire::{Flags, Header, Packet, HEADER_LEN};
use bytes::Bytes;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{IpAddr, SocketAddr};

mod handshake;

use handshake::IdGen;
pub use handshake::GRANT_PRESENT;

/// Identifies a connection of an endpoint (its local connection identifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnHandle(pub u32);

/// Hasher for tables keyed by a connection identifier (`u32` or [`ConnHandle`]): one multiply
/// by an odd 64-bit constant (Fibonacci hashing), which spreads the key's bits into the high
/// bits the table probes with. The endpoint draws its identifiers at random and never takes one
/// from a peer, so a peer cannot fill a table with colliding keys and a keyed hash buys nothing;
/// an identifier a peer invents only misses. The default SipHash was about a tenth of a bulk
/// receiver's CPU (`perf record`; docs/results.md, "What the host settings buy"). Other keys
/// (bytes) fall back to FNV-1a.
#[derive(Clone, Copy, Debug, Default)]
pub struct CidHasher(u64);

impl Hasher for CidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = (self.0 ^ u64::from(n)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A hash map keyed by connection identifier, hashed with [`CidHasher`].
pub type CidMap<K, V> = HashMap<K, V, BuildHasherDefault<CidHasher>>;

/// A datagram to send: `len` bytes of the caller's buffer to `remote`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Destination.
    pub remote: SocketAddr,
    /// Bytes written into the buffer.
    pub len: usize,
}

/// Endpoint-wide counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointStats {
    /// Datagrams handed to [`Endpoint::handle`].
    pub datagrams_in: u64,
    /// Datagrams that failed to parse (counted and dropped).
    pub malformed: u64,
    /// SYNs received.
    pub syns: u64,
    /// SYN-ACKs sent (statelessly).
    pub syn_acks_sent: u64,
    /// Packets to unknown identifiers whose cookie did not verify.
    pub bad_cookies: u64,
    /// Packets for unknown identifiers.
    pub unknown: u64,
    /// RSTs sent.
    pub rsts_sent: u64,
    /// RSTs not sent because of the rate limit.
    pub rsts_suppressed: u64,
    /// Connections accepted.
    pub accepted: u64,
    /// Handshakes refused because the connection table was full.
    pub refused_full: u64,
    /// Handshakes refused because their source address held `max_per_source` connections.
    pub refused_per_source: u64,
}

/// Errors of endpoint calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointError {
    /// `max_connections` reached.
    TooManyConnections,
    /// No such connection.
    UnknownConnection,
}

impl std::fmt::Display for EndpointError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EndpointError::TooManyConnections => f.write_str("too many connections"),
            EndpointError::UnknownConnection => f.write_str("unknown connection"),
        }
    }
}

impl std::error::Error for EndpointError {}

struct Entry {
    conn: Connection,
    remote: SocketAddr,
    /// Accepted (counted in `per_source`), not opened by us.
    incoming: bool,
    queued: bool,
    timer_at: Option<u64>,
    /// Counted in the endpoint's `rx_active` (spec §8.6 `rx_share`).
    active: bool,
}

/// Many connections behind one address. See the module documentation.
pub struct Endpoint {
    cfg: Config,
    key: (u64, u64),
    ids: IdGen,
    listening: bool,
    conns: CidMap<u32, Entry>,
    /// Accepted connections per source address.
    per_source: HashMap<IpAddr, usize>,
    ready: VecDeque<u32>,
    timers: BinaryHeap<Reverse<(u64, u32)>>,
    ctrl: VecDeque<(SocketAddr, [u8; HEADER_LEN])>,
    events: VecDeque<(ConnHandle, Event)>,
    rst_tokens: u64,
    rst_last: u64,
    stats: EndpointStats,
    /// SYNs answered in the current and the previous 2^16 ns epoch (the start grant's count of
    /// concurrent starts, spec §8.6; no per-SYN state), and the current epoch.
    syn_epoch: (u64, u32, u32),
    /// Connections whose peer is sending to us (spec §8.6 `rx_share`), and the share of each.
    rx_active: u32,
    rx_share: u32,
}

/// Smallest receive share (spec §8.6 `rx_share`): one KiB, the unit of the window field.
const RX_SHARE_FLOOR: u32 = 1024;

impl Endpoint {
    /// A new endpoint. `secret` keys the SYN cookies and the generator of connection
    /// identifiers and initial sequence numbers (keep it private and cryptographically random:
    /// whoever knows it can predict them); `rng_seed` is mixed in (it may be public).
    pub fn new(cfg: Config, secret: [u8; 16], rng_seed: u64) -> Self {
        if let Err((f, why)) = cfg.validate() {
            panic!("invalid configuration field {f}: {why}");
        }
        let k0 = u64::from_le_bytes(secret[..8].try_into().expect("8 bytes"));
        let k1 = u64::from_le_bytes(secret[8..].try_into().expect("8 bytes"));
        let burst = u64::from(cfg.rst_per_sec);
        Endpoint {
            cfg,
            key: (k0, k1),
            ids: IdGen::new((k0, k1), rng_seed),
            listening: false,
            conns: CidMap::default(),
            per_source: HashMap::new(),
            ready: VecDeque::new(),
            timers: BinaryHeap::new(),
            ctrl: VecDeque::new(),
            events: VecDeque::new(),
            syn_epoch: (0, 0, 0),
            rx_active: 0,
            rx_share: u32::MAX,
            rst_tokens: burst,
            rst_last: 0,
            stats: EndpointStats::default(),
        }
    }

    /// Accept incoming connections (answer SYNs).
    pub fn listen(&mut self, on: bool) {
        self.listening = on;
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Endpoint counters.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Live connections.
    pub fn connection_count(&self) -> usize {
        self.conns.len()
    }

    /// Holds the due pure ACK of every connection that has something to send until `until`
    /// ([`Connection::hold_ack`]: a host that received requests in one batch holds their ACKs
    /// for the responses, whichever connections they came on); their timers are `wake_by`
    /// (at least `until`; see [`Connection::hold_ack`]), so a held ACK that nothing carried
    /// leaves at `wake_by`, or earlier if its connection sends anything from `until` on.
    /// Walks the connections with
    /// something to send; returns how many ACKs it held.
    pub fn hold_acks(&mut self, until: u64, wake_by: u64) -> usize {
        let mut held = 0;
        for &cid in &self.ready {
            if let Some(e) = self.conns.get_mut(&cid) {
                held += usize::from(e.conn.hold_ack(until, wake_by));
            }
        }
        held
    }

    /// Connections that are handshaking or established: [`Endpoint::connection_count`] less
    /// those lingering after a close (which only re-acknowledge a lost FIN) or closed. Walks
    /// every connection.
    pub fn open_connection_count(&self) -> usize {
        self.conns
            .values()
            .filter(|e| matches!(e.conn.state(), State::SynSent | State::Established))
            .count()
    }

    /// Lowers one connection's largest DATA payload ([`Connection::limit_payload`]); `None`
    /// when the connection does not exist, else the payload now in force.
    pub fn limit_payload(&mut self, h: ConnHandle, max: u16) -> Option<u16> {
        self.conns.get_mut(&h.0).map(|e| e.conn.limit_payload(max))
    }

    /// Every live connection's handle, in no particular order.
    pub fn handles(&self) -> impl Iterator<Item = ConnHandle> + '_ {
        self.conns.keys().map(|&k| ConnHandle(k))
    }

    /// A connection, if it exists.
    pub fn conn(&self, h: ConnHandle) -> Option<&Connection> {
        self.conns.get(&h.0).map(|e| &e.conn)
    }

    /// The peer address of a connection.
    pub fn remote(&self, h: ConnHandle) -> Option<SocketAddr> {
        self.conns.get(&h.0).map(|e| e.remote)
    }

    /// Receive share for `n` senders (spec §8.6 `rx_share`): `rx_share >> ceil(log2 n)`, at
    /// least one KiB (the window's unit); `u32::MAX` (no limit) for a lone sender or when the
    /// mechanism is off.
    fn share_for(&self, n: u32) -> u32 {
        if self.cfg.rx_share == 0 || n <= 1 {
            return u32::MAX;
        }
        let shift = 32 - (n.max(1) - 1).leading_zeros();
        (self.cfg.rx_share >> shift.min(31)).max(RX_SHARE_FLOOR)
    }

    /// Brings the count of sending peers up to date with one connection (after it handled a
    /// packet or a timer, or sent one).
    fn sync_active(&mut self, cid: u32) {
        let Some(e) = self.conns.get_mut(&cid) else {
            return;
        };
        let now_active = e.conn.rx_active();
        if now_active != e.active {
            e.active = now_active;
            if now_active {
                self.rx_active += 1;
            } else {
                self.rx_active -= 1;
            }
            self.rx_share = self.share_for(self.rx_active);
        }
    }

    fn fresh_cid(&mut self) -> u32 {
        loop {
            let c = self.ids.next_u64() as u32;
            if c != 0 && !self.conns.contains_key(&c) {
                return c;
            }
        }
    }

    /// Opens a connection to `remote`; the SYN leaves on the next `poll_transmit`.
    pub fn connect(&mut self, now: u64, remote: SocketAddr) -> Result<ConnHandle, EndpointError> {
        if self.conns.len() >= self.cfg.max_connections {
            return Err(EndpointError::TooManyConnections);
        }
        let cid = self.fresh_cid();
        let iss = self.ids.next_u64() as u32;
        let conn = Connection::client(self.cfg.clone(), now, cid, iss);
        self.conns.insert(
            cid,
            Entry {
                conn,
                remote,
                incoming: false,
                queued: false,
                timer_at: None,
                active: false,
            },
        );
        self.touch(cid);
        Ok(ConnHandle(cid))
    }

    fn push_ctrl(&mut self, remote: SocketAddr, h: Header) {
        let mut b = [0u8; HEADER_LEN];
        h.emit(&mut b).expect("32 bytes");
        self.ctrl.push_back((remote, b));
    }

    /// Handles one received datagram. `now` should be the receive timestamp.
    pub fn handle(&mut self, now: u64, remote: SocketAddr, data: &[u8]) {
        self.handle_ecn(now, remote, data, false)
    }

    /// Like [`Endpoint::handle`], for a datagram whose IP header carried the ECN codepoint
    /// CE (`ce = true`, congestion experienced) or not.
    pub fn handle_ecn(&mut self, now: u64, remote: SocketAddr, data: &[u8], ce: bool) {
        self.handle_from(now, remote, data, ce, None)
    }

    /// Handles one datagram; `src`, when given, is the `Bytes` that `data` is, whose slices
    /// an in-order payload may keep instead of a copy ([`Endpoint::handle_ecn_bytes`]). A
    /// datagram for a known connection costs one table lookup.
    fn handle_from(
        &mut self,
        now: u64,
        remote: SocketAddr,
        data: &[u8],
        ce: bool,
        src: Option<&Bytes>,
    ) {
        self.stats.datagrams_in += 1;
        let p = match Packet::new_checked(data) {
            Ok(p) => p,
            Err(_) => {
                self.stats.malformed += 1;
                return;
            }
        };
        let f = p.flags();
        let dst = p.dst_cid();
        if let Some(e) = self.conns.get_mut(&dst) {
            if e.remote == remote {
                e.conn.set_rx_share(self.rx_share);
                if let Some(b) = src {
                    e.conn.set_rx_source(Some(b.clone()));
                    e.conn.handle_ecn(now, &p, ce);
                    e.conn.set_rx_source(None);
                } else {
                    e.conn.handle_ecn(now, &p, ce);
                }
                if Self::collect(&mut self.events, &mut self.ready, dst, e) {
                    self.sync_active(dst);
                }
                return;
            }
        }
        if f.contains(Flags::SYN) && !f.contains(Flags::ACK) {
            self.on_syn(now, remote, &p);
            return;
        }
        self.stats.unknown += 1;
        if self.listening
            && f.contains(Flags::ACK)
            && !f.contains(Flags::RST)
            && !f.contains(Flags::SYN)
        {
            self.on_handshake_ack(now, remote, &p, ce);
            return;
        }
        self.maybe_rst(now, remote, &p);
    }

    /// Marks a connection for a look at the next `poll_transmit` and collects its events.
    fn touch(&mut self, cid: u32) {
        let Some(e) = self.conns.get_mut(&cid) else {
            return;
        };
        if Self::collect(&mut self.events, &mut self.ready, cid, e) {
            self.sync_active(cid);
        }
    }

    /// [`Endpoint::touch`] with the entry in hand (one table lookup): moves the connection's
    /// events to `events` and queues it on `ready`; true when its sending-peer state changed,
    /// for the caller to bring the count up to date with [`Endpoint::sync_active`].
    fn collect(
        events: &mut VecDeque<(ConnHandle, Event)>,
        ready: &mut VecDeque<u32>,
        cid: u32,
        e: &mut Entry,
    ) -> bool {
        while let Some(ev) = e.conn.poll_event() {
            events.push_back((ConnHandle(cid), ev));
        }
        if !e.queued {
            e.queued = true;
            ready.push_back(cid);
        }
        e.conn.rx_active() != e.active
    }

    /// Schedules the connection's next deadline (or removes it when it is finished).
    fn park(&mut self, cid: u32) {
        self.sync_active(cid);
        let Some(e) = self.conns.get_mut(&cid) else {
            return;
        };
        while let Some(ev) = e.conn.poll_event() {
            self.events.push_back((ConnHandle(cid), ev));
        }
        if e.conn.is_closed() {
            // An abort's RST still to send (a read right after the abort parks the
            // connection): it stays queued until the RST has left (`wants_transmit` of a
            // closed connection is that RST alone, whatever the time).
            if e.conn.wants_transmit(0) {
                if !e.queued {
                    e.queued = true;
                    self.ready.push_back(cid);
                }
                return;
            }
            if e.conn.readable() == 0 {
                let e = self.conns.remove(&cid).expect("present");
                if e.incoming {
                    if let Some(n) = self.per_source.get_mut(&e.remote.ip()) {
                        *n -= 1;
                        if *n == 0 {
                            self.per_source.remove(&e.remote.ip());
                        }
                    }
                }
            }
            return;
        }
        if let Some(t) = e.conn.poll_timeout() {
            if e.timer_at != Some(t) {
                e.timer_at = Some(t);
                self.timers.push(Reverse((t, cid)));
            }
        }
    }

    /// Writes the next datagram into `buf` (at least 32 + `max_payload` bytes).
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<Transmit> {
        self.next_transmit(now, buf, |c, now, buf| c.poll_transmit(now, buf))
    }

    /// The next datagram: a queued control packet, else the next connection of the ready
    /// queue that has one (`emit` builds it), in round robin.
    fn next_transmit(
        &mut self,
        now: u64,
        buf: &mut [u8],
        mut emit: impl FnMut(&mut Connection, u64, &mut [u8]) -> Option<usize>,
    ) -> Option<Transmit> {
        if let Some((remote, b)) = self.ctrl.pop_front() {
            buf[..HEADER_LEN].copy_from_slice(&b);
            return Some(Transmit {
                remote,
                len: HEADER_LEN,
            });
        }
        while let Some(cid) = self.ready.pop_front() {
            let Some(e) = self.conns.get_mut(&cid) else {
                continue;
            };
            e.queued = false;
            e.conn.set_rx_share(self.rx_share);
            // `emit` checks what `wants_transmit` would (and changes nothing when it has
            // nothing to send), so it is asked directly.
            if let Some(len) = emit(&mut e.conn, now, buf) {
                let remote = e.remote;
                // Round robin: go to the back of the queue if it has more to send.
                if e.conn.wants_transmit(now) {
                    e.queued = true;
                    self.ready.push_back(cid);
                } else {
                    self.park(cid);
                }
                return Some(Transmit { remote, len });
            }
            self.park(cid);
        }
        None
    }

    /// When to call [`Endpoint::handle_timeout`] next; a value of 0 means "poll now"
    /// (something is ready to send).
    pub fn poll_timeout(&mut self) -> Option<u64> {
        if !self.ctrl.is_empty() || !self.ready.is_empty() {
            return Some(0);
        }
        self.next_timer()
    }

    /// Whether `poll_transmit` may have a datagram right now (without producing it).
    pub fn has_pending_transmit(&self) -> bool {
        !self.ctrl.is_empty() || !self.ready.is_empty()
    }

    /// The earliest connection deadline (timers and pacing), ignoring datagrams that are ready
    /// now. A driver whose link is busy waits for the link, not for this.
    pub fn next_timer(&mut self) -> Option<u64> {
        while let Some(&Reverse((t, cid))) = self.timers.peek() {
            match self.conns.get(&cid) {
                Some(e) if e.timer_at == Some(t) => return Some(t),
                _ => {
                    self.timers.pop();
                }
            }
        }
        None
    }

    /// Runs every connection timer due at `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        while let Some(&Reverse((t, cid))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(e) = self.conns.get_mut(&cid) else {
                continue;
            };
            if e.timer_at != Some(t) {
                continue;
            }
            e.timer_at = None;
            e.conn.set_rx_share(self.rx_share);
            e.conn.handle_timeout(now);
            self.touch(cid);
        }
    }

    /// Next application event.
    pub fn poll_event(&mut self) -> Option<(ConnHandle, Event)> {
        self.events.pop_front()
    }

    /// Hands a congestion signal that does not travel in STRIDE packets to a connection's
    /// controller: a QCN feedback frame (`qcn_fb`, quantised |Fb|) or HPCC's INT records.
    pub fn congestion_signal(
        &mut self,
        now: u64,
        h: ConnHandle,
        qcn_fb: Option<u8>,
        int: &[crate::cc::IntHop],
    ) -> Result<(), EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        e.conn.congestion_signal(now, qcn_fb, int);
        self.touch(h.0);
        Ok(())
    }

    /// Tells a connection's controller how many switches its path crosses (see
    /// [`Connection::set_path_hops`]).
    pub fn set_path_hops(&mut self, h: ConnHandle, hops: u32) -> Result<(), EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        e.conn.set_path_hops(hops);
        Ok(())
    }

    /// Queues bytes on a connection; returns how many were taken.
    pub fn write(&mut self, h: ConnHandle, data: &[u8]) -> Result<usize, EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        let n = e.conn.write(data);
        self.touch(h.0);
        Ok(n)
    }

    /// Queues a chunk without copying it (see [`Connection::write_bytes`]); returns how many
    /// of its bytes (a prefix) fit.
    pub fn write_bytes(&mut self, h: ConnHandle, data: &Bytes) -> Result<usize, EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        let n = e.conn.write_bytes(data);
        self.touch(h.0);
        Ok(n)
    }

    /// Takes up to `max` delivered bytes without copying them (see
    /// [`Connection::read_chunk`]); `Ok(None)` when nothing is buffered.
    pub fn read_chunk(
        &mut self,
        h: ConnHandle,
        max: usize,
    ) -> Result<Option<Bytes>, EndpointError> {
        self.reading(h, |c| c.read_chunk(max))
    }

    /// Like [`Endpoint::handle_ecn`] for a datagram held in [`Bytes`]: a connection keeps its
    /// in-order payload as a slice of `data` instead of copying it.
    pub fn handle_ecn_bytes(&mut self, now: u64, remote: SocketAddr, data: &Bytes, ce: bool) {
        self.handle_from(now, remote, data, ce, Some(data));
    }

    /// Handles a run of datagrams received as one message (Linux UDP GRO): `msg` holds
    /// datagrams of `seg` bytes each, the last possibly shorter (`seg = 0`: one datagram),
    /// all from `remote` with the same ECN marking. The same as [`Endpoint::handle_ecn_bytes`]
    /// on each datagram in turn, but consecutive datagrams of one connection cost one table
    /// lookup and one ready-queue update between them, and in-order payloads are kept as
    /// slices of `msg`.
    pub fn handle_segments(
        &mut self,
        now: u64,
        remote: SocketAddr,
        msg: &Bytes,
        seg: usize,
        ce: bool,
    ) {
        let seg = if seg == 0 { msg.len().max(1) } else { seg };
        let next = |off: usize| off..(off + seg).min(msg.len());
        let mut off = 0;
        while off < msg.len() {
            let mut r = next(off);
            // A datagram of a known connection from its peer starts a run; anything else
            // (malformed, handshakes, strangers, RSTs) takes the one-datagram path.
            let first = Packet::new_checked(&msg[r.clone()]).ok().and_then(|p| {
                let dst = p.dst_cid();
                let e = self.conns.get_mut(&dst).filter(|e| e.remote == remote)?;
                Some((p, dst, e))
            });
            let Some((mut p, dst, e)) = first else {
                self.handle_from(now, remote, &msg[r.clone()], ce, Some(msg));
                off = r.end;
                continue;
            };
            // This datagram and those after it for the same connection, while its sending
            // state (which sets every connection's receive share) is unchanged. Each is
            // parsed once: the check that it belongs to the run is its parse.
            e.conn.set_rx_share(self.rx_share);
            e.conn.set_rx_source(Some(msg.clone()));
            loop {
                self.stats.datagrams_in += 1;
                e.conn.handle_ecn(now, &p, ce);
                off = r.end;
                if off >= msg.len() || e.conn.rx_active() != e.active {
                    break;
                }
                r = next(off);
                match Packet::new_checked(&msg[r.clone()]) {
                    Ok(q) if q.dst_cid() == dst => p = q,
                    _ => break,
                }
            }
            e.conn.set_rx_source(None);
            if Self::collect(&mut self.events, &mut self.ready, dst, e) {
                self.sync_active(dst);
            }
        }
    }

    /// Takes delivered bytes without copying them, as [`Endpoint::read_chunk`] repeated:
    /// appends chunks to `out` until `max` bytes or `most` chunks are taken or nothing is
    /// left; returns the bytes taken (0: nothing buffered). One table lookup and one
    /// ready-queue update for them all.
    pub fn read_chunks(
        &mut self,
        h: ConnHandle,
        max: usize,
        most: usize,
        out: &mut Vec<Bytes>,
    ) -> Result<usize, EndpointError> {
        self.reading(h, |c| c.read_chunks(max, most, out))
    }

    /// Like [`Endpoint::poll_transmit`], but a DATA payload is appended to `parts` as slices
    /// of the send buffer instead of being copied into `buf`, which then holds the header
    /// only ([`Connection::poll_transmit_parts`]). `Transmit::len` is the whole datagram.
    pub fn poll_transmit_parts(
        &mut self,
        now: u64,
        buf: &mut [u8],
        parts: &mut Vec<Bytes>,
    ) -> Option<Transmit> {
        self.next_transmit(now, buf, |c, now, buf| {
            c.poll_transmit_parts(now, buf, parts)
        })
    }

    /// Reads delivered bytes. `Ok(0)` with [`Endpoint::is_eof`] true means end of stream.
    pub fn read(&mut self, h: ConnHandle, buf: &mut [u8]) -> Result<usize, EndpointError> {
        self.reading(h, |c| c.read(buf))
    }

    /// Runs a read on connection `h`, then parks the connection if it is closed after the
    /// read, or else marks it touched (shared by [`Endpoint::read`] and
    /// [`Endpoint::read_chunk`]).
    fn reading<R>(
        &mut self,
        h: ConnHandle,
        read: impl FnOnce(&mut Connection) -> R,
    ) -> Result<R, EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        let r = read(&mut e.conn);
        if e.conn.is_closed() {
            self.park(h.0);
        } else {
            self.touch(h.0);
        }
        Ok(r)
    }

    /// Whether the peer finished its stream and every byte was read (or the connection is gone).
    pub fn is_eof(&self, h: ConnHandle) -> bool {
        self.conns.get(&h.0).is_none_or(|e| e.conn.is_eof())
    }

    /// Ends our direction after the buffered bytes (FIN).
    pub fn close(&mut self, h: ConnHandle) -> Result<(), EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        e.conn.close();
        self.touch(h.0);
        Ok(())
    }

    /// Aborts with RST; the connection's unread data is discarded.
    pub fn abort(&mut self, h: ConnHandle) -> Result<(), EndpointError> {
        let e = self
            .conns
            .get_mut(&h.0)
            .ok_or(EndpointError::UnknownConnection)?;
        e.conn.abort();
        let mut sink = [0u8; 4096];
        while e.conn.read(&mut sink) > 0 {}
        self.touch(h.0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::handshake::COOKIE_SLOT_SHIFT;
    use super::*;

    /// Counters, events, bytes delivered per connection (and whether they are slices of the
    /// message), transmissions, next deadline.
    type ReceiverView = (
        String,
        Vec<(ConnHandle, Event)>,
        Vec<(Vec<u8>, bool)>,
        Vec<Vec<u8>>,
        Option<u64>,
    );

    /// What a receiver shows after taking datagrams: its counters, events, the bytes each
    /// connection delivered (and whether they are slices of `msg`), its transmissions and
    /// its next deadline.
    fn receiver_view(ep: &mut Endpoint, hs: &[ConnHandle], now: u64, msg: &Bytes) -> ReceiverView {
        let mut events = Vec::new();
        while let Some(e) = ep.poll_event() {
            events.push(e);
        }
        let inside = |b: &Bytes| {
            let (p, m) = (b.as_ptr() as usize, msg.as_ptr() as usize);
            p >= m && p + b.len() <= m + msg.len()
        };
        // Before reading: a read may itself make an ACK due.
        let mut out = Vec::new();
        let mut buf = vec![0u8; 2048];
        while let Some(t) = ep.poll_transmit(now, &mut buf) {
            out.push(buf[..t.len].to_vec());
        }
        let mut read = Vec::new();
        for &h in hs {
            let mut chunks = Vec::new();
            ep.read_chunks(h, usize::MAX, usize::MAX, &mut chunks)
                .unwrap();
            let bytes: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            read.push((bytes, !chunks.is_empty() && chunks.iter().all(inside)));
        }
        let stats = format!(
            "{:?} {:?}",
            ep.stats(),
            hs.iter()
                .map(|&h| ep.conn(h).map(|c| c.stats().clone()))
                .collect::<Vec<_>>()
        );
        (stats, events, read, out, ep.poll_timeout())
    }

    /// A GRO message handed over whole (`handle_segments`) leaves the receiver exactly as its
    /// datagrams one at a time do: two connections' first DATA (each changes the receive
    /// share), a malformed datagram and one for no connection (a RST) in the middle.
    #[test]
    fn a_gro_run_is_handled_as_its_datagrams_one_by_one() {
        // A receive share small enough that two sending peers' halves change when ACKs
        // are due (every quarter of the share).
        let cfg = Config {
            rx_share: 16 * 1024,
            ..Config::default()
        };
        let scene = || {
            let mut p = crate::testkit::Pair::new(cfg.clone());
            let mut now = 1_000u64;
            let (c1, s1) = p.connect(&mut now);
            let (c2, s2) = p.connect(&mut now);
            let max = usize::from(cfg.max_payload);
            // Five full datagrams each: within the SYN-ACK's window (half the share).
            p.c.write(c1, &vec![0x11; 5 * max]).unwrap();
            p.c.write(c2, &vec![0x22; 5 * max]).unwrap();
            let mut buf = vec![0u8; 2048];
            let mut dgrams = Vec::new();
            while let Some(t) = p.c.poll_transmit(now, &mut buf) {
                dgrams.push(buf[..t.len].to_vec());
            }
            (p, now, [s1, s2], dgrams)
        };
        let (mut a, now, hs, dgrams) = scene();
        let (mut b, _, hs_b, dgrams_b) = scene();
        assert_eq!(
            (hs, &dgrams),
            (hs_b, &dgrams_b),
            "the scene is deterministic"
        );
        let seg = dgrams[0].len();
        let lens: Vec<usize> = dgrams.iter().map(|d| d.len()).collect();
        assert!(
            lens.len() >= 6 && lens.iter().all(|&l| l == seg),
            "{lens:?}"
        );
        let mut garbage = vec![0xffu8; seg];
        garbage[0] = 0x7f;
        let mut stray = dgrams[1].clone();
        stray[4..8].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        // One connection's datagrams, then the other's: the second's first DATA makes two
        // sending peers, which halves the share for the datagrams after it.
        let first_cid = |d: &Vec<u8>| Packet::new_checked(&d[..]).unwrap().dst_cid();
        let c1 = first_cid(&dgrams[0]);
        let mut order: Vec<Vec<u8>> = dgrams
            .iter()
            .filter(|d| first_cid(d) == c1)
            .cloned()
            .collect();
        order.extend(dgrams.iter().filter(|d| first_cid(d) != c1).cloned());
        order.insert(3, garbage);
        order.insert(6, stray);
        // The last datagram shorter, as GRO allows: a copy of a pure ACK-sized stray.
        order.push(stray_short(&dgrams[0]));
        let msg = Bytes::from(order.concat());
        let mut off = 0;
        for d in &order {
            a.s.handle_ecn_bytes(now, a.ca, &msg.slice(off..off + d.len()), false);
            off += d.len();
        }
        b.s.handle_segments(now, b.ca, &msg, seg, false);
        let va = receiver_view(&mut a.s, &hs, now, &msg);
        let vb = receiver_view(&mut b.s, &hs, now, &msg);
        assert_eq!(va, vb);
        assert!(va
            .2
            .iter()
            .all(|(bytes, sliced)| !bytes.is_empty() && *sliced));
        assert!(
            a.s.stats().malformed >= 1 && a.s.stats().rsts_sent >= 1,
            "{:?}",
            a.s.stats()
        );

        /// A header-only datagram for no connection.
        fn stray_short(d: &[u8]) -> Vec<u8> {
            let p = Packet::new_checked(d).unwrap();
            let h = Header::new(Flags::ACK, 0x0bad_cafe, p.src_cid(), 0, 0, 0);
            let mut b = [0u8; HEADER_LEN];
            h.emit(&mut b).unwrap();
            b.to_vec()
        }
    }

    fn emit(h: Header) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        h.emit(&mut b).unwrap();
        b
    }

    /// The SYN-ACK's start hints (spec §8.6): the SYN's STT in `echo_stt` and the grant
    /// `ceil(log2 n)` for the n SYNs of this and the previous 65.5 µs epoch in `ce_count`.
    #[test]
    fn syn_acks_grant_a_share_of_the_concurrent_starts() {
        let mut ep = Endpoint::new(Config::default(), [9; 16], 1);
        ep.listen(true);
        let mut buf = vec![0u8; 2048];
        let mut grants = Vec::new();
        let start = 10 << 16;
        for (i, now) in [0u64, 10, 20, 30, 40, 50, 60, 70, 80]
            .into_iter()
            .map(|t| start + t)
            .enumerate()
        {
            let remote: SocketAddr = format!("10.0.0.{}:9", i + 1).parse().unwrap();
            let syn = Header::new(Flags::SYN, 0, 77, 5000, 0, (now as u32).wrapping_sub(700));
            ep.handle(now, remote, &emit(syn));
            let t = ep.poll_transmit(now, &mut buf).unwrap();
            let p = Packet::new_checked(&buf[..t.len]).unwrap();
            assert_eq!(p.echo_stt(), 700, "the SYN's STT");
            assert_ne!(p.ce_count() & GRANT_PRESENT, 0);
            grants.push(p.ce_count() & 31);
        }
        assert_eq!(grants, [0, 1, 2, 2, 3, 3, 3, 3, 4]);
        // Two epochs later the count starts again.
        let later = start + (3 << 16);
        let remote: SocketAddr = "10.0.1.1:9".parse().unwrap();
        ep.handle(
            later,
            remote,
            &emit(Header::new(Flags::SYN, 0, 77, 5000, 0, 0)),
        );
        let t = ep.poll_transmit(later, &mut buf).unwrap();
        let p = Packet::new_checked(&buf[..t.len]).unwrap();
        // Grant shift 0 (one SYN in two epochs); the capability bits beside it are the
        // listener's own (spec §5.1).
        assert_eq!(p.ce_count() & !(0x7f << 8), GRANT_PRESENT);
        assert_eq!(
            crate::wire::syn_ack_peer_caps(p.ce_count()),
            crate::conn::offered_caps(&ep.cfg)
        );
    }

    #[test]
    fn a_listener_identifier_never_collides_with_a_live_connection() {
        // With thousands of connections, the one identifier a cookie used to give collided
        // with a live connection now and then (about 1 run in 90 at 10 000 connections): the
        // handshake's third packet then went to the other connection.
        let mut ep = Endpoint::new(Config::default(), [9; 16], 1);
        ep.listen(true);
        let remote: SocketAddr = "10.0.0.9:9".parse().unwrap();
        let now = 1_000_000;
        let (taken, _) = ep.cookie(now >> COOKIE_SLOT_SHIFT, 0, remote, 77, 5000, 0);
        let conn = Connection::client(ep.cfg.clone(), now, taken, 1);
        ep.conns.insert(
            taken,
            Entry {
                conn,
                remote: "10.0.0.8:8".parse().unwrap(),
                incoming: false,
                queued: false,
                timer_at: None,
                active: false,
            },
        );
        ep.handle(
            now,
            remote,
            &emit(Header::new(Flags::SYN, 0, 77, 5000, 0, 0)),
        );
        let mut buf = vec![0u8; 2048];
        let t = ep.poll_transmit(now, &mut buf).unwrap();
        let p = Packet::new_checked(&buf[..t.len]).unwrap();
        assert!(p.flags().contains(Flags::SYN | Flags::ACK));
        let (cid, iss) = (p.src_cid(), p.seq());
        assert_ne!(
            cid, taken,
            "the SYN-ACK offers a live connection's identifier"
        );
        let ack = Header::new(Flags::ACK, cid, 77, 5001, iss.wrapping_add(1), 0);
        ep.handle(now + 10, remote, &emit(ack));
        assert_eq!(ep.stats().accepted, 1);
        assert_eq!(ep.connection_count(), 2);
    }

    /// Many senders: the handshake's third packet and the first DATA packets are
    /// lost (a receive socket overflowing). The listener must still verify the cookie from a
    /// later DATA packet of the first window and accept the connection, instead of refusing
    /// every packet whose `seq` is not ISNc + 1 with RST until the client's timer resends the
    /// first one.
    #[test]
    fn a_later_first_window_packet_completes_the_handshake() {
        let cfg = Config::default();
        let mut client = Endpoint::new(cfg.clone(), [3; 16], 1);
        let mut server = Endpoint::new(cfg, [4; 16], 2);
        server.listen(true);
        let ca: SocketAddr = "10.0.0.1:1000".parse().unwrap();
        let sa: SocketAddr = "10.0.0.2:2000".parse().unwrap();
        let up: Vec<u8> = (0..48_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut now = 1_000_000u64;
        let ch = client.connect(now, sa).unwrap();
        let mut buf = vec![0u8; 65_536];
        let mut rbuf = vec![0u8; 65_536];
        let (mut written, mut closed) = (0usize, false);
        let mut sh = None;
        let mut got = Vec::new();
        let mut from_client = 0u32;
        let mut dropped_data = 0u32;
        while now < 5_000_000_000 {
            if written < up.len() {
                written += client.write(ch, &up[written..]).unwrap_or(0);
            }
            let est = client
                .conn(ch)
                .is_some_and(|c| c.state() == crate::State::Established);
            if written == up.len() && est && !closed {
                closed = client.close(ch).is_ok();
            }
            while let Some(t) = client.poll_transmit(now, &mut buf) {
                from_client += 1;
                let p = Packet::new_checked(&buf[..t.len]).unwrap();
                // Datagram 0 is the SYN, 1 the third packet (pure ACK), then DATA: drop the
                // third packet and the first two DATA packets.
                if from_client == 2 {
                    assert_eq!(p.flags(), Flags::ACK, "the third packet");
                    continue;
                }
                if p.flags().contains(Flags::DATA) && dropped_data < 2 {
                    dropped_data += 1;
                    continue;
                }
                server.handle(now, ca, &buf[..t.len]);
            }
            while let Some((h, ev)) = server.poll_event() {
                if ev == Event::Accepted {
                    sh = Some(h);
                }
            }
            if let Some(h) = sh {
                while let Ok(n) = server.read(h, &mut rbuf) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&rbuf[..n]);
                }
                if server.is_eof(h) && got.len() == up.len() {
                    break;
                }
            }
            while let Some(t) = server.poll_transmit(now, &mut buf) {
                client.handle(now, sa, &buf[..t.len]);
            }
            client.handle_timeout(now);
            server.handle_timeout(now);
            now += 10_000;
        }
        assert_eq!(dropped_data, 2);
        assert_eq!(
            server.stats().bad_cookies,
            0,
            "a first-window packet failed the cookie"
        );
        assert_eq!(
            server.stats().rsts_sent,
            0,
            "the listener refused a first-window packet"
        );
        assert_eq!(server.stats().accepted, 1);
        assert!(got == up, "{} of {} bytes delivered", got.len(), up.len());
        let c = client.conn(ch).expect("client connection still lingers");
        assert_eq!(
            c.stats().timeouts,
            0,
            "recovery waited for the retransmission timer"
        );
    }

    /// A client whose SYNs are all lost keeps resending with back-off for at least
    /// 9 s at `max_retries` 14 (`stride send`; its connect timeout is above that), gives up in
    /// bounded time, and
    /// two clients that started together do not resend in lockstep.
    #[test]
    fn syn_resends_back_off_for_ten_seconds_without_lockstep() {
        let syn_times = |iss: u32| {
            let cfg = Config {
                max_retries: 14, // `stride send`'s setting
                ..Config::default()
            };
            let mut c = Connection::client(cfg, 0, 5, iss);
            let mut buf = vec![0u8; 2048];
            let mut times = Vec::new();
            let mut now = 0;
            loop {
                while c.poll_transmit(now, &mut buf).is_some() {
                    times.push(now);
                }
                if c.is_closed() {
                    return (times, now);
                }
                now = c.poll_timeout().expect("a SYN timer");
                c.handle_timeout(now);
            }
        };
        let (a, end_a) = syn_times(0x1234_5678);
        let (b, end_b) = syn_times(0x9abc_def0);
        assert_eq!(a.len(), 15, "first SYN and 14 resends: {a:?}");
        assert_eq!(b.len(), 15);
        for end in [end_a, end_b] {
            assert!(
                (8_970_000_000..11_550_000_000).contains(&end),
                "gave up at {end} ns"
            );
        }
        for w in a.windows(2).chain(b.windows(2)) {
            assert!(w[1] > w[0], "{a:?} {b:?}");
        }
        let same = a.iter().zip(&b).skip(1).filter(|(x, y)| x == y).count();
        assert_eq!(same, 0, "resends in lockstep: {a:?} {b:?}");
    }

    /// Four clients send to one listener. Returns the largest `window` (KiB) of the
    /// listener's pure ACKs while all four were sending, and the bytes it received in all.
    /// Four clients send 300 KB each to one listener; the listener transmits through
    /// `poll_transmit` or, with `zero_copy`, `poll_transmit_parts`. Returns the largest window
    /// its ACKs advertised while all four were sending, and the bytes it received.
    fn four_senders(rx_share: u32, zero_copy: bool) -> (u16, usize) {
        let cfg = Config {
            rx_share,
            ..Config::default()
        };
        let mut server = Endpoint::new(cfg.clone(), [4; 16], 2);
        server.listen(true);
        let sa: SocketAddr = "10.0.0.9:2000".parse().unwrap();
        let mut clients: Vec<(Endpoint, SocketAddr, ConnHandle, usize)> = (0..4u8)
            .map(|i| {
                let mut c = Endpoint::new(cfg.clone(), [i; 16], u64::from(i));
                let ca: SocketAddr = format!("10.0.0.{}:1000", i + 1).parse().unwrap();
                let h = c.connect(0, sa).unwrap();
                (c, ca, h, 0)
            })
            .collect();
        let data = vec![7u8; 300_000];
        let (mut buf, mut rbuf) = (vec![0u8; 65_536], vec![0u8; 65_536]);
        let mut accepted = Vec::new();
        let (mut got, mut max_win) = (0usize, 0u16);
        let mut now = 1_000u64;
        while now < 50_000_000 && got < 4 * data.len() {
            for (c, ca, h, written) in clients.iter_mut() {
                if *written < data.len() {
                    *written += c.write(*h, &data[*written..]).unwrap_or(0);
                }
                while let Some(t) = c.poll_transmit(now, &mut buf) {
                    server.handle(now, *ca, &buf[..t.len]);
                }
                c.handle_timeout(now);
            }
            while let Some((h, ev)) = server.poll_event() {
                if ev == Event::Accepted {
                    accepted.push(h);
                }
            }
            for h in &accepted {
                while let Ok(n) = server.read(*h, &mut rbuf) {
                    if n == 0 {
                        break;
                    }
                    got += n;
                }
            }
            let all_sending = accepted.len() == 4
                && accepted
                    .iter()
                    .all(|h| server.conn(*h).is_some_and(|c| c.rx_active()));
            let mut parts = Vec::new();
            loop {
                parts.clear();
                let t = if zero_copy {
                    server.poll_transmit_parts(now, &mut buf, &mut parts)
                } else {
                    server.poll_transmit(now, &mut buf)
                };
                let Some(t) = t else { break };
                assert!(parts.is_empty(), "the listener sends no payload");
                let p = Packet::new_checked(&buf[..t.len]).unwrap();
                if all_sending && p.flags() == Flags::ACK {
                    max_win = max_win.max(p.window());
                }
                let c = clients.iter_mut().find(|c| c.1 == t.remote).unwrap();
                c.0.handle(now, sa, &buf[..t.len]);
            }
            server.handle_timeout(now);
            now += 1_000;
        }
        (max_win, got)
    }

    /// Receive share (spec §8.6 `rx_share`): with four peers sending, the listener advertises at
    /// most a quarter of the receive share (64 KiB by default at 10 Gbit/s, so 16 KiB), and
    /// every byte still arrives; with the switch off the window is the free buffer.
    #[test]
    fn the_receive_share_divides_the_window_among_active_senders() {
        let share = Config::default().rx_share;
        let (win, got) = four_senders(share, false);
        assert_eq!(got, 4 * 300_000, "every byte arrives under the share");
        assert!(
            win > 0 && u32::from(win) <= share >> 12,
            "window {win} KiB with four senders"
        );
        let (win_off, got_off) = four_senders(0, false);
        assert_eq!(got_off, 4 * 300_000);
        assert!(win_off >= 1024, "without the share: {win_off} KiB");
    }

    /// Spec §8.6: a start into a receiver that peers are already sending to gets its share of
    /// them in the SYN-ACK's window, not the whole share of a lone start (200 staggered
    /// senders once overflowed a 32 MiB socket by thousands of datagrams that way).
    #[test]
    fn a_start_into_a_busy_receiver_gets_a_share_of_the_active_peers() {
        let cfg = Config {
            rx_share: 2 << 20,
            recv_buffer: 4 << 20,
            ..Config::default()
        };
        let mut server = Endpoint::new(cfg.clone(), [4; 16], 2);
        server.listen(true);
        let sa: SocketAddr = "10.0.0.99:2000".parse().unwrap();
        let mut clients: Vec<(Endpoint, SocketAddr, ConnHandle)> = (0..8u8)
            .map(|i| {
                let mut c = Endpoint::new(cfg.clone(), [i; 16], u64::from(i));
                let ca: SocketAddr = format!("10.0.0.{}:1000", i + 1).parse().unwrap();
                let h = c.connect(0, sa).unwrap();
                (c, ca, h)
            })
            .collect();
        let data = vec![7u8; 1 << 20];
        let mut buf = vec![0u8; 65_536];
        let mut now = 1_000u64;
        // Until all eight are sending (a DATA without PSH from each).
        while server.rx_active < 8 && now < 10_000_000 {
            for (c, ca, h) in clients.iter_mut() {
                let _ = c.write(*h, &data);
                while let Some(t) = c.poll_transmit(now, &mut buf) {
                    server.handle(now, *ca, &buf[..t.len]);
                }
            }
            while server.poll_event().is_some() {}
            while let Some(t) = server.poll_transmit(now, &mut buf) {
                let c = clients.iter_mut().find(|c| c.1 == t.remote).unwrap();
                c.0.handle(now, sa, &buf[..t.len]);
            }
            now += 1_000;
        }
        assert_eq!(server.rx_active, 8, "eight peers sending");
        // A ninth start, alone in its epochs: 2 MiB >> ceil(log2 9) = 128 KiB.
        now += 3 << 16;
        let remote: SocketAddr = "10.0.1.1:9".parse().unwrap();
        let syn = Header::new(Flags::SYN, 0, 77, 5000, 0, now as u32);
        server.handle(now, remote, &emit(syn));
        let t = loop {
            let t = server.poll_transmit(now, &mut buf).expect("a SYN-ACK");
            if t.remote == remote {
                break t;
            }
        };
        let p = Packet::new_checked(&buf[..t.len]).unwrap();
        assert_eq!(p.flags(), Flags::SYN | Flags::ACK);
        assert_eq!(p.window(), 128, "first window {} KiB", p.window());
    }

    /// The zero-copy transmit path applies the share like the copying one (it once did not).
    #[test]
    fn the_receive_share_holds_on_the_zero_copy_path() {
        let share = Config::default().rx_share;
        let (win, got) = four_senders(share, true);
        assert_eq!(got, 4 * 300_000);
        assert!(
            win > 0 && u32::from(win) <= share >> 12,
            "window {win} KiB with four senders"
        );
    }
}
