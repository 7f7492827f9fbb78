//! A userspace bottleneck between a client and a server, for tests and demonstrations.
//!
//! The relay listens on one address; every client address it hears from gets its own upstream
//! socket towards the server (so the server sees one address per client). Client-to-server
//! datagrams ("forward path") meet, in order: random loss, random duplication, a drop-tail FIFO
//! drained at `rate_bps` (a token bucket one packet deep: each packet departs when the link has
//! finished the previous one), the propagation delay, and random reordering (a packet is held
//! back by up to `reorder_ns` more). Server-to-client datagrams only get the propagation delay.
//!
//! What the relay holds is bounded: the packets waiting out the delay (both paths) by
//! `delay_line_bytes` (beyond it they are dropped and counted, with or without a rate limit),
//! the number of clients by `max_sessions`, and a client's upstream socket is closed once
//! nothing moved through it for `idle_ns`. Delays longer than [`MAX_DELAY_NS`] are refused.
//!
//! The relay runs on its own thread. It sleeps in `ppoll` with nanosecond timeouts (timer slack
//! set to 1 µs) when the next departure is far, and spins (polling with `sched_yield`) when it
//! is closer than [`RELAY_SPIN_NS`], so departures are not delayed by wake-up latency.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use stride::sys::{self, RxBatch};
use stride_proto::rng::SplitMix;
use stride_proto::Histogram;

/// Waits for the next departure shorter than this are spun rather than slept.
pub const RELAY_SPIN_NS: u64 = 100_000;

/// Relay settings.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Address to listen on (clients send here).
    pub listen: SocketAddr,
    /// The server.
    pub to: SocketAddr,
    /// Bottleneck rate in bits per second (0: no bottleneck).
    pub rate_bps: u64,
    /// One-way propagation delay, ns (both directions).
    pub delay_ns: u64,
    /// Drop-tail queue capacity in bytes.
    pub queue_bytes: u64,
    /// Forward-path loss probability (0..1).
    pub loss: f64,
    /// Forward-path reordering probability (0..1).
    pub reorder: f64,
    /// Largest extra hold of a reordered packet, ns.
    pub reorder_ns: u64,
    /// Forward-path duplication probability (0..1).
    pub dup: f64,
    /// Random seed.
    pub seed: u64,
    /// Most bytes waiting out the delay, both paths together (beyond: dropped and counted).
    pub delay_line_bytes: u64,
    /// Most clients with an upstream socket at once (datagrams of more are dropped, counted).
    pub max_sessions: usize,
    /// Close a client's upstream socket after this long without a datagram either way, ns.
    pub idle_ns: u64,
}

/// Longest delay (`delay_ns`, `reorder_ns`) the relay accepts: one day.
pub const MAX_DELAY_NS: u64 = 86_400 * 1_000_000_000;
/// Default [`RelayConfig::delay_line_bytes`]: 64 MiB.
pub const DEFAULT_DELAY_LINE: u64 = 64 << 20;
/// Default [`RelayConfig::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 4096;
/// Default [`RelayConfig::idle_ns`]: 60 s.
pub const DEFAULT_IDLE_NS: u64 = 60_000_000_000;

impl RelayConfig {
    /// A transparent relay (no rate limit, no impairment).
    pub fn new(listen: SocketAddr, to: SocketAddr) -> Self {
        RelayConfig {
            listen,
            to,
            rate_bps: 0,
            delay_ns: 0,
            queue_bytes: 1 << 20,
            loss: 0.0,
            reorder: 0.0,
            reorder_ns: 100_000,
            dup: 0.0,
            seed: 1,
            delay_line_bytes: DEFAULT_DELAY_LINE,
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle_ns: DEFAULT_IDLE_NS,
        }
    }

    /// Refuses settings the relay cannot honour: a delay beyond [`MAX_DELAY_NS`] (its
    /// departure times would overflow), a zero delay line, session limit or idle timeout.
    pub fn check(&self) -> io::Result<()> {
        let bad = |m: String| Err(io::Error::new(io::ErrorKind::InvalidInput, m));
        if self.delay_ns > MAX_DELAY_NS || self.reorder_ns > MAX_DELAY_NS {
            return bad(format!(
                "a delay of at most {} s is supported",
                MAX_DELAY_NS / 1_000_000_000
            ));
        }
        if self.delay_line_bytes == 0 || self.max_sessions == 0 || self.idle_ns == 0 {
            return bad(
                "the delay line, the session limit and the idle timeout must be positive".into(),
            );
        }
        Ok(())
    }
}

