//! The first window (spec §8.6 `first_window`): one flow alone on the incast dumbbell
//! (`scenarios/incast.toml`, 10 Gbit/s hosts and port). A flow that fits in its first window
//! leaves at the line rate, as a flow of a controller that starts at line rate does (TIMELY
//! here), and a larger flow whose first window saw no queue goes on from half the line instead
//! of a quarter. Fails if the window stops acting (each case is also run with it off).

use stride_sim::scenario::Scenario;

/// The completion time (ns) of one flow of `bytes` alone, with `cc` and extra settings.
fn fct(cc: &str, bytes: u32, extra: &[&str]) -> u64 {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast.toml");
    let mut sets = vec![
        "workload.senders=1".to_string(),
        "topology.senders=1".to_string(),
        format!("workload.bytes={bytes}"),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let l = Scenario::load_with(&path, &sets).unwrap();
    let mut sim = l.sc.sim(cc, &l.flows).unwrap();
    assert!(
        sim.run(1_000_000_000, |_, _| {}),
        "{cc} {bytes}: incomplete"
    );
    assert_eq!(sim.stats.drops, 0, "{cc} {bytes}: drops");
    *sim.done.iter().max().unwrap()
}

#[test]
fn a_flow_within_its_first_window_leaves_at_the_line_rate() {
    let on = fct("stride", 12_000, &[]);
    let off = fct("stride", 12_000, &["stride.first_window=0"]);
    let line = fct("timely", 12_000, &[]);
    println!("12 kB: first window {on} ns, off {off} ns, timely {line} ns");
    assert_eq!(on, line, "as fast as a start at line rate");
    assert!(off > on + 10_000, "off: {off} ns against {on}");
}

#[test]
fn a_first_window_without_a_queue_hands_over_half_the_line() {
    let on = fct("stride", 1_000_000, &[]);
    let off = fct("stride", 1_000_000, &["stride.first_window=0"]);
    let none = fct("stride", 1_000_000, &["stride.first_window_keep=31"]);
    println!("1 MB: first window {on} ns, off {off} ns, without the keep rule {none} ns");
    // At half the line the ramp to the line is half as long as from a quarter.
    assert!(on * 5 < off * 4, "{on} ns against {off} off");
    assert!(
        on * 5 < none * 4,
        "{on} ns against {none} without the keep rule"
    );
}
