//! DCQCN with PFC (the lossless RoCE fabric DCQCN was designed for) under incast: PFC pauses
//! the senders' links instead of dropping, RED-ECN marks drive the reaction points, and no
//! packet is lost. Without `[pfc]` the same incast drops packets, so the test can fail.
use stride_sim::engine::RunStats;
use stride_sim::scenario::Scenario;

/// 16 DCQCN senders of 1 MB each into one 10 Gbit/s host through 20-packet queues with
/// RED-ECN; PFC pauses an ingress at 10 packets and resumes it at 8.
fn incast(pfc: bool) -> (RunStats, usize, usize) {
    let mut text = String::from(
        r#"
name = "dcqcn-pfc-incast"
seed = 3
limit_ms = 2000
transports = ["dcqcn"]

[topology]
kind = "dumbbell"
senders = 16
receivers = 1
host_gbps = 10.0
bottleneck_gbps = 10.0
link_delay_ns = 1000

[queue]
buffer_packets = 20
ecn_k_packets = 0
mtu_bytes = 1538

[workload]
kind = "incast"
senders = 16
bytes = 1000000

[red]
kmin_bytes = 3076
kmax_bytes = 15380
pmax = 0.2
"#,
    );
    if pfc {
        text.push_str("\n[pfc]\nxoff_bytes = 15380\nxon_bytes = 12304\n");
    }
    let dir = std::env::temp_dir().join(format!("stride-dcqcn-pfc-{}-{pfc}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let l = Scenario::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let mut sim = l.sc.sim("dcqcn", &l.flows).unwrap();
    sim.run(2_000_000_000, |_, _| {});
    let done = sim.done.iter().filter(|&&t| t != u64::MAX).count();
    (sim.stats, done, l.flows.len())
}

#[test]
fn dcqcn_with_pfc_loses_no_packet_under_incast() {
    let (s, done, n) = incast(true);
    assert_eq!(done, n, "every flow completes");
    assert_eq!(
        s.drops, 0,
        "PFC: no queue drops ({} headroom)",
        s.headroom_drops
    );
    assert_eq!(s.link_losses, 0);
    assert!(s.pause_frames > 0, "the incast must have paused links");
    assert!(s.ecn_marks > 0, "RED must have marked for DCQCN");
    // The same incast without PFC overflows the queues: the assertion above can fail.
    let (lossy, _, _) = incast(false);
    assert!(lossy.drops > 0, "without PFC the incast must drop");
    assert_eq!(lossy.pause_frames, 0);
}

/// Two DCQCN senders behind one switch share its 10 Gbit/s uplink towards the receiver, with
/// `scenarios/paper-fattree-lossless.toml`'s switch settings (RED and PFC) unless `switch`
/// overrides them. The flows start `gap_ns` apart. Returns the run's counters and each flow's
/// delivered bytes between `from_ns` and the end.
fn lossless_pair(switch: &[&str], gap_ns: u64, from_ns: u64, end_ns: u64) -> (RunStats, Vec<u64>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/paper-fattree-lossless.toml");
    let mut sets: Vec<String> = [
        r#"topology={kind="dumbbell", senders=2, receivers=1, host_rate="10gbit", bottleneck_rate="10gbit", link_delay="1us"}"#,
        r#"workload={kind="incast", senders=2, bytes=1000000000}"#,
        r#"watch={switches=[], every="10us"}"#,
        r#"transports=["dcqcn"]"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    sets.extend(switch.iter().map(|s| s.to_string()));
    let mut l = Scenario::load_with(&path, &sets).unwrap();
    l.flows[1].start = gap_ns;
    let mut sim = l.sc.sim("dcqcn", &l.flows).unwrap();
    sim.run(from_ns, |_, _| {});
    let before: Vec<u64> = sim.flow_delivered.clone();
    sim.run(end_ns, |_, _| {});
    let got = sim
        .flow_delivered
        .iter()
        .zip(&before)
        .map(|(a, b)| a - b)
        .collect();
    (sim.stats, got)
}

/// ECN must act before PFC on a lossless fabric (DCQCN, Zhu et al. 2015: PFC is the backstop,
/// the marks do the congestion control). With the fabric's settings the congested switch marks
/// before it pauses anything; with the RED values of a 40 Gbit/s fabric (Kmax 200 KB, Pmax 1 %)
/// under the old 76.9 KB pause threshold it pauses first, so the check can fail.
#[test]
fn the_lossless_fabric_marks_before_it_pauses() {
    let (s, _) = lossless_pair(&[], 0, 1_000_000, 5_000_000);
    println!(
        "fabric settings: marks {}, pause frames {}, pausing switches {}, paused before marking {}",
        s.ecn_marks, s.pause_frames, s.pausing_switches, s.paused_before_marking
    );
    assert!(s.ecn_marks > 0, "the congested uplink never marked");
    assert_eq!(s.paused_before_marking, 0, "a switch paused before marking");
    assert_eq!(s.drops, 0);
    let old = [
        "red={kmin_bytes=5000, kmax_bytes=200000, pmax=0.01}",
        "pfc={xoff_bytes=76900, xon_bytes=61520}",
    ];
    let (o, _) = lossless_pair(&old, 0, 1_000_000, 5_000_000);
    println!(
        "40 Gbit/s RED under a low pause threshold: marks {}, pause frames {}, paused before marking {}",
        o.ecn_marks, o.pause_frames, o.paused_before_marking
    );
    assert!(o.paused_before_marking > 0, "the old settings paused first");
}

/// DCQCN's convergence (Zhu et al. 2015, the fairness experiment: a flow joining a running one
/// converges to an equal share): the second sender starts 5 ms after the first; over 20-40 ms
/// the two get equal shares of a busy link and no pause is needed.
#[test]
fn dcqcn_flows_converge_to_equal_shares() {
    let (s, got) = lossless_pair(&[], 5_000_000, 20_000_000, 40_000_000);
    let gbps: Vec<f64> = got.iter().map(|&b| b as f64 * 8.0 / 20e6).collect();
    let sum: f64 = gbps.iter().sum();
    let sq: f64 = gbps.iter().map(|x| x * x).sum();
    let jain = sum * sum / (2.0 * sq);
    println!(
        "shares {gbps:?} Gbit/s, Jain {jain:.3}, pauses {}",
        s.pause_frames
    );
    assert!(jain >= 0.95, "Jain {jain:.3}: {gbps:?}");
    assert!(sum > 8.5, "the link carried {sum:.2} Gbit/s of goodput");
}
