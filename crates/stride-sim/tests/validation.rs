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
        cc: CcConfig::stride(StrideParams::for_line_rate(rate_from_gbps(10.0))),
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

struct Shared {
    jain: f64,
    q_p50: u64,
    q_p99: u64,
    drops: u64,
    sent: u64,
    delivered: u64,
    bytes_delivered: u64,
    events: u64,
    done: Vec<u64>,
}

/// `n` senders start `bytes` each at t=0 towards one receiver through a 10G bottleneck.
fn shared_bottleneck(kind: &str, n: u32, bytes: u64, seed: u64) -> Shared {
    let topo = dumbbell(n);
    let bottleneck = topo
        .ports
        .iter()
        .position(|p| p.from == topo.hosts && p.to == topo.hosts + 1)
        .unwrap();
    let flows = (0..n)
        .map(|i| Flow {
            src: i,
            dst: n,
            bytes,
            start: u64::from(i) * 1_000,
        })
        .collect();
    let mut sim = Sim::new(topo, hosts(kind, n + 1), flows, seed);
    sim.watch = vec![bottleneck];
    sim.watch_every = 1_000;
    assert!(
        sim.run(10_000_000_000, |_, _| {}),
        "{kind}: flows did not complete"
    );
    let thr: Vec<f64> = sim
        .flows
        .iter()
        .zip(&sim.done)
        .map(|(f, &d)| f.bytes as f64 / (d - f.start) as f64)
        .collect();
    let s: f64 = thr.iter().sum();
    let s2: f64 = thr.iter().map(|x| x * x).sum();
    // queue samples while every flow is still running
    let first_done = *sim.done.iter().min().unwrap();
    let mut q: Vec<u64> = sim
        .samples
        .iter()
        .filter(|x| x.t > 2_000_000 && x.t < first_done)
        .map(|x| x.bytes)
        .collect();
    q.sort_unstable();
    let pick = |f: f64| {
        q.get(((q.len() as f64 * f) as usize).min(q.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Shared {
        jain: s * s / (f64::from(n) * s2),
        q_p50: pick(0.5),
        q_p99: pick(0.99),
        drops: sim.stats.drops,
        sent: sim.stats.packets_sent,
        delivered: sim.stats.packets_delivered,
        bytes_delivered: sim.stats.bytes_delivered,
        events: sim.stats.events,
        done: sim.done.clone(),
    }
}

#[test]
fn long_flows_share_a_bottleneck_fairly() {
    for kind in ["stride", "dctcp"] {
        let r = shared_bottleneck(kind, 4, 10_000_000, 3);
        println!("{kind}: Jain {:.3}", r.jain);
        assert!(
            r.jain >= 0.95,
            "{kind}: Jain index {:.3} < 0.95 (completion times {:?})",
            r.jain,
            r.done
        );
    }
}

#[test]
fn dctcp_holds_the_queue_near_k() {
    let k = queue().ecn_k_bytes;
    let r = shared_bottleneck("dctcp", 4, 10_000_000, 3);
    println!("dctcp queue p50 {} p99 {} K {}", r.q_p50, r.q_p99, k);
    assert!(
        r.q_p50 >= k / 2 && r.q_p50 <= 2 * k,
        "median queue {} B, K = {k} B",
        r.q_p50
    );
    assert_eq!(
        r.drops, 0,
        "DCTCP with K well below the buffer must not drop"
    );
}

#[test]
fn stride_keeps_queueing_delay_within_its_thresholds() {
    let r = shared_bottleneck("stride", 4, 10_000_000, 3);
    let t_high_ns = u64::from(StrideParams::for_line_rate(rate_from_gbps(10.0)).t_high);
    // bytes queued at 10 Gbit/s = ns of queueing delay x 1.25
    let p99_ns = r.q_p99 * 8 / 10;
    println!(
        "stride queue p99 {} B = {} ns, t_high {} ns",
        r.q_p99, p99_ns, t_high_ns
    );
    assert!(
        p99_ns <= t_high_ns,
        "p99 queueing delay {p99_ns} ns above t_high {t_high_ns} ns"
    );
}

#[test]
fn conservation_of_bytes_and_packets() {
    for kind in ["stride", "dctcp", "newreno", "vegas"] {
        let r = shared_bottleneck(kind, 4, 3_000_000, 5);
        assert_eq!(
            r.bytes_delivered,
            4 * 3_000_000,
            "{kind}: bytes delivered to applications"
        );
        assert!(
            r.sent >= r.delivered + r.drops,
            "{kind}: more packets out of the network than into it"
        );
        println!(
            "{kind}: sent {} delivered {} dropped {}",
            r.sent, r.delivered, r.drops
        );
    }
    // every packet is accounted for: delivered, dropped, or still in the network
    let topo = dumbbell(4);
    let flows = (0..4)
        .map(|i| Flow {
            src: i,
            dst: 4,
            bytes: 2_000_000,
            start: 0,
        })
        .collect();
    let mut sim = Sim::new(topo, hosts("newreno", 5), flows, 9);
    assert!(sim.run(10_000_000_000, |_, _| {}));
    assert!(
        sim.stats.drops > 0,
        "the incast must overflow the buffer for this check to mean something"
    );
    assert_eq!(
        sim.stats.packets_sent,
        sim.stats.packets_delivered + sim.stats.drops + sim.in_flight()
    );
}

#[test]
fn same_seed_same_result() {
    let a = shared_bottleneck("stride", 3, 2_000_000, 11);
    let b = shared_bottleneck("stride", 3, 2_000_000, 11);
    assert_eq!(a.done, b.done);
    assert_eq!((a.events, a.drops, a.sent), (b.events, b.drops, b.sent));
}
