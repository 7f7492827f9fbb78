//! `stride perf`: memory-to-memory throughput with per-second interval reports, and
//! request/response round trips, over STRIDE, kernel TCP or (round trips only) raw UDP, all
//! through the same harness, servers and clients ([`stride_apps::perf`]) so their figures
//! compare. This file parses the arguments, calls them and prints.

use crate::control::{line_rate_fields, line_rate_text, ControlArgs};
use crate::units::{fail, fmt_ns, human, parse_bytes, report, runtime};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use std::net::SocketAddr;
use std::time::Duration;
use stride::Endpoint;
use stride_apps::perf::{self, bulk, round_trips, udp_round_trips, Done, Job, RttSummary, Served};
use stride_apps::stop::{on_stop_signal, stop_signals, Stop};

/// The future of [`stop_signals`].
type StopSignals = std::pin::Pin<Box<dyn std::future::Future<Output = Stop> + Send>>;

/// Arguments of `stride perf`.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  stride perf server --listen 0.0.0.0:7100\n  stride perf client --to 10.0.0.2:7100 --time 10s\n  stride perf client --to 10.0.0.2:7100 --rr 10000      (64-byte round trips)\n  stride perf server --udp --listen 0.0.0.0:7101 ; stride perf client --udp --rr 10000 --to 10.0.0.2:7101"
)]
pub struct PerfArgs {
    #[command(subcommand)]
    pub role: Role,
}

/// Which transport a perf role uses.
#[derive(Args, Debug, Clone, Copy)]
pub struct Transport {
    /// Use kernel TCP instead of STRIDE (same harness, for comparison; TCP_NODELAY is set).
    #[arg(long, conflicts_with = "udp")]
    tcp: bool,
    /// Use raw UDP datagrams (round trips only: the server echoes each datagram).
    #[arg(long)]
    udp: bool,
    /// Drive the transport from the calling thread with blocking calls, no tokio: STRIDE
    /// through `stride::blocking` (the core run by the caller, no driver thread), TCP and UDP
    /// through std's blocking sockets. A STRIDE server serves one client at a time.
    #[arg(long)]
    blocking: bool,
    /// STRIDE: mark every datagram (data, ACKs, handshake) with this DSCP, next to the ECT(0)
    /// ECN bits: 0..=63 or a name (cs0..cs7, af11..af43, ef, le), e.g. af41 for a switch
    /// class of STRIDE's own (docs/spec.md §2.2) [default: 0, best effort].
    #[arg(long, value_name = "DSCP", conflicts_with_all = ["tcp", "udp"])]
    dscp: Option<stride::Dscp>,
}

impl Transport {
    /// STRIDE's endpoint options with the DSCP asked for and protocol configuration `proto`
    /// (None: the default endpoint's).
    fn endpoint(&self, proto: Option<stride::Config>) -> stride::EndpointConfig {
        let mut o = stride::EndpointConfig {
            dscp: self.dscp.unwrap_or_default(),
            ..stride::EndpointConfig::default()
        };
        if let Some(p) = proto {
            o.proto = p;
        }
        o
    }
}

