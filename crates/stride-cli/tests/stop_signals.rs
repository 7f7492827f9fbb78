//! The commands that run until stopped (`stride recv`, `stride perf server`) stop cleanly on
//! SIGINT and SIGTERM even when started as a script's background job would start them, with
//! SIGINT inherited as ignored: within a bounded time, with status 0 (their normal end), and
//! the receiver leaves no temporary file of the upload it cut short. The commands that run a
//! job (`stride send`, `stride demo`) stop as cleanly, with 128 + the signal: the job was cut
//! short.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stride");
/// How long a stop may take (it takes milliseconds; the rest is room for a loaded machine).
const STOP_WITHIN: Duration = Duration::from_secs(5);

/// A started command, the address it listens on, and the thread collecting its stderr.
type Started = (Child, SocketAddr, std::thread::JoinHandle<String>);

/// Starts `stride ARGS` as a background job does (`trap "" INT` before `exec`: SIGINT ignored)
/// and returns it with the address on its first stderr line and a thread collecting the rest.
fn start(args: &[&str]) -> Started {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("trap '' INT; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stride");
    let mut err = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    err.read_line(&mut line).expect("first line");
    let addr = line
        .split_whitespace()
        .find_map(|w| w.parse::<SocketAddr>().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    (child, addr, rest)
}

/// Sends `sig` to the child and waits at most [`STOP_WITHIN`] for it to exit (killing it and
/// failing otherwise).
fn stop(child: &mut Child, sig: i32, what: &str) -> ExitStatus {
    // SAFETY: signalling our own child, which has not been reaped yet.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().expect("wait") {
            return st;
        }
        if t.elapsed() > STOP_WITHIN {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running {STOP_WITHIN:?} after signal {sig}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("stride-stop-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

/// The names in `dir` (sorted).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Whether `dir` holds a `.part` file of at least 256 KiB.
fn grown(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten().any(|e| {
            e.file_name().to_string_lossy().ends_with(".part")
                && e.metadata().is_ok_and(|m| m.len() >= 256 << 10)
        })
    })
}

/// An 8 MiB file to upload from a fresh directory named after `name`, and `stride recv`
/// started into its `out` directory: (the directory, out, the file, what [`start`] returns).
fn upload_scene(name: &str) -> (PathBuf, PathBuf, PathBuf, Started) {
    let base = temp_dir(name);
    let (src, out) = (base.join("src"), base.join("out"));
    std::fs::create_dir_all(&src).expect("mkdir");
    let file = src.join("big.bin");
    std::fs::write(&file, vec![7u8; 8 << 20]).expect("write");
    let started = start(&[
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--out",
        out.to_str().unwrap(),
    ]);
    (base, out, file, started)
}

/// A receiver in the middle of an upload (paced at 20 Mbit/s, so 8 MB takes seconds) is
/// stopped by SIGINT, then another by SIGTERM: each exits in time with status 0 and its
/// counters, the upload's `.part` file is gone and no file was published, and the sender
/// learns of the stop (its upload fails) instead of waiting for its idle timeout.
#[test]
fn recv_stops_mid_upload_on_sigint_and_sigterm_leaving_no_part_file() {
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let (base, out, file, (mut recv, addr, recv_err)) = upload_scene(name);
        let mut send = Command::new(BIN)
            .args([
                "send",
                "--pin-rate",
                "--line-rate",
                "20mbit",
                "--to",
                &addr.to_string(),
            ])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn send");
        // Wait until the upload flows (its temporary file has grown).
        let t = Instant::now();
        while !grown(&out) {
            assert!(t.elapsed() < Duration::from_secs(20), "no .part file grew");
            std::thread::sleep(Duration::from_millis(5));
        }
        let status = stop(&mut recv, sig, "stride recv");
        let err = recv_err.join().expect("stderr");
        assert!(status.success(), "{name}: {status:?}\n{err}");
        assert!(err.contains(&format!("stopping on {name}")), "{err}");
        assert!(err.contains("counters:"), "no final counters:\n{err}");
        assert_eq!(
            names(&out),
            Vec::<String>::new(),
            "{name}: left behind\n{err}"
        );
        // The receiver reset the connection: the sender fails now, not at its idle timeout.
        let sent = stop(
            &mut send,
            0,
            &format!("stride send (receiver stopped on {name})"),
        );
        assert!(!sent.success(), "the sender claims success");
        let _ = std::fs::remove_dir_all(&base);
    }
}

