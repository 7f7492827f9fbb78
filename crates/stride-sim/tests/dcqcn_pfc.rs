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
