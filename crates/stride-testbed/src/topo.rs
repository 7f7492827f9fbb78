//! The testbed's topology: four network namespaces joined by veth pairs.
//!
//! ```text
//!  sender 10.77.1.1 ── 10.77.1.2 ┐
//!                                 bottleneck ── 10.77.2.2 ══tbf/htb══> 10.77.2.1 receiver
//!  generator 10.77.3.1 ─ 10.77.3.2 ┘
//! ```
//!
//! The bottleneck namespace routes between the three links; its egress towards the receiver
//! carries the rate limit (`tbf`, or `htb` with one class) with a drop-tail queue of the stated
//! size, or (`htb-dscp`) two classes, STRIDE's DSCP and everything else, each with its own. The sender runs the foreground flows, the generator the background traffic (the paper's
//! traffic emulator), so both meet only in that queue. Everything is created by [`Topology::up`]
//! and removed when the [`Topology`] is dropped, also on error or panic. Namespace names carry the
//! process id and a counter, so concurrent runs (and tests) never collide.
//!
//! Threads enter a namespace with `setns(2)` ([`Host::spawn`]); a socket stays in the namespace it
//! was created in, so a STRIDE endpoint's driver thread and tokio need nothing special.

use anyhow::{anyhow, bail, Context};
use std::net::{IpAddr, Ipv4Addr};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The sender's address.
pub const SENDER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 1, 1);
/// The receiver's address.
pub const RECEIVER_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 2, 1);
/// The background generator's address.
pub const GENERATOR_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 3, 1);
/// The bottleneck's egress interface (inside the bottleneck namespace).
pub const BOTTLENECK_DEV: &str = "tbr0";

/// The queueing discipline on the bottleneck egress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qdisc {
    /// Token bucket filter: rate, a bucket of `burst` bytes, a byte-limited drop-tail queue.
    Tbf,
    /// Hierarchical token bucket with one class, its leaf a byte-limited `bfifo` (drop-tail).
    Htb,
    /// STRIDE in a class of its own: `htb` with two classes under the rate, each guaranteed
    /// half of it and borrowing up to all of it (equal quanta: an equal split while both are
    /// busy, the whole rate to either alone), each leaf its own `bfifo` of the queue's size.
    /// `u32` filters send datagrams whose DSCP is `dscp` (IPv4 TOS, IPv6 traffic class) to
    /// [`STRIDE_CLASS`]; everything else (TCP) goes to [`OTHER_CLASS`].
    HtbDscp {
        /// STRIDE's codepoint (not 0, the class unmarked traffic is in).
        dscp: u8,
        /// Each class may borrow what the other leaves unused, up to the whole rate (the
        /// default; a switch's weighted round robin does the same). Without, each class is
        /// held at half the rate: its service rate never depends on the other's load.
        borrow: bool,
    },
}

impl Qdisc {
    /// The name a testbed file gives it (`bottleneck.qdisc`).
    pub fn name(self) -> &'static str {
        match self {
            Qdisc::Tbf => "tbf",
            Qdisc::Htb => "htb",
            Qdisc::HtbDscp { .. } => "htb-dscp",
        }
    }
}

/// STRIDE's class of [`Qdisc::HtbDscp`] (its leaf queue is `10:`).
pub const STRIDE_CLASS: &str = "1:10";
/// The class of everything else in [`Qdisc::HtbDscp`] (its leaf queue is `20:`).
pub const OTHER_CLASS: &str = "1:20";
/// The `htb` quantum of both classes of [`Qdisc::HtbDscp`]: equal, so the rate left over
/// beyond their guarantees is split equally (two 1514-byte frames per round; htb's default,
/// rate / 10, would be 1.25 MB at 100 Mbit/s).
const CLASS_QUANTUM: &str = "3028";

