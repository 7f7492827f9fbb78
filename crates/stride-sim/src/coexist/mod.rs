//! Mixed runs: groups of flows with a transport each share one simulated network
//! (`[group.NAME]` sections, measured as `[coexist]` says). Each host runs the transport of
//! the groups its flows belong to (a flow's source and destination run the same one; a host
//! runs one), so a STRIDE pair and a NewReno pair meet in the same switch queues. Groups may
//! start and leave at given times; the run is cut into phases at those times, and each phase is
//! measured after it settles ([`report`]): throughput per group, Jain's index between the
//! groups present, the bottleneck's queueing delay and drops.
//!
//! ```toml
//! [group.stride]
//! transport = "stride"
//! pairs = [[0, 2]]
//!
//! [group.tcp]
//! transport = "newreno"
//! pairs = [[1, 3]]
//! stop = "50ms"
//! ```

pub mod report;

use crate::engine::{Flow, HostStack, Meter, Sim};
use crate::net::Topology;
use crate::scenario::{
    CoexistCfg, GroupCfg, Scenario, ScenarioError, TopologyKind, LONG_LIVED_BYTES,
};
use std::collections::BTreeMap;

/// The default period of the bottleneck queue samples, ns (or `limit` / [`QUEUE_SAMPLES`]
/// when that is longer).
const QUEUE_EVERY_NS: u64 = 10_000;
/// Queue samples over `limit` at the default period, at most.
const QUEUE_SAMPLES: u64 = 1_000_000;
/// Records of either kind a run may take (each costs memory until the report).
const MAX_SAMPLES: u64 = 4_000_000;

fn bad(field: &str, why: impl std::fmt::Display) -> ScenarioError {
    ScenarioError::field(field, why)
}

/// One phase of a mixed run: the groups present do not change within it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Start, ns.
    pub from: u64,
    /// End, ns.
    pub to: u64,
    /// Start of the measured part (after the phase settled), ns.
    pub measured_from: u64,
    /// The groups present through the whole phase (indices in name order).
    pub present: Vec<usize>,
}

impl Scenario {
    /// The groups in name order.
    fn groups(&self) -> impl Iterator<Item = (&String, &GroupCfg)> {
        self.group.iter()
    }

    /// The name of the mixed run: its groups' transports, each once, in group order, joined
    /// by `+` (`stride+newreno`).
    pub fn mixed_name(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for (_, g) in self.groups() {
            if !names.contains(&g.transport.as_str()) {
                names.push(&g.transport);
            }
        }
        names.join("+")
    }

    /// Checks the `[group.NAME]` and `[coexist]` sections, and what they exclude
    /// (`transports`, `[workload]`).
    pub(crate) fn validate_groups(&self) -> Result<(), ScenarioError> {
        if !self.is_mixed() {
            if self.coexist.is_some() {
                return Err(bad("coexist", "needs [group.NAME] sections"));
            }
            return Ok(());
        }
        if self.transports.is_some() {
            return Err(bad(
                "transports",
                "not with [group.NAME] sections: each group names its transport",
            ));
        }
        if self.workload.is_some() {
            return Err(bad(
                "workload",
                "not with [group.NAME] sections: the groups are the traffic",
            ));
        }
        let mut host_runs: BTreeMap<u32, (&str, &str)> = BTreeMap::new();
        for (name, g) in self.groups() {
            self.validate_group(name, g)?;
            for &(s, d) in &g.pairs {
                for h in [s, d] {
                    let (t, other) = *host_runs.entry(h).or_insert((&g.transport, name));
                    if t != g.transport {
                        return Err(bad(
                            &format!("group.{name}.pairs"),
                            format!(
                                "host {h} runs {t} (group `{other}`); a host runs one transport"
                            ),
                        ));
                    }
                }
            }
        }
        let c = self.coexist.clone().unwrap_or_default();
        for (field, v) in [("every", c.every), ("queue_every", c.queue_every)] {
            if v == Some(0) {
                return Err(bad(&format!("coexist.{field}"), "must be at least 1ns"));
            }
        }
        let (every, queue_every, _) = self.coexist_periods();
        let limit = (self.limit_ms * 1e6) as u64;
        for (field, period) in [("every", every), ("queue_every", queue_every)] {
            if limit / period > MAX_SAMPLES {
                return Err(bad(
                    &format!("coexist.{field}"),
                    format!(
                        "{} samples over `limit`; at most {MAX_SAMPLES} (a longer period or a \
                         shorter limit)",
                        limit / period
                    ),
                ));
            }
        }
        self.bottleneck(&self.topology()).map(|_| ())
    }

