//! The endpoint: one UDP socket, one driver thread, many connections, tokio streams.
//!
//! # Design
//!
//! The sans-IO [`stride_proto::Endpoint`] lives in a [`Mutex`] shared by the driver and the
//! application handles ([`Endpoint`], [`Stream`]). Application calls (from tokio tasks) lock it,
//! act (write, read, close) and wake the driver through an eventfd, written only while the
//! driver sleeps (a running driver checks a flag before it sleeps); the driver wakes application
//! tasks through the `Waker`s they left in per-connection slots when the core reports events.
//! [`Endpoint::bind_shards`] puts several endpoints (sockets, driver threads) on one address.
//!
//! The driver is one dedicated OS thread that owns the socket (not a tokio task: it must wait
//! for deadlines far below tokio's 1 ms timer tick). Its loop: receive a batch (`recvmmsg`,
//! kernel `SO_TIMESTAMPNS` receive stamps when available, else the clock read right after the
//! call) and feed it to the core; run due timers; ask the core for datagrams (it paces: `None`
//! means nothing may leave yet) and send them as one batch (`sendmmsg`), each stamped by
//! `poll_transmit` just before the call. Then wait for the earliest of: socket readable (or
//! writable after `EAGAIN`), an application wake-up, the core's next deadline.
//!
//! Request/response without thread hand-offs: a small write is sent by the writing
//! thread itself when the core lets it leave now; a read on a stream whose reads and writes
//! alternate that finds nothing registers the socket with the tokio reactor and, once it is
//! readable, receives the batch on the reader's thread ([`EndpointConfig::inline_receive`]), sending what the core then has to send (ACKs)
//! from there too. The driver is woken (eventfd) only when it must act before its own timeout:
//! datagrams left to send, or a deadline earlier than the one it sleeps to. While readers wait,
//! the driver leaves arrivals to them and sleeps at most [`READER_WAIT_NS`].
//!
//! Sub-millisecond waits: a wait shorter than [`SPIN_NS`] is spun (one `sched_yield` per turn,
//! so a peer or relay sharing a small machine still runs); a longer one sleeps in `ppoll` on the
//! socket and the eventfd with a nanosecond timeout, the thread's timer slack lowered to 1 µs.
//! Measured on the 2-core loopback (`stride perf`, 200 MB): pure `ppoll` 0.98 Gbit/s with 103
//! spurious retransmission timeouts; spin below 20 µs 1.34 Gbit/s with none. A tokio-task
//! driver that spun with `yield_now` for waits under 100 µs starved the other processes and
//! caused spurious timeouts (1 ms minimum RTO) on this machine.

use crate::error::{Error, Result};
use crate::sys::{self, RxBatch, TxBatch};
use bytes::Bytes;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::os::fd::{FromRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use stride_proto::{CloseReason, ConnHandle, ConnStats, Event};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use stride_proto::{Config, EndpointStats};

/// Most bytes one `poll_write` copies into the send buffer: the copy happens under the lock
/// the driver needs to pace, so a large write is taken in slices the driver can interleave with.
pub const WRITE_SLICE: usize = 64 * 1024;
/// A write of at most this many bytes is sent by the writing thread itself when the driver
/// holds nothing unsent (see `send_direct`).
pub const DIRECT_MAX_BYTES: usize = 4096;
/// Most datagrams one direct send takes from the core.
pub const DIRECT_MAX_DATAGRAMS: usize = 4;
/// Waits shorter than this are spun (with `sched_yield`) rather than slept in `ppoll`.
pub const SPIN_NS: u64 = 20_000;
/// A driver whose next deadline is at most this far away does not wake for arriving
/// datagrams; it reads them at the deadline.
pub const RX_DEFER_NS: u64 = 150_000;
/// Longest sleep of the driver between looks at its exit condition.
pub const MAX_WAIT_NS: u64 = 50_000_000;
/// Longest sleep of a driver that has connections. Below the host's 10 ms RTO floor, so a
/// write that arms a retransmission timer finds the driver waking before it anyway and need
/// not wake it (one eventfd write and one driver wake-up less per request on a
/// request/response path); an idle connection costs 200 driver wake-ups a second.
pub const CONN_WAIT_NS: u64 = 5_000_000;
/// Longest a reader holds back what the core has to send (an ACK) after it received on a
/// request/response stream (one that alternates reads and writes): the application's response
/// then leaves with it in one system call and the peer wakes once, not once for the ACK and
/// again for the response. When nothing is written meanwhile the driver sends it at the end.
/// Only on an endpoint with a single connection (the hold stops all its transmissions).
pub const ACK_HOLD_NS: u64 = 50_000;
/// How late a driver that sleeps anyway may send a held ACK whose hold ended without a
/// response. The hold's end alone never wakes a sleeping driver: on a request/response path
/// the response almost always comes first, and writing the eventfd for a deadline that is
/// then cancelled cost a driver wake-up (and its context switches) per exchange. A driver
/// that sleeps longer than this past the hold's end is woken for it.
pub const HOLD_LATE_NS: u64 = 1_000_000;
/// The driver holds every transmission for a response ([`ACK_HOLD_NS`]) only on an endpoint
/// with one open connection and at most this many in all (the others lingering after their
/// close: a server answering one client after another keeps that hold while the earlier
/// connections linger); otherwise the core holds the due pure ACKs alone
/// (`stride_proto::Endpoint::hold_acks`).
pub const HOLD_MAX_CONNECTIONS: usize = 8;
/// Longest sleep of a driver that leaves arriving datagrams to waiting readers (inline
/// receive): a reader that stopped waiting without receiving leaves the socket unwatched
/// for at most this long.
pub const READER_WAIT_NS: u64 = 1_000_000;
/// Socket buffer size requested each way.
pub const SOCKET_BUFFER: usize = 4 << 20;
/// Receive buffer size requested (the kernel doubles it for its bookkeeping): a receiver that
/// many senders reach at once needs room for their first bursts while their controllers learn
/// of the queue (200 senders overflowed 4 MiB by hundreds of thousands of
/// datagrams). Memory is only used while datagrams wait in it.
pub const RECV_BUFFER: usize = 16 << 20;
/// How long a datagram may wait in the socket's receive queue (between the kernel's receive
/// stamp and the driver's read) before the wait counts as delay: a receive stamp is the
/// kernel's stamp plus the wait beyond this. Waits below it are this host's ordinary
/// scheduling (a sleeping driver wakes in ~50 µs on a busy VM, and it defers reads by up to
/// [`RX_DEFER_NS`] on purpose), which must not add noise to STT; a receiver that falls behind
/// its senders (many senders, a starved core) queues for milliseconds, and that wait is the
/// congestion the senders' controllers must see, since the kernel's stamp alone hides it.
pub const READ_DELAY_SLACK_NS: u64 = 250_000;

/// Driver-level counters (next to the core's [`EndpointStats`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IoStats {
    /// Datagrams received from the socket.
    pub datagrams_in: u64,
    /// Datagrams sent.
    pub datagrams_out: u64,
    /// Receive calls that returned data.
    pub rx_calls: u64,
    /// Send calls.
    pub tx_calls: u64,
    /// Received messages that carried a kernel timestamp.
    pub kernel_rx_stamps: u64,
    /// Received messages that waited in the socket queue longer than the read-delay slack
    /// (their receive stamp was moved later; see [`READ_DELAY_SLACK_NS`]).
    pub late_reads: u64,
    /// Received messages that carried more than one datagram (UDP GRO).
    pub gro_messages: u64,
    /// Times an application thread woke the sleeping driver (eventfd writes). On a
    /// request/response stream this stays near zero: the application threads send and
    /// receive themselves.
    pub driver_kicks: u64,
    /// Datagrams dropped for being too long.
    pub truncated: u64,
    /// Send errors other than "would block" (the datagram was dropped).
    pub send_errors: u64,
    /// Datagrams an application thread sent itself after a small write (see [`Stream`]).
    pub direct_sends: u64,
    /// Send calls an application thread made for them (an ACK held back for a response
    /// leaves with it in one call, see [`ACK_HOLD_NS`]).
    pub direct_calls: u64,
    /// Receive calls a reader made itself ([`EndpointConfig::inline_receive`]); included in
    /// `rx_calls`.
    pub inline_receives: u64,
    /// Datagrams the kernel dropped at the socket because its receive buffer was full
    /// (`SO_RXQ_OVFL`; stays 0 when the kernel does not report it).
    pub rx_overflow: u64,
    /// Times the driver thread went to sleep (`ppoll`), whoever woke it: on a
    /// request/response stream whose application threads send and receive themselves, its
    /// wake-ups are only the core's timers.
    pub driver_sleeps: u64,
}

/// What the socket ended up with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketInfo {
    /// Local address.
    pub local: SocketAddr,
    /// Receive buffer the kernel granted (bytes).
    pub recv_buffer: usize,
    /// Send buffer the kernel granted (bytes).
    pub send_buffer: usize,
    /// Whether kernel receive timestamps are on.
    pub kernel_timestamps: bool,
    /// Whether UDP GRO is on (the kernel hands over runs of datagrams as one message).
    pub gro: bool,
    /// The receive share in force (spec §8.6 `rx_share`, bytes; 0: off): the configured one,
    /// at most a quarter of `recv_buffer` (see [`HOST_RX_SHARE`]).
    pub rx_share: u32,
    /// Each connection's receive buffer, the most it advertises as window: the configured
    /// `Config::recv_buffer`, at most an eighth of `recv_buffer` (at least 64 KiB), so what a
    /// peer may have in flight fits the socket even when this endpoint falls behind, and the
    /// first windows of a burst of starts (before the share counts its senders) do too.
    pub conn_recv_buffer: usize,
}

