//! One STRIDE connection: handshake, sender (selective resend or go-back-N, pacing), receiver
//! (in-order delivery, ACK per segment, NACK per gap), teardown. Sans-IO: every method takes
//! `now` in ns.
//!
//! Sender state is counters over one byte buffer (`snd_una`, `snd_nxt`, `snd_max` and the end of
//! written data), never per-packet records; selective recovery adds two short bounded lists of
//! ranges (to resend, and resent within the last round trip). With go-back-N (the paper's
//! recovery, or a peer that did not offer selective recovery in the handshake) the receiver
//! keeps only in-order data: a packet beyond a gap is dropped and answered by one NACK. With
//! selective recovery it keeps such packets within its window and its NACKs name the missing
//! ranges (spec §6.3, §6.5).

use crate::cc::AckSample;
use crate::config::{Config, Recovery};
use crate::stats::ConnStats;
use crate::wire::{
    emit_nack_ranges, seq_le, seq_lt, syn_ack_peer_caps, Flags, Header, NackRange, Packet,
    CAPS_KNOWN, CAP_SELECTIVE, HEADER_LEN, MAX_NACK_RANGES, NACK_RANGE_LEN,
};
use bytes::Bytes;
use std::collections::VecDeque;

mod ack;
mod assembler;
mod pacer;
mod recv;
mod rtt;
mod send;
mod signals;

use ack::{AckPolicy, NackPolicy};
use pacer::Pacer;
use recv::RecvState;
use rtt::{RtoTimer, RttEstimator};
use send::SendState;
use signals::Signals;

/// A buffer that empties while holding more than this is freed (see [`Connection::read`]).
const IDLE_BUFFER: usize = 64 * 1024;

/// DATA payloads of at most this many bytes are copied into the datagram's buffer even by
/// [`Connection::poll_transmit_parts`]: for a short message the copy costs fewer instructions
/// than a slice of the send buffer (freezing its tail chunk, a reference count, one more iovec
/// for the kernel); `bench/core_instructions.py`, docs/results.md.
pub const SMALL_PAYLOAD_COPY: usize = 256;

/// The capability bits a configuration offers in the handshake (spec §5.1).
pub fn offered_caps(cfg: &Config) -> u32 {
    match cfg.recovery {
        Recovery::Selective => CAP_SELECTIVE,
        Recovery::GoBackN => 0,
    }
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Both directions finished with FIN and were acknowledged.
    Graceful,
    /// The peer sent RST (or refused the handshake).
    Reset,
    /// The peer stopped answering: the handshake got no answer after `max_retries`
    /// retransmissions, or sent data went unacknowledged through at least `max_retries`
    /// consecutive timeouts spanning `give_up_ns` (an RST then tells the peer).
    TimedOut,
    /// Nothing was received for `idle_timeout_ns`, or the connection carried no data at all
    /// for `unused_timeout_ns` after its handshake.
    IdleTimeout,
    /// The local application aborted.
    Aborted,
}

/// Something the application should know about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// An outgoing connection completed its handshake.
    Connected,
    /// An incoming connection was accepted (its handshake cookie verified).
    Accepted,
    /// New bytes (or the end of stream) can be read.
    Readable,
    /// After a write that did not fit, an ACK interval of send buffer (at most a quarter of
    /// it) is free again.
    Writable,
    /// The connection ended; no more events follow.
    Closed(CloseReason),
}

/// Connection state (see the state table in `docs/spec.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// SYN sent, waiting for SYN-ACK.
    SynSent,
    /// Data may flow (including while FINs are exchanged).
    Established,
    /// Both FINs exchanged and acknowledged; waiting `linger_ns` to re-acknowledge a lost ACK.
    Linger,
    /// Finished.
    Closed(CloseReason),
}

/// Largest pacing quantum in bytes (`Config::burst_min_ns` is capped at this much at the
/// current rate): one UDP GSO message.
pub const PACING_QUANTUM_MAX_BYTES: u64 = 65_536;

/// One connection.
pub struct Connection {
    cfg: Config,
    state: State,
    is_client: bool,
    /// Client: set once the server has shown it holds state (any non-SYN packet after SYN-ACK).
    confirmed: bool,
    /// First sequence number sent after confirmation: an endpoint RST ("no state for this
    /// identifier") must refer to a packet at or after it, so stale RSTs cannot kill us.
    confirm_seq: u32,
    local_cid: u32,
    remote_cid: u32,

    // ---- sender ----
    iss: u32,
    send: SendState,
    signals: Signals,
    pacer: Pacer,
    rtt: RttEstimator,
    rto: RtoTimer,
    /// When the connection was created.
    born: u64,
    /// Whether any payload or FIN was written or received (a connection that never carries
    /// any is culled after `unused_timeout_ns`).
    used: bool,
    /// Capability bits the peer offered in the handshake (masked to the known ones).
    peer_caps: u32,

    // ---- receiver ----
    recv: RecvState,
    ack: AckPolicy,
    nack: NackPolicy,
    /// Sender side: the STT and RTT of the latest pure ACK of new data (for tracing).
    echoed_stt: Option<u32>,
    last_rtt: Option<u64>,
    syn_due: bool,

    // ---- lifecycle ----
    last_rx: u64,
    last_tx: u64,
    linger_until: u64,
    rst_now: bool,
    events: VecDeque<Event>,
    stats: ConnStats,
}

fn ts32(now: u64) -> u32 {
    now as u32
}

