//! ECN step marking (DCTCP, Alizadeh et al. 2010, Section 3.1): mark CE when the
//! instantaneous queue exceeds K. Marking at enqueue is what the paper's switches do and the
//! simulator's default; marking at dequeue (the queue a packet leaves behind it) signals one
//! queueing delay earlier and is the option many switch ASICs offer.

use super::{Discipline, EnqueueRule, QueueDiscipline, Section, Settings, SimRng, Verdict};
use crate::scenario::ScenarioError;
use serde::Deserialize;

/// Step marking at `k_bytes`.
#[derive(Clone, Copy, Debug)]
pub struct EcnStep {
    k_bytes: u64,
    at_dequeue: bool,
}

impl EcnStep {
    /// Marks when more than `k_bytes` wait; at dequeue instead of enqueue if `at_dequeue`.
    pub fn new(k_bytes: u64, at_dequeue: bool) -> EcnStep {
        EcnStep {
            k_bytes,
            at_dequeue,
        }
    }
}

impl QueueDiscipline for EcnStep {
    fn name(&self) -> &'static str {
        if self.at_dequeue {
            "ecn-step-dequeue"
        } else {
            "ecn-step"
        }
    }
    fn enqueue(&mut self, q: u64, _wire: u32, ect: bool, _rng: &mut SimRng) -> Verdict {
        Verdict {
            mark: !self.at_dequeue && ect && q > self.k_bytes,
            feedback: None,
        }
    }
    fn enqueue_rule(&self) -> EnqueueRule {
        if self.at_dequeue {
            EnqueueRule::Accept
        } else {
            EnqueueRule::MarkAbove(self.k_bytes)
        }
    }
    fn acts_at_dequeue(&self) -> bool {
        self.at_dequeue
    }
    fn dequeue(&mut self, q: u64, ect: bool) -> bool {
        self.at_dequeue && ect && q > self.k_bytes
    }
}

/// `[ecn]`: where the step marking of `queue.ecn_k_packets` happens.
#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct EcnCfg {
    /// `"enqueue"` (default; the queue ahead of an arriving packet) or `"dequeue"` (the queue
    /// a departing packet leaves behind; switch ports then run per packet).
    pub mark_at: String,
}

/// `ecn`: the step at `queue.ecn_k_packets` (when it is not 0), where `[ecn]` says.
pub const DISCIPLINE: Discipline = Discipline {
    name: "ecn",
    about: "ECN step marking at queue.ecn_k_packets (DCTCP), at enqueue or dequeue ([ecn])",
    section: Some(Section::of::<EcnCfg>("ecn")),
    implied: |s| s.queue.ecn_k_bytes > 0,
    check,
    build: |s| Box::new(EcnStep::new(s.queue.ecn_k_bytes, at_dequeue(s))),
    feedback: false,
};

/// Whether `[ecn]` moves the marking to dequeue.
fn at_dequeue(s: &Settings) -> bool {
    let e = s.section::<EcnCfg>("ecn").expect("checked section");
    e.is_some_and(|e| e.mark_at == "dequeue")
}

fn check(s: &Settings) -> Result<(), ScenarioError> {
    if s.names("ecn") && s.queue.ecn_k_bytes == 0 {
        return Err(ScenarioError::field(
            "queue.ecn_k_packets",
            "is 0 (off): queue.discipline = \"ecn\" marks at it",
        ));
    }
    let Some(e) = s.section::<EcnCfg>("ecn")? else {
        return Ok(());
    };
    match e.mark_at.as_str() {
        "enqueue" => Ok(()),
        "dequeue" => {
            if s.queue.ecn_k_bytes == 0 {
                return Err(ScenarioError::field(
                    "ecn.mark_at",
                    "marks at `queue.ecn_k_packets`, which is 0 (off)",
                ));
            }
            if s.has("red") || s.has("qcn") || s.queue.red.is_some() {
                return Err(ScenarioError::field(
                    "ecn.mark_at",
                    "applies to the ECN step; [red], queue.red and [qcn] replace it",
                ));
            }
            Ok(())
        }
        other => Err(ScenarioError::field(
            "ecn.mark_at",
            format!("{other:?}: use \"enqueue\" or \"dequeue\""),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inline rule a port applies gives the verdicts the discipline's own `enqueue` gives,
    /// for drop-tail and both step markers, around the threshold and either ECT value.
    #[test]
    fn inline_rules_agree_with_enqueue() {
        let mut rng = SimRng(7);
        let mut ds: Vec<Box<dyn QueueDiscipline>> = vec![
            Box::new(super::super::droptail::DropTail),
            Box::new(EcnStep::new(1000, false)),
            Box::new(EcnStep::new(1000, true)),
        ];
        for d in &mut ds {
            let rule = d.enqueue_rule();
            assert_ne!(rule, EnqueueRule::Call, "{}", d.name());
            for q in [0, 999, 1000, 1001, 1_000_000] {
                for ect in [false, true] {
                    let inline = match rule {
                        EnqueueRule::Accept => Verdict::default(),
                        EnqueueRule::MarkAbove(k) => Verdict {
                            mark: ect && q > k,
                            feedback: None,
                        },
                        EnqueueRule::Call => unreachable!(),
                    };
                    assert_eq!(
                        inline,
                        d.enqueue(q, 1500, ect, &mut rng),
                        "{} q={q}",
                        d.name()
                    );
                }
            }
        }
    }

    #[test]
    fn marks_above_k_only_where_configured() {
        let mut rng = SimRng(1);
        let mut enq = EcnStep::new(1000, false);
        assert!(!enq.enqueue(1000, 1500, true, &mut rng).mark);
        assert!(enq.enqueue(1001, 1500, true, &mut rng).mark);
        assert!(!enq.enqueue(5000, 1500, false, &mut rng).mark, "not ECT");
        assert!(
            !enq.dequeue(5000, true),
            "enqueue marker marks nothing at dequeue"
        );
        let mut deq = EcnStep::new(1000, true);
        assert!(deq.acts_at_dequeue());
        assert!(!deq.enqueue(5000, 1500, true, &mut rng).mark);
        assert!(deq.dequeue(1001, true));
        assert!(!deq.dequeue(1000, true));
    }
}
