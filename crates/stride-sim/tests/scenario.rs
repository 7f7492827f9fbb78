//! Scenario files: errors name the field; the same seed gives byte-identical per-flow output.
use std::path::PathBuf;
use stride_sim::report::{csv, rows};
use stride_sim::scenario::Scenario;

/// A scenario file in a directory of its own, removed when dropped. Each scenario gets its own
/// directory: tests run in parallel, and a shared `workloads/tiny.txt` being rewritten by one
/// test was read half-written by another.
struct Written {
    dir: PathBuf,
    path: PathBuf,
}

impl std::ops::Deref for Written {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn write(name: &str, text: &str) -> Written {
    let dir = std::env::temp_dir().join(format!(
        "stride-sim-test-{}-{}",
        std::process::id(),
        name.trim_end_matches(".toml")
    ));
    std::fs::create_dir_all(dir.join("workloads")).unwrap();
    std::fs::write(dir.join("workloads/tiny.txt"), "0 0\n1000 50\n200000 100\n").unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    Written { dir, path }
}

const TINY: &str = r#"
name = "tiny"
seed = 4
[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 3
host_gbps = 10.0
fabric_gbps = 10.0
link_delay_ns = 1000
[workload]
kind = "poisson"
cdf = "workloads/tiny.txt"
load = 0.4
flows = 60
"#;

fn err(name: &str, text: &str) -> String {
    match Scenario::load(&write(name, text)) {
        Ok(_) => panic!("{name}: accepted a bad scenario"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_the_field() {
    let e = err(
        "unknown.toml",
        &TINY.replace("seed = 4", "seed = 4\nsede = 5"),
    );
    assert!(e.contains("sede"), "{e}");
    let e = err(
        "k.toml",
        &TINY.replace(
            "kind = \"leaf_spine\"\nleaves = 2\nspines = 2\nhosts_per_leaf = 3",
            "kind = \"fat_tree\"\nk = 5\nhosts_per_edge = 2",
        ),
    );
    assert!(e.contains("topology.k"), "{e}");
    let e = err("load.toml", &TINY.replace("load = 0.4", "load = 1.5"));
    assert!(e.contains("workload.load"), "{e}");
    let e = err(
        "cdf.toml",
        &TINY.replace("workloads/tiny.txt", "workloads/missing.txt"),
    );
    assert!(
        e.contains("workload.cdf") && e.contains("missing.txt"),
        "{e}"
    );
    let e = err(
        "stride.toml",
        &(TINY.to_string() + "[stride]\nt_low_ns = 50000\nt_high_ns = 1000\n"),
    );
    assert!(e.contains("stride.t_low"), "{e}");
    let e = err("type.toml", &TINY.replace("flows = 60", "flows = \"many\""));
    assert!(e.contains("flows"), "{e}");
    let e = err(
        "cc.toml",
        &(TINY.replace("seed = 4", "seed = 4\ntransports = [\"bbr\"]")),
    );
    assert!(e.contains("transports") && e.contains("bbr"), "{e}");
}

#[test]
fn same_seed_byte_identical_flows() {
    let p = write("same.toml", TINY);
    let mut outs = Vec::new();
    for _ in 0..2 {
        let l = Scenario::load(&p).unwrap();
        let mut per = String::new();
        for t in ["stride", "dctcp"] {
            let mut sim = l.sc.sim(t, &l.flows).unwrap();
            assert!(sim.run(10_000_000_000, |_, _| {}), "{t}: unfinished flows");
            per.push_str(&csv(t, &rows(&sim)));
        }
        outs.push(per);
    }
    assert!(outs[0].lines().count() > 100);
    assert_eq!(outs[0], outs[1]);
    // and a different seed gives different flows
    let l2 = Scenario::load(&write("other.toml", &TINY.replace("seed = 4", "seed = 5"))).unwrap();
    let l1 = Scenario::load(&p).unwrap();
    assert_ne!(l1.flows, l2.flows);
}

#[test]
fn checked_in_scenarios_parse() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for f in [
        "quick.toml",
        "paper-fattree.toml",
        "bench-dctcp-permutation.toml",
        "bench-k24-permutation.toml",
        "trace-dctcp.toml",
    ] {
        let l = Scenario::load(&root.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(!l.flows.is_empty(), "{f}");
    }
    let paper = Scenario::load(&root.join("paper-fattree.toml")).unwrap();
    assert_eq!(paper.sc.hosts(), 256, "the paper's FatTree has 256 hosts");
    let bench = Scenario::load(&root.join("bench-dctcp-permutation.toml")).unwrap();
    assert_eq!(bench.sc.hosts(), 432);
    assert!(
        !bench.sc.tcp.delayed_ack,
        "htsim ACKs every packet: the benchmark must too"
    );
    let k24 = Scenario::load(&root.join("bench-k24-permutation.toml")).unwrap();
    assert_eq!(k24.sc.hosts(), 3456);
}

#[test]
fn poisson_with_a_fixed_size() {
    let fixed = TINY.replace("cdf = \"workloads/tiny.txt\"", "bytes = 20000");
    let l = Scenario::load(&write("fixed.toml", &fixed)).unwrap();
    assert_eq!(l.flows.len(), 60);
    assert!(l.flows.iter().all(|f| f.bytes == 20_000));
    let e = err(
        "both.toml",
        &TINY.replace("load = 0.4", "load = 0.4\nbytes = 20000"),
    );
    assert!(e.contains("workload.bytes"), "{e}");
    let e = err(
        "neither.toml",
        &TINY.replace("cdf = \"workloads/tiny.txt\"", ""),
    );
    assert!(e.contains("workload.cdf"), "{e}");
}

#[test]
fn shared_buffer_limits_a_switch_across_its_ports() {
    let incast = TINY.replace(
        "kind = \"poisson\"\ncdf = \"workloads/tiny.txt\"\nload = 0.4\nflows = 60",
        "kind = \"incast\"\nsenders = 5\nbytes = 300000",
    );
    // (drops, largest queue of any switch port)
    let run = |name: &str, extra: &str| {
        let l = Scenario::load(&write(name, &(incast.clone() + extra))).unwrap();
        let mut sim = l.sc.sim("newreno", &l.flows).unwrap();
        assert!(
            sim.run(10_000_000_000, |_, _| {}),
            "{name}: unfinished flows"
        );
        let hosts = sim.topo.hosts;
        let maxq = sim
            .topo
            .ports
            .iter()
            .filter(|p| p.from >= hosts)
            .map(|p| p.max_qbytes)
            .max()
            .unwrap();
        (sim.stats.drops, maxq)
    };
    let q = "[queue]\nbuffer_packets = 100\necn_k_packets = 65\nmtu_bytes = 1538\n";
    let alone = run("shared-off.toml", "");
    let huge = run(
        "shared-huge.toml",
        &format!("{q}shared_buffer_packets = 100000\n"),
    );
    let small = run(
        "shared-small.toml",
        &format!("{q}shared_buffer_packets = 12\n"),
    );
    assert_eq!(
        alone, huge,
        "a shared buffer larger than every port's sum changes nothing"
    );
    assert!(
        alone.1 > 12 * 1538,
        "the incast must queue more than the small shared buffer: {alone:?}"
    );
    assert!(
        small.1 <= 12 * 1538 && small.0 > 0,
        "no port may hold more than the switch's shared buffer: {small:?}"
    );
    let e = err("shared-zero.toml", &(incast + "[queue]\nbuffer_packets = 100\necn_k_packets = 65\nmtu_bytes = 1538\nshared_buffer_packets = 0\n"));
    assert!(e.contains("queue.shared_buffer_packets"), "{e}");
}

/// A controller registered from outside `stride_proto` (one registry line) runs in a scenario by
/// name, on STRIDE's connection, with its `[cc.NAME]` parameters, and `all` leaves out an
/// unlisted one.
#[test]
fn a_controller_registered_outside_the_core_runs_by_name() {
    use stride_proto::cc::{CcConfig, Registered, Signals};
    static HALF: Registered = Registered {
        name: "half-line",
        about: "a fixed rate at half the line",
        needs: Signals::NONE,
        rdma_nic: false,
        listed: false,
        make: |line| CcConfig::fixed(line >> 1),
        fit: None,
    };
    stride_proto::cc::register(&HALF).unwrap();
    assert!(stride_sim::transport::names().contains(&"half-line"));
    let text = format!("transports = [\"half-line\"]\n{TINY}[cc.half-line]\nrate = \"2gbit\"\n");
    let l = Scenario::load(&write("half-line.toml", &text)).unwrap();
    let mut sim = l.sc.sim("half-line", &l.flows).unwrap();
    assert!(sim.run(10_000_000_000, |_, _| {}), "unfinished");
    let bytes: u64 = l.flows.iter().map(|f| f.bytes).sum();
    assert_eq!(sim.stats.bytes_delivered, bytes);
    let e = err(
        "half-line-bad.toml",
        &format!("transports = [\"half-line\"]\n{TINY}[cc.half-line]\nrate = \"fast\"\n"),
    );
    assert!(e.contains("cc.half-line.rate"), "{e}");
}

/// The transport registry is the one list: every name in it validates, builds and completes
/// a small scenario; a name outside it, or a bad parameter of a registered one, is an error
/// naming the field.
#[test]
fn every_registered_transport_runs_and_unknown_names_are_refused() {
    let names = stride_sim::transport::names();
    for want in ["stride", "dctcp", "vegas", "newreno", "aimd"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    let list = names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!("transports = [{list}]\n{TINY}");
    // With congestion points and INT stamping: QCN's reaction point and HPCC refuse a
    // scenario without them.
    let text = format!("{text}[qcn]\n[int]\nenabled = true\n");
    let l = Scenario::load(&write("registry.toml", &text)).unwrap();
    for name in &names {
        let mut sim = l.sc.sim(name, &l.flows).unwrap();
        assert!(sim.run(10_000_000_000, |_, _| {}), "{name}: unfinished");
        let bytes: u64 = l.flows.iter().map(|f| f.bytes).sum();
        assert_eq!(sim.stats.bytes_delivered, bytes, "{name}");
    }
    let e = err(
        "unknown-cc.toml",
        &format!("transports = [\"cubic\"]\n{TINY}"),
    );
    assert!(e.contains("transports") && e.contains("aimd"), "{e}");
    let e = err(
        "bad-g.toml",
        &format!("transports = [\"dctcp\"]\n{TINY}[tcp]\ndctcp_g = 0.0\n"),
    );
    assert!(e.contains("tcp.dctcp_g"), "{e}");
    let e = err(
        "bad-aimd.toml",
        &format!("transports = [\"aimd\"]\n{TINY}[tcp]\naimd_rto = \"0us\"\n"),
    );
    assert!(e.contains("`tcp.aimd_rto`"), "{e}");
    let e = err(
        "bad-delack.toml",
        &format!("transports = [\"newreno\"]\n{TINY}[tcp]\ndelack_timeout = \"0us\"\n"),
    );
    assert!(e.contains("`tcp.delack_timeout`"), "{e}");
    // turning delayed ACKs off is accepted and changes the packet count
    let on = Scenario::load(&write("delack-on.toml", TINY)).unwrap();
    let off = Scenario::load(&write(
        "delack-off.toml",
        &format!("{TINY}[tcp]\ndelayed_ack = false\n"),
    ))
    .unwrap();
    let sent = |l: &stride_sim::scenario::Loaded| {
        let mut sim = l.sc.sim("dctcp", &l.flows).unwrap();
        assert!(sim.run(10_000_000_000, |_, _| {}));
        sim.stats.packets_sent
    };
    let (a, b) = (sent(&on), sent(&off));
    assert!(
        a < b,
        "delayed ACKs must send fewer packets: on {a}, off {b}"
    );
}

#[test]
fn loss_section_is_checked_and_counted_apart_from_drops() {
    let e = err(
        "loss-model.toml",
        &format!("{TINY}[loss]\nmodel = \"uniform\"\n"),
    );
    assert!(e.contains("loss.model"), "{e}");
    let e = err(
        "loss-p.toml",
        &format!("{TINY}[loss]\nmodel = \"bernoulli\"\n"),
    );
    assert!(e.contains("loss.p"), "{e}");
    let e = err(
        "loss-range.toml",
        &format!("{TINY}[loss]\nmodel = \"gilbert_elliott\"\np_good_bad = 0.1\np_bad_good = 1.5\n"),
    );
    assert!(e.contains("loss.p_bad_good"), "{e}");
    let l = Scenario::load(&write(
        "loss-ok.toml",
        &format!("{TINY}[loss]\nmodel = \"bernoulli\"\np = 0.01\nswitches = [\"spine0\"]\n"),
    ))
    .unwrap();
    let mut sim = l.sc.sim("dctcp", &l.flows).unwrap();
    assert!(sim.run(10_000_000_000, |_, _| {}));
    assert!(
        sim.stats.link_losses > 0,
        "spine0's links must lose packets"
    );
    let mut sc = l.sc.clone();
    sc.loss.as_mut().unwrap().switches = vec!["spine9".into()];
    let e = sc.sim("dctcp", &l.flows).err().unwrap().to_string();
    assert!(e.contains("loss.switches"), "{e}");
}

#[test]
fn trace_samples_sender_state_and_jain_over_time() {
    let text = r#"
name = "trace"
seed = 1
limit_ms = 20
[topology]
kind = "dumbbell"
senders = 1
receivers = 4
host_gbps = 10.0
bottleneck_gbps = 10.0
link_delay_ns = 1000
[queue]
buffer_packets = 100
ecn_k_packets = 20
mtu_bytes = 1538
[workload]
kind = "incast"
senders = 4
bytes = 1000000000
[trace]
flows = [0]
hosts = [2]
every = "500us"
"#;
    // hosts 1..=4 (the dumbbell's right side) all send to host 0 across the bottleneck
    let l = Scenario::load(&write("trace.toml", text)).unwrap();
    let mut sim = l.sc.sim("dctcp", &l.flows).unwrap();
    assert!(!sim.run(20_000_000, |_, _| {}), "long-lived flows");
    let flows: std::collections::BTreeSet<u32> = sim.traces.iter().map(|x| x.flow).collect();
    let want: Vec<u32> = (0..l.flows.len() as u32)
        .filter(|&i| i == 0 || l.flows[i as usize].src == 2)
        .collect();
    assert_eq!(flows.into_iter().collect::<Vec<_>>(), want);
    assert!(sim.traces.len() >= 2 * 35, "{} samples", sim.traces.len());
    for x in &sim.traces {
        let a = x.trace.alpha.expect("DCTCP exposes alpha");
        assert!((0.0..=1.0).contains(&a));
        assert!(x.trace.cwnd_bytes.unwrap() >= 1460.0);
    }
    // alpha learns the marking level: far below its initial 1 once the queue sits at K
    let late = sim.traces.iter().rev().find(|x| x.flow == 0).unwrap();
    assert!(late.trace.alpha.unwrap() < 0.5, "{late:?}");
    // long-lived DCTCP flows on one bottleneck share it: Jain near 1 in the second half
    let tail: Vec<f64> = sim
        .jain_samples
        .iter()
        .filter(|s| s.0 > 10_000_000)
        .map(|s| s.1)
        .collect();
    assert!(!tail.is_empty());
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!(mean > 0.9, "Jain over time {mean:.3}");
    let e = err(
        "trace-bad.toml",
        &text.replace("every = \"500us\"", "every = \"0ns\""),
    );
    assert!(e.contains("`trace.every`"), "{e}");
    let bad = Scenario::load(&write(
        "trace-bad2.toml",
        &text.replace("flows = [0]", "flows = [99]"),
    ))
    .unwrap();
    let e = bad.sc.sim("dctcp", &bad.flows).err().unwrap().to_string();
    assert!(e.contains("trace.flows"), "{e}");
}

/// A long-lived flow (a permutation's 10 GB) has an ideal FCT whose wire time overflows u64 ns
/// arithmetic: `rows` panicked in debug builds and wrapped in release. Its ideal must be at
/// least its wire time at the host rate (8 s for 10 GB at 10 Gbit/s).
#[test]
fn a_ten_gigabyte_flow_has_a_sane_ideal_fct() {
    let f = write(
        "long.toml",
        r#"
name = "long"
limit = "50us"
transports = ["dctcp"]
[topology]
kind = "dumbbell"
senders = 2
receivers = 2
bottleneck_rate = "10gbit"
host_rate = "10gbit"
link_delay = "1us"
[workload]
kind = "permutation"
bytes = 10000000000
"#,
    );
    let l = Scenario::load(&f).unwrap();
    let mut sim = l.sc.sim("dctcp", &l.flows).unwrap();
    sim.run(50_000, |_, _| {});
    let r = rows(&sim);
    assert!(!r.is_empty());
    for row in &r {
        assert!(row.ideal_ns >= 8_000_000_000, "ideal {} ns", row.ideal_ns);
    }
}

/// Selective recovery in the simulator: a selective NACK's ranges must reach the sender (the
/// simulator carries DATA payloads as zeros; it once carried NACK payloads as zeros too, so
/// every range was refused and each loss waited for a timeout). Under 1 % random loss a
/// selective flow must then finish well before a go-back-N one, and a bad value names the field.
#[test]
fn selective_recovery_works_in_the_simulator() {
    let base = r#"
name = "sel"
seed = 3
limit = "1s"
transports = ["stride"]
[topology]
kind = "dumbbell"
senders = 1
receivers = 1
host_rate = "10gbit"
bottleneck_rate = "10gbit"
link_delay = "2us"
[workload]
kind = "incast"
senders = 1
bytes = 4000000
[loss]
model = "bernoulli"
p = 0.01
"#;
    let fct = |recovery: &str| {
        let l = Scenario::load(&write(
            &format!("sel-{recovery}.toml"),
            &format!("{base}[stride]\nrecovery = \"{recovery}\"\n"),
        ))
        .unwrap();
        let mut sim = l.sc.sim("stride", &l.flows).unwrap();
        assert!(sim.run(1_000_000_000, |_, _| {}), "{recovery}: incomplete");
        assert!(sim.stats.link_losses > 10, "{recovery}: the path must lose");
        *sim.done.iter().max().unwrap()
    };
    let (sel, gbn) = (fct("selective"), fct("go-back-n"));
    println!("4 MB at 1 % loss: selective {sel} ns, go-back-N {gbn} ns");
    assert!(
        sel * 10 < gbn * 8,
        "selective {sel} ns vs go-back-N {gbn} ns"
    );
    let e = err(
        "sel-bad.toml",
        &format!("{base}[stride]\nrecovery = \"sack\"\n"),
    );
    assert!(e.contains("stride.recovery"), "{e}");
}

/// `[stride]` takes every declared parameter of STRIDE's controller by its name, in the unit
/// grammar (a rate, a duration, a switch); an older key with its unit in the name is read with a
/// note; an unknown key, a bad value or a failed check names the field.
#[test]
fn stride_section_takes_the_controller_parameters_as_declared() {
    let load = |extra: &str| {
        Scenario::load(&write(
            "s8.toml",
            &(TINY.to_string() + "[stride]\n" + extra),
        ))
        .unwrap()
    };
    let p = |extra: &str| {
        *load(extra)
            .sc
            .stride_config()
            .unwrap()
            .cc
            .params_ref::<stride_proto::cc::StrideParams>()
            .unwrap()
    };
    let d = p("");
    let s = p(
        "beta = \"156mbit\"\nt_high = \"20us\"\nt_low = 3000\ngate_high = true\nmin_window = 64\n",
    );
    assert_eq!(s.beta, stride_proto::cc::rate_from_gbps(0.156));
    assert_eq!((s.t_high, s.t_low, s.min_window), (20_000, 3_000, 64));
    assert!(!d.gate_high && s.gate_high);
    // Older keys: the same values, with a note naming the new key.
    let old = load("beta_mbps = 156\nt_high_ns = 20000\n");
    let o = *old
        .sc
        .stride_config()
        .unwrap()
        .cc
        .params_ref::<stride_proto::cc::StrideParams>()
        .unwrap();
    assert_eq!((o.beta, o.t_high), (s.beta, s.t_high));
    let stride_notes = old
        .deprecations
        .iter()
        .filter(|n| n.contains("`stride."))
        .count();
    assert_eq!(stride_notes, 2, "{:?}", old.deprecations);
    assert!(
        old.deprecations
            .iter()
            .any(|n| n.contains("t_high = \"20us\"")),
        "{:?}",
        old.deprecations
    );
    let bad = |extra: &str| err("s8bad.toml", &(TINY.to_string() + "[stride]\n" + extra));
    let e = bad("t_hihg = \"20us\"\n");
    assert!(e.contains("stride.t_hihg") && e.contains("t_high"), "{e}");
    let e = bad("beta = \"fast\"\n");
    assert!(e.contains("stride.beta"), "{e}");
    let e = bad("t_low = \"90us\"\n");
    assert!(e.contains("stride.t_low") && e.contains("t_high"), "{e}");
}

/// `[stride] ack_ride` (a duration) and `send_batch` (bytes) reach the core's configuration,
/// and both stay off by default (spec §6.4, §9).
#[test]
fn ack_ride_and_send_batch_reach_the_core() {
    let c = |extra: &str| {
        Scenario::load(&write(
            "ride.toml",
            &(TINY.to_string() + "[stride]\n" + extra),
        ))
        .unwrap()
        .sc
        .stride_config()
        .unwrap()
    };
    let d = c("");
    assert_eq!((d.ack_ride_ns, d.send_batch_bytes), (0, 0));
    let s = c("ack_ride = \"1ms\"\nsend_batch = \"64KiB\"\n");
    assert_eq!((s.ack_ride_ns, s.send_batch_bytes), (1_000_000, 65_536));
}

/// `[cc.NAME]` sets a registry controller's parameters from the scenario (and from `--set
/// cc.NAME.KEY=VALUE`): the value reaches the hosts' controller and changes the run; a bad
/// controller, key or value names its field.
#[test]
fn controller_parameters_come_from_cc_sections() {
    let base = TINY.replace("seed = 4", "seed = 4\ntransports = [\"timely\"]");
    let plain = Scenario::load(&write("cc-plain.toml", &base)).unwrap();
    let line = stride_proto::cc::rate_from_gbps(10.0);
    let t = |l: &stride_sim::scenario::Loaded| {
        l.sc.controller("timely", line)
            .unwrap()
            .params()
            .into_iter()
            .find(|(k, _)| *k == "t_high")
            .unwrap()
            .1
    };
    assert_eq!(t(&plain), "500000");
    let low = Scenario::load(&write(
        "cc-low.toml",
        &(base.clone() + "[cc.timely]\nt_low = 2000\nt_high = 8000\n"),
    ))
    .unwrap();
    assert_eq!(t(&low), "8000");
    // The hosts run it: a T_high of 8 us changes the flows' completion times.
    let fct = |l: &stride_sim::scenario::Loaded| {
        let mut sim = l.sc.sim("timely", &l.flows).unwrap();
        sim.run(10_000_000_000, |_, _| {});
        sim.done.clone()
    };
    assert_ne!(
        fct(&plain),
        fct(&low),
        "[cc.timely] did not reach the hosts"
    );
    for (file, text, field) in [
        ("cc-name.toml", "[cc.bbr]\nx = 1\n", "cc.bbr"),
        ("cc-key.toml", "[cc.swift]\nnope = 1\n", "cc.swift.nope"),
        (
            "cc-value.toml",
            "[cc.swift]\nmss = \"big\"\n",
            "cc.swift.mss",
        ),
        (
            "cc-range.toml",
            "[cc.timely]\nt_low = 9000\nt_high = 8000\n",
            "cc.timely.t_low",
        ),
        ("cc-stride.toml", "[cc.stride]\nt_low = 1\n", "[stride]"),
    ] {
        let e = err(file, &(base.clone() + text));
        assert!(e.contains(field), "{file}: {e}");
    }
}
