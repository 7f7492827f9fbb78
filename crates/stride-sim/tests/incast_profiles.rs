//! The default `stride` profile against `stride-paper` on the incast of
//! `scenarios/incast.toml` (16 senders x 64 KiB at t = 0 into one 10 Gbit/s port, 100-packet
//! buffer). The paper's profile starts every flow at a quarter of the line rate (2.19x the
//! wire-time ideal, ~500 drops); the default's receive share (and handshake-seeded minimum)
//! keep the port near the ideal. Fails if either profile stops being what it claims.

use stride_sim::scenario::Scenario;

fn run(cc: &str) -> (f64, u64) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incast.toml");
    let l = Scenario::load(&path).unwrap();
    let n = l.flows.len() as f64;
    assert_eq!(n, 16.0, "the scenario's default N");
    let mut sim = l.sc.sim(cc, &l.flows).unwrap();
    assert!(sim.run(1_000_000_000, |_, _| {}), "{cc}: incomplete");
    let last = *sim.done.iter().max().unwrap() as f64;
    let ideal = n * (65_536f64 / 1440.0).ceil() * 1538.0 * 8.0 / 10.0;
    (last / ideal, sim.stats.drops)
}

#[test]
fn default_profile_beats_the_paper_profile_under_incast() {
    let (paper, paper_drops) = run("stride-paper");
    let (dflt, dflt_drops) = run("stride");
    println!("stride-paper {paper:.2}x ideal, {paper_drops} drops; stride {dflt:.2}x, {dflt_drops} drops");
    assert!(
        paper > 1.8 && paper_drops > 200,
        "the paper profile changed: {paper:.2}x, {paper_drops}"
    );
    assert!(dflt < 1.3, "default: {dflt:.2}x the ideal");
    assert!(dflt_drops * 20 < paper_drops, "default drops {dflt_drops}");
}
