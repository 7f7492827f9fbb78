//! Control frames: packets the network itself makes, carried as
//! [`Payload::Control`](crate::net::Payload::Control) and handled by the engine on one path
//! whatever their type.
//!
//! A frame is either *hop by hop* (it crosses one link and the node at its far end consumes
//! it: [`ControlFrame::arrive`] acts on the network, as a PFC pause stops a port) or *routed*
//! (it travels through the data queues to its packet's `dst` host like any packet, and that
//! host's transport receives it and reads it with
//! [`Payload::control`](crate::net::Payload::control), as QCN feedback reaches its reaction
//! point). The engine sends either kind with [`Sim::send_back`] or [`Sim::send_routed`].
//!
//! A new frame type is one module here: a `Clone + Debug` struct implementing
//! [`ControlFrame`] (its `name`, and `hop_by_hop` with `arrive` if the network consumes it);
//! nothing in the engine changes:
//!
//! ```
//! use stride_sim::control::ControlFrame;
//! use stride_sim::engine::Sim;
//!
//! /// A probe that a switch drops at the next hop, counting nothing.
//! #[derive(Clone, Debug)]
//! struct Probe;
//!
//! impl ControlFrame for Probe {
//!     fn name(&self) -> &'static str {
//!         "probe"
//!     }
//!     fn hop_by_hop(&self) -> bool {
//!         true
//!     }
//!     fn arrive(&self, _sim: &mut Sim, _node: u32, _from: u32) {}
//! }
//! ```
//!
//! Data packets never allocate for this: only a control frame is boxed.

mod pause;
mod qcn;

pub use pause::Pause;
pub use qcn::QcnFeedback;

use crate::engine::Sim;
use crate::net::{NodeId, CONTROL_FRAME_WIRE};
use std::any::Any;
use std::fmt::Debug;

/// A control frame type (see the module documentation).
pub trait ControlFrame: FrameObject {
    /// A short name (debug output).
    fn name(&self) -> &'static str;
    /// Bytes on the wire (a minimum Ethernet frame unless the type says otherwise).
    fn wire(&self) -> u32 {
        CONTROL_FRAME_WIRE
    }
    /// Whether the node at the far end of the one link the frame crosses consumes it (through
    /// [`ControlFrame::arrive`]) instead of forwarding it to its packet's `dst` host.
    fn hop_by_hop(&self) -> bool {
        false
    }
    /// A hop-by-hop frame from neighbour `from` arrived at `node`: its effect on the network.
    fn arrive(&self, _sim: &mut Sim, _node: NodeId, _from: NodeId) {}
}

/// What every `Clone + Debug` frame type gets for nothing: cloning behind a box (packets are
/// `Clone`) and the downcast [`Payload::control`](crate::net::Payload::control) uses.
pub trait FrameObject: Any + Debug + Send + Sync {
    /// A boxed copy.
    fn clone_box(&self) -> Box<dyn ControlFrame>;
    /// The frame as `Any`, to downcast.
    fn as_any(&self) -> &dyn Any;
}

impl<T: ControlFrame + Clone> FrameObject for T {
    fn clone_box(&self) -> Box<dyn ControlFrame> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl Clone for Box<dyn ControlFrame> {
    fn clone(&self) -> Self {
        (**self).clone_box()
    }
}
