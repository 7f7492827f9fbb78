//! `stride sim compare` end to end on a tiny scenario: the summary carries every key the
//! documentation promises, and files land in --out.
use std::process::Command;

#[test]
fn compare_writes_summary_and_csv() {
    let dir = std::env::temp_dir().join(format!("stride-sim-cli-{}", std::process::id()));
    let sc = tiny(&dir);
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
        "src,dst,bytes,start_ns,fct_ns,slowdown,transport,delivered_bytes,goodput_gbps"
    );
    assert_eq!(flows.lines().count(), 41);
    // Fig. 9a/9b and the queue plot, as PNG and SVG
    for stem in ["fct-avg", "fct-p99"] {
        let png = std::fs::read(out.join(format!("{stem}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{stem}.png");
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.contains("<svg")
                && svg.contains("IV: ")
                && svg.contains("1 MB (")
                && svg.contains("STRIDE faster")
                && svg.contains("vegas"),
            "{stem}.svg"
        );
    }

    // `sim plot` redraws from the directory alone
    std::fs::remove_file(out.join("fct-avg.png")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "plot"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(out.join("fct-avg.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));

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
    let _ = std::fs::remove_dir_all(&dir);
}

fn tiny(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("workloads")).unwrap();
    std::fs::write(dir.join("workloads/w.txt"), "0 0\n5000 60\n2000000 100\n").unwrap();
    let sc = dir.join("s.toml");
    std::fs::write(
        &sc,
        "name = \"cli\"\n[topology]\nkind = \"dumbbell\"\nsenders = 4\nreceivers = 4\nhost_gbps = 10.0\nbottleneck_gbps = 10.0\nlink_delay_ns = 1000\n[workload]\nkind = \"poisson\"\ncdf = \"workloads/w.txt\"\nload = 0.3\nflows = 40\n",
    )
    .unwrap();
    sc
}

#[test]
fn sweep_runs_every_point_and_compares_with_the_baseline() {
    let dir = std::env::temp_dir().join(format!("stride-sim-sweep-{}", std::process::id()));
    let sc = tiny(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "sweep"])
        .arg(&sc)
        .args([
            "--vary",
            "stride.t_high_ns=20000,80000",
            "--vary",
            "stride.beta_mbps=10,200",
            "--baseline",
            "dctcp",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    let mut seen = std::collections::BTreeSet::new();
    for p in pts {
        assert_eq!(p["completed"], 40);
        assert!(p["improvement"]["all"]["avg"].as_f64().unwrap() > 0.0);
        seen.insert((
            p["stride.t_high_ns"].as_str().unwrap().to_string(),
            p["stride.beta_mbps"].as_str().unwrap().to_string(),
        ));
    }
    assert_eq!(seen.len(), 4);
    // the swept parameters reach the controller: the points do not all give the same FCTs
    let fcts: std::collections::BTreeSet<String> = pts
        .iter()
        .map(|p| p["categories"]["all"]["avg_fct_us"].to_string())
        .collect();
    assert!(fcts.len() > 1, "every point gave the same FCT: {fcts:?}");

    // an override naming a field the format does not know fails and names it
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "run"])
        .arg(&sc)
        .args(["--set", "stride.t_hihg_ns=5"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("t_hihg_ns"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Without the values that measure the machine (`stride_sim::outcome::WALL_CLOCK_KEYS`).
fn without_wall_clock(v: &mut serde_json::Value) {
    if let Some(m) = v.as_object_mut() {
        for k in stride_sim::outcome::WALL_CLOCK_KEYS {
            m.remove(k);
        }
        for x in m.values_mut() {
            without_wall_clock(x);
        }
    }
}

/// `stride sim compare --json` prints the Rust API's summary (`stride_sim::outcome`): the same
/// value for every key but the wall-clock ones.
#[test]
fn the_cli_summary_is_the_rust_apis() {
    let dir = std::env::temp_dir().join(format!("stride-sim-faces-{}", std::process::id()));
    let sc = tiny(&dir);
    let o = Command::new(env!("CARGO_BIN_EXE_stride"))
        .args(["sim", "compare"])
        .arg(&sc)
        .args(["--cc", "stride,dctcp", "--json", "--set", "seed=3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut cli: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let loaded = stride_sim::scenario::Scenario::load_with(&sc, &["seed=3".into()]).unwrap();
    let runs = stride_sim::outcome::compare(&loaded, &["stride".into(), "dctcp".into()]).unwrap();
    let mut api = stride_sim::outcome::summary(&loaded, &runs, 0.0).unwrap();
    without_wall_clock(&mut cli);
    without_wall_clock(&mut api);
    assert_eq!(cli["transports"]["dctcp"]["completed"], 40);
    assert_eq!(cli, api);
    let _ = std::fs::remove_dir_all(&dir);
}