#[derive(Default)]
struct Slot {
    read: Option<Waker>,
    write: Option<Waker>,
    connect: Option<Waker>,
    connected: bool,
    closed: Option<CloseReason>,
    detached: bool,
    shutdown_wait: bool,
    last_stats: Option<Box<ConnStats>>,
}

struct State {
    ep: stride_proto::Endpoint,
    slots: stride_proto::CidMap<ConnHandle, Slot>,
    accept_q: VecDeque<ConnHandle>,
    accept_wakers: Vec<Waker>,
    shutdown_waiters: Vec<ConnHandle>,
    io: IoStats,
    driver_gone: bool,
    /// The driver holds datagrams taken from the core that are not in the kernel yet (or
    /// `spill` holds some): an application thread must not send around them.
    tx_inflight: bool,
    /// Datagrams an application thread took from the core but could not send (socket buffer
    /// full); the driver sends them first.
    spill: Vec<(SocketAddr, Vec<u8>)>,
    /// Transmissions are held back until this time ([`ACK_HOLD_NS`]).
    hold_until: Option<u64>,
    /// [`send_direct`]'s datagram buffers ([`DIRECT_MAX_DATAGRAMS`] of `room` bytes), kept
    /// so that a call does not clear them first.
    direct_bufs: Box<[u8]>,
    /// Bytes of room per datagram buffer ([`sys::datagram_room`] of the configured payload).
    room: usize,
}

impl State {
    /// Moves the core's events into the slots and wakes whoever waits for them.
    fn dispatch(&mut self) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Accepted => {
                    self.slots.insert(
                        h,
                        Slot {
                            connected: true,
                            ..Slot::default()
                        },
                    );
                    self.accept_q.push_back(h);
                    for w in self.accept_wakers.drain(..) {
                        w.wake();
                    }
                }
                Event::Connected => {
                    if let Some(s) = self.slots.get_mut(&h) {
                        s.connected = true;
                        if let Some(w) = s.connect.take() {
                            w.wake();
                        }
                    }
                }
                Event::Readable => {
                    let detached = self.slots.get(&h).is_some_and(|s| s.detached);
                    if detached {
                        let mut sink = [0u8; 4096];
                        while matches!(self.ep.read(h, &mut sink), Ok(n) if n > 0) {}
                    } else if let Some(w) = self.slots.get_mut(&h).and_then(|s| s.read.take()) {
                        w.wake();
                    }
                }
                Event::Writable => {
                    if let Some(w) = self.slots.get_mut(&h).and_then(|s| s.write.take()) {
                        w.wake();
                    }
                }
                Event::Closed(r) => {
                    let stats = self.ep.conn(h).map(|c| Box::new(c.stats().clone()));
                    let remove = match self.slots.get_mut(&h) {
                        Some(s) => {
                            s.closed = Some(r);
                            if stats.is_some() {
                                s.last_stats = stats;
                            }
                            for w in [s.read.take(), s.write.take(), s.connect.take()]
                                .into_iter()
                                .flatten()
                            {
                                w.wake();
                            }
                            s.detached
                        }
                        None => false,
                    };
                    if remove {
                        self.slots.remove(&h);
                    }
                }
            }
        }
    }

    fn check_shutdowns(&mut self) {
        if self.shutdown_waiters.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.shutdown_waiters.len() {
            let h = self.shutdown_waiters[i];
            let done = self
                .ep
                .conn(h)
                .is_none_or(|c| c.unacked() == 0 || c.is_closed());
            if done {
                self.shutdown_waiters.swap_remove(i);
                if let Some(s) = self.slots.get_mut(&h) {
                    s.shutdown_wait = false;
                    if let Some(w) = s.write.take() {
                        w.wake();
                    }
                }
            } else {
                i += 1;
            }
        }
    }
}

struct Shared {
    state: Mutex<State>,
    /// eventfd the driver sleeps on next to the socket.
    efd: RawFd,
    /// The socket (owned by the driver thread, which outlives every handle).
    sock_fd: RawFd,
    info: SocketInfo,
    /// Set by [`Shared::wake`]: something changed that the driver has not looked at yet.
    notified: AtomicBool,
    /// The driver is in (or about to enter) `ppoll`: only then does a wake-up cost an eventfd
    /// write. A driver that is running looks at `notified` before it sleeps.
    sleeping: AtomicBool,
    /// When a sleeping driver wakes by itself (ns, [`sys::now_ns`] clock; written before
    /// `sleeping` is set): a change whose deadline is no earlier needs no eventfd write.
    sleep_until: AtomicU64,
    /// Eventfd writes (reported as [`IoStats::driver_kicks`]).
    kicks: AtomicU64,
    /// The driver's sleeps (reported as [`IoStats::driver_sleeps`]).
    sleeps: AtomicU64,
    /// The receive buffers, shared by the driver and readers that receive inline; whoever
    /// holds them receives (so datagrams are handled in the order the socket gave them).
    rx: Mutex<RxBatch>,
    /// See [`EndpointConfig::read_delay_slack_ns`].
    slack: Option<u64>,
    /// Readers receive from the socket themselves ([`EndpointConfig::inline_receive`]).
    inline_rx: bool,
    /// The socket registered with the tokio reactor of the first reader that waited (a
    /// duplicate descriptor of the driver's socket), or None when there is no reactor.
    reactor: OnceLock<Option<tokio::io::unix::AsyncFd<OwnedFd>>>,
    /// Readers waiting for the reactor to report the socket readable: while there are any,
    /// the driver leaves arriving datagrams to them.
    rx_waiters: AtomicUsize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: we created this descriptor and nobody uses it any more.
        unsafe { libc::close(self.efd) };
    }
}

impl Shared {
    /// Tells the driver that something changed; wakes it (an eventfd write) only when it
    /// sleeps. The two flags pair up (sequentially consistent) so that either the driver sees
    /// `notified` before it sleeps or this call sees `sleeping` and writes.
    fn wake(&self) {
        self.notified.store(true, Ordering::SeqCst);
        if !self.sleeping.load(Ordering::SeqCst) {
            return;
        }
        self.kick();
    }

    /// Like [`Shared::wake`], but writes the eventfd only when the driver must act before it
    /// wakes by itself: it has datagrams to send (`pending`) or the core's earliest deadline
    /// (`deadline`, read under the lock after the change) comes before the driver's own
    /// timeout. `sleep_until` is read after `sleeping`, so it belongs to the sleep that
    /// `sleeping` reports.
    fn wake_for(&self, pending: bool, deadline: Option<u64>) {
        self.notified.store(true, Ordering::SeqCst);
        if !self.sleeping.load(Ordering::SeqCst) {
            return;
        }
        if !pending && deadline.is_none_or(|d| d >= self.sleep_until.load(Ordering::SeqCst)) {
            return;
        }
        self.kick();
    }

