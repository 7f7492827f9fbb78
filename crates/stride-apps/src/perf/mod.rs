//! The throughput and round-trip harness behind `stride perf`, generic over any byte stream so
//! STRIDE and kernel TCP are measured the same way.
//!
//! Wire harness: the client's first byte picks the mode. `T`: the client sends its bytes and
//! closes its direction; the server reads to the end and confirms with one byte, which stops
//! the client's clock (TCP has no "all acknowledged" signal, so both transports end the same
//! way). `R`: the server echoes every byte back until the client closes. Raw UDP (round trips
//! only): the server echoes each datagram ([`udp_round_trips`]).
//!
//! The servers ([`serve_stride`], [`serve_tcp`], [`udp_echo`] and their blocking forms) and
//! the clients' building blocks ([`client_endpoint`], [`intervals`], [`parallel_bulk`],
//! [`tcp_client`], the blocking [`Job`]s) are those of `stride perf`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let server = stride::Endpoint::bind("127.0.0.1:0".parse().unwrap())?;
//! let client = stride::Endpoint::client("127.0.0.1:0".parse().unwrap())?;
//! let to = server.local_addr();
//! tokio::spawn(async move {
//!     let mut s = server.accept().await.unwrap();
//!     let _ = stride_apps::perf::serve(&mut s, |bytes, secs| println!("{bytes} B in {secs} s")).await;
//! });
//! let mut s = client.connect(to).await?;
//! let b = stride_apps::perf::bulk(&mut s, Some(10_000_000), None, |_, _, _| {}).await?;
//! println!("{:.3} Gbit/s", b.bytes as f64 * 8.0 / b.seconds / 1e9);
//! # Ok(()) }
//! ```

mod clients;
mod servers;

pub use clients::{
    any_addr, blocking_job, client_endpoint, intervals, parallel_bulk, set_max_pacing_rate,
    stride_blocking, tcp_blocking, tcp_client, udp_blocking, Done, Interval, Job, OneBulk,
    Parallel, CONNECT_LIMIT,
};
pub use servers::{
    serve_stride, serve_stride_blocking, serve_tcp, serve_tcp_blocking, udp_echo, Served,
};

use bytes::Bytes;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// What [`bulk`] and [`serve`] need beyond tokio's byte-stream traits: handing over a whole
/// chunk and taking received bytes back. The default methods copy (kernel TCP, any tokio
/// stream: one copy each way between the application and the kernel); a STRIDE
/// [`stride::Stream`] overrides them with its zero-copy calls ([`stride::Stream::write_chunk`],
/// [`stride::Stream::read_chunk`]), so neither end copies a byte in user space.
pub trait ChunkIo: AsyncRead + AsyncWrite + Unpin + Send {
    /// Sends all of `chunk`.
    fn send_chunk(&mut self, chunk: &Bytes) -> impl Future<Output = io::Result<()>> + Send {
        async move { self.write_all(chunk).await }
    }
    /// Takes what has arrived (reading into `scratch` if the transport must copy) and drops
    /// it; returns how many bytes, 0 at the end of the stream.
    fn recv_discard(
        &mut self,
        scratch: &mut [u8],
    ) -> impl Future<Output = io::Result<usize>> + Send {
        async move { self.read(scratch).await }
    }
}

impl ChunkIo for tokio::net::TcpStream {}

impl ChunkIo for stride::Stream {
    fn send_chunk(&mut self, chunk: &Bytes) -> impl Future<Output = io::Result<()>> + Send {
        self.write_chunk(chunk.clone())
    }
    async fn recv_discard(&mut self, _scratch: &mut [u8]) -> io::Result<usize> {
        let mut chunks = Vec::new();
        self.read_chunks(&mut chunks, usize::MAX).await
    }
}

/// Reads `s` to its end, discarding the bytes; returns how many there were.
pub async fn discard_to_end<S: AsyncRead + Unpin>(s: &mut S) -> io::Result<u64> {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(total);
        }
        total += n as u64;
    }
}