/// Queue drops later than this after the first arrival count as
/// [`RelayStats::queue_drops_late`] (10 ms).
pub const LATE_DROP_NS: u64 = 10_000_000;

/// Relay counters.
#[derive(Clone, Debug, Default)]
pub struct RelayStats {
    /// Client addresses seen.
    pub sessions: u64,
    /// Datagrams received from clients.
    pub fwd_in: u64,
    /// Datagrams delivered to the server.
    pub fwd_out: u64,
    /// Bytes delivered to the server.
    pub fwd_bytes: u64,
    /// Datagrams delivered back to clients.
    pub rev_out: u64,
    /// Dropped by the full queue (drop-tail).
    pub queue_drops: u64,
    /// Of `queue_drops`, those more than [`LATE_DROP_NS`] after the first forwarded arrival
    /// (past a sender's start-up: what a controller should avoid in steady state).
    pub queue_drops_late: u64,
    /// Dropped at random (`loss`).
    pub random_drops: u64,
    /// Duplicated.
    pub duplicated: u64,
    /// Held back for reordering.
    pub reordered: u64,
    /// Send failures (datagram lost).
    pub send_errors: u64,
    /// Dropped because the delay line held `delay_line_bytes` already (either path).
    pub delay_line_drops: u64,
    /// Datagrams of new clients dropped at `max_sessions`.
    pub session_drops: u64,
    /// Upstream sockets closed after `idle_ns` without traffic.
    pub idle_closed: u64,
    /// Most bytes the delay line held at once.
    pub delay_line_peak: u64,
    /// Datagrams from clients that the kernel dropped at the relay's socket before the relay
    /// read them (its receive buffer was full: the relay fell behind; `SO_RXQ_OVFL`). Losses
    /// the bottleneck model did not decide.
    pub socket_drops: u64,
    /// How late the relay sent each forwarded packet after the time its model gave it (its
    /// departure from the bottleneck plus the delay), ns: time the relay thread was not
    /// running. Delay a sender sees beyond the modelled queue.
    pub late: Histogram,
    /// Wait in the bottleneck queue before serialisation, ns, per forwarded packet.
    pub queue_delay: Histogram,
    /// Time the bottleneck spent serialising, ns.
    pub busy_ns: u64,
    /// First forward arrival and last departure (ns, `CLOCK_MONOTONIC`, see [`stride::sys::now_ns`]).
    pub first_ns: u64,
    /// Last departure from the bottleneck.
    pub last_ns: u64,
}

impl RelayStats {
    /// Fraction of the time between the first arrival and the last departure during which the
    /// bottleneck was busy.
    pub fn utilization(&self) -> f64 {
        let span = self.last_ns.saturating_sub(self.first_ns);
        if span == 0 {
            0.0
        } else {
            self.busy_ns as f64 / span as f64
        }
    }
}

/// A running relay; stop it with [`Relay::stop`] (or drop it).
pub struct Relay {
    local: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<Mutex<RelayStats>>,
    thread: Option<JoinHandle<()>>,
}

/// Called for every datagram the relay sends, as it leaves: (time in ns of the relay's clock,
/// the Unix epoch's `CLOCK_REALTIME`), source, destination, the UDP payload. The forward path
/// is given from the client's address to the server's, the way back from the server's to the
/// client's (the relay's own sockets are left out, so a capture reads as one conversation).
pub type Tap = Box<dyn FnMut(u64, SocketAddr, SocketAddr, &[u8]) + Send>;

/// A pcap capture of every datagram a relay sends (`stride relay --pcap FILE`): give its
/// [`Capture::tap`] to [`Relay::spawn_tapped`], and [`Capture::finish`] it once the relay has
/// stopped. Capturing stops at the first write error, which `finish` reports.
pub struct Capture {
    /// The file's writer (None once a write failed or the capture is finished) and the first
    /// write error.
    inner: Arc<Mutex<CaptureState>>,
}

type CaptureState = (
    Option<stride_pcap::Writer<std::io::BufWriter<std::fs::File>>>,
    Option<io::Error>,
);

/// Why a [`Capture`] did not end well.
#[derive(Debug)]
pub enum CaptureError {
    /// A write failed: capturing stopped there.
    Stopped(io::Error),
    /// The file could not be flushed at the end.
    Flush(io::Error),
}

