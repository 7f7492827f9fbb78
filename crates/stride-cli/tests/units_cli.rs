//! The unit grammar at the command line: every duration flag takes units, impossible values
//! are refused by argument parsing (exit status 2, the flag and the value named) instead of
//! panicking later (exit status 101) or being silently clamped.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_stride");

/// Runs `stride ARGS`; a command still running after 20 s (an accepted value that should
/// have been refused) is killed and reported as such rather than hanging the test.
fn run(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run stride");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("{args:?} was still running after 20 s: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// `args` plus `flag=value` must be refused while parsing, with an error naming `flag` and
/// quoting `value`.
fn refused(args: &[&str], flag: &str, value: &str) {
    let kv = format!("{flag}={value}");
    let args: Vec<&str> = args.iter().copied().chain([kv.as_str()]).collect();
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{args:?} should be a usage error, got {:?}: {err}",
        out.status
    );
    assert!(
        err.contains(flag),
        "{args:?}: error does not name {flag}: {err}"
    );
    assert!(
        err.contains(value),
        "{args:?}: error does not quote {value}: {err}"
    );
}

#[test]
fn send_connect_timeout_refuses_infinite_huge_and_unitless_values() {
    for v in ["inf", "1e20", "1e20s", "nan", "-1s", "0s", "3"] {
        refused(
            &["send", "--to", "127.0.0.1:9", "f"],
            "--connect-timeout",
            v,
        );
    }
}

#[test]
fn relay_duration_refuses_negative_nan_and_huge_values() {
    for v in ["-1", "nan", "1e30", "1e30s", "0", "1"] {
        refused(
            &["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"],
            "--duration",
            v,
        );
    }
}

#[test]
fn perf_client_time_refuses_negative_and_nan() {
    for v in ["-3", "-3s", "nan", "10"] {
        refused(&["perf", "client", "--to", "127.0.0.1:9"], "--time", v);
    }
}

#[test]
fn recv_idle_timeout_zero_is_refused_not_turned_into_one_millisecond() {
    let out = std::env::temp_dir().join(format!("stride-units-cli-{}", std::process::id()));
    let out = out.to_string_lossy().into_owned();
    for v in ["0", "0s", "1ns", "999us"] {
        refused(
            &["recv", "--listen", "127.0.0.1:0", "--out", &out],
            "--idle-timeout",
            v,
        );
    }
    let _ = std::fs::remove_dir(&out);
}

#[test]
fn demo_delay_without_a_unit_is_refused_instead_of_meaning_seconds() {
    refused(&["demo"], "--delay", "20");
    refused(&["demo"], "--rate", "100");
}

#[test]
fn durations_with_units_are_accepted_where_seconds_were_required() {
    // The relay runs for the given time and exits cleanly.
    let out = run(&[
        "relay",
        "--listen",
        "127.0.0.1:0",
        "--to",
        "127.0.0.1:9",
        "--duration",
        "50ms",
    ]);
    assert!(
        out.status.success(),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `send --connect-timeout 3s` parses (the send then fails on the missing file, status 1).
    let out = run(&[
        "send",
        "--to",
        "127.0.0.1:9",
        "--connect-timeout",
        "3s",
        "/nonexistent/stride-units-test",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("invalid value"), "{err}");
}
