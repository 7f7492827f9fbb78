//! The coexistence experiment's CI slice, a few seconds each: STRIDE in a class of its own
//! (`scenarios/testbed-coexist-class.toml`, shortened) is classified into its own queue by its
//! DSCP, and the competitor leaving early (`scenarios/testbed-coexist.toml` with
//! `competitor_stop_s`) is reported before and after. No figure of merit is asserted: the
//! machine is shared; the full runs' commands are in docs/results.md.
//!
//! Both need root and network namespaces: CI runs as root with `STRIDE_REQUIRE_NETNS=1`, so
//! there they always run (and fail if namespaces cannot be made); elsewhere they print
//! `SKIPPED: <test>: <why>` on stderr instead.

use serde_json::Value;
use std::path::{Path, PathBuf};
use stride_testbed::scenario::{Mode, Testbed};
use stride_testbed::topo;

fn scenario(name: &str, sets: &[&str]) -> Testbed {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Testbed::load_with(&root.join(name), &sets).unwrap()
}

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// One run at a time: they would share the two cores (and the check that a run left no
/// namespace behind would see the other's).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs `tb` in the namespace testbed; None (after saying SKIPPED) where it cannot run.
fn run(test: &str, tb: &Testbed) -> Option<Value> {
    if let Some(why) = topo::netns_unavailable(topo::euid()) {
        topo::skip_netns_test(test, &why);
        return None;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let r = stride_testbed::run(tb, Some(Mode::Netns), &out_dir(test)).unwrap();
    assert!(
        topo::namespaces_with_prefix(&topo::ns_prefix()).is_empty(),
        "namespaces left behind"
    );
    Some(r.report)
}

fn num(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("no number {k} in {v:#}"))
}

/// STRIDE (AF41) next to cubic for 2 s through the two-class bottleneck: STRIDE's class
/// carried STRIDE's bytes (with headers and a few resends) and the other class TCP's, so the
/// filter put each where it belongs.
#[test]
fn stride_is_classified_into_its_own_queue() {
    let tb = scenario(
        "testbed-coexist-class.toml",
        &[
            "repetitions=1",
            "coexistence.duration_s=2",
            "coexistence.against=[\"cubic\"]",
        ],
    );
    let Some(r) = run("stride_is_classified_into_its_own_queue", &tb) else {
        return;
    };
    assert_eq!(r["bottleneck"]["qdisc"], "htb-dscp", "{r:#}");
    assert_eq!(r["bottleneck"]["stride_class_dscp"], 34);
    let case = &r["cases"][0];
    let (s, t) = (num(case, "stride_bytes"), num(case, "tcp_bytes"));
    assert!(s > 1e6 && t > 1e6, "both flows moved data: {case:#}");
    let bands = &case["bands"];
    let (sb, ob) = (
        num(&bands["stride"], "sent_bytes"),
        num(&bands["other"], "sent_bytes"),
    );
    // Every byte the receiver counted passed its class's queue, headers on top; neither
    // class carried much of the other's.
    assert!(
        sb >= s && sb <= 1.3 * s + 1e6,
        "STRIDE's class {sb} for {s}"
    );
    assert!(
        ob >= t && ob <= 1.3 * t + 1e6,
        "the other class {ob} for {t}"
    );
    assert!(
        num(case, "stride_queue_delay_p99_us").is_finite(),
        "{case:#}"
    );
    assert_eq!(r["pairs"][0]["cases"], 1);
}

/// STRIDE alone, then next to cubic that stops after 1.5 s of 3: the report splits STRIDE's
/// figures at the competitor's leaving and says when that was and whether STRIDE's queue came
/// back to its level alone.
#[test]
fn the_competitor_leaves_early() {
    let tb = scenario(
        "testbed-coexist.toml",
        &[
            "repetitions=1",
            "coexistence.duration_s=3",
            "coexistence.competitor_stop_s=1.5",
            "coexistence.against=[\"none\", \"cubic\"]",
        ],
    );
    let Some(r) = run("the_competitor_leaves_early", &tb) else {
        return;
    };
    assert_eq!(r["competitor_stop_s"], 1.5);
    assert_eq!(r["cases"].as_array().map(Vec::len), Some(2));
    assert!(r["cases"][0].get("competitor_leaves").is_none(), "alone");
    let c = &r["cases"][1]["competitor_leaves"];
    let left = num(c, "competitor_left_s");
    assert!((1.5..=3.5).contains(&left), "{c:#}");
    assert!(num(c, "tcp_bps_before") > 0.0, "{c:#}");
    assert!(num(c, "stride_bps_before") > 0.0 && num(c, "stride_bps_after") > 0.0);
    assert!(num(c, "stride_level_alone_us") > 0.0);
    assert!(
        c["settled_s"].is_null() || num(c, "settled_s") >= 0.0,
        "{c:#}"
    );
    // The medians carry the same fields.
    let p = &r["pairs"][1]["competitor_leaves"];
    assert!(p["competitor_left_s"].is_number(), "{p:#}");
}
