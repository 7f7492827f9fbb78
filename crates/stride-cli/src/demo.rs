//! `stride demo`: receiver, bottleneck relay and sender in one process on loopback, with a live
//! progress bar and a summary.

use crate::control::ControlArgs;
use crate::relay_cmd::stats_human;
use crate::units::{fmt_ns, human, parse_bytes, parse_duration_ns, parse_rate, report, runtime};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use stride_apps::demo::{Demo, DemoConfig, Outcome};

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
    let mut rx_proto = stride::host_config(10_000_000_000);
    if let Some(d) = a.delayed_ack {
        if d == 0 {
            anyhow::bail!("--delayed-ack: must be above 0 (ACKs still go every 64 KB)");
        }
        rx_proto.delayed_ack_ns = d;
    }
    // By default the sender's NIC "runs at" the bottleneck rate: the controller's ceiling.
    let line = a.control.line_rate.unwrap_or(a.rate);
    let proto = a.control.config_for(a.rate, false)?;
    let controller = controller_line(&proto, line);
    // Stopped by a signal, the demo says how far it got and ends with 128 + the signal.
    let stop = stride_apps::stop::stop_signals()
        .map_err(|e| anyhow::anyhow!("cannot install signal handlers: {e}"))?;
    let d = Demo::start(DemoConfig {
        bytes: a.bytes,
        rate_bps: a.rate,
        delay_ns: a.delay,
        queue_bytes: a.queue,
        receiver: rx_proto,
        sender: proto,
    })?;
    if !a.json {
        println!(
            "STRIDE demo: sender {} -> relay {} ({:.2} Gbit/s, {} one way, {} KiB queue) -> receiver {}",
            d.sender_addr(),
            d.relay_addr(),
            a.rate as f64 / 1e9,
            fmt_ns(a.delay),
            a.queue / 1024,
            d.receiver_addr()
        );
        println!("controller: {controller}");
    }
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
    let run = d.run(|p| {
            pb.set_position(p.acked);
            pb.set_message(format!(
                "goodput {:.2} Gbit/s | sender's STT queueing estimate p50 {} p99 {} | retransmitted {}",
                p.goodput_gbps,
                fmt_ns(p.stats.queue_delay.quantile(0.5)),
                fmt_ns(p.stats.queue_delay.quantile(0.99)),
                p.stats.retransmitted_packets
            ));
    });
    let out = tokio::select! {
        out = run => out?,
        sig = stop => {
            let done = pb.position();
            pb.finish_and_clear();
            eprintln!(
                "stride demo: stopping on {} after {done} of {} bytes",
                sig.name(),
                a.bytes
            );
            std::process::exit(sig.status());
        }
    };
    pb.set_position(a.bytes);
    pb.finish_and_clear();
    print_outcome(&a, &out)
}

/// The controller the sender runs, as the demo names it.
fn controller_line(proto: &stride::Config, line: u64) -> String {
    match proto.cc.params_ref::<stride::proto::cc::StrideParams>() {
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
    }
}

/// The demo's summary: the sender's report, the relay's counters, the receiver's losses.
fn print_outcome(a: &DemoArgs, out: &Outcome) -> anyhow::Result<()> {
    let (written, secs, got) = (out.written, out.seconds, out.received);
    let mut m = report(written, secs, &out.stats);
    if got != written {
        anyhow::bail!("receiver got {got} of {written} bytes");
    }
    // Losses and waits outside the modelled bottleneck: datagrams the kernel dropped at the
    // receiver's socket, and reads that came late (the receiver's thread off its CPU).
    let rio = &out.receiver_io;
    m.insert("receiver_socket_drops".into(), rio.rx_overflow.into());
    m.insert("receiver_late_reads".into(), rio.late_reads.into());
    if a.json {
        m.insert("relay".into(), crate::relay_cmd::stats_json(&out.relay));
        println!("{}", serde_json::Value::Object(m));
    } else {
        println!("sender:  {}", human(&m));
        println!("{}", stats_human(&out.relay));
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
