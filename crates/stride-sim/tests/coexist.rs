//! Mixed runs: groups of flows with a transport each in one simulated network
//! (`[group.NAME]`, `[coexist]`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use stride_sim::coexist::report::report;
use stride_sim::net::Payload;
use stride_sim::scenario::{Loaded, Scenario};

/// A 2 x 2 dumbbell at 10 Gbit/s with a 64-packet drop-tail buffer; the groups follow.
const BASE: &str = r#"
name = "mix"
limit = "4ms"
[topology]
kind = "dumbbell"
senders = 2
receivers = 2
host_rate = "10gbit"
bottleneck_rate = "10gbit"
link_delay = "1us"
[queue]
buffer_packets = 64
ecn_k_packets = 0
mtu_bytes = 1538
"#;

/// Loads `BASE` + `extra` (with `--set` overrides) from a file of its own.
fn load_with(extra: &str, sets: &[&str]) -> Result<Loaded, String> {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "stride-sim-coexist-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, format!("{BASE}{extra}")).unwrap();
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let l = Scenario::load_with(&path, &sets).map_err(|e| e.0);
    let _ = std::fs::remove_dir_all(&dir);
    l
}

fn load(extra: &str) -> Loaded {
    load_with(extra, &[]).unwrap()
}

const TWO_GROUPS: &str = r#"
[group.reno]
transport = "newreno"
pairs = [[0, 2]]
bytes = "300KB"
[group.stride]
transport = "stride"
pairs = [[1, 3]]
bytes = "300KB"
"#;

#[test]
fn each_group_runs_its_own_transport_in_the_shared_network() {
    let l = load(TWO_GROUPS);
    assert!(l.sc.is_mixed());
    assert_eq!(l.sc.mixed_name(), "newreno+stride");
    assert_eq!(l.sc.runs(), ["newreno+stride"]);
    let mut sim = l.sc.sim("newreno+stride", &l.flows).unwrap();
    // Every packet through the bottleneck: (source host, TCP or STRIDE).
    let seen: Arc<Mutex<Vec<(u32, bool)>>> = Arc::default();
    let port = l.sc.bottleneck(&sim.topo).unwrap();
    let s = seen.clone();
    sim.tap = Some((
        port,
        Box::new(move |_, p| {
            let tcp = matches!(p.payload, Payload::Tcp(_));
            s.lock().unwrap().push((p.src, tcp));
        }),
    ));
    assert!(sim.run(1_000_000_000, |_, _| {}), "both flows finish");
    for (f, fl) in sim.flows.iter().enumerate() {
        assert_eq!(
            sim.flow_delivered[f], 300_000,
            "flow {f} delivered its bytes"
        );
        assert_eq!(fl.bytes, 300_000);
    }
    let seen = seen.lock().unwrap();
    let reno = seen.iter().filter(|&&(src, _)| src == 0).count();
    let stride = seen.iter().filter(|&&(src, _)| src == 1).count();
    assert!(reno > 200 && stride > 200, "{reno} and {stride} packets");
    assert!(
        seen.iter().all(|&(src, tcp)| tcp == (src == 0)),
        "host 0 sends TCP segments only, host 1 STRIDE datagrams only"
    );
}

