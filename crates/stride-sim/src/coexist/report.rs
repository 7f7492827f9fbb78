//! The measurements of a mixed run ([`CoexistReport`]): per group its throughput, per phase
//! (the stretches between the groups' starts and stops) each group's mean throughput over the
//! settled part, Jain's index between the groups present, the bottleneck's queueing delay
//! (p50, p99) and drops, and the same per throughput interval as a time series.
//!
//! The queueing delay is sampled in time (every `[coexist] queue_every`): the wait a packet
//! arriving at the bottleneck at that instant would have, not a per-packet measurement.

use super::Phase;
use crate::engine::{Meter, Sim};
use crate::report::{jain, pct};
use crate::scenario::Scenario;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Everything measured in a mixed run.
#[derive(Clone, Debug, Serialize)]
pub struct CoexistReport {
    /// The measured port.
    pub bottleneck: Bottleneck,
    /// Per group, in name order.
    pub groups: Vec<GroupReport>,
    /// Per phase, in time order.
    pub phases: Vec<PhaseReport>,
    /// Per throughput interval.
    pub series: Series,
}

/// The measured port over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct Bottleneck {
    /// Its switch.
    pub switch: String,
    /// Its index among the switch's output ports.
    pub port: usize,
    /// Its link rate at the end of the run, Gbit/s.
    pub rate_gbps: f64,
    /// Packets it dropped.
    pub drops: u64,
    /// Median queueing delay of its samples, µs (null without samples).
    pub queue_p50_us: f64,
    /// 99th percentile, µs.
    pub queue_p99_us: f64,
    /// Largest sample, µs.
    pub queue_max_us: f64,
}

/// One group over the whole run.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// Its name (`[group.NAME]`).
    pub name: String,
    /// Its transport.
    pub transport: String,
    /// Its flows.
    pub flows: usize,
    /// When its flows started, ms.
    pub start_ms: f64,
    /// When its flows' applications left, ms (null: they did not).
    pub stop_ms: Option<f64>,
    /// Payload bytes its receivers read.
    pub delivered_bytes: u64,
    /// Those bytes over its time in the run (start to stop or to the end), Gbit/s.
    pub gbps: f64,
    /// Its controllers' mode counters summed over its flows (null: no flow reported any).
    pub mode: Option<ModeReport>,
}

/// Mode counters of a group's senders (controllers with a competitive mode).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ModeReport {
    /// Flows whose controller reported counters.
    pub flows: usize,
    /// Mode switches, summed.
    pub switches: u64,
    /// Time in the competitive mode, summed over the flows, ms.
    pub competitive_ms: f64,
}

/// One phase: the same groups present from its start to its end.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseReport {
    /// Start, ms.
    pub from_ms: f64,
    /// End, ms.
    pub to_ms: f64,
    /// Start of the measured part, ms (the part before it settles).
    pub measured_from_ms: f64,
    /// The groups present through the whole phase.
    pub present: Vec<String>,
    /// Every group's mean throughput over the measured part, Gbit/s.
    pub gbps: BTreeMap<String, f64>,
    /// Jain's index of the present groups' throughputs (null when none is present, or when
    /// `settle` leaves nothing of the phase to measure).
    pub jain: Option<f64>,
    /// Median queueing delay at the bottleneck over the measured part, µs (null without
    /// samples).
    pub queue_p50_us: f64,
    /// 99th percentile, µs.
    pub queue_p99_us: f64,
    /// Drops at the bottleneck over the measured part.
    pub drops: u64,
}

/// Per throughput interval (each ends at `t_ms`; the last one at the end of the run).
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// The interval, ms.
    pub every_ms: f64,
    /// Interval ends, ms.
    pub t_ms: Vec<f64>,
    /// Per group, its throughput in each interval, Gbit/s.
    pub gbps: BTreeMap<String, Vec<f64>>,
    /// Median queueing delay at the bottleneck in each interval, µs (null without samples).
    pub queue_p50_us: Vec<f64>,
    /// 99th percentile, µs.
    pub queue_p99_us: Vec<f64>,
    /// Drops at the bottleneck in each interval.
    pub drops: Vec<u64>,
}

