//! The checks of a parsed scenario, one function per section; every error names its field.

use super::{bad, need, Scenario, ScenarioError, TopologyKind, WorkloadKind};
use stride_proto::cc::rate_from_gbps;

/// `Ok` if `v` is a positive finite number, else an error naming `field`.
fn positive(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v > 0.0 && v.is_finite() {
        Ok(())
    } else {
        Err(bad(field, "must be positive"))
    }
}

impl Scenario {
    /// Checks every section in a fixed order and returns the first error found.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_topology()?;
        self.validate_queue()?;
        self.validate_switch()?;
        self.validate_groups()?;
        self.validate_workload()?;
        self.validate_transports()?;
        self.loss_model()?;
        self.validate_rate_changes()?;
        if self.trace.as_ref().is_some_and(|t| t.every_ns == 0) {
            return Err(bad("trace.every", "must be at least 1ns"));
        }
        let line = rate_from_gbps(self.host_bps() as f64 / 1e9);
        for name in self.cc.keys() {
            self.controller(name, line)?;
        }
        self.stride_config().map(|_| ())
    }

    /// `[topology]`: the fields its `kind` requires, in range.
    fn validate_topology(&self) -> Result<(), ScenarioError> {
        let t = &self.topology;
        positive("topology.host_gbps", t.host_gbps)?;
        match t.kind {
            TopologyKind::Dumbbell => {
                let s = need(t.senders, "topology.senders", "dumbbell")?;
                let r = need(t.receivers, "topology.receivers", "dumbbell")?;
                if s == 0 || r == 0 {
                    return Err(bad(
                        "topology.senders",
                        "senders and receivers must be at least 1",
                    ));
                }
                positive(
                    "topology.bottleneck_gbps",
                    need(t.bottleneck_gbps, "topology.bottleneck_gbps", "dumbbell")?,
                )?;
            }
            TopologyKind::LeafSpine => {
                if need(t.leaves, "topology.leaves", "leaf_spine")? < 2 {
                    return Err(bad("topology.leaves", "must be at least 2"));
                }
                if need(t.spines, "topology.spines", "leaf_spine")? == 0 {
                    return Err(bad("topology.spines", "must be at least 1"));
                }
                if need(t.hosts_per_leaf, "topology.hosts_per_leaf", "leaf_spine")? == 0 {
                    return Err(bad("topology.hosts_per_leaf", "must be at least 1"));
                }
                positive(
                    "topology.fabric_gbps",
                    need(t.fabric_gbps, "topology.fabric_gbps", "leaf_spine")?,
                )?;
            }
            TopologyKind::FatTree => {
                let k = need(t.k, "topology.k", "fat_tree")?;
                if k < 2 || k % 2 != 0 {
                    return Err(bad("topology.k", "must be even and at least 2"));
                }
                if need(t.hosts_per_edge, "topology.hosts_per_edge", "fat_tree")? == 0 {
                    return Err(bad("topology.hosts_per_edge", "must be at least 1"));
                }
                positive(
                    "topology.fabric_gbps",
                    need(t.fabric_gbps, "topology.fabric_gbps", "fat_tree")?,
                )?;
            }
        }
        Ok(())
    }

    /// `[queue]`: buffers of at least one packet, a consistent RED profile.
    fn validate_queue(&self) -> Result<(), ScenarioError> {
        if self.queue.buffer_packets == 0 {
            return Err(bad("queue.buffer_packets", "must be at least 1"));
        }
        if self.queue.shared_buffer_packets == Some(0) {
            return Err(bad("queue.shared_buffer_packets", "must be at least 1"));
        }
        if let Some((lo, hi, p)) = self.queue.red {
            if lo >= hi || !(0.0..=1.0).contains(&p) {
                return Err(bad("queue.red", "needs kmin < kmax and 0 <= pmax <= 1"));
            }
        }
        Ok(())
    }

    /// `[workload]`: the fields its `kind` requires, in range.
    fn validate_workload(&self) -> Result<(), ScenarioError> {
        let Some(w) = &self.workload else {
            if self.is_mixed() {
                return Ok(());
            }
            return Err(bad(
                "workload",
                "required (or [group.NAME] sections: groups of flows with a transport each)",
            ));
        };
        match w.kind {
            WorkloadKind::Poisson => {
                match (&w.cdf, w.bytes) {
                    (Some(_), Some(_)) => {
                        return Err(bad(
                            "workload.bytes",
                            "give either `cdf` (sizes from a distribution) or `bytes` (one size)",
                        ))
                    }
                    (None, None) => {
                        return Err(bad(
                            "workload.cdf",
                            "required when kind = \"poisson\" (or `bytes` for a fixed size)",
                        ))
                    }
                    (None, Some(0)) => return Err(bad("workload.bytes", "must be at least 1")),
                    _ => {}
                }
                let load = need(w.load, "workload.load", "poisson")?;
                if !(load > 0.0 && load <= 1.0) {
                    return Err(bad("workload.load", "must be in (0, 1]"));
                }
                if need(w.flows, "workload.flows", "poisson")? == 0 {
                    return Err(bad("workload.flows", "must be at least 1"));
                }
            }
            WorkloadKind::Permutation => {
                need(w.bytes, "workload.bytes", "permutation")?;
            }
            WorkloadKind::Incast => {
                need(w.bytes, "workload.bytes", "incast")?;
                let senders = need(w.senders, "workload.senders", "incast")?;
                if senders == 0 || senders + 1 > self.hosts() {
                    return Err(bad(
                        "workload.senders",
                        format!(
                            "needs 1..={} for {} hosts",
                            self.hosts().saturating_sub(1),
                            self.hosts()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `transports`: registered names whose hosts this scenario can build.
    fn validate_transports(&self) -> Result<(), ScenarioError> {
        if self.is_mixed() {
            return Ok(());
        }
        for t in &self.transports() {
            let Some(tr) = crate::transport::find(t) else {
                return Err(bad(
                    "transports",
                    format!(
                        "unknown transport {t:?} ({})",
                        crate::transport::names().join(", ")
                    ),
                ));
            };
            tr.build(self, 0)?;
        }
        Ok(())
    }

    /// `[[rate_change]]`: times and rates in range, switches and ports that exist.
    fn validate_rate_changes(&self) -> Result<(), ScenarioError> {
        for (i, r) in self.rate_change.iter().enumerate() {
            if !(r.at_ms.is_finite() && r.at_ms >= 0.0) {
                return Err(bad(
                    &format!("rate_change[{i}].at_ms"),
                    "must be a time >= 0",
                ));
            }
            if !(r.gbps.is_finite() && r.gbps * 1e9 >= 1.0) {
                return Err(bad(&format!("rate_change[{i}].gbps"), "must be > 0"));
            }
        }
        if !self.rate_change.is_empty() {
            self.rate_schedule(&self.topology())?;
        }
        Ok(())
    }
}