    fn kick(&self) {
        self.kicks.fetch_add(1, Ordering::Relaxed);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.efd, &one as *const u64 as *const libc::c_void, 8) };
    }

    /// The socket as registered with the current tokio reactor (registered on first use).
    fn reactor(&self) -> Option<&tokio::io::unix::AsyncFd<OwnedFd>> {
        if !self.inline_rx {
            return None;
        }
        self.reactor
            .get_or_init(|| {
                tokio::runtime::Handle::try_current().ok()?;
                // SAFETY: duplicates our live socket descriptor; the copy is owned below.
                let fd = unsafe { libc::fcntl(self.sock_fd, libc::F_DUPFD_CLOEXEC, 0) };
                if fd < 0 {
                    return None;
                }
                // SAFETY: `fd` is a fresh descriptor nobody else owns.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                // SAFETY: the AsyncFd owns `owned`, which stays open and the same descriptor
                // for the AsyncFd's whole life.
                unsafe {
                    tokio::io::unix::AsyncFd::register_with_interest(
                        owned,
                        tokio::io::Interest::READABLE,
                    )
                }
                .ok()
            })
            .as_ref()
    }

    /// Receives one batch from the socket (non-blocking) and hands it to the core; the caller
    /// holds the receive buffers. `WouldBlock` when nothing is queued. A reader receiving
    /// inline names its connection (`me`): its own read waker is not woken (it is running and
    /// looks again itself; a task woken while it runs is polled once more for nothing, and
    /// tokio wakes a second worker to take it).
    fn receive(&self, rx: &mut RxBatch, me: Option<ConnHandle>) -> std::io::Result<usize> {
        let n = rx.recv(self.sock_fd)?;
        // The clock read just after the receive call (the one its stamps were converted with).
        let fallback_now = rx.read_at;
        let mut st = self.lock();
        st.io.rx_calls += 1;
        st.io.inline_receives += u64::from(me.is_some());
        st.io.truncated = rx.truncated;
        st.io.rx_overflow = rx.overflow;
        for i in 0..n {
            let r = rx.got[i];
            if r.len == 0 {
                st.io.datagrams_in += 1;
                continue;
            }
            if r.seg < r.len {
                st.io.gro_messages += 1;
            }
            // A GRO message's datagrams share its one kernel stamp.
            let now = match r.kernel_ts {
                Some(t) => {
                    st.io.kernel_rx_stamps += 1;
                    match self.slack {
                        Some(s) if fallback_now.saturating_sub(t) > s => {
                            st.io.late_reads += 1;
                            fallback_now - s
                        }
                        _ => t,
                    }
                }
                None => fallback_now,
            };
            if let Some((m, seg)) = rx.segments(i) {
                // A long (GRO) message is shared, not copied: in-order payloads stay in the
                // receive buffer as slices of it until the application takes them. The core
                // takes it whole (one connection lookup for a run of its datagrams).
                st.io.datagrams_in += m.len().div_ceil(seg) as u64;
                st.ep
                    .handle_segments(now, r.from, m, seg, r.ecn == sys::ECN_CE);
            } else {
                for d in rx.datagrams(i) {
                    st.io.datagrams_in += 1;
                    st.ep.handle_ecn(now, r.from, d, r.ecn == sys::ECN_CE);
                }
            }
        }
        if let Some(s) = me.and_then(|h| st.slots.get_mut(&h)) {
            s.read = None;
        }
        st.dispatch();
        st.check_shutdowns();
        Ok(n)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Host-stack tuning of T_low (see [`host_config`]).
pub const HOST_T_LOW_NS: u32 = 60_000;
/// Host-stack tuning of T_high (see [`host_config`]).
pub const HOST_T_HIGH_NS: u32 = 300_000;
/// Host-stack gradient normaliser: 2^19 ns = 524 µs (see [`host_config`]).
pub const HOST_NORM_SHIFT: u8 = 19;
/// Host-stack pacing bucket depth, at least (see [`host_config`]).
pub const HOST_BURST_BYTES: u32 = 8 * 1024;
/// Host-stack pacing bucket depth in time at the line rate, at least (see [`host_config`]).
pub const HOST_BURST_NS: u64 = 10_000;
/// Host-stack pacing quantum (see [`host_config`]).
pub const HOST_PACING_QUANTUM_NS: u64 = 50_000;
/// Host-stack floor of the retransmission timeout (see [`host_config`]).
pub const HOST_MIN_RTO_NS: u64 = 10_000_000;
/// Host-stack delayed-ACK backstop (see [`host_config`]).
pub const HOST_DELAYED_ACK_NS: u64 = 100_000;
/// Host-stack ACK riding (see [`host_config`]): at least one pure ACK per millisecond.
pub const HOST_ACK_RIDE_NS: u64 = 1_000_000;
/// Host-stack send batch of a sender pinned at a rate (`Config::send_batch_bytes`, spec §9;
/// applied by [`crate::ControllerOverrides`] with the `fixed` controller, not by [`host_config`]): up to
/// one GSO message, within the room the pacing bucket leaves. Where 64 KiB last at least two
/// pacing quanta (rates up to ~5 Gbit/s), the bucket holds a batch plus a quantum (spec §9), so
/// the sender sleeps a batch at a time: pinned at 1 Gbit/s it uses 0.30 cores instead of 0.99,
/// at 100 Mbit/s 0.04 instead of 0.27, at the same goodput (docs/results.md, "What the host
/// settings buy").
/// Not under a controller that reads delay: a batch reaches the bottleneck as a burst whose
/// queueing is in every STT sample of its packets (`stride demo` fell from 0.64 to 0.48 of the
/// bottleneck with batches; docs/results.md, "What the host settings buy").
pub const HOST_SEND_BATCH_BYTES: u32 = 64 * 1024;

/// The host profile's receive share (spec §8.6 `rx_share`, §11.1): with two or more peers
/// sending to one endpoint (one socket), they hold at most about 2 MiB in flight together
/// (each `2 MiB >> ceil(log2 n)`); a lone sender is not limited. On a software host the queue
/// that matters is the socket's receive queue, which the kernel's receive stamp does not see
/// (see [`EndpointConfig::read_delay_slack_ns`]): when the receiving thread falls behind (it
/// shares the cores with the senders), only the window bounds that queue. Without a share each
/// peer may have its whole receive window (4 MiB) in flight, a few together overflow the
/// socket, and every overflow costs a timeout and a go-back-N resend that lands in the same
/// full queue: 8 loopback connections into a 2-socket server on 2 cores moved 3–5 Gbit/s with
/// 0.3–1 million resends and 300–800 timeouts per GB; with the share 10.7–13 Gbit/s and under
/// 1 400 resends (docs/results.md, "What the host settings buy").
/// [`Endpoint::bind_with`] lowers the share further to a quarter of the socket buffer the
/// kernel granted, so a datagram's kernel overhead (about 1.6x its payload) and a resend of
/// what is still queued both fit.
pub const HOST_RX_SHARE: u32 = 2 << 20;

/// The protocol's defaults for a host whose NIC runs at `line_bps`, adjusted for a software
/// stack on a general-purpose OS:
///
/// - T_low / T_high ([`HOST_T_LOW_NS`], [`HOST_T_HIGH_NS`]) sit above the noise of software
///   timestamps: the transmit stamp is taken in user space before `sendmmsg` and the receive
///   stamp by the kernel, so scheduling puts tens of µs of jitter into every STT sample (the
///   protocol's 5 µs / 80 µs assume NIC timestamps);
/// - the gradient is normalised by 2^[`HOST_NORM_SHIFT`] ns (524 µs, above T_high) instead of
///   2^13: timestamp noise alone moves a software STT by a few µs from one sample to the next,
///   and against 8 µs (or even 33 µs) that reads as a steep rising gradient whose cut (1/8 and
///   more per ACK) the additive increase cannot repay, so the sender idles below the bottleneck
///   (`stride demo`: 73–86 % utilization at 2^15 against 91–98 % at 2^19, same queue p99).
///   Against 524 µs the same noise costs under 1 % per sample, about what one gradient-increase
///   step gives back, while a queue growing by T_high per sample still halves the rate;
/// - the retransmission timeout floor ([`HOST_MIN_RTO_NS`]) covers scheduler stalls: on a
///   loaded machine a thread can wait several milliseconds for a core, and with a 1 ms floor
///   such a stall fires spurious timeouts whose go-back-N resends waste the link. Losses in a
///   flow are still repaired at once by NACK; only a lost tail waits for the timer;
/// - the pacing bucket holds [`HOST_BURST_BYTES`] (8 KiB) or [`HOST_BURST_NS`] (10 µs) at the
///   line rate, whichever is more, instead of 16 KiB: a software sender is descheduled now and
///   then and spends its bucket at once when it runs again, and a bucket's worth arriving back
///   to back at a bottleneck of the sender's rate is that much queue (16 KiB = 131 µs at
///   1 Gbit/s; 8 KiB took the demo's p99 from 74–98 to 66 µs). At high line rates the bucket
///   must still cover the driver's turnaround between two sends, or pacing caps the rate (a
///   flat 8 KiB cost a quarter of the loopback goodput at a 40 Gbit/s line);
/// - the bucket also holds at least [`HOST_PACING_QUANTUM_NS`] (50 µs) at the *current* rate,
///   capped at one GSO message (64 KiB): a driver turn (send a batch, yield, look again) on a
///   shared core often takes longer than 10 µs, and every µs beyond the bucket is rate lost
///   for good (a sender pinned at 5 and 10 Gbit/s delivered 0.57 and 0.49 of its rate with
///   the 8 KiB / 10 µs bucket). At rates of 1.3 Gbit/s and below 8 KiB is the larger, so the
///   1 Gbit/s relay figures keep their bucket; a 10 Gbit/s sender slowed by its controller
///   to 1 Gbit/s has a 65 µs (8 KiB) bucket, not 50 µs at its line rate;
/// - an ACK due for less than an ACK interval rides on DATA leaving at the same moment
///   (spec §6.4, [`HOST_ACK_RIDE_NS`]: a pure ACK, the peer's STT and RTT sample, still leaves
///   at least once per millisecond): a request/response exchange is one datagram each way,
///   not two (the ACK held for the response, see [`ACK_HOLD_NS`], then costs nothing);
/// - with two or more peers sending to the endpoint, their windows share [`HOST_RX_SHARE`]
///   (2 MiB) instead of the protocol's 52 µs of line: software RTTs are hundreds of µs, and the
///   bound is there for the socket's receive queue, not a switch port;
/// - the receiver's delayed-ACK backstop is [`HOST_DELAYED_ACK_NS`] (100 µs) instead of 50 µs.
///   ACKs still go every 64 KB and at once on PSH (the end of what the sender had queued), so
///   the backstop only decides how often a paced flow below 64 KB per 50 µs (10 Gbit/s) is
///   sampled, and each sample moves the rate by a fixed step (line/64 up, 1/8 down). With 50 µs
///   a 10 Gbit/s sender slowed to a 1 Gbit/s bottleneck is sampled ten times per 64 KB: it
///   climbs 10x faster than the paper's ACK-per-64 KB and, after the overshoot, keeps cutting
///   1/8 per sample while the queue it built drains, from 1.9 down to 0.06 Gbit/s, every few
///   ms. In the simulator's model of `stride demo --line-rate 10gbit`
///   (`scenarios/relay-10g-1g.toml`, docs/results.md) utilization goes from 88 % to 93 % at
///   100 µs and 94 % at 200 µs; through the UDP relay 200 µs lowered the demo's own figure
///   (sender line = bottleneck: 0.86 against 0.92 median of 8 interleaved runs) while 100 µs
///   raised both (0.96 against 0.90 at a 1 Gbit/s line, 0.91 against 0.88 at 10 Gbit/s).
pub fn host_config(line_bps: u64) -> Config {
    let mut c = Config::for_line_rate_gbps(line_bps as f64 / 1e9);
    c.min_rto_ns = HOST_MIN_RTO_NS;
    let line_burst = (line_bps / 8).saturating_mul(HOST_BURST_NS) / 1_000_000_000;
    c.burst_bytes = HOST_BURST_BYTES.max(line_burst.min(1 << 20) as u32);
    c.burst_min_ns = HOST_PACING_QUANTUM_NS;
    c.delayed_ack_ns = HOST_DELAYED_ACK_NS;
    c.ack_ride_ns = HOST_ACK_RIDE_NS;
    if let Some(p) = c.cc.params_mut::<stride_proto::cc::StrideParams>() {
        p.t_low = HOST_T_LOW_NS;
        p.t_high = HOST_T_HIGH_NS;
        p.norm_shift = HOST_NORM_SHIFT;
        // The receive share is off for software hosts (below), so the start grant stays on.
        p.grant = true;
        // Software STT noise reaches past t_low: a NACK cuts only behind t_high of queue.
        p.gate_high = true;
    }
    // Software RTTs are hundreds of µs: a 52 µs receive share would throttle concurrent
    // senders, but some share must keep them within the socket's buffer (spec §8.6 `rx_share`,
    // §11.1).
    c.rx_share = HOST_RX_SHARE;
    c
}

/// The largest DATA payload the route to `remote` carries in one datagram (its interface's
/// MTU, `IP_MTU`), when the kernel tells.
pub(crate) fn route_payload(remote: SocketAddr) -> Option<u16> {
    sys::path_mtu(remote)
        .and_then(|mtu| max_payload_for_mtu(mtu, remote.is_ipv6() && !is_v4_mapped(remote)))
}

/// An IPv4 peer written as an IPv6 address (`::ffff:a.b.c.d`, on a dual-stack socket): its
/// packets carry IPv4 headers.
fn is_v4_mapped(a: SocketAddr) -> bool {
    matches!(a, SocketAddr::V6(v6) if v6.ip().to_ipv4_mapped().is_some())
}

/// The payload per datagram ([`Config::max_payload`]) that fills a path MTU of `mtu` bytes:
/// the MTU less the IP header (20 bytes, 40 for IPv6), the UDP header (8) and STRIDE's
/// ([`stride_proto::wire::HEADER_LEN`]). `None` when nothing fits (or the datagram would pass
/// UDP's 65 507-byte limit). The default payload, 1440 bytes, fits a 1500-byte IPv4 MTU;
/// `9000` (jumbo frames) gives 8940, and loopback's 65 536 the UDP limit less the header.
///
/// ```
/// assert_eq!(stride::max_payload_for_mtu(9000, false), Some(8940));
/// assert_eq!(stride::max_payload_for_mtu(9000, true), Some(8920));
/// assert_eq!(stride::max_payload_for_mtu(60, false), None);
/// ```
pub fn max_payload_for_mtu(mtu: u32, ipv6: bool) -> Option<u16> {
    let ip = if ipv6 { 40 } else { 20 };
    let p = u64::from(mtu)
        .min(65_535)
        .checked_sub(ip + 8 + stride_proto::wire::HEADER_LEN as u64)?;
    let p = p.min(65_507 - stride_proto::wire::HEADER_LEN as u64);
    (p > 0).then_some(p as u16)
}

/// The receive share and each connection's receive buffer for a socket whose kernel-granted
/// receive buffer is `socket_rcvbuf` (0: not reported, both kept as configured). What peers
/// have in flight toward the socket stays within a quarter of its buffer (the kernel reports
/// the doubled figure it charges each datagram's full size against, about 1.6x the payload):
/// a lone sender through its window (an eighth, at least 64 KiB: a burst of starts gets first
/// windows of up to twice that before the share counts them), several through the share (a
/// quarter, at least 1 KiB; 0 stays off). Then neither kernel overhead nor a resend of what is
/// still queued overflows it, however late the driver reads.
fn fit_to_socket(socket_rcvbuf: usize, rx_share: u32, recv_buffer: usize) -> (u32, usize) {
    if socket_rcvbuf == 0 {
        return (rx_share, recv_buffer);
    }
    let quarter = socket_rcvbuf / 4;
    let share_cap = u32::try_from(quarter).unwrap_or(u32::MAX).max(1024);
    (
        rx_share.min(share_cap),
        recv_buffer.min((quarter / 2).max(64 << 10)),
    )
}

/// Memory an endpoint budgets per connection when it derives its connection limit: the fixed
/// record plus an idle connection's buffers (each side keeps up to 64 KiB once drained).
pub const CONN_MEMORY_BUDGET: u64 = 160 * 1024;

/// The connection limit an endpoint applies: the configured one, capped so that that many
/// connections fit in half of `mem_available` bytes at [`CONN_MEMORY_BUDGET`] each (at least
/// 64). A connection moving data may use its full send and receive buffers on top.
pub fn connection_limit(configured: usize, mem_available: Option<u64>) -> usize {
    match mem_available {
        Some(m) => configured.min(((m / 2 / CONN_MEMORY_BUDGET) as usize).max(64)),
        None => configured,
    }
}

/// Opens and binds the UDP socket of an endpoint (either kind: [`Endpoint`] or
/// [`crate::blocking::Endpoint`]) with `opts`, non-blocking: buffers, timestamps, GRO, ECN and
/// drop counting as the kernel grants them. Returns the socket, what was granted, and the
/// protocol configuration fitted to it (receive share and buffer, connection limit).
pub(crate) fn open_socket(
    addr: SocketAddr,
    opts: &EndpointConfig,
) -> Result<(std::net::UdpSocket, SocketInfo, Config)> {
    if let Err((f, why)) = opts.proto.validate() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("invalid configuration field {f}: {why}"),
        )));
    }
    let domain = socket2::Domain::for_address(addr);
    let sock = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    sys::set_buffers(&sock, opts.socket_buffer, opts.recv_buffer);
    if opts.reuse_port {
        sock.set_reuse_port(true)?;
    }
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    let fd = sock.as_raw_fd();
    let kernel_timestamps = opts.kernel_timestamps && sys::enable_rx_timestamps(fd);
    let gro = opts.gro && sys::enable_gro(fd);
    let _ = sys::enable_rxq_ovfl(fd);
    // ECN (spec 3.3): send ECT(0), read each datagram's codepoint. A kernel that refuses
    // leaves both off; CE then never reaches the controllers.
    let _ = sys::enable_ecn(fd, addr.is_ipv6());
    let recv_buffer = sock.recv_buffer_size().unwrap_or(0);
    let (rx_share, conn_recv_buffer) =
        fit_to_socket(recv_buffer, opts.proto.rx_share, opts.proto.recv_buffer);
    let info = SocketInfo {
        local: sock
            .local_addr()?
            .as_socket()
            .ok_or_else(|| std::io::Error::other("not an IP socket"))?,
        recv_buffer,
        send_buffer: sock.send_buffer_size().unwrap_or(0),
        kernel_timestamps,
        gro,
        rx_share,
        conn_recv_buffer,
    };
    let mut proto = opts.proto.clone();
    proto.rx_share = info.rx_share;
    proto.recv_buffer = info.conn_recv_buffer;
    proto.max_connections = connection_limit(proto.max_connections, sys::mem_available());
    Ok((sock.into(), info, proto))
}