/// The delivered bytes per class and the drops at time `t`: the record at `t`, else linear
/// between the records around it (the meter records every phase boundary, so only a run that
/// ended before its limit interpolates).
fn at(m: &Meter, t: u64) -> (Vec<f64>, f64) {
    let d = &m.delivered;
    let i = d.partition_point(|s| s.t < t);
    let whole = |k: usize| {
        let s = &d[k];
        (s.bytes.iter().map(|&b| b as f64).collect(), s.drops as f64)
    };
    match (i.checked_sub(1), d.get(i)) {
        (_, Some(s)) if s.t == t => whole(i),
        (Some(k), Some(s)) => {
            let a = &d[k];
            let f = (t - a.t) as f64 / (s.t - a.t) as f64;
            let mix = |x: u64, y: u64| x as f64 + f * (y as f64 - x as f64);
            (
                a.bytes
                    .iter()
                    .zip(&s.bytes)
                    .map(|(&x, &y)| mix(x, y))
                    .collect(),
                mix(a.drops, s.drops),
            )
        }
        (Some(k), None) => whole(k),
        (None, Some(_)) => whole(0),
        (None, None) => (vec![0.0; m.classes], 0.0),
    }
}

/// (p50, p99, max) of the queue samples in `[from, to)`, µs; NaN without samples.
fn waits(m: &Meter, from: u64, to: u64) -> (f64, f64, f64) {
    let mut us: Vec<f64> = m
        .queue
        .iter()
        .filter(|q| q.t >= from && q.t < to)
        .map(|q| q.wait_ns as f64 / 1e3)
        .collect();
    if us.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    us.sort_by(f64::total_cmp);
    (pct(&us, 0.5), pct(&us, 0.99), us[us.len() - 1])
}

/// Gbit/s of `bytes` over `ns`.
fn gbps(bytes: f64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes * 8.0 / ns as f64
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// The report of a finished mixed run on `sim`, built by [`Scenario::sim`] for `sc` (`None`
/// for a run without a meter).
pub fn report(sc: &Scenario, sim: &Sim) -> Option<CoexistReport> {
    let m = sim.meter.as_deref()?;
    let end = sim.stats.end_ns;
    let names: Vec<String> = sc.group.keys().cloned().collect();
    let port = &sim.topo.ports[m.port];
    let sw = (port.from - sim.topo.hosts) as usize;
    let (q50, q99, qmax) = waits(m, 0, u64::MAX);
    let bottleneck = Bottleneck {
        switch: sim.topo.switch_names[sw].clone(),
        port: sim.topo.switches[sw]
            .ports
            .iter()
            .position(|&p| p == m.port)
            .unwrap_or(0),
        rate_gbps: port.rate_bps as f64 / 1e9,
        drops: port.drops,
        queue_p50_us: q50,
        queue_p99_us: q99,
        queue_max_us: qmax,
    };
    let (total, _) = at(m, end);
    let groups = sc
        .group
        .iter()
        .enumerate()
        .map(|(gi, (name, g))| {
            let flows: Vec<usize> = (0..m.class.len())
                .filter(|&f| m.class[f] as usize == gi)
                .collect();
            let modes: Vec<_> = flows.iter().filter_map(|&f| m.modes[f]).collect();
            let life_end = g.stop.unwrap_or(end).min(end);
            GroupReport {
                name: name.clone(),
                transport: g.transport.clone(),
                flows: flows.len(),
                start_ms: ms(g.start),
                stop_ms: g.stop.map(ms),
                delivered_bytes: total[gi] as u64,
                gbps: gbps(total[gi], life_end.saturating_sub(g.start)),
                mode: (!modes.is_empty()).then(|| ModeReport {
                    flows: modes.len(),
                    switches: modes.iter().map(|s| u64::from(s.switches)).sum(),
                    competitive_ms: ms(modes.iter().map(|s| s.competitive_ns).sum()),
                }),
            }
        })
        .collect();
    let phases = sc.phases(end).iter().map(|p| phase(m, &names, p)).collect();
    let (every, _, _) = sc.coexist_periods();
    Some(CoexistReport {
        bottleneck,
        groups,
        phases,
        series: series(m, &names, every, end),
    })
}

fn phase(m: &Meter, names: &[String], p: &Phase) -> PhaseReport {
    let (a, da) = at(m, p.measured_from);
    let (b, db) = at(m, p.to);
    let len = p.to - p.measured_from;
    let rates: Vec<f64> = a.iter().zip(&b).map(|(x, y)| gbps(y - x, len)).collect();
    let (q50, q99, _) = waits(m, p.measured_from, p.to);
    PhaseReport {
        from_ms: ms(p.from),
        to_ms: ms(p.to),
        measured_from_ms: ms(p.measured_from),
        present: p.present.iter().map(|&i| names[i].clone()).collect(),
        gbps: names.iter().cloned().zip(rates.iter().copied()).collect(),
        jain: (!p.present.is_empty() && len > 0).then(|| jain(p.present.iter().map(|&i| rates[i]))),
        queue_p50_us: q50,
        queue_p99_us: q99,
        drops: (db - da).round() as u64,
    }
}

fn series(m: &Meter, names: &[String], every: u64, end: u64) -> Series {
    let points: Vec<&crate::engine::DeliveredSample> = m
        .delivered
        .iter()
        .filter(|s| s.t % every == 0 || s.t == end)
        .collect();
    let mut s = Series {
        every_ms: ms(every),
        t_ms: Vec::new(),
        gbps: names.iter().map(|n| (n.clone(), Vec::new())).collect(),
        queue_p50_us: Vec::new(),
        queue_p99_us: Vec::new(),
        drops: Vec::new(),
    };
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        s.t_ms.push(ms(b.t));
        for (gi, n) in names.iter().enumerate() {
            let v = gbps((b.bytes[gi] - a.bytes[gi]) as f64, b.t - a.t);
            s.gbps.get_mut(n).expect("group").push(v);
        }
        let (q50, q99, _) = waits(m, a.t, b.t);
        s.queue_p50_us.push(q50);
        s.queue_p99_us.push(q99);
        s.drops.push(b.drops - a.drops);
    }
    s
}

