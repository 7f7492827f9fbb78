//! Sans-IO core of the STRIDE transport.
//!
//! No sockets, no clocks, no threads: every call takes `now` in nanoseconds. The pieces:
//! [`wire`] (the 32-byte header), [`cc`] (Algorithm 1 and the `RateController` trait),
//! [`Connection`] (handshake, go-back-N sender, in-order receiver, teardown) and [`Endpoint`]
//! (stateless cookie handshake, routing, timers). See `docs/spec.md` for the normative protocol.
//!
//! Features: `testkit` (an in-memory network for tests and benchmarks), `vectors` (the shared
//! test vectors behind `stride vectors`), `serde`. None is on by default.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod buf;
pub mod cc;
pub mod config;
pub mod conn;
pub mod endpoint;
pub mod rng;
pub mod stats;
#[cfg(feature = "testkit")]
pub mod testkit;
#[cfg(feature = "vectors")]
pub mod vectors;
pub mod wire;

pub use config::{Config, EchoPolicy, Recovery};
pub use conn::{CloseReason, Connection, Event, State};
pub use endpoint::{
    CidHasher, CidMap, ConnHandle, Endpoint, EndpointError, EndpointStats, Transmit,
};
pub use stats::{ConnStats, Histogram};