/// Options of [`Endpoint::bind_with`].
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Protocol configuration (default: [`host_config`] at 10 Gbit/s).
    pub proto: Config,
    /// Accept incoming connections.
    pub listen: bool,
    /// Socket buffer size requested each way.
    pub socket_buffer: usize,
    /// Use kernel receive timestamps when the kernel offers them.
    pub kernel_timestamps: bool,
    /// Driver waits shorter than this are spun, longer ones slept (see the module notes).
    pub spin_ns: u64,
    /// Ask for UDP GRO on receive (one system call and one kernel traversal per run of up to
    /// 64 KiB of datagrams from one sender); off when the kernel refuses.
    pub gro: bool,
    /// Receive buffer size requested ([`RECV_BUFFER`]); the send buffer is `socket_buffer`.
    pub recv_buffer: usize,
    /// The read delay the receive stamp ignores (e.g. [`READ_DELAY_SLACK_NS`]); the wait in
    /// the socket queue beyond it is added to the kernel's stamp, so a receiver that falls
    /// behind shows in its senders' STT. None (the default): the kernel's stamp alone, the
    /// socket queue invisible to STT. Off by default because at high rates the driver's own
    /// batch turnaround (8 GRO messages of 64 KiB are ~280 µs at 15 Gbit/s) reaches the slack
    /// and would cap a single fast flow; `stride recv` turns it on (250 µs) for many senders into one receiver.
    pub read_delay_slack_ns: Option<u64>,
    /// Bind with `SO_REUSEPORT`, so that several endpoints (each its own socket and driver
    /// thread) share one address; see [`Endpoint::bind_shards`].
    pub reuse_port: bool,
    /// Readers receive from the socket themselves (default on): a read on a stream whose reads
    /// and writes alternate (request/response; a bulk reader leaves it to the driver) that finds
    /// nothing registers the socket with the tokio reactor and, when it becomes readable,
    /// receives and handles the batch on the reader's own thread, like a TCP `recv`, instead
    /// of waiting for the driver thread to receive it and wake the reader (two thread
    /// hand-offs per arriving datagram). The driver still receives whenever no reader waits.
    pub inline_receive: bool,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            proto: host_config(10_000_000_000),
            listen: true,
            socket_buffer: SOCKET_BUFFER,
            kernel_timestamps: true,
            spin_ns: SPIN_NS,
            gro: true,
            recv_buffer: RECV_BUFFER,
            read_delay_slack_ns: None,
            reuse_port: false,
            inline_receive: true,
        }
    }
}

