//! The clients of `stride perf client`: a STRIDE endpoint and connection for the harness, a
//! bulk run's per-second intervals, many bulk connections at once, kernel TCP paced by the
//! kernel (`SO_MAX_PACING_RATE`), and the jobs of the blocking clients.

use super::{bulk, bulk_blocking, cpu_seconds, round_trips_blocking, udp_round_trips_blocking};
use super::{Bulk, HalfClose};
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use stride::{ConnStats, Endpoint, EndpointConfig};

/// How long a perf client waits for its connection.
pub const CONNECT_LIMIT: Duration = Duration::from_secs(3);

/// What a perf client measures.
#[derive(Clone, Copy, Debug)]
pub enum Job {
    /// Send `bytes`, or for `time` seconds, whichever ends first (see [`bulk`]).
    Bulk {
        /// Bytes to send.
        bytes: Option<u64>,
        /// Seconds to send for.
        time: Option<f64>,
    },
    /// Time `count` request/response exchanges of `size` bytes each way (see
    /// [`super::round_trips`]).
    RoundTrips {
        /// Timed exchanges (after the warm-up ones).
        count: u64,
        /// Request and response size.
        size: u64,
    },
}

/// The unspecified address of `to`'s family, port 0: where a client binds.
pub fn any_addr(to: SocketAddr) -> SocketAddr {
    if to.is_ipv6() {
        "[::]:0".parse().expect("addr")
    } else {
        "0.0.0.0:0".parse().expect("addr")
    }
}

/// A client endpoint for a server at `to`, with the options `opts` (protocol configuration,
/// DSCP, ...), not listening whatever `opts.listen` says.
pub fn client_endpoint(to: SocketAddr, opts: EndpointConfig) -> stride::Result<Endpoint> {
    let opts = EndpointConfig {
        listen: false,
        ..opts
    };
    Endpoint::bind_with(any_addr(to), opts)
}

/// One second of a STRIDE bulk run as its sender sees it.
#[derive(Clone, Copy, Debug)]
pub struct Interval {
    /// Start of the interval, seconds into the run.
    pub from: f64,
    /// End of the interval (the tick that closed it), seconds into the run.
    pub to: f64,
    /// Bytes the peer acknowledged in the interval.
    pub acked: u64,
    /// Packets retransmitted in the interval.
    pub retransmitted: u64,
    /// Median queueing delay the sender estimated, over the connection so far (ns).
    pub queue_delay_p50: u64,
}

/// A `tick` for [`bulk`] on a STRIDE stream that calls `report` once per second of the run
/// with that second's [`Interval`].
pub fn intervals(mut report: impl FnMut(Interval)) -> impl FnMut(&stride::Stream, Duration, u64) {
    let mut next_report = Duration::from_secs(1);
    let mut last_acked = 0u64;
    let mut last_retx = 0u64;
    move |s: &stride::Stream, el: Duration, written: u64| {
        if el < next_report {
            return;
        }
        let acked = written - s.unacked() as u64;
        let cs = s.stats().unwrap_or_default();
        report(Interval {
            from: next_report.as_secs_f64() - 1.0,
            to: el.as_secs_f64(),
            acked: acked - last_acked,
            retransmitted: cs.retransmitted_packets - last_retx,
            queue_delay_p50: cs.queue_delay.quantile(0.5),
        });
        last_acked = acked;
        last_retx = cs.retransmitted_packets;
        next_report += Duration::from_secs(1);
    }
}

/// One connection of [`parallel_bulk`].
#[derive(Clone, Copy, Debug)]
pub struct OneBulk {
    /// Bytes sent and confirmed.
    pub bytes: u64,
    /// Seconds from its first byte to the server's confirmation.
    pub seconds: f64,
    /// Packets retransmitted (0 over TCP).
    pub retransmitted: u64,
    /// Retransmission timeouts (0 over TCP).
    pub timeouts: u64,
}

/// The outcome of [`parallel_bulk`].
#[derive(Clone, Debug)]
pub struct Parallel {
    /// Each connection's figures, in start order.
    pub connections: Vec<OneBulk>,
    /// STRIDE client endpoints the connections were spread over (0 over TCP).
    pub endpoints: usize,
    /// Seconds from the first start to the last confirmation.
    pub seconds: f64,
    /// CPU cores this process used meanwhile.
    pub cpu_cores: f64,
}

/// One bulk connection to `to`: over STRIDE from `ep`, else over TCP.
async fn one_bulk(
    to: SocketAddr,
    bytes: Option<u64>,
    time: Option<f64>,
    ep: Option<Endpoint>,
) -> Result<OneBulk, String> {
    match ep {
        Some(ep) => {
            let mut s = ep
                .connect_timeout(to, CONNECT_LIMIT)
                .await
                .map_err(|e| format!("cannot connect to {to}: {e}"))?;
            let b = bulk(&mut s, bytes, time, |_, _, _| {})
                .await
                .map_err(|e| format!("transfer failed: {e}"))?;
            let cs = s.stats().unwrap_or_default();
            Ok(OneBulk {
                bytes: b.bytes,
                seconds: b.seconds,
                retransmitted: cs.retransmitted_packets,
                timeouts: cs.timeouts,
            })
        }
        None => {
            let mut s = tokio::net::TcpStream::connect(to)
                .await
                .map_err(|e| format!("cannot connect to {to}: {e}"))?;
            let _ = s.set_nodelay(true);
            let b = bulk(&mut s, bytes, time, |_, _, _| {})
                .await
                .map_err(|e| format!("transfer failed: {e}"))?;
            Ok(OneBulk {
                bytes: b.bytes,
                seconds: b.seconds,
                retransmitted: 0,
                timeouts: 0,
            })
        }
    }
}

