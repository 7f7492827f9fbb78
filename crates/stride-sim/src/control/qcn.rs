//! The IEEE 802.1Qau congestion-notification message (QCN feedback).

use super::ControlFrame;

/// QCN feedback: a switch congestion point sampled a packet of the flow
/// `(flow_src, flow_dst, hash)` and sends this frame to `flow_src` (the packet's `src` is the
/// switch's node id, its `dst` the flow's source host). Routed, and delivered to the source
/// host's transport like any packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QcnFeedback {
    /// Quantized |Fb|, 6 bits (1..=63; a congestion point sends nothing when Fb >= 0).
    pub fb: u8,
    /// Congestion point id: the index of the switch port (in `Topology::ports`).
    pub cpid: u32,
    /// Source host of the sampled packet (the reaction point).
    pub flow_src: u32,
    /// Destination host of the sampled packet.
    pub flow_dst: u32,
    /// ECMP hash of the sampled packet (identifies the connection).
    pub hash: u64,
    /// Queue offset Q - Q_eq at sampling, bytes (positive: above the equilibrium).
    pub qoff: i64,
    /// Queue growth since the previous sample at this congestion point, bytes.
    pub qdelta: i64,
}

impl ControlFrame for QcnFeedback {
    fn name(&self) -> &'static str {
        "qcn-feedback"
    }
}
