//! The `stride` command line tool.
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "stride",
    version,
    about = "STRIDE: a delay-based, hardware-friendly reliable transport"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Regenerate or check the shared test vectors under vectors/.
    Vectors(vectors::Args),
    /// Receive files sent with `stride send` (verified with BLAKE3, written atomically).
    ///
    /// Runs until stopped: on SIGINT or SIGTERM (handled even when started in the background,
    /// where SIGINT is inherited as ignored) it resets the connections of unfinished uploads,
    /// removes their temporary .part files, prints its counters and exits with status 0, or
    /// 130/143 (128 + the signal) when it cut --once short.
    Recv(xfer::RecvArgs),
    /// Send files to a `stride recv`; exits non-zero unless the receiver confirms each one.
    ///
    /// On SIGINT or SIGTERM (handled even when started in the background) it resets the
    /// upload in progress, so the receiver drops its temporary file at once, names the file
    /// it did not send and exits with 130/143 (128 + the signal).
    Send(xfer::SendArgs),
    /// Memory-to-memory throughput test (server and client), like iperf3.
    Perf(perf::PerfArgs),
    /// Userspace bottleneck: rate limit, drop-tail queue, delay, loss, reordering, duplication.
    ///
    /// Runs until --duration ends or until SIGINT or SIGTERM (handled even when started in
    /// the background), then prints its counters and exits with status 0.
    Relay(relay_cmd::RelayArgs),
    /// Receiver, 1 Gbit/s relay and sender on loopback in one process, with live progress.
    ///
    /// On SIGINT or SIGTERM it says how many bytes it moved and exits with 130/143.
    Demo(demo::DemoArgs),
    /// Packet-level datacenter simulator: STRIDE (the same stride-proto code) vs TCP baselines.
    Sim(sim::SimArgs),
    /// The paper's testbed on this machine: namespaces, a kernel bottleneck, background
    /// traffic, STRIDE against kernel TCP (see crates/stride-testbed).
    Testbed(testbed::TestbedArgs),
}

mod control;
mod demo;
mod perf;
mod plot;
mod ray;
mod relay_cmd;
mod sim;
mod testbed;
mod units;
mod vectors;
mod xfer;

fn main() {
    // Receive buffers are freed on reader threads and retaken at line rate: keep the freed
    // memory instead of faulting it back in (stride::sys::keep_freed_memory).
    stride::sys::keep_freed_memory();
    let cli = Cli::parse();
    let (name, r) = match cli.cmd {
        Cmd::Vectors(a) => ("vectors", vectors::run(a)),
        Cmd::Recv(a) => ("recv", xfer::run_recv(a)),
        Cmd::Send(a) => ("send", xfer::run_send(a)),
        Cmd::Perf(a) => ("perf", perf::run(a)),
        Cmd::Relay(a) => ("relay", relay_cmd::run(a)),
        Cmd::Demo(a) => ("demo", demo::run(a)),
        Cmd::Sim(a) => ("sim", sim::run(a)),
        Cmd::Testbed(a) => ("testbed", testbed::run(a)),
    };
    // One clear line on stderr and a non-zero status (no debug dump or backtrace).
    if let Err(e) = r {
        units::fail(name, format!("{e:#}"));
    }
}
