//! Sans-IO core of the STRIDE transport.
//!
//! No sockets, no clocks, no threads: every call takes `now` in nanoseconds. See `docs/spec.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cc;
pub mod vectors;
pub mod wire;
