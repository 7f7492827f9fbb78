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
//!
//! # Layout
//!
//! This module holds [`Endpoint`], its options and counters; `profile` the host profile
//! ([`host_config`]), `socket` the socket's setup ([`SocketInfo`]), `shared` the state the
//! driver and the handles share, `stream` the stream API ([`Stream`]), `direct` the sends from
//! application threads and `driver` the driver thread.

mod direct;
mod driver;
mod profile;
mod shared;
mod socket;
mod stream;

pub use profile::{
    host_config, HOST_ACK_RIDE_NS, HOST_BURST_BYTES, HOST_BURST_NS, HOST_COMPETE_AFTER_NS,
    HOST_COMPETE_AI, HOST_COMPETE_HOLD_NS, HOST_COMPETE_MD, HOST_DELAYED_ACK_NS,
    HOST_FIRST_WINDOW_PACKETS, HOST_MIN_RTO_NS, HOST_NORM_SHIFT, HOST_PACING_QUANTUM_NS,
    HOST_RX_SHARE, HOST_SEND_BATCH_BYTES, HOST_T_HIGH_NS, HOST_T_LOW_NS,
};
pub use socket::{connection_limit, max_payload_for_mtu, SocketInfo, CONN_MEMORY_BUDGET};
pub(crate) use socket::{open_socket, refit_payloads, route_payload};
pub use stream::Stream;

use crate::error::{Error, Result};
use crate::sys::{self, RxBatch};
use shared::{HandleGuard, Shared, Slot, State};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

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
/// Longest sleep of a driver that has connections while the endpoint is busy (see
/// [`IDLE_AFTER_NS`]). Below the host's 10 ms RTO floor, so a write that arms a retransmission
/// timer finds the driver waking before it anyway and need not wake it (one eventfd write and
/// one driver wake-up less per request on a request/response path).
pub const CONN_WAIT_NS: u64 = 5_000_000;
/// An endpoint that has received and sent nothing for this long is idle: its driver sleeps
/// until the core's next timer (a keepalive, an idle timeout, a linger's end), at most
/// [`IDLE_WAIT_NS`], and watches the socket itself even while readers wait. The short caps
/// above ([`CONN_WAIT_NS`], [`READER_WAIT_NS`], [`MAX_WAIT_NS`]) held for idle connections
/// cost 200 to 1000 driver wake-ups a second each endpoint; an application call that needs the
/// driver sooner wakes it (`Shared::wake_for`), as it does a driver sleeping to a timer.
pub const IDLE_AFTER_NS: u64 = 100_000_000;
/// Longest sleep of an idle driver ([`IDLE_AFTER_NS`]): one look a second at most beyond the
/// core's timers. Every change the driver must see wakes it, so this is a safety net only.
pub const IDLE_WAIT_NS: u64 = 1_000_000_000;
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
    /// Sends refused as larger than the route's MTU (`EMSGSIZE`: an ICMP message lowered the
    /// path MTU; nothing is fragmented, see [`crate::sys::set_no_fragment`]), counted in
    /// `send_errors` too; each lowered the connections' payloads to their routes' MTU.
    pub too_big: u64,
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
    /// The DSCP of every datagram the socket sends (data, ACKs, handshakes), next to the
    /// ECT(0) ECN bits: the TOS byte / IPv6 traffic class is `dscp << 2 | 2`. Default 0, best
    /// effort. Give STRIDE a codepoint that the switches (or a host qdisc) serve in a queue of
    /// its own, away from loss-based TCP (docs/spec.md, "A traffic class of its own"). Binding
    /// fails when the kernel refuses a codepoint other than 0.
    pub dscp: crate::Dscp,
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
            dscp: crate::Dscp::DEFAULT,
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
            .spawn(move || driver::drive(s2, udp, weak, spin_ns))?;
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

    /// Resets (RST) every open connection the application holds or has yet to accept, unread
    /// data discarded, and returns how many: for an application that stops at once (on a
    /// signal) and whose peers must learn it now rather than at their idle timeout. The RSTs
    /// leave with the driver's next turn ([`Endpoint::wait_idle`] waits for it).
    pub fn abort_all(&self) -> usize {
        let n = {
            let mut st = self.shared.lock();
            let open: Vec<_> = st
                .slots
                .keys()
                .copied()
                .filter(|&h| st.ep.conn(h).is_some_and(|c| !c.is_closed()))
                .collect();
            for &h in &open {
                let _ = st.ep.abort(h);
            }
            st.dispatch();
            open.len()
        };
        self.shared.wake();
        n
    }

    /// Waits until no connection is left (every one closed and lingered) and nothing is left
    /// to send (a last RST or FIN is in the kernel), or `limit` passes; returns whether the
    /// endpoint became idle.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        let end = tokio::time::Instant::now() + limit;
        loop {
            let idle = {
                let st = self.shared.lock();
                st.ep.connection_count() == 0 && !st.tx_inflight && !st.ep.has_pending_transmit()
            };
            if idle {
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
