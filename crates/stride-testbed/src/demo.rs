//! `stride demo` through a kernel bottleneck: the demonstration of `stride_apps::demo` with its
//! sender and receiver in network namespaces of the testbed's [`Topology`], the bottleneck a
//! `tbf` qdisc, so that what it measures is the protocol against a kernel queue rather than the
//! scheduling of a userspace emulator; or, where namespaces cannot be made (not root, no
//! iproute2, a container without CAP_SYS_ADMIN), through the userspace relay on loopback, as
//! before. [`start`] picks the path ([`Via`]) and says which it took and why.
//!
//! The parameters mean the same on both paths. The rate and the queue count UDP payload bytes:
//! the relay counts what it forwards, the qdisc is given a size table that takes the Ethernet,
//! IPv4 and UDP headers off each packet ([`topo::UDP_PAYLOAD_OVERHEAD`]; the sender's veth
//! segments GSO batches into datagrams before they reach it, so the count is exact per
//! datagram). The delay is added to both directions: by the relay, or by `netem` on the two end
//! namespaces' egress; when none is asked for, the namespace path adds nothing to its veths'
//! own delay and the relay adds its default, [`RELAY_DELAY_NS`]. A kernel without `netem` can
//! run the namespace path only without an added delay.
//!
//! The qdisc's own counters are sampled while the transfer runs (from `tc -s qdisc`, as the
//! testbed reads them): its backlog, its drops, and the drops after the first
//! [`LATE_DROP_NS`] of the transfer (the relay's
//! `queue_drops_late`). The namespaces are removed when the run ends, fails, or is dropped (a
//! signal handler that drops the run before exiting leaves nothing behind).

use crate::topo::{self, Bottleneck, Host, Qdisc, QdiscStats, Topology};
use anyhow::{bail, Context};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use stride::{Endpoint, EndpointConfig};
use stride_apps::demo::{Demo, DemoConfig, Outcome, Progress};
use stride_apps::relay::{RelayStats, LATE_DROP_NS};

/// The one-way delay the relay adds when none is asked for (`stride demo`'s historic default).
pub const RELAY_DELAY_NS: u64 = 20_000;
/// The token bucket of the qdisc (the testbed files' default burst): deep enough that a late
/// kernel timer does not cost the link capacity, as it costs the relay's model none.
pub const QDISC_BURST_BYTES: u64 = 16 * 1024;
/// The receiver's port in its namespace.
const RECEIVER_PORT: u16 = 7000;
/// How often the qdisc is sampled during the first 100 ms of the transfer, and after.
const SAMPLE_EARLY: Duration = Duration::from_millis(10);
const SAMPLE_LATER: Duration = Duration::from_millis(50);

/// Which path `stride demo --via` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// The userspace relay on loopback.
    Relay,
    /// The kernel `tbf` between namespaces; an error where they cannot be made.
    Netns,
    /// The namespaces where they can be made, the relay otherwise.
    Auto,
}

impl std::str::FromStr for Via {
    type Err = String;
    fn from_str(s: &str) -> Result<Via, String> {
        match s {
            "relay" => Ok(Via::Relay),
            "netns" => Ok(Via::Netns),
            "auto" => Ok(Via::Auto),
            _ => Err(format!("{s:?} is not relay, netns or auto")),
        }
    }
}

/// The path a demonstration took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// The userspace relay on loopback.
    Relay,
    /// The kernel `tbf` between network namespaces.
    Netns,
}

impl Path {
    /// `relay` or `netns` (the `path` field of `stride demo --json`).
    pub fn name(self) -> &'static str {
        match self {
            Path::Relay => "relay",
            Path::Netns => "netns",
        }
    }
}

