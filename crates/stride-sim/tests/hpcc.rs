//! HPCC (Li et al. 2019) in the simulator: switches stamp INT records on data packets, the
//! receiver echoes them on ACKs, and the senders hold the bottleneck near eta (0.95) with
//! little queue. Without the echo the senders would run blind at line rate (utilisation 1
//! and a standing queue), so the tests can fail.
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use stride_sim::engine::{payload_len, Flow};
use stride_sim::net::WIRE_OVERHEAD;
use stride_sim::scenario::{Loaded, Scenario};

/// A scenario from its text (through a file, as the command line reads it).
fn load(name: &str, text: &str) -> Result<Loaded, String> {
    let dir = std::env::temp_dir().join(format!("stride-hpcc-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let loaded = Scenario::load(&path);
    std::fs::remove_dir_all(&dir).unwrap();
    loaded.map_err(|e| e.to_string())
}

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
    let l = load(&format!("util-{int}"), &text)?;
    let mut sim = l.sc.sim("hpcc", &l.flows).map_err(|e| e.to_string())?;
    // Receiver host 0 alone on `left`: the bottleneck is `left` port 0, towards it.
    let hot = sim.topo.switches[0].ports[0];
    assert_eq!(sim.topo.ports[hot].to, 0);
    sim.watch = vec![hot];
    sim.watch_every = 10_000;
    // Bytes the bottleneck accepts after the start-up (its queue stays small, so this is
    // what it sends).
    let bytes = Arc::new(AtomicU64::new(0));
    let b = bytes.clone();
    sim.tap = Some((
        hot,
        Box::new(move |t, p| {
            if t >= FROM_NS {
                b.fetch_add(u64::from(p.wire), Ordering::Relaxed);
            }
        }),
    ));
    sim.run(LIMIT_NS, |_, _| {});
    let rate = sim.topo.ports[hot].rate_bps as f64;
    let util = bytes.load(Ordering::Relaxed) as f64 * 8e9 / (rate * (LIMIT_NS - FROM_NS) as f64);
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

/// What an incast run measured.
struct Incast {
    /// The last flow's completion, ns.
    end_ns: u64,
    /// Every flow's wire bytes through the receiver's link at its rate, ns.
    ideal_ns: u64,
    pause_frames: u64,
    /// Queue at the receiver's switch port, bytes: p50, p99 of the samples while flows run.
    q50: u64,
    q99: u64,
}

fn incast() -> Incast {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/hpcc-incast.toml"
    );
    let l = Scenario::load(std::path::Path::new(path)).unwrap();
    let cfg = l.sc.stride_config().unwrap();
    let mut sim = l.sc.sim("hpcc", &l.flows).unwrap();
    // The receiver's switch port: the only link every flow crosses.
    let rx = l.flows[0].dst;
    let hot = (0..sim.topo.ports.len())
        .find(|&p| sim.topo.ports[p].to == rx)
        .unwrap();
    sim.watch = vec![hot];
    sim.watch_every = 1_000;
    sim.run((l.sc.limit_ms * 1e6) as u64, |_, _| {});
    assert!(sim.done.iter().all(|&d| d != u64::MAX), "every flow ends");
    let per_packet = u64::from(stride_proto::wire::HEADER_LEN as u32 + WIRE_OVERHEAD);
    let wire: u64 = l
        .flows
        .iter()
        .map(|f| f.bytes + f.bytes.div_ceil(u64::from(cfg.max_payload)) * per_packet)
        .sum();
    let end_ns = *sim.done.iter().max().unwrap();
    let mut q: Vec<u64> = sim
        .samples
        .iter()
        .filter(|s| s.t < end_ns)
        .map(|s| s.bytes)
        .collect();
    q.sort_unstable();
    Incast {
        end_ns,
        ideal_ns: wire * 8_000_000_000 / sim.topo.ports[hot].rate_bps,
        pause_frames: sim.stats.pause_frames,
        q50: q[q.len() / 2],
        q99: q[q.len() * 99 / 100],
    }
}

/// The 16-to-1 incast of `scenarios/hpcc-incast.toml` (k = 6 fat tree, 10 Gbit/s, 9000-byte
/// MTU, PFC and INT), after the HPCC paper's incast experiment: the senders start at one BDP
/// each, HPCC cuts them to the receiver link's share within a few RTTs without a pause, and
/// the link stays busy to the end with no standing queue. The bound is HPCC's, not the wire
/// rate's: eta = 0.95 leaves 5 % of the link idle by design, and at T = 55.9 us the BDP is 7.7
/// jumbo packets, so each packet queued behind another adds 0.13 to U and HPCC holds the link
/// near 80 %; the run ends at about 1.34 x the wire time (see `docs/baselines.md`).
#[test]
fn hpcc_incast_on_a_jumbo_fat_tree_keeps_the_receiver_link_busy() {
    let r = incast();
    let ratio = r.end_ns as f64 / r.ideal_ns as f64;
    eprintln!(
        "hpcc incast: {} ns, {ratio:.3} x the wire-time ideal {} ns, {} pause frames, queue p50 {} B p99 {} B",
        r.end_ns, r.ideal_ns, r.pause_frames, r.q50, r.q99
    );
    assert!(
        ratio <= 1.40,
        "incast ends at {ratio:.3} x the wire-time ideal"
    );
    assert_eq!(r.pause_frames, 0, "PFC paused a link");
    assert!(r.q50 <= 9038, "standing queue {} B", r.q50);
}

/// Payload bytes of each of `n` long flows from the left hosts to the right host of a
/// dumbbell that cross the bottleneck (left to right) in [from, limit) ns; flow `i` starts at
/// `i × stagger_ns`.
fn long_flows(n: u32, stagger_ns: u64, from: u64, limit: u64) -> Vec<u64> {
    // 100 Gbit/s and 5 us links: T = 30.4 us, a BDP of 247 packets, the regime of the HPCC
    // paper's evaluation (a packet is a fraction of a percent of the BDP).
    let text = format!(
        r#"
name = "hpcc-fair"
seed = 1
limit = "{limit}ns"
transports = ["hpcc"]

[topology]
kind = "dumbbell"
senders = {n}
receivers = 1
host_rate = "100gbit"
bottleneck_rate = "100gbit"
link_delay = "5us"

[queue]
buffer_packets = 1000
ecn_k_packets = 0
mtu_bytes = 1538

[int]
enabled = true

[workload]
kind = "incast"
senders = {n}
bytes = 1000000000
"#
    );
    let l = load("fair", &text).unwrap();
    // Hosts 0..n on `left`, host n on `right`: every flow crosses the left-right link.
    let flows: Vec<Flow> = (0..n)
        .map(|i| Flow {
            src: i,
            dst: n,
            bytes: 1_000_000_000,
            start: u64::from(i) * stagger_ns,
        })
        .collect();
    let mut sim = l.sc.sim("hpcc", &flows).unwrap();
    let (left, right) = (n + 1, n + 2);
    let hot = (0..sim.topo.ports.len())
        .find(|&p| sim.topo.ports[p].from == left && sim.topo.ports[p].to == right)
        .unwrap();
    let got: Arc<Vec<AtomicU64>> = Arc::new((0..n).map(|_| AtomicU64::new(0)).collect());
    let g = got.clone();
    sim.tap = Some((
        hot,
        Box::new(move |t, p| {
            if t >= from {
                g[p.src as usize].fetch_add(u64::from(payload_len(p)), Ordering::Relaxed);
            }
        }),
    ));
    sim.run(limit, |_, _| {});
    got.iter().map(|b| b.load(Ordering::Relaxed)).collect()
}

fn jain(x: &[u64]) -> f64 {
    let s: f64 = x.iter().map(|&v| v as f64).sum();
    let s2: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    s * s / (x.len() as f64 * s2)
}

/// Four long flows join one 100 Gbit/s bottleneck 1 ms apart, after the HPCC paper's
/// fairness experiment: each newcomer starts at line rate, all are cut to the link, and the
/// additive step W_AI brings them to equal shares (Jain's index on goodput from 30 to 40 ms).
#[test]
fn hpcc_four_long_flows_share_a_bottleneck_fairly() {
    const FROM_NS: u64 = 30_000_000;
    const LIMIT_NS: u64 = 40_000_000;
    let g = long_flows(4, 1_000_000, FROM_NS, LIMIT_NS);
    let gbps: Vec<f64> = g
        .iter()
        .map(|&b| b as f64 * 8.0 / (LIMIT_NS - FROM_NS) as f64)
        .collect();
    let j = jain(&g);
    let total: f64 = gbps.iter().sum();
    eprintln!("hpcc 4 flows: goodput {gbps:.2?} Gbit/s, sum {total:.1}, Jain {j:.3}");
    assert!(j >= 0.95, "Jain {j:.3} over {gbps:.2?} Gbit/s");
    // and together they keep the link near eta (payload: 1440 of every 1538 bytes)
    assert!(total > 80.0, "the four carry {total:.1} Gbit/s");
}