/// Server or client.
#[derive(Subcommand, Debug)]
pub enum Role {
    /// Serve perf clients (bulk: discard and confirm; round trips: echo); one report line per
    /// bulk connection.
    ///
    /// Runs until SIGINT or SIGTERM (handled even when started in the background, where SIGINT
    /// is inherited as ignored): it then resets its STRIDE connections and exits with status 0.
    Server {
        /// Address to listen on.
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        /// One JSON object per connection.
        #[arg(long)]
        json: bool,
        /// STRIDE: serve on this many sockets bound to the address with SO_REUSEPORT, each
        /// with its own driver thread (connections spread over them by the kernel's 4-tuple
        /// hash), so several connections use several cores.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=64))]
        shards: u16,
        #[command(flatten)]
        transport: Transport,
    },
    /// Send a fixed amount of data or for a fixed time and report goodput every second; or time
    /// request/response round trips (--rr).
    Client {
        /// The `perf server` address.
        #[arg(long, value_name = "ADDR")]
        to: SocketAddr,
        /// Send this many bytes (e.g. 1GB, 100MiB).
        #[arg(long, value_name = "N", value_parser = parse_bytes, conflicts_with_all = ["time", "rr"], required_unless_present_any = ["time", "rr"])]
        bytes: Option<u64>,
        /// Send for this long (e.g. 10s; at least 1ms).
        #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout, conflicts_with = "rr")]
        time: Option<Duration>,
        /// Time this many request/response round trips of --size bytes each way (after 1 % of
        /// warm-up round trips, at least 10) and report their median, p99 and mean.
        #[arg(long, value_name = "COUNT")]
        rr: Option<u64>,
        /// Request and response size of --rr.
        #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "64")]
        size: u64,
        /// Only the final report, as one JSON object.
        #[arg(long)]
        json: bool,
        /// Bulk: run this many connections at once (TCP: each its own socket), --bytes split
        /// evenly between them; the report is their aggregate goodput.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256), conflicts_with = "rr")]
        parallel: u16,
        /// STRIDE with --parallel: spread the connections over this many client endpoints
        /// (each one socket and one driver thread; default: one per connection). Fewer
        /// endpoints share driver threads, but their connections share a source port, so the
        /// server's `SO_REUSEPORT` hash puts them all on one of its shards.
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u16).range(1..=256))]
        endpoints: Option<u16>,
        #[command(flatten)]
        transport: Transport,
        #[command(flatten)]
        control: ControlArgs,
    },
}

/// `stride perf`.
pub fn run(a: PerfArgs) -> anyhow::Result<()> {
    if let Some(code) = run_blocking(&a) {
        std::process::exit(code);
    }
    let rt = runtime()?;
    // The job runs as a spawned task, on a worker thread that also drives the reactor, not on
    // the main thread: a task woken by socket readiness then runs where it was woken instead of
    // costing a futex wake-up of the blocked main thread (same for every transport measured).
    let code = rt.block_on(async move {
        tokio::spawn(async move {
            match a.role {
                Role::Server {
                    listen,
                    json,
                    shards,
                    transport,
                } => {
                    let stop: StopSignals = match stop_signals() {
                        Ok(s) => Box::pin(s),
                        Err(e) => fail(
                            "perf server",
                            format!("cannot install signal handlers: {e}"),
                        ),
                    };
                    if transport.tcp {
                        tcp_server(listen, json, stop).await
                    } else if transport.udp {
                        udp_server(listen, stop).await
                    } else {
                        let opts = transport.endpoint(None);
                        server(listen, json, (usize::from(shards), opts), stop).await
                    }
                }
                Role::Client { .. } => client_role(a.role).await,
            }
        })
        .await
        .unwrap_or(1)
    });
    drop(rt);
    std::process::exit(code)
}

/// The job of `--rr`/`--size` or `--bytes`/`--time` (`--size` checked).
fn job(rr: Option<u64>, size: u64, bytes: Option<u64>, time: Option<Duration>) -> Job {
    match rr {
        Some(count) => {
            if size == 0 || size > 65_000 {
                fail("perf client", "--size must be in 1..=65000");
            }
            Job::RoundTrips { count, size }
        }
        None => Job::Bulk {
            bytes,
            time: time.map(|d| d.as_secs_f64()),
        },
    }
}