impl Connection {
    fn base(cfg: Config, now: u64, local_cid: u32, iss: u32, is_client: bool) -> Self {
        let mut c = Connection {
            state: State::SynSent,
            is_client,
            confirmed: !is_client,
            confirm_seq: iss.wrapping_add(1),
            local_cid,
            remote_cid: 0,
            iss,
            send: SendState::new(iss),
            signals: Signals::new(&cfg, now),
            pacer: Pacer::new(),
            rtt: RttEstimator::new(),
            rto: RtoTimer::new(cfg.initial_rto_ns),
            born: now,
            used: false,
            peer_caps: 0,
            recv: RecvState::new(),
            ack: AckPolicy::new(),
            nack: NackPolicy::new(),
            echoed_stt: None,
            last_rtt: None,
            syn_due: is_client,
            last_rx: now,
            last_tx: now,
            linger_until: 0,
            rst_now: false,
            events: VecDeque::new(),
            stats: ConnStats::default(),
            cfg,
        };
        c.refresh_rate();
        c
    }

    /// A client connection that will send a SYN on the next `poll_transmit`.
    pub fn client(cfg: Config, now: u64, local_cid: u32, iss: u32) -> Self {
        let mut c = Connection::base(cfg, now, local_cid, iss, true);
        c.send.max = iss.wrapping_add(1); // the SYN occupies one sequence number
        c.rto.arm_syn(now, iss);
        c
    }

    /// A server connection created when the handshake's third packet verified: the peer's
    /// identifier and initial sequence number, our identifier and initial sequence number.
    pub fn server(
        cfg: Config,
        now: u64,
        local_cid: u32,
        iss: u32,
        remote_cid: u32,
        peer_iss: u32,
        peer_window: u16,
    ) -> Self {
        let mut c = Connection::base(cfg, now, local_cid, iss, false);
        c.remote_cid = remote_cid;
        c.send.start(iss.wrapping_add(1), peer_window);
        c.recv.nxt = peer_iss.wrapping_add(1);
        c.state = State::Established;
        c.events.push_back(Event::Accepted);
        c
    }

    /// A server connection whose peer offered `caps` in its SYN (spec §5.1; the endpoint
    /// learns them from the cookie). Without this, a server connection assumes none.
    pub fn with_peer_caps(mut self, caps: u32) -> Self {
        self.peer_caps = caps & CAPS_KNOWN;
        self
    }

