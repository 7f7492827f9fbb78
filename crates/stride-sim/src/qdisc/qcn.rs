//! The IEEE 802.1Qau (QCN) congestion point, with the switch values of seed 004 (the
//! Kabbani/Prabhakar/Yasuda NetFPGA evaluation, which follows the QCN pseudo code v2.3):
//! Q_eq = 33 KB, W = 2, a 6-bit quantized Fb, sampling about every 150 KB of arrivals with
//! 30 % jitter, sampling faster as |Fb| grows.
//!
//! At each sample the congestion point computes Qoff = Q - Q_eq, Qdelta = Q - Q_old and
//! Fb = -(Qoff + W * Qdelta). If Fb < 0 it sends the sampled packet's source a feedback frame
//! carrying |Fb| quantized to 6 bits against Fb_max = (2W + 1) * Q_eq. The next sampling
//! interval comes from a table indexed by the quantized |Fb| / 8: 150, 75, 50, 37.5, 30, 25,
//! 21.5 and 18.75 KB (the pseudo code's table; seed 004 names it "the lookup table in the
//! pseudo code"), each scaled by a uniform factor in [0.85, 1.15] ("30 % randomness").
//! ECN is not marked: QCN is a layer-2 scheme (a port may still drop when its buffer is full).

use super::{Discipline, Feedback, QueueDiscipline, Section, Settings, SimRng, Verdict};
use crate::scenario::ScenarioError;
use serde::Deserialize;

/// Congestion-point parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QcnParams {
    /// Equilibrium queue Q_eq, bytes.
    pub q_eq_bytes: u64,
    /// Weight W of the queue growth.
    pub w: f64,
    /// Base sampling interval, bytes of arrivals.
    pub sample_bytes: u64,
    /// Jitter of the sampling interval: each interval is scaled by U(1 - j/2, 1 + j/2).
    pub jitter: f64,
}

impl Default for QcnParams {
    /// Seed 004's values.
    fn default() -> Self {
        QcnParams {
            q_eq_bytes: 33_000,
            w: 2.0,
            sample_bytes: 150_000,
            jitter: 0.3,
        }
    }
}

/// Sampling intervals as fractions of the base (150 KB), indexed by quantized |Fb| / 8.
const SAMPLE_TABLE_PERMILLE: [u64; 8] = [1000, 500, 333, 250, 200, 167, 143, 125];

/// A QCN congestion point on one output port.
#[derive(Clone, Debug)]
pub struct QcnCp {
    p: QcnParams,
    /// Bytes to arrive before the next sample.
    until_sample: i64,
    /// Queue at the previous sample.
    q_old: u64,
    /// Samples taken and feedback frames requested.
    pub samples: u64,
    /// Feedback frames requested.
    pub feedbacks: u64,
}

impl QcnCp {
    /// A congestion point with `p`; the first sample comes after one base interval.
    pub fn new(p: QcnParams) -> QcnCp {
        QcnCp {
            p,
            until_sample: p.sample_bytes as i64,
            q_old: 0,
            samples: 0,
            feedbacks: 0,
        }
    }

    /// Fb for queue `q` (bytes, the arriving packet included) given the previous sample's
    /// queue `q_old`: (Fb, Qoff, Qdelta).
    pub fn fb(&self, q: u64, q_old: u64) -> (f64, i64, i64) {
        let qoff = q as i64 - self.p.q_eq_bytes as i64;
        let qdelta = q as i64 - q_old as i64;
        (-(qoff as f64 + self.p.w * qdelta as f64), qoff, qdelta)
    }

    /// |Fb| quantized to 6 bits (1..=63) for a negative Fb, 0 otherwise.
    pub fn quantize(&self, fb: f64) -> u8 {
        if fb >= 0.0 {
            return 0;
        }
        let fb_max = (2.0 * self.p.w + 1.0) * self.p.q_eq_bytes as f64;
        ((-fb / fb_max * 63.0).ceil() as u64).clamp(1, 63) as u8
    }

    fn next_interval(&self, qfb: u8, rng: &mut SimRng) -> i64 {
        let base = self.p.sample_bytes * SAMPLE_TABLE_PERMILLE[usize::from(qfb / 8)] / 1000;
        let j = 1.0 + self.p.jitter * (rng.next01() - 0.5);
        ((base as f64 * j) as i64).max(1)
    }
}

impl QueueDiscipline for QcnCp {
    fn name(&self) -> &'static str {
        "qcn-cp"
    }
    fn enqueue(&mut self, q: u64, wire: u32, _ect: bool, rng: &mut SimRng) -> Verdict {
        self.until_sample -= i64::from(wire);
        if self.until_sample > 0 {
            return Verdict::default();
        }
        let q = q + u64::from(wire);
        let (fb, qoff, qdelta) = self.fb(q, self.q_old);
        self.q_old = q;
        self.samples += 1;
        let qfb = self.quantize(fb);
        self.until_sample = self.next_interval(qfb, rng);
        let feedback = (qfb > 0).then(|| {
            self.feedbacks += 1;
            Feedback {
                fb: qfb,
                qoff,
                qdelta,
            }
        });
        Verdict {
            mark: false,
            feedback,
        }
    }
}