#[test]
fn a_group_that_leaves_stops_sending_and_the_report_splits_the_run_at_its_stop() {
    let l = load(
        r#"
[group.stride]
transport = "stride"
pairs = [[0, 2]]
[group.tcp]
transport = "newreno"
pairs = [[1, 3]]
stop = "2ms"
[coexist]
every = "500us"
"#,
    );
    let mut sim = l.sc.sim(&l.sc.mixed_name(), &l.flows).unwrap();
    assert!(
        !sim.run(4_000_000, |_, _| {}),
        "long-lived flows do not finish"
    );
    let r = report(&l.sc, &sim).expect("a mixed run has a report");
    assert_eq!(r.bottleneck.switch, "left");
    assert_eq!(r.bottleneck.port, 2, "after the two sender ports");
    assert_eq!(r.phases.len(), 2);
    let (both, alone) = (&r.phases[0], &r.phases[1]);
    assert_eq!(
        (both.from_ms, both.to_ms, both.measured_from_ms),
        (0.0, 2.0, 0.4)
    );
    assert_eq!(
        (alone.from_ms, alone.to_ms, alone.measured_from_ms),
        (2.0, 4.0, 2.4)
    );
    assert_eq!(both.present, ["stride", "tcp"]);
    assert_eq!(alone.present, ["stride"]);
    assert_eq!(alone.jain, Some(1.0), "one group is fair to itself");
    assert!(both.gbps["tcp"] > 1.0, "{:?}", both.gbps);
    assert_eq!(
        alone.gbps["tcp"], 0.0,
        "nothing of the stopped flow arrives"
    );
    assert!(alone.gbps["stride"] > 0.0, "{:?}", alone.gbps);
    // The series: eight intervals of 0.5 ms; the stopped group delivers nothing after 2.5 ms.
    assert_eq!(r.series.t_ms, [0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0]);
    assert!(r.series.gbps["tcp"][5..].iter().all(|&g| g == 0.0));
    assert_eq!(r.series.queue_p50_us.len(), 8);
    // The totals agree with the engine's per-flow counters.
    let tcp = r.groups.iter().find(|g| g.name == "tcp").unwrap();
    assert_eq!(tcp.delivered_bytes, sim.flow_delivered[1]);
    assert_eq!(
        (tcp.transport.as_str(), tcp.stop_ms),
        ("newreno", Some(2.0))
    );
    assert!(tcp.mode.is_none(), "NewReno has no modes");
    let drops: u64 = r.series.drops.iter().sum();
    assert_eq!(drops, r.bottleneck.drops);
    let text = r.text("stride+newreno");
    assert!(
        text.contains("phase 2-4 ms, measured from 2.4 ms") && text.contains("tcp_gbps"),
        "{text}"
    );
}

#[test]
fn a_mixed_scenario_runs_only_as_its_groups() {
    let l = load(TWO_GROUPS);
    let e = l.sc.sim("stride", &l.flows).err().unwrap().0;
    assert!(e.contains("field `group`"), "{e}");
}

#[test]
fn bad_group_settings_are_refused_naming_the_field() {
    let g = |t: &str, pairs: &str, more: &str| {
        format!("[group.a]\ntransport = \"{t}\"\npairs = {pairs}\n{more}")
    };
    let cases: Vec<(String, &str)> = vec![
        (
            g("tcp", "[[0, 2]]", ""),
            "field `group.a.transport`: unknown transport \"tcp\"",
        ),
        (
            g("stride", "[]", ""),
            "field `group.a.pairs`: needs at least one",
        ),
        (
            g("stride", "[[0, 4]]", ""),
            "field `group.a.pairs`: [0, 4]: hosts are 0..3",
        ),
        (
            g("stride", "[[1, 1]]", ""),
            "field `group.a.pairs`: [1, 1]: a host to itself",
        ),
        (
            g("stride", "[[0, 2]]", "flows = 0"),
            "field `group.a.flows`",
        ),
        (
            g("stride", "[[0, 2]]", "bytes = 0"),
            "field `group.a.bytes`",
        ),
        (
            g("stride", "[[0, 2]]", "start = \"2ms\"\nstop = \"1ms\""),
            "field `group.a.stop`: must be after `start`",
        ),
        (
            g("stride", "[[0, 2]]", "start = 5"),
            "field `group.a.start`: 5 needs a unit",
        ),
        (
            g(
                "stride",
                "[[0, 2]]",
                "[group.b]\ntransport = \"newreno\"\npairs = [[1, 2]]",
            ),
            "field `group.b.pairs`: host 2 runs stride (group `a`)",
        ),
        (g("hpcc", "[[0, 2]]", ""), "field `group.a.transport`"),
        (
            g(
                "stride",
                "[[0, 2]]",
                "[workload]\nkind = \"incast\"\nsenders = 1\nbytes = 1",
            ),
            "field `workload`: not with [group.NAME]",
        ),
        (
            g("stride", "[[0, 2]]", "[coexist]\nevery = 0"),
            "field `coexist.every`",
        ),
        (
            g("stride", "[[0, 2]]", "[coexist]\nswitch = \"left\""),
            "field `coexist.port`: required with `switch`",
        ),
        (
            g(
                "stride",
                "[[0, 2]]",
                "[coexist]\nswitch = \"middle\"\nport = 0",
            ),
            "field `coexist.switch`: no switch named \"middle\"",
        ),
        (
            g(
                "stride",
                "[[0, 2]]",
                "[coexist]\nswitch = \"left\"\nport = 3",
            ),
            "field `coexist.port`: switch \"left\" has ports 0..3",
        ),
        (
            "[coexist]\nevery = \"1ms\"\n".to_string(),
            "field `coexist`: needs [group.NAME]",
        ),
        (String::new(), "field `workload`: required (or [group.NAME]"),
    ];
    for (extra, want) in cases {
        let e = load_with(&extra, &[]).err().unwrap_or_default();
        assert!(e.contains(want), "{extra:?}:\n  got  {e}\n  want {want}");
    }
    // A period that would fill memory with samples.
    let e = load_with(TWO_GROUPS, &["limit=10ms", "coexist.queue_every=1ns"])
        .err()
        .unwrap_or_default();
    assert!(
        e.contains("field `coexist.queue_every`: 10000000 samples over `limit`; at most 4000000"),
        "{e}"
    );
    let e = load_with(TWO_GROUPS, &["transports=stride"])
        .err()
        .unwrap_or_default();
    assert!(
        e.contains("field `transports`: not with [group.NAME]"),
        "{e}"
    );
    // Overrides reach the groups' fields by name.
    let l = load_with(
        TWO_GROUPS,
        &["group.reno.transport=dctcp", "group.reno.stop=1ms"],
    )
    .unwrap();
    assert_eq!(l.sc.mixed_name(), "dctcp+stride");
    assert_eq!(l.sc.group["reno"].stop, Some(1_000_000));
}

