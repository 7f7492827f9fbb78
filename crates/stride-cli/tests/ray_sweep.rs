//! `stride sim sweep --ray`: a 2-point sweep run as Ray tasks on a private local Ray instance
//! (`--ray local`: started by the driver for the sweep, stopped after it) gives the same table,
//! sweep.csv and sweep.json as the local sweep. Needs a Python with `ray`: STRIDE_RAY_PYTHON, or
//! tools/ray/.venv (or STRIDE_RAY_VENV) made by scripts/setup.sh. The test fails (never skips) without it.
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ray_python() -> PathBuf {
    let venv = std::env::var_os("STRIDE_RAY_VENV")
        .map_or_else(|| repo().join("tools/ray/.venv"), PathBuf::from);
    let p = std::env::var_os("STRIDE_RAY_PYTHON")
        .map_or_else(|| venv.join("bin/python"), PathBuf::from);
    assert!(
        p.exists(),
        "{} not found: run scripts/setup.sh (it makes tools/ray/.venv with ray) or set STRIDE_RAY_PYTHON",
        p.display()
    );
    p
}

fn sweep(out: &Path, ray: bool) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_stride"));
    c.args(["sim", "sweep"])
        .arg(repo().join("scenarios/quick.toml"))
        .args([
            "--vary",
            "workload.load=0.3,0.6",
            "--set",
            "workload.flows=20",
            "--baseline",
            "dctcp",
            "--out",
        ])
        .arg(out);
    if ray {
        c.args(["--ray", "local"])
            .env("STRIDE_RAY_PYTHON", ray_python())
            // Ray's node address is the loopback one (otherwise it picks the address of the
            // default route's interface), and no usage reporting.
            .env("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            .env("RAY_USAGE_STATS_ENABLED", "0");
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "ray={ray}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let expect = if ray { "on 2 Ray CPUs" } else { "threads" };
    assert!(err.contains(expect), "ray={ray}: {err}");
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn ray_sweep_gives_the_local_sweeps_table_and_files() {
    let dir = std::env::temp_dir().join(format!("stride-ray-sweep-{}", std::process::id()));
    let (local, on_ray) = (dir.join("local"), dir.join("ray"));
    let table_local = sweep(&local, false);
    let table_ray = sweep(&on_ray, true);
    // the two points differ (the sweep is not comparing constants)
    let rows: Vec<&str> = table_local.lines().skip(1).take(2).collect();
    assert_eq!(rows.len(), 2, "{table_local}");
    assert_ne!(
        rows[0].split_whitespace().nth(2),
        rows[1].split_whitespace().nth(2)
    );
    assert_eq!(table_local, table_ray);
    for f in ["sweep.csv", "sweep.json"] {
        let a = std::fs::read_to_string(local.join(f)).unwrap();
        let b = std::fs::read_to_string(on_ray.join(f)).unwrap();
        assert_eq!(a, b, "{f}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
