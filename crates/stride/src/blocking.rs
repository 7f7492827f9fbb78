//! STRIDE driven by the calling thread: no tokio, no driver thread, no lock.
//!
//! A [`blocking::Endpoint`](Endpoint) owns one UDP socket and the protocol core. Each call
//! (`connect`, `accept`, `read`, `write`, `drive`) runs the core on the caller's thread: it
//! sends what the core lets leave, waits on the socket in a blocking receive for at most the
//! core's next deadline (or the call's), hands what arrives to the core and runs its timers. A
//! request/response exchange therefore costs what it costs over a plain blocking UDP socket
//! (one send and one receive call per side) plus the protocol's own work: no reactor wake-up,
//! no thread hand-off. [`crate::Endpoint`] (async, one driver thread per socket) remains the
//! endpoint for bulk transfers, many connections and tokio programs; both speak the same
//! protocol and talk to each other.
//!
//! The cost of owning the core: **the protocol only runs inside a call.** Retransmissions,
//! paced sends and ACKs wait while the program does something else, so call [`Endpoint::drive`]
//! (or a read) when idle, or [`Endpoint::flush`] to wait until the peer has every byte. A
//! bulk writer (more than an ACK interval unacknowledged) also takes its ACKs on every write. Timers
//! are kept exactly: a wait shorter than [`SPIN_NS`](crate::endpoint::SPIN_NS) is spun, a
//! longer one is slept in the receive call itself (`SO_RCVTIMEO`, changed only when the wait's
//! power-of-two bucket changes, so a steady exchange makes no extra system calls).
//!
//! ACKs ride on responses as in the async endpoint: after a read that delivered bytes on a
//! connection that has written before (a request/response exchange), the pure ACKs the core
//! owes are held for [`ACK_HOLD_NS`]; the response, written
//! meanwhile, carries them. One datagram each way per exchange.
//!
//! ```no_run
//! use std::io::{Read, Write};
//! let mut c = stride::blocking::Connection::connect(
//!     "127.0.0.1:7100".parse().unwrap(),
//!     std::time::Duration::from_secs(3),
//! )?;
//! c.write_all(b"ping")?;
//! let mut resp = [0u8; 4];
//! c.read_exact(&mut resp)?;
//! c.close(std::time::Duration::from_secs(1))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::endpoint::{
    open_socket, route_payload, EndpointConfig, IoStats, SocketInfo, ACK_HOLD_NS,
};
use crate::error::{Error, Result};
use crate::sys::{self, RxBatch, TxBatch};
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasherDefault;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;
use stride_proto::endpoint::CidHasher;
use stride_proto::{CloseReason, ConnHandle, ConnStats, Event, State};

/// A set of connections hashed as the core hashes them (one multiply, not SipHash).
type ConnSet = HashSet<ConnHandle, BuildHasherDefault<CidHasher>>;

/// A STRIDE endpoint on one UDP socket, driven by its owner's calls. See the module notes.
pub struct Endpoint {
    sock: UdpSocket,
    fd: RawFd,
    core: stride_proto::Endpoint,
    info: SocketInfo,
    rx: RxBatch,
    tx: TxBatch,
    spin_ns: u64,
    /// The socket's receive timeout now (ns; 0: none, the receive waits for ever).
    rcv_timeout: u64,
    accepted: VecDeque<ConnHandle>,
    connected: ConnSet,
    closed: HashMap<ConnHandle, CloseReason, BuildHasherDefault<CidHasher>>,
    /// Connections the application has written to (their ACKs are held for responses).
    written: ConnSet,
    /// Connections with bytes delivered since the last receive.
    readable: Vec<ConnHandle>,
    /// Connections the application closed that the core still keeps (lingering): their end
    /// is not recorded in `closed`.
    forgotten: ConnSet,
    io: IoStats,
}

/// One connection of a [`Endpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnId(ConnHandle);

impl Endpoint {
    /// Binds `addr` with default options, accepting incoming connections.
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