/// `perf client` on tokio: picks the client for the transport and the job.
async fn client_role(role: Role) -> i32 {
    let Role::Client {
        to,
        bytes,
        time,
        rr,
        size,
        json,
        parallel,
        endpoints,
        transport,
        control,
    } = role
    else {
        unreachable!("a client role")
    };
    let job = job(rr, size, bytes, time);
    if parallel > 1 {
        let Job::Bulk { bytes, time } = job else {
            fail(
                "perf client",
                "--parallel needs a bulk job (--bytes or --time)",
            );
        };
        let opts = if transport.tcp {
            match control.tcp_pacing() {
                Err(e) => fail("perf client", e),
                Ok(Some(_)) => fail(
                    "perf client",
                    "--tcp --pin-rate takes one connection, not --parallel",
                ),
                Ok(None) => None,
            }
        } else {
            match control.config(to) {
                Ok((c, lr)) => Some((transport.endpoint(Some(c)), lr)),
                Err(e) => fail("perf client", e),
            }
        };
        if transport.udp {
            fail("perf client", "--udp needs --rr");
        }
        let shape = (
            usize::from(parallel),
            usize::from(endpoints.unwrap_or(parallel)),
        );
        parallel_client(to, shape, bytes, time, json, opts).await
    } else if transport.udp {
        match job {
            Job::RoundTrips { count, size } => udp_client(to, count, size, json).await,
            Job::Bulk { .. } => fail("perf client", "--udp needs --rr"),
        }
    } else if transport.tcp {
        match control.tcp_pacing() {
            Ok(pace) => tcp_client(to, job, json, pace).await,
            Err(e) => fail("perf client", e),
        }
    } else {
        match control.config(to) {
            Ok((c, lr)) => client(to, job, json, (transport.endpoint(Some(c)), lr)).await,
            Err(e) => fail("perf client", e),
        }
    }
}

fn server_line(json_out: bool, remote: SocketAddr, total: u64, secs: f64) {
    let gbps = total as f64 * 8.0 / secs.max(1e-9) / 1e9;
    if json_out {
        println!(
            "{}",
            json!({"remote": remote.to_string(), "bytes": total, "seconds": secs,
                   "goodput_gbps": gbps, "ok": true})
        );
    } else {
        println!("{remote}: received {total} bytes in {secs:.3} s = {gbps:.3} Gbit/s");
    }
}

fn server_error(json_out: bool, remote: SocketAddr, e: std::io::Error) {
    if json_out {
        println!(
            "{}",
            json!({"remote": remote.to_string(), "ok": false, "error": e.to_string()})
        );
    } else {
        eprintln!("{remote}: failed: {e}");
    }
}

/// A server's report of one connection: its line or its failure.
fn print_served(json_out: bool, remote: SocketAddr, served: Served) {
    match served {
        Served::Bulk { bytes, seconds } => server_line(json_out, remote, bytes, seconds),
        Served::Failed(e) => server_error(json_out, remote, e),
    }
}

/// A server stopped by a signal: says so and ends with status 0, a server's normal end (see
/// `stride_apps::stop`).
fn stopping(sig: Stop, what: &str) -> i32 {
    eprintln!("perf server: stopping on {}{what}", sig.name());
    0
}