/// Bottleneck settings.
#[derive(Clone, Debug)]
pub struct Bottleneck {
    /// Egress rate, bit/s.
    pub rate_bps: u64,
    /// Drop-tail queue, bytes.
    pub queue_bytes: u64,
    /// Token bucket depth, bytes.
    pub burst_bytes: u64,
    /// Discipline.
    pub qdisc: Qdisc,
    /// Bytes added to each packet's length as the qdisc counts it, for its rate, its queue
    /// limit and its counters alike (tc's size table, `stab overhead`): 0 counts what the
    /// device sends, Ethernet frames (the testbed's files); [`UDP_PAYLOAD_OVERHEAD`] counts the
    /// UDP payload of IPv4 datagrams, as the userspace relay does. Exact only for packets that
    /// reach the qdisc one datagram each (the kernel counts a GSO packet's overhead once).
    pub overhead: i32,
}

/// [`Bottleneck::overhead`] that counts the UDP payload of an IPv4 datagram in an Ethernet
/// frame: minus the Ethernet (14), IPv4 (20) and UDP (8) headers.
pub const UDP_PAYLOAD_OVERHEAD: i32 = -42;

/// Where a piece of the experiment runs.
#[derive(Clone, Debug)]
pub enum Host {
    /// Inside this network namespace.
    Ns(String),
    /// In the caller's namespace (the relay fallback, on loopback).
    Local,
}

impl Host {
    /// Runs `f` on a new thread inside this host's network namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        name: &str,
        f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
    ) -> std::thread::JoinHandle<anyhow::Result<T>> {
        let host = self.clone();
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                host.enter()?;
                f()
            })
            .expect("spawn a thread")
    }

    /// Moves the calling thread into this host's namespace.
    pub fn enter(&self) -> anyhow::Result<()> {
        match self {
            Host::Local => Ok(()),
            Host::Ns(ns) => {
                let path = format!("/run/netns/{ns}");
                let f = std::fs::File::open(&path).with_context(|| format!("open {path}"))?;
                use std::os::fd::AsRawFd;
                // SAFETY: setns on a descriptor we own; it changes only this thread.
                let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
                if r != 0 {
                    bail!("setns into {ns}: {}", std::io::Error::last_os_error());
                }
                Ok(())
            }
        }
    }
}

/// Why the namespace topology cannot be built here, if it cannot: it needs root
/// (CAP_SYS_ADMIN for namespaces, CAP_NET_ADMIN for links and qdiscs) and the `ip` and `tc`
/// tools. The reason names the testbed's fallback (`mode = "relay"`); [`netns_missing`] is the
/// bare reason.
pub fn netns_unavailable(euid: u32) -> Option<String> {
    netns_missing(euid).map(|why| {
        format!(
            "{why}: run it as root with iproute2, or set `mode = \"relay\"` (or --mode relay) for \
             the userspace-relay fallback (STRIDE only: kernel TCP cannot cross the UDP relay)"
        )
    })
}

/// Why network namespaces with veth links and a qdisc cannot be made here by a process of
/// effective uid `euid`, if they cannot (probed by making one namespace of its own, and
/// deleting it).
pub fn netns_missing(euid: u32) -> Option<String> {
    if euid != 0 {
        return Some(format!(
            "the namespace path needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN to create network \
             namespaces, veth links and the bottleneck qdisc) but runs as uid {euid}"
        ));
    }
    for tool in ["ip", "tc"] {
        let ok = Command::new(tool)
            .arg("-V")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            return Some(format!(
                "the namespace path needs the `{tool}` tool (iproute2), which is not installed"
            ));
        }
    }
    // Root inside a container may still lack CAP_SYS_ADMIN: try one namespace.
    // A name of its own per call: tests probe from several threads at once.
    let probe = format!("{}p{}", ns_prefix(), SEQ.fetch_add(1, Ordering::Relaxed));
    match run(&["ip", "netns", "add", &probe]) {
        Ok(_) => {
            let _ = run(&["ip", "netns", "del", &probe]);
            None
        }
        Err(e) => Some(format!("cannot create a network namespace here ({e:#})")),
    }
}

/// The most packets a [`Topology::add_delay`] delay line holds (netem's default, 1000, is
/// 12 ms of 1500-byte packets at 1 Gbit/s: a long delay at a high rate would drop).
const NETEM_LIMIT: &str = "1000000";

