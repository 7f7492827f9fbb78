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
//!
//! The connection is cut into parts, one file each: the send state (`send.rs`), the pacer
//! (`pacer.rs`), the controller and its congestion signals (`signals.rs`), the RTT estimate
//! and retransmission timer (`rtt.rs`), the receive state (`recv.rs`) with its assembler of
//! segments held beyond a gap (`assembler.rs`), and the ACK and NACK policy (`ack.rs`). This
//! file keeps the connection, its application calls and timers; `input.rs` handles datagrams
//! and `output.rs` builds them.

use crate::config::{Config, Recovery};
use crate::stats::ConnStats;
use crate::wire::{CAPS_KNOWN, CAP_SELECTIVE};
use bytes::Bytes;
use std::collections::VecDeque;

mod ack;
mod assembler;
mod input;
mod output;
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
use signals::CongestionState;

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

/// One connection. Its identity and lifecycle are kept here; the rest is in parts, each with
/// its own rules: the send state (stream, window, loss recovery), the pacer, the controller
/// and its congestion signals, the RTT estimate and retransmission timer, the receive state
/// (with the segments held beyond a gap), and the ACK and NACK policy.
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
    /// Our initial sequence number.
    iss: u32,
    /// Capability bits the peer offered in the handshake (masked to the known ones).
    peer_caps: u32,
    /// Client: the SYN is to be sent (again).
    syn_due: bool,

    // ---- sender ----
    send: SendState,
    pacer: Pacer,
    signals: CongestionState,
    rtt: RttEstimator,
    rto: RtoTimer,
    /// The STT and RTT of the latest pure ACK of new data (for tracing).
    echoed_stt: Option<u32>,
    last_rtt: Option<u64>,

    // ---- receiver ----
    recv: RecvState,
    ack: AckPolicy,
    nack: NackPolicy,

    // ---- lifecycle ----
    /// When the connection was created.
    born: u64,
    /// Whether any payload or FIN was written or received (a connection that never carries
    /// any is culled after `unused_timeout_ns`).
    used: bool,
    last_rx: u64,
    last_tx: u64,
    linger_until: u64,
    rst_now: bool,
    events: VecDeque<Event>,
    stats: ConnStats,
}

/// The low 32 bits of a time, as the header's timestamps carry it.
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
            peer_caps: 0,
            syn_due: is_client,
            send: SendState::new(iss),
            pacer: Pacer::new(),
            signals: CongestionState::new(&cfg, now),
            rtt: RttEstimator::new(),
            rto: RtoTimer::new(cfg.initial_rto_ns),
            echoed_stt: None,
            last_rtt: None,
            recv: RecvState::new(),
            ack: AckPolicy::new(),
            nack: NackPolicy::new(),
            born: now,
            used: false,
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
    /// The controller's mode counters (STRIDE's competitive mode, spec §8.7); `None` for a
    /// controller without modes. [`ConnStats`] carries the same counters as of the last ACK.
    pub fn cc_mode_stats(&self) -> Option<crate::cc::ModeStats> {
        self.signals.cc().mode_stats()
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
    /// This connection's largest DATA payload (`Config::max_payload`, or less after
    /// [`Connection::limit_payload`]).
    pub fn max_payload(&self) -> u16 {
        self.cfg.max_payload
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

    /// Ends the connection for `reason`: its timers stop and its send buffer and held
    /// segments are freed (delivered bytes stay readable).
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

    /// The retransmission timer expired at `now`: a window probe when nothing is
    /// outstanding; else the SYN again, or (established) the controller's timeout reaction and
    /// a resend from the first unacknowledged byte. The connection gives up after more than
    /// `max_retries` consecutive timeouts (once established, spanning at least `give_up_ns`).
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

    /// Arms the retransmission timer while data is outstanding or waits for window (to
    /// probe it), stops it otherwise.
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
