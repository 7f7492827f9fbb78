//! STRIDE over UDP sockets (tokio). See the transport issue.
pub use stride_proto as proto;
