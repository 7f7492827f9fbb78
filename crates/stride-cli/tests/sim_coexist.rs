//! `stride sim run` on a mixed scenario (groups with a transport each in one network): the
//! coexistence measurements in the JSON summary, the text summary and --out.
use std::process::Command;

fn scenario() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/coexist-dumbbell.toml")
}

/// 2 ms of the coexistence dumbbell, the TCP flow leaving at 1 ms.
const SHORT: [&str; 4] = ["--set", "limit=2ms", "--set", "group.tcp.stop=1ms"];

#[test]
fn a_mixed_run_reports_groups_phases_and_series() {
    let out = std::env::temp_dir().join(format!("stride-sim-coexist-{}", std::process::id()));
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(scenario())
        .args(SHORT)
        .args(["--set", "coexist.every=500us", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["transports"]["stride+newreno"]["events"]
            .as_u64()
            .unwrap()
            > 0
    );
    let c = &v["coexist"];
    assert_eq!(c["bottleneck"]["switch"], "left");
    assert!(c["bottleneck"]["queue_p99_us"].is_number());
    let groups = c["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[1]["transport"], "newreno");
    assert_eq!(groups[1]["stop_ms"], 1.0);
    let phases = c["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    for k in [
        "jain",
        "queue_p50_us",
        "queue_p99_us",
        "drops",
        "measured_from_ms",
    ] {
        assert!(phases[0][k].is_number(), "phases[0].{k}");
    }
    assert_eq!(phases[1]["present"], serde_json::json!(["stride"]));
    assert_eq!(c["series"]["t_ms"], serde_json::json!([0.5, 1.0, 1.5, 2.0]));
    assert_eq!(c["series"]["gbps"]["tcp"].as_array().unwrap().len(), 4);
    let csv = std::fs::read_to_string(out.join("coexist.csv")).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "t_ms,stride_gbps,tcp_gbps,queue_p50_us,queue_p99_us,drops"
    );
    assert_eq!(csv.lines().count(), 5);
    let _ = std::fs::remove_dir_all(&out);

    // The text summary: the groups, both phases, the series.
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(scenario())
        .args(SHORT)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    for want in [
        "mixed run stride+newreno: bottleneck left port 2 (10 Gbit/s)",
        "tcp      newreno",
        "phase 0-1 ms, measured from 0.2 ms: Gbit/s stride ",
        "phase 1-2 ms, measured from 1.2 ms",
        "queue_p99_us",
    ] {
        assert!(text.contains(want), "{want:?} not in\n{text}");
    }
}

#[test]
fn compare_refuses_a_mixed_scenario() {
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "compare"])
        .arg(scenario())
        .args(["--cc", "stride"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("`stride sim run` runs it"), "{e}");
}