impl Capture {
    /// Creates the file at `path` (replacing it) and writes the pcap header.
    pub fn create(path: &std::path::Path) -> io::Result<Capture> {
        let f = std::fs::File::create(path)?;
        let w = stride_pcap::Writer::new(std::io::BufWriter::new(f))?;
        Ok(Capture {
            inner: Arc::new(Mutex::new((Some(w), None))),
        })
    }

    /// The tap that writes every datagram the relay sends into the capture.
    pub fn tap(&self) -> Tap {
        let c = self.inner.clone();
        Box::new(move |ts, from, to, data: &[u8]| {
            let mut g = c.lock().unwrap_or_else(|p| p.into_inner());
            let (w, first_err) = &mut *g;
            if let Some(w) = w.as_mut() {
                if let Err(e) = w.write_udp(ts, from, to, data) {
                    *first_err = Some(e);
                }
            }
            if first_err.is_some() {
                *w = None; // stop capturing after the first write error
            }
        })
    }

    /// Ends the capture (after the relay stopped): flushes the file and returns how many
    /// packets it holds.
    pub fn finish(self) -> Result<u64, CaptureError> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = g.1.take() {
            return Err(CaptureError::Stopped(e));
        }
        let Some(w) = g.0.take() else {
            return Ok(0);
        };
        let n = w.packets();
        use std::io::Write;
        w.into_inner().flush().map_err(CaptureError::Flush)?;
        Ok(n)
    }
}

impl Relay {
    /// Binds and starts the relay thread.
    pub fn spawn(cfg: RelayConfig) -> io::Result<Relay> {
        Self::spawn_tapped(cfg, None)
    }

    /// [`Relay::spawn`] with a [`Tap`] that sees every datagram the relay sends (for pcap
    /// capture: [`Capture::tap`]).
    pub fn spawn_tapped(cfg: RelayConfig, tap: Option<Tap>) -> io::Result<Relay> {
        cfg.check()?;
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(cfg.listen),
            socket2::Type::DGRAM,
            None,
        )?;
        sys::set_buffers(
            &sock,
            stride::endpoint::SOCKET_BUFFER,
            stride::endpoint::SOCKET_BUFFER,
        );
        sock.bind(&cfg.listen.into())?;
        sock.set_nonblocking(true)?;
        let sock: UdpSocket = sock.into();
        // Kernel arrival stamps: the bottleneck model starts from when a packet really arrived,
        // not from when this thread got to it.
        sys::enable_rx_timestamps(sock.as_raw_fd());
        let _ = sys::enable_rxq_ovfl(sock.as_raw_fd());
        let local = sock.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Mutex::new(RelayStats::default()));
        let (s2, st2) = (stop.clone(), stats.clone());
        let thread = std::thread::Builder::new()
            .name("stride-relay".into())
            .spawn(move || run(cfg, sock, s2, st2, tap))?;
        Ok(Relay {
            local,
            stop,
            stats,
            thread: Some(thread),
        })
    }

    /// Where clients should send.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> RelayStats {
        self.stats.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stops the thread and returns the final counters.
    pub fn stop(mut self) -> RelayStats {
        self.halt();
        self.stats()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.halt();
    }
}

struct Pending {
    at: u64,
    seq: u64,
    /// Index of the upstream socket for forward packets; `None` for the way back.
    upstream: Option<usize>,
    client: SocketAddr,
    data: Vec<u8>,
}
impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

fn ppm(p: f64) -> u64 {
    (p.clamp(0.0, 1.0) * 1_000_000.0).round() as u64
}

/// One draw with probability `p` in millionths (never when `p` is 0).
fn chance(rng: &mut SplitMix, p: u64) -> bool {
    p > 0 && rng.below(1_000_000) < p
}

