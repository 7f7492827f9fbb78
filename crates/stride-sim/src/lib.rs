//! Packet-level datacenter simulator. STRIDE runs through `stride-proto` unchanged (one
//! `Endpoint` per host, exact timestamps); TCP NewReno, DCTCP and Vegas are packet-level models.
//! See `docs/simulator.md`.
#![forbid(unsafe_code)]

pub mod engine;
pub mod net;
pub mod report;
pub mod scenario;
pub mod stride;
pub mod sweep;
pub mod tcp;
pub mod units;
pub mod workload;