    /// Binds `addr` with `opts` (the same options as the async endpoint's;
    /// `inline_receive` and `read_delay_slack_ns` have no meaning here: the caller always
    /// receives itself).
    pub fn bind_with(addr: SocketAddr, opts: EndpointConfig) -> Result<Endpoint> {
        let (sock, info, proto) = open_socket(addr, &opts)?;
        sock.set_nonblocking(false)?;
        let fd = sock.as_raw_fd();
        let room = sys::datagram_room(usize::from(proto.max_payload));
        let secret = sys::random16()?;
        let seed = u64::from_le_bytes(sys::random16()?[..8].try_into().expect("8"));
        let mut core = stride_proto::Endpoint::new(proto, secret, seed);
        core.listen(opts.listen);
        Ok(Endpoint {
            sock,
            fd,
            core,
            rx: if info.gro {
                RxBatch::for_gro()
            } else {
                RxBatch::with_room(sys::GRO_ROOM)
            },
            info,
            tx: TxBatch::with_room(room),
            spin_ns: opts.spin_ns,
            rcv_timeout: 0,
            accepted: VecDeque::new(),
            connected: ConnSet::default(),
            closed: HashMap::default(),
            written: ConnSet::default(),
            readable: Vec::new(),
            forgotten: ConnSet::default(),
            io: IoStats::default(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.info.local
    }

    /// Socket facts (granted buffer sizes, timestamps, GRO).
    pub fn socket_info(&self) -> SocketInfo {
        self.info.clone()
    }

    /// Protocol counters.
    pub fn stats(&self) -> stride_proto::EndpointStats {
        self.core.stats().clone()
    }

    /// Socket-level counters (system calls, datagrams, kernel stamps).
    pub fn io_stats(&self) -> IoStats {
        self.io.clone()
    }

    /// The protocol core, for what this type does not wrap (read-only).
    pub fn core(&self) -> &stride_proto::Endpoint {
        &self.core
    }

    /// Opens a connection to `remote` and waits for its handshake, at most `limit`.
    pub fn connect(&mut self, remote: SocketAddr, limit: Duration) -> Result<ConnId> {
        let deadline = deadline_after(limit);
        let h = self
            .core
            .connect(sys::now_ns(), remote)
            .map_err(|_| Error::TooManyConnections)?;
        loop {
            if self.connected.contains(&h) {
                self.fit_payload(h, remote);
                return Ok(ConnId(h));
            }
            if let Some(r) = self.closed.get(&h) {
                return Err(Error::from_close(*r).unwrap_or(Error::Reset));
            }
            if sys::now_ns() >= deadline {
                let _ = self.core.abort(h);
                self.flush_out()?;
                return Err(Error::ConnectTimeout(limit));
            }
            self.turn(Some(deadline))?;
        }
    }

    /// The next incoming connection, waiting at most `limit` (None: for ever); `Ok(None)` when
    /// none came in time.
    pub fn accept(&mut self, limit: Option<Duration>) -> Result<Option<ConnId>> {
        let deadline = limit.map(deadline_after);
        loop {
            if let Some(h) = self.accepted.pop_front() {
                if let Some(remote) = self.core.remote(h) {
                    self.fit_payload(h, remote);
                }
                return Ok(Some(ConnId(h)));
            }
            if deadline.is_some_and(|d| sys::now_ns() >= d) {
                return Ok(None);
            }
            self.turn(deadline)?;
        }
    }

    /// Reads delivered bytes into `buf`, waiting for them at most `limit` (None: for ever):
    /// `Ok(0)` at the end of the stream (or for an empty `buf`), a `TimedOut` error when nothing
    /// came in time, the connection's error when it ended otherwise.
    pub fn read(
        &mut self,
        c: ConnId,
        buf: &mut [u8],
        limit: Option<Duration>,
    ) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = limit.map(deadline_after);
        loop {
            let n = self.core.read(c.0, buf).map_err(|_| self.gone(c))?;
            if n > 0 {
                return Ok(n);
            }
            if self.core.is_eof(c.0) {
                return match self.close_error(c) {
                    Some(e) => Err(e.into_io()),
                    None => Ok(0),
                };
            }
            if deadline.is_some_and(|d| sys::now_ns() >= d) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "nothing to read in time",
                ));
            }
            self.turn(deadline).map_err(Error::into_io)?;
        }
    }

    /// Queues bytes of `data` for sending: as many as the send buffer takes, waiting at most
    /// `limit` (None: for ever) for room when it is full. Returns how many were queued (all of
    /// them when they fit; a `TimedOut` error when none did in time). What the core lets leave
    /// at once is sent before returning; the rest leaves during later calls.
    pub fn write(&mut self, c: ConnId, data: &[u8], limit: Option<Duration>) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let deadline = limit.map(deadline_after);
        self.written.insert(c.0);
        loop {
            if let Some(e) = self.close_error(c) {
                return Err(e.into_io());
            }
            let n = self.core.write(c.0, data).map_err(|_| self.gone(c))?;
            if n > 0 {
                self.flush_out().map_err(Error::into_io)?;
                // A bulk writer (more than an ACK interval unacknowledged) takes the ACKs and
                // NACKs already queued and runs the due timers on every write, not only when
                // the send buffer fills: its controller and loss repair then run on time.
                // A request/response writer skips this system call.
                let bulk = self
                    .core
                    .conn(c.0)
                    .is_some_and(|x| x.unacked() > self.core.config().ack_interval as usize);
                if bulk {
                    self.poll_now().map_err(Error::into_io)?;
                }
                return Ok(n);
            }
            if deadline.is_some_and(|d| sys::now_ns() >= d) {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no send room in time",
                ));
            }
            self.turn(deadline).map_err(Error::into_io)?;
        }
    }

    /// Queues all of `data` (see [`Endpoint::write`]).
    pub fn write_all(&mut self, c: ConnId, data: &[u8], limit: Option<Duration>) -> io::Result<()> {
        let deadline = limit.map(deadline_after);
        let mut off = 0;
        while off < data.len() {
            let left = deadline.map(|d| Duration::from_nanos(d.saturating_sub(sys::now_ns())));
            off += self.write(c, &data[off..], left)?;
        }
        Ok(())
    }

    /// Runs the protocol until every byte written on `c` is acknowledged, at most `limit`;
    /// false when time ran out (or the connection ended first with bytes unacknowledged).
    pub fn flush(&mut self, c: ConnId, limit: Duration) -> Result<bool> {
        let deadline = deadline_after(limit);
        loop {
            // Ended with an error (reset, timeout): what was unacknowledged is lost, whatever
            // the core's emptied send buffer now says.
            if self.close_error(c).is_some() {
                return Ok(false);
            }
            match self.core.conn(c.0) {
                None => return Ok(true),
                Some(x) if x.unacked() == 0 => return Ok(true),
                Some(x) if matches!(x.state(), State::Closed(_)) => return Ok(false),
                Some(_) => {}
            }
            if sys::now_ns() >= deadline {
                return Ok(false);
            }
            self.turn(Some(deadline))?;
        }
    }

    /// Ends our direction of `c` after the bytes written (FIN) and runs the protocol until the
    /// peer has them all and has ended its direction too, at most `limit`. Bytes the peer still
    /// sends meanwhile are discarded. Ok(false) when time ran out first (call again to wait
    /// more); otherwise the endpoint forgets `c`.
    pub fn close(&mut self, c: ConnId, limit: Duration) -> Result<bool> {
        let r = self.close_inner(c, limit);
        // The application is done with `c`: its close reason is not kept any longer (a
        // long-running server would otherwise keep one per connection it ever had).
        if !matches!(r, Ok(false)) {
            self.forget(c.0);
        }
        r
    }

    fn close_inner(&mut self, c: ConnId, limit: Duration) -> Result<bool> {
        let deadline = deadline_after(limit);
        if self.core.conn(c.0).is_some() {
            self.core.close(c.0).map_err(|_| Error::EndpointClosed)?;
        }
        let mut sink = [0u8; 4096];
        loop {
            while matches!(self.core.read(c.0, &mut sink), Ok(n) if n > 0) {}
            // Ended with an error before or during the close (the core may have let go of it).
            if let Some(e) = self.close_error(c) {
                return Err(e);
            }
            match self.core.conn(c.0).map(|x| x.state()) {
                None | Some(State::Linger) => return Ok(true),
                Some(State::Closed(r)) => {
                    return match Error::from_close(r) {
                        None => Ok(true),
                        Some(e) => Err(e),
                    }
                }
                _ => {}
            }
            if sys::now_ns() >= deadline {
                return Ok(false);
            }
            self.turn(Some(deadline))?;
        }
    }

    /// Ends our direction of `c` after the bytes written (FIN) without waiting; reads go on
    /// until the peer ends its own. [`Endpoint::close`] waits for both.
    pub fn shutdown(&mut self, c: ConnId) -> Result<()> {
        self.core.close(c.0).map_err(|_| Error::EndpointClosed)?;
        self.flush_out()
    }

    /// Aborts `c` (RST); unread bytes are discarded.
    pub fn abort(&mut self, c: ConnId) -> Result<()> {
        let _ = self.core.abort(c.0);
        self.forget(c.0);
        self.flush_out()
    }

    /// How `c` ended, if it did.
    pub fn close_reason(&self, c: ConnId) -> Option<CloseReason> {
        self.closed.get(&c.0).copied()
    }

    /// The connection's counters (None once it is gone).
    pub fn conn_stats(&self, c: ConnId) -> Option<ConnStats> {
        self.core.conn(c.0).map(|x| x.stats().clone())
    }

    /// The peer of `c`.
    pub fn remote(&self, c: ConnId) -> Option<SocketAddr> {
        self.core.remote(c.0)
    }

    /// Runs the protocol for at most `limit`: sends what may leave, receives what arrives,
    /// runs due timers. For a program that is between reads and writes but should keep its
    /// connections moving (retransmissions, paced sends, ACKs).
    pub fn drive(&mut self, limit: Duration) -> Result<()> {
        let deadline = deadline_after(limit);
        loop {
            self.turn(Some(deadline))?;
            if sys::now_ns() >= deadline {
                return Ok(());
            }
        }
    }

    /// A borrowed view of `c` that implements `std::io::Read` and `Write` (no time limits).
    pub fn stream(&mut self, c: ConnId) -> StreamRef<'_> {
        StreamRef { ep: self, c }
    }

    /// The error `c` ended with (None while it runs, or when it ended gracefully).
    fn close_error(&self, c: ConnId) -> Option<Error> {
        self.closed.get(&c.0).and_then(|r| Error::from_close(*r))
    }

    fn gone(&self, c: ConnId) -> io::Error {
        match self.close_error(c) {
            Some(e) => e.into_io(),
            None => Error::EndpointClosed.into_io(),
        }
    }

    /// Datagrams no larger than the route to the peer carries (as the async streams do).
    fn fit_payload(&mut self, h: ConnHandle, remote: SocketAddr) {
        if let Some(fit) = route_payload(remote) {
            self.core.limit_payload(h, fit);
        }
    }

    /// One round of the protocol: send what may leave, then wait for a datagram until the
    /// core's next deadline or `deadline` (whichever is first), handle what arrived, run the
    /// due timers, take the events.
    fn turn(&mut self, deadline: Option<u64>) -> Result<()> {
        self.flush_out()?;
        let now = sys::now_ns();
        let wake = match (self.core.poll_timeout(), deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let wait = wake.map(|w| w.saturating_sub(now));
        let got = match wait {
            Some(0) => self.receive(false),
            Some(w) if w < self.spin_ns => {
                // Spin: look at the socket without waiting until the deadline.
                let until = now + w;
                loop {
                    match self.receive(false) {
                        Ok(n) if n > 0 => break Ok(n),
                        Ok(_) => {}
                        Err(e) => break Err(e),
                    }
                    if sys::now_ns() >= until {
                        break Ok(0);
                    }
                    std::hint::spin_loop();
                }
            }
            w => {
                self.set_timeout(w)?;
                self.receive(true)
            }
        };
        let t = if got? > 0 {
            self.rx.read_at
        } else {
            sys::now_ns()
        };
        self.core.handle_timeout(t);
        self.take_events();
        Ok(())
    }

    /// Takes what the socket holds without waiting, runs the due timers and sends what may
    /// leave.
    fn poll_now(&mut self) -> Result<()> {
        for _ in 0..4 {
            if self.receive(false)? == 0 {
                break;
            }
        }
        self.core.handle_timeout(sys::now_ns());
        self.take_events();
        self.flush_out()
    }

    /// Sets the socket's receive timeout to the largest power-of-two microseconds within
    /// `wait` (at least `spin_ns`, which the caller spins below), or none; a system call only
    /// when that changes. The receive then returns at or before the deadline, and the next
    /// turn waits for the rest.
    fn set_timeout(&mut self, wait: Option<u64>) -> Result<()> {
        let t = match wait {
            None => 0,
            Some(w) => {
                let us = (w / 1000).max(1);
                (1u64 << (63 - us.leading_zeros())) * 1000
            }
        };
        if t != self.rcv_timeout {
            self.sock
                .set_read_timeout((t > 0).then(|| Duration::from_nanos(t)))?;
            self.rcv_timeout = t;
        }
        Ok(())
    }

    /// Receives one batch (`wait`: blocking up to the socket's timeout) and hands it to the
    /// core; 0 when nothing came.
    fn receive(&mut self, wait: bool) -> Result<usize> {
        let r = if wait {
            self.rx.recv_wait(self.fd)
        } else {
            self.rx.recv(self.fd)
        };
        let n = match r {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                return Ok(0)
            }
            // An ICMP error queued on the socket (a peer's port closed): the protocol's own
            // timers handle an unreachable peer.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Ok(0),
            Err(e) => return Err(Error::Io(e)),
        };
        let fallback = self.rx.read_at;
        self.io.rx_calls += 1;
        self.io.truncated = self.rx.truncated;
        self.io.rx_overflow = self.rx.overflow;
        for i in 0..n {
            let r = self.rx.got[i];
            if r.len == 0 {
                self.io.datagrams_in += 1;
                continue;
            }
            if r.seg < r.len {
                self.io.gro_messages += 1;
            }
            let now = match r.kernel_ts {
                Some(t) => {
                    self.io.kernel_rx_stamps += 1;
                    t
                }
                None => fallback,
            };
            let ce = r.ecn == sys::ECN_CE;
            if let Some((m, seg)) = self.rx.segments(i) {
                self.io.datagrams_in += m.len().div_ceil(seg) as u64;
                self.core.handle_segments(now, r.from, m, seg, ce);
            } else {
                for d in self.rx.datagrams(i) {
                    self.io.datagrams_in += 1;
                    self.core.handle_ecn(now, r.from, d, ce);
                }
            }
        }
        self.take_events();
        // Requests in: their ACKs wait for the responses (see the module notes).
        if self.readable.iter().any(|h| self.written.contains(h)) {
            // The calling thread sleeps in the receive call until the core's next timer, so the
            // hold's end costs no extra wake-up: it is the timer.
            self.core
                .hold_acks(fallback + ACK_HOLD_NS, fallback + ACK_HOLD_NS);
        }
        self.readable.clear();
        Ok(n)
    }

    /// The application is done with `h`.
    fn forget(&mut self, h: ConnHandle) {
        self.closed.remove(&h);
        self.written.remove(&h);
        self.connected.remove(&h);
        if self.core.conn(h).is_some() {
            self.forgotten.insert(h);
        }
    }

    fn take_events(&mut self) {
        while let Some((h, ev)) = self.core.poll_event() {
            match ev {
                Event::Connected => {
                    self.connected.insert(h);
                }
                Event::Accepted => self.accepted.push_back(h),
                Event::Readable => self.readable.push(h),
                Event::Writable => {}
                Event::Closed(r) => {
                    if !self.forgotten.remove(&h) {
                        self.closed.insert(h, r);
                    }
                    self.written.remove(&h);
                    self.connected.remove(&h);
                }
            }
        }
    }

    /// Sends every datagram the core lets leave now: a batch of up to [`sys::BATCH`] per
    /// system call, runs to one peer coalesced by UDP GSO, payloads read by the kernel from the
    /// send buffer (as the async driver sends). A full socket buffer is waited out (the caller
    /// asked to block); a datagram the kernel refuses otherwise is dropped like one the network
    /// loses (the core repairs it).
    fn flush_out(&mut self) -> Result<()> {
        loop {
            if self.tx.is_empty() {
                if !self.core.has_pending_transmit() {
                    return Ok(());
                }
                // One clock read per batch: it leaves in one system call.
                let now = sys::now_ns();
                while !self.tx.is_full() {
                    let (buf, parts) = self.tx.next_slot();
                    match self.core.poll_transmit_parts(now, buf, parts) {
                        Some(t) => self.tx.commit(t.remote, t.len),
                        None => break,
                    }
                }
                if self.tx.is_empty() {
                    return Ok(());
                }
            }
            match self.tx.send(self.fd) {
                Ok(n) => {
                    self.io.tx_calls += 1;
                    self.io.datagrams_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => wait_writable(self.fd)?,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io.send_errors += 1;
                    if sys::too_big(&e) {
                        // The route's MTU went down: what is resent must fit it.
                        self.io.too_big += 1;
                        crate::endpoint::refit_payloads(&mut self.core);
                    }
                }
            }
        }
    }
}