/// Why [`Topology::add_delay`] cannot work here, if it cannot: the kernel has no `netem`
/// (probed in a namespace of its own, so nothing outside it is touched). Call it where
/// [`netns_unavailable`] says namespaces can be made.
pub fn netem_unavailable() -> Option<String> {
    let probe = format!("{}p{}", ns_prefix(), SEQ.fetch_add(1, Ordering::Relaxed));
    if let Err(e) = run(&["ip", "netns", "add", &probe]) {
        return Some(format!("cannot create a network namespace here ({e:#})"));
    }
    let r = run(&[
        "ip", "netns", "exec", &probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay",
        "1us",
    ]);
    let _ = run(&["ip", "netns", "del", &probe]);
    r.err()
        .map(|e| format!("the kernel cannot add a delay (no `netem` qdisc: {e:#})"))
}

/// For a test that needs network namespaces, which cannot be made here (`why`): with
/// `STRIDE_REQUIRE_NETNS=1` in the environment (`.ci/run` sets it, CI runs as root) it panics
/// with the reason, so the test fails; otherwise it writes `SKIPPED: <test>: <why>` to stderr,
/// past the test harness's output capture, and the caller returns. The harness still counts
/// such a test as passed: the line is what says it did not run.
pub fn skip_netns_test(test: &str, why: &str) {
    if std::env::var_os("STRIDE_REQUIRE_NETNS").is_some_and(|v| v == "1") {
        panic!("{test} needs network namespaces (STRIDE_REQUIRE_NETNS=1): {why}");
    }
    use std::io::Write;
    // std::io::stderr() directly: eprintln! inside a test is captured and shown only on failure.
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() }
}