    /// Our connection identifier.
    pub fn local_cid(&self) -> u32 {
        self.local_cid
    }
    /// The peer's connection identifier (0 before the handshake completes).
    pub fn remote_cid(&self) -> u32 {
        self.remote_cid
    }
    /// Current state.
    pub fn state(&self) -> State {
        self.state
    }
    /// Whether this side opened the connection.
    pub fn is_client(&self) -> bool {
        self.is_client
    }
    /// Counters.
    pub fn stats(&self) -> &ConnStats {
        &self.stats
    }
    /// Current sending rate (2^-20 bytes/ns).
    pub fn rate(&self) -> u32 {
        self.signals.cc().rate()
    }
    /// The STT echoed by the latest ACK of new data (raw, includes any clock offset).
    pub fn last_stt(&self) -> Option<u32> {
        self.echoed_stt
    }
    /// The RTT sample of the latest ACK of new data, ns.
    pub fn last_rtt(&self) -> Option<u64> {
        self.last_rtt
    }
    /// The controller's name for the decision of its latest event (STRIDE: the branch of
    /// Algorithm 1), if it reports one.
    pub fn cc_branch(&self) -> Option<&'static str> {
        self.signals.cc().trace_branch()
    }
    /// Whether this connection runs selective recovery (both sides offered it).
    pub fn selective(&self) -> bool {
        self.cfg.recovery == Recovery::Selective && self.peer_caps & CAP_SELECTIVE != 0
    }
    /// Bytes held beyond a gap (selective recovery), not yet deliverable.
    pub fn out_of_order_bytes(&self) -> usize {
        self.recv.ooo.bytes()
    }
    /// Bytes written but not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.send.buffered()
    }
    /// Lowers this connection's largest DATA payload to `max` (at least 1; never raises it):
    /// a host that learns the path to the peer carries smaller datagrams than
    /// `Config::max_payload` (its route's MTU) sends what fits instead of having IP fragment
    /// it. Takes effect from the next DATA packet; returns the payload now in force.
    pub fn limit_payload(&mut self, max: u16) -> u16 {
        self.cfg.max_payload = self.cfg.max_payload.min(max.max(1));
        self.cfg.max_payload
    }

    /// Holds a pure ACK that is due now (not a NACK, not one asking for a rate cut, not one
    /// for a whole ACK interval, whose sample drives the peer's controller, and none that
    /// could not ride on DATA anyway: after the peer's FIN, or before a client's handshake is
    /// confirmed) until
    /// `until` at the latest, for DATA to carry it (spec §6.4): a host whose application
    /// answers each request holds the request's ACK for the response. DATA leaving before then
    /// carries the ACK as it would anyway; from `until` on the pure ACK leaves at the next
    /// transmit. Its timer ([`Connection::poll_timeout`]) is `wake_by` (at least `until`): a
    /// host that may send it a little late (its thread wakes for other work anyway) gives a
    /// later `wake_by` and is not woken at `until` just for an ACK that the response usually
    /// carries first. Returns whether an ACK was held. The hold is per connection, so other
    /// connections' datagrams do not wait.
    pub fn hold_ack(&mut self, until: u64, wake_by: u64) -> bool {
        if self.state != State::Established
            || !self.ack.is_due()
            || self.nack.is_due()
            || !self.ack_may_ride()
        {
            return false;
        }
        self.ack.hold(until, wake_by);
        true
    }

    /// Bytes readable now.
    pub fn readable(&self) -> usize {
        self.recv.buf().len()
    }
    /// Whether the peer's stream has ended and every byte was read.
    pub fn is_eof(&self) -> bool {
        self.recv.peer_fin && self.recv.buf().is_empty()
    }
    /// Whether the connection is over and may be dropped.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }
    /// Next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Reads the controller's window and rate after one of its events.
    fn refresh_rate(&mut self) {
        self.signals.refresh(&mut self.pacer, &self.cfg);
    }

    /// When the next new DATA packet may leave (spec §9, [`Pacer::data_at`]): a batch is
    /// ready when nothing waits for a resend and a whole `send_batch_bytes` may be sent.
    fn data_at(&self) -> u64 {
        self.pacer.data_at(|| {
            !self.send.has_rexmit()
                && self.pending_data().min(self.window_room()) >= self.cfg.send_batch_bytes
        })
    }

    fn close_with(&mut self, reason: CloseReason) {
        if !self.is_closed() {
            self.state = State::Closed(reason);
            self.events.push_back(Event::Closed(reason));
            self.rto.stop();
            self.ack.stop_delack();
            self.nack.stop();
            self.send.release_all();
            self.recv.ooo.release();
        }
    }

    // ------------------------------------------------------------------ application side

    /// Queues bytes for sending; returns how many fit in the send buffer.
    pub fn write(&mut self, data: &[u8]) -> usize {
        if !self.writing() {
            return 0;
        }
        let n = self.send.write(data, &self.cfg);
        self.used |= n > 0;
        n
    }

    /// Queues a chunk the application hands over, without copying it; returns how many of its
    /// bytes (a prefix) fit in the send buffer. The chunk's memory is held until acknowledged.
    /// When not all of it fits, [`Event::Writable`] follows once a quarter of the send buffer
    /// is free (after [`Connection::write`], once an ACK interval is).
    pub fn write_bytes(&mut self, data: &Bytes) -> usize {
        if !self.writing() {
            return 0;
        }
        let n = self.send.write_bytes(data, &self.cfg);
        self.used |= n > 0;
        n
    }

    /// Whether the application may still write: the stream is not finished and the
    /// connection neither closed nor lingering.
    fn writing(&self) -> bool {
        !(self.send.close_requested() || self.is_closed() || self.state == State::Linger)
    }

    /// Takes up to `max` delivered bytes without copying them; None when nothing is buffered
    /// (see [`Connection::is_eof`]).
    pub fn read_chunk(&mut self, max: usize) -> Option<Bytes> {
        let b = self.recv.buf_mut().read_chunk(max)?;
        self.after_read(b.len());
        Some(b)
    }

    /// [`Connection::read_chunk`] repeated: appends chunks to `out` until `max` bytes or
    /// `most` chunks are taken or nothing is left; returns the bytes taken.
    pub fn read_chunks(&mut self, max: usize, most: usize, out: &mut Vec<Bytes>) -> usize {
        let mut taken = 0;
        for _ in 0..most {
            match self.recv.buf_mut().read_chunk(max - taken) {
                Some(b) => {
                    taken += b.len();
                    out.push(b);
                }
                None => break,
            }
        }
        // The window only grows as bytes are read: one check after them all sees what the
        // check after each would have.
        self.after_read(taken);
        taken
    }

    /// Hands over (Some) or forgets (None) the datagram about to be handled, so that its
    /// in-order payload is kept as a slice of it instead of a copy.
    pub fn set_rx_source(&mut self, src: Option<Bytes>) {
        self.recv.set_source(src);
    }

    /// Like [`Connection::poll_transmit`], but a DATA packet's payload is not copied into
    /// `buf`: it is appended to `parts` as slices of the send buffer (`buf` then holds the
    /// header only), unless it is at most [`SMALL_PAYLOAD_COPY`] bytes, which are copied
    /// after the header. Returns the datagram's whole length, header and parts: the bytes in
    /// `buf` are that length less the parts' lengths.
    pub fn poll_transmit_parts(
        &mut self,
        now: u64,
        buf: &mut [u8],
        parts: &mut Vec<Bytes>,
    ) -> Option<usize> {
        self.send.set_tx_parts(Some(std::mem::take(parts)));
        let r = self.poll_transmit(now, buf);
        *parts = self.send.take_tx_parts().unwrap_or_default();
        r
    }

    /// Reads delivered bytes; returns 0 when nothing is buffered (see [`Connection::is_eof`]).
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = self.recv.buf_mut().read(out);
        self.after_read(n);
        n
    }

    /// After the application read `n` bytes: a window update if reading reopened the window
    /// ([`RecvState::after_read`]).
    fn after_read(&mut self, n: usize) {
        if self.recv.after_read(n, &self.cfg) {
            self.ack.request();
        }
    }

    /// Finishes our direction: a FIN follows the buffered bytes.
    pub fn close(&mut self) {
        if !self.send.close_requested() && !self.is_closed() {
            self.used = true;
            self.send.request_close();
        }
    }

    /// Aborts: sends RST and ends the connection at once.
    pub fn abort(&mut self) {
        if !self.is_closed() {
            if self.state != State::SynSent {
                self.rst_now = true;
            }
            self.close_with(CloseReason::Aborted);
        }
    }

    // ------------------------------------------------------------------ timers

    /// The earliest time at which [`Connection::handle_timeout`] or
    /// [`Connection::poll_transmit`] has work (None: nothing until a datagram arrives).
    pub fn poll_timeout(&self) -> Option<u64> {
        if self.is_closed() {
            return None;
        }
        if self.state == State::Linger {
            return Some(self.linger_until);
        }
        let mut t = self.last_rx + self.cfg.idle_timeout_ns;
        let mut upd = |x: Option<u64>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        if !self.used && self.state == State::Established {
            upd(Some(self.born + self.cfg.unused_timeout_ns));
        }
        upd(self.rto.at());
        self.ack.timers().into_iter().for_each(&mut upd);
        upd(self.nack.timer());
        if self.state == State::Established {
            upd(self.signals.cc().timer());
            upd(Some(self.last_tx + self.cfg.idle_timeout_ns / 4));
            if self.data_ready() {
                upd(Some(self.data_at()));
            }
        }
        Some(t)
    }

    /// Processes every timer due at `now`.
    pub fn handle_timeout(&mut self, now: u64) {
        if self.is_closed() {
            return;
        }
        if self.state == State::Linger {
            if now >= self.linger_until {
                self.close_with(CloseReason::Graceful);
            }
            return;
        }
        if now >= self.last_rx + self.cfg.idle_timeout_ns {
            // Tell the peer, in case only its direction to us is broken.
            self.rst_now = self.state != State::SynSent;
            self.close_with(CloseReason::IdleTimeout);
            return;
        }
        if !self.used
            && self.state == State::Established
            && now >= self.born + self.cfg.unused_timeout_ns
        {
            // Handshaked but never used (keepalives do not count): a fake connection holding
            // a slot. Tell the peer and free it.
            self.rst_now = true;
            self.close_with(CloseReason::IdleTimeout);
            return;
        }
        self.ack.on_timer(now);
        let holds = self.recv.ooo.holds_any();
        let (repeat, retry) = (self.cfg.nack_repeat_ns, self.cfg.nack_retry_ns);
        self.nack.on_timer(now, holds, self.recv.nxt, repeat, retry);
        if self.state == State::Established && self.signals.cc().timer().is_some_and(|t| now >= t) {
            self.signals.cc_mut().on_timer(now);
            self.refresh_rate();
        }
        if self.rto.expired(now) {
            self.on_rto(now);
        }
    }

    fn on_rto(&mut self, now: u64) {
        if !self.send.outstanding() {
            // Persist: data is waiting for window; probe with one packet, no penalty.
            self.rto.stop();
            self.send.open_probe(self.cfg.max_payload);
            return;
        }
        let retries = self.rto.on_expiry(now);
        self.stats.timeouts += 1;
        let give_up = retries > self.cfg.max_retries
            && (self.state == State::SynSent || self.rto.stalled_for(now) >= self.cfg.give_up_ns);
        if give_up {
            // Tell the peer (it may still hear us) instead of leaving it to its idle timeout.
            self.rst_now = self.state != State::SynSent;
            self.close_with(CloseReason::TimedOut);
            return;
        }
        self.rto.back_off(now, self.cfg.max_rto_ns);
        if self.state == State::SynSent {
            self.syn_due = true;
            // Clients that started together (and lost their SYNs in the same overflow) would
            // resend in lockstep: each resend is spread around the RTO (spec §6.6).
            self.rto.arm_syn(now, self.iss);
        } else if self.state == State::Established {
            self.signals.cc_mut().on_timeout(now);
            self.refresh_rate();
            let peer_holds_more = self.send.peer_holds_more();
            if self.selective() && retries == 1 && peer_holds_more {
                // Selective, and the latest NACK showed the peer holding data beyond the
                // first hole: a first timeout (typically a lost resend of that hole) resends
                // only the first unacknowledged packet. A second consecutive timeout, or a
                // peer holding nothing beyond (a lost tail), goes back N.
                if self.send.resend_first(now, self.cfg.max_payload) {
                    self.pacer.restart(now);
                    return;
                }
            }
            // Go back to the first unacknowledged byte (FIN included when it was sent): the
            // fallback of selective recovery too.
            self.send.go_back(self.send.una);
            self.pacer.restart(now);
        }
    }

    fn arm_rto(&mut self, now: u64) {
        let persist = self.pending_data() > 0 && self.window_room() == 0;
        if self.send.outstanding() || persist {
            self.rto.arm(now);
        } else {
            self.rto.stop();
        }
    }

    /// Whether [`Connection::poll_transmit`] would produce a datagram at `now`.
    pub fn wants_transmit(&self, now: u64) -> bool {
        if self.rst_now {
            return true;
        }
        match self.state {
            State::Closed(_) => false,
            State::SynSent => self.syn_due,
            State::Linger => self.ack.is_due(),
            State::Established => {
                self.nack.is_due()
                    || self.ack.due_at(now)
                    || (self.data_ready() && now >= self.data_at())
                    || now >= self.last_tx + self.cfg.idle_timeout_ns / 4
            }
        }
    }

    // ------------------------------------------------------------------ input

    /// Handles a datagram already routed to this connection (`dst_cid` matched), received at
    /// `now` (ideally the kernel or NIC receive timestamp).
    pub fn handle(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        self.handle_ecn(now, pkt, false)
    }

    /// Like [`Connection::handle`] for a datagram whose IP ECN codepoint was CE (`ce`).
    pub fn handle_ecn(&mut self, now: u64, pkt: &Packet<&[u8]>, ce: bool) {
        if self.is_closed() {
            return;
        }
        let f = pkt.flags();
        self.stats.packets_received += 1;
        if f.contains(Flags::RST) {
            self.on_rst(pkt);
            return;
        }
        if self.state == State::SynSent {
            if f.contains(Flags::SYN)
                && f.contains(Flags::ACK)
                && pkt.ack() == self.iss.wrapping_add(1)
            {
                self.last_rx = now;
                self.remote_cid = pkt.src_cid();
                self.recv.nxt = pkt.seq().wrapping_add(1);
                self.send.start(self.iss.wrapping_add(1), pkt.window());
                // The SYN-ACK's ce_count carries the listener's capabilities in bits 8..14
                // beside the start grant (0 from a peer without any).
                self.peer_caps = syn_ack_peer_caps(pkt.ce_count()) & CAPS_KNOWN;
                self.state = State::Established;
                self.rto.reset(self.cfg.initial_rto_ns);
                self.ack.request(); // the handshake's third packet
                                    // Start hints of the SYN-ACK (spec §8.6); a listener without them sends zeros.
                let stt = Some(pkt.echo_stt()).filter(|&s| s != 0);
                if let (true, Some(s)) = (self.cfg.handshake_rtt, stt) {
                    // An RTT sample from the handshake (the SYN's STT plus the SYN-ACK's way
                    // back): a tail lost before the first ACK then waits min_rto, not the
                    // 20 ms initial RTO.
                    let rtt = u64::from(s.wrapping_add(ts32(now).wrapping_sub(pkt.tx_ts())));
                    if rtt < 1 << 31 {
                        self.rtt_sample(rtt);
                    }
                }
                let g = pkt.ce_count();
                let grant = (g & crate::endpoint::GRANT_PRESENT != 0).then_some((g & 31) as u8);
                self.signals.cc_mut().on_handshake(now, stt, grant);
                self.refresh_rate();
                self.events.push_back(Event::Connected);
                self.pacer.restart(now);
            }
            return;
        }
        if pkt.src_cid() != self.remote_cid {
            return;
        }
        if f.contains(Flags::SYN) {
            // A retransmitted SYN-ACK: our third packet was lost; repeat it.
            if self.is_client && !self.confirmed {
                self.ack.request();
            }
            return;
        }
        self.last_rx = now;
        if !self.confirmed {
            self.confirmed = true;
            self.confirm_seq = self.send.max;
        }
        if self.state == State::Linger {
            if f.contains(Flags::FIN) {
                self.ack.request();
            }
            return;
        }
        if f.contains(Flags::ACK) {
            self.on_ack_field(now, pkt);
            if self.is_closed() {
                return;
            }
        }
        if f.contains(Flags::DATA) {
            if ce {
                let interval = self.cfg.cnp_interval_ns;
                if self.signals.on_ce(now, interval, &mut self.stats) {
                    self.ack.request();
                }
            }
            self.on_data(now, pkt);
        } else if f.contains(Flags::FIN) {
            self.on_fin(now, pkt);
        }
        self.check_done(now);
    }

    fn on_rst(&mut self, pkt: &Packet<&[u8]>) {
        let ok = match self.state {
            // A refusal of our SYN names our initial sequence number.
            State::SynSent => pkt.ack() == self.iss,
            _ if self.is_client && !self.confirmed => {
                // Before the server proved it holds state, only a refusal of the packet that
                // carries the cookie (sequence iss+1) counts: RSTs to later packets answer
                // datagrams that overtook it, and go-back-N will resend them.
                pkt.src_cid() == self.remote_cid && pkt.ack() == self.iss.wrapping_add(1)
            }
            // An abort by the peer's connection (RST|ACK) names our identifier.
            _ if pkt.flags().contains(Flags::ACK) => pkt.src_cid() == self.remote_cid,
            // The peer endpoint holds no state for us: believe it only for packets sent after
            // it had shown it held state.
            _ => pkt.src_cid() == self.remote_cid && seq_le(self.confirm_seq, pkt.ack()),
        };
        if ok {
            self.close_with(CloseReason::Reset);
        }
    }

    fn on_ack_field(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let f = pkt.flags();
        let a = pkt.ack();
        self.send.set_peer_window(pkt.window());
        self.signals.on_ce_echo(pkt.ce_count(), &mut self.stats);
        if f.contains(Flags::CN) {
            self.stats.cnps_received += 1;
            self.signals.cc_mut().on_cnp(now);
            self.refresh_rate();
        }
        let (newly, writable) = self.send.on_ack(a, self.cfg.send_buffer);
        if newly > 0 {
            self.rto.on_progress();
            self.stats.acks_received += 1;
            if writable {
                self.events.push_back(Event::Writable);
            }
        }
        let repeat = self.rtt.repeat_window(&self.cfg);
        if f.contains(Flags::NACK) && !pkt.payload().is_empty() && self.selective() {
            self.stats.nacks_received += 1;
            let guard = self.rtt.resend_guard(&self.cfg);
            let payload = pkt.payload();
            if (self.send).on_selective_nack(now, a, payload, (repeat, guard), &mut self.stats) {
                self.signals.cc_mut().on_nack(now);
                self.refresh_rate();
            }
        } else if f.contains(Flags::NACK) {
            // A plain NACK (or ranges we never offered to act on): go-back-N.
            self.stats.nacks_received += 1;
            if self.send.on_plain_nack(now, a, repeat) {
                self.signals.cc_mut().on_nack(now);
                self.refresh_rate();
            }
        } else if newly > 0 && !f.contains(Flags::DATA) {
            // A pure ACK acknowledging new data: one STT sample, one RTT sample.
            let stt = pkt.echo_stt();
            let mut rtt = u64::from(stt.wrapping_add(ts32(now).wrapping_sub(pkt.tx_ts())));
            self.echoed_stt = Some(stt);
            if rtt < 1 << 31 {
                self.rtt_sample(rtt);
                self.last_rtt = Some(rtt);
            } else {
                rtt = 0;
            }
            let sample = AckSample {
                stt,
                acked: newly,
                rtt,
                ce: self.signals.take_ce_echoed(),
                inflight: self.send.inflight(),
            };
            self.signals.cc_mut().on_ack(now, &sample);
            self.refresh_rate();
            self.stats.stt_min = Some(match self.stats.stt_min {
                Some(m) if (stt.wrapping_sub(m) as i32) >= 0 => m,
                _ => stt,
            });
            let m = self.stats.stt_min.unwrap_or(stt);
            self.stats
                .queue_delay
                .record(u64::from(stt.wrapping_sub(m)));
        }
        self.arm_rto(now);
    }

    /// A congestion signal from outside the STRIDE packets (see
    /// [`crate::Endpoint::congestion_signal`]).
    pub fn congestion_signal(&mut self, now: u64, qcn_fb: Option<u8>, int: &[crate::cc::IntHop]) {
        if self.state != State::Established {
            return;
        }
        if let Some(fb) = qcn_fb {
            self.signals.cc_mut().on_qcn_feedback(now, fb);
        }
        if !int.is_empty() {
            self.signals.cc_mut().on_int(now, int);
        }
        self.refresh_rate();
    }

    /// The number of switches on the path to the peer became known (a simulator counts the
    /// switches its packets cross, as a receiver would from the IP TTL): controllers that
    /// scale with the path's length (Swift's target) read it.
    pub fn set_path_hops(&mut self, hops: u32) {
        self.signals.cc_mut().on_path(hops);
    }

    /// One RTT sample, ns: the estimate and the retransmission timeout follow it.
    fn rtt_sample(&mut self, rtt: u64) {
        self.rtt.update(rtt);
        self.stats.srtt_ns = self.rtt.srtt();
        self.rto.set_timeout(self.rtt.rto(&self.cfg));
    }

    /// Bytes received after which an ACK is due ([`RecvState::ack_due_bytes`]).
    fn ack_due_bytes(&self) -> u32 {
        self.recv.ack_due_bytes(&self.cfg)
    }

    /// Sets the receive share (spec §8.6 `rx_share`; `u32::MAX` for none). The endpoint
    /// calls this before it hands the connection a packet or asks it for one.
    pub fn set_rx_share(&mut self, bytes: u32) {
        self.recv.set_share(bytes);
    }

    /// Whether the peer is sending to us (its last DATA did not end its queue), which the
    /// endpoint counts for the receive share.
    pub fn rx_active(&self) -> bool {
        self.recv.active() && !self.is_closed() && !self.recv.peer_fin
    }

    fn on_data(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let seq = pkt.seq();
        let payload = pkt.payload();
        let len = payload.len() as u32;
        let stt = ts32(now).wrapping_sub(pkt.tx_ts());
        self.used |= len > 0 || pkt.flags().contains(Flags::FIN);
        self.recv.on_data_flags(pkt.flags().contains(Flags::PSH));
        if seq == self.recv.nxt && !self.recv.peer_fin {
            if !self.recv.fits(payload, &self.cfg) {
                // No room: drop; the sender exceeded our window. The ACK repeats the window.
                self.stats.window_dropped += 1;
                self.ack.request();
                return;
            }
            let (was_empty, moved) = self.recv.deliver(payload);
            if was_empty {
                self.events.push_back(Event::Readable);
            }
            self.stats.bytes_received += u64::from(len) + u64::from(moved);
            self.ack.count(len.saturating_add(moved));
            self.ack.record_stt(stt);
            if self.recv.ooo.fin() == Some(self.recv.nxt) && self.recv.ooo.is_empty() {
                self.accept_fin();
            }
            if !self.recv.ooo.holds_any() {
                // The gap (if any) is filled.
                self.nack.on_filled();
            } else {
                self.nack.arm(now, self.cfg.nack_retry_ns);
            }
            self.after_data(now, pkt);
        } else if seq_lt(seq, self.recv.nxt) {
            // Bytes we already have (a go-back-N resend): acknowledge like new data so the
            // sender moves on, but without delivering them again.
            self.stats.duplicates += 1;
            self.ack.count(len);
            self.after_data(now, pkt);
        } else if self.selective() && !self.recv.peer_fin {
            self.keep_ooo(now, seq, payload);
        } else {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
        }
    }

    /// Selective recovery: keeps the new bytes of a packet beyond the gap (within the window
    /// and the segment limit) and sends a NACK at once when it opened a new hole (it lies
    /// beyond everything held), so the sender learns of every loss within one trip.
    fn keep_ooo(&mut self, now: u64, seq: u32, payload: &[u8]) {
        let nxt = self.recv.nxt;
        let start = seq.wrapping_sub(nxt) as usize;
        let end = start + payload.len();
        let held_end = self.recv.ooo.held_end(nxt);
        if end > self.recv.window_bytes(&self.cfg) as usize {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
            return;
        }
        // Insert the parts of [start, end) no held segment covers.
        let max_segments = self.cfg.ooo_max_segments;
        let (added, cut) = self.recv.ooo.insert(nxt, start, payload, max_segments);
        if added == 0 {
            if cut {
                // No room in the segment list: the packet is lost to us.
                self.stats.out_of_order_dropped += 1;
            } else {
                self.stats.duplicates += 1;
            }
            self.on_gap(now);
            return;
        }
        self.stats.out_of_order_kept += 1;
        self.nack.on_kept();
        self.stats.out_of_order_bytes_max =
            (self.stats.out_of_order_bytes_max).max(self.recv.ooo.bytes() as u64);
        if start > held_end {
            // A new hole [held_end, start): ask for it now.
            let (repeat, retry) = (self.cfg.nack_repeat_ns, self.cfg.nack_retry_ns);
            self.nack.on_new_hole(now, nxt, repeat, retry);
        } else {
            self.on_gap(now);
        }
    }

    /// A packet beyond the gap arrived that opened no new hole ([`NackPolicy::on_gap`]).
    fn on_gap(&mut self, now: u64) {
        self.nack.on_gap(now, self.recv.nxt, self.cfg.nack_retry_ns);
    }

    /// DATA was counted towards the next ACK: one is due after an ACK interval (or half the
    /// receive share) or at the sender's PSH, else the delayed ACK runs.
    fn after_data(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let push = pkt.flags().contains(Flags::PSH);
        let due = self.ack_due_bytes();
        self.ack.after_data(now, due, push, self.cfg.delayed_ack_ns);
    }

    fn on_fin(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let seq = pkt.seq();
        if seq == self.recv.nxt && !self.recv.peer_fin {
            self.accept_fin();
        } else if seq_lt(seq, self.recv.nxt) {
            self.ack.request(); // a retransmitted FIN: our ACK was lost
        } else if self.selective()
            && !self.recv.peer_fin
            && seq.wrapping_sub(self.recv.nxt) <= self.recv.window_bytes(&self.cfg)
        {
            // Selective: a FIN beyond the gap is held like data (a selective sender resends
            // only named ranges, so it would resend the FIN only on a timeout, and a sending
            // application that exits once its data is confirmed may never do so).
            self.recv.ooo.hold_fin(seq);
            self.on_gap(now);
        } else {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
        }
    }

    fn accept_fin(&mut self) {
        self.recv.accept_fin();
        self.ack.request();
        self.ack.stop_delack();
        self.nack.cancel();
        self.events.push_back(Event::Readable);
    }

    fn check_done(&mut self, now: u64) {
        if self.state == State::Established
            && self.send.fin_acked()
            && self.recv.peer_fin
            && !self.ack.is_due()
        {
            self.state = State::Linger;
            self.linger_until = now + self.cfg.linger_ns;
            // Everything we sent is acknowledged: give the send buffer's memory back now, not
            // at the end of the linger (thousands of lingering connections otherwise pin it).
            self.send.release();
            self.recv.shrink();
            self.rto.stop();
            self.ack.stop_delack();
            self.nack.stop();
        }
    }

    // ------------------------------------------------------------------ output

    /// Written bytes not yet sent.
    fn pending_data(&self) -> u32 {
        self.send.pending()
    }

    /// Bytes the peer's and the controller's windows allow now.
    fn window_room(&self) -> u32 {
        (self.send).window_room(self.signals.window(), self.cfg.max_payload)
    }

    /// Whether a DATA or FIN packet is waiting for the pacer (not for window or buffer).
    fn data_ready(&self) -> bool {
        self.state == State::Established
            && (self.send.has_rexmit()
                || (self.pending_data() > 0 && self.window_room() > 0)
                || self.send.fin_due())
    }

    /// Whether the due ACK may ride on the DATA packet that leaves now instead of leaving on
    /// its own (spec §6.4, `Config::ack_ride_ns`): fewer than an ACK interval of bytes is
    /// due, nothing but the ACK and window fields is owed (no CNP, no FIN, no handshake
    /// confirmation), new DATA leaves now, and a pure ACK, which alone carries the peer's
    /// STT and RTT sample, left within `ack_ride_ns`.
    fn ack_rides(&self, now: u64) -> bool {
        self.ack.pure_within(now, self.cfg.ack_ride_ns)
            && self.ack_may_ride()
            && !self.send.has_rexmit()
            && self.pending_data() > 0
            && self.window_room() > 0
            && now >= self.data_at()
    }

    /// What the due ACK owes, as far as riding on DATA is concerned (shared by
    /// [`Connection::ack_rides`] and [`Connection::hold_ack`]): fewer than an ACK interval of
    /// bytes, no CNP, no FIN received, the handshake confirmed.
    fn ack_may_ride(&self) -> bool {
        self.ack.below(self.ack_due_bytes())
            && !self.signals.cn_due()
            && !self.recv.peer_fin
            && (self.confirmed || !self.is_client)
    }

    fn header(&self, flags: Flags, now: u64) -> Header {
        let mut h = Header::new(
            flags,
            self.remote_cid,
            self.local_cid,
            self.send.nxt,
            self.recv.nxt,
            ts32(now),
        );
        h.window = (self.recv.advertised_window(&self.cfg) >> 10).min(0xffff) as u16;
        if flags.contains(Flags::ACK) {
            h.ce_count = self.signals.ce_received();
        }
        h
    }

    fn finish(&mut self, now: u64, h: &mut Header, buf: &mut [u8]) -> usize {
        self.recv.advertised(u32::from(h.window) << 10);
        if self.is_client
            && !self.confirmed
            && (h.flags.contains(Flags::DATA) || h.flags.contains(Flags::FIN))
        {
            // Until the listener has shown it holds the connection, DATA and FIN carry their
            // offset from ISN + 1 in `echo_stt` (spec §5): the stateless listener recovers our
            // ISN from any packet of the first window and verifies the cookie with it when
            // the third packet and the first DATA were lost.
            h.echo_stt = h.seq.wrapping_sub(self.iss.wrapping_add(1));
        }
        h.emit(buf).expect("caller checked buffer size");
        self.stats.packets_sent += 1;
        self.last_tx = now;
        HEADER_LEN + usize::from(h.payload_len)
    }

    /// Writes the next datagram to send at `now` into `buf` (at least 32 + `max_payload`
    /// bytes) and returns its length, or None when nothing may be sent now.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        assert!(buf.len() >= HEADER_LEN + usize::from(self.cfg.max_payload));
        if self.rst_now {
            self.rst_now = false;
            let mut h = self.header(Flags::RST | Flags::ACK, now);
            return Some(self.finish(now, &mut h, buf));
        }
        match self.state {
            State::Closed(_) => return None,
            State::SynSent => {
                if self.syn_due {
                    self.syn_due = false;
                    let mut h = Header::new(Flags::SYN, 0, self.local_cid, self.iss, 0, ts32(now));
                    h.window = (self.recv.window_bytes(&self.cfg) >> 10).min(0xffff) as u16;
                    h.echo_stt = offered_caps(&self.cfg);
                    return Some(self.finish(now, &mut h, buf));
                }
                return None;
            }
            State::Linger => {
                if self.ack.take_due() {
                    let mut h = self.header(Flags::ACK, now);
                    h.seq = self.send.max;
                    self.stats.acks_sent += 1;
                    return Some(self.finish(now, &mut h, buf));
                }
                return None;
            }
            State::Established => {}
        }
        if self.nack.take_due() {
            let mut h = self.header(Flags::ACK | Flags::NACK, now);
            h.echo_stt = self.ack.stt_last();
            h.seq = self.send.max;
            self.stats.nacks_sent += 1;
            if self.recv.ooo.holds_any() {
                // Selective (the peer offered it: we hold data only then): name the holes.
                let mut ranges = [NackRange { seq: 0, len: 0 }; MAX_NACK_RANGES];
                let room = ((buf.len() - HEADER_LEN) / NACK_RANGE_LEN).min(MAX_NACK_RANGES);
                let n = self.recv.ooo.missing(self.recv.nxt, &mut ranges[..room]);
                h.payload_len = emit_nack_ranges(&ranges[..n], &mut buf[HEADER_LEN..]) as u16;
                self.stats.nack_ranges_sent += n as u64;
            }
            return Some(self.finish(now, &mut h, buf));
        }
        if self.ack.is_due() && self.ack_rides(now) {
            // The DATA leaving below carries the ACK (spec §6.4).
            self.ack.on_ride();
            self.stats.acks_ridden += 1;
        }
        if self.ack.due_at(now) {
            let echo = self.ack.on_pure(now, self.cfg.echo);
            let mut flags = Flags::ACK;
            if self.signals.take_cn() {
                flags = flags | Flags::CN;
                self.stats.cnps_sent += 1;
            }
            let mut h = self.header(flags, now);
            h.seq = if self.is_client && !self.confirmed {
                self.iss.wrapping_add(1)
            } else {
                self.send.max
            };
            h.echo_stt = echo;
            self.stats.acks_sent += 1;
            let n = self.finish(now, &mut h, buf);
            self.check_done(now);
            return Some(n);
        }
        if self.send.has_rexmit() && now >= self.pacer.next_send() {
            return Some(self.send_rexmit(now, buf));
        }
        let data_at = self.data_at();
        if self.data_ready() && now >= data_at {
            self.pacer.start_batch(now);
            let pending = self.pending_data();
            if pending > 0 {
                let len = pending
                    .min(self.window_room())
                    .min(u32::from(self.cfg.max_payload));
                let mut flags = Flags::DATA | Flags::ACK;
                if len == pending {
                    flags = flags | Flags::PSH;
                }
                let mut h = self.header(flags, now);
                h.payload_len = len as u16;
                let off = self.send.nxt.wrapping_sub(self.send.una) as usize;
                (self.send).copy_out(off, &mut buf[HEADER_LEN..HEADER_LEN + len as usize]);
                if seq_lt(self.send.nxt, self.send.max) {
                    self.stats.retransmitted_packets += 1;
                }
                self.stats.data_packets_sent += 1;
                self.stats.bytes_sent += u64::from(len);
                self.signals.cc_mut().on_sent(now, len);
                self.refresh_rate();
                self.send.advance(len);
                let backlogged = self.pending_data() > 0 && self.window_room() > 0;
                let bytes = HEADER_LEN as u64 + u64::from(len);
                self.pacer
                    .on_data_sent(now, data_at, bytes, backlogged, &mut self.stats);
                self.arm_rto(now);
                return Some(self.finish(now, &mut h, buf));
            }
            // FIN
            let mut h = self.header(Flags::FIN | Flags::ACK, now);
            self.send.on_fin_sent();
            self.arm_rto(now);
            return Some(self.finish(now, &mut h, buf));
        }
        if now >= self.last_tx + self.cfg.idle_timeout_ns / 4 {
            // Keepalive.
            let mut h = self.header(Flags::ACK, now);
            h.seq = self.send.max;
            return Some(self.finish(now, &mut h, buf));
        }
        None
    }

    /// Selective recovery: resends (part of) the first queued range. Queued ranges always lie
    /// in `[snd_una, snd_nxt)` (pruned on every acknowledgement and go-back-N), so the bytes
    /// are in the send buffer; they were sent within the window before, so only the pacer
    /// gates them.
    fn send_rexmit(&mut self, now: u64, buf: &mut [u8]) -> usize {
        let (start, len) = self.send.next_rexmit(self.cfg.max_payload);
        let mut flags = Flags::DATA | Flags::ACK;
        if !self.send.has_rexmit() && self.pending_data() == 0 {
            flags = flags | Flags::PSH;
        }
        let mut h = self.header(flags, now);
        h.seq = start;
        h.payload_len = len as u16;
        let off = start.wrapping_sub(self.send.una) as usize;
        (self.send).copy_out(off, &mut buf[HEADER_LEN..HEADER_LEN + len as usize]);
        self.stats.retransmitted_packets += 1;
        self.stats.data_packets_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        self.signals.cc_mut().on_sent(now, len);
        self.refresh_rate();
        self.pacer
            .on_resent(now, HEADER_LEN as u64 + u64::from(len));
        self.arm_rto(now);
        self.finish(now, &mut h, buf)
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("state", &self.state)
            .field("local_cid", &self.local_cid)
            .field("remote_cid", &self.remote_cid)
            .field("snd_una", &self.send.una)
            .field("snd_nxt", &self.send.nxt)
            .field("snd_max", &self.send.max)
            .field("rcv_nxt", &self.recv.nxt)
            .field("sbuf", &self.send.buffered())
            .field("rbuf", &self.recv.buf().len())
            .finish()
    }
}