/// `stride recv --once` stopped before its file arrived did not do its job: 130 for SIGINT.
#[test]
fn recv_once_cut_short_exits_with_128_plus_the_signal() {
    let out = temp_dir("once");
    let (mut recv, _, err) = start(&[
        "recv",
        "--once",
        "--listen",
        "127.0.0.1:0",
        "--out",
        out.to_str().unwrap(),
    ]);
    let status = stop(&mut recv, libc::SIGINT, "stride recv --once");
    let err = err.join().expect("stderr");
    assert_eq!(status.code(), Some(130), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `stride perf server` (STRIDE, and the blocking one) stops on SIGINT and on SIGTERM.
#[test]
fn perf_server_stops_on_sigint_and_sigterm() {
    for extra in [&[][..], &["--blocking"][..]] {
        for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
            let mut args = vec!["perf", "server", "--listen", "127.0.0.1:0"];
            args.extend_from_slice(extra);
            let (mut server, _, err) = start(&args);
            let status = stop(&mut server, sig, "stride perf server");
            let err = err.join().expect("stderr");
            assert!(status.success(), "{extra:?} {name}: {status:?}\n{err}");
            assert!(err.contains(&format!("stopping on {name}")), "{err}");
        }
    }
}

/// Starts `stride ARGS` with SIGINT ignored (as a background job), output collected.
fn start_quiet(args: &[&str]) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg("trap '' INT; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stride")
}

/// What a finished child wrote on stderr.
fn stderr_of(child: Child) -> String {
    let out = child.wait_with_output().expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `stride send` stopped by SIGINT in the middle of an upload (started with SIGINT ignored,
/// as a background job): it exits in time with 130 and says which file it did not send, and
/// it resets the upload, so the receiver drops the upload's `.part` file at once instead of
/// at its idle timeout (30 s) and publishes nothing.
#[test]
fn send_stops_mid_upload_on_sigint_and_the_receiver_keeps_no_part_file() {
    let (base, out, file, (mut recv, addr, recv_err)) = upload_scene("send");
    let to = addr.to_string();
    let mut send = start_quiet(&[
        "send",
        "--pin-rate",
        "--line-rate",
        "20mbit",
        "--to",
        &to,
        file.to_str().unwrap(),
    ]);
    let t = Instant::now();
    while !grown(&out) {
        assert!(t.elapsed() < Duration::from_secs(20), "no .part file grew");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = stop(&mut send, libc::SIGINT, "stride send");
    let err = stderr_of(send);
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(
        err.contains("stopping on SIGINT") && err.contains("big.bin not sent"),
        "{err}"
    );
    let t = Instant::now();
    while !names(&out).is_empty() {
        assert!(
            t.elapsed() < STOP_WITHIN,
            "the receiver kept {:?} after the sender's reset",
            names(&out)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = stop(&mut recv, libc::SIGTERM, "stride recv");
    let err = recv_err.join().expect("stderr");
    assert!(status.success(), "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

/// `stride demo` stopped by SIGTERM says how far it got and exits in time with 143.
#[test]
fn demo_stops_on_sigterm_saying_how_far_it_got() {
    let mut demo = start_quiet(&["demo", "--via", "relay", "--bytes", "10GB"]);
    // Its first line comes once it runs, after the handlers are installed.
    let mut first = String::new();
    BufReader::new(demo.stdout.as_mut().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    assert!(first.starts_with("STRIDE demo"), "{first:?}");
    let status = stop(&mut demo, libc::SIGTERM, "stride demo");
    let err = stderr_of(demo);
    assert_eq!(status.code(), Some(143), "{err}");
    assert!(
        err.contains("stopping on SIGTERM after") && err.contains("of 10000000000 bytes"),
        "{err}"
    );
}

/// `stride demo --via netns` stopped by SIGINT or SIGTERM removes the namespaces it made
/// (root; SKIPPED otherwise, failing under `STRIDE_REQUIRE_NETNS=1`).
#[test]
fn demo_through_namespaces_removes_them_when_stopped() {
    use stride_testbed::topo;
    if let Some(why) = topo::netns_missing(topo::euid()) {
        topo::skip_netns_test("demo_through_namespaces_removes_them_when_stopped", &why);
        return;
    }
    for (sig, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut demo = start_quiet(&["demo", "--via", "netns", "--bytes", "10GB"]);
        let mine = format!("stb{}x", demo.id());
        let mut out = BufReader::new(demo.stdout.take().expect("stdout"));
        let (mut first, mut path) = (String::new(), String::new());
        out.read_line(&mut first).expect("first line");
        out.read_line(&mut path).expect("path line");
        assert!(path.starts_with("path: netns"), "{first}{path}");
        assert_eq!(topo::namespaces_with_prefix(&mine).len(), 4, "{path}");
        let status = stop(&mut demo, sig, "stride demo --via netns");
        let err = stderr_of(demo);
        assert_eq!(status.code(), Some(code), "{err}");
        let left = topo::namespaces_with_prefix(&mine);
        assert!(left.is_empty(), "signal {sig}: left behind {left:?}");
    }
}

/// `stride relay` (run until stopped) stops on SIGINT and on SIGTERM with status 0.
#[test]
fn relay_stops_on_sigint_and_sigterm() {
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let (mut relay, _, err) =
            start(&["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"]);
        let status = stop(&mut relay, sig, "stride relay");
        let err = err.join().expect("stderr");
        assert!(status.success(), "{name}: {status:?}\n{err}");
        assert!(err.contains(&format!("stopping on {name}")), "{err}");
    }
}
