//! `stride send` and `stride recv`: arguments and printing; the protocol, the endpoints'
//! options and the receiver's accept loop are [`stride_apps::xfer`].

use crate::control::{line_rate_fields, line_rate_text, ControlArgs};
use crate::units::{fail, human, report, runtime};
use clap::Args;
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use stride::Endpoint;
use stride_apps::xfer::{
    self, receive_file, send_file, Limits, ReceiveOptions, Received, Refusals, SendOptions,
};

/// Arguments of `stride recv`.
#[derive(Args, Debug)]
#[command(
    after_help = "Writes a fresh NAME.RANDOM.part (never following or reusing an existing file), checks size and \
the BLAKE3 of what is on disk, fsyncs and renames it to NAME only on a match; refuses names with path \
separators or '..', a second upload of a name in progress, and never replaces NAME without --force.\n\n\
Without --key, anyone who can reach the port may upload: the transport authenticates nothing (like \
RoCE, it trusts the datacenter network). With --key, only senders holding the same key file are \
stored; others are refused before any file is created, and counted.\n\n\
Example:\n  head -c 32 /dev/urandom > upload.key && chmod 600 upload.key\n  \
stride recv --listen 0.0.0.0:7000 --out ./incoming --key upload.key --allow 10.0.0.0/8 --json"
)]
pub struct RecvArgs {
    /// Address to listen on, e.g. 0.0.0.0:7000 or [::]:7000.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Directory to write received files into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Receive one file, then exit (non-zero if it failed).
    #[arg(long)]
    pub once: bool,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
    /// One JSON object per received file on stdout.
    #[arg(long)]
    pub json: bool,
    /// Give up on a connection (and delete its temporary .part file) after this long without a
    /// datagram from the sender (the sender died) or without new bytes from it (it stalls
    /// while keeping the connection alive).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout_ns, default_value = "30s")]
    pub idle_timeout: u64,
    /// How often to report the counters of refused and dropped traffic (refused names, junk
    /// datagrams, bad cookies, refused handshakes), when they changed; also reported on exit
    /// with --once.
    #[arg(long, value_name = "D", value_parser = crate::units::parse_duration_ns, default_value = "10s")]
    pub report_interval: u64,
    /// Loss recovery: `selective` (offered in the handshake: data beyond a gap is kept and the
    /// NACK names the missing ranges) or `go-back-n` (the paper's) [default: selective].
    #[arg(long, value_name = "MODE")]
    pub recovery: Option<stride::proto::Recovery>,
    /// Count a datagram's wait in the socket's receive queue beyond this as delay in its STT
    /// (the kernel's receive stamp alone hides a receiver that falls behind its senders, e.g.
    /// hundreds of them at once); 0 turns it off (kernel stamps alone).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_duration_ns, default_value = "250us")]
    pub read_delay_slack: u64,
    /// Store only uploads authenticated with the pre-shared key in FILE (at least 16 bytes,
    /// mode 600; also from the environment variable STRIDE_KEY_FILE); senders need the same
    /// file (`stride send --key FILE`).
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Accept uploads only from addresses in this network (e.g. 10.0.0.0/8, fd00::/8 or one
    /// address); repeat for several. Others are refused at once, and counted.
    #[arg(long, value_name = "CIDR", value_parser = parse_cidr)]
    pub allow: Vec<ipnet::IpNet>,
    /// Most uploads in progress at once [default: half the descriptor limit less 64, at most
    /// 4096].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_uploads: Option<u64>,
    /// Most uploads in progress at once from one source address (an IPv6 /64 counts as one);
    /// when every slot is taken, a source holding fewer takes the slowest upload of the
    /// source holding most.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_uploads_per_source: u64,
    /// Drop an upload that moves fewer than this many bytes per second over any --grace span
    /// (the first one, from the connection's start, includes the header); 0 turns it off.
    #[arg(long, value_name = "BYTES", value_parser = crate::units::parse_bytes, default_value = "16KiB")]
    pub min_rate: u64,
    /// The span over which --min-rate is measured.
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout, default_value = "10s")]
    pub grace: Duration,
    /// Refuse an upload whose declared size does not fit the free space less this reserve
    /// (and less what the uploads in progress still have to write).
    #[arg(long, value_name = "BYTES", value_parser = crate::units::parse_bytes, default_value = "64MiB")]
    pub reserve: u64,
    /// Refuse an upload that would make the files in --out hold more than this (with the
    /// uploads in progress).
    #[arg(long, value_name = "BYTES", value_parser = crate::units::parse_bytes)]
    pub quota: Option<u64>,
    /// Mark every datagram (data, ACKs, handshake) with this DSCP, next to the ECT(0) ECN
    /// bits: 0..=63 or a name (cs0..cs7, af11..af43, ef, le), e.g. af41 for a switch class of
    /// STRIDE's own (docs/spec.md §2.2) [default: 0, best effort].
    #[arg(long, value_name = "DSCP")]
    pub dscp: Option<stride::Dscp>,
}

