//! Drop-tail: no active queue management; the buffer limit the engine enforces is all.

use super::{QueueDiscipline, SimRng, Verdict};

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
}
