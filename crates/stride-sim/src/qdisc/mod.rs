//! Queue disciplines of switch output ports: what happens to a packet the buffer accepted.
//!
//! The engine owns the buffer (per-port and shared limits, drop-tail) and the schedule; a
//! discipline decides ECN marks and may ask for a congestion-notification frame. Each
//! discipline is one module implementing [`QueueDiscipline`]; a port holds one as a boxed
//! trait object. A discipline that acts at dequeue ([`QueueDiscipline::acts_at_dequeue`])
//! puts its port on the per-packet path (a `PortFree` event per packet); the others keep the
//! one-event-per-hop fast path, where a packet's departure is fixed at enqueue.
//!
//! Scenarios and topologies pick a discipline by name from [`REGISTRY`]: `queue.discipline`
//! names one, or the settings imply one (a `[red]` or `[qcn]` section, the step K of
//! `[queue]`; see [`choose`]). A new discipline is one module, defining its
//! [`QueueDiscipline`], its scenario section if it has one, and a [`Discipline`] entry, plus
//! one line in [`REGISTRY`]:
//!
//! ```
//! // qdisc/half.rs (`super::` there): marks every other ECT packet above K.
//! use stride_sim::qdisc::{Discipline, QueueDiscipline, SimRng, Verdict};
//!
//! #[derive(Debug)]
//! pub struct Half {
//!     k: u64,
//!     odd: bool,
//! }
//!
//! impl QueueDiscipline for Half {
//!     fn name(&self) -> &'static str {
//!         "half"
//!     }
//!     fn enqueue(&mut self, q: u64, _wire: u32, ect: bool, _rng: &mut SimRng) -> Verdict {
//!         self.odd = !self.odd;
//!         Verdict {
//!             mark: ect && q > self.k && self.odd,
//!             feedback: None,
//!         }
//!     }
//! }
//!
//! /// `half`: chosen by `queue.discipline = "half"`, marking above `queue.ecn_k_packets`.
//! pub const DISCIPLINE: Discipline = Discipline {
//!     name: "half",
//!     about: "marks every other ECT packet above K",
//!     // `Some(Section::of::<HalfCfg>("half"))` for a `[half]` section of its own
//!     section: None,
//!     implied: |_| false,
//!     check: |_| Ok(()),
//!     build: |s| {
//!         Box::new(Half {
//!             k: s.queue.ecn_k_bytes,
//!             odd: false,
//!         })
//!     },
//!     feedback: false,
//! };
//!
//! // qdisc/mod.rs: `pub mod half;`, and in `REGISTRY`: `half::DISCIPLINE,`
//! ```

pub mod droptail;
pub mod ecn;
pub mod qcn;
pub mod red;
mod registry;

pub use droptail::DropTail;
pub use ecn::EcnStep;
pub use qcn::{QcnCp, QcnParams};
pub use red::Red;
pub use registry::{
    by_section, check, choose, find, from_spec, names, read, Discipline, Section, Sections,
    Settings, REGISTRY,
};

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

/// How a port applies its discipline at enqueue, chosen once when the discipline is set: the
/// common rules run inline on the per-hop path, anything else calls
/// [`QueueDiscipline::enqueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnqueueRule {
    /// Accept without marking or feedback.
    Accept,
    /// Mark an ECN-capable packet CE when more than this many bytes wait ahead of it.
    MarkAbove(u64),
    /// Call the discipline.
    Call,
}

/// A queue discipline of one output port.
pub trait QueueDiscipline: std::fmt::Debug {
    /// The name reports use.
    fn name(&self) -> &'static str;
    /// A packet of `wire` bytes was accepted into the buffer with `q` bytes waiting ahead of
    /// it (not counting a packet being serialized).
    fn enqueue(&mut self, q: u64, wire: u32, ect: bool, rng: &mut SimRng) -> Verdict;
    /// The rule its `enqueue` follows, if it is one of the inline ones (its `enqueue` must
    /// then give the rule's verdict and change no state): the port applies it without a call.
    fn enqueue_rule(&self) -> EnqueueRule {
        EnqueueRule::Call
    }
    /// Whether [`QueueDiscipline::dequeue`] does anything (the port then runs per packet).
    fn acts_at_dequeue(&self) -> bool {
        false
    }
    /// A packet starts serializing and leaves `q` bytes waiting behind it: mark it?
    fn dequeue(&mut self, _q: u64, _ect: bool) -> bool {
        false
    }
}
