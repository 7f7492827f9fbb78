//! `stride sim compare` end to end on a tiny scenario: the summary carries every key the
//! documentation promises, and files land in --out.
use std::process::Command;

#[test]
fn compare_writes_summary_and_csv() {
    let dir = std::env::temp_dir().join(format!("stride-sim-cli-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("workloads")).unwrap();
    std::fs::write(dir.join("workloads/w.txt"), "0 0\n5000 60\n2000000 100\n").unwrap();
    let sc = dir.join("s.toml");
    std::fs::write(
        &sc,
        "name = \"cli\"\n[topology]\nkind = \"dumbbell\"\nsenders = 4\nreceivers = 4\nhost_gbps = 10.0\nbottleneck_gbps = 10.0\nlink_delay_ns = 1000\n[workload]\nkind = \"poisson\"\ncdf = \"workloads/w.txt\"\nload = 0.3\nflows = 40\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "compare"])
        .arg(&sc)
        .args(["--cc", "stride,dctcp,vegas", "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for t in ["stride", "dctcp", "vegas"] {
        let r = &v["transports"][t];
        assert_eq!(r["completed"], 40, "{t}");
        for k in [
            "drops",
            "ecn_marks",
            "events",
            "events_per_sec",
            "wall_seconds",
        ] {
            assert!(r[k].is_number(), "{t}.{k}");
        }
        for c in ["I", "II", "III", "IV", "all"] {
            for k in [
                "flows",
                "avg_fct_us",
                "p50_fct_us",
                "p99_fct_us",
                "avg_slowdown",
                "p99_slowdown",
            ] {
                assert!(r["categories"][c][k].is_number(), "{t}.{c}.{k}");
            }
        }
    }
    let imp = &v["improvement"]["dctcp"]["all"];
    assert!(imp["avg"].as_f64().unwrap() > 0.0 && imp["p99"].as_f64().unwrap() > 0.0);
    assert!(out.join("summary.json").exists());
    let flows = std::fs::read_to_string(out.join("flows-stride.csv")).unwrap();
    assert_eq!(
        flows.lines().next().unwrap(),
        "src,dst,bytes,start_ns,fct_ns,slowdown,transport"
    );
    assert_eq!(flows.lines().count(), 41);

    // a bad file names the field and fails
    std::fs::write(&sc, "name = \"x\"\n[topology]\nkind = \"ring\"\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(&sc)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("ring") || e.contains("kind"), "{e}");
}
