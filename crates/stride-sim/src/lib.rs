//! Packet-level datacenter simulator. STRIDE runs through `stride-proto` unchanged (one
//! `Endpoint` per host, exact timestamps); TCP NewReno, DCTCP, Vegas and
//! seed 003's AIMD are packet-level models; `transport` registers them all by name.
//! See `docs/simulator.md`.
#![forbid(unsafe_code)]

pub mod coexist;
pub mod control;
pub mod engine;
pub mod net;
pub mod outcome;
pub mod qdisc;
pub mod report;
pub mod routes;
pub mod scenario;
pub mod stride;
pub mod sweep;
pub mod switchcfg;
pub mod tcp;
pub mod transport;
pub mod units;
pub mod workload;
