//! `stride demo` through the kernel bottleneck (`stride_testbed::demo`): a small transfer
//! through the `tbf` between namespaces, its qdisc report, and the namespaces removed after the
//! run, after a run that failed, and after a run that never started.
//!
//! The namespace parts need root and working network namespaces. CI runs as root with
//! `STRIDE_REQUIRE_NETNS=1` (`.ci/run`), so there they always run, and fail if namespaces
//! cannot be made; elsewhere they print `SKIPPED: <test>: <why>` on stderr (past the harness's
//! capture) and return, though the harness counts them as passed. The choice of path needs no
//! privilege and always runs.

use stride_apps::demo::DemoConfig;
use stride_testbed::demo::{self, Path, Via};
use stride_testbed::topo;

/// A small transfer's configuration: `bytes` through 1 Gbit/s and a 256 KiB queue.
fn small(bytes: u64) -> DemoConfig {
    DemoConfig {
        bytes,
        rate_bps: 1_000_000_000,
        delay_ns: 0,
        queue_bytes: 256 << 10,
        receiver: stride::host_config(10_000_000_000),
        sender: stride::host_config(1_000_000_000),
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The namespaces among `names` that still exist.
fn left(names: &[String]) -> Vec<String> {
    let all = topo::namespaces_with_prefix(&topo::ns_prefix());
    names.iter().filter(|n| all.contains(n)).cloned().collect()
}

/// Why the namespace path cannot run here, if it cannot.
fn unavailable() -> Option<String> {
    topo::netns_missing(topo::euid())
}

#[test]
fn netns_demo_moves_its_bytes_through_the_qdisc_and_removes_its_namespaces() {
    if let Some(why) = unavailable() {
        topo::skip_netns_test(
            "netns_demo_moves_its_bytes_through_the_qdisc_and_removes_its_namespaces",
            &why,
        );
        return;
    }
    let bytes = 5_000_000;
    let d = demo::start(Via::Netns, None, small(bytes)).unwrap();
    assert_eq!(
        (d.path(), d.fallback(), d.delay_ns()),
        (Path::Netns, None, 0)
    );
    let names = d.namespaces();
    assert_eq!(names.len(), 4, "{names:?}");
    assert_eq!(left(&names), names, "the namespaces exist while it runs");
    assert!(d.relay_addr().is_none());
    let mut reports = 0;
    let f = runtime().block_on(d.run(|_| reports += 1)).unwrap();
    assert_eq!(f.path, Path::Netns);
    assert_eq!((f.demo.written, f.demo.received), (bytes, bytes));
    assert!(f.demo.relay.is_none());
    let q = f.qdisc.expect("the qdisc's report");
    // Every payload byte crossed the qdisc, counted without the Ethernet, IP and UDP headers:
    // each datagram on its own (GSO batches segmented before it) is at most 1472 bytes
    // (1440 of payload and STRIDE's 32-byte header on a 1500-byte MTU).
    assert!(q.end.sent_bytes >= bytes, "{q:?}");
    assert!(q.end.sent_packets >= bytes / 1440, "{q:?}");
    assert!(
        q.end.sent_bytes <= q.end.sent_packets * 1472,
        "the size table did not count each datagram: {q:?}"
    );
    assert!(q.dropped_late <= q.end.dropped, "{q:?}");
    assert!(q.backlog_median_bytes <= q.backlog_max_bytes, "{q:?}");
    assert!(q.backlog_max_bytes <= 256 << 10, "{q:?}");
    assert!(left(&names).is_empty(), "left behind: {:?}", left(&names));
}

#[test]
fn netns_demo_removes_its_namespaces_after_an_error_and_when_dropped() {
    if let Some(why) = unavailable() {
        topo::skip_netns_test(
            "netns_demo_removes_its_namespaces_after_an_error_and_when_dropped",
            &why,
        );
        return;
    }
    // Dropped without running.
    let d = demo::start(Via::Netns, None, small(1_000_000)).unwrap();
    let names = d.namespaces();
    drop(d);
    assert!(left(&names).is_empty(), "left behind: {:?}", left(&names));
    // A run that fails: the bottleneck's link is down, so the sender's handshake times out.
    let d = demo::start(Via::Netns, None, small(1_000_000)).unwrap();
    let names = d.namespaces();
    let b = names.iter().find(|n| n.ends_with('b')).expect("bottleneck");
    let down = std::process::Command::new("ip")
        .args(["-n", b, "link", "set", "dev", topo::BOTTLENECK_DEV, "down"])
        .status()
        .unwrap();
    assert!(down.success());
    let err = runtime().block_on(d.run(|_| {})).unwrap_err();
    assert!(format!("{err:#}").contains("unreachable"), "{err:#}");
    assert!(left(&names).is_empty(), "left behind: {:?}", left(&names));
}

#[test]
fn the_path_is_the_namespaces_where_they_can_be_made_and_the_relay_otherwise() {
    let why = unavailable();
    let (path, fallback) = demo::choose(Via::Auto, None).unwrap();
    match &why {
        None => assert_eq!((path, fallback), (Path::Netns, None)),
        Some(w) => {
            assert_eq!(path, Path::Relay);
            assert_eq!(fallback.as_deref(), Some(w.as_str()));
            let err = demo::choose(Via::Netns, None).unwrap_err().to_string();
            assert!(
                err.contains("--via netns") && err.contains(w.as_str()),
                "{err}"
            );
        }
    }
    assert_eq!(demo::choose(Via::Relay, None).unwrap(), (Path::Relay, None));
    // An added delay needs netem in the kernel; without it, auto takes the relay and says so.
    if why.is_none() {
        let (path, fallback) = demo::choose(Via::Auto, Some(20_000)).unwrap();
        match topo::netem_unavailable() {
            None => assert_eq!(path, Path::Netns),
            Some(_) => {
                assert_eq!(path, Path::Relay);
                assert!(fallback.unwrap().contains("netem"));
                let err = demo::choose(Via::Netns, Some(20_000)).unwrap_err();
                assert!(err.to_string().contains("--delay"), "{err}");
            }
        }
        assert_eq!(demo::choose(Via::Auto, Some(0)).unwrap().0, Path::Netns);
    }
    assert!("bogus"
        .parse::<Via>()
        .unwrap_err()
        .contains("relay, netns or auto"));
    assert_eq!("netns".parse::<Via>(), Ok(Via::Netns));
}

#[test]
fn the_relay_path_adds_its_default_delay_and_moves_the_bytes() {
    let d = demo::start(Via::Relay, None, small(2_000_000)).unwrap();
    assert_eq!(d.path(), Path::Relay);
    assert_eq!(d.delay_ns(), demo::RELAY_DELAY_NS);
    assert!(d.relay_addr().is_some() && d.namespaces().is_empty());
    let f = runtime().block_on(d.run(|_| {})).unwrap();
    assert_eq!(f.demo.received, 2_000_000);
    assert!(f.qdisc.is_none());
    let r = f.demo.relay.expect("relay counters");
    assert!(r.fwd_bytes >= 2_000_000, "{r:?}");
}
