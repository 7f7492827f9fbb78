//! Where an experiment runs (the namespace topology, or loopback behind the relay fallback) and
//! what every experiment shares there: STRIDE's configuration, the background generator, the
//! bottleneck's drop counter, sender threads, and the clean-up on SIGINT/SIGTERM.

use crate::flows::{self, Background};
use crate::scenario::{Mode, Pattern, Testbed};
use crate::topo::{self, Host, Topology};
use anyhow::bail;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The environment an experiment runs in.
pub(crate) struct Env {
    pub(crate) topo: Option<Topology>,
    pub(crate) sender: Host,
    pub(crate) receiver: Host,
    pub(crate) generator: Host,
    pub(crate) recv_ip: IpAddr,
    pub(crate) mode: &'static str,
}

impl Env {
    /// Builds the namespace topology, or (relay mode, or auto without privilege) the loopback
    /// environment of the relay fallback.
    pub(crate) fn new(tb: &Testbed, mode: Mode) -> anyhow::Result<Env> {
        let netns = match mode {
            Mode::Netns => {
                if let Some(why) = topo::netns_unavailable(topo::euid()) {
                    bail!("{why}");
                }
                true
            }
            Mode::Relay => false,
            Mode::Auto => {
                let why = topo::netns_unavailable(topo::euid());
                if let Some(w) = &why {
                    eprintln!("stride testbed: falling back to the userspace relay: {w}");
                }
                why.is_none()
            }
        };
        if netns {
            let t = Topology::up(tb.link.clone())?;
            Ok(Env {
                sender: t.sender_host(),
                receiver: t.receiver_host(),
                generator: t.generator_host(),
                recv_ip: topo::receiver_ip(),
                topo: Some(t),
                mode: "netns",
            })
        } else {
            Ok(Env {
                topo: None,
                sender: Host::Local,
                receiver: Host::Local,
                generator: Host::Local,
                recv_ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                mode: "relay",
            })
        }
    }
}

/// Counts packets dropped at the bottleneck (qdisc counters, or the relay's queue drops).
pub(crate) type DropCounter = Arc<dyn Fn() -> u64 + Send + Sync>;

/// STRIDE's host configuration for line rate `line_bps` with ACK interval `ack`.
pub(crate) fn stride_config(line_bps: u64, ack: u32) -> stride::Config {
    let mut c = stride::host_config(line_bps);
    c.ack_interval = ack;
    c
}

/// The flow receiver in the receiver's namespace, with the file's STRIDE configuration (line
/// rate, ACK interval) and traffic class.
pub(crate) fn start_receiver(tb: &Testbed, env: &Env) -> anyhow::Result<flows::Receiver> {
    flows::Receiver::start(
        &env.receiver,
        env.recv_ip,
        vec![stride_config(tb.line_bps, tb.ack_interval)],
        tb.dscp,
    )
}

/// The options of a sending STRIDE endpoint with protocol configuration `proto`: not
/// listening, its datagrams marked with the file's `stride.dscp`.
pub(crate) fn sender_options(tb: &Testbed, proto: stride::Config) -> stride::EndpointConfig {
    stride::EndpointConfig {
        proto,
        listen: false,
        dscp: tb.dscp,
        ..stride::EndpointConfig::default()
    }
}

/// The bottleneck's counters at one moment ([`QdiscProbe::sample`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ProbeSample {
    /// The root qdisc's counters (as [`QdiscProbe::stats`]).
    pub(crate) root: topo::QdiscStats,
    /// STRIDE's class's leaf queue and the other class's ([`topo::Qdisc::HtbDscp`] only).
    pub(crate) bands: Option<(topo::QdiscStats, topo::QdiscStats)>,
}

/// Reads the bottleneck qdisc's counters in its namespace.
pub(crate) struct QdiscProbe {
    ns: String,
    _link: topo::Bottleneck,
}

