//! ECN step marking (DCTCP, Alizadeh et al. 2010, Section 3.1): mark CE when the
//! instantaneous queue exceeds K. Marking at enqueue is what the paper's switches do and the
//! simulator's default; marking at dequeue (the queue a packet leaves behind it) signals one
//! queueing delay earlier and is the option many switch ASICs offer.

use super::{QueueDiscipline, SimRng, Verdict};

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
    fn acts_at_dequeue(&self) -> bool {
        self.at_dequeue
    }
    fn dequeue(&mut self, q: u64, ect: bool) -> bool {
        self.at_dequeue && ect && q > self.k_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
