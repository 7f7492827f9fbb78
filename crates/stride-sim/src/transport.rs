//! The transport registry: every transport the simulator runs, by name. Scenario `transports`,
//! `stride sim compare --cc` and the validation of both read this one list: STRIDE's two
//! profiles, the TCP models (one module each, defining a [`Transport`]), and every host
//! controller of `stride_proto::cc`'s registry on STRIDE's connection, derived from its entry:
//! a new controller registered there runs here without an edit.

use crate::engine::HostStack;
use crate::net::WIRE_OVERHEAD;
use crate::scenario::{Scenario, ScenarioError};
use crate::stride::StrideHost;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use stride_proto::cc::{Fabric, Registered, StrideParams};

/// Host stacks for `hosts` hosts of a scenario (an error names the bad scenario field).
pub type BuildFn = fn(&Scenario, u32) -> Result<Vec<Box<dyn HostStack>>, ScenarioError>;

/// How a transport's host stacks are built.
#[derive(Clone, Copy)]
pub enum Build {
    /// By a function of its own (STRIDE's profiles, the TCP models).
    Fn(BuildFn),
    /// A host controller of `stride_proto::cc`'s registry on STRIDE's connection.
    Registered(&'static Registered),
}

/// One registered transport.
#[derive(Clone, Copy)]
pub struct Transport {
    /// Name in scenario files and on the command line.
    pub name: &'static str,
    /// One line for help texts.
    pub about: &'static str,
    /// Builds the host stacks.
    pub build: Build,
}

impl Transport {
    /// Host stacks for `n` hosts; called with 0 hosts it only validates the scenario for this
    /// transport.
    pub fn build(&self, sc: &Scenario, n: u32) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
        match self.build {
            Build::Fn(f) => f(sc, n),
            Build::Registered(r) => registered(sc, n, r),
        }
    }

    /// Whether `all` lists it (false for variants of a listed controller).
    pub fn listed(&self) -> bool {
        match self.build {
            Build::Fn(_) => true,
            Build::Registered(r) => r.listed,
        }
    }
}

/// The TCP models, in the order tables list them.
const TCP: &[Transport] = &[
    crate::tcp::dctcp::TRANSPORT,
    crate::tcp::vegas::TRANSPORT,
    crate::tcp::newreno::TRANSPORT,
    crate::tcp::aimd::TRANSPORT,
];

/// Every transport, in the order tables list them: STRIDE's profiles, the TCP models, then the
/// registry's other controllers in registry order.
pub fn transports() -> Vec<Transport> {
    let mut v = vec![STRIDE, STRIDE_PAPER];
    v.extend_from_slice(TCP);
    for r in stride_proto::cc::registry() {
        if v.iter().all(|t| t.name != r.name) {
            v.push(Transport {
                name: r.name,
                about: r.about,
                build: Build::Registered(r),
            });
        }
    }
    v
}

/// The transport called `name`.
pub fn find(name: &str) -> Option<Transport> {
    transports().into_iter().find(|t| t.name == name)
}

/// Every registered name, in table order.
pub fn names() -> Vec<&'static str> {
    transports().iter().map(|t| t.name).collect()
}

/// STRIDE: one unmodified `stride_proto::Endpoint` per host, configured by `[stride]`.
pub const STRIDE: Transport = Transport {
    name: "stride",
    about: "STRIDE (stride-proto's endpoint, unmodified)",
    build: Build::Fn(|sc, n| Ok(hosts(sc, n, sc.stride_config()?, |h| h))),
};

/// STRIDE's `stride-paper` profile: Algorithm 1 exactly as the paper (spec §8.4), i.e. the
/// `[stride]` parameters with every profile mechanism of spec §8.6 switched off.
pub const STRIDE_PAPER: Transport = Transport {
    name: "stride-paper",
    about: "STRIDE, paper profile (Algorithm 1 as spec §8.4, no §8.6 mechanism)",
    build: Build::Fn(|sc, n| Ok(hosts(sc, n, sc.stride_config()?.into_paper(), |h| h))),
};

/// `n` hosts running `cfg`, each finished by `with`.
fn hosts(
    sc: &Scenario,
    n: u32,
    cfg: stride_proto::Config,
    with: impl Fn(StrideHost) -> StrideHost,
) -> Vec<Box<dyn HostStack>> {
    let reg = Rc::new(RefCell::new(HashMap::new()));
    (0..n)
        .map(|i| {
            Box::new(with(StrideHost::new(i, cfg.clone(), sc.seed, reg.clone())))
                as Box<dyn HostStack>
        })
        .collect()
}