/// [`sys::now_ns`] `limit` from now.
fn deadline_after(limit: Duration) -> u64 {
    sys::now_ns().saturating_add(limit.as_nanos() as u64)
}

/// Waits (at most 10 ms) until the socket takes datagrams again.
fn wait_writable(fd: RawFd) -> Result<()> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd we own, for the call's duration.
    let r = unsafe { libc::poll(&mut p, 1, 10) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(Error::Io(e));
        }
    }
    Ok(())
}

/// A connection of an [`Endpoint`] as `std::io::Read` + `Write` (no time limits; `flush`
/// waits until the peer has acknowledged every byte).
pub struct StreamRef<'a> {
    ep: &'a mut Endpoint,
    c: ConnId,
}

impl io::Read for StreamRef<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.ep.read(self.c, buf, None)
    }
}

impl io::Write for StreamRef<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.ep.write(self.c, data, None)
    }
    fn flush(&mut self) -> io::Result<()> {
        loop {
            if self
                .ep
                .flush(self.c, Duration::from_secs(3600))
                .map_err(Error::into_io)?
            {
                return Ok(());
            }
            // Not all acknowledged: time ran out (wait again), or the connection ended first.
            if let Some(e) = self.ep.close_error(self.c) {
                return Err(e.into_io());
            }
            if self
                .ep
                .core
                .conn(self.c.0)
                .is_some_and(|x| matches!(x.state(), State::Closed(_)))
            {
                return Err(Error::EndpointClosed.into_io());
            }
        }
    }
}