/// CPU time (user + system) this process has used so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Serves one connection of either mode; a bulk transfer's bytes and seconds (first byte to
/// confirmation) go to `done` before the connection closes.
pub async fn serve<S: ChunkIo>(s: &mut S, done: impl FnOnce(u64, f64)) -> io::Result<()> {
    let mut mode = [0u8; 1];
    s.read_exact(&mut mode).await?;
    match mode[0] {
        b'T' => {
            let start = Instant::now();
            let mut scratch = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            loop {
                let n = s.recv_discard(&mut scratch).await?;
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            s.write_all(b"k").await?;
            done(total, start.elapsed().as_secs_f64());
            let _ = tokio::time::timeout(Duration::from_secs(2), s.shutdown()).await;
            Ok(())
        }
        b'R' => {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = s.read(&mut buf).await?;
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).await?;
            }
            s.shutdown().await?;
            Ok(())
        }
        m => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown perf mode byte {m:#04x}"),
        )),
    }
}

/// The outcome of [`bulk`].
#[derive(Clone, Copy, Debug)]
pub struct Bulk {
    /// Bytes sent (and confirmed).
    pub bytes: u64,
    /// Seconds from the first byte to the server's confirmation.
    pub seconds: f64,
    /// CPU cores this process used meanwhile.
    pub cpu_cores: f64,
}

/// Sends a bulk job on `s` (`bytes` of them, or for `time` seconds, whichever ends first; one
/// of them should be given) and waits for the server's confirmation; `tick` sees (stream,
/// elapsed, bytes written) after every chunk.
pub async fn bulk<S: ChunkIo>(
    s: &mut S,
    bytes: Option<u64>,
    time: Option<f64>,
    mut tick: impl FnMut(&S, Duration, u64),
) -> io::Result<Bulk> {
    let chunk = Bytes::from(vec![0u8; BULK_CHUNK]);
    s.write_all(b"T").await?;
    let mut run = BulkRun::start(bytes, time);
    while let Some(n) = run.next_chunk() {
        s.send_chunk(&chunk.slice(..n)).await?;
        run.written += n as u64;
        tick(s, run.start.elapsed(), run.written);
    }
    s.shutdown().await?;
    let mut k = [0u8; 1];
    s.read_exact(&mut k).await?;
    let result = run.confirmed();
    // Untimed: take the server's end of stream, so its close completes before we exit.
    let _ = tokio::time::timeout(Duration::from_secs(2), discard_to_end(s)).await;
    Ok(result)
}

/// Bytes handed over per write in a bulk run.
const BULK_CHUNK: usize = 256 * 1024;

/// The sender's side of a bulk run, shared by [`bulk`] and [`bulk_blocking`]: how much to
/// write next, and the figures once the server has confirmed.
struct BulkRun {
    bytes: Option<u64>,
    limit: Option<Duration>,
    start: Instant,
    cpu0: f64,
    written: u64,
}

impl BulkRun {
    fn start(bytes: Option<u64>, time: Option<f64>) -> Self {
        BulkRun {
            bytes,
            limit: time.map(Duration::from_secs_f64),
            start: Instant::now(),
            cpu0: cpu_seconds(),
            written: 0,
        }
    }

    /// The size of the next write, or None once `bytes` are written or `time` is up.
    fn next_chunk(&self) -> Option<usize> {
        if self.limit.is_some_and(|l| self.start.elapsed() >= l) {
            return None;
        }
        match self.bytes {
            Some(b) if self.written >= b => None,
            Some(b) => Some((b - self.written).min(BULK_CHUNK as u64) as usize),
            None => Some(BULK_CHUNK),
        }
    }

    /// The run's figures, taken when the server's confirmation has arrived.
    fn confirmed(&self) -> Bulk {
        let secs = self.start.elapsed().as_secs_f64();
        Bulk {
            bytes: self.written,
            seconds: secs,
            cpu_cores: (cpu_seconds() - self.cpu0) / secs.max(1e-9),
        }
    }
}

/// How many warm-up round trips precede `count` timed ones: 1 %, at least 10.
pub fn warm_up(count: u64) -> u64 {
    (count / 100).max(10)
}

/// The timed exchanges of a round-trip run: `warm_up(count)` untimed ones first, then
/// `count` kept; every response must equal its request.
struct Exchanges {
    warm: u64,
    count: u64,
    rtts: Vec<u64>,
}

impl Exchanges {
    fn new(count: u64) -> Self {
        Exchanges {
            warm: warm_up(count),
            count,
            rtts: Vec::with_capacity(count as usize),
        }
    }

    /// Exchanges to run, warm-up included.
    fn total(&self) -> u64 {
        self.warm + self.count
    }