/// A network (`10.0.0.0/8`) or a single address (`10.0.0.1`, as /32 or /128).
fn parse_cidr(s: &str) -> Result<ipnet::IpNet, String> {
    if let Ok(n) = s.parse::<ipnet::IpNet>() {
        return Ok(n.trunc());
    }
    s.parse::<std::net::IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| format!("{s:?} is neither an address nor a network like 10.0.0.0/8"))
}

/// The environment variable naming a key file when `--key` is not given.
pub const KEY_ENV: &str = "STRIDE_KEY_FILE";

/// The key of `--key FILE`, or of the file named by [`KEY_ENV`]; exits on a bad key.
fn load_key(cmd: &str, flag: &Option<PathBuf>) -> Option<xfer::Key> {
    let path = flag.clone().or_else(|| {
        std::env::var_os(KEY_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    })?;
    match xfer::Key::load(&path) {
        Ok(k) => Some(k),
        Err(e) => fail(cmd, e),
    }
}

/// Arguments of `stride send`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status 0 only when the receiver confirmed every file (size and BLAKE3 match); \
otherwise 1 with one line per failed file on stderr.\n\n\
Example:\n  stride send --to 10.0.0.2:7000 --json big.iso notes.txt"
)]
pub struct SendArgs {
    /// The receiver (`stride recv`) address.
    #[arg(long, value_name = "ADDR")]
    pub to: SocketAddr,
    /// One JSON object per file on stdout.
    #[arg(long)]
    pub json: bool,
    /// Give up connecting after this long (at least 1ms). The default is above the SYN give-up
    /// of `stride send` (9.0 to 11.5 s of resends with back-off, spec §6.6), so a receiver
    /// overloaded by hundreds of concurrent starts still gets the SYN.
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout, default_value = "15s")]
    pub connect_timeout: Duration,
    /// Give up on a file (aborting its connection) when a write makes no progress for this long
    /// or the receiver's confirmation does not come (this long, plus 1 s per 100 MB for its
    /// check, after the last byte).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout_ns, default_value = "30s")]
    pub stall_timeout: u64,
    /// Give up on an unresponsive receiver when sent data stays unacknowledged this long
    /// through retransmissions (the transport's give-up time).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout_ns, default_value = "30s")]
    pub give_up: u64,
    /// Local address to bind (default: the unspecified address of the receiver's family).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// Authenticate the uploads with the pre-shared key in FILE (the receiver's `--key`; mode
    /// 600; also from the environment variable STRIDE_KEY_FILE), and believe only answers
    /// authenticated by it.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Encrypt the files' bytes too (ChaCha20-Poly1305 under a key derived from --key, which
    /// it needs); without it they travel in clear, authenticated.
    #[arg(long)]
    pub encrypt: bool,
    /// Mark every datagram (data, ACKs, handshake) with this DSCP, next to the ECT(0) ECN
    /// bits: 0..=63 or a name (cs0..cs7, af11..af43, ef, le), e.g. af41 for a switch class of
    /// STRIDE's own (docs/spec.md §2.2) [default: 0, best effort].
    #[arg(long, value_name = "DSCP")]
    pub dscp: Option<stride::Dscp>,
    /// Files to send (each on its own connection, one after the other).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub control: ControlArgs,
}