/// A running namespace topology; dropping it deletes the namespaces (and with them every veth).
pub struct Topology {
    /// Namespace names: sender, bottleneck, receiver, generator.
    pub sender: String,
    /// The bottleneck namespace.
    pub bottleneck: String,
    /// The receiver namespace.
    pub receiver: String,
    /// The background generator namespace.
    pub generator: String,
    /// The bottleneck settings.
    pub link: Bottleneck,
    created: Vec<String>,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn run(args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| format!("run {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The prefix of this process's namespace names.
pub fn ns_prefix() -> String {
    format!("stb{}x", std::process::id())
}

/// Namespaces whose name starts with `prefix` (from `ip netns list`).
pub fn namespaces_with_prefix(prefix: &str) -> Vec<String> {
    run(&["ip", "netns", "list"])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(prefix))
        .map(String::from)
        .collect()
}

/// Deletes testbed namespaces left by processes that no longer exist (killed before their
/// `Drop` ran). Only names of the form `stb<pid>x...` whose pid is gone are touched.
pub fn reap_stale() {
    for ns in namespaces_with_prefix("stb") {
        let pid: String = ns[3..].chars().take_while(|c| c.is_ascii_digit()).collect();
        if pid.is_empty() || !ns[3 + pid.len()..].starts_with('x') {
            continue;
        }
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
    }
}

impl Topology {
    /// Builds the namespaces, links, addresses, routes and the bottleneck qdisc. Refuses with a
    /// clear error without privilege.
    pub fn up(link: Bottleneck) -> anyhow::Result<Topology> {
        if let Some(why) = netns_unavailable(euid()) {
            bail!("{why}");
        }
        reap_stale();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let p = format!("{}{n}", ns_prefix());
        let mut t = Topology {
            sender: format!("{p}s"),
            bottleneck: format!("{p}b"),
            receiver: format!("{p}r"),
            generator: format!("{p}g"),
            link,
            created: Vec::new(),
        };
        // On any error below, dropping `t` removes what was made.
        t.build()?;
        Ok(t)
    }

    fn build(&mut self) -> anyhow::Result<()> {
        for ns in [
            &self.sender,
            &self.bottleneck,
            &self.receiver,
            &self.generator,
        ] {
            run(&["ip", "netns", "add", ns])?;
            self.created.push(ns.clone());
            run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        let b = self.bottleneck.clone();
        // (end namespace, its device, bottleneck device, subnet)
        let legs = [
            (self.sender.clone(), "tbs0", "tbs1", 1u8),
            (self.receiver.clone(), "tbr1", BOTTLENECK_DEV, 2u8),
            (self.generator.clone(), "tbg0", "tbg1", 3u8),
        ];
        for (ns, dev, bdev, net) in &legs {
            run(&[
                "ip", "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", bdev,
                "netns", &b,
            ])?;
            let host = format!("10.77.{net}.1/24");
            let gw = format!("10.77.{net}.2");
            let gw_cidr = format!("{gw}/24");
            run(&["ip", "-n", ns, "addr", "add", &host, "dev", dev])?;
            run(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            run(&["ip", "-n", &b, "addr", "add", &gw_cidr, "dev", bdev])?;
            run(&["ip", "-n", &b, "link", "set", bdev, "up"])?;
            run(&["ip", "-n", ns, "route", "add", "default", "via", &gw])?;
        }
        run(&[
            "ip",
            "netns",
            "exec",
            &b,
            "sysctl",
            "-q",
            "-w",
            "net.ipv4.ip_forward=1",
        ])?;
        self.install_qdisc()?;
        Ok(())
    }

    fn install_qdisc(&self) -> anyhow::Result<()> {
        let b = &self.bottleneck;
        let rate = format!("{}bit", self.link.rate_bps);
        let burst = format!("{}b", self.link.burst_bytes);
        let limit = format!("{}b", self.link.queue_bytes);
        let overhead = self.link.overhead.to_string();
        let tc = |args: &[&str]| -> anyhow::Result<String> {
            let mut v = vec!["ip", "netns", "exec", b.as_str(), "tc"];
            // The size table goes with the root qdisc: "qdisc add dev D root handle H" + stab.
            let stab = self.link.overhead != 0
                && args.len() > 7
                && args[..2] == ["qdisc", "add"]
                && args[4] == "root";
            if stab {
                v.extend_from_slice(&args[..7]);
                v.extend_from_slice(&["stab", "overhead", &overhead]);
                v.extend_from_slice(&args[7..]);
            } else {
                v.extend_from_slice(args);
            }
            run(&v)
        };
        match self.link.qdisc {
            Qdisc::Tbf => {
                tc(&[
                    "qdisc",
                    "add",
                    "dev",
                    BOTTLENECK_DEV,
                    "root",
                    "handle",
                    "1:",
                    "tbf",
                    "rate",
                    &rate,
                    "burst",
                    &burst,
                    "limit",
                    &limit,
                ])?;
            }
            Qdisc::Htb => {
                tc(&[
                    "qdisc",
                    "add",
                    "dev",
                    BOTTLENECK_DEV,
                    "root",
                    "handle",
                    "1:",
                    "htb",
                    "default",
                    "1",
                ])?;
                htb_class(&tc, "1:", "1:1", (&rate, &rate), &burst, None)?;
                bfifo(&tc, "1:1", "10:", &limit)?;
            }
            Qdisc::HtbDscp { dscp, borrow } => self.install_classes(dscp, borrow, &tc)?,
        }
        Ok(())
    }

    /// [`Qdisc::HtbDscp`]: the root `htb` (unclassified traffic to [`OTHER_CLASS`]), a parent
    /// class at the rate, the two classes at half of it each with the whole rate as ceiling
    /// (half without `borrow`), a `bfifo` of the queue's size under each, and the filters that
    /// send `dscp` to [`STRIDE_CLASS`].
    fn install_classes(
        &self,
        dscp: u8,
        borrow: bool,
        tc: &dyn Fn(&[&str]) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        let rate = format!("{}bit", self.link.rate_bps);
        let half = format!("{}bit", self.link.rate_bps / 2);
        let ceil = if borrow { &rate } else { &half };
        let burst = format!("{}b", self.link.burst_bytes);
        let limit = format!("{}b", self.link.queue_bytes);
        let dev = BOTTLENECK_DEV;
        tc(&[
            "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "20",
        ])?;
        let quantum = Some(CLASS_QUANTUM);
        htb_class(tc, "1:", "1:1", (&rate, &rate), &burst, quantum)?;
        for (class, leaf) in [(STRIDE_CLASS, "10:"), (OTHER_CLASS, "20:")] {
            htb_class(tc, "1:1", class, (&half, ceil), &burst, quantum)?;
            bfifo(tc, class, leaf, &limit)?;
        }
        // The DSCP is the upper six bits of the IPv4 TOS byte and of the IPv6 traffic class.
        let tos = format!("{:#04x}", dscp << 2);
        for (proto, field, prio) in [("ip", "dsfield", "1"), ("ipv6", "priority", "2")] {
            let m = if proto == "ip" { "ip" } else { "ip6" };
            tc(&[
                "filter",
                "add",
                "dev",
                dev,
                "parent",
                "1:",
                "protocol",
                proto,
                "prio",
                prio,
                "u32",
                "match",
                m,
                field,
                &tos,
                "0xfc",
                "flowid",
                STRIDE_CLASS,
            ])?;
        }
        Ok(())
    }

    /// Adds a one-way propagation delay of `one_way_ns` to both directions between sender and
    /// receiver: a `netem` delay on the sender's egress (before the bottleneck; a constant delay
    /// commutes with the queue) and on the receiver's (the way back). Needs `netem` in the
    /// kernel ([`netem_unavailable`]).
    pub fn add_delay(&self, one_way_ns: u64) -> anyhow::Result<()> {
        let delay = format!("{}us", one_way_ns as f64 / 1e3);
        for (ns, dev) in [(&self.sender, "tbs0"), (&self.receiver, "tbr1")] {
            run(&[
                "ip",
                "netns",
                "exec",
                ns,
                "tc",
                "qdisc",
                "add",
                "dev",
                dev,
                "root",
                "netem",
                "delay",
                &delay,
                "limit",
                NETEM_LIMIT,
            ])?;
        }
        Ok(())
    }

    /// Makes the sender's veth segment GSO batches (one send of many datagrams) in software
    /// as they leave it (`gso_max_segs 1`), so that each datagram reaches the bottleneck as a
    /// packet of its own and a size table ([`Bottleneck::overhead`]) counts its headers.
    pub fn segment_before_bottleneck(&self) -> anyhow::Result<()> {
        run(&[
            "ip",
            "-n",
            &self.sender,
            "link",
            "set",
            "dev",
            "tbs0",
            "gso_max_segs",
            "1",
        ])
        .map(drop)
    }

    /// The namespaces this topology made (all of them are deleted when it is dropped).
    pub fn namespaces(&self) -> Vec<String> {
        self.created.clone()
    }

    /// The sender host.
    pub fn sender_host(&self) -> Host {
        Host::Ns(self.sender.clone())
    }
    /// The receiver host.
    pub fn receiver_host(&self) -> Host {
        Host::Ns(self.receiver.clone())
    }
    /// The generator host.
    pub fn generator_host(&self) -> Host {
        Host::Ns(self.generator.clone())
    }

    /// The bottleneck qdisc's counters now.
    pub fn qdisc_stats(&self) -> anyhow::Result<QdiscStats> {
        let out = run(&[
            "ip",
            "netns",
            "exec",
            &self.bottleneck,
            "tc",
            "-s",
            "qdisc",
            "show",
            "dev",
            BOTTLENECK_DEV,
        ])?;
        parse_qdisc_stats(&out).ok_or_else(|| anyhow!("cannot read qdisc counters from {out:?}"))
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in self.created.drain(..).rev() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
    }
}

/// Counters of the bottleneck qdisc, summed over the qdiscs shown (htb and its bfifo leaf both
/// count; only the leaf drops, the root only passes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QdiscStats {
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Packets sent.
    pub sent_packets: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Bytes queued now (the root qdisc's backlog).
    pub backlog_bytes: u64,
}

/// One qdisc of `tc -s qdisc show dev X` with its counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QdiscEntry {
    /// Kind (`htb`, `bfifo`, ...).
    pub kind: String,
    /// Handle (`10:`).
    pub handle: String,
    /// The class it hangs from (`1:10`); None for the root.
    pub parent: Option<String>,
    /// Its own counters (drops and backlog of this qdisc alone).
    pub stats: QdiscStats,
}

/// Parses `tc -s qdisc show dev X` into its qdiscs, each with its own counters.
pub fn parse_qdiscs(out: &str) -> Vec<QdiscEntry> {
    let mut v: Vec<QdiscEntry> = Vec::new();
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first().copied() {
            Some("qdisc") if w.len() >= 3 => {
                let parent = w
                    .iter()
                    .position(|&x| x == "parent")
                    .and_then(|i| w.get(i + 1))
                    .map(|p| p.to_string());
                v.push(QdiscEntry {
                    kind: w[1].to_string(),
                    handle: w[2].to_string(),
                    parent,
                    stats: QdiscStats::default(),
                });
            }
            Some("Sent") if w.len() >= 9 => {
                if let Some(q) = v.last_mut() {
                    q.stats.sent_bytes = w[1].parse().unwrap_or(0);
                    q.stats.sent_packets = w[3].parse().unwrap_or(0);
                    q.stats.dropped = w[6].trim_end_matches(',').parse().unwrap_or(0);
                }
            }
            Some("backlog") => {
                if let (Some(q), Some(b)) = (v.last_mut(), w.get(1)) {
                    q.stats.backlog_bytes = parse_tc_size(b).unwrap_or(0);
                }
            }
            _ => {}
        }
    }
    v
}

/// Parses `tc -s qdisc show dev X`: the first qdisc's sent counters and backlog, and the drops of
/// every qdisc listed.
pub fn parse_qdisc_stats(out: &str) -> Option<QdiscStats> {
    let mut s = QdiscStats::default();
    let mut seen_sent = false;
    let mut seen_backlog = false;
    for line in out.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if w.first() == Some(&"Sent") && w.len() >= 9 {
            if !seen_sent {
                s.sent_bytes = w[1].parse().ok()?;
                s.sent_packets = w[3].parse().ok()?;
                seen_sent = true;
            }
            // "(dropped N," is word 6.
            let d = w[6].trim_end_matches(',');
            s.dropped += d.parse::<u64>().ok()?;
        } else if w.first() == Some(&"backlog") && !seen_backlog {
            let b = w.get(1)?;
            s.backlog_bytes = parse_tc_size(b)?;
            seen_backlog = true;
        }
    }
    seen_sent.then_some(s)
}

fn parse_tc_size(b: &str) -> Option<u64> {
    let b = b.trim_end_matches('b');
    if let Some(k) = b.strip_suffix('K') {
        return k.parse::<u64>().ok().map(|v| v * 1024);
    }
    if let Some(m) = b.strip_suffix('M') {
        return m.parse::<u64>().ok().map(|v| v * 1024 * 1024);
    }
    b.parse().ok()
}

/// The receiver's address as an `IpAddr`.
pub fn receiver_ip() -> IpAddr {
    IpAddr::V4(RECEIVER_IP)
}

/// `tc class add` of an `htb` class `classid` under `parent` on the bottleneck device, with its
/// (rate, ceil), the same burst for both, and a quantum when given.
fn htb_class(
    tc: &dyn Fn(&[&str]) -> anyhow::Result<String>,
    parent: &str,
    classid: &str,
    (rate, ceil): (&str, &str),
    burst: &str,
    quantum: Option<&str>,
) -> anyhow::Result<()> {
    let mut args = vec![
        "class",
        "add",
        "dev",
        BOTTLENECK_DEV,
        "parent",
        parent,
        "classid",
        classid,
        "htb",
        "rate",
        rate,
        "ceil",
        ceil,
        "burst",
        burst,
        "cburst",
        burst,
    ];
    if let Some(q) = quantum {
        args.extend(["quantum", q]);
    }
    tc(&args).map(drop)
}

/// `tc qdisc add` of a `bfifo` of `limit` as `handle` under `parent` on the bottleneck device.
fn bfifo(
    tc: &dyn Fn(&[&str]) -> anyhow::Result<String>,
    parent: &str,
    handle: &str,
    limit: &str,
) -> anyhow::Result<()> {
    tc(&[
        "qdisc",
        "add",
        "dev",
        BOTTLENECK_DEV,
        "parent",
        parent,
        "handle",
        handle,
        "bfifo",
        "limit",
        limit,
    ])
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qdisc_counters_parse() {
        let tbf = "qdisc tbf 1: root refcnt 3 rate 1Gbit burst 16Kb lat 1.97ms \n Sent 123456 bytes 789 pkt (dropped 12, overlimits 3 requeues 0) \n backlog 3028b 2p requeues 0\n";
        let s = parse_qdisc_stats(tbf).unwrap();
        assert_eq!(
            s,
            QdiscStats {
                sent_bytes: 123456,
                sent_packets: 789,
                dropped: 12,
                backlog_bytes: 3028
            }
        );
        let htb = "qdisc htb 1: root refcnt 3 r2q 10 default 0x1 direct_packets_stat 0 direct_qlen 1000\n Sent 1000 bytes 10 pkt (dropped 0, overlimits 5 requeues 0)\n backlog 29Kb 20p requeues 0\nqdisc bfifo 10: parent 1:1 limit 256Kb\n Sent 1000 bytes 10 pkt (dropped 7, overlimits 0 requeues 0)\n backlog 29Kb 20p requeues 0\n";
        let s = parse_qdisc_stats(htb).unwrap();
        assert_eq!(s.dropped, 7);
        assert_eq!(s.backlog_bytes, 29 * 1024);
        assert!(parse_qdisc_stats("nothing").is_none());
    }

    #[test]
    fn each_class_queue_has_its_own_counters() {
        // `tc -s qdisc show` of the htb-dscp bottleneck (iproute2 6.1).
        let out = "qdisc htb 1: root refcnt 2 r2q 10 default 0x20 direct_packets_stat 0 direct_qlen 1000\n Sent 5000 bytes 40 pkt (dropped 3, overlimits 9 requeues 0)\n backlog 4542b 3p requeues 0\nqdisc bfifo 10: parent 1:10 limit 64Kb\n Sent 3000 bytes 25 pkt (dropped 0, overlimits 0 requeues 0)\n backlog 1514b 1p requeues 0\nqdisc bfifo 20: parent 1:20 limit 64Kb\n Sent 2000 bytes 15 pkt (dropped 3, overlimits 0 requeues 0)\n backlog 3028b 2p requeues 0\n";
        let qs = parse_qdiscs(out);
        assert_eq!(qs.len(), 3);
        assert_eq!(
            (qs[0].kind.as_str(), qs[0].parent.as_deref()),
            ("htb", None)
        );
        let band = |class: &str| {
            qs.iter()
                .find(|q| q.parent.as_deref() == Some(class))
                .unwrap()
        };
        let s = band(STRIDE_CLASS);
        assert_eq!(s.handle, "10:");
        assert_eq!(
            s.stats,
            QdiscStats {
                sent_bytes: 3000,
                sent_packets: 25,
                dropped: 0,
                backlog_bytes: 1514
            }
        );
        assert_eq!(band(OTHER_CLASS).stats.dropped, 3);
        assert_eq!(band(OTHER_CLASS).stats.backlog_bytes, 3028);
        // The root's view is unchanged: its own counters, every qdisc's drops.
        let r = parse_qdisc_stats(out).unwrap();
        assert_eq!((r.sent_bytes, r.dropped, r.backlog_bytes), (5000, 6, 4542));
    }

    #[test]
    fn refusal_without_root_names_the_fallback() {
        let why = netns_unavailable(1000).unwrap();
        assert!(
            why.contains("root") && why.contains("mode = \"relay\""),
            "{why}"
        );
    }
}
