//! `stride demo`: receiver, bottleneck and sender in one process (a kernel `tbf` between
//! network namespaces where they can be made, the userspace relay on loopback otherwise), with a
//! live progress bar and a summary that says which path it took.

use crate::control::ControlArgs;
use crate::relay_cmd::stats_human;
use crate::units::{fmt_ns, human, parse_bytes, parse_duration_ns, parse_rate, report, runtime};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use stride_apps::demo::DemoConfig;
use stride_testbed::demo::{Finished, Path, QdiscReport, Started, Via};

/// Arguments of `stride demo`.
#[derive(Args, Debug)]
#[command(
    after_help = "Two queueing delays are reported and they measure different things:\n  \
sender: the controller's own estimate, the single-trip time (STT) of each acknowledged packet minus \
the smallest STT seen, from software timestamps taken by user-space code on both ends; it includes \
scheduling and socket-buffer delays on the hosts, so it can be far larger than the queue itself.\n  \
relay: the time each packet spent in the relay's bottleneck queue, measured by the relay \
(through the kernel qdisc instead: the qdisc's own backlog, sampled, and its drops).\n\
Paths (--via): `netns` runs the transfer between network namespaces through a kernel tbf qdisc \
(needs root and iproute2; removed at the end, on error and on SIGINT/SIGTERM); `relay` through \
the userspace relay on loopback; `auto` takes netns where it can and says why it did not. \
Rate and queue count UDP payload bytes on both.\n\
The controller's T_low/T_high (--t-low, --t-high) act on the sender's figure; the host profile's \
defaults (60us, 300us) are set for software timestamps, where the paper's 5us/80us assume NIC ones."
)]
pub struct DemoArgs {
    /// How much to transfer.
    #[arg(long, value_name = "N", value_parser = parse_bytes, default_value = "300MB")]
    pub bytes: u64,
    /// The path: `netns` (a kernel tbf qdisc between network namespaces; root), `relay` (the
    /// userspace relay on loopback), or `auto` (netns where it can run, else relay).
    #[arg(long, value_name = "PATH", default_value = "auto")]
    pub via: Via,
    /// Bottleneck rate (UDP payload bits per second, on either path).
    #[arg(long, value_name = "R", value_parser = parse_rate, default_value = "1gbit")]
    pub rate: u64,
    /// One-way delay added to each direction [default: 20us through the relay; nothing added
    /// to the namespaces' own veths] (netns: needs netem in the kernel).
    #[arg(long, value_name = "D", value_parser = parse_duration_ns)]
    pub delay: Option<u64>,
    /// Drop-tail queue of the bottleneck (UDP payload bytes, on either path).
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
    let d = stride_testbed::demo::start(
        a.via,
        a.delay,
        DemoConfig {
            bytes: a.bytes,
            rate_bps: a.rate,
            delay_ns: 0,
            queue_bytes: a.queue,
            receiver: rx_proto,
            sender: proto,
        },
    )?;
    if !a.json {
        println!("{}", header(&a, &d));
        println!("path: {}", path_line(&d));
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
    let (fallback, delay) = (d.fallback().map(String::from), d.delay_ns());
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
    // The run (and with it the namespaces) is dropped before a stop exits.
    let out = tokio::select! {
        out = run => Ok(out),
        sig = stop => Err(sig),
    };
    let out = match out {
        Ok(out) => out?,
        Err(sig) => {
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
    print_outcome(&a, &out, fallback.as_deref(), delay)
}

/// The first line: who sends through what to whom.
fn header(a: &DemoArgs, d: &Started) -> String {
    let delay = match d.delay_ns() {
        0 => "no delay added".to_string(),
        ns => format!("{} one way added", fmt_ns(ns)),
    };
    let link = format!(
        "{:.2} Gbit/s, {delay}, {} KiB queue",
        a.rate as f64 / 1e9,
        a.queue / 1024
    );
    match d.relay_addr() {
        Some(relay) => format!(
            "STRIDE demo: sender {} -> relay {relay} ({link}) -> receiver {}",
            d.sender_addr(),
            d.receiver_addr()
        ),
        None => format!(
            "STRIDE demo: sender {} -> kernel tbf ({link}) -> receiver {}",
            d.sender_addr(),
            d.receiver_addr()
        ),
    }
}

/// The line that says which path the demo took, and why.
fn path_line(d: &Started) -> String {
    match (d.path(), d.fallback()) {
        (Path::Netns, _) => format!(
            "netns: a kernel tbf qdisc between network namespaces {} (removed at exit)",
            d.namespaces().join(", ")
        ),
        (Path::Relay, None) => "relay: the userspace relay on loopback (--via relay)".into(),
        (Path::Relay, Some(why)) => format!(
            "relay: the userspace relay on loopback, because the namespace path cannot run here: {why}"
        ),
    }
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

/// The demo's summary: the sender's report, the bottleneck's counters (the relay's or the
/// qdisc's), the receiver's losses, and the path taken.
fn print_outcome(
    a: &DemoArgs,
    f: &Finished,
    fallback: Option<&str>,
    delay_ns: u64,
) -> anyhow::Result<()> {
    let out = &f.demo;
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
    let share = written as f64 * 8.0 / secs / a.rate as f64;
    if a.json {
        m.insert("path".into(), f.path.name().into());
        if let Some(why) = fallback {
            m.insert("path_fallback".into(), why.into());
        }
        m.insert("delay_added_ns".into(), delay_ns.into());
        m.insert("bottleneck_share".into(), share.into());
        if let Some(r) = &out.relay {
            m.insert("relay".into(), crate::relay_cmd::stats_json(r));
        }
        if let Some(q) = &f.qdisc {
            m.insert("qdisc".into(), qdisc_json(q));
        }
        println!("{}", serde_json::Value::Object(m));
        return Ok(());
    }
    println!("sender:  {}", human(&m));
    if let Some(r) = &out.relay {
        println!("{}", stats_human(r));
    }
    if let Some(q) = &f.qdisc {
        println!("{}", qdisc_human(q));
    }
    println!(
        "receiver: {} datagrams dropped at its socket (buffer full), {} read more than {} after they arrived",
        rio.rx_overflow,
        rio.late_reads,
        fmt_ns(stride::endpoint::READ_DELAY_SLACK_NS)
    );
    println!(
        "goodput is {:.1} % of the {:.2} Gbit/s bottleneck, through {}",
        share * 100.0,
        a.rate as f64 / 1e9,
        match f.path {
            Path::Netns => "a kernel tbf qdisc between network namespaces (--via netns)",
            Path::Relay => "the userspace relay (--via relay)",
        }
    );
    Ok(())
}

/// The qdisc's counters as `stride demo --json` gives them.
fn qdisc_json(q: &QdiscReport) -> serde_json::Value {
    serde_json::json!({
        "kind": "tbf",
        "sent_bytes": q.end.sent_bytes,
        "sent_packets": q.end.sent_packets,
        "dropped": q.end.dropped,
        "dropped_after_10ms": q.dropped_late,
        "backlog_samples": q.samples,
        "backlog_max_bytes": q.backlog_max_bytes,
        "backlog_median_bytes": q.backlog_median_bytes,
    })
}

/// The qdisc's counters in a line.
fn qdisc_human(q: &QdiscReport) -> String {
    format!(
        "qdisc:   tbf sent {} packets ({} payload bytes), dropped {} ({} after the first 10 ms), backlog max {} B / median {} B over {} samples",
        q.end.sent_packets,
        q.end.sent_bytes,
        q.end.dropped,
        q.dropped_late,
        q.backlog_max_bytes,
        q.backlog_median_bytes,
        q.samples
    )
}