/// A STRIDE endpoint on one UDP socket. Cheap to clone; the driver thread runs until every
/// handle (endpoint and streams) is dropped and no connection is left. There is no explicit
/// shutdown: shut the streams down, wait for them with [`Endpoint::wait_idle`], then drop the
/// handles.
#[derive(Clone)]
pub struct Endpoint {
    shared: Arc<Shared>,
    _guard: Arc<HandleGuard>,
}

struct HandleGuard(Arc<Shared>);
impl Drop for HandleGuard {
    fn drop(&mut self) {
        self.0.wake();
    }
}

impl Endpoint {
    /// Binds `addr` with default options (listening for connections) and starts the driver
    /// thread. The streams are tokio I/O objects; `connect_timeout` needs a tokio timer.
    pub fn bind(addr: SocketAddr) -> Result<Endpoint> {
        Endpoint::bind_with(addr, EndpointConfig::default())
    }

    /// Binds `addr` as a client only (incoming handshakes are refused).
    pub fn client(addr: SocketAddr) -> Result<Endpoint> {
        Endpoint::bind_with(
            addr,
            EndpointConfig {
                listen: false,
                ..EndpointConfig::default()
            },
        )
    }

    /// Binds `addr` with `opts`.
    pub fn bind_with(addr: SocketAddr, opts: EndpointConfig) -> Result<Endpoint> {
        let (udp, info, proto) = open_socket(addr, &opts)?;
        let fd = udp.as_raw_fd();
        // Buffers sized for the configured datagrams (jumbo frames need more than the default
        // 2 KiB; the core's validation keeps a datagram within UDP's 65 507 bytes).
        let room = sys::datagram_room(usize::from(proto.max_payload));
        let gro = info.gro;
        // SAFETY: plain eventfd creation.
        let efd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(Error::Io(std::io::Error::last_os_error()));
        }
        let spin_ns = opts.spin_ns;
        let slack = opts.read_delay_slack_ns;
        let inline_rx = opts.inline_receive;
        let mut opts = opts;
        opts.proto = proto;
        let secret = sys::random16()?;
        let seed = u64::from_le_bytes(sys::random16()?[..8].try_into().expect("8"));
        let mut ep = stride_proto::Endpoint::new(opts.proto, secret, seed);
        ep.listen(opts.listen);
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                ep,
                slots: Default::default(),
                accept_q: VecDeque::new(),
                accept_wakers: Vec::new(),
                shutdown_waiters: Vec::new(),
                io: IoStats::default(),
                driver_gone: false,
                tx_inflight: false,
                spill: Vec::new(),
                hold_until: None,
                direct_bufs: vec![0; DIRECT_MAX_DATAGRAMS * room].into_boxed_slice(),
                room,
            }),
            efd,
            sock_fd: fd,
            info,
            notified: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            sleep_until: AtomicU64::new(0),
            kicks: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
            // Room for any UDP datagram either way (a slot's buffer is 64 KiB regardless), so
            // a receiver takes a peer's jumbo datagrams whatever its own payload setting.
            rx: Mutex::new(if gro {
                RxBatch::for_gro()
            } else {
                RxBatch::with_room(sys::GRO_ROOM)
            }),
            slack,
            inline_rx,
            reactor: OnceLock::new(),
            rx_waiters: AtomicUsize::new(0),
        });
        let guard = Arc::new(HandleGuard(shared.clone()));
        let weak = Arc::downgrade(&guard);
        let s2 = shared.clone();
        std::thread::Builder::new()
            .name("stride-driver".into())
            .spawn(move || drive(s2, udp, weak, spin_ns))?;
        Ok(Endpoint {
            shared,
            _guard: guard,
        })
    }

    /// Binds `n` endpoints (at least 1) to one address with `SO_REUSEPORT`: `n` sockets and
    /// `n` driver threads, so that connections are served on more than one core. The kernel
    /// spreads incoming datagrams over the sockets by a hash of the 4-tuple, so every datagram
    /// of a connection (its handshake included) reaches the same shard, whose core owns it;
    /// replies leave from that shard's socket, which has the same local address. Each shard
    /// has its own connection identifiers and cookie secret (a cookie is checked by the shard
    /// that issued it, since the handshake's datagrams share a 4-tuple). Accept from all of
    /// them with [`Endpoint::accept_any`]. With port 0 the first shard picks the port and the
    /// others join it.
    pub fn bind_shards(addr: SocketAddr, opts: EndpointConfig, n: usize) -> Result<Vec<Endpoint>> {
        let mut opts = opts;
        opts.reuse_port = true;
        let first = Endpoint::bind_with(addr, opts.clone())?;
        let at = first.local_addr();
        let mut all = vec![first];
        for _ in 1..n.max(1) {
            all.push(Endpoint::bind_with(at, opts.clone())?);
        }
        Ok(all)
    }

    /// Waits for the next incoming connection on any of `eps` (the shards of
    /// [`Endpoint::bind_shards`], or any endpoints); fails once every one is closed.
    pub async fn accept_any(eps: &[Endpoint]) -> Result<Stream> {
        let (i, h, remote) = std::future::poll_fn(|cx| {
            let mut gone = 0;
            for (i, ep) in eps.iter().enumerate() {
                let mut st = ep.shared.lock();
                if st.driver_gone {
                    gone += 1;
                    continue;
                }
                if let Some(h) = st.accept_q.pop_front() {
                    let remote = st
                        .ep
                        .remote(h)
                        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
                    return Poll::Ready(Ok((i, h, remote)));
                }
                if !st.accept_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    st.accept_wakers.push(cx.waker().clone());
                }
            }
            if gone == eps.len() {
                return Poll::Ready(Err(Error::EndpointClosed));
            }
            Poll::Pending
        })
        .await?;
        let ep = &eps[i];
        Ok(Stream::new(ep.shared.clone(), ep._guard.clone(), h, remote))
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.info.local
    }

    /// Socket facts (granted buffer sizes, timestamps).
    pub fn socket_info(&self) -> SocketInfo {
        self.shared.info.clone()
    }

    /// The core's counters (malformed datagrams, SYNs, cookies, RSTs...).
    pub fn stats(&self) -> EndpointStats {
        self.shared.lock().ep.stats().clone()
    }

    /// The driver's I/O counters.
    pub fn io_stats(&self) -> IoStats {
        let mut io = self.shared.lock().io.clone();
        io.driver_kicks = self.shared.kicks.load(Ordering::Relaxed);
        io.driver_sleeps = self.shared.sleeps.load(Ordering::Relaxed);
        io
    }

    /// Live connections.
    pub fn connection_count(&self) -> usize {
        self.shared.lock().ep.connection_count()
    }

    /// Whether batched system calls are in use.
    pub fn batching(&self) -> bool {
        sys::batching()
    }

    /// Opens a connection to `remote` and waits for the handshake. Fails with
    /// [`Error::Unreachable`] when nothing answers (after the core's SYN retries) or
    /// [`Error::Reset`] when the peer refuses.
    pub async fn connect(&self, remote: SocketAddr) -> Result<Stream> {
        let h = {
            let mut st = self.shared.lock();
            if st.driver_gone {
                return Err(Error::EndpointClosed);
            }
            let h = st
                .ep
                .connect(sys::now_ns(), remote)
                .map_err(|_| Error::TooManyConnections)?;
            st.slots.insert(h, Slot::default());
            h
        };
        self.shared.wake();
        let stream = Stream::new(self.shared.clone(), self._guard.clone(), h, remote);
        std::future::poll_fn(|cx| {
            let mut st = self.shared.lock();
            if st.driver_gone {
                return Poll::Ready(Err(Error::EndpointClosed));
            }
            let Some(s) = st.slots.get_mut(&h) else {
                return Poll::Ready(Err(Error::EndpointClosed));
            };
            if let Some(r) = s.closed {
                return Poll::Ready(Err(Error::from_close(r).unwrap_or(Error::Reset)));
            }
            if s.connected {
                return Poll::Ready(Ok(()));
            }
            s.connect = Some(cx.waker().clone());
            Poll::Pending
        })
        .await?;
        Ok(stream)
    }

    /// [`Endpoint::connect`] bounded by `limit`; on expiry the attempt is aborted.
    pub async fn connect_timeout(&self, remote: SocketAddr, limit: Duration) -> Result<Stream> {
        match tokio::time::timeout(limit, self.connect(remote)).await {
            Ok(r) => r,
            Err(_) => Err(Error::ConnectTimeout(limit)),
        }
    }

    /// Waits for the next incoming connection.
    pub async fn accept(&self) -> Result<Stream> {
        let (h, remote) = std::future::poll_fn(|cx| {
            let mut st = self.shared.lock();
            if st.driver_gone {
                return Poll::Ready(Err(Error::EndpointClosed));
            }
            if let Some(h) = st.accept_q.pop_front() {
                let remote = st
                    .ep
                    .remote(h)
                    .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
                return Poll::Ready(Ok((h, remote)));
            }
            if !st.accept_wakers.iter().any(|w| w.will_wake(cx.waker())) {
                st.accept_wakers.push(cx.waker().clone());
            }
            Poll::Pending
        })
        .await?;
        Ok(Stream::new(
            self.shared.clone(),
            self._guard.clone(),
            h,
            remote,
        ))
    }

    /// Waits until no connection is left (every one closed and lingered) or `limit` passes;
    /// returns whether the endpoint became idle.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        let end = tokio::time::Instant::now() + limit;
        loop {
            if self.connection_count() == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local", &self.shared.info.local)
            .finish()
    }
}

