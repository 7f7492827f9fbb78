//! `stride demo`: receiver, bottleneck relay and sender in one process on loopback, with a live
//! progress bar and a summary.

use crate::control::ControlArgs;
use crate::relay_cmd::stats_human;
use crate::units::{fmt_ns, human, parse_bytes, parse_duration_ns, parse_rate, report, runtime};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::time::{Duration, Instant};
use stride::Endpoint;
use stride_apps::relay::{Relay, RelayConfig};
use tokio::io::AsyncWriteExt;

/// Arguments of `stride demo`.
#[derive(Args, Debug)]
#[command(
    after_help = "Two queueing delays are reported and they measure different things:\n  \
sender: the controller's own estimate, the single-trip time (STT) of each acknowledged packet minus \
the smallest STT seen, from software timestamps taken by user-space code on both ends; it includes \
scheduling and socket-buffer delays on the hosts, so it can be far larger than the queue itself.\n  \
relay: the time each packet spent in the relay's bottleneck queue, measured by the relay.\n\
The controller's T_low/T_high (--t-low, --t-high) act on the sender's figure; the host profile's \
defaults (60us, 300us) are set for software timestamps, where the paper's 5us/80us assume NIC ones."
)]
pub struct DemoArgs {
    /// How much to transfer.
    #[arg(long, value_name = "N", value_parser = parse_bytes, default_value = "300MB")]
    pub bytes: u64,
    /// Bottleneck rate of the relay.
    #[arg(long, value_name = "R", value_parser = parse_rate, default_value = "1gbit")]
    pub rate: u64,
    /// One-way delay of the relay.
    #[arg(long, value_name = "D", value_parser = parse_duration_ns, default_value = "20us")]
    pub delay: u64,
    /// Queue of the relay.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "256KiB")]
    pub queue: u64,
    /// The receiver's delayed-ACK backstop: an ACK at the latest this long after the first
    /// unacknowledged byte (ACKs also go every 64 KB and at the end of what the sender had
    /// queued) [default: 100us, the host profile's `stride::HOST_DELAYED_ACK_NS`].
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub delayed_ack: Option<u64>,
    /// Controller options (the sender's line rate defaults to the relay's --rate).
    #[command(flatten)]
    pub control: ControlArgs,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `stride demo`.
pub fn run(a: DemoArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    rt.block_on(demo(a))
}

async fn demo(a: DemoArgs) -> anyhow::Result<()> {
    let lo = "127.0.0.1:0".parse().expect("addr");
    let mut rx_proto = stride::host_config(10_000_000_000);
    if let Some(d) = a.delayed_ack {
        if d == 0 {
            anyhow::bail!("--delayed-ack: must be above 0 (ACKs still go every 64 KB)");
        }
        rx_proto.delayed_ack_ns = d;
    }
    let receiver = Endpoint::bind_with(
        lo,
        stride::EndpointConfig {
            proto: rx_proto,
            ..stride::EndpointConfig::default()
        },
    )?;
    let mut rc = RelayConfig::new(lo, receiver.local_addr());
    rc.rate_bps = a.rate;
    rc.delay_ns = a.delay;
    rc.queue_bytes = a.queue;
    let relay = Relay::spawn(rc)?;
    // By default the sender's NIC "runs at" the bottleneck rate: the controller's ceiling.
    let line = a.control.line_rate.unwrap_or(a.rate);
    let proto = a.control.config_for(a.rate, false)?;
    let controller = match proto.cc.params_ref::<stride::proto::cc::StrideParams>() {
        Some(p) => format!(
            "STRIDE, line rate {:.2} Gbit/s, T_low {}, T_high {} (on software timestamps; `stride demo --help` explains the two delay figures)",
            line as f64 / 1e9,
            fmt_ns(u64::from(p.t_low)),
            fmt_ns(u64::from(p.t_high))
        ),
        None => format!(
            "{}, line rate {:.2} Gbit/s",
            proto.cc.name(),
            line as f64 / 1e9
        ),
    };
    let sender = Endpoint::bind_with(
        lo,
        stride::EndpointConfig {
            proto,
            listen: false,
            ..stride::EndpointConfig::default()
        },
    )?;
    if !a.json {
        println!(
            "STRIDE demo: sender {} -> relay {} ({:.2} Gbit/s, {} one way, {} KiB queue) -> receiver {}",
            sender.local_addr(),
            relay.local_addr(),
            a.rate as f64 / 1e9,
            fmt_ns(a.delay),
            a.queue / 1024,
            receiver.local_addr()
        );
        println!("controller: {controller}");
    }
    let rx_ep = receiver.clone();
    let sink = tokio::spawn(async move {
        let mut s = rx_ep.accept().await.map_err(stride::Error::into_io)?;
        let total = crate::units::discard_to_end(&mut s).await?;
        s.shutdown().await?;
        Ok::<u64, std::io::Error>(total)
    });
    let mut s = sender
        .connect_timeout(relay.local_addr(), Duration::from_secs(3))
        .await?;
    let pb = if a.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(a.bytes)
    };
    pb.set_style(
        ProgressStyle::with_template(
            "{spinner} {elapsed_precise} [{bar:30.cyan/blue}] {bytes}/{total_bytes} {msg}",
        )?
        .progress_chars("=> "),
    );
    let chunk = vec![0x5au8; 256 * 1024];
    let start = Instant::now();
    let mut written = 0u64;
    let mut last = (Instant::now(), 0u64);
    while written < a.bytes {
        let n = (a.bytes - written).min(chunk.len() as u64) as usize;
        s.write_all(&chunk[..n]).await?;
        written += n as u64;
        if last.0.elapsed() >= Duration::from_millis(200) {
            let acked = written - s.unacked() as u64;
            let cs = s.stats().unwrap_or_default();
            let rate = (acked - last.1) as f64 * 8.0 / last.0.elapsed().as_secs_f64() / 1e9;
            pb.set_position(acked);
            pb.set_message(format!(
                "goodput {rate:.2} Gbit/s | sender's STT queueing estimate p50 {} p99 {} | retransmitted {}",
                fmt_ns(cs.queue_delay.quantile(0.5)),
                fmt_ns(cs.queue_delay.quantile(0.99)),
                cs.retransmitted_packets
            ));
            last = (Instant::now(), acked);
        }
    }
    s.shutdown().await?;
    let secs = start.elapsed().as_secs_f64();
    pb.set_position(a.bytes);
    pb.finish_and_clear();
    let got = sink.await??;
    let cs = s.stats().unwrap_or_default();
    let rs = relay.stop();
    let mut m = report(written, secs, &cs);
    if got != written {
        anyhow::bail!("receiver got {got} of {written} bytes");
    }
    // Losses and waits outside the modelled bottleneck: datagrams the kernel dropped at the
    // receiver's socket, and reads that came late (the receiver's thread off its CPU).
    let rio = receiver.io_stats();
    m.insert("receiver_socket_drops".into(), rio.rx_overflow.into());
    m.insert("receiver_late_reads".into(), rio.late_reads.into());
    if a.json {
        m.insert("relay".into(), crate::relay_cmd::stats_json(&rs));
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!("sender:  {}", human(&m));
        println!("{}", stats_human(&rs));
        println!(
            "receiver: {} datagrams dropped at its socket (buffer full), {} read more than {} after they arrived",
            rio.rx_overflow,
            rio.late_reads,
            fmt_ns(stride::endpoint::READ_DELAY_SLACK_NS)
        );
        println!(
            "goodput is {:.1} % of the {:.2} Gbit/s bottleneck",
            written as f64 * 8.0 / secs / a.rate as f64 * 100.0,
            a.rate as f64 / 1e9
        );
    }
    Ok(())
}