/// The relay thread: waits for input or the next departure, takes what arrived on either
/// path into the model, delivers what is due, and publishes the counters every 20 ms.
fn run(
    cfg: RelayConfig,
    sock: UdpSocket,
    stop: Arc<AtomicBool>,
    shared: Arc<Mutex<RelayStats>>,
    tap: Option<Tap>,
) {
    // SAFETY: PR_SET_TIMERSLACK only changes this thread's timer slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let upstream_bind: SocketAddr = if cfg.to.is_ipv6() {
        "[::]:0".parse().expect("addr")
    } else {
        "0.0.0.0:0".parse().expect("addr")
    };
    let mut r = Relayer {
        model: Model::new(&cfg),
        cfg,
        sock,
        ups: Vec::new(),
        free: Vec::new(),
        by_client: HashMap::new(),
        upstream_bind,
        // Room for any UDP datagram, so endpoints configured for jumbo datagrams pass too.
        // Separate buffers per direction: `rx`'s drop count (`overflow`) is the client socket's.
        rx: RxBatch::with_room(sys::GRO_ROOM),
        rx_back: RxBatch::with_room(sys::GRO_ROOM),
        tap,
    };
    let (mut last_publish, mut last_sweep) = (0u64, sys::now_ns());
    while !stop.load(Ordering::Relaxed) {
        let (fds, slots) = r.wait();
        if fds[0].revents & libc::POLLIN != 0 {
            r.forward();
        }
        r.back(&fds, &slots);
        let now = sys::now_ns();
        r.deliver(now);
        if now.saturating_sub(last_sweep) > 1_000_000_000 {
            last_sweep = now;
            r.sweep(now);
        }
        if now.saturating_sub(last_publish) > 20_000_000 {
            last_publish = now;
            *shared.lock().unwrap_or_else(|p| p.into_inner()) = r.model.st.clone();
        }
    }
    *shared.lock().unwrap_or_else(|p| p.into_inner()) = r.model.st;
}

/// The relay thread's sockets and buffers around its [`Model`].
struct Relayer {
    cfg: RelayConfig,
    /// The socket clients send to.
    sock: UdpSocket,
    /// One socket towards the server per client address (None: closed, its index in `free`).
    ups: Vec<Option<Upstream>>,
    /// Indices of closed entries of `ups`, for reuse.
    free: Vec<usize>,
    /// Index into `ups` by client address.
    by_client: HashMap<SocketAddr, usize>,
    /// Where upstream sockets are bound (the unspecified address of the server's family).
    upstream_bind: SocketAddr,
    model: Model,
    /// Receive buffers for the forward path and the way back.
    rx: RxBatch,
    rx_back: RxBatch,
    tap: Option<Tap>,
}

/// A client's socket towards the server.
struct Upstream {
    sock: UdpSocket,
    client: SocketAddr,
    /// Last datagram either way (ns).
    last_ns: u64,
    /// Forward packets of this client in the delay line (the socket stays open for them).
    pending: u64,
}

impl Relayer {
    /// Waits for input on any socket or the next departure: spun when that is closer than
    /// [`RELAY_SPIN_NS`], slept in `ppoll` otherwise. Returns the sockets' poll results (the
    /// client socket first, then the open upstream sockets) and the index in `ups` of each
    /// upstream one.
    fn wait(&self) -> (Vec<libc::pollfd>, Vec<usize>) {
        let now = sys::now_ns();
        let wait = match self.model.heap.peek() {
            Some(Reverse(p)) => p.at.saturating_sub(now).min(50_000_000),
            None => 50_000_000,
        };
        let slots: Vec<usize> = (0..self.ups.len())
            .filter(|&k| self.ups[k].is_some())
            .collect();
        let ups = slots
            .iter()
            .filter_map(|&k| self.ups[k].as_ref().map(|u| u.sock.as_raw_fd()));
        let mut fds: Vec<libc::pollfd> = std::iter::once(self.sock.as_raw_fd())
            .chain(ups)
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        if wait > 0 && wait < RELAY_SPIN_NS {
            // Short waits are spun: a sleep-and-wake would add tens of µs of jitter that the
            // endpoints would read as queueing delay.
            std::thread::yield_now();
            // SAFETY: as below, zero timeout.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        } else if wait > 0 {
            let ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            // SAFETY: fds is a live array of pollfd of the given length.
            unsafe {
                libc::ppoll(
                    fds.as_mut_ptr(),
                    fds.len() as libc::nfds_t,
                    &ts,
                    std::ptr::null(),
                )
            };
        } else {
            // SAFETY: as above, zero timeout.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
        }
        (fds, slots)
    }

    /// Forward path: takes what clients sent (a few batches at most) into the model.
    fn forward(&mut self) {
        for _ in 0..8 {
            let n = match self.rx.recv(self.sock.as_raw_fd()) {
                Ok(n) => n,
                Err(_) => break,
            };
            let recv_now = sys::now_ns();
            self.model.st.socket_drops = self.rx.overflow;
            for i in 0..n {
                let r = self.rx.got[i];
                if r.len == 0 {
                    continue;
                }
                let now = r.kernel_ts.unwrap_or(recv_now).min(recv_now);
                self.model.st.fwd_in += 1;
                let Some(idx) = self.upstream_for(r.from) else {
                    continue;
                };
                let queued = self.model.admit(now, idx, r.from, self.rx.data(i));
                if let Some(u) = self.ups[idx].as_mut() {
                    u.pending += queued;
                    u.last_ns = recv_now;
                }
            }
            if n < sys::BATCH {
                break;
            }
        }
    }

