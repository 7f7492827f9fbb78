//! What a validated scenario builds: the topology with its switch configuration, the flows,
//! the loss and rate schedules, and the simulator of one transport.

use super::{bad, Scenario, ScenarioError, TopologyKind, WorkloadKind};
use crate::engine::{Flow, LossModel, Sim};
use crate::net::{LinkSpec, QueueSpec, Topology};
use crate::workload::{incast, permutation, poisson, Cdf};
use std::path::{Path, PathBuf};

impl Scenario {
    /// Builds the topology (after validation).
    pub fn topology(&self) -> Topology {
        let mtu = self.queue.mtu_bytes;
        let mut topo = self.topology_without_shared_buffer(self.queue_spec());
        topo.shared_cap_bytes = self.queue.shared_buffer_packets.unwrap_or(0) * mtu;
        self.apply_switch(&mut topo);
        topo
    }

    fn topology_without_shared_buffer(&self, q: QueueSpec) -> Topology {
        let t = &self.topology;
        let g = |v: Option<u32>| v.unwrap_or(0);
        let l = |gb: f64| LinkSpec {
            rate_bps: (gb * 1e9) as u64,
            delay_ns: t.link_delay_ns,
        };
        let host = l(t.host_gbps);
        let fabric = l(t.fabric_gbps.unwrap_or(t.host_gbps));
        match t.kind {
            TopologyKind::Dumbbell => Topology::dumbbell(
                g(t.senders),
                g(t.receivers),
                host,
                l(t.bottleneck_gbps.unwrap_or(t.host_gbps)),
                q,
            ),
            TopologyKind::LeafSpine => Topology::leaf_spine(
                g(t.leaves),
                g(t.spines),
                g(t.hosts_per_leaf),
                host,
                fabric,
                q,
            ),
            TopologyKind::FatTree => {
                Topology::fat_tree(g(t.k), g(t.hosts_per_edge), host, fabric, q)
            }
        }
    }

    pub(super) fn flows(&self, dir: &Path) -> Result<Vec<Flow>, ScenarioError> {
        let Some(w) = &self.workload else {
            return Ok(self.group_flows().0);
        };
        Ok(match w.kind {
            WorkloadKind::Poisson => {
                let c = match (&w.cdf, w.bytes) {
                    (None, Some(b)) => Cdf::parse(&format!("{b} 0\n{b} 100\n"))
                        .map_err(|e| bad("workload.bytes", e))?,
                    _ => {
                        let p: PathBuf = dir.join(w.cdf.as_deref().unwrap_or_default());
                        let text = std::fs::read_to_string(&p)
                            .map_err(|e| bad("workload.cdf", format!("{}: {e}", p.display())))?;
                        Cdf::parse(&text)
                            .map_err(|e| bad("workload.cdf", format!("{}: {e}", p.display())))?
                    }
                };
                poisson(
                    &c,
                    self.hosts(),
                    self.host_bps(),
                    w.load.unwrap_or(0.5),
                    w.flows.unwrap_or(0),
                    self.seed,
                )
            }
            WorkloadKind::Permutation => permutation(self.hosts(), w.bytes.unwrap_or(0), self.seed),
            WorkloadKind::Incast => incast(w.senders.unwrap_or(0), w.bytes.unwrap_or(0)),
        })
    }

    /// The loss model of `[loss]` (after validation of its fields).
    pub fn loss_model(&self) -> Result<Option<LossModel>, ScenarioError> {
        let Some(l) = &self.loss else {
            return Ok(None);
        };
        let prob = |f: &str, v: Option<f64>, default: Option<f64>| {
            let v = v.or(default).ok_or_else(|| {
                bad(
                    &format!("loss.{f}"),
                    format!("required when model = {:?}", l.model),
                )
            })?;
            if (0.0..=1.0).contains(&v) {
                Ok(v)
            } else {
                Err(bad(&format!("loss.{f}"), "must be a probability in [0, 1]"))
            }
        };
        Ok(Some(match l.model.as_str() {
            "bernoulli" => LossModel::Bernoulli {
                p: prob("p", l.p, None)?,
            },
            "gilbert_elliott" => {
                let m = LossModel::GilbertElliott {
                    p_good_bad: prob("p_good_bad", l.p_good_bad, None)?,
                    p_bad_good: prob("p_bad_good", l.p_bad_good, None)?,
                    loss_good: prob("loss_good", l.loss_good, Some(0.0))?,
                    loss_bad: prob("loss_bad", l.loss_bad, Some(1.0))?,
                };
                if let LossModel::GilbertElliott {
                    p_good_bad,
                    p_bad_good,
                    ..
                } = m
                {
                    if p_good_bad + p_bad_good == 0.0 {
                        return Err(bad(
                            "loss.p_bad_good",
                            "p_good_bad and p_bad_good cannot both be 0",
                        ));
                    }
                }
                m
            }
            other => {
                return Err(bad(
                    "loss.model",
                    format!("{other:?}: use \"bernoulli\" or \"gilbert_elliott\""),
                ))
            }
        }))
    }

