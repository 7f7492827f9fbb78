//! `experiment = "stt"` (Fig. 8a/8b): how steady the single-trip time is through the empty
//! bottleneck. A probe datagram every `interval_us` carries the sender's CLOCK_REALTIME; the
//! receiver stamps it with the kernel's receive time (SO_TIMESTAMPNS).

use crate::env::{join, Env};
use crate::report::{link_json, Figure, Outcome, Series};
use crate::scenario::{SttCfg, Testbed};
use anyhow::{bail, Context};
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use stride_units::stats::median;

/// (send time, STT) in ns per probe received.
type Samples = Vec<(u64, u64)>;

/// Runs the experiment.
pub(crate) fn run(tb: &Testbed, env: &Env) -> anyhow::Result<Outcome> {
    let s = tb.file.stt.clone();
    let dur = Duration::from_secs_f64(s.duration_s);
    let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
    let recv = spawn_receiver(env, dur, tx);
    let to = rx
        .recv_timeout(Duration::from_secs(5))
        .context("STT receiver did not start")?;
    send_probes(env, &s, to, dur)?;
    let (kts, samples) = join(recv, "probe receiver")?;
    // The first 100 ms are warm-up (neighbour resolution delays the very first datagram).
    let samples: Samples = match samples.first() {
        Some(&(t0, _)) => samples
            .into_iter()
            .filter(|s| s.0 >= t0 + 100_000_000)
            .collect(),
        None => samples,
    };
    if samples.len() < 2 {
        bail!("the STT probe received {} samples", samples.len());
    }
    let first = samples[0].1 as f64;
    let r_first: Vec<f64> = samples.iter().map(|s| s.1 as f64 / first).collect();
    let r_next: Vec<f64> = samples
        .windows(2)
        .map(|w| w[0].1 as f64 / w[1].1 as f64)
        .collect();
    let mut stts: Vec<f64> = samples.iter().map(|s| s.1 as f64).collect();
    let stt_med = median(&mut stts);
    let (a, b) = (deviation(&r_first), deviation(&r_next));
    let tables = table(&r_first, &r_next, &a, &b, first, stt_med, kts);
    Ok(Outcome {
        report: json!({
            "name": tb.file.name, "experiment": "stt", "mode": env.mode, "bottleneck": link_json(tb),
            "kernel_rx_timestamps": kts, "samples": samples.len(), "first_stt_ns": first, "median_stt_ns": stt_med,
            "stt_over_first": a, "stt_over_next": b,
        }),
        tables,
        figures: figures(&s, r_first, r_next),
    })
}