/// The STRIDE server on `shards` sockets with the endpoint options `opts`.
async fn server(
    listen: SocketAddr,
    json_out: bool,
    (shards, opts): (usize, stride::EndpointConfig),
    stop: StopSignals,
) -> i32 {
    let eps = match Endpoint::bind_shards(listen, opts, shards) {
        Ok(eps) => eps,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    eprintln!(
        "perf server listening on {} ({shards} shard{})",
        eps[0].local_addr(),
        if shards == 1 { "" } else { "s" }
    );
    tokio::select! {
        e = perf::serve_stride(&eps, move |remote, s| print_served(json_out, remote, s)) => {
            fail("perf server", e)
        }
        sig = stop => {
            // Reset the clients' connections so they learn of the stop now; the RSTs leave
            // within the bounded wait.
            let reset: usize = eps.iter().map(Endpoint::abort_all).sum();
            for ep in &eps {
                ep.wait_idle(Duration::from_millis(300)).await;
            }
            stopping(sig, &format!(": {reset} connection(s) reset"))
        }
    }
}

async fn tcp_server(listen: SocketAddr, json_out: bool, stop: StopSignals) -> i32 {
    let l = match tokio::net::TcpListener::bind(listen).await {
        Ok(l) => l,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    if let Ok(a) = l.local_addr() {
        eprintln!("perf server (tcp) listening on {a}");
    }
    tokio::select! {
        e = perf::serve_tcp(l, move |remote, s| print_served(json_out, remote, s)) => {
            fail("perf server", e)
        }
        // The kernel closes the TCP connections when the process exits.
        sig = stop => stopping(sig, ""),
    }
}

async fn udp_server(listen: SocketAddr, stop: StopSignals) -> i32 {
    let sock = match tokio::net::UdpSocket::bind(listen).await {
        Ok(s) => s,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    if let Ok(a) = sock.local_addr() {
        eprintln!("perf server (udp echo) listening on {a}");
    }
    tokio::select! {
        e = perf::udp_echo(&sock) => fail("perf server", e),
        sig = stop => stopping(sig, ""),
    }
}

/// The round-trip report: count, size, median, p99, mean, min (ns).
fn rtt_report(transport: &str, size: u64, rtts: Vec<u64>) -> Map<String, Value> {
    let r = match RttSummary::of(rtts) {
        Some(r) => r,
        None => fail("perf client", "no round trips to report"),
    };
    let mut m = Map::new();
    m.insert("transport".into(), json!(transport));
    m.insert("round_trips".into(), json!(r.count));
    // The untimed exchanges made first (the same rule for every transport), so a caller can
    // divide what the whole run cost by the exchanges it made.
    m.insert(
        "warm_up_round_trips".into(),
        json!(perf::warm_up(r.count as u64)),
    );
    m.insert("size".into(), json!(size));
    m.insert("rtt_p50_ns".into(), json!(r.p50));
    m.insert("rtt_p99_ns".into(), json!(r.p99));
    m.insert("rtt_mean_ns".into(), json!(r.mean));
    m.insert("rtt_min_ns".into(), json!(r.min));
    m
}

fn print_rtt(json_out: bool, m: Map<String, Value>) {
    if json_out {
        println!("{}", Value::Object(m));
    } else {
        let g = |k: &str| m[k].as_u64().unwrap_or(0);
        println!(
            "{} round trips of {} bytes over {}: median {}, p99 {}, mean {}, min {}",
            g("round_trips"),
            g("size"),
            m["transport"].as_str().unwrap_or(""),
            fmt_ns(g("rtt_p50_ns")),
            fmt_ns(g("rtt_p99_ns")),
            fmt_ns(g("rtt_mean_ns")),
            fmt_ns(g("rtt_min_ns")),
        );
    }
}

async fn client(
    to: SocketAddr,
    job: Job,
    json_out: bool,
    (opts, lr): (stride::EndpointConfig, stride::LineRate),
) -> i32 {
    let ep = match perf::client_endpoint(to, opts) {
        Ok(ep) => ep,
        Err(e) => fail("perf client", e),
    };
    let mut s = match ep.connect_timeout(to, perf::CONNECT_LIMIT).await {
        Ok(s) => s,
        Err(e) => fail(
            "perf client",
            format!("peer unreachable or refused at {to}: {e}"),
        ),
    };
    let (bytes, time) = match job {
        Job::RoundTrips { count, size } => {
            let io0 = ep.io_stats();
            match round_trips(&mut s, count, size).await {
                Ok(rtts) => {
                    let mut m = rtt_report("stride", size, rtts);
                    line_rate_fields(&lr, &mut m);
                    // The client endpoint's I/O per exchange (the warm-up's counted too), so
                    // a reader can tell who received (the reader inline or the driver), how
                    // often the driver thread was woken and whether ACKs rode on requests.
                    let io = ep.io_stats();
                    let n = (count + perf::warm_up(count)) as f64;
                    let per = |a: u64, b: u64| json!(((a - b) as f64 / n * 1e3).round() / 1e3);
                    m.insert(
                        "io_per_round_trip".into(),
                        json!({
                            "datagrams_out": per(io.datagrams_out, io0.datagrams_out),
                            "datagrams_in": per(io.datagrams_in, io0.datagrams_in),
                            "receive_calls": per(io.rx_calls, io0.rx_calls),
                            "inline_receives": per(io.inline_receives, io0.inline_receives),
                            "send_calls": per(io.tx_calls, io0.tx_calls),
                            "direct_calls": per(io.direct_calls, io0.direct_calls),
                            "driver_kicks": per(io.driver_kicks, io0.driver_kicks),
                            "driver_sleeps": per(io.driver_sleeps, io0.driver_sleeps),
                        }),
                    );
                    print_rtt(json_out, m)
                }
                Err(e) => fail("perf client", format!("round trips failed: {e}")),
            }
            return 0;
        }
        Job::Bulk { bytes, time } => (bytes, time),
    };
    if !json_out {
        println!("connected to {to}, {}", line_rate_text(&lr));
        println!(
            "{:>15}  {:>10}  {:>12}  {:>8}  {:>10}",
            "interval", "MBytes", "Gbit/s", "retx", "qdelay p50"
        );
    }
    let tick = perf::intervals(|iv| {
        if !json_out {
            println!(
                "{:>6.2}-{:>6.2} s  {:>10.2}  {:>12.3}  {:>8}  {:>10}",
                iv.from,
                iv.to,
                iv.acked as f64 / 1e6,
                iv.acked as f64 * 8.0 / 1e9 / (iv.to - iv.from),
                iv.retransmitted,
                fmt_ns(iv.queue_delay_p50),
            );
        }
    });
    let (written, secs, cores) = match bulk(&mut s, bytes, time, tick).await {
        Ok(b) => (b.bytes, b.seconds, b.cpu_cores),
        Err(e) => fail("perf client", format!("transfer failed: {e}")),
    };
    let cs = s.stats().unwrap_or_default();
    let mut m = report(written, secs, &cs);
    m.insert("transport".into(), json!("stride"));
    line_rate_fields(&lr, &mut m);
    m.insert("cpu_cores".into(), json!((cores * 1e3).round() / 1e3));
    // How the driver batched its sends (GSO messages of up to 64 KiB): datagrams per call.
    let io = ep.io_stats();
    m.insert("send_calls".into(), json!(io.tx_calls));
    m.insert("datagrams_out".into(), json!(io.datagrams_out));
    if json_out {
        println!("{}", Value::Object(m));
    } else {
        println!("total: {}", human(&m));
    }
    0
}

/// `--parallel N`: N bulk connections at once (STRIDE with the endpoint options `opts`, else
/// TCP); reports their aggregate goodput (all bytes over the time from the first start to the
/// last confirmation).
async fn parallel_client(
    to: SocketAddr,
    shape: (usize, usize),
    bytes: Option<u64>,
    time: Option<f64>,
    json_out: bool,
    opts: Option<(stride::EndpointConfig, stride::LineRate)>,
) -> i32 {
    let (opts, lr) = opts.unzip();
    let p = match perf::parallel_bulk(to, shape, bytes, time, opts.as_ref()).await {
        Ok(p) => p,
        Err(e) => fail("perf client", e),
    };
    let n = shape.0;
    let total: u64 = p.connections.iter().map(|c| c.bytes).sum();
    let retx: u64 = p.connections.iter().map(|c| c.retransmitted).sum();
    let timeouts: u64 = p.connections.iter().map(|c| c.timeouts).sum();
    let per: Vec<f64> = p
        .connections
        .iter()
        .map(|c| c.bytes as f64 * 8.0 / c.seconds.max(1e-9) / 1e9)
        .collect();
    let secs = p.seconds;
    let gbps = total as f64 * 8.0 / secs.max(1e-9) / 1e9;
    let transport = if opts.is_some() { "stride" } else { "tcp" };
    if json_out {
        let mut m = json!({"transport": transport, "connections": n, "endpoints": p.endpoints, "bytes": total, "seconds": secs,
                   "goodput_gbps": gbps, "per_connection_gbps": per,
                   "retransmitted_packets": retx, "timeouts": timeouts,
                   "cpu_cores": (p.cpu_cores * 1e3).round() / 1e3});
        if let (Some(lr), Value::Object(m)) = (&lr, &mut m) {
            line_rate_fields(lr, m);
        }
        println!("{m}");
    } else {
        let lr = lr.map(|lr| format!(", {}", line_rate_text(&lr)));
        println!(
            "total: {n} connections, {total} bytes in {secs:.3} s = {gbps:.3} Gbit/s aggregate ({transport}{})",
            lr.unwrap_or_default()
        );
    }
    0
}

/// Kernel TCP; with `pace` (bytes per second), paced by the kernel at that rate.
async fn tcp_client(to: SocketAddr, job: Job, json_out: bool, pace: Option<u64>) -> i32 {
    let mut s = match perf::tcp_client(to, pace).await {
        Ok(s) => s,
        Err(e) => fail("perf client", e),
    };
    match job {
        Job::RoundTrips { count, size } => match round_trips(&mut s, count, size).await {
            Ok(rtts) => print_rtt(json_out, rtt_report("tcp", size, rtts)),
            Err(e) => fail("perf client", format!("round trips failed: {e}")),
        },
        Job::Bulk { bytes, time } => {
            let (written, secs, cores) = match bulk(&mut s, bytes, time, |_, _, _| {}).await {
                Ok(b) => (b.bytes, b.seconds, b.cpu_cores),
                Err(e) => fail("perf client", format!("transfer failed: {e}")),
            };
            let gbps = written as f64 * 8.0 / secs / 1e9;
            if json_out {
                println!(
                    "{}",
                    json!({"bytes": written, "seconds": secs, "goodput_gbps": gbps, "transport": "tcp",
                           "cpu_cores": (cores * 1e3).round() / 1e3})
                );
            } else {
                println!("total: {written} bytes in {secs:.3} s = {gbps:.3} Gbit/s (tcp)");
            }
        }
    }
    0
}

async fn udp_client(to: SocketAddr, count: u64, size: u64, json_out: bool) -> i32 {
    match udp_round_trips(to, count, size).await {
        Ok(rtts) => print_rtt(json_out, rtt_report("udp", size, rtts)),
        Err(e) => fail("perf client", format!("round trips failed: {e}")),
    }
    0
}

/// `--blocking`: the roles without tokio. None when the arguments do not ask for it.
fn run_blocking(a: &PerfArgs) -> Option<i32> {
    match &a.role {
        Role::Server {
            listen,
            json,
            shards,
            transport,
        } if transport.blocking => {
            if *shards > 1 {
                fail(
                    "perf server",
                    "--blocking serves on one socket (no --shards)",
                );
            }
            Some(blocking_server(*listen, *json, *transport))
        }
        Role::Client {
            to,
            rr,
            size,
            json,
            transport,
            control,
            bytes,
            time,
            parallel,
            ..
        } if transport.blocking => {
            if *parallel > 1 {
                fail(
                    "perf client",
                    "--blocking runs one connection (no --parallel)",
                );
            }
            let name = if transport.udp {
                "udp"
            } else if transport.tcp {
                "tcp"
            } else {
                "stride"
            };
            if rr.is_none() && transport.udp {
                fail("perf client", "--udp needs --rr");
            }
            let job = job(*rr, *size, *bytes, *time);
            let r = if transport.udp {
                perf::udp_blocking(*to, job)
            } else if transport.tcp {
                perf::tcp_blocking(*to, job)
            } else {
                perf::stride_blocking(blocking_connect(*to, control, transport), job)
            };
            match r {
                Ok(done) => print_blocking(name, *size, *json, done),
                Err(e) => fail("perf client", format!("{name} failed: {e}")),
            }
            Some(0)
        }
        _ => None,
    }
}

/// A blocking STRIDE connection to `to` with the controller options and the DSCP asked for.
fn blocking_connect(
    to: SocketAddr,
    control: &ControlArgs,
    transport: &Transport,
) -> stride::blocking::Connection {
    let opts = match control.config(to) {
        Ok((c, _)) => transport.endpoint(Some(c)),
        Err(e) => fail("perf client", e),
    };
    match stride::blocking::Connection::connect_with(to, perf::CONNECT_LIMIT, opts) {
        Ok(c) => c,
        Err(e) => fail(
            "perf client",
            format!("peer unreachable or refused at {to}: {e}"),
        ),
    }
}

/// The report of a blocking client over `name`.
fn print_blocking(name: &str, size: u64, json_out: bool, done: Done) {
    match done {
        Done::Rtts(r) => {
            let mut m = rtt_report(name, size, r);
            m.insert("blocking".into(), json!(true));
            print_rtt(json_out, m);
        }
        Done::Bulk(b, stats) => {
            // STRIDE's counters for STRIDE; TCP's line as the async TCP client gives it.
            let mut m = match stats {
                Some(cs) => report(b.bytes, b.seconds, &cs),
                None => {
                    let mut m = Map::new();
                    m.insert("bytes".into(), json!(b.bytes));
                    m.insert("seconds".into(), json!(b.seconds));
                    m.insert(
                        "goodput_gbps".into(),
                        json!(b.bytes as f64 * 8.0 / b.seconds.max(1e-9) / 1e9),
                    );
                    m
                }
            };
            m.insert("transport".into(), json!(name));
            m.insert("blocking".into(), json!(true));
            m.insert("cpu_cores".into(), json!((b.cpu_cores * 1e3).round() / 1e3));
            if json_out {
                println!("{}", Value::Object(m));
            } else {
                println!(
                    "total: {} bytes in {:.3} s = {:.3} Gbit/s ({name}, blocking)",
                    b.bytes,
                    b.seconds,
                    b.bytes as f64 * 8.0 / b.seconds.max(1e-9) / 1e9
                );
            }
        }
    }
}

fn blocking_server(listen: SocketAddr, json_out: bool, transport: Transport) -> i32 {
    // The blocking server's calls cannot be interrupted: a thread of its own waits for the
    // signals and ends the process (its STRIDE connection, if any, is not reset).
    if let Err(e) = on_stop_signal(|sig| std::process::exit(stopping(sig, ""))) {
        fail(
            "perf server",
            format!("cannot install signal handlers: {e}"),
        );
    }
    if transport.udp {
        let sock = match std::net::UdpSocket::bind(listen) {
            Ok(s) => s,
            Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
        };
        if let Ok(a) = sock.local_addr() {
            eprintln!("perf server (udp echo, blocking) listening on {a}");
        }
        fail("perf server", perf::udp_echo_blocking(&sock));
    }
    if transport.tcp {
        let l = match std::net::TcpListener::bind(listen) {
            Ok(l) => l,
            Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
        };
        if let Ok(a) = l.local_addr() {
            eprintln!("perf server (tcp, blocking) listening on {a}");
        }
        let e = perf::serve_tcp_blocking(&l, move |remote, s| print_served(json_out, remote, s));
        fail("perf server", e);
    }
    let opts = transport.endpoint(None);
    let mut ep = match stride::blocking::Endpoint::bind_with(listen, opts) {
        Ok(ep) => ep,
        Err(e) => fail("perf server", format!("cannot listen on {listen}: {e}")),
    };
    eprintln!(
        "perf server (blocking, one client at a time) listening on {}",
        ep.local_addr()
    );
    let e = perf::serve_stride_blocking(&mut ep, listen, |remote, s| {
        print_served(json_out, remote, s)
    });
    fail("perf server", e)
}
