//! The transport registry: every transport the simulator runs, by name. Scenario `transports`,
//! `stride sim compare --cc` and the validation of both read this one list, so a new transport
//! is one module that defines a [`Transport`] and one line in [`TRANSPORTS`].

use crate::engine::HostStack;
use crate::net::WIRE_OVERHEAD;
use crate::scenario::{Scenario, ScenarioError};
use crate::stride::StrideHost;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Host stacks for `hosts` hosts of a scenario (an error names the bad scenario field).
pub type Build = fn(&Scenario, u32) -> Result<Vec<Box<dyn HostStack>>, ScenarioError>;

/// One registered transport.
#[derive(Clone, Copy)]
pub struct Transport {
    /// Name in scenario files and on the command line.
    pub name: &'static str,
    /// One line for help texts.
    pub about: &'static str,
    /// Builds the host stacks; called with 0 hosts it only validates the parameters.
    pub build: Build,
}

/// Every transport, in the order tables list them.
pub const TRANSPORTS: &[Transport] = &[
    STRIDE,
    STRIDE_PAPER,
    crate::tcp::dctcp::TRANSPORT,
    crate::tcp::vegas::TRANSPORT,
    crate::tcp::newreno::TRANSPORT,
    crate::tcp::aimd::TRANSPORT,
    TIMELY,
    DCQCN,
    SWIFT,
    QCN,
    HPCC,
];

/// The transport called `name`.
pub fn find(name: &str) -> Option<&'static Transport> {
    TRANSPORTS.iter().find(|t| t.name == name)
}

/// Every registered name, in table order.
pub fn names() -> Vec<&'static str> {
    TRANSPORTS.iter().map(|t| t.name).collect()
}

/// STRIDE: one unmodified `stride_proto::Endpoint` per host, configured by `[stride]`.
pub const STRIDE: Transport = Transport {
    name: "stride",
    about: "STRIDE (stride-proto's endpoint, unmodified)",
    build: |sc, n| {
        let cfg = sc.stride_config()?;
        let reg = Rc::new(RefCell::new(HashMap::new()));
        Ok((0..n)
            .map(|i| {
                Box::new(StrideHost::new(i, cfg.clone(), sc.seed, reg.clone()))
                    as Box<dyn HostStack>
            })
            .collect())
    },
};

/// STRIDE's `stride-paper` profile: Algorithm 1 exactly as the paper (spec §8.4), i.e. the
/// `[stride]` parameters with every profile mechanism of spec §8.6 switched off.
pub const STRIDE_PAPER: Transport = Transport {
    name: "stride-paper",
    about: "STRIDE, paper profile (Algorithm 1 as spec §8.4, no §8.6 mechanism)",
    build: |sc, n| {
        let cfg = sc.stride_config()?.into_paper();
        let reg = Rc::new(RefCell::new(HashMap::new()));
        Ok((0..n)
            .map(|i| {
                Box::new(StrideHost::new(i, cfg.clone(), sc.seed, reg.clone()))
                    as Box<dyn HostStack>
            })
            .collect())
    },
};

/// A host controller of `stride_proto::cc::REGISTRY` on STRIDE's connection (go-back-N, like
/// RDMA's), configured by `[stride]`'s connection fields and the controller's defaults at the
/// hosts' line rate. `ect`: the hosts send ECN-capable packets and count CE marks;
/// `path_hops`: the controllers learn their path's switch count (Swift's topology scaling).
fn stride_family(
    sc: &Scenario,
    n: u32,
    cc: &str,
    ect: bool,
    path_hops: bool,
) -> Result<Vec<Box<dyn HostStack>>, ScenarioError> {
    let mut cfg = sc.stride_config()?;
    // The RDMA baselines recover as RoCE NICs do, by go-back-N, whatever STRIDE's default is,
    // and advertise their whole free buffer (STRIDE's receive share is STRIDE's mechanism).
    cfg.recovery = stride_proto::Recovery::GoBackN;
    cfg.rx_share = 0;
    let line = stride_proto::cc::rate_from_gbps(sc.host_bps() as f64 / 1e9);
    cfg.cc = controller(sc, cc, line)?;
    let reg = Rc::new(RefCell::new(HashMap::new()));
    Ok((0..n)
        .map(|i| {
            Box::new(
                StrideHost::new(i, cfg.clone(), sc.seed, reg.clone())
                    .with_ect(ect)
                    .with_path_hops(path_hops),
            ) as Box<dyn HostStack>
        })
        .collect())
}

/// The registered controller `cc` at line rate `line` with the scenario's `[cc.NAME]`
/// parameters, as the simulated hosts run it: QCN's byte counter counts frames as this
/// simulator puts them on the wire (the STRIDE header plus [`WIRE_OVERHEAD`] around each
/// payload) unless the scenario sets `frame_overhead` itself.
fn controller(
    sc: &Scenario,
    cc: &str,
    line: u32,
) -> Result<stride_proto::cc::CcConfig, ScenarioError> {
    let mut c = sc.controller(cc, line)?;
    let set = |k: &str| sc.cc.get(cc).is_some_and(|t| t.contains_key(k));
    if let Some(q) = c.params_mut::<stride_proto::cc::qcn::QcnParams>() {
        if !set("frame_overhead") {
            q.frame_overhead = stride_proto::wire::HEADER_LEN as u32 + WIRE_OVERHEAD;
        }
    }
    Ok(c)
}

