//! Validation of the simulator and of the transports in it. Each test can fail.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use stride_proto::cc::{rate_from_gbps, CcConfig, StrideParams};
use stride_sim::engine::{Flow, HostStack, Sim};
use stride_sim::net::{LinkSpec, QueueSpec, Topology};
use stride_sim::stride::StrideHost;
use stride_sim::tcp::{TcpConfig, TcpHost, Variant};

const G10: u64 = 10_000_000_000;

fn queue() -> QueueSpec {
    QueueSpec {
        cap_bytes: 100 * 1538,
        ecn_k_bytes: 30 * 1538,
        red: None,
    }
}

fn stride_cfg() -> stride_proto::Config {
    stride_proto::Config {
        cc: CcConfig::Stride(StrideParams::for_line_rate(rate_from_gbps(10.0))),
        min_rto_ns: 1_000_000,
        ..stride_proto::Config::default()
    }
}

fn hosts(kind: &str, n: u32) -> Vec<Box<dyn HostStack>> {
    let reg = Rc::new(RefCell::new(HashMap::new()));
    (0..n)
        .map(|i| -> Box<dyn HostStack> {
            let tcp = |v| {
                Box::new(TcpHost::new(
                    i,
                    TcpConfig {
                        variant: v,
                        mss: 1460,
                        init_cwnd: 10,
                        min_rto_ns: 1_000_000,
                        init_rto_ns: 10_000_000,
                    },
                )) as Box<dyn HostStack>
            };
            match kind {
                "stride" => Box::new(StrideHost::new(i, stride_cfg(), 7, reg.clone())),
                "newreno" => tcp(Variant::NewReno),
                "dctcp" => tcp(Variant::Dctcp { g: 1.0 / 16.0 }),
                "vegas" => tcp(Variant::Vegas {
                    alpha: 2.0,
                    beta: 4.0,
                }),
                _ => unreachable!(),
            }
        })
        .collect()
}

fn dumbbell(senders: u32) -> Topology {
    let l = LinkSpec {
        rate_bps: G10,
        delay_ns: 1_000,
    };
    Topology::dumbbell(senders, 1, l, l, queue())
}

#[test]
fn one_flow_reaches_line_rate() {
    for kind in ["stride", "dctcp", "newreno", "vegas"] {
        let bytes = 20_000_000u64;
        let flows = vec![Flow {
            src: 0,
            dst: 1,
            bytes,
            start: 0,
        }];
        let mut sim = Sim::new(dumbbell(1), hosts(kind, 2), flows, 1);
        assert!(
            sim.run(1_000_000_000, |_, _| {}),
            "{kind}: flow did not complete"
        );
        let fct = sim.done[0] as f64;
        // payload goodput against the payload share of the line rate
        let payload_share = if kind == "stride" {
            1440.0 / 1538.0
        } else {
            1460.0 / 1538.0
        };
        let goodput = bytes as f64 * 8.0 / fct * 1e9;
        let frac = goodput / (G10 as f64 * payload_share);
        println!(
            "{kind}: {:.3} of line rate, fct {:.0} us, drops {}",
            frac,
            fct / 1e3,
            sim.stats.drops
        );
        assert!(frac >= 0.95, "{kind}: {frac:.3} of line rate");
    }
}