/// The path `via` leads to with an added one-way delay of `delay_ns` (None: not asked for),
/// and, when `Auto` fell back to the relay, why. `Netns` where it cannot run is an error
/// saying why.
pub fn choose(via: Via, delay_ns: Option<u64>) -> anyhow::Result<(Path, Option<String>)> {
    let why = match via {
        Via::Relay => return Ok((Path::Relay, None)),
        Via::Netns | Via::Auto => netns_refusal(delay_ns),
    };
    match (via, why) {
        (_, None) => Ok((Path::Netns, None)),
        (Via::Netns, Some(w)) => bail!("--via netns: {w} (--via relay runs without namespaces)"),
        (_, Some(w)) => Ok((Path::Relay, Some(w))),
    }
}

/// Why the namespace path cannot run here with this delay, if it cannot.
fn netns_refusal(delay_ns: Option<u64>) -> Option<String> {
    if let Some(why) = topo::netns_missing(topo::euid()) {
        return Some(why);
    }
    match delay_ns {
        Some(d) if d > 0 => topo::netem_unavailable()
            .map(|why| format!("{why}, so it cannot add the --delay asked for (--delay 0 can)")),
        _ => None,
    }
}

/// A demonstration bound and ready on the path [`start`] chose.
pub struct Started {
    path: Path,
    fallback: Option<String>,
    delay_ns: u64,
    demo: Demo,
    /// The namespaces (None on the relay path); dropped after `demo`.
    topo: Option<Topology>,
}

/// The outcome of [`Started::run`].
#[derive(Clone, Debug)]
pub struct Finished {
    /// The path taken.
    pub path: Path,
    /// The transfer's outcome ([`Outcome::relay`] is set on the relay path).
    pub demo: Outcome,
    /// The qdisc's counters (the namespace path).
    pub qdisc: Option<QdiscReport>,
}

/// The bottleneck qdisc's own view of a transfer through it.
#[derive(Clone, Debug, Default)]
pub struct QdiscReport {
    /// At the end: bytes (as the qdisc counts them: UDP payload) and packets it sent, packets
    /// it dropped.
    pub end: QdiscStats,
    /// Packets dropped after the first [`LATE_DROP_NS`] of the transfer (counted from the last
    /// sample at or before that moment, so never fewer than there were).
    pub dropped_late: u64,
    /// Backlog samples taken while the sender wrote (every 10 ms for 100 ms, then every 50 ms).
    pub samples: usize,
    /// The largest and the median sampled backlog, bytes as the qdisc counts them.
    pub backlog_max_bytes: u64,
    /// The median sampled backlog.
    pub backlog_median_bytes: u64,
}

/// Binds the demonstration on the path `via` leads to ([`choose`]): on the namespace path,
/// builds the topology with a `tbf` bottleneck of `cfg.rate_bps` and `cfg.queue_bytes` (both in
/// UDP payload bytes, as the relay's), adds `delay_ns` each way when given and above 0, and binds
/// the receiver and the sender in their namespaces. `cfg.delay_ns` is ignored: the delay is
/// `delay_ns`, or when it is None, [`RELAY_DELAY_NS`] on the relay and nothing on the namespaces.
pub fn start(via: Via, delay_ns: Option<u64>, mut cfg: DemoConfig) -> anyhow::Result<Started> {
    let (path, fallback) = choose(via, delay_ns)?;
    if path == Path::Relay {
        cfg.delay_ns = delay_ns.unwrap_or(RELAY_DELAY_NS);
        return Ok(Started {
            path,
            fallback,
            delay_ns: cfg.delay_ns,
            demo: Demo::start(cfg)?,
            topo: None,
        });
    }
    let t = Topology::up(Bottleneck {
        rate_bps: cfg.rate_bps,
        queue_bytes: cfg.queue_bytes,
        burst_bytes: QDISC_BURST_BYTES,
        qdisc: Qdisc::Tbf,
        overhead: topo::UDP_PAYLOAD_OVERHEAD,
    })?;
    let delay = delay_ns.unwrap_or(0);
    if delay > 0 {
        t.add_delay(delay)?;
    }
    // Every datagram reaches the qdisc on its own, so its size table counts each one's headers.
    t.segment_before_bottleneck()?;
    let to = SocketAddr::new(topo::receiver_ip(), RECEIVER_PORT);
    let receiver = bind_in(&t.receiver_host(), to, cfg.receiver, true)?;
    let any = SocketAddr::new(IpAddr::V4(topo::SENDER_IP), 0);
    let sender = bind_in(&t.sender_host(), any, cfg.sender, false)?;
    Ok(Started {
        path,
        fallback,
        delay_ns: delay,
        demo: Demo::through(receiver, sender, to, cfg.bytes),
        topo: Some(t),
    })
}