    /// Exchange `i`, started at `t`, answered with `resp`.
    fn record(&mut self, i: u64, t: Instant, req: &[u8], resp: &[u8]) -> io::Result<()> {
        let ns = t.elapsed().as_nanos() as u64;
        if resp != req {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "the echo differs from the request",
            ));
        }
        if i >= self.warm {
            self.rtts.push(ns);
        }
        Ok(())
    }
}

/// Round-trip times (ns) of `count` request/response exchanges of `size` bytes on `s`, after
/// the warm-up exchanges.
pub async fn round_trips<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    count: u64,
    size: u64,
) -> io::Result<Vec<u64>> {
    s.write_all(b"R").await?;
    let req = vec![0x5au8; size as usize];
    let mut resp = vec![0u8; size as usize];
    let mut log = Exchanges::new(count);
    for i in 0..log.total() {
        let t = Instant::now();
        s.write_all(&req).await?;
        s.read_exact(&mut resp).await?;
        log.record(i, t, &req, &resp)?;
    }
    s.shutdown().await?;
    // Wait for the server's end of the stream (for at most a second), so that its FIN is
    // acknowledged before a client process exits: a server left resending its FIN keeps a
    // connection open long after its client has gone.
    let _ = tokio::time::timeout(Duration::from_secs(1), discard_to_end(s)).await;
    Ok(log.rtts)
}

/// Round trips of `count` datagrams of `size` bytes to a UDP echo server at `to` (after the
/// warm-up), each waited for at most one second.
pub async fn udp_round_trips(to: SocketAddr, count: u64, size: u64) -> io::Result<Vec<u64>> {
    let any: SocketAddr = if to.is_ipv6() {
        "[::]:0".parse().expect("addr")
    } else {
        "0.0.0.0:0".parse().expect("addr")
    };
    let sock = tokio::net::UdpSocket::bind(any).await?;
    sock.connect(to).await?;
    let req = vec![0x5au8; size as usize];
    let mut resp = vec![0u8; size as usize + 1];
    let warm = warm_up(count);
    let mut rtts = Vec::with_capacity(count as usize);
    for i in 0..warm + count {
        let t = Instant::now();
        sock.send(&req).await?;
        match tokio::time::timeout(Duration::from_secs(1), sock.recv(&mut resp)).await {
            Ok(Ok(n)) if n == req.len() && resp[..n] == req[..] => {}
            Ok(Ok(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the echo differs from the request",
                ))
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no echo from {to} within 1 s (is `stride perf server --udp` running?)"
                    ),
                ))
            }
        }
        if i >= warm {
            rtts.push(t.elapsed().as_nanos() as u64);
        }
    }
    Ok(rtts)
}

/// The blocking form of [`serve`] (for [`stride::blocking`] streams, std's `TcpStream`):
/// serves one connection of either mode until the client ends its direction. The caller ends
/// ours (a STRIDE close, a TCP shutdown) afterwards.
pub fn serve_blocking<S: std::io::Read + std::io::Write>(
    s: &mut S,
    done: impl FnOnce(u64, f64),
) -> io::Result<()> {
    let mut mode = [0u8; 1];
    s.read_exact(&mut mode)?;
    match mode[0] {
        b'T' => {
            let start = Instant::now();
            let mut buf = vec![0u8; 256 * 1024];
            let mut total = 0u64;
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                total += n as u64;
            }
            s.write_all(b"k")?;
            done(total, start.elapsed().as_secs_f64());
            Ok(())
        }
        b'R' => {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = s.read(&mut buf)?;
                if n == 0 {
                    return Ok(());
                }
                s.write_all(&buf[..n])?;
            }
        }
        m => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown perf mode byte {m:#04x}"),
        )),
    }
}

/// A blocking byte stream whose sending direction can be ended on its own (TCP's
/// `shutdown(Write)`, a STRIDE FIN): what [`bulk_blocking`] needs.
pub trait HalfClose: std::io::Read + std::io::Write {
    /// Ends the sending direction; reads go on.
    fn shutdown_write(&mut self) -> io::Result<()>;
}

impl HalfClose for std::net::TcpStream {
    fn shutdown_write(&mut self) -> io::Result<()> {
        self.shutdown(std::net::Shutdown::Write)
    }
}

impl HalfClose for stride::blocking::Connection {
    fn shutdown_write(&mut self) -> io::Result<()> {
        self.shutdown().map_err(stride::Error::into_io)
    }
}