#[test]
fn the_coexistence_scenarios_run() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    for (file, run) in [
        ("coexist-dumbbell.toml", "stride+newreno"),
        ("coexist-dumbbell-dctcp.toml", "stride+dctcp"),
    ] {
        let sets = ["limit=2ms".to_string(), "group.tcp.stop=1ms".to_string()];
        let l = Scenario::load_with(&root.join(file), &sets).unwrap();
        assert_eq!(l.sc.runs(), [run], "{file}");
        let mut sim = l.sc.sim(run, &l.flows).unwrap();
        sim.run(2_000_000, |_, _| {});
        let r = report(&l.sc, &sim).unwrap();
        assert_eq!(r.phases.len(), 2, "{file}");
        assert!(
            r.groups.iter().all(|g| g.delivered_bytes > 0),
            "{file}: {:?}",
            r.groups
        );
    }
}

/// `scenarios/coexist-dumbbell.toml` (STRIDE and NewReno in one 64-packet drop-tail queue,
/// 300 ms) with `sets`: the report.
fn dumbbell(sets: &[&str]) -> stride_sim::coexist::report::CoexistReport {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/coexist-dumbbell.toml"
    );
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let l = Scenario::load_with(std::path::Path::new(path), &sets).unwrap();
    let mut sim = l.sc.sim(&l.sc.mixed_name(), &l.flows).unwrap();
    sim.run((l.sc.limit_ms * 1e6) as u64, |_, _| {});
    report(&l.sc, &sim).expect("a mixed run has a report")
}

#[test]
fn next_to_newreno_the_competitive_mode_holds_a_fair_share_and_ends_when_it_leaves() {
    // With and without the first window (it moves the moment the mode is entered).
    for fw in ["stride.first_window=64KiB", "stride.first_window=0"] {
        let r = dumbbell(&[fw]);
        let both = &r.phases[0];
        let jain = both.jain.unwrap();
        assert!(jain >= 0.95, "{fw}: Jain {jain}, {:?}", both.gbps);
        let stride = r.groups.iter().find(|g| g.name == "stride").unwrap();
        let mode = stride.mode.as_ref().unwrap();
        assert!(
            mode.switches >= 1 && mode.competitive_ms > 200.0,
            "{fw}: {mode:?}"
        );
    }
    // Without the mode the delay signal yields the queue to NewReno.
    let r = dumbbell(&["stride.compete=off"]);
    let jain = r.phases[0].jain.unwrap();
    assert!(jain < 0.8, "Jain {jain} without the mode");
    // NewReno leaves at 150 ms: delay mode again, the queue back to STRIDE's own.
    let r = dumbbell(&["group.tcp.stop=150ms"]);
    let alone = &r.phases[1];
    assert!(alone.gbps["stride"] > 8.5, "{:?}", alone.gbps);
    assert!(
        alone.queue_p99_us < 30.0,
        "p99 {} us alone",
        alone.queue_p99_us
    );
    let stride = r.groups.iter().find(|g| g.name == "stride").unwrap();
    let mode = stride.mode.as_ref().unwrap();
    assert!(mode.competitive_ms < 160.0, "{mode:?}");
}
