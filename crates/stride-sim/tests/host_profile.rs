//! A 10 Gbit/s sender into a 1 Gbit/s bottleneck (`scenarios/relay-10g-1g.toml`, the
//! simulator's model of `stride demo --line-rate 10gbit` with the host profile's thresholds).
//! With the core's 50 µs delayed-ACK backstop the paced flow is sampled ten times per 64 KB,
//! climbs past the bottleneck ten times faster than the paper's ACK-per-64 KB and then cuts by
//! 1/8 per sample while its queue drains; the host profile's 100 µs backstop
//! (`stride::HOST_DELAYED_ACK_NS`) steadies it. Fails if either stops being so.

use stride_sim::scenario::Scenario;

/// (bottleneck utilisation by the flow = wire-time ideal / completion, queue drops)
fn run(delayed_ack_ns: u64) -> (f64, u64) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/relay-10g-1g.toml");
    let mut l = Scenario::load(&path).unwrap();
    l.sc.stride.delayed_ack_ns = Some(delayed_ack_ns);
    l.sc.trace = None;
    let mut sim = l.sc.sim("stride", &l.flows).unwrap();
    assert!(sim.run(2_000_000_000, |_, _| {}), "incomplete");
    let fct = *sim.done.iter().max().unwrap() as f64;
    let bytes = 30_000_000f64;
    let ideal_ns = (bytes / 1440.0).ceil() * 1538.0 * 8.0; // at 1 Gbit/s: 1 bit per ns
    (ideal_ns / fct, sim.stats.drops)
}

#[test]
fn the_host_delayed_ack_backstop_steadies_a_fast_sender_into_a_slow_bottleneck() {
    let (u50, d50) = run(50_000);
    let (u100, d100) = run(100_000);
    println!("delayed ACK 50 us: {u50:.3} of the bottleneck, {d50} drops; 100 us: {u100:.3}, {d100} drops");
    assert!(
        u50 < 0.91,
        "the 50 µs backstop no longer oscillates: {u50:.3}"
    );
    assert!(u100 >= 0.92, "100 µs: {u100:.3} of the bottleneck");
    assert_eq!(d100, 0, "100 µs: drops");
}
