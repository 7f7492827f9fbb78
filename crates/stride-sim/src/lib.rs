//! Packet-level datacenter simulator. STRIDE runs through `stride-proto` unchanged (one
//! `Endpoint` per host, exact timestamps); TCP NewReno, DCTCP and Vegas are packet-level models.
//! See `docs/simulator.md`.
#![forbid(unsafe_code)]

pub mod engine;
pub mod net;
pub mod qdisc;
pub mod report;
pub mod scenario;
pub mod stride;
pub mod switchcfg;
pub mod tcp;
pub mod workload;