/// One connection: a reliable, ordered byte stream each way. Implements tokio's
/// [`AsyncRead`] and [`AsyncWrite`]. `poll_shutdown` sends FIN after the buffered bytes and
/// completes once every written byte is acknowledged. Dropping a stream closes it gracefully
/// (FIN) and discards whatever the peer still sends; use [`Stream::abort`] to reset it.
pub struct Stream {
    shared: Arc<Shared>,
    _guard: Arc<HandleGuard>,
    h: ConnHandle,
    remote: SocketAddr,
    shut: bool,
    /// A pending inline receive (see [`EndpointConfig::inline_receive`]).
    rx_wait: Option<RxWait>,
    /// Inline receive failed on this stream (no usable reactor): the driver receives.
    rx_off: bool,
    /// The last call that moved data was a read.
    last_read: bool,
    /// Reads and writes alternate (request/response): an inline receive holds the ACK back
    /// for the response ([`ACK_HOLD_NS`]).
    exchange: bool,
}

/// A reader's wait for the socket (see [`rx_wait`]).
type RxWait = Pin<Box<dyn std::future::Future<Output = RxOutcome> + Send + Sync>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxOutcome {
    /// The reader received a batch and handed it to the core.
    Received,
    /// The driver was receiving: it wakes the reader if anything arrived for it.
    Busy,
    /// The reactor failed; the driver receives for this stream from now on.
    Failed,
}

/// Counts a reader waiting on the reactor for as long as it lives.
struct Waiting(Arc<Shared>);
impl Waiting {
    fn new(s: &Arc<Shared>) -> Self {
        s.rx_waiters.fetch_add(1, Ordering::SeqCst);
        Waiting(s.clone())
    }
}
impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.rx_waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until the socket is readable, then receives one batch on the caller's thread. Uses
/// the readiness future (not `poll_read_ready`), so any number of readers may wait at once
/// and each is woken.
fn rx_wait(shared: Arc<Shared>, me: ConnHandle) -> RxWait {
    Box::pin(async move {
        let Some(afd) = shared.reactor() else {
            return RxOutcome::Failed;
        };
        let _waiting = Waiting::new(&shared);
        loop {
            let Ok(mut g) = afd.readable().await else {
                return RxOutcome::Failed;
            };
            let Ok(mut rx) = shared.rx.try_lock() else {
                return RxOutcome::Busy;
            };
            match shared.receive(&mut rx, Some(me)) {
                Ok(n) => {
                    if n < rx.slots() {
                        // A short batch emptied the queue: forget this readiness now instead of
                        // learning it from one more (empty) receive call before the next wait.
                        // The reactor keeps any readiness reported since it gave us `g`.
                        g.clear_ready();
                    }
                    return RxOutcome::Received;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => g.clear_ready(),
                Err(_) => {} // an ICMP error reported on the socket: look again
            }
        }
    })
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.h.0)
            .field("remote", &self.remote)
            .finish()
    }
}

impl Stream {
    fn new(
        shared: Arc<Shared>,
        guard: Arc<HandleGuard>,
        h: ConnHandle,
        remote: SocketAddr,
    ) -> Self {
        // Datagrams no larger than the route to the peer carries: a payload configured for
        // jumbo frames (or loopback) is lowered for a peer behind a smaller MTU instead of
        // being fragmented by IP. Before any DATA is sent (a stream is made at the handshake).
        if let Some(fit) = route_payload(remote) {
            shared.lock().ep.limit_payload(h, fit);
        }
        Stream {
            shared,
            _guard: guard,
            h,
            remote,
            shut: false,
            rx_wait: None,
            rx_off: false,
            last_read: false,
            exchange: false,
        }
    }