/// One outgoing connection on its own [`Endpoint`] (an ephemeral port): the simplest way to
/// talk to a STRIDE server from a blocking program. `std::io::Read` and `Write` without time
/// limits; [`Connection::endpoint`] for the rest.
pub struct Connection {
    ep: Endpoint,
    c: ConnId,
}

impl Connection {
    /// Connects to `remote` from an ephemeral port (default options), waiting at most `limit`.
    pub fn connect(remote: SocketAddr, limit: Duration) -> Result<Connection> {
        Connection::connect_with(remote, limit, EndpointConfig::default())
    }

    /// Like [`Connection::connect`] with `opts` (its `listen` is ignored: off).
    pub fn connect_with(
        remote: SocketAddr,
        limit: Duration,
        opts: EndpointConfig,
    ) -> Result<Connection> {
        let any: SocketAddr = if remote.is_ipv6() {
            "[::]:0".parse().expect("addr")
        } else {
            "0.0.0.0:0".parse().expect("addr")
        };
        let mut ep = Endpoint::bind_with(
            any,
            EndpointConfig {
                listen: false,
                ..opts
            },
        )?;
        let c = ep.connect(remote, limit)?;
        Ok(Connection { ep, c })
    }

    /// The endpoint and the connection's id on it.
    pub fn endpoint(&mut self) -> (&mut Endpoint, ConnId) {
        (&mut self.ep, self.c)
    }

