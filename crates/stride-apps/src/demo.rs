//! The demonstration behind `stride demo`: a receiver, a bottleneck and a sender in one
//! process, the sender writing a fixed amount through the bottleneck to the receiver, which
//! reads it to the end. [`Demo::start`] puts the [`relay`](crate::relay) on loopback in
//! between; [`Demo::through`] takes endpoints bound elsewhere and a path between them that
//! someone else made (the namespace testbed's kernel bottleneck, `stride_testbed::demo`).
//!
//! ```no_run
//! # async fn demo() -> Result<(), stride_apps::demo::DemoError> {
//! use stride_apps::demo::{Demo, DemoConfig};
//! let d = Demo::start(DemoConfig {
//!     bytes: 10_000_000,
//!     rate_bps: 1_000_000_000,
//!     delay_ns: 20_000,
//!     queue_bytes: 256 << 10,
//!     receiver: stride::host_config(10_000_000_000),
//!     sender: stride::host_config(1_000_000_000),
//! })?;
//! let out = d.run(|p| println!("{} bytes acknowledged", p.acked)).await?;
//! println!("{} of {} bytes in {:.3} s", out.received, out.written, out.seconds);
//! # Ok(()) }
//! ```

use crate::perf::discard_to_end;
use crate::relay::{Relay, RelayConfig, RelayStats};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use stride::{ConnStats, Endpoint, EndpointConfig, IoStats};
use tokio::io::AsyncWriteExt;

/// An error of the demonstration (binding, connecting, writing, receiving), shown as the
/// error it wraps.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// An endpoint's.
    #[error(transparent)]
    Stride(#[from] stride::Error),
    /// A socket's or a stream's.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The receiving task's.
    #[error(transparent)]
    Join(#[from] tokio::task::JoinError),
}

/// Bytes handed over per write.
const CHUNK: usize = 256 * 1024;
/// How often the sender reports its [`Progress`].
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// What to run.
#[derive(Clone, Debug)]
pub struct DemoConfig {
    /// Bytes the sender writes.
    pub bytes: u64,
    /// The relay's bottleneck rate (bits per second).
    pub rate_bps: u64,
    /// The relay's one-way delay (ns).
    pub delay_ns: u64,
    /// The relay's drop-tail queue (bytes).
    pub queue_bytes: u64,
    /// The receiver's protocol configuration.
    pub receiver: stride::Config,
    /// The sender's protocol configuration.
    pub sender: stride::Config,
}

/// The receiver, the bottleneck and the sender, bound and ready ([`Demo::start`],
/// [`Demo::through`]).
pub struct Demo {
    receiver: Endpoint,
    /// The relay this demo started (None: the path is someone else's).
    relay: Option<Relay>,
    sender: Endpoint,
    /// Where the sender connects.
    to: SocketAddr,
    bytes: u64,
}

/// The sender's view, reported about every 200 ms while it writes.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Bytes the receiver acknowledged so far.
    pub acked: u64,
    /// Goodput since the last report (Gbit/s).
    pub goodput_gbps: f64,
    /// The connection's counters now.
    pub stats: ConnStats,
}

/// The outcome of [`Demo::run`].
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Bytes the sender wrote.
    pub written: u64,
    /// Seconds from the first write to the end of the sender's stream being acknowledged.
    pub seconds: f64,
    /// Bytes the receiver read.
    pub received: u64,
    /// The sender's connection counters.
    pub stats: ConnStats,
    /// The relay's counters (None without a relay, [`Demo::through`]).
    pub relay: Option<RelayStats>,
    /// When the sender's first write began (after the handshake).
    pub started: Instant,
    /// The receiver endpoint's I/O counters (socket drops, late reads).
    pub receiver_io: IoStats,
}

impl Demo {
    /// Binds the receiver, the relay in front of it and the sender, all on loopback.
    pub fn start(cfg: DemoConfig) -> Result<Demo, DemoError> {
        let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let receiver = Endpoint::bind_with(
            lo,
            EndpointConfig {
                proto: cfg.receiver,
                ..EndpointConfig::default()
            },
        )?;
        let mut rc = RelayConfig::new(lo, receiver.local_addr());
        rc.rate_bps = cfg.rate_bps;
        rc.delay_ns = cfg.delay_ns;
        rc.queue_bytes = cfg.queue_bytes;
        let relay = Relay::spawn(rc)?;
        let sender = Endpoint::bind_with(
            lo,
            EndpointConfig {
                proto: cfg.sender,
                listen: false,
                ..EndpointConfig::default()
            },
        )?;
        let to = relay.local_addr();
        Ok(Demo {
            receiver,
            relay: Some(relay),
            sender,
            to,
            bytes: cfg.bytes,
        })
    }

    /// The demonstration over a path it did not make: `sender` (not listening) writes `bytes`
    /// to `to`, where the path delivers them to `receiver` (listening). The endpoints may be
    /// bound anywhere, in other network namespaces too (a socket stays in the namespace it was
    /// made in).
    pub fn through(receiver: Endpoint, sender: Endpoint, to: SocketAddr, bytes: u64) -> Demo {
        Demo {
            receiver,
            relay: None,
            sender,
            to,
            bytes,
        }
    }

    /// The sender's address.
    pub fn sender_addr(&self) -> SocketAddr {
        self.sender.local_addr()
    }

    /// The relay's address, where the sender connects (None without a relay).
    pub fn relay_addr(&self) -> Option<SocketAddr> {
        self.relay.as_ref().map(Relay::local_addr)
    }

    /// Where the sender connects: the relay, or the receiver across someone else's path.
    pub fn target(&self) -> SocketAddr {
        self.to
    }

    /// The receiver's address.
    pub fn receiver_addr(&self) -> SocketAddr {
        self.receiver.local_addr()
    }

    /// Runs the transfer: the receiver reads to the end while the sender writes its bytes
    /// through the bottleneck, reporting its [`Progress`] about every 200 ms; then stops the
    /// relay, if it has one.
    pub async fn run(self, mut progress: impl FnMut(Progress)) -> Result<Outcome, DemoError> {
        let rx_ep = self.receiver.clone();
        let sink = tokio::spawn(async move {
            let mut s = rx_ep.accept().await.map_err(stride::Error::into_io)?;
            let total = discard_to_end(&mut s).await?;
            s.shutdown().await?;
            Ok::<u64, std::io::Error>(total)
        });
        let mut s = self
            .sender
            .connect_timeout(self.to, Duration::from_secs(3))
            .await?;
        let chunk = vec![0x5au8; CHUNK];
        let start = Instant::now();
        let mut written = 0u64;
        let mut last = (Instant::now(), 0u64);
        while written < self.bytes {
            let n = (self.bytes - written).min(chunk.len() as u64) as usize;
            s.write_all(&chunk[..n]).await?;
            written += n as u64;
            if last.0.elapsed() >= PROGRESS_EVERY {
                let acked = written - s.unacked() as u64;
                let stats = s.stats().unwrap_or_default();
                let rate = (acked - last.1) as f64 * 8.0 / last.0.elapsed().as_secs_f64() / 1e9;
                progress(Progress {
                    acked,
                    goodput_gbps: rate,
                    stats,
                });
                last = (Instant::now(), acked);
            }
        }
        s.shutdown().await?;
        let seconds = start.elapsed().as_secs_f64();
        let received = sink.await??;
        let stats = s.stats().unwrap_or_default();
        let relay = self.relay.map(Relay::stop);
        Ok(Outcome {
            written,
            seconds,
            received,
            stats,
            relay,
            started: start,
            receiver_io: self.receiver.io_stats(),
        })
    }
}
