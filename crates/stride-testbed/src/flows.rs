//! Foreground flows (STRIDE and kernel TCP through one harness), the receiver that serves them,
//! and the background generator.
//!
//! Harness: the client connects, sends its block (the first byte is a tag naming the flow, so
//! the receiver can count bytes per flow) and closes its direction; the receiver reads to the
//! end and answers one byte, which stops the client's clock. FCT therefore runs from the
//! connection request to the receiver having every byte, for both transports alike (TCP has no
//! "all acknowledged" signal).

use crate::scenario::Pattern;
use crate::topo::Host;
use anyhow::{bail, Context};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use stride::{Endpoint, EndpointConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Bytes received per flow tag.
pub type Counters = Arc<Vec<AtomicU64>>;

/// What the receiver listens on.
#[derive(Clone, Debug)]
pub struct ReceiverAddrs {
    /// One STRIDE endpoint per protocol configuration asked for, in order.
    pub stride: Vec<SocketAddr>,
    /// Kernel TCP.
    pub tcp: SocketAddr,
    /// Background sink (UDP, counts and discards).
    pub sink: SocketAddr,
}

/// A receiver running on its own thread.
pub struct Receiver {
    /// Its addresses.
    pub addrs: ReceiverAddrs,
    /// Bytes per flow tag.
    pub counters: Counters,
    /// Background datagrams received.
    pub sink_packets: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Receiver {
    /// Starts the receiver on `host`, binding `ip`, with one STRIDE endpoint per config, each
    /// marking its datagrams with `dscp`.
    pub fn start(
        host: &Host,
        ip: std::net::IpAddr,
        configs: Vec<stride::Config>,
        dscp: stride::Dscp,
    ) -> anyhow::Result<Receiver> {
        let counters: Counters = Arc::new((0..256).map(|_| AtomicU64::new(0)).collect());
        let sink_packets = Arc::new(AtomicU64::new(0));
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let c2 = counters.clone();
        let s2 = sink_packets.clone();
        let thread = host.spawn("tb-receiver", move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                let mut stride_addrs = Vec::new();
                let mut eps = Vec::new();
                for cfg in configs {
                    let ep = Endpoint::bind_with(
                        SocketAddr::new(ip, 0),
                        EndpointConfig {
                            proto: cfg,
                            dscp,
                            ..EndpointConfig::default()
                        },
                    )?;
                    stride_addrs.push(ep.local_addr());
                    eps.push(ep);
                }
                let tcp = tokio::net::TcpListener::bind(SocketAddr::new(ip, 0)).await?;
                let sink = tokio::net::UdpSocket::bind(SocketAddr::new(ip, 0)).await?;
                let addrs = ReceiverAddrs {
                    stride: stride_addrs,
                    tcp: tcp.local_addr()?,
                    sink: sink.local_addr()?,
                };
                let _ = tx.send(addrs);
                for ep in eps {
                    let c = c2.clone();
                    tokio::spawn(async move {
                        while let Ok(s) = ep.accept().await {
                            tokio::spawn(serve(s, c.clone()));
                        }
                    });
                }
                let c = c2.clone();
                tokio::spawn(async move {
                    while let Ok((s, _)) = tcp.accept().await {
                        let _ = s.set_nodelay(true);
                        tokio::spawn(serve(s, c.clone()));
                    }
                });
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 2048];
                    while sink.recv(&mut buf).await.is_ok() {
                        s2.fetch_add(1, Ordering::Relaxed);
                    }
                });
                let _ = stop_rx.await;
                anyhow::Ok(())
            })
        });
        let addrs = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(a) => a,
            Err(_) => {
                let r = thread.join();
                bail!("receiver did not start: {:?}", r.map(|r| r.err()));
            }
        };
        Ok(Receiver {
            addrs,
            counters,
            sink_packets,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, counters: Counters) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut tag: Option<usize> = None;
    loop {
        match s.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                let t = *tag.get_or_insert(buf[0] as usize);
                counters[t].fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(_) => return,
        }
    }
    let _ = s.write_all(b"k").await;
    let _ = tokio::time::timeout(Duration::from_secs(2), s.shutdown()).await;
}

/// One finished (or failed) flow.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FlowOutcome {
    /// Flow completion time, ns (0 when it failed).
    pub fct_ns: u64,
    /// Packets the sender resent (STRIDE: retransmitted DATA packets; TCP: `tcpi_total_retrans`).
    pub retransmits: u64,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// STRIDE: the queueing delay its sender estimated from STT (STT less its minimum), p50
    /// and p99 over the flow, ns.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stt_queue_delay_ns: Option<[u64; 2]>,
    /// STRIDE: its controller's switches into the competitive mode and the time it spent in
    /// it, ns (spec §8.7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc_mode: Option<[u64; 2]>,
}