    /// Called when a read found nothing (the read waker is in the slot): receives inline if
    /// the socket has something (true: look again) or leaves the reader waiting on the
    /// reactor (false: pending). A finished inline receive sends what the core now has to send
    /// (ACKs) from this thread when the driver holds nothing unsent, and wakes the driver only
    /// for what is left or for an earlier deadline.
    fn receive_inline(&mut self, cx: &mut Context<'_>) -> bool {
        // Only streams whose reads and writes alternate: a bulk receiver's batches stay with
        // the driver, whose receive loop and GRO batches keep its reader's thread free (inline
        // receive there measured slower: `bench/ab.py` bulk, par4 and demo, docs/results.md).
        if self.rx_off || !self.shared.inline_rx || !self.exchange {
            return false;
        }
        let w = self
            .rx_wait
            .get_or_insert_with(|| rx_wait(self.shared.clone(), self.h));
        let out = match w.as_mut().poll(cx) {
            Poll::Pending => return false,
            Poll::Ready(o) => o,
        };
        self.rx_wait = None;
        match out {
            RxOutcome::Received => {
                let mode = if self.exchange { Tx::Hold } else { Tx::Keep };
                settle(&self.shared, self.shared.lock(), mode);
                true
            }
            RxOutcome::Busy => false,
            RxOutcome::Failed => {
                self.rx_off = true;
                false
            }
        }
    }

    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote
    }

    /// The local connection identifier.
    pub fn id(&self) -> u32 {
        self.h.0
    }

    /// The connection's counters (the last snapshot once it is gone).
    pub fn stats(&self) -> Option<ConnStats> {
        let mut st = self.shared.lock();
        if let Some(c) = st.ep.conn(self.h) {
            let s = c.stats().clone();
            if let Some(slot) = st.slots.get_mut(&self.h) {
                slot.last_stats = Some(Box::new(s.clone()));
            }
            return Some(s);
        }
        st.slots
            .get(&self.h)
            .and_then(|s| s.last_stats.as_deref().cloned())
    }

    /// Bytes written but not yet acknowledged by the peer (0 once the connection is gone).
    pub fn unacked(&self) -> usize {
        self.shared
            .lock()
            .ep
            .conn(self.h)
            .map_or(0, |c| c.unacked())
    }

    /// How the connection ended, if it did.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.lock().slots.get(&self.h).and_then(|s| s.closed)
    }

    /// Resets the connection (RST); unread data is discarded.
    pub fn abort(&mut self) {
        {
            let mut st = self.shared.lock();
            let _ = st.ep.abort(self.h);
            st.dispatch();
        }
        self.shared.wake();
    }

    /// Queues `data` without copying it (the send buffer keeps a reference until the peer
    /// acknowledges the bytes, and the driver passes them to the kernel from there); returns
    /// how many of its bytes (a prefix) were taken. The zero-copy counterpart of `poll_write`.
    pub fn poll_write_bytes(
        &mut self,
        cx: &mut Context<'_>,
        data: &Bytes,
    ) -> Poll<std::io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.note_write();
        let mut st = self.shared.lock();
        if let Some(e) = self.write_refused(&st) {
            return Poll::Ready(Err(e));
        }
        let r = st.ep.write_bytes(self.h, data);
        self.after_write(st, cx, r)
    }

    /// Writes all of `data` without copying it (see [`Stream::poll_write_bytes`]).
    pub async fn write_chunk(&mut self, mut data: Bytes) -> std::io::Result<()> {
        while !data.is_empty() {
            let n = std::future::poll_fn(|cx| self.poll_write_bytes(cx, &data)).await?;
            let _ = data.split_to(n);
        }
        Ok(())
    }

    /// Takes up to `max` received bytes without copying them: `Ok(None)` at the end of the
    /// stream. The zero-copy counterpart of `poll_read`.
    pub fn poll_read_chunk(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<std::io::Result<Option<Bytes>>> {
        let mut out = Vec::with_capacity(1);
        match self.poll_take_chunks(cx, &mut out, max, 1) {
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(out.pop())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Appends to `out` every received chunk available now, up to `max` bytes in all, under
    /// one lock (no copy); returns the bytes taken, 0 at the end of the stream.
    pub fn poll_read_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
    ) -> Poll<std::io::Result<usize>> {
        self.poll_take_chunks(cx, out, max, usize::MAX)
    }

    fn poll_take_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
        most: usize,
    ) -> Poll<std::io::Result<usize>> {
        loop {
            match self.try_take_chunks(cx, out, max, most) {
                Poll::Pending if self.receive_inline(cx) => continue,
                Poll::Pending => return Poll::Pending,
                r => {
                    self.rx_wait = None;
                    return r;
                }
            }
        }
    }

    fn try_take_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
        most: usize,
    ) -> Poll<std::io::Result<usize>> {
        let mut st = self.shared.lock();
        let taken = st.ep.read_chunks(self.h, max, most, out).unwrap_or(0);
        if taken > 0 {
            // A read may reopen the window (a window update to send): sent from here, and
            // the driver is woken only when something is left for it.
            settle(&self.shared, st, Tx::Keep);
            self.read_done();
            return Poll::Ready(Ok(taken));
        }
        if let Some(e) = Stream::closed_error(&st, self.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if st.ep.is_eof(self.h) {
            return Poll::Ready(Ok(0));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        if let Some(s) = st.slots.get_mut(&self.h) {
            s.read = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Reads up to `max` bytes without copying them; `Ok(None)` at the end of the stream.
    pub async fn read_chunk(&mut self, max: usize) -> std::io::Result<Option<Bytes>> {
        std::future::poll_fn(|cx| self.poll_read_chunk(cx, max)).await
    }

    /// Appends every chunk available (at least one; up to `max` bytes) to `out` without
    /// copying; returns the bytes taken, 0 at the end of the stream.
    pub async fn read_chunks(
        &mut self,
        out: &mut Vec<Bytes>,
        max: usize,
    ) -> std::io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read_chunks(cx, out, max)).await
    }

    fn write_refused(&self, st: &State) -> Option<std::io::Error> {
        if let Some(e) = Stream::closed_error(st, self.h) {
            return Some(e.into_io());
        }
        if self.shut {
            return Some(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "write after shutdown",
            ));
        }
        if st.driver_gone {
            return Some(Error::EndpointClosed.into_io());
        }
        None
    }

    fn read_done(&mut self) {
        if self.last_read {
            // Two reads in a row: a receiving stream, whose ACKs must not wait.
            self.exchange = false;
        }
        self.last_read = true;
    }

    fn note_write(&mut self) {
        if self.last_read {
            self.exchange = true;
        }
        self.last_read = false;
    }

    fn after_write(
        &self,
        mut st: MutexGuard<'_, State>,
        cx: &mut Context<'_>,
        r: std::result::Result<usize, stride_proto::EndpointError>,
    ) -> Poll<std::io::Result<usize>> {
        match r {
            Ok(n) if n > 0 => {
                if n <= DIRECT_MAX_BYTES {
                    settle(&self.shared, st, Tx::Now);
                } else {
                    st.hold_until = None;
                    st.dispatch();
                    drop(st);
                    self.shared.wake();
                }
                Poll::Ready(Ok(n))
            }
            Ok(_) => {
                if let Some(s) = st.slots.get_mut(&self.h) {
                    s.write = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Err(_) => Poll::Ready(Err(Stream::closed_error(&st, self.h)
                .unwrap_or(Error::Reset)
                .into_io())),
        }
    }

    fn closed_error(st: &State, h: ConnHandle) -> Option<Error> {
        match st.slots.get(&h) {
            Some(s) => s.closed.and_then(Error::from_close),
            None => Some(Error::EndpointClosed),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.try_read(cx, buf) {
                Poll::Pending if this.receive_inline(cx) => continue,
                Poll::Pending => return Poll::Pending,
                r => {
                    this.rx_wait = None;
                    return r;
                }
            }
        }
    }
}

impl Stream {
    fn try_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self;
        let mut st = this.shared.lock();
        let dst = buf.initialize_unfilled();
        let n = st.ep.read(this.h, dst).unwrap_or(0);
        if n > 0 {
            buf.advance(n);
            settle(&this.shared, st, Tx::Keep);
            this.read_done();
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if st.ep.is_eof(this.h) {
            return Poll::Ready(Ok(()));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        if let Some(s) = st.slots.get_mut(&this.h) {
            s.read = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        this.note_write();
        let mut st = this.shared.lock();
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if this.shut {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "write after shutdown",
            )));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        let data = &data[..data.len().min(WRITE_SLICE)];
        let r = st.ep.write(this.h, data);
        this.after_write(st, cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let mut st = this.shared.lock();
        if !this.shut {
            this.shut = true;
            let _ = st.ep.close(this.h);
            st.dispatch();
            this.shared.wake();
        }
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        let done = st.ep.conn(this.h).is_none_or(|c| c.unacked() == 0);
        if done {
            return Poll::Ready(Ok(()));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        let h = this.h;
        if let Some(s) = st.slots.get_mut(&h) {
            s.write = Some(cx.waker().clone());
            if !s.shutdown_wait {
                s.shutdown_wait = true;
                st.shutdown_waiters.push(h);
            }
        }
        Poll::Pending
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        let h = self.h;
        let _ = st.ep.close(h);
        let mut sink = [0u8; 4096];
        while matches!(st.ep.read(h, &mut sink), Ok(n) if n > 0) {}
        st.dispatch();
        let gone = match st.slots.get_mut(&h) {
            Some(s) => {
                s.detached = true;
                s.closed.is_some() || st.ep.conn(h).is_none()
            }
            None => false,
        };
        if gone {
            st.slots.remove(&h);
        }
        drop(st);
        self.shared.wake();
    }
}

/// After an application call changed the core: sends what may leave now from the calling
/// thread ([`send_direct`], only while the driver holds nothing unsent), then wakes the driver
/// only when it must act before its own timeout: datagrams are left to send, or the core's
/// earliest deadline (an RTO, a pacing slot, a delayed ACK) is earlier. The core's ready queue
/// counts every touched connection, so walking it here (cheap when nothing is due) is also what
/// tells "nothing to send" from "something to send".
///
/// `mode`: [`Tx::Now`] sends (and ends a hold), [`Tx::Keep`] sends unless a hold is on,
/// [`Tx::Hold`] holds the due ACKs for [`ACK_HOLD_NS`] (the whole endpoint's transmissions
/// when one connection is open; the driver then sends at its end).
fn settle(shared: &Shared, mut st: MutexGuard<'_, State>, mode: Tx) {
    // The clock is read only when something needs it (a hold to check or start, a datagram
    // to send): a read after which nothing is due reads none.
    let mut clock = None;
    let mut now = || *clock.get_or_insert_with(sys::now_ns);
    match mode {
        Tx::Now => st.hold_until = None,
        Tx::Keep => {
            if st.hold_until.is_some_and(|t| now() >= t) {
                st.hold_until = None;
            }
        }
        Tx::Hold => {
            // On an endpoint with this one open connection the driver holds every
            // transmission (no other connection's data can wait behind it, and the hold's
            // end need not wake a sleeping driver, see HOLD_LATE_NS). Connections lingering
            // after a close have no data (a re-acknowledged FIN may wait the hold's 50 µs),
            // so they do not count; the walk that tells them apart is bounded by
            // HOLD_MAX_CONNECTIONS. With other connections open, the core holds the due
            // pure ACKs alone (of every connection the batch brought a request for: the
            // reader receives for the whole socket), not their DATA. Their timers are
            // HOLD_LATE_NS past the hold's end, as the endpoint-wide hold's: a deadline at the
            // hold's end woke the sleeping driver for nearly every exchange (1.4 eventfd
            // writes per exchange, round trips twice as long, on a server that also held a
            // connection whose client had left without closing).
            // Either way only when the core holds an ACK: one it may not hold (after the
            // peer's FIN, a NACK, a CNP) leaves now, and so does everything with it.
            if st.hold_until.is_none() && st.ep.has_pending_transmit() {
                let end = now() + ACK_HOLD_NS;
                if st.ep.hold_acks(end, end + HOLD_LATE_NS) > 0
                    && st.ep.connection_count() <= HOLD_MAX_CONNECTIONS
                    && st.ep.open_connection_count() == 1
                {
                    st.hold_until = Some(end);
                }
            }
        }
    }
    if let Some(t) = st.hold_until {
        st.dispatch();
        // The hold's end wakes the driver only when it would otherwise sleep more than
        // HOLD_LATE_NS past it; the core's own timers still wake it on time.
        let late = t.saturating_add(HOLD_LATE_NS);
        let deadline = st.ep.next_timer().map_or(late, |d| d.min(late));
        drop(st);
        shared.wake_for(false, Some(deadline));
        return;
    }
    if st.ep.has_pending_transmit() && !st.tx_inflight {
        send_direct(&mut st, shared.sock_fd, now());
    }
    st.dispatch();
    let pending = st.ep.has_pending_transmit() || st.tx_inflight;
    let deadline = st.ep.poll_timeout();
    drop(st);
    shared.wake_for(pending, deadline);
}

/// What [`settle`] does with the core's datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tx {
    Now,
    Keep,
    /// Hold the ACKs of the requests just received for their responses.
    Hold,
}

/// Sends, from the calling application thread, the few datagrams the core lets leave now, so a
/// small write does not wait for the driver thread to wake (one thread wake-up less on a
/// request/response path). Only while the driver holds no unsent datagrams, so nothing is
/// reordered; a datagram the kernel refuses (buffer full) goes to `spill` for the driver.
fn send_direct(st: &mut State, fd: RawFd, now: u64) {
    let State {
        ep,
        direct_bufs,
        room,
        io,
        spill,
        tx_inflight,
        ..
    } = st;
    let room = *room;
    let mut took: [Option<(SocketAddr, usize)>; DIRECT_MAX_DATAGRAMS] =
        [None; DIRECT_MAX_DATAGRAMS];
    let mut n = 0;
    // One clock read for the call (the caller's): its datagrams leave in one system call (as
    // the driver's batches do).
    for (b, t) in direct_bufs.chunks_exact_mut(room).zip(took.iter_mut()) {
        let Some(x) = ep.poll_transmit(now, b) else {
            break;
        };
        *t = Some((x.remote, x.len));
        n += 1;
    }
    if n == 0 {
        return;
    }
    // One call for all of them, so a peer woken by the first finds the rest (an ACK and the
    // response that follows it) already queued.
    let mut msgs: [(SocketAddr, &[u8]); DIRECT_MAX_DATAGRAMS] =
        [(SocketAddr::from(([0, 0, 0, 0], 0)), &[]); DIRECT_MAX_DATAGRAMS];
    for i in 0..n {
        let (to, len) = took[i].expect("taken");
        msgs[i] = (to, &direct_bufs[i * room..i * room + len]);
    }
    let sent = match sys::send_many(fd, &msgs[..n]) {
        Ok(k) => {
            io.tx_calls += 1;
            io.datagrams_out += k as u64;
            io.direct_sends += k as u64;
            io.direct_calls += 1;
            k
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            0
        }
        Err(_) => {
            // Dropped like any datagram the network loses; the core repairs it.
            io.send_errors += n as u64;
            n
        }
    };
    if sent < n {
        // The socket buffer is full: the driver sends the rest first.
        for (to, d) in &msgs[sent..n] {
            spill.push((*to, d.to_vec()));
        }
        *tx_inflight = true;
    }
}

/// The driver thread. See the module documentation.
fn drive(
    shared: Arc<Shared>,
    sock: std::net::UdpSocket,
    handles: std::sync::Weak<HandleGuard>,
    spin_ns: u64,
) {
    // SAFETY: changes only this thread's timer slack (1 µs), so short ppoll waits are precise.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let fd = sock.as_raw_fd();
    let efd = shared.efd;
    let mut tx = TxBatch::with_room(shared.lock().room);
    let mut need_writable = false;
    loop {
        // 1. Receive what is queued (a few batches at most, so sending is not starved), unless
        // a reader is receiving right now.
        let mut got_any = false;
        for _ in 0..4 {
            let Ok(mut rx) = shared.rx.try_lock() else {
                break;
            };
            match shared.receive(&mut rx, None) {
                Ok(n) => {
                    got_any = true;
                    if n < rx.slots() {
                        break;
                    }
                }
                Err(_) => break, // WouldBlock, or an ICMP error reported on the socket
            }
        }
        // 2. Timers and transmissions. Whatever the application changed before this point is
        // seen under the lock below; a later change sets `notified` again.
        shared.notified.store(false, Ordering::SeqCst);
        let deadline;
        let exit;
        let conns;
        {
            let mut st = shared.lock();
            let now = sys::now_ns();
            st.ep.handle_timeout(now);
            let held = match st.hold_until {
                Some(t) if now < t => Some(t),
                _ => {
                    st.hold_until = None;
                    None
                }
            };
            if tx.is_empty() && held.is_none() {
                for (to, d) in std::mem::take(&mut st.spill) {
                    tx.push(to, &d);
                }
                // One clock read per batch: the batch leaves in one system call, so its
                // datagrams share a departure time (a read per datagram was 3.6 % of a bulk
                // sender's samples on a VM whose clock reads cost ~45 ns).
                while !tx.is_full() {
                    // Payloads stay in the send buffer: the kernel reads them from there.
                    let (buf, parts) = tx.next_slot();
                    match st.ep.poll_transmit_parts(now, buf, parts) {
                        Some(t) => tx.commit(t.remote, t.len),
                        None => break,
                    }
                }
            }
            st.tx_inflight = !tx.is_empty();
            st.dispatch();
            st.check_shutdowns();
            deadline = match held {
                Some(t) => Some(st.ep.next_timer().map_or(t, |d| d.min(t))),
                None => st.ep.poll_timeout(),
            };
            conns = st.ep.connection_count();
            exit = handles.strong_count() == 0 && st.ep.connection_count() == 0;
            if exit {
                st.driver_gone = true;
            }
        }
        if exit && tx.is_empty() {
            return;
        }
        // 3. Send.
        let mut sent_full = false;
        if !tx.is_empty() {
            let queued = tx.len();
            match tx.send(fd) {
                Ok(n) => {
                    let mut st = shared.lock();
                    st.tx_inflight = !tx.is_empty() || !st.spill.is_empty();
                    st.io.tx_calls += 1;
                    st.io.datagrams_out += n as u64;
                    need_writable = false;
                    sent_full = n == queued && queued == sys::BATCH;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => need_writable = true,
                Err(_) => shared.lock().io.send_errors += 1,
            }
        }
        if got_any || sent_full || (!tx.is_empty() && !need_writable) {
            continue;
        }
        // 4. Wait for a datagram, an application wake-up or the next deadline.
        let now = sys::now_ns();
        let readers = shared.rx_waiters.load(Ordering::SeqCst) > 0;
        let cap = if readers {
            READER_WAIT_NS
        } else if conns > 0 {
            CONN_WAIT_NS
        } else {
            MAX_WAIT_NS
        };
        let wait = match deadline {
            Some(t) => t.saturating_sub(now).min(cap),
            None => cap,
        };
        if wait == 0 {
            continue;
        }
        if wait < spin_ns {
            // Shorter than a sleep-and-wake costs on a busy machine: give the core away once
            // and look again.
            std::thread::yield_now();
            continue;
        }
        // When the deadline is near, arrivals wait for it instead of waking the thread once
        // more: at low rates that halves the wake-ups (one per packet instead of one for the
        // pacer and one for the ACK). Their kernel timestamps keep the STT samples exact.
        // Waiting readers receive arrivals themselves (the reactor wakes them): a driver woken
        // too would only contend for the same datagrams.
        let rx_events = if wait <= RX_DEFER_NS || readers {
            0
        } else {
            libc::POLLIN
        };
        let mut fds = [
            libc::pollfd {
                fd,
                events: rx_events | if need_writable { libc::POLLOUT } else { 0 },
                revents: 0,
            },
            libc::pollfd {
                fd: efd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        shared.sleep_until.store(now + wait, Ordering::SeqCst);
        shared.sleeping.store(true, Ordering::SeqCst);
        if shared.notified.load(Ordering::SeqCst) {
            shared.sleeping.store(false, Ordering::SeqCst);
            continue;
        }
        shared.sleeps.fetch_add(1, Ordering::Relaxed);
        // SAFETY: two live pollfds.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        shared.sleeping.store(false, Ordering::SeqCst);
        if fds[1].revents & libc::POLLIN != 0 {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into a live u64 (resets the eventfd counter).
            unsafe { libc::read(efd, &mut v as *mut u64 as *mut libc::c_void, 8) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_limit_follows_memory() {
        // 1 GiB available: half of it at 160 KiB per connection.
        assert_eq!(connection_limit(65_536, Some(1 << 30)), 3276);
        assert_eq!(connection_limit(1_000, Some(1 << 30)), 1_000);
        assert_eq!(connection_limit(65_536, Some(0)), 64);
        assert_eq!(connection_limit(65_536, None), 65_536);
    }

    #[test]
    fn the_socket_buffer_bounds_share_and_window() {
        let c = host_config(10_000_000_000);
        // The default 16 MiB request, granted doubled: the profile's values stand.
        assert_eq!(
            fit_to_socket(32 << 20, c.rx_share, c.recv_buffer),
            (HOST_RX_SHARE, c.recv_buffer)
        );
        // 256 KiB granted doubled: a quarter for the share, an eighth (at least 64 KiB) each.
        assert_eq!(
            fit_to_socket(512 << 10, c.rx_share, c.recv_buffer),
            (128 << 10, 64 << 10)
        );
        // Off stays off; an unreported buffer keeps the configuration.
        assert_eq!(fit_to_socket(512 << 10, 0, 1 << 20), (0, 64 << 10));
        assert_eq!(fit_to_socket(0, 7, 9), (7, 9));
    }

    #[test]
    fn the_host_profile_holds_nacks_below_t_high() {
        use stride_proto::cc::Controller;
        // A NACK after a sample 100 us above the minimum (past the host's t_low, below its
        // t_high): random loss on a noisy host, not congestion, so the rate stays.
        let cfg = host_config(1_000_000_000);
        let p = *cfg
            .cc
            .params_ref::<stride_proto::cc::StrideParams>()
            .unwrap();
        let mut c = stride_proto::cc::Stride::new(p);
        c.on_sample(1_000_000);
        c.on_sample(1_100_000);
        let r = c.rate();
        c.nack();
        assert_eq!(c.rate(), r);
        // The core's default (NIC stamps) cuts there.
        let core = stride_proto::Config::for_line_rate_gbps(1.0);
        let mut q = *core
            .cc
            .params_ref::<stride_proto::cc::StrideParams>()
            .unwrap();
        (q.t_low, q.t_high) = (p.t_low, p.t_high);
        let mut c = stride_proto::cc::Stride::new(q);
        c.on_sample(1_000_000);
        c.on_sample(1_100_000);
        let r = c.rate();
        c.nack();
        assert!(c.rate() < r);
    }
}