/// TIMELY (Mittal et al. 2015) on STRIDE's connection: RTT-gradient rate control.
pub const TIMELY: Transport = Transport {
    name: "timely",
    about: "TIMELY (RTT gradient) on STRIDE's go-back-N connection",
    build: |sc, n| stride_family(sc, n, "timely", false, false),
};

/// DCQCN's reaction point (Zhu et al. 2015) on STRIDE's connection: ECN marks at the switches,
/// CNPs from the receiver (needs `[queue] ecn_k_packets` or RED marking).
pub const DCQCN: Transport = Transport {
    name: "dcqcn",
    about: "DCQCN reaction point (ECN -> CNP) on STRIDE's go-back-N connection",
    build: |sc, n| stride_family(sc, n, "dcqcn", true, false),
};

/// Swift (Kumar et al. 2020) on STRIDE's connection: delay target, window and pacing.
pub const SWIFT: Transport = Transport {
    name: "swift",
    about: "Swift (delay target, window + pacing) on STRIDE's go-back-N connection",
    build: |sc, n| stride_family(sc, n, "swift", false, true),
};

/// HPCC (Li et al. 2019) on STRIDE's connection: the switches stamp INT records on data
/// packets, the receiver echoes them on its ACKs (needs `[int] enabled = true`); an ACK per
/// packet unless `[stride] ack_interval` says otherwise. HPCC's T is the fabric's largest base
/// RTT (a full data packet out, its ACK back, serialisation included), as the authors'
/// simulator sets it from the topology; the start window is one line-rate BDP of that T.
pub const HPCC: Transport = Transport {
    name: "hpcc",
    about: "HPCC (INT records echoed on ACKs; needs [int]) on STRIDE's go-back-N connection",
    build: |sc, n| {
        if !sc.int.as_ref().is_some_and(|i| i.enabled) {
            // Without INT no record ever comes: a line-rate sender.
            return Err(ScenarioError(
                "field `transports`: hpcc needs an [int] section with enabled = true".into(),
            ));
        }
        let mut hosts = Vec::new();
        let mut cfg = sc.stride_config()?;
        cfg.recovery = stride_proto::Recovery::GoBackN;
        cfg.rx_share = 0;
        if sc.stride.ack_interval.is_none() {
            // HPCC acknowledges every packet (each ACK echoing its packet's records); with
            // STRIDE's 64 KB ACK interval a window of one base-RTT BDP stalls between ACKs.
            cfg.ack_interval = 1;
        }
        // The RDMA NIC paces every packet at the current rate, W/T (the authors' NIC model
        // schedules the next packet one packet time at that rate later, `rdma-hw.cc`:591-598):
        // no burst after idle.
        cfg.burst_bytes = 0;
        let line = stride_proto::cc::rate_from_gbps(sc.host_bps() as f64 / 1e9);
        cfg.cc = sc.controller("hpcc", line)?;
        if n > 0 {
            let hdr = stride_proto::wire::HEADER_LEN as u32 + crate::net::WIRE_OVERHEAD;
            let t = sc
                .topology()
                .max_base_rtt(hdr + u32::from(cfg.max_payload), hdr)
                .max(1);
            if let Some(p) = cfg.cc.params_mut::<stride_proto::cc::hpcc::HpccParams>() {
                *p = stride_proto::cc::hpcc::HpccParams::for_fabric(line, t);
            }
            // The scenario's `[cc.hpcc]` still has the last word.
            sc.apply_cc("hpcc", &mut cfg.cc)?;
        }
        let reg = Rc::new(RefCell::new(HashMap::new()));
        for i in 0..n {
            hosts.push(Box::new(
                StrideHost::new(i, cfg.clone(), sc.seed, reg.clone()).with_int(true),
            ) as Box<dyn HostStack>);
        }
        Ok(hosts)
    },
};

/// The QCN reaction point (IEEE 802.1Qau, seed 004's values) on STRIDE's connection: fed by
/// the feedback frames of the switches' congestion points (needs a `[qcn]` section).
pub const QCN: Transport = Transport {
    name: "qcn",
    about: "QCN reaction point (802.1Qau feedback frames; needs [qcn]) on STRIDE's connection",
    build: |sc, n| {
        if sc.qcn.is_none() {
            // Without congestion points no feedback ever comes: a line-rate sender.
            return Err(ScenarioError(
                "field `transports`: qcn needs a [qcn] section (switch congestion points)".into(),
            ));
        }
        stride_family(sc, n, "qcn", false, false)
    },
};

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
        let mut cc = controller(&sc, "qcn", line).unwrap();
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