    /// `[[rate_change]]` as (time ns, port index, rate bit/s).
    pub(super) fn rate_schedule(
        &self,
        topo: &Topology,
    ) -> Result<Vec<(u64, usize, u64)>, ScenarioError> {
        let mut out = Vec::new();
        for (i, r) in self.rate_change.iter().enumerate() {
            let Some(si) = topo.switch_names.iter().position(|n| n == &r.switch) else {
                return Err(bad(
                    &format!("rate_change[{i}].switch"),
                    format!(
                        "no switch named {:?} ({})",
                        r.switch,
                        topo.switch_names.join(", ")
                    ),
                ));
            };
            let ports = &topo.switches[si].ports;
            let Some(&port) = ports.get(r.port as usize) else {
                return Err(bad(
                    &format!("rate_change[{i}].port"),
                    format!("switch {:?} has ports 0..{}", r.switch, ports.len()),
                ));
            };
            out.push(((r.at_ms * 1e6) as u64, port, (r.gbps * 1e9) as u64));
        }
        Ok(out)
    }

    /// A simulator for one transport on these flows, with watched ports set; for a mixed
    /// scenario, the simulator of its groups together (`transport` is then its
    /// [`Scenario::mixed_name`]), measured as `[coexist]` says.
    pub fn sim(&self, transport: &str, flows: &[Flow]) -> Result<Sim, ScenarioError> {
        let mixed = self.is_mixed();
        if mixed && transport != self.mixed_name() {
            return Err(bad(
                "group",
                format!(
                    "the groups run their transports together, as the one run {:?}; \
                     not as {transport:?}",
                    self.mixed_name()
                ),
            ));
        }
        if mixed && flows != self.group_flows().0 {
            return Err(bad("group", "the flows are not the groups' flows"));
        }
        let topo = self.topology();
        let mut watch = Vec::new();
        for name in &self.watch.switches {
            let Some(si) = topo.switch_names.iter().position(|n| n == name) else {
                return Err(bad("watch.switches", format!("no switch named {name:?}")));
            };
            watch.extend(topo.switches[si].ports.iter().copied());
        }
        let mut lossy = Vec::new();
        if let (Some(l), Some(_)) = (&self.loss, self.loss_model()?) {
            for name in &l.switches {
                let Some(si) = topo.switch_names.iter().position(|n| n == name) else {
                    return Err(bad("loss.switches", format!("no switch named {name:?}")));
                };
                lossy.extend(topo.switches[si].ports.iter().copied());
            }
            for &h in &l.hosts {
                if h >= topo.hosts {
                    return Err(bad(
                        "loss.hosts",
                        format!("no host {h} ({} hosts)", topo.hosts),
                    ));
                }
                lossy.push(topo.host_port[h as usize]);
            }
            if l.switches.is_empty() && l.hosts.is_empty() {
                lossy.extend(0..topo.ports.len());
            }
        }
        let stacks = if mixed {
            self.mixed_stacks()?
        } else {
            self.stacks(transport)?
        };
        let mut sim = Sim::new(topo, stacks, flows.to_vec(), self.seed);
        if mixed {
            self.install_meter(&mut sim)?;
        }
        if let Some(m) = self.loss_model()? {
            for p in lossy {
                sim.set_loss(p, m);
            }
        }
        for (at, port, bps) in self.rate_schedule(&sim.topo)? {
            sim.change_rate_at(at, port, bps);
        }
        sim.watch = watch;
        sim.watch_every = self.watch.every_ns;
        if let Some(t) = &self.trace {
            if t.every_ns == 0 {
                return Err(bad("trace.every", "must be at least 1ns"));
            }
            for &f in &t.flows {
                if f as usize >= flows.len() {
                    return Err(bad(
                        "trace.flows",
                        format!("no flow {f} ({} flows)", flows.len()),
                    ));
                }
            }
            for &h in &t.hosts {
                if h >= self.hosts() {
                    return Err(bad(
                        "trace.hosts",
                        format!("no host {h} ({} hosts)", self.hosts()),
                    ));
                }
            }
            let mut sel: Vec<u32> = (0..flows.len() as u32)
                .filter(|&i| t.flows.contains(&i) || t.hosts.contains(&flows[i as usize].src))
                .collect();
            sel.dedup();
            sim.trace_flows = sel;
            sim.trace_every = t.every_ns;
        }
        Ok(sim)
    }
}