static ZEROS: [u8; 64 * 1024] = [0u8; 64 * 1024];

async fn send_block<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    tag: u8,
    size: u64,
    until: Option<Instant>,
) -> anyhow::Result<()> {
    s.write_all(&[tag]).await?;
    let mut left = size.saturating_sub(1);
    loop {
        let n = match until {
            Some(t) => {
                if Instant::now() >= t {
                    break;
                }
                ZEROS.len()
            }
            None => {
                if left == 0 {
                    break;
                }
                left.min(ZEROS.len() as u64) as usize
            }
        };
        s.write_all(&ZEROS[..n]).await?;
        left = left.saturating_sub(n as u64);
    }
    s.shutdown().await?;
    let mut b = [0u8; 1];
    s.read_exact(&mut b)
        .await
        .context("waiting for the receiver's confirmation")?;
    Ok(())
}

/// Sends one block over STRIDE from `ep` to `to`; `until` instead sends until that instant.
pub async fn stride_flow(
    ep: &Endpoint,
    to: SocketAddr,
    tag: u8,
    size: u64,
    until: Option<Instant>,
    timeout: Duration,
) -> FlowOutcome {
    let t0 = Instant::now();
    let r = tokio::time::timeout(timeout, async {
        let mut s = ep.connect_timeout(to, Duration::from_secs(3)).await?;
        let r = send_block(&mut s, tag, size, until).await;
        let st = s.stats();
        let retx = st.as_ref().map_or(0, |st| st.retransmitted_packets);
        let q = st.as_ref().map(|st| {
            let h = &st.queue_delay;
            [h.quantile(0.5), h.quantile(0.99)]
        });
        let m = st.map(|st| [u64::from(st.cc_mode_switches), st.cc_competitive_ns]);
        r.map(|_| (retx, q, m))
    })
    .await;
    outcome(t0, r)
}

/// What a finished flow reports: its retransmits and (STRIDE) the queueing delay its sender
/// saw, p50 and p99 in ns, and its controller's mode counters.
type Finished = (u64, Option<[u64; 2]>, Option<[u64; 2]>);

/// What a flow came to: its completion time from `t0`, or why it failed.
fn outcome(
    t0: Instant,
    r: Result<anyhow::Result<Finished>, tokio::time::error::Elapsed>,
) -> FlowOutcome {
    match r {
        Ok(Ok((retx, q, m))) => FlowOutcome {
            fct_ns: t0.elapsed().as_nanos() as u64,
            retransmits: retx,
            error: None,
            stt_queue_delay_ns: q,
            cc_mode: m,
        },
        Ok(Err(e)) => FlowOutcome {
            error: Some(format!("{e:#}")),
            ..Default::default()
        },
        Err(_) => FlowOutcome {
            error: Some("timed out".into()),
            ..Default::default()
        },
    }
}

/// Sends one block over kernel TCP with congestion control `cc`.
pub async fn tcp_flow(
    cc: &str,
    to: SocketAddr,
    tag: u8,
    size: u64,
    until: Option<Instant>,
    timeout: Duration,
) -> FlowOutcome {
    let t0 = Instant::now();
    let r = tokio::time::timeout(timeout, async {
        let sock = tokio::net::TcpSocket::new_v4()?;
        set_cc(sock.as_raw_fd(), cc)?;
        sock.set_nodelay(true)?;
        let mut s = sock.connect(to).await?;
        let r = send_block(&mut s, tag, size, until).await;
        let retx = tcp_retrans(s.as_raw_fd());
        r.map(|_| (retx, None, None))
    })
    .await;
    outcome(t0, r)
}

/// Sets `TCP_CONGESTION`.
pub fn set_cc(fd: i32, cc: &str) -> anyhow::Result<()> {
    // SAFETY: a byte string option on a socket we own.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        bail!("TCP_CONGESTION {cc}: {}", std::io::Error::last_os_error());
    }
    Ok(())
}

/// `tcpi_total_retrans` of a TCP socket.
pub fn tcp_retrans(fd: i32) -> u64 {
    // SAFETY: tcp_info is plain data; the kernel fills at most `len` bytes.
    unsafe {
        let mut info: libc::tcp_info = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
        if libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut info as *mut _ as *mut libc::c_void,
            &mut len,
        ) == 0
        {
            u64::from(info.tcpi_total_retrans)
        } else {
            0
        }
    }
}

/// Process ids of the iperf3 processes this process started and has not reaped yet (for the
/// interrupt handler, [`crate::clean_up_on_interrupt`]).
pub static CHILD_PIDS: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// The background generator: the testbed's pinned-rate UDP sender following a [`Pattern`].
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<anyhow::Result<BackgroundStats>>>,
    /// iperf3 server and client (generator = "iperf3").
    children: Vec<std::process::Child>,
    iperf: Option<(Instant, u64, String)>,
}