    /// Ends our direction without waiting (see [`Endpoint::shutdown`]).
    pub fn shutdown(&mut self) -> Result<()> {
        self.ep.shutdown(self.c)
    }

    /// Ends our direction and waits until the peer has every byte and ended its own, at most
    /// `limit` (see [`Endpoint::close`]).
    pub fn close(&mut self, limit: Duration) -> Result<bool> {
        self.ep.close(self.c, limit)
    }
}

impl io::Read for Connection {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.ep.read(self.c, buf, None)
    }
}

impl io::Write for Connection {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.ep.write(self.c, data, None)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.ep.stream(self.c).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A server that serves one client after another forgets each connection once it has
    /// closed it: nothing per past connection is left in its maps.
    #[test]
    fn a_server_keeps_nothing_of_closed_connections() {
        let mut srv = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let at = srv.local_addr();
        const N: usize = 12;
        let h = std::thread::spawn(move || {
            for _ in 0..N {
                let c = srv
                    .accept(Some(Duration::from_secs(10)))
                    .unwrap()
                    .expect("a client");
                let mut b = [0u8; 8];
                srv.stream(c).read_exact(&mut b).unwrap();
                srv.write_all(c, &b, None).unwrap();
                assert!(srv.close(c, Duration::from_secs(5)).unwrap());
            }
            // Lingering connections are remembered until the core lets them go.
            srv.drive(Duration::from_millis(50)).unwrap();
            assert!(srv.forgotten.len() <= srv.core.connection_count());
            (srv.closed.len(), srv.written.len(), srv.connected.len())
        });
        for i in 0..N {
            let mut c = Connection::connect(at, Duration::from_secs(5)).unwrap();
            let m = [i as u8; 8];
            c.write_all(&m).unwrap();
            let mut b = [0u8; 8];
            c.read_exact(&mut b).unwrap();
            assert_eq!(b, m);
            assert!(c.close(Duration::from_secs(5)).unwrap());
            assert!(c.ep.closed.is_empty(), "{:?}", c.ep.closed);
        }
        assert_eq!(h.join().unwrap(), (0, 0, 0));
    }
}
