//! `stride sim sweep --ray`: a 2-point sweep run as Ray tasks gives the same table, sweep.csv and
//! sweep.json as the local sweep, on a Ray cluster the test starts (`ray start --head` on
//! loopback, stopped with `ray stop`, which stops every Ray instance of the machine) and on a
//! private instance (`--ray local`: started by the driver for the sweep, stopped after it). Needs a Python with `ray`: STRIDE_RAY_PYTHON, or
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

/// Environment of every Ray process here: the node address is the loopback one (otherwise Ray
/// picks the address of the default route's interface), no usage reporting, and token
/// authentication with a token made for this test run, given to `ray start` and to the driver
/// alike (`ray start` in token mode does not make one itself: without a token in
/// `RAY_AUTH_TOKEN` or ~/.ray/auth_token it fails with `AuthenticationError`, as on a fresh
/// machine).
fn ray_env() -> Vec<(&'static str, String)> {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let token = TOKEN.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut t = String::new();
        for _ in 0..2 {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u32(std::process::id());
            t.push_str(&format!("{:016x}", h.finish()));
        }
        t
    });
    vec![
        ("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0".into()),
        ("RAY_USAGE_STATS_ENABLED", "0".into()),
        ("RAY_AUTH_MODE", "token".into()),
        ("RAY_AUTH_TOKEN", token.clone()),
    ]
}

fn sweep(out: &Path, ray: Option<&str>) -> String {
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
    if let Some(address) = ray {
        c.args(["--ray", address])
            .env("STRIDE_RAY_PYTHON", ray_python())
            .envs(ray_env());
    }
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "ray={ray:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    let expect = if ray.is_some() {
        "on 2 Ray CPUs"
    } else {
        "threads"
    };
    assert!(err.contains(expect), "ray={ray:?}: {err}");
    String::from_utf8(o.stdout).unwrap()
}

fn ray_cli(args: &[&str]) -> std::process::Output {
    let ray = ray_python().with_file_name("ray");
    Command::new(&ray)
        .args(args)
        .envs(ray_env())
        .output()
        .unwrap()
}

/// Stops the Ray cluster the test started, also when an assertion fails.
struct Cluster;
impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = ray_cli(&["stop"]);
    }
}

fn same_results(a: &Path, ta: &str, b: &Path, tb: &str) {
    assert_eq!(ta, tb);
    for f in ["sweep.csv", "sweep.json"] {
        let x = std::fs::read_to_string(a.join(f)).unwrap();
        let y = std::fs::read_to_string(b.join(f)).unwrap();
        assert_eq!(x, y, "{f}");
    }
}

#[test]
fn ray_sweep_gives_the_local_sweeps_table_and_files() {
    let dir = std::env::temp_dir().join(format!("stride-ray-sweep-{}", std::process::id()));
    let local = dir.join("local");
    let table_local = sweep(&local, None);
    // the two points differ (the sweep is not comparing constants)
    let rows: Vec<&str> = table_local.lines().skip(1).take(2).collect();
    assert_eq!(rows.len(), 2, "{table_local}");
    assert_ne!(
        rows[0].split_whitespace().nth(2),
        rows[1].split_whitespace().nth(2)
    );

    // An existing cluster: a head node on loopback with 2 CPUs, on a free port.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .unwrap()
        .port()
        .to_string();
    let cluster = Cluster;
    let o = ray_cli(&[
        "start",
        "--head",
        "--node-ip-address",
        "127.0.0.1",
        "--port",
        &port,
        "--num-cpus",
        "2",
        "--include-dashboard=false",
    ]);
    assert!(
        o.status.success(),
        "ray start: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let on_cluster = dir.join("cluster");
    let table = sweep(&on_cluster, Some(&format!("127.0.0.1:{port}")));
    same_results(&local, &table_local, &on_cluster, &table);
    drop(cluster);

    // A private instance started by the driver.
    let private = dir.join("private");
    let table = sweep(&private, Some("local"));
    same_results(&local, &table_local, &private, &table);
    let _ = std::fs::remove_dir_all(&dir);
}
