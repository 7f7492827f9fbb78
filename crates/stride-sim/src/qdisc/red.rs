//! RED-style probabilistic ECN marking on the instantaneous queue, as DCQCN configures it
//! (Zhu et al. 2015, Section 3.1 and Fig. 5: no mark below Kmin, probability rising linearly
//! to Pmax at Kmax, every packet marked above Kmax).

use super::{Discipline, QueueDiscipline, Section, Settings, SimRng, Verdict};
use crate::scenario::ScenarioError;
use serde::Deserialize;

/// RED marking with (Kmin, Kmax, Pmax).
#[derive(Clone, Copy, Debug)]
pub struct Red {
    kmin: u64,
    kmax: u64,
    pmax: f64,
}

impl Red {
    /// Thresholds in bytes, `kmin < kmax`, `pmax` in [0, 1].
    pub fn new(kmin: u64, kmax: u64, pmax: f64) -> Red {
        assert!(kmin < kmax, "RED needs kmin < kmax");
        Red { kmin, kmax, pmax }
    }

    /// Marking probability with `q` bytes queued.
    pub fn probability(&self, q: u64) -> f64 {
        if q >= self.kmax {
            1.0
        } else if q > self.kmin {
            self.pmax * (q - self.kmin) as f64 / (self.kmax - self.kmin) as f64
        } else {
            0.0
        }
    }
}

impl QueueDiscipline for Red {
    fn name(&self) -> &'static str {
        "red-ecn"
    }
    fn enqueue(&mut self, q: u64, _wire: u32, ect: bool, rng: &mut SimRng) -> Verdict {
        // One random draw per ECT packet between the thresholds, none elsewhere (the stream
        // other random choices see depends on it).
        let mark = ect
            && if q >= self.kmax {
                true
            } else if q > self.kmin {
                rng.next01() < self.probability(q)
            } else {
                false
            };
        Verdict {
            mark,
            feedback: None,
        }
    }
}

/// `[red]`: RED-style probabilistic ECN in bytes (DCQCN's switch setting), replacing the
/// step of `queue.ecn_k_packets`.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct RedCfg {
    /// No marking at or below this queue, bytes.
    pub kmin_bytes: u64,
    /// Every ECT packet marked at or above this queue, bytes.
    pub kmax_bytes: u64,
    /// Marking probability just below `kmax_bytes`, in [0, 1].
    pub pmax: f64,
}

/// `red`: the thresholds of `[red]`, or of `queue.red` when the step is off.
pub const DISCIPLINE: Discipline = Discipline {
    name: "red",
    about: "RED-style ECN marking, [red] in bytes or queue.red in packets (DCQCN)",
    section: Some(Section::of::<RedCfg>("red")),
    implied: |s| s.has("red") || (s.queue.red.is_some() && s.queue.ecn_k_bytes == 0),
    check,
    build: |s| {
        let (kmin, kmax, pmax) = profile(s).expect("checked settings");
        Box::new(Red::new(kmin, kmax, pmax))
    },
    feedback: false,
};

/// (Kmin, Kmax, Pmax) in bytes: `[red]`'s, else `queue.red`'s.
fn profile(s: &Settings) -> Option<(u64, u64, f64)> {
    match s.section::<RedCfg>("red").expect("checked section") {
        Some(r) => Some((r.kmin_bytes, r.kmax_bytes, r.pmax)),
        None => s.queue.red,
    }
}

fn check(s: &Settings) -> Result<(), ScenarioError> {
    let Some(r) = s.section::<RedCfg>("red")? else {
        if s.names("red") && s.queue.red.is_none() {
            return Err(ScenarioError::field(
                "queue.discipline",
                "\"red\" needs a [red] section or queue.red",
            ));
        }
        return Ok(());
    };
    if s.queue.red.is_some() {
        return Err(ScenarioError::field(
            "red",
            "give either [red] (bytes) or queue.red (packets)",
        ));
    }
    if r.kmin_bytes >= r.kmax_bytes {
        return Err(ScenarioError::field(
            "red.kmax_bytes",
            "must be above red.kmin_bytes",
        ));
    }
    if !(0.0..=1.0).contains(&r.pmax) {
        return Err(ScenarioError::field("red.pmax", "must be in [0, 1]"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marking_rate_follows_the_linear_profile() {
        let mut red = Red::new(10_000, 110_000, 0.2);
        let mut rng = SimRng(9);
        let mut frac = |q: u64| {
            let n = 20_000;
            let m = (0..n)
                .filter(|_| red.enqueue(q, 1500, true, &mut rng).mark)
                .count();
            m as f64 / n as f64
        };
        assert_eq!(frac(10_000), 0.0);
        assert!((frac(60_000) - 0.1).abs() < 0.01, "{}", frac(60_000));
        assert_eq!(frac(110_000), 1.0);
        assert!(!red.enqueue(200_000, 1500, false, &mut rng).mark);
    }
}