/// `[qcn]`: a QCN congestion point on every switch port (no ECN marking); absent fields
/// take seed 004's values.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct QcnCfg {
    /// Q_eq, bytes (33 000).
    #[serde(default = "q_eq")]
    pub q_eq_bytes: u64,
    /// W (2).
    #[serde(default = "w")]
    pub w: f64,
    /// Base sampling interval, bytes (150 000).
    #[serde(default = "sample")]
    pub sample_bytes: u64,
    /// Sampling jitter, fraction (0.3).
    #[serde(default = "jitter")]
    pub jitter: f64,
}

fn q_eq() -> u64 {
    QcnParams::default().q_eq_bytes
}
fn w() -> f64 {
    QcnParams::default().w
}
fn sample() -> u64 {
    QcnParams::default().sample_bytes
}
fn jitter() -> f64 {
    QcnParams::default().jitter
}

/// `qcn`: congestion points with `[qcn]`'s parameters (seed 004's without the section).
pub const DISCIPLINE: Discipline = Discipline {
    name: "qcn",
    about: "IEEE 802.1Qau congestion point sending QCN feedback ([qcn])",
    section: Some(Section::of::<QcnCfg>("qcn")),
    implied: |s| s.has("qcn"),
    check,
    build: |s| Box::new(QcnCp::new(params(s))),
    feedback: true,
};

/// The congestion-point parameters of `[qcn]`, seed 004's without the section.
fn params(s: &Settings) -> QcnParams {
    match s.section::<QcnCfg>("qcn").expect("checked section") {
        Some(q) => QcnParams {
            q_eq_bytes: q.q_eq_bytes,
            w: q.w,
            sample_bytes: q.sample_bytes,
            jitter: q.jitter,
        },
        None => QcnParams::default(),
    }
}

fn check(s: &Settings) -> Result<(), ScenarioError> {
    let Some(q) = s.section::<QcnCfg>("qcn")? else {
        return Ok(());
    };
    if s.has("red") || s.queue.red.is_some() {
        return Err(ScenarioError::field(
            "qcn",
            "a port runs one discipline: drop [red]/queue.red",
        ));
    }
    if q.q_eq_bytes == 0 {
        return Err(ScenarioError::field("qcn.q_eq_bytes", "must be at least 1"));
    }
    if !(q.w >= 0.0 && q.w.is_finite()) {
        return Err(ScenarioError::field(
            "qcn.w",
            "must be a finite number >= 0",
        ));
    }
    if q.sample_bytes == 0 {
        return Err(ScenarioError::field(
            "qcn.sample_bytes",
            "must be at least 1",
        ));
    }
    if !(0.0..1.0).contains(&q.jitter) {
        return Err(ScenarioError::field("qcn.jitter", "must be in [0, 1)"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fb_and_quantization() {
        let cp = QcnCp::new(QcnParams::default());
        // at Q_eq and not growing: Fb = 0, nothing sent
        assert_eq!(cp.quantize(cp.fb(33_000, 33_000).0), 0);
        // below Q_eq and draining: positive Fb, nothing sent
        assert_eq!(cp.quantize(cp.fb(10_000, 20_000).0), 0);
        // Qoff = 33 000, Qdelta = 33 000: Fb = -99 000 = -0.6 Fb_max -> ceil(37.8) = 38
        let (fb, qoff, qdelta) = cp.fb(66_000, 33_000);
        assert_eq!((fb, qoff, qdelta), (-99_000.0, 33_000, 33_000));
        assert_eq!(cp.quantize(fb), 38);
        // saturates at 63
        assert_eq!(cp.quantize(cp.fb(1_000_000, 0).0), 63);
        // barely negative: 1
        assert_eq!(cp.quantize(-1.0), 1);
    }

    #[test]
    fn samples_about_every_150_kb_and_faster_when_congested() {
        let mut rng = SimRng(3);
        // an empty queue: Fb >= 0, base interval, no feedback
        let mut cp = QcnCp::new(QcnParams::default());
        for _ in 0..10_000 {
            assert!(cp.enqueue(0, 1500, false, &mut rng).feedback.is_none());
        }
        let per = 15_000_000 / cp.samples;
        assert!((135_000..=165_000).contains(&per), "{per} bytes per sample");
        // a standing 200 KB queue: every sample asks for feedback, sampled more often
        let mut cp = QcnCp::new(QcnParams::default());
        let fbs = (0..10_000)
            .filter(|_| {
                cp.enqueue(200_000, 1500, false, &mut rng)
                    .feedback
                    .is_some()
            })
            .count() as u64;
        assert_eq!(fbs, cp.samples);
        assert!(cp.samples > 3 * 100, "{} samples", cp.samples);
    }
}
