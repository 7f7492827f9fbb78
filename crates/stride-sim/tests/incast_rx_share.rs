//! The receive share (spec §8.6 `rx_share`). N senders x 64 KiB at
//! t = 0 into one 10 Gbit/s port with a 100-packet buffer (`scenarios/incast.toml`). The
//! receiver divides a window budget among the connections that are sending to it, so the
//! senders together hold about one budget in flight whatever N is. Without it the start grant
//! (or, with the grant off as in the default, the first windows) overrun the buffer or leave
//! later flows slow.
//! Fails if the mechanism stops acting: each case is checked with the switch on and off. The
//! first window (spec §8.6 `first_window`) is off here so the share's own effect is measured:
//! it sends the first sender of a burst ahead of the rest (N = 8 1.28x the ideal, N = 32 24
//! drops with it; docs/results.md, "The first window").

use stride_sim::scenario::Scenario;

fn run(n: u32, extra: &[&str]) -> (f64, u64) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast.toml");
    let mut sets = vec![
        format!("workload.senders={n}"),
        format!("topology.senders={n}"),
        "stride.first_window=0".to_string(),
    ];
    sets.extend(extra.iter().map(|s| s.to_string()));
    let l = Scenario::load_with(&path, &sets).unwrap();
    assert_eq!(l.flows.len() as u32, n);
    let mut sim = l.sc.sim("stride", &l.flows).unwrap();
    assert!(
        sim.run(1_000_000_000, |_, _| {}),
        "N = {n} {extra:?}: incomplete"
    );
    let last = *sim.done.iter().max().unwrap() as f64;
    let ideal = f64::from(n) * (65_536f64 / 1440.0).ceil() * 1538.0 * 8.0 / 10.0;
    (last / ideal, sim.stats.drops)
}

#[test]
fn receive_share_meets_the_incast_target_at_n_8_and_32() {
    for n in [8, 32] {
        let (on, on_drops) = run(n, &[]);
        let (off, off_drops) = run(n, &["stride.rx_share=0"]);
        println!("N = {n}: rx_share on {on:.2}x / {on_drops} drops, off {off:.2}x / {off_drops}");
        assert!(on <= 1.25, "N = {n}: default {on:.2}x the ideal");
        assert!(on_drops <= 10, "N = {n}: default drops {on_drops}");
        assert!(
            off > 1.25 || off_drops > 0,
            "N = {n}: without rx_share the target is met too ({off:.2}x, {off_drops}): the test \
             no longer shows the mechanism"
        );
    }
}