/// The blocking form of [`bulk`]: sends `bytes` (or for `time` seconds, whichever ends first)
/// after the mode byte, ends the direction and waits for the server's confirmation and end of
/// stream.
pub fn bulk_blocking<S: HalfClose>(
    s: &mut S,
    bytes: Option<u64>,
    time: Option<f64>,
) -> io::Result<Bulk> {
    let chunk = vec![0u8; BULK_CHUNK];
    s.write_all(b"T")?;
    let mut run = BulkRun::start(bytes, time);
    while let Some(n) = run.next_chunk() {
        s.write_all(&chunk[..n])?;
        run.written += n as u64;
    }
    s.shutdown_write()?;
    let mut k = [0u8; 1];
    s.read_exact(&mut k)?;
    let result = run.confirmed();
    let mut sink = [0u8; 64];
    while s.read(&mut sink)? > 0 {}
    Ok(result)
}

/// The blocking form of [`round_trips`]: `count` timed exchanges of `size` bytes after the
/// warm-up ones. The caller ends the stream afterwards.
pub fn round_trips_blocking<S: std::io::Read + std::io::Write>(
    s: &mut S,
    count: u64,
    size: u64,
) -> io::Result<Vec<u64>> {
    s.write_all(b"R")?;
    let req = vec![0x5au8; size as usize];
    let mut resp = vec![0u8; size as usize];
    let mut log = Exchanges::new(count);
    for i in 0..log.total() {
        let t = Instant::now();
        s.write_all(&req)?;
        s.read_exact(&mut resp)?;
        log.record(i, t, &req, &resp)?;
    }
    Ok(log.rtts)
}

/// The blocking form of [`udp_round_trips`] (a std socket, each echo waited for at most one
/// second).
pub fn udp_round_trips_blocking(to: SocketAddr, count: u64, size: u64) -> io::Result<Vec<u64>> {
    let any: SocketAddr = if to.is_ipv6() {
        "[::]:0".parse().expect("addr")
    } else {
        "0.0.0.0:0".parse().expect("addr")
    };
    let sock = std::net::UdpSocket::bind(any)?;
    sock.connect(to)?;
    sock.set_read_timeout(Some(Duration::from_secs(1)))?;
    let req = vec![0x5au8; size as usize];
    let mut resp = vec![0u8; size as usize + 1];
    let warm = warm_up(count);
    let mut rtts = Vec::with_capacity(count as usize);
    for i in 0..warm + count {
        let t = Instant::now();
        sock.send(&req)?;
        match sock.recv(&mut resp) {
            Ok(n) if n == req.len() && resp[..n] == req[..] => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the echo differs from the request",
                ))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "no echo from {to} within 1 s (is `stride perf server --udp` running?)"
                    ),
                ))
            }
            Err(e) => return Err(e),
        }
        if i >= warm {
            rtts.push(t.elapsed().as_nanos() as u64);
        }
    }
    Ok(rtts)
}

/// A blocking UDP echo server on `sock` (the peer of [`udp_round_trips`] and
/// [`udp_round_trips_blocking`]); returns only on a socket error.
pub fn udp_echo_blocking(sock: &std::net::UdpSocket) -> io::Error {
    let mut buf = vec![0u8; 65536];
    loop {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let _ = sock.send_to(&buf[..n], from);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // A previous client's port closed (ICMP): not the server's problem.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return e,
        }
    }
}

/// Summary of round-trip times (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttSummary {
    /// Number of round trips.
    pub count: usize,
    /// Median.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// Mean.
    pub mean: u64,
    /// Minimum.
    pub min: u64,
}

impl RttSummary {
    /// The summary of `rtts` (None when empty).
    pub fn of(mut rtts: Vec<u64>) -> Option<RttSummary> {
        if rtts.is_empty() {
            return None;
        }
        rtts.sort_unstable();
        let q = |p: f64| rtts[((rtts.len() as f64 * p).ceil() as usize).clamp(1, rtts.len()) - 1];
        Some(RttSummary {
            count: rtts.len(),
            p50: q(0.5),
            p99: q(0.99),
            mean: rtts.iter().sum::<u64>() / rtts.len() as u64,
            min: rtts[0],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_summary_quantiles() {
        let s = RttSummary::of((1..=100).collect()).unwrap();
        assert_eq!((s.count, s.p50, s.p99, s.min, s.mean), (100, 50, 99, 1, 50));
        assert!(RttSummary::of(Vec::new()).is_none());
    }
}