impl CoexistReport {
    /// The text summary: the bottleneck, one line per group, one per phase, then the series.
    pub fn text(&self, run: &str) -> String {
        let b = &self.bottleneck;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "mixed run {run}: bottleneck {} port {} ({} Gbit/s): {} drops, queueing delay \
             p50 {:.1} us, p99 {:.1} us, max {:.1} us",
            b.switch, b.port, b.rate_gbps, b.drops, b.queue_p50_us, b.queue_p99_us, b.queue_max_us
        );
        let w = self
            .groups
            .iter()
            .map(|g| g.name.len())
            .max()
            .unwrap_or(0)
            .max(8);
        let _ = writeln!(
            o,
            "{:<w$} {:<12} {:>5} {:>8} {:>8} {:>13} {:>8} {:>9} {:>15}",
            "group",
            "transport",
            "flows",
            "start",
            "stop",
            "delivered MB",
            "Gbit/s",
            "switches",
            "competitive ms"
        );
        let dur = |v: f64| stride_units::fmt_duration_ns((v * 1e6).round() as u64);
        for g in &self.groups {
            let (sw, cm) = g.mode.map_or(("-".into(), "-".into()), |m| {
                (m.switches.to_string(), format!("{:.2}", m.competitive_ms))
            });
            let _ = writeln!(
                o,
                "{:<w$} {:<12} {:>5} {:>8} {:>8} {:>13.1} {:>8.3} {:>9} {:>15}",
                g.name,
                g.transport,
                g.flows,
                dur(g.start_ms),
                g.stop_ms.map_or("-".into(), dur),
                g.delivered_bytes as f64 / 1e6,
                g.gbps,
                sw,
                cm
            );
        }
        for p in &self.phases {
            let rates: Vec<String> = p.gbps.iter().map(|(n, v)| format!("{n} {v:.3}")).collect();
            let jain = p.jain.map_or("-".into(), |j| {
                format!("{j:.3} ({} present)", p.present.len())
            });
            let _ = writeln!(
                o,
                "phase {}-{} ms, measured from {} ms: Gbit/s {}; Jain {jain}; queueing delay \
                 p50 {:.1} us, p99 {:.1} us; {} drops",
                p.from_ms,
                p.to_ms,
                p.measured_from_ms,
                rates.join(", "),
                p.queue_p50_us,
                p.queue_p99_us,
                p.drops
            );
        }
        o.push_str(&self.series_table(' '));
        o
    }

    /// The series as a table: a header, then one row per interval; `sep` ' ' aligns columns
    /// for reading, ',' gives CSV.
    pub fn series_table(&self, sep: char) -> String {
        let s = &self.series;
        let mut head = vec!["t_ms".to_string()];
        head.extend(s.gbps.keys().map(|n| format!("{n}_gbps")));
        head.extend(["queue_p50_us", "queue_p99_us", "drops"].map(String::from));
        let mut rows = vec![head];
        for (i, t) in s.t_ms.iter().enumerate() {
            let mut r = vec![format!("{t}")];
            r.extend(s.gbps.values().map(|v| format!("{:.3}", v[i])));
            r.push(format!("{:.1}", s.queue_p50_us[i]));
            r.push(format!("{:.1}", s.queue_p99_us[i]));
            r.push(s.drops[i].to_string());
            rows.push(r);
        }
        let mut o = String::new();
        for r in rows {
            let line: Vec<String> = if sep == ',' {
                r
            } else {
                r.iter().map(|c| format!("{c:>12}")).collect()
            };
            let _ = writeln!(o, "{}", line.join(&sep.to_string()));
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{DeliveredSample, QueueDelaySample};

    /// Two groups over 1 ms: 125 000 and 375 000 bytes (1 and 3 Gbit/s), 10 drops, and four
    /// queue samples of 1 to 4 us.
    fn meter() -> Meter {
        let mut m = Meter::new(vec![0, 1], 2, vec![0, 1_000_000], 0, 250_000);
        let sample = |t, a, b, drops| DeliveredSample {
            t,
            bytes: vec![a, b],
            drops,
        };
        m.delivered = vec![sample(0, 0, 0, 0), sample(1_000_000, 125_000, 375_000, 10)];
        m.queue = (0..4)
            .map(|k| QueueDelaySample {
                t: k * 250_000,
                bytes: 0,
                wait_ns: (k + 1) * 1000,
            })
            .collect();
        m
    }

    #[test]
    fn a_phase_of_one_and_three_gbits_has_jain_index_0_8() {
        let names = ["a".to_string(), "b".to_string()];
        let p = Phase {
            from: 0,
            to: 1_000_000,
            measured_from: 0,
            present: vec![0, 1],
        };
        let r = phase(&meter(), &names, &p);
        assert_eq!((r.gbps["a"], r.gbps["b"]), (1.0, 3.0));
        // (1 + 3)^2 / (2 (1^2 + 3^2)) = 16 / 20
        assert_eq!(r.jain, Some(0.8));
        assert_eq!((r.queue_p50_us, r.queue_p99_us, r.drops), (2.0, 4.0, 10));
        // Measured from 0.5 ms, between two records: the bytes and drops at 0.5 ms are
        // interpolated, the rates stay, the queue samples before 0.5 ms drop out.
        let r = phase(
            &meter(),
            &names,
            &Phase {
                measured_from: 500_000,
                ..p.clone()
            },
        );
        assert_eq!((r.gbps["a"], r.gbps["b"], r.jain), (1.0, 3.0, Some(0.8)));
        assert_eq!((r.queue_p50_us, r.queue_p99_us, r.drops), (3.0, 4.0, 5));
        // Only one group present: the index is over it alone; none present: no index.
        let one = phase(
            &meter(),
            &names,
            &Phase {
                present: vec![1],
                ..p.clone()
            },
        );
        assert_eq!(one.jain, Some(1.0));
        let none = phase(
            &meter(),
            &names,
            &Phase {
                present: vec![],
                ..p
            },
        );
        assert_eq!(none.jain, None);
    }

    #[test]
    fn the_series_has_one_row_per_interval() {
        let names = ["a".to_string(), "b".to_string()];
        let mut m = meter();
        m.delivered.insert(
            1,
            DeliveredSample {
                t: 500_000,
                bytes: vec![25_000, 375_000],
                drops: 10,
            },
        );
        let s = series(&m, &names, 500_000, 1_000_000);
        assert_eq!(s.t_ms, [0.5, 1.0]);
        assert_eq!(s.gbps["a"], [0.4, 1.6]);
        assert_eq!(s.gbps["b"], [6.0, 0.0]);
        assert_eq!(s.drops, [10, 0]);
        assert_eq!(s.queue_p50_us, [1.0, 3.0]);
    }
}