    fn validate_group(&self, name: &str, g: &GroupCfg) -> Result<(), ScenarioError> {
        let field = |f: &str| format!("group.{name}.{f}");
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad(
                &format!("group.{name}"),
                "a group name has letters, digits, `_` and `-` only",
            ));
        }
        let Some(tr) = crate::transport::find(&g.transport) else {
            return Err(bad(
                &field("transport"),
                format!(
                    "unknown transport {:?} ({})",
                    g.transport,
                    crate::transport::names().join(", ")
                ),
            ));
        };
        tr.build(self, 0).map_err(|e| {
            bad(
                &field("transport"),
                e.0.trim_start_matches("field `transports`: "),
            )
        })?;
        if g.pairs.is_empty() {
            return Err(bad(
                &field("pairs"),
                "needs at least one [source, destination]",
            ));
        }
        let hosts = self.hosts();
        for &(s, d) in &g.pairs {
            if s >= hosts || d >= hosts {
                return Err(bad(
                    &field("pairs"),
                    format!("[{s}, {d}]: hosts are 0..{}", hosts - 1),
                ));
            }
            if s == d {
                return Err(bad(
                    &field("pairs"),
                    format!("[{s}, {d}]: a host to itself"),
                ));
            }
        }
        if g.flows == 0 {
            return Err(bad(&field("flows"), "must be at least 1"));
        }
        if g.bytes == Some(0) {
            return Err(bad(
                &field("bytes"),
                "must be at least 1 (absent: long-lived)",
            ));
        }
        if g.stop.is_some_and(|t| t <= g.start) {
            return Err(bad(&field("stop"), "must be after `start`"));
        }
        Ok(())
    }

    /// The flows of the groups (in name order, each pair's flows in turn) and each flow's
    /// group index.
    pub(crate) fn group_flows(&self) -> (Vec<Flow>, Vec<u32>) {
        let mut flows = Vec::new();
        let mut class = Vec::new();
        for (gi, (_, g)) in self.groups().enumerate() {
            for &(src, dst) in &g.pairs {
                for _ in 0..g.flows {
                    flows.push(Flow {
                        src,
                        dst,
                        bytes: g.bytes.unwrap_or(LONG_LIVED_BYTES),
                        start: g.start,
                    });
                    class.push(gi as u32);
                }
            }
        }
        (flows, class)
    }

    /// The host stacks of a mixed run: each host runs its groups' transport (a host in no
    /// group, which never sends, runs the first group's).
    pub(crate) fn mixed_stacks(&self) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
        let n = self.hosts();
        let first = self.groups().next().map(|(_, g)| g.transport.as_str());
        let mut runs: Vec<Option<&str>> = vec![first; n as usize];
        for (_, g) in self.groups() {
            for &(s, d) in &g.pairs {
                runs[s as usize] = Some(&g.transport);
                runs[d as usize] = Some(&g.transport);
            }
        }
        let mut out: Vec<Option<Box<dyn HostStack>>> = (0..n).map(|_| None).collect();
        let mut built: Vec<&str> = Vec::new();
        for (name, g) in self.groups() {
            if built.contains(&g.transport.as_str()) {
                continue;
            }
            built.push(&g.transport);
            // One build per transport: its hosts share what the transport shares in a run.
            let tr = crate::transport::find(&g.transport)
                .ok_or_else(|| bad(&format!("group.{name}.transport"), "unknown transport"))?;
            let stacks = tr.build(self, n)?;
            for (h, s) in stacks.into_iter().enumerate() {
                if runs[h] == Some(g.transport.as_str()) {
                    out[h] = Some(s);
                }
            }
        }
        Ok(out
            .into_iter()
            .map(|s| s.expect("every host runs a transport"))
            .collect())
    }

    /// The `[coexist]` settings, defaults filled in: (throughput interval, queue sample
    /// period, settle time if fixed), ns.
    pub(crate) fn coexist_periods(&self) -> (u64, u64, Option<u64>) {
        let c = self.coexist.clone().unwrap_or_default();
        let limit = (self.limit_ms * 1e6) as u64;
        (
            c.every.unwrap_or(limit / 20).max(1),
            c.queue_every
                .unwrap_or((limit / QUEUE_SAMPLES).max(QUEUE_EVERY_NS)),
            c.settle,
        )
    }

    /// The measured port: `[coexist] switch` and `port`, or a dumbbell's bottleneck (the
    /// left switch's port to the right one).
    pub fn bottleneck(&self, topo: &Topology) -> Result<usize, ScenarioError> {
        let c: CoexistCfg = self.coexist.clone().unwrap_or_default();
        match (c.switch, c.port) {
            (Some(sw), Some(port)) => {
                let Some(si) = topo.switch_names.iter().position(|n| *n == sw) else {
                    return Err(bad(
                        "coexist.switch",
                        format!("no switch named {sw:?} ({})", topo.switch_names.join(", ")),
                    ));
                };
                let ports = &topo.switches[si].ports;
                ports.get(port as usize).copied().ok_or_else(|| {
                    bad(
                        "coexist.port",
                        format!("switch {sw:?} has ports 0..{}", ports.len()),
                    )
                })
            }
            (Some(_), None) => Err(bad("coexist.port", "required with `switch`")),
            (None, Some(_)) => Err(bad("coexist.switch", "required with `port`")),
            (None, None) if self.topology.kind == TopologyKind::Dumbbell => {
                let right = topo.hosts + 1;
                Ok(topo.switches[0]
                    .ports
                    .iter()
                    .copied()
                    .find(|&p| topo.ports[p].to == right)
                    .expect("a dumbbell's bottleneck"))
            }
            (None, None) => Err(bad(
                "coexist.switch",
                "required (with `port`) unless the topology is a dumbbell",
            )),
        }
    }

    /// The phases of a mixed run that ends at `end` ns.
    pub fn phases(&self, end: u64) -> Vec<Phase> {
        let (_, _, settle) = self.coexist_periods();
        let mut cuts = vec![0, end];
        for (_, g) in self.groups() {
            cuts.push(g.start);
            cuts.extend(g.stop);
        }
        cuts.retain(|&t| t <= end);
        cuts.sort_unstable();
        cuts.dedup();
        cuts.windows(2)
            .map(|w| {
                let (from, to) = (w[0], w[1]);
                let present = self
                    .groups()
                    .enumerate()
                    .filter(|(_, (_, g))| g.start <= from && g.stop.is_none_or(|s| s >= to))
                    .map(|(i, _)| i)
                    .collect();
                Phase {
                    from,
                    to,
                    measured_from: (from + settle.unwrap_or((to - from) / 5)).min(to),
                    present,
                }
            })
            .collect()
    }

    /// Sets up the measurement of a mixed run on `sim` (built on [`Scenario::group_flows`]):
    /// its meter and the groups' stops.
    pub(crate) fn install_meter(&self, sim: &mut Sim) -> Result<(), ScenarioError> {
        let (_, class) = self.group_flows();
        let (every, queue_every, _) = self.coexist_periods();
        let limit = (self.limit_ms * 1e6) as u64;
        let mut times: Vec<u64> = (0..=limit / every).map(|k| k * every).collect();
        for p in self.phases(limit) {
            times.extend([p.from, p.measured_from, p.to]);
        }
        let port = self.bottleneck(&sim.topo)?;
        sim.meter = Some(Box::new(Meter::new(
            class.clone(),
            self.group.len(),
            times,
            port,
            queue_every,
        )));
        let stops: Vec<Option<u64>> = self.groups().map(|(_, g)| g.stop).collect();
        for (f, &c) in class.iter().enumerate() {
            if let Some(t) = stops[c as usize] {
                sim.stop_flow_at(t, f as u32);
            }
        }
        Ok(())
    }
}
