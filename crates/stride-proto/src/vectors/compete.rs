//! `vectors/compete/*.jsonl`: the competitive mode (spec §8.7) event by event, for any other
//! implementation of the default profile (the RTL does not have the mode, so its tests read
//! only `vectors/cc/`). Each event carries its time and, for samples, the RTT sample; each step
//! gives the rate, mode, branch, base and number of switches after it.

use crate::cc::{Controller, Mode, Stride, StrideParams};
use std::fmt::Write;

/// One timed event.
#[derive(Clone, Copy, Debug)]
enum Ev {
    /// A sample: time, STT, RTT (0: none).
    Sample(u64, u32, u64),
    /// A NACK at a time.
    Nack(u64),
}

const MS: u64 = 1_000_000;

/// The hand-checked parameters with the mode's clocks scaled down (drained below t_high = 10 us, 1 ms
/// to enter, 2 ms to leave, 4 samples, a 1 KiB packet of growth); the unit tests of
/// `cc::compete` use them too.
pub(crate) fn params() -> StrideParams {
    StrideParams {
        compete: true,
        compete_qd_shift: 0,
        compete_after: MS as u32,
        compete_samples: 4,
        compete_backoff: 0,
        compete_hold: 2 * MS as u32,
        base_window: 100 * MS as u32,
        compete_ai: 10,
        compete_md: 1,
        ..StrideParams::hand_checked()
    }
}

/// Algorithm 1's parameters as `vectors/cc/` writes them, then the competitive mode's.
fn params_json(p: &StrideParams) -> String {
    let base = super::params_json(p);
    format!(
        "{},\"compete_qd_shift\":{},\"compete_after\":{},\"compete_samples\":{},\"compete_backoff\":{},\"compete_hold\":{},\"base_window\":{},\"compete_ai\":{},\"compete_md\":{}}}",
        base.strip_suffix('}').unwrap_or(&base),
        p.compete_qd_shift, p.compete_after, p.compete_samples, p.compete_backoff, p.compete_hold,
        p.base_window, p.compete_ai, p.compete_md
    )
}

/// Samples every `step` ns in `[from, to)`, each `stt`, with an RTT of 2^16 ns.
fn run(from: u64, to: u64, step: u64, stt: u32) -> Vec<Ev> {
    (from..to)
        .step_by(step as usize)
        .map(|t| Ev::Sample(t, stt, 65_536))
        .collect()
}

/// A loss-based competitor's sawtooth: 20 to 35 us of queue over a 50 us base, a sample per
/// 100 us.
fn saw(from: u64, to: u64) -> Vec<Ev> {
    (from..to)
        .step_by(100_000)
        .enumerate()
        .map(|(i, t)| Ev::Sample(t, 70_000 + 5_000 * (i as u32 % 4), 65_536))
        .collect()
}

fn case(name: &str, p: &StrideParams, events: &[Ev]) -> String {
    let mut c = Stride::new(*p);
    let mut s = format!(
        "{{\"name\":\"{name}\",\"params\":{},\"steps\":[",
        params_json(p)
    );
    for (i, ev) in events.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        match *ev {
            Ev::Sample(t, stt, rtt) => {
                c.on_sample_at(t, stt, rtt);
                let _ = write!(
                    s,
                    "{{\"event\":\"sample\",\"t\":{t},\"stt\":{stt},\"rtt\":{rtt},"
                );
            }
            Ev::Nack(t) => {
                c.nack_at(t);
                let _ = write!(s, "{{\"event\":\"nack\",\"t\":{t},");
            }
        }
        let mode = match c.mode() {
            Mode::Competitive => "competitive",
            Mode::Delay => "delay",
        };
        let _ = write!(
            s,
            "\"rate\":{},\"mode\":\"{mode}\",\"branch\":\"{}\",\"base\":{},\"switches\":{}}}",
            c.rate(),
            c.branch().name(),
            c.base_stt(),
            c.mode_stats().switches
        );
    }
    s.push_str("]}\n");
    s
}

/// The files of `vectors/compete/`.
pub fn compete_files() -> Vec<(&'static str, String)> {
    let p = params();
    let mut out = String::new();
    // Enter after 1 ms and 4 samples beside a competitor; Reno's growth; a loss episode.
    let mut ev = run(0, MS, 100_000, 50_000);
    ev.extend(saw(MS, 3 * MS));
    ev.extend([
        Ev::Nack(3 * MS),
        Ev::Nack(3 * MS + 60_000),
        Ev::Nack(3 * MS + 70_000),
    ]);
    ev.extend(saw(3 * MS + 100_000, 4 * MS));
    out.push_str(&case("enter-grow-cut", &p, &ev));
    // Holds at the sawtooth's troughs end as the competitor refills the queue past t_low
    // or a loss comes; when it leaves, the queue stays empty for the hold and the mode ends.
    let mut ev = run(0, MS, 100_000, 50_000);
    ev.extend(saw(MS, 3 * MS));
    ev.extend([
        Ev::Sample(3 * MS, 70_000, 65_536),
        Ev::Sample(3 * MS + 100_000, 80_000, 65_536),
        Ev::Sample(3 * MS + 200_000, 70_000, 65_536),
        Ev::Nack(3 * MS + 210_000),
        Ev::Sample(3 * MS + 300_000, 72_000, 65_536),
        Ev::Sample(3 * MS + 400_000, 50_500, 65_536),
    ]);
    ev.extend(run(3 * MS + 500_000, 5 * MS + 600_000, 100_000, 51_000));
    out.push_str(&case("hold-and-leave", &p, &ev));
    // A queue drained once per millisecond: never entered.
    let mut ev = Vec::new();
    for t in (0..10 * MS).step_by(MS as usize) {
        ev.extend(run(t, t + 800_000, 100_000, 75_000));
        ev.push(Ev::Sample(t + 800_000, 59_000, 65_536));
        ev.push(Ev::Sample(t + 900_000, 50_000, 65_536));
    }
    out.push_str(&case("drained-never-enters", &p, &ev));
    // Sparse samples: time alone is not enough; the fourth undrained sample switches.
    let ev: Vec<Ev> = (0..6u64)
        .map(|i| Ev::Sample(i * 5 * MS, if i == 0 { 50_000 } else { 80_000 }, 0))
        .collect();
    out.push_str(&case("sparse-samples", &p, &ev));
    // A competitor's queue over ten base windows never becomes the base; a drained rise does;
    // a flat rise with no loss (a slower link) ends the mode and becomes the base.
    let mut pb = p;
    pb.base_window = MS as u32;
    let mut ev = run(0, 3 * MS, 100_000, 50_000);
    ev.extend(saw(3 * MS, 13 * MS));
    out.push_str(&case("standing-queue-base", &pb, &ev));
    let mut ev = run(0, MS, 100_000, 50_000);
    ev.extend(run(MS, 5 * MS, 250_000, 55_000));
    out.push_str(&case("base-follows-a-rise", &pb, &ev));
    let mut ev = run(0, MS, 100_000, 50_000);
    ev.extend(run(MS, 10 * MS, 250_000, 80_000));
    out.push_str(&case("slower-path", &pb, &ev));
    vec![("compete.jsonl", out)]
}