impl QdiscProbe {
    /// The probe of `t`'s bottleneck.
    pub(crate) fn of(t: &Topology) -> QdiscProbe {
        QdiscProbe {
            ns: t.bottleneck.clone(),
            _link: t.link.clone(),
        }
    }

    /// The counters now (zeros when `tc` cannot be read).
    pub(crate) fn stats(&self) -> topo::QdiscStats {
        self.sample().root
    }

    /// The root's counters and, with STRIDE in a class of its own, each class's leaf queue's
    /// (from one `tc` call).
    pub(crate) fn sample(&self) -> ProbeSample {
        let out = self.show();
        let root = topo::parse_qdisc_stats(&out).unwrap_or_default();
        let qs = topo::parse_qdiscs(&out);
        let leaf = |class: &str| {
            qs.iter()
                .find(|q| q.parent.as_deref() == Some(class))
                .map(|q| q.stats)
        };
        let bands = match (leaf(topo::STRIDE_CLASS), leaf(topo::OTHER_CLASS)) {
            (Some(s), Some(o)) => Some((s, o)),
            _ => None,
        };
        ProbeSample { root, bands }
    }

    /// `tc -s qdisc show` of the bottleneck device (empty when it cannot be run).
    fn show(&self) -> String {
        let out = std::process::Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "tc",
                "-s",
                "qdisc",
                "show",
                "dev",
                topo::BOTTLENECK_DEV,
            ])
            .output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Packets dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.stats().dropped
    }
}

/// Starts the background generator of pattern `p` towards `to` (iperf3 or the pinned-rate
/// sender, as the file says).
pub(crate) fn start_background(
    tb: &Testbed,
    env: &Env,
    p: &Pattern,
    to: SocketAddr,
) -> anyhow::Result<Background> {
    if tb.file.background.generator == "iperf3" {
        let (Some(t), Pattern::Fixed(rate)) = (&env.topo, p) else {
            bail!(
                "field `background.generator`: iperf3 runs only the fixed pattern in the namespace testbed; use \"pinned\""
            );
        };
        return Background::start_iperf3(
            &t.generator,
            &t.receiver,
            SocketAddr::new(env.recv_ip, 5201),
            *rate,
            tb.file.background.packet as usize,
        );
    }
    Ok(Background::start(
        &env.generator,
        p.clone(),
        to,
        tb.file.background.packet as usize,
    ))
}

/// Runs the future `job` makes on a new thread in `host`'s namespace, on a current-thread
/// tokio runtime of its own.
pub(crate) fn spawn_async<T, F, Fut>(
    host: &Host,
    name: &str,
    job: F,
) -> JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = anyhow::Result<T>>,
{
    host.spawn(name, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(job())
    })
}

/// Waits for `h`; a panic on that thread is an error saying `who` panicked.
pub(crate) fn join<T>(h: JoinHandle<anyhow::Result<T>>, who: &str) -> anyhow::Result<T> {
    h.join().map_err(|_| anyhow::anyhow!("{who} panicked"))?
}

/// Blocks SIGINT and SIGTERM in this thread (and so in every thread started after) and
/// starts a thread that waits for them: on either it stops the iperf3 processes this run
/// started, deletes this process's namespaces and exits with 130, so an interrupted run
/// leaves nothing behind. Call it first, before any thread is started.
pub fn clean_up_on_interrupt() {
    // SAFETY: signal-set manipulation on sets we own; sigwait in a dedicated thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        std::thread::spawn(move || {
            let mut sig = 0;
            libc::sigwait(&set, &mut sig);
            eprintln!("stride testbed: interrupted, removing the namespaces");
            for pid in flows::CHILD_PIDS
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default()
            {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
            for ns in topo::namespaces_with_prefix(&topo::ns_prefix()) {
                let _ = std::process::Command::new("ip")
                    .args(["netns", "del", &ns])
                    .output();
            }
            std::process::exit(130);
        });
    }
}
