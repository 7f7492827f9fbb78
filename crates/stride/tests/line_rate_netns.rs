//! The line rate read from the route's interface, inside a network namespace with a veth pair
//! (as the testbed's hosts have): the veth's nominal speed, loopback's none, no route's none.
//!
//! Needs root and `ip` (iproute2). Without them it writes `SKIPPED: <test>: <why>` on stderr
//! (past the harness's capture), or fails when `STRIDE_REQUIRE_NETNS=1` (CI, as root).
//! The checks run in a copy of this test binary started by `ip netns exec`, which mounts the
//! namespace's own `/sys` (the interfaces' speed files).

use std::net::SocketAddr;
use std::process::Command;
use stride::{LineRate, DEFAULT_LINE_BPS};

/// Set for the copy that runs inside the namespace.
const INSIDE: &str = "STRIDE_LINE_RATE_INSIDE_NETNS";

fn skip(test: &str, why: &str) {
    if std::env::var_os("STRIDE_REQUIRE_NETNS").is_some_and(|v| v == "1") {
        panic!("{test} needs network namespaces (STRIDE_REQUIRE_NETNS=1): {why}");
    }
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {test}: {why}");
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Deletes the namespace (and its veth pair) however the test ends.
struct Netns(String);
impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.0]);
    }
}

#[test]
fn a_veth_gives_its_nominal_speed_and_loopback_the_default() {
    const TEST: &str = "a_veth_gives_its_nominal_speed_and_loopback_the_default";
    // SAFETY: geteuid has no failure mode.
    if unsafe { libc::geteuid() } != 0 {
        return skip(TEST, "not root");
    }
    let ns = Netns(format!("stride-lr-{}", std::process::id()));
    let n = ns.0.as_str();
    let setup = [
        vec!["netns", "add", n],
        vec![
            "-n", n, "link", "add", "lr0", "type", "veth", "peer", "name", "lr1",
        ],
        vec!["-n", n, "addr", "add", "10.77.0.1/24", "dev", "lr0"],
        vec!["-n", n, "link", "set", "lr0", "up"],
        vec!["-n", n, "link", "set", "lr1", "up"],
        vec!["-n", n, "link", "set", "lo", "up"],
    ];
    for args in &setup {
        if let Err(e) = ip(args) {
            return skip(TEST, &e);
        }
    }
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("ip")
        .args(["netns", "exec", n])
        .arg(exe)
        .args([
            "--exact",
            "inside_the_namespace",
            "--ignored",
            "--nocapture",
        ])
        .env(INSIDE, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "inside the namespace: {text}");
    assert!(
        text.contains("1 passed"),
        "the inside test did not run: {text}"
    );
}

/// Run by the test above inside its namespace (ignored elsewhere).
#[test]
#[ignore = "run inside a namespace by a_veth_gives_its_nominal_speed_and_loopback_the_default"]
fn inside_the_namespace() {
    assert!(
        std::env::var_os(INSIDE).is_some(),
        "run by a_veth_gives_its_nominal_speed_and_loopback_the_default only"
    );
    let peer: SocketAddr = "10.77.0.2:9".parse().unwrap();
    assert_eq!(
        stride::line_rate::route_device(peer.ip()).as_deref(),
        Some("lr0")
    );
    let lr = LineRate::of_route(peer);
    println!("veth: {} bit/s ({})", lr.bps, lr.source);
    // The kernel's veth driver reports 10 000 Mbit/s (a nominal figure: the default's).
    assert_eq!(lr.source.kind(), "interface");
    assert_eq!(lr.source.device(), Some("lr0"));
    assert_eq!(lr.bps, 10_000_000_000);
    // The namespace's own address and loopback go through lo, which reports no speed.
    for local in ["10.77.0.1:9", "127.0.0.1:9"] {
        let lr = LineRate::of_route(local.parse().unwrap());
        assert_eq!(lr.bps, DEFAULT_LINE_BPS);
        assert_eq!(lr.source.to_string(), "default: lo reports no speed");
    }
    // No default route in the namespace: no device at all.
    let lr = LineRate::of_route("192.0.2.9:9".parse().unwrap());
    assert_eq!(
        lr.source.to_string(),
        "default: no interface found for the peer"
    );
}
