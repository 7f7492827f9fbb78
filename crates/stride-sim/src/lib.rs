//! Packet-level datacenter simulator. See the simulator issue.
