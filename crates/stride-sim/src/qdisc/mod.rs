//! Queue disciplines of switch output ports: what happens to a packet the buffer accepted.
//!
//! The engine owns the buffer (per-port and shared limits, drop-tail) and the schedule; a
//! discipline decides ECN marks and may ask for a congestion-notification frame. Each
//! discipline is one module implementing [`QueueDiscipline`]; a port holds one as a boxed
//! trait object. A discipline that acts at dequeue ([`QueueDiscipline::acts_at_dequeue`])
//! puts its port on the per-packet path (a `PortFree` event per packet); the others keep the
//! one-event-per-hop fast path, where a packet's departure is fixed at enqueue.

pub mod droptail;
pub mod ecn;
pub mod qcn;
pub mod red;

pub use droptail::DropTail;
pub use ecn::EcnStep;
pub use qcn::{QcnCp, QcnParams};
pub use red::Red;

/// The simulator's random stream (SplitMix64), shared by every random choice of a run so a
/// seed gives one result.
#[derive(Clone, Copy, Debug)]
pub struct SimRng(pub u64);

impl SimRng {
    /// The next uniform value in [0, 1).
    pub fn next01(&mut self) -> f64 {
        self.0 = crate::engine::mix(self.0);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A congestion point's request to notify the source of the packet just enqueued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feedback {
    /// Quantized |Fb|, 1..=63.
    pub fb: u8,
    /// Q - Q_eq, bytes.
    pub qoff: i64,
    /// Q - Q_old, bytes.
    pub qdelta: i64,
}

/// What a discipline decided about an accepted packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Set CE on the packet (only ECN-capable packets are ever marked).
    pub mark: bool,
    /// Send a congestion-notification frame to the packet's source.
    pub feedback: Option<Feedback>,
}

/// A queue discipline of one output port.
pub trait QueueDiscipline: std::fmt::Debug {
    /// The name reports use.
    fn name(&self) -> &'static str;
    /// A packet of `wire` bytes was accepted into the buffer with `q` bytes waiting ahead of
    /// it (not counting a packet being serialized).
    fn enqueue(&mut self, q: u64, wire: u32, ect: bool, rng: &mut SimRng) -> Verdict;
    /// Whether [`QueueDiscipline::dequeue`] does anything (the port then runs per packet).
    fn acts_at_dequeue(&self) -> bool {
        false
    }
    /// A packet starts serializing and leaves `q` bytes waiting behind it: mark it?
    fn dequeue(&mut self, _q: u64, _ect: bool) -> bool {
        false
    }
}

/// The discipline a [`crate::net::QueueSpec`] describes: an ECN step at K when
/// `ecn_k_bytes > 0` (marking at enqueue), else RED marking when `red` is set, else drop-tail.
pub fn from_spec(q: &crate::net::QueueSpec) -> Box<dyn QueueDiscipline> {
    if q.ecn_k_bytes > 0 {
        Box::new(EcnStep::new(q.ecn_k_bytes, false))
    } else if let Some((kmin, kmax, pmax)) = q.red {
        Box::new(Red::new(kmin, kmax, pmax))
    } else {
        Box::new(DropTail)
    }
}