/// An endpoint bound to `addr` inside `host`'s namespace (from a thread that entered it).
fn bind_in(
    host: &Host,
    addr: SocketAddr,
    proto: stride::Config,
    listen: bool,
) -> anyhow::Result<Endpoint> {
    let h = host.spawn("demo-bind", move || {
        let opts = EndpointConfig {
            proto,
            listen,
            ..EndpointConfig::default()
        };
        Endpoint::bind_with(addr, opts).with_context(|| format!("bind {addr}"))
    });
    h.join()
        .map_err(|_| anyhow::anyhow!("binding {addr} panicked"))?
}

impl Started {
    /// The path taken.
    pub fn path(&self) -> Path {
        self.path
    }

    /// Why `Via::Auto` took the relay (None when it did not fall back).
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The one-way delay added to the path (ns, each direction).
    pub fn delay_ns(&self) -> u64 {
        self.delay_ns
    }

    /// The sender's address.
    pub fn sender_addr(&self) -> SocketAddr {
        self.demo.sender_addr()
    }

    /// The receiver's address.
    pub fn receiver_addr(&self) -> SocketAddr {
        self.demo.receiver_addr()
    }

    /// The relay's address (the relay path).
    pub fn relay_addr(&self) -> Option<SocketAddr> {
        self.demo.relay_addr()
    }

    /// The namespaces made for this run (none on the relay path); gone once it has ended or
    /// been dropped.
    pub fn namespaces(&self) -> Vec<String> {
        self.topo
            .as_ref()
            .map(Topology::namespaces)
            .unwrap_or_default()
    }

    /// Runs the transfer ([`Demo::run`]), sampling the qdisc on the namespace path; removes
    /// the namespaces when it ends, also in error. Dropped before its end (a signal), it
    /// removes them too.
    pub async fn run(self, progress: impl FnMut(Progress)) -> anyhow::Result<Finished> {
        let Started {
            path, demo, topo, ..
        } = self;
        let Some(t) = topo else {
            let demo = demo.run(progress).await?;
            return Ok(Finished {
                path,
                demo,
                qdisc: None,
            });
        };
        let sampler = Sampler::start(&t);
        let out = run_in(&t.sender_host(), demo, progress).await;
        let samples = sampler.finish();
        let out = out?;
        let end = t.qdisc_stats()?;
        drop(t);
        Ok(Finished {
            path,
            qdisc: Some(report(&samples?, end, out.started)),
            demo: out,
        })
    }
}

/// Runs `demo` on a thread in `host`'s namespace (whatever the sender looks up, its route's
/// MTU first, is that namespace's), on a runtime of its own with the CLI's two workers, and
/// hands its progress reports to `progress` here. Dropped before the end, it stops the run.
async fn run_in(
    host: &Host,
    demo: Demo,
    mut progress: impl FnMut(Progress),
) -> anyhow::Result<Outcome> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    // Dropping `_cancel` (this future dropped) ends the run on its thread.
    let (_cancel, cancelled) = tokio::sync::oneshot::channel::<()>();
    let _thread = host.spawn("demo-sender", move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let run = demo.run(move |p| {
                let _ = tx.send(p);
            });
            tokio::select! {
                out = run => {
                    let _ = done_tx.send(out.map_err(anyhow::Error::from));
                }
                _ = cancelled => {}
            }
        });
        Ok(())
    });
    while let Some(p) = rx.recv().await {
        progress(p);
    }
    done_rx
        .await
        .map_err(|_| anyhow::anyhow!("the sending thread ended without an outcome"))?
}

