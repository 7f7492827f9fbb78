//! Seed 004's QCN hotspot (`scenarios/qcn-hotspot.toml`): a QCN reaction point into a port
//! whose service rate drops, then recovers (`[[rate_change]]`). Each test can fail.
use std::path::PathBuf;
use stride_sim::scenario::Scenario;

/// (time ns, value) samples.
type Series<T> = Vec<(u64, T)>;

fn scenario() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/qcn-hotspot.toml")
}

/// Runs the scenario with the hotspot shortened to [10 ms, `end_ms`) until `limit_ms`; the
/// source's rate samples (t ns, bit/s) and the hotspot queue samples (t ns, bytes).
fn run(end_ms: f64, limit_ms: u64) -> (Series<f64>, Series<u64>) {
    let mut l = Scenario::load(&scenario()).unwrap();
    assert_eq!(l.sc.rate_change.len(), 2, "the hotspot starts and ends");
    l.sc.rate_change[1].at_ms = end_ms;
    let mut sim = l.sc.sim("qcn", &l.flows).unwrap();
    sim.run(limit_ms * 1_000_000, |_, _| {});
    let rates: Vec<(u64, f64)> = sim
        .traces
        .iter()
        .filter(|s| s.flow == 0)
        .map(|s| (s.t, s.trace.rate_bps.expect("qcn traces its rate")))
        .collect();
    // `left` port 0: the output queue towards host 0.
    let hot = sim.topo.switches[0].ports[0];
    assert_eq!(sim.topo.ports[hot].to, 0);
    let queue = sim
        .samples
        .iter()
        .filter(|s| s.port == hot)
        .map(|s| (s.t, s.bytes))
        .collect();
    (rates, queue)
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0u32), |(s, n), x| (s + x, n + 1));
    assert!(n > 0, "no samples in the window");
    s / f64::from(n)
}

#[test]
fn qcn_rate_follows_the_hotspot_and_recovers_in_fast_recovery_cycles() {
    const MS: u64 = 1_000_000;
    let end = 400;
    let (rates, queue) = run(end as f64, end + 500);
    // Line rate before the hotspot.
    let before = mean(
        rates
            .iter()
            .filter(|r| r.0 > MS && r.0 < 10 * MS)
            .map(|r| r.1),
    );
    assert!(before > 0.99e9, "before the hotspot: {before}");
    // At the hotspot's service rate (0.2 Gbit/s) once settled, without overshooting it.
    let during = mean(
        rates
            .iter()
            .filter(|r| r.0 > (end - 100) * MS && r.0 < end * MS)
            .map(|r| r.1),
    );
    assert!(
        (0.15e9..=0.2e9).contains(&during),
        "during the hotspot: {during}"
    );
    // Feedback kept cutting the rate until the hotspot ended, and never after it (frames in
    // flight aside).
    let cuts: Vec<u64> = rates
        .windows(2)
        .filter(|w| w[1].1 < w[0].1)
        .map(|w| w[1].0)
        .collect();
    let last_cut = *cuts.last().expect("the hotspot cuts the rate");
    assert!(
        last_cut > (end - 50) * MS && last_cut < (end + 2) * MS,
        "last cut at {last_cut} ns, hotspot ends at {end} ms"
    );
    // Fast recovery: the first cycles after the last cut each halve the distance to the
    // target rate, so each rate step is about half the one before.
    let mut steps = Vec::new();
    let mut prev = rates.iter().find(|r| r.0 == last_cut).unwrap().1;
    for r in rates.iter().filter(|r| r.0 > last_cut) {
        if r.1 != prev {
            steps.push(r.1 - prev);
            prev = r.1;
        }
        if steps.len() == 4 {
            break;
        }
    }
    assert_eq!(steps.len(), 4, "too few rate steps after the last cut");
    for w in steps.windows(2) {
        let ratio = w[1] / w[0];
        assert!(
            (0.35..=0.65).contains(&ratio),
            "fast-recovery steps must halve: {steps:?}"
        );
    }
    // Then active and hyper-active increase take it back to line rate.
    let back = rates
        .iter()
        .find(|r| r.0 > end * MS && r.1 > 0.99e9)
        .map(|r| r.0);
    assert!(
        back.is_some_and(|t| t < (end + 500) * MS),
        "not back at line rate within 500 ms of the hotspot's end: {:?}",
        rates.last()
    );
    // The hotspot's queue built up when it started and is empty at the end.
    let peak = queue
        .iter()
        .filter(|q| q.0 < 30 * MS)
        .map(|q| q.1)
        .max()
        .unwrap();
    assert!(peak > 33_000, "queue at the hotspot's start: {peak} B");
    assert_eq!(queue.last().unwrap().1, 0);
}

/// Seed 004's one-source result (1 Gbit/s, RTT 100 us, no pause, hotspot of 0.2 Gbit/s for
/// ~3.5 s): the source is back at the line 179 ms after the hotspot ends. The scenario's own
/// hotspot, run whole; recovered = the first trace sample at >= 0.95 Gbit/s after its end.
#[test]
fn qcn_one_source_recovers_from_the_hotspot_in_seed_004s_time() {
    const MS: u64 = 1_000_000;
    let l = Scenario::load(&scenario()).unwrap();
    let end_ms = l.sc.rate_change[1].at_ms;
    assert_eq!(l.sc.rate_change[1].gbps, 1.0, "the hotspot's end");
    let end = (end_ms * 1e6) as u64;
    let (rates, _) = run(end_ms, end / MS + 500);
    // Settled at the hotspot's rate before it ends (the recovery starts from there).
    let during = mean(
        rates
            .iter()
            .filter(|r| r.0 > end - 100 * MS && r.0 <= end)
            .map(|r| r.1),
    );
    assert!(
        (0.15e9..=0.2e9).contains(&during),
        "end of the hotspot: {during}"
    );
    let back = rates
        .iter()
        .find(|r| r.0 > end && r.1 >= 0.95e9)
        .map(|r| r.0 - end)
        .expect("back at >= 0.95 Gbit/s within 500 ms");
    let (lo, hi) = (179 * MS * 85 / 100, 179 * MS * 115 / 100);
    assert!(
        (lo..=hi).contains(&back),
        "back at >= 0.95 Gbit/s {} ms after the hotspot; seed 004: 179 ms +- 15 %",
        back as f64 / 1e6
    );
}

#[test]
fn rate_change_errors_name_their_field() {
    let text = std::fs::read_to_string(scenario()).unwrap();
    let dir = std::env::temp_dir().join(format!("stride-hotspot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (from, to, field) in [
        (
            "switch = \"left\"",
            "switch = \"middle\"",
            "rate_change[0].switch",
        ),
        ("port = 0", "port = 9", "rate_change[0].port"),
        ("rate = \"200mbit\"", "rate = 0", "rate_change[0].rate"),
        ("at = \"10ms\"", "at = \"-1ms\"", "rate_change[0].at"),
        ("at = \"10ms\"", "at = 10", "rate_change[0].at"),
        ("at = \"10ms\"", "at = \"10ms\"\ncolour = 1", "colour"),
    ] {
        let p = dir.join("bad.toml");
        std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
        let e = Scenario::load(&p).err().expect(field).to_string();
        assert!(e.contains(field), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