    /// The upstream socket of the client at `from` (opened at its first datagram); None when
    /// none can be opened (counted as a send error) or `max_sessions` are open (counted).
    fn upstream_for(&mut self, from: SocketAddr) -> Option<usize> {
        if let Some(&k) = self.by_client.get(&from) {
            return Some(k);
        }
        if self.by_client.len() >= self.cfg.max_sessions {
            self.model.st.session_drops += 1;
            return None;
        }
        let Ok(u) = UdpSocket::bind(self.upstream_bind) else {
            self.model.st.send_errors += 1;
            return None;
        };
        let _ = u.set_nonblocking(true);
        let s2 = socket2::SockRef::from(&u);
        sys::set_buffers(
            &s2,
            stride::endpoint::SOCKET_BUFFER,
            stride::endpoint::SOCKET_BUFFER,
        );
        let up = Upstream {
            sock: u,
            client: from,
            last_ns: sys::now_ns(),
            pending: 0,
        };
        let k = match self.free.pop() {
            Some(k) => {
                self.ups[k] = Some(up);
                k
            }
            None => {
                self.ups.push(Some(up));
                self.ups.len() - 1
            }
        };
        self.by_client.insert(from, k);
        self.model.st.sessions += 1;
        Some(k)
    }

    /// Closes the upstream sockets idle for `idle_ns` with nothing of theirs in the delay line.
    fn sweep(&mut self, now: u64) {
        for k in 0..self.ups.len() {
            let idle = self.ups[k].as_ref().is_some_and(|u| {
                u.pending == 0 && now.saturating_sub(u.last_ns) > self.cfg.idle_ns
            });
            if idle {
                let u = self.ups[k].take().expect("checked");
                self.by_client.remove(&u.client);
                self.free.push(k);
                self.model.st.idle_closed += 1;
            }
        }
    }

    /// Way back: what the server sent, per client, gets the propagation delay.
    fn back(&mut self, fds: &[libc::pollfd], slots: &[usize]) {
        for (pfd, &k) in fds.iter().skip(1).zip(slots) {
            if pfd.revents & libc::POLLIN == 0 {
                continue;
            }
            let Some(u) = self.ups[k].as_mut() else {
                continue;
            };
            let client = u.client;
            for _ in 0..8 {
                let n = match self.rx_back.recv(u.sock.as_raw_fd()) {
                    Ok(n) => n,
                    Err(_) => break,
                };
                let now = sys::now_ns();
                u.last_ns = now;
                for i in 0..n {
                    if self.rx_back.got[i].len == 0 {
                        continue;
                    }
                    let data = self.rx_back.data(i);
                    self.model.hold(now + self.cfg.delay_ns, None, client, data);
                }
                if n < sys::BATCH {
                    break;
                }
            }
        }
    }

    /// Sends every packet due by `now` (the tap sees each as it leaves).
    fn deliver(&mut self, now: u64) {
        let st = &mut self.model.st;
        while self.model.heap.peek().is_some_and(|Reverse(p)| p.at <= now) {
            let Reverse(p) = self.model.heap.pop().expect("peeked");
            self.model.held -= p.data.len() as u64;
            if let Some(t) = self.tap.as_mut() {
                match p.upstream {
                    Some(_) => t(now, p.client, self.cfg.to, &p.data),
                    None => t(now, self.cfg.to, p.client, &p.data),
                }
            }
            let r = match p.upstream {
                Some(k) => {
                    st.late.record(now - p.at);
                    st.fwd_out += 1;
                    st.fwd_bytes += p.data.len() as u64;
                    let u = self.ups[k]
                        .as_mut()
                        .expect("open while it has pending packets");
                    u.pending -= 1;
                    u.sock.send_to(&p.data, self.cfg.to)
                }
                None => {
                    st.rev_out += 1;
                    self.sock.send_to(&p.data, p.client)
                }
            };
            if r.is_err() {
                st.send_errors += 1;
            }
        }
    }
}