/// `n` bulk connections to `to` at once, `bytes` split evenly between them: over STRIDE with
/// the endpoint options `opts` (spread over `k` client endpoints, at most `n`), else over
/// kernel TCP. An error names the first connection that failed (or the endpoint that could
/// not be bound).
pub async fn parallel_bulk(
    to: SocketAddr,
    (n, k): (usize, usize),
    bytes: Option<u64>,
    time: Option<f64>,
    opts: Option<&EndpointConfig>,
) -> Result<Parallel, String> {
    let mut eps = Vec::new();
    if let Some(opts) = opts {
        for _ in 0..k.min(n) {
            eps.push(client_endpoint(to, opts.clone()).map_err(|e| e.to_string())?);
        }
    }
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let share = bytes.map(|b| b / n as u64 + u64::from(i < b % n as u64));
        let ep = (!eps.is_empty()).then(|| eps[i as usize % eps.len()].clone());
        tasks.push(tokio::spawn(one_bulk(to, share, time, ep)));
    }
    let mut connections = Vec::with_capacity(n);
    for t in tasks {
        connections.push(t.await.map_err(|e| e.to_string())??);
    }
    let seconds = start.elapsed().as_secs_f64();
    Ok(Parallel {
        connections,
        endpoints: eps.len(),
        seconds,
        cpu_cores: (cpu_seconds() - cpu0) / seconds.max(1e-9),
    })
}

/// A kernel TCP connection to `to` (`TCP_NODELAY` set); with `pace` (bytes per second), paced
/// by the kernel at that rate ([`set_max_pacing_rate`]). The error is the message to show.
pub async fn tcp_client(
    to: SocketAddr,
    pace: Option<u64>,
) -> Result<tokio::net::TcpStream, String> {
    let s = tokio::net::TcpStream::connect(to)
        .await
        .map_err(|e| format!("cannot connect to {to}: {e}"))?;
    let _ = s.set_nodelay(true);
    if let Some(bytes_per_sec) = pace {
        set_max_pacing_rate(&s, bytes_per_sec)
            .map_err(|e| format!("cannot pace the TCP socket (SO_MAX_PACING_RATE): {e}"))?;
    }
    Ok(s)
}

/// Caps a socket's pacing rate (Linux `SO_MAX_PACING_RATE`, 64-bit since 4.20): TCP's own
/// pacing timer, or the `fq` qdisc where it is installed.
pub fn set_max_pacing_rate(s: &impl std::os::fd::AsRawFd, bytes_per_sec: u64) -> io::Result<()> {
    // SAFETY: passes a live u64 and its size for the duration of the call.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            &bytes_per_sec as *const u64 as *const libc::c_void,
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// What a blocking client's job gave.
#[derive(Debug)]
pub enum Done {
    /// The round-trip times (ns).
    Rtts(Vec<u64>),
    /// A bulk run, with the connection's counters over STRIDE.
    Bulk(Bulk, Option<Box<ConnStats>>),
}

/// Runs `job` on a blocking stream (the caller ends the stream afterwards).
pub fn blocking_job<S: HalfClose>(s: &mut S, job: Job) -> io::Result<Done> {
    match job {
        Job::RoundTrips { count, size } => round_trips_blocking(s, count, size).map(Done::Rtts),
        Job::Bulk { bytes, time } => bulk_blocking(s, bytes, time).map(|b| Done::Bulk(b, None)),
    }
}

/// `job` over raw UDP datagrams with blocking calls (round trips only: a bulk job is refused
/// with `InvalidInput`).
pub fn udp_blocking(to: SocketAddr, job: Job) -> io::Result<Done> {
    match job {
        Job::RoundTrips { count, size } => {
            udp_round_trips_blocking(to, count, size).map(Done::Rtts)
        }
        Job::Bulk { .. } => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "raw UDP runs round trips only",
        )),
    }
}

/// `job` over kernel TCP with blocking calls: connects (within [`CONNECT_LIMIT`]), runs it and,
/// after round trips, ends the stream and takes the server's end.
pub fn tcp_blocking(to: SocketAddr, job: Job) -> io::Result<Done> {
    let mut s = std::net::TcpStream::connect_timeout(&to, CONNECT_LIMIT)?;
    s.set_nodelay(true)?;
    let d = blocking_job(&mut s, job)?;
    if let Done::Rtts(_) = d {
        s.shutdown(std::net::Shutdown::Write)?;
        let _ = io::copy(&mut s, &mut io::sink());
    }
    Ok(d)
}

/// `job` on a connected blocking STRIDE connection, which is closed afterwards (waiting at
/// most 2 s); a bulk run comes with the connection's counters.
pub fn stride_blocking(mut c: stride::blocking::Connection, job: Job) -> io::Result<Done> {
    let d = blocking_job(&mut c, job);
    let stats = {
        let (ep, id) = c.endpoint();
        ep.conn_stats(id).map(Box::new)
    };
    let _ = c.close(Duration::from_secs(2));
    d.map(|d| match d {
        Done::Bulk(b, _) => Done::Bulk(b, stats),
        other => other,
    })
}
