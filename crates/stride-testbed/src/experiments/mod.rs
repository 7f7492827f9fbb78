//! The experiments, one module each: `run(tb, env)` measures and returns the report, the tables
//! and the figures.

pub(crate) mod ack;
pub(crate) mod coexist;
pub(crate) mod fct;
pub(crate) mod stt;