/// The forward path's model: random loss and duplication, the drop-tail bottleneck, the
/// delay and random reordering; and the packets waiting to leave, in departure order.
struct Model {
    rate_bps: u64,
    queue_bytes: u64,
    delay_ns: u64,
    reorder_ns: u64,
    rng: SplitMix,
    /// `loss`, `dup` and `reorder` in millionths.
    loss: u64,
    dup: u64,
    reorder: u64,
    /// Packets waiting to leave (either path), earliest first.
    heap: BinaryHeap<Reverse<Pending>>,
    /// Arrival order, to break ties between packets due at the same time.
    seq: u64,
    /// Bytes in `heap`, and its bound.
    held: u64,
    delay_line_bytes: u64,
    /// When the bottleneck has finished the packets it holds.
    link_free_at: u64,
    st: RelayStats,
}

impl Model {
    fn new(cfg: &RelayConfig) -> Self {
        Model {
            rate_bps: cfg.rate_bps,
            queue_bytes: cfg.queue_bytes,
            delay_ns: cfg.delay_ns,
            reorder_ns: cfg.reorder_ns,
            rng: SplitMix::new(cfg.seed),
            loss: ppm(cfg.loss),
            dup: ppm(cfg.dup),
            reorder: ppm(cfg.reorder),
            heap: BinaryHeap::new(),
            seq: 0,
            held: 0,
            delay_line_bytes: cfg.delay_line_bytes,
            link_free_at: 0,
            st: RelayStats::default(),
        }
    }

    /// Puts a packet due at `at` into the delay line (forward: `upstream` is its client's
    /// socket), unless the line is full (dropped, counted). Whether it was put.
    fn hold(&mut self, at: u64, upstream: Option<usize>, client: SocketAddr, data: &[u8]) -> bool {
        let len = data.len() as u64;
        if self.held + len > self.delay_line_bytes {
            self.st.delay_line_drops += 1;
            return false;
        }
        self.held += len;
        self.st.delay_line_peak = self.st.delay_line_peak.max(self.held);
        self.seq += 1;
        self.heap.push(Reverse(Pending {
            at,
            seq: self.seq,
            upstream,
            client,
            data: data.to_vec(),
        }));
        true
    }

    /// A datagram from `client` (upstream socket `idx`) that arrived at `now`: lost,
    /// duplicated, queued at the bottleneck (or dropped there), delayed and maybe reordered.
    /// Returns how many copies entered the delay line.
    fn admit(&mut self, now: u64, idx: usize, client: SocketAddr, data: &[u8]) -> u64 {
        if chance(&mut self.rng, self.loss) {
            self.st.random_drops += 1;
            return 0;
        }
        let copies = if chance(&mut self.rng, self.dup) {
            self.st.duplicated += 1;
            2
        } else {
            1
        };
        let mut queued = 0;
        for _ in 0..copies {
            let Some(depart) = self.bottleneck(now, data.len() as u64) else {
                continue;
            };
            if self.st.first_ns == 0 {
                self.st.first_ns = now;
            }
            self.st.last_ns = self.st.last_ns.max(depart);
            let mut at = depart + self.delay_ns;
            if self.reorder_ns > 0 && chance(&mut self.rng, self.reorder) {
                self.st.reordered += 1;
                at += 1 + self.rng.below(self.reorder_ns);
            }
            queued += u64::from(self.hold(at, Some(idx), client, data));
        }
        queued
    }

    /// When a packet of `len` bytes arriving at `now` leaves the bottleneck (`now` without a
    /// rate limit); None when the drop-tail queue has no room for it.
    fn bottleneck(&mut self, now: u64, len: u64) -> Option<u64> {
        if self.rate_bps == 0 {
            return Some(now);
        }
        let st = &mut self.st;
        let backlog_ns = self.link_free_at.saturating_sub(now);
        let backlog = (u128::from(backlog_ns) * u128::from(self.rate_bps) / 8_000_000_000) as u64;
        if backlog + len > self.queue_bytes {
            st.queue_drops += 1;
            if st.first_ns != 0 && now.saturating_sub(st.first_ns) > LATE_DROP_NS {
                st.queue_drops_late += 1;
            }
            return None;
        }
        let tx_ns = (u128::from(len) * 8_000_000_000 / u128::from(self.rate_bps)) as u64;
        st.queue_delay.record(backlog_ns);
        let start = self.link_free_at.max(now);
        let depart = start + tx_ns;
        self.link_free_at = depart;
        st.busy_ns += tx_ns;
        Some(depart)
    }
}