fn print_received(r: &Received, json: bool) {
    if json {
        let mut o = json!({
            "name": r.name, "bytes": r.bytes, "checksum": r.checksum, "ok": r.error.is_none(),
        });
        if let Some(e) = &r.error {
            o["error"] = json!(e);
        }
        println!("{o}");
    } else if let Some(e) = &r.error {
        eprintln!("stride recv: {:?}: failed: {e}", r.name);
    } else {
        println!(
            "received {} ({} bytes, blake3 {})",
            r.name, r.bytes, r.checksum
        );
    }
}

/// The receiver's counters of unwanted traffic: (JSON object, human line).
fn counters(ep: &Endpoint, refused_names: u64, r: &Refusals) -> (serde_json::Value, String) {
    let s = ep.stats();
    let io = ep.io_stats();
    let j = json!({"counters": {
        "refused_names": refused_names,
        "unauthenticated_uploads": r.unauthenticated,
        "uploads_from_addresses_not_allowed": r.not_allowed,
        "uploads_refused_busy": r.busy,
        "uploads_dropped_too_slow": r.too_slow,
        "uploads_dropped_for_fair_share": r.evicted,
        "uploads_refused_no_space": r.no_space,
        "malformed_datagrams": s.malformed,
        "truncated_datagrams": io.truncated,
        "unknown_connection_datagrams": s.unknown,
        "bad_cookies": s.bad_cookies,
        "syns": s.syns,
        "refused_handshakes_full": s.refused_full,
        "refused_handshakes_per_source": s.refused_per_source,
        "rsts_sent": s.rsts_sent,
        "rsts_suppressed": s.rsts_suppressed,
        "accepted": s.accepted,
        "rx_overflow": io.rx_overflow,
    }});
    let h = format!(
        "stride recv: counters: {refused_names} refused names, {} unauthenticated uploads, {} from \
addresses not allowed; uploads {} refused busy, {} dropped too slow, {} dropped for a fair share, \
{} refused for space; {} malformed and {} truncated datagrams, \
{} datagrams for unknown connections ({} with bad cookies), {} handshakes refused (full) and {} \
(per-source limit), {} RSTs suppressed by the rate limit; {} connections accepted",
        r.unauthenticated,
        r.not_allowed,
        r.busy,
        r.too_slow,
        r.evicted,
        r.no_space,
        s.malformed,
        io.truncated,
        s.unknown,
        s.bad_cookies,
        s.refused_full,
        s.refused_per_source,
        s.rsts_suppressed,
        s.accepted
    );
    (j, h)
}

fn print_counters(
    ep: &Endpoint,
    refused_names: u64,
    r: &Refusals,
    json_out: bool,
) -> serde_json::Value {
    let (j, h) = counters(ep, refused_names, r);
    if json_out {
        println!("{j}");
    } else {
        eprintln!("{h}");
    }
    j
}

/// The receiver's options from its arguments (exits on a bad key).
fn receive_options(a: &RecvArgs) -> ReceiveOptions {
    let max = a.max_uploads.map_or(xfer::upload_limit(), |n| n as usize);
    ReceiveOptions {
        force: a.force,
        stall_timeout: Duration::from_nanos(a.idle_timeout.max(1_000_000)),
        key: load_key("recv", &a.key),
        allow: a.allow.clone(),
        limits: Limits {
            max_uploads: max,
            max_per_source: (a.max_uploads_per_source as usize).min(max),
            min_rate: a.min_rate,
            grace: a.grace,
            reserve: a.reserve,
            quota: a.quota,
        },
        ..ReceiveOptions::default()
    }
}

/// What `stride recv` says after it started listening on `at`: the temporary files it removed,
/// and who may upload.
fn start_notes(orphans: &[String], ropts: &ReceiveOptions, at: SocketAddr) {
    if !orphans.is_empty() {
        let names: Vec<_> = orphans
            .iter()
            .map(|g| format!("{:?}", xfer::shown_name(g)))
            .collect();
        eprintln!(
            "stride recv: removed {} temporary file(s) left by a receiver that died: {}",
            orphans.len(),
            names.join(", ")
        );
    }
    if ropts.key.is_none() {
        let from = if ropts.allow.is_empty() {
            ""
        } else {
            " from the --allow networks"
        };
        eprintln!(
            "stride recv: warning: no --key: anyone who can reach {at}{from} may upload files"
        );
    }
}