/// A controller of `stride_proto::cc`'s registry on STRIDE's connection, as its entry says:
/// - the signals it needs must be in the scenario (ECN-capable packets and CNPs for `ecn`,
///   an `[int]` section for `int`, a `[qcn]` section for `qcn`);
/// - `rdma_nic`: go-back-N recovery and the whole free buffer advertised, as RoCE NICs do
///   (STRIDE's receive share is STRIDE's mechanism);
/// - `int`: an ACK per packet unless `[stride] ack_interval` says otherwise (each ACK echoes
///   its packet's records; with STRIDE's 64 KB interval a window of one base-RTT BDP stalls
///   between ACKs), and strict per-packet pacing (the authors' NIC model schedules the next
///   packet one packet time at the current rate later, `rdma-hw.cc`:591-598);
/// - parameters: its defaults at the hosts' line rate, then its `fit` to this fabric (the
///   largest base RTT, the frame overhead of this simulator's wire), then `[stride]`'s
///   controller keys when it extends STRIDE's parameters, then `[cc.NAME]`.
///
/// The hosts learn their paths' switch counts (Swift's topology scaling; a no-op for the
/// others).
fn registered(
    sc: &Scenario,
    n: u32,
    r: &'static Registered,
) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
    if r.needs.int && !sc.int.as_ref().is_some_and(|i| i.enabled) {
        // Without INT no record ever comes: a line-rate sender.
        return Err(ScenarioError(format!(
            "field `transports`: {} needs an [int] section with enabled = true",
            r.name
        )));
    }
    if r.needs.qcn && !sc.discipline().feedback {
        // Without congestion points no feedback ever comes: a line-rate sender.
        return Err(ScenarioError(format!(
            "field `transports`: {} needs a [qcn] section (switch congestion points)",
            r.name
        )));
    }
    let mut cfg = sc.stride_config()?;
    if r.rdma_nic {
        cfg.recovery = stride_proto::Recovery::GoBackN;
        cfg.rx_share = 0;
    }
    if r.needs.int {
        if sc.stride.ack_interval.is_none() {
            cfg.ack_interval = 1;
        }
        cfg.burst_bytes = 0;
    }
    let line = stride_proto::cc::rate_from_gbps(sc.host_bps() as f64 / 1e9);
    cfg.cc = controller(sc, r, line, u32::from(cfg.max_payload), n > 0)?;
    Ok(hosts(sc, n, cfg, |h| {
        h.with_ect(r.needs.ecn)
            .with_int(r.needs.int)
            .with_path_hops(true)
    }))
}

/// The registered controller `r` at line rate `line` as the simulated hosts run it (see
/// [`registered`]); `fit`: apply the registry's fit to this fabric (skipped when only
/// validating, where the topology is not built).
fn controller(
    sc: &Scenario,
    r: &Registered,
    line: u32,
    max_payload: u32,
    fit: bool,
) -> Result<stride_proto::cc::CcConfig, ScenarioError> {
    let mut c = (r.make)(line);
    if let (Some(f), true) = (r.fit, fit) {
        let hdr = stride_proto::wire::HEADER_LEN as u32 + WIRE_OVERHEAD;
        let fabric = Fabric {
            line,
            base_rtt_ns: sc.topology().max_base_rtt(hdr + max_payload, hdr),
            frame_overhead: hdr,
        };
        f(&mut c, &fabric);
    }
    let specs = c.specs();
    if StrideParams::PARAMS
        .iter()
        .all(|p| specs.iter().any(|q| q.name == p.name))
    {
        sc.apply_stride_params(&mut c)?;
    }
    sc.apply_cc(r.name, &mut c)?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qcn_byte_counter_counts_frames_as_the_simulator_sends_them() {
        let line = stride_proto::cc::rate_from_gbps(1.0);
        let sc: Scenario = toml::from_str(
            "name = \"t\"\n[topology]\nkind = \"dumbbell\"\nsenders = 1\nreceivers = 1\n\
             host_gbps = 1.0\nbottleneck_gbps = 1.0\nlink_delay_ns = 1000\n\
             [workload]\nkind = \"incast\"\nsenders = 1\nbytes = 1\n",
        )
        .unwrap();
        let r = stride_proto::cc::find("qcn").unwrap();
        let mut cc = controller(&sc, r, line, 1000, true).unwrap();
        cc.set("jitter_pct", "0").unwrap();
        let mut c = cc.build(0);
        c.on_qcn_feedback(0, 32);
        let cut = c.rate();
        // A DATA packet of `payload` bytes is a packet of this size on the simulated wire
        // (`StrideHost::poll_packet`).
        let payload = 1000u32;
        let wire = stride_proto::wire::HEADER_LEN as u32 + payload + WIRE_OVERHEAD;
        let mut n = 0u32;
        while c.rate() == cut {
            c.on_sent(0, payload);
            n += 1;
            assert!(n < 1000, "no byte-counter cycle");
        }
        assert_eq!(n, 150_000u32.div_ceil(wire));
    }
}