/// The qdisc's counters at moments of the run.
type Samples = Vec<(Instant, QdiscStats)>;

/// The qdisc sampled from a thread in the bottleneck's namespace until finished or dropped.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<anyhow::Result<Samples>>>,
}

impl Sampler {
    fn start(t: &Topology) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let host = Host::Ns(t.bottleneck.clone());
        let thread = host.spawn("qdisc-sampler", move || {
            let begin = Instant::now();
            let mut v = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                // `tc` started from this thread runs in its namespace.
                v.push((Instant::now(), tc_stats()?));
                let every = if begin.elapsed() < Duration::from_millis(100) {
                    SAMPLE_EARLY
                } else {
                    SAMPLE_LATER
                };
                std::thread::sleep(every);
            }
            Ok(v)
        });
        Sampler {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> anyhow::Result<Samples> {
        self.stop.store(true, Ordering::Relaxed);
        let h = self.thread.take().expect("joined once");
        h.join()
            .map_err(|_| anyhow::anyhow!("the qdisc sampler panicked"))?
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The bottleneck's counters, read by `tc` in the calling thread's namespace.
fn tc_stats() -> anyhow::Result<QdiscStats> {
    let out = std::process::Command::new("tc")
        .args(["-s", "qdisc", "show", "dev", topo::BOTTLENECK_DEV])
        .output()
        .context("run tc")?;
    let text = String::from_utf8_lossy(&out.stdout);
    topo::parse_qdisc_stats(&text).with_context(|| format!("cannot read qdisc counters: {text:?}"))
}

/// The report from the samples, the counters at the end and the transfer's start.
fn report(samples: &[(Instant, QdiscStats)], end: QdiscStats, started: Instant) -> QdiscReport {
    let cut = started + Duration::from_nanos(LATE_DROP_NS);
    let early = samples
        .iter()
        .take_while(|(t, _)| *t <= cut)
        .last()
        .map_or(0, |(_, s)| s.dropped);
    let mut backlog: Vec<u64> = samples
        .iter()
        .filter(|(t, _)| *t >= started)
        .map(|(_, s)| s.backlog_bytes)
        .collect();
    backlog.sort_unstable();
    QdiscReport {
        end,
        dropped_late: end.dropped.saturating_sub(early),
        samples: backlog.len(),
        backlog_max_bytes: backlog.last().copied().unwrap_or(0),
        backlog_median_bytes: backlog.get(backlog.len() / 2).copied().unwrap_or(0),
    }
}

/// The relay's counters of a relay-path outcome (for callers printing either path).
pub fn relay_stats(f: &Finished) -> Option<&RelayStats> {
    f.demo.relay.as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64, dropped: u64, backlog: u64) -> (Instant, QdiscStats) {
        let s = QdiscStats {
            dropped,
            backlog_bytes: backlog,
            ..QdiscStats::default()
        };
        (base + Duration::from_millis(ms), s)
    }

    #[test]
    fn late_drops_count_from_the_last_sample_within_the_first_10_ms() {
        let t0 = Instant::now();
        let started = t0 + Duration::from_millis(5);
        let samples = [
            at(t0, 0, 0, 0),
            at(t0, 10, 3, 1000),
            // 15 ms is past the first 10 ms of the transfer (which began at 5 ms).
            at(t0, 20, 7, 9000),
            at(t0, 30, 7, 4000),
        ];
        let end = QdiscStats {
            dropped: 9,
            ..QdiscStats::default()
        };
        let r = report(&samples, end, started);
        assert_eq!(r.dropped_late, 6);
        // Backlog from the samples taken while the sender wrote (not the one before it).
        assert_eq!(r.samples, 3);
        assert_eq!((r.backlog_max_bytes, r.backlog_median_bytes), (9000, 4000));
        // No sample within the first 10 ms: every drop counts as late.
        assert_eq!(report(&samples[2..], end, started).dropped_late, 9);
    }
}