/// `stride recv`.
pub fn run_recv(a: RecvArgs) -> anyhow::Result<()> {
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        fail("recv", format!("cannot create {}: {e}", a.out.display()));
    }
    let ropts = receive_options(&a);
    let orphans = match xfer::remove_orphans(&a.out) {
        Ok(gone) => gone,
        Err(e) => fail("recv", format!("cannot read {}: {e}", a.out.display())),
    };
    let rt = runtime()?;
    let (out_dir, json_out) = (a.out.clone(), a.json);
    let code = rt.block_on(async move {
        let mut opts = xfer::receiver_options(a.idle_timeout, a.recovery, a.read_delay_slack);
        opts.dscp = a.dscp.unwrap_or_default();
        let stop = match stride_apps::stop::stop_signals() {
            Ok(s) => s,
            Err(e) => fail("recv", format!("cannot install signal handlers: {e}")),
        };
        let ep = match Endpoint::bind_with(a.listen, opts) {
            Ok(ep) => ep,
            Err(e) => fail("recv", format!("cannot listen on {}: {e}", a.listen)),
        };
        eprintln!("listening on {}", ep.local_addr());
        start_notes(&orphans, &ropts, ep.local_addr());
        let refused = std::sync::Arc::new(AtomicU64::new(0));
        {
            let (ep, refused, json) = (ep.clone(), refused.clone(), a.json);
            let state = ropts.state.clone();
            let every = Duration::from_nanos(a.report_interval.max(1_000_000));
            tokio::spawn(async move {
                let mut last = serde_json::Value::Null;
                loop {
                    tokio::time::sleep(every).await;
                    let n = refused.load(Ordering::Relaxed);
                    let r = state.refusals();
                    let (j, _) = counters(&ep, n, &r);
                    // "accepted" alone changing is normal traffic, not worth a line.
                    let mut cmp = j.clone();
                    cmp["counters"]["accepted"] = json!(0);
                    cmp["counters"]["syns"] = json!(0);
                    if cmp != last {
                        print_counters(&ep, n, &r, json);
                        last = cmp;
                    }
                }
            });
        }
        tokio::pin!(stop);
        if a.once {
            let s = tokio::select! {
                s = ep.accept() => match s {
                    Ok(s) => s,
                    Err(e) => fail("recv", e),
                },
                sig = &mut stop => return stopped(&ep, &ropts, 0, json_out, sig, true).await,
            };
            let r = tokio::select! {
                r = receive_file(s, &a.out, &ropts) => r,
                sig = &mut stop => return stopped(&ep, &ropts, 0, json_out, sig, true).await,
            };
            print_received(&r, a.json);
            print_counters(
                &ep,
                u64::from(r.refused_name),
                &ropts.state.refusals(),
                a.json,
            );
            if r.error.is_some() {
                if a.json {
                    eprintln!(
                        "stride recv: {:?}: {}",
                        r.name,
                        r.error.as_deref().unwrap_or("")
                    );
                }
                return 1;
            }
            return 0;
        }
        let json = a.json;
        let names_refused = refused.clone();
        let report = move |r: Received| {
            if r.refused_name {
                refused.fetch_add(1, Ordering::Relaxed);
            }
            print_received(&r, json);
        };
        tokio::select! {
            e = xfer::receive_files(&ep, &a.out, &ropts, report) => fail("recv", e),
            sig = stop => {
                let n = names_refused.load(Ordering::Relaxed);
                stopped(&ep, &ropts, n, json_out, sig, false).await
            }
        }
    });
    // Dropping the runtime ends the uploads' tasks: their temporary files are closed and
    // unlocked, so the sweep below removes them (and nothing another receiver holds).
    drop(rt);
    remove_unfinished(&out_dir);
    std::process::exit(code)
}

