//! Drop-tail: no active queue management; the buffer limit the engine enforces is all.

use super::{Discipline, EnqueueRule, QueueDiscipline, SimRng, Verdict};

/// Drop-tail (the engine drops a packet that does not fit the buffer; nothing else happens).
#[derive(Clone, Copy, Debug, Default)]
pub struct DropTail;

impl QueueDiscipline for DropTail {
    fn name(&self) -> &'static str {
        "drop-tail"
    }
    fn enqueue(&mut self, _q: u64, _wire: u32, _ect: bool, _rng: &mut SimRng) -> Verdict {
        Verdict::default()
    }
    fn enqueue_rule(&self) -> EnqueueRule {
        EnqueueRule::Accept
    }
}

/// `droptail`: chosen when nothing else is.
pub const DISCIPLINE: Discipline = Discipline {
    name: "droptail",
    about: "drop-tail, no marking",
    section: None,
    implied: |_| true,
    check: |_| Ok(()),
    build: |_| Box::new(DropTail),
    feedback: false,
};