/// The probe receiver on the receiver host: reports its address on `tx`, then collects samples
/// until the sender's end marker or `dur` + 2 s; returns whether the kernel stamps receive
/// times, and the samples.
fn spawn_receiver(
    env: &Env,
    dur: Duration,
    tx: std::sync::mpsc::Sender<SocketAddr>,
) -> JoinHandle<anyhow::Result<(bool, Samples)>> {
    let ip = env.recv_ip;
    env.receiver.spawn("tb-stt-recv", move || {
        use std::os::fd::AsRawFd;
        let sock = std::net::UdpSocket::bind(SocketAddr::new(ip, 0))?;
        sock.set_nonblocking(true)?;
        let fd = sock.as_raw_fd();
        let kts = stride::sys::enable_rx_timestamps(fd);
        tx.send(sock.local_addr()?).ok();
        let mut batch = stride::sys::RxBatch::new();
        let mut samples: Samples = Vec::new();
        let end = Instant::now() + dur + Duration::from_secs(2);
        while Instant::now() < end {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd we own.
            unsafe { libc::poll(&mut p, 1, 50) };
            match batch.recv(fd) {
                Ok(n) => {
                    for i in 0..n {
                        let d = batch.data(i);
                        if d.len() < 8 {
                            continue;
                        }
                        let txts = u64::from_le_bytes(d[..8].try_into().unwrap());
                        if txts == u64::MAX {
                            return Ok((kts, samples));
                        }
                        let rxts = batch.got[i].kernel_ts.unwrap_or_else(stride::sys::now_ns);
                        samples.push((txts, rxts.saturating_sub(txts)));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok((kts, samples))
    })
}

/// Sends a stamped probe every `interval_us` to `to` for `dur` + 100 ms from the sender host,
/// then the end marker (three times).
fn send_probes(env: &Env, s: &SttCfg, to: SocketAddr, dur: Duration) -> anyhow::Result<()> {
    let iv = Duration::from_micros(s.interval_us);
    let pkt = s.packet as usize;
    let h = env.sender.spawn("tb-stt-send", move || {
        let sock = std::net::UdpSocket::bind("0.0.0.0:0")?;
        sock.connect(to)?;
        let mut buf = vec![0u8; pkt];
        let t0 = Instant::now();
        let mut next = t0;
        while t0.elapsed() < dur + Duration::from_millis(100) {
            next += iv;
            let now = Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            buf[..8].copy_from_slice(&stride::sys::now_ns().to_le_bytes());
            let _ = sock.send(&buf);
        }
        std::thread::sleep(Duration::from_millis(100));
        buf[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        for _ in 0..3 {
            let _ = sock.send(&buf);
        }
        anyhow::Ok(())
    });
    join(h, "probe sender")
}

/// How far the ratios `v` stray from 1: median, p99 and largest deviation, smallest and largest
/// ratio.
fn deviation(v: &[f64]) -> Value {
    let mut d: Vec<f64> = v.iter().map(|x| (x - 1.0).abs()).collect();
    d.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| d[((d.len() - 1) as f64 * p) as usize];
    json!({"p50_abs_dev": q(0.5), "p99_abs_dev": q(0.99), "max_abs_dev": q(1.0),
           "min_ratio": v.iter().cloned().fold(f64::INFINITY, f64::min),
           "max_ratio": v.iter().cloned().fold(f64::NEG_INFINITY, f64::max)})
}

/// Fig. 8a (STT over the first STT) and Fig. 8b (STT over the next STT) against time.
fn figures(s: &SttCfg, r_first: Vec<f64>, r_next: Vec<f64>) -> Vec<Figure> {
    let xs: Vec<String> = (0..r_first.len())
        .map(|i| format!("{:.1}", i as f64 * s.interval_us as f64 / 1e6))
        .collect();
    let probe = "probe: tx CLOCK_REALTIME, rx SO_TIMESTAMPNS";
    let mut a = Figure::new(
        "fig8a".into(),
        "Fig. 8a: STT(t) / STT(first)".into(),
        "time (s)",
        "ratio",
    );
    a.xs = xs.clone();
    a.ref_line = Some(1.0);
    a.series = vec![Series {
        name: probe.into(),
        ys: r_first,
    }];
    let mut b = Figure::new(
        "fig8b".into(),
        "Fig. 8b: STT(t) / STT(t+1)".into(),
        "time (s)",
        "ratio",
    );
    b.xs = xs[..r_next.len()].to_vec();
    b.ref_line = Some(1.0);
    b.series = vec![Series {
        name: probe.into(),
        ys: r_next,
    }];
    vec![a, b]
}

/// The deviations of both ratios, the first and median STT.
fn table(
    r_first: &[f64],
    r_next: &[f64],
    a: &Value,
    b: &Value,
    first: f64,
    stt_med: f64,
    kts: bool,
) -> String {
    let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
    format!(
        "\n| ratio r | samples | median dev | p99 dev | max dev | min r | max r |\n|---|---|---|---|---|---|---|\n| STT(t)/STT(first) | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |\n| STT(t)/STT(t+1) | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |\n\ndev = abs(r - 1). First STT {} ns, median STT {:.0} ns, kernel rx timestamps: {}\n",
        r_first.len(), f(a, "p50_abs_dev"), f(a, "p99_abs_dev"), f(a, "max_abs_dev"), f(a, "min_ratio"), f(a, "max_ratio"),
        r_next.len(), f(b, "p50_abs_dev"), f(b, "p99_abs_dev"), f(b, "max_abs_dev"), f(b, "min_ratio"), f(b, "max_ratio"),
        first as u64, stt_med, kts
    )
}