/// What the generator sent.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct BackgroundStats {
    /// Generator used.
    pub generator: String,
    /// Pattern.
    pub pattern: String,
    /// Datagrams sent.
    pub packets: u64,
    /// Bytes sent (UDP payload).
    pub bytes: u64,
    /// Seconds it ran.
    pub seconds: f64,
    /// Mean offered rate, bit/s (payload).
    pub mean_bps: f64,
}

impl Background {
    /// Starts sending to `to` from `host`.
    pub fn start(host: &Host, pattern: Pattern, to: SocketAddr, packet: usize) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let thread = host.spawn("tb-background", move || {
            let sock = UdpSocket::bind(SocketAddr::new(
                match to {
                    SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
                    SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
                },
                0,
            ))?;
            sock.connect(to)?;
            let buf = vec![0x5au8; packet];
            let pkt_bits = (packet as f64) * 8.0;
            let t0 = Instant::now();
            let mut last = t0;
            let mut credit = 0.0f64;
            let mut packets = 0u64;
            while !st.load(Ordering::Relaxed) {
                let now = Instant::now();
                let rate = pattern.rate_at((now - t0).as_nanos() as u64) as f64;
                credit += rate * (now - last).as_secs_f64();
                last = now;
                // At most 1 ms of credit: a descheduled generator does not burst afterwards.
                credit = credit.min(rate * 1e-3 + pkt_bits);
                while credit >= pkt_bits {
                    if sock.send(&buf).is_ok() {
                        packets += 1;
                    }
                    credit -= pkt_bits;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            let secs = t0.elapsed().as_secs_f64();
            Ok(BackgroundStats {
                generator: "pinned (stride-testbed's own paced UDP sender)".into(),
                pattern: pattern.name().into(),
                packets,
                bytes: packets * packet as u64,
                seconds: secs,
                mean_bps: (packets * packet as u64) as f64 * 8.0 / secs.max(1e-9),
            })
        });
        Background {
            stop,
            thread: Some(thread),
            children: Vec::new(),
            iperf: None,
        }
    }

    /// Starts iperf3 (UDP, one fixed rate): its server in namespace `server_ns` on `to`, its
    /// client in `client_ns`.
    pub fn start_iperf3(
        client_ns: &str,
        server_ns: &str,
        to: SocketAddr,
        rate_bps: u64,
        packet: usize,
    ) -> anyhow::Result<Background> {
        use std::process::{Command, Stdio};
        let port = to.port().to_string();
        let server = Command::new("ip")
            .args(["netns", "exec", server_ns, "iperf3", "-s", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start iperf3 -s (is iperf3 installed? scripts/setup.sh installs it)")?;
        CHILD_PIDS.lock().unwrap().push(server.id());
        let mut bg = Background {
            stop: Arc::new(AtomicBool::new(false)),
            thread: None,
            children: vec![server],
            iperf: None,
        };
        // Let the server listen before the client connects.
        std::thread::sleep(Duration::from_millis(300));
        let client = Command::new("ip")
            .args([
                "netns",
                "exec",
                client_ns,
                "iperf3",
                "-c",
                &to.ip().to_string(),
                "-p",
                &port,
                "-u",
                "-b",
                &rate_bps.to_string(),
                "-l",
                &packet.to_string(),
                "-t",
                "86400",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("start iperf3 -c")?;
        bg.children.push(client);
        CHILD_PIDS.lock().unwrap().push(bg.children[1].id());
        std::thread::sleep(Duration::from_millis(200));
        if let Some(st) = bg.children[1].try_wait()? {
            bail!("iperf3 client exited at once ({st})");
        }
        bg.iperf = Some((Instant::now(), rate_bps, "fixed".into()));
        Ok(bg)
    }

    /// Stops the generator and returns what it sent.
    pub fn stop(mut self) -> anyhow::Result<BackgroundStats> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some((t0, rate, pattern)) = self.iperf.take() {
            self.kill_children();
            let secs = t0.elapsed().as_secs_f64();
            return Ok(BackgroundStats {
                generator: "iperf3 -u (UDP at a fixed target rate)".into(),
                pattern,
                packets: 0,
                bytes: 0,
                seconds: secs,
                mean_bps: rate as f64,
            });
        }
        match self.thread.take().expect("running").join() {
            Ok(r) => r,
            Err(_) => bail!("background generator panicked"),
        }
    }
}

impl Background {
    fn kill_children(&mut self) {
        for mut c in self.children.drain(..).rev() {
            let _ = c.kill();
            let _ = c.wait();
            CHILD_PIDS.lock().unwrap().retain(|&p| p != c.id());
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill_children();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
