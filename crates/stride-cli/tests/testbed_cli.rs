//! `stride testbed run` end to end through the userspace-relay fallback (no privilege needed):
//! the tables on stdout and in tables.md, results.json, and the figures the command draws from
//! the run's data. The namespace testbed itself is covered by crates/stride-testbed/tests/ci.rs.
use std::path::Path;
use std::process::Command;

fn stride() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stride"))
}

#[test]
fn relay_run_writes_results_tables_and_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("testbed-cli-relay");
    let _ = std::fs::remove_dir_all(&out);
    let o = stride()
        .args(["testbed", "run"])
        .arg(root.join("scenarios/testbed-ci.toml"))
        .args([
            "--mode",
            "relay",
            "--set",
            "foreground.blocks=[1, 2]",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("results in"), "{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let tables = std::fs::read_to_string(out.join("tables.md")).unwrap();
    // The tables as written, then the newline println! adds.
    assert_eq!(stdout, format!("{tables}\n"));
    assert!(
        tables.contains("Background `linear`: median FCT per KiB"),
        "{tables}"
    );
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(r["mode"], "relay");
    for p in ["fixed", "random", "linear"] {
        let png = std::fs::read(out.join(format!("fig6-{p}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "fig6-{p}.png");
        let svg = std::fs::read_to_string(out.join(format!("fig6-{p}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.contains("Fig. 6") && svg.contains("stride"),
            "fig6-{p}.svg"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_bad_mode_or_rate_is_one_clear_error() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let file = root.join("scenarios/testbed-ci.toml");
    let o = stride()
        .args(["testbed", "run"])
        .arg(&file)
        .args(["--mode", "cloud"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("--mode \"cloud\" is not netns, relay or auto"),
        "{e}"
    );
    // A bare number is no rate: the unit grammar's error, naming the field.
    let o = stride()
        .args(["testbed", "run"])
        .arg(&file)
        .args(["--set", "bottleneck.rate=\"200\""])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("field `bottleneck.rate`") && e.contains("needs a unit"),
        "{e}"
    );
}