/// `stride recv` stopped by a signal: resets the connections (senders learn at once that their
/// uploads failed), prints the counters as at a normal end; returns the exit status (0 unless
/// the stop cut a `--once` short: see `stride_apps::stop`).
async fn stopped(
    ep: &Endpoint,
    ropts: &ReceiveOptions,
    refused_names: u64,
    json_out: bool,
    sig: stride_apps::stop::Stop,
    once: bool,
) -> i32 {
    let reset = ep.abort_all();
    eprintln!(
        "stride recv: stopping on {}: {reset} connection(s) reset",
        sig.name()
    );
    // Long enough for the RSTs to leave; a bound, not a wait for the peers.
    ep.wait_idle(Duration::from_millis(300)).await;
    print_counters(ep, refused_names, &ropts.state.refusals(), json_out);
    if once {
        sig.status()
    } else {
        0
    }
}

/// Removes the temporary files of the uploads a stop cut short (they must not stay behind
/// looking like files), saying which.
fn remove_unfinished(dir: &std::path::Path) {
    match xfer::remove_orphans(dir) {
        Ok(gone) if gone.is_empty() => {}
        Ok(gone) => {
            let names: Vec<_> = gone
                .iter()
                .map(|g| format!("{:?}", xfer::shown_name(g)))
                .collect();
            eprintln!(
                "stride recv: removed {} temporary file(s) of unfinished uploads: {}",
                gone.len(),
                names.join(", ")
            );
        }
        Err(e) => eprintln!("stride recv: cannot sweep {}: {e}", dir.display()),
    }
}

/// `stride send`.
pub fn run_send(a: SendArgs) -> anyhow::Result<()> {
    let key = load_key("send", &a.key);
    if a.encrypt && key.is_none() {
        fail("send", "--encrypt needs --key FILE (or STRIDE_KEY_FILE)");
    }
    let rt = runtime()?;
    let code = rt.block_on(async move {
        let bind = a.bind.unwrap_or(if a.to.is_ipv6() {
            "[::]:0".parse().expect("addr")
        } else {
            "0.0.0.0:0".parse().expect("addr")
        });
        let (proto, lr) = match a.control.config(a.to) {
            Ok(c) => c,
            Err(e) => fail("send", e),
        };
        let mut opts = xfer::sender_options(proto, a.give_up);
        opts.dscp = a.dscp.unwrap_or_default();
        let stop = match stride_apps::stop::stop_signals() {
            Ok(s) => s,
            Err(e) => fail("send", format!("cannot install signal handlers: {e}")),
        };
        let ep = match Endpoint::bind_with(bind, opts) {
            Ok(ep) => ep,
            Err(e) => fail("send", format!("cannot bind {bind}: {e}")),
        };
        let opts = SendOptions {
            connect_timeout: a.connect_timeout,
            stall_timeout: Duration::from_nanos(a.stall_timeout),
            key,
            encrypt: a.encrypt,
        };
        tokio::pin!(stop);
        let mut code = 0;
        for f in &a.files {
            let sent = tokio::select! {
                r = send_file(&ep, a.to, f, &opts) => r,
                sig = &mut stop => {
                    // Reset the upload so the receiver drops its temporary file now rather
                    // than at its idle timeout; the RST leaves within the bound.
                    let reset = ep.abort_all();
                    ep.wait_idle(Duration::from_millis(300)).await;
                    eprintln!(
                        "stride send: stopping on {}: {reset} connection(s) reset, {} not sent",
                        sig.name(),
                        f.display()
                    );
                    return sig.status();
                }
            };
            match sent {
                Ok(sent) => {
                    let mut m = report(sent.bytes, sent.seconds, &sent.stats);
                    m.insert("file".into(), json!(sent.name));
                    m.insert("checksum".into(), json!(sent.checksum.to_hex().to_string()));
                    line_rate_fields(&lr, &mut m);
                    if a.json {
                        println!("{}", serde_json::Value::Object(m));
                    } else {
                        println!(
                            "sent {}: {} (blake3 {}); {}",
                            f.display(),
                            human(&m),
                            m["checksum"].as_str().unwrap_or(""),
                            line_rate_text(&lr)
                        );
                    }
                }
                Err(e) => {
                    eprintln!("stride send: {}: {e}", f.display());
                    code = 1;
                }
            }
        }
        code
    });
    drop(rt);
    std::process::exit(code)
}
