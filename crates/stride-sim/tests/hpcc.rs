//! HPCC (Li et al. 2019) in the simulator: switches stamp INT records on data packets, the
//! receiver echoes them on ACKs, and the senders hold the bottleneck near eta (0.95) with
//! little queue. Without the echo the senders would run blind at line rate (utilisation 1
//! and a standing queue), so the test can fail.
use stride_sim::scenario::Scenario;

/// The run, and the start of the measured part, ns.
const LIMIT_NS: u64 = 20_000_000;
const FROM_NS: u64 = 5_000_000;

fn run(int: bool) -> Result<(f64, u64, u64), String> {
    let mut text = String::from(
        r#"
name = "hpcc-4"
seed = 1
limit_ms = 20
transports = ["hpcc"]

[topology]
kind = "dumbbell"
senders = 4
receivers = 1
host_gbps = 10.0
bottleneck_gbps = 10.0
link_delay_ns = 1000

[queue]
buffer_packets = 500
ecn_k_packets = 0
mtu_bytes = 1538

[workload]
kind = "incast"
senders = 4
bytes = 1000000000
"#,
    );
    if int {
        text.push_str("\n[int]\nenabled = true\n");
    }
    let dir = std::env::temp_dir().join(format!("stride-hpcc-{}-{int}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let loaded = Scenario::load(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    let l = loaded.map_err(|e| e.to_string())?;
    let mut sim = l.sc.sim("hpcc", &l.flows).map_err(|e| e.to_string())?;
    // Receiver host 0 alone on `left`: the bottleneck is `left` port 0, towards it.
    let hot = sim.topo.switches[0].ports[0];
    assert_eq!(sim.topo.ports[hot].to, 0);
    sim.watch = vec![hot];
    sim.watch_every = 10_000;
    // Bytes the bottleneck accepts after the start-up (its queue stays small, so this is
    // what it sends).
    let bytes = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let b = bytes.clone();
    sim.tap = Some((
        hot,
        Box::new(move |t, p| {
            if t >= FROM_NS {
                b.fetch_add(u64::from(p.wire), std::sync::atomic::Ordering::Relaxed);
            }
        }),
    ));
    sim.run(LIMIT_NS, |_, _| {});
    let rate = sim.topo.ports[hot].rate_bps as f64;
    let util = bytes.load(std::sync::atomic::Ordering::Relaxed) as f64 * 8e9
        / (rate * (LIMIT_NS - FROM_NS) as f64);
    let mut q: Vec<u64> = sim
        .samples
        .iter()
        .filter(|s| s.t > FROM_NS)
        .map(|s| s.bytes)
        .collect();
    q.sort_unstable();
    Ok((util, q[q.len() / 2], q[q.len() * 99 / 100]))
}

#[test]
fn hpcc_holds_utilisation_near_eta_with_little_queue() {
    let (util, q50, q99) = run(true).unwrap();
    eprintln!("hpcc: utilisation {util:.3}, queue p50 {q50} B p99 {q99} B");
    assert!(
        (0.87..=0.98).contains(&util),
        "utilisation {util:.3} not near eta 0.95"
    );
    assert!(q50 <= 3 * 1538, "standing queue {q50} B");
    let e = run(false).unwrap_err();
    assert!(e.contains("transports") && e.contains("[int]"), "{e}");
}
