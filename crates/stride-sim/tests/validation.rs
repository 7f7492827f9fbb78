//! Validation of the simulator and of the transports in it. Each test can fail.
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use stride_proto::cc::{rate_from_gbps, CcConfig, StrideParams};
use stride_sim::engine::{Flow, HostStack, LossModel, Sim};
use stride_sim::net::{LinkSpec, QueueSpec, Topology};
use stride_sim::report::rows;
use stride_sim::stride::StrideHost;
use stride_sim::tcp::aimd::Aimd;
use stride_sim::tcp::dctcp::Dctcp;
use stride_sim::tcp::newreno::NewReno;
use stride_sim::tcp::vegas::Vegas;
use stride_sim::tcp::{Congestion, DelAck, TcpConfig, TcpHost};

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
            fn tcp<C: Congestion>(i: u32, cc: C) -> Box<dyn HostStack> {
                Box::new(TcpHost::new(
                    i,
                    TcpConfig {
                        mss: 1460,
                        init_cwnd: 10,
                        min_rto_ns: 1_000_000,
                        init_rto_ns: 10_000_000,
                        delack: Some(DelAck {
                            timeout_ns: 200_000,
                            quickack: 16,
                        }),
                    },
                    cc,
                ))
            }
            match kind {
                "stride" => Box::new(StrideHost::new(i, stride_cfg(), 7, reg.clone())),
                "newreno" => tcp(i, NewReno),
                "dctcp" => tcp(i, Dctcp::new(1.0 / 16.0, 1.0)),
                "vegas" => tcp(i, Vegas::new(2.0, 4.0)),
                "aimd" => tcp(
                    i,
                    Aimd {
                        step: 1.0,
                        rto_ns: 1_000_000,
                    },
                ),
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
    for kind in ["stride", "dctcp", "newreno", "vegas", "aimd"] {
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
    for kind in ["stride", "dctcp", "newreno", "vegas", "aimd"] {
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
        sim.stats.packets_delivered + sim.stats.drops + sim.stats.link_losses + sim.in_flight()
    );
}

#[test]
fn same_seed_same_result() {
    let a = shared_bottleneck("stride", 3, 2_000_000, 11);
    let b = shared_bottleneck("stride", 3, 2_000_000, 11);
    assert_eq!(a.done, b.done);
    assert_eq!((a.events, a.drops, a.sent), (b.events, b.drops, b.sent));
}

/// Regression: a timestamp of 0 was read as "no timestamp", so flows starting at
/// t = 0 took no RTT sample from the handshake and a lost first window waited out the 10 ms
/// initial RTO. With the sample, the RTO is the 1 ms minimum and a 64-sender incast whose first
/// windows overflow the buffer finishes well before the initial RTO could have fired.
#[test]
fn incast_at_time_zero_does_not_wait_for_the_initial_rto() {
    for kind in ["dctcp", "newreno"] {
        let n = 64;
        let flows = (0..n)
            .map(|i| Flow {
                src: i,
                dst: n,
                bytes: 64_000,
                start: 0,
            })
            .collect();
        let mut sim = Sim::new(dumbbell(n), hosts(kind, n + 1), flows, 1);
        assert!(sim.run(1_000_000_000, |_, _| {}), "{kind}: incomplete");
        let last = *sim.done.iter().max().unwrap();
        println!(
            "{kind}: incast done at {} us, drops {}",
            last / 1000,
            sim.stats.drops
        );
        assert!(
            sim.stats.drops > 0,
            "{kind}: the first windows must overflow the buffer for this test to mean anything"
        );
        assert!(
            last < 10_000_000,
            "{kind}: incast finished at {last} ns, after the 10 ms initial RTO"
        );
    }
}

/// Links with a loss model lose packets at the model's long-run rate, counted apart from queue
/// drops; every packet is still accounted for; Gilbert-Elliott losses come in bursts of mean
/// length 1 / p_bad_good (with loss_bad = 1, loss_good = 0), Bernoulli ones do not.
#[test]
fn loss_models_lose_at_their_rate_and_ge_in_bursts() {
    let models = [
        LossModel::Bernoulli { p: 0.01 },
        LossModel::GilbertElliott {
            p_good_bad: 0.002,
            p_bad_good: 0.2,
            loss_good: 0.0,
            loss_bad: 1.0,
        },
    ];
    let mut bursts = Vec::new();
    for m in models {
        let flows = vec![Flow {
            src: 0,
            dst: 1,
            bytes: 150_000_000,
            start: 0,
        }];
        let mut sim = Sim::new(dumbbell(1), hosts("newreno", 2), flows, 3);
        let nic = sim.topo.host_port[0];
        sim.set_loss(nic, m);
        assert!(sim.run(10_000_000_000, |_, _| {}), "{m:?}: unfinished");
        let st = &sim.stats;
        let sent0 = sim.topo.ports[nic].tx_bytes / 1538; // ~ data packets host 0 sent
        let rate = st.link_losses as f64 / sent0 as f64;
        println!(
            "{m:?}: {} losses of ~{sent0} packets = {rate:.4}",
            st.link_losses
        );
        assert_eq!(st.drops, 0, "losses must not be counted as queue drops");
        assert!(
            (rate - m.mean_loss()).abs() < 0.25 * m.mean_loss(),
            "{m:?}: loss rate {rate:.4} against {:.4}",
            m.mean_loss()
        );
        assert_eq!(
            st.packets_sent,
            st.packets_delivered + st.drops + st.link_losses + sim.in_flight()
        );
        let mean_burst = st.link_losses as f64 / st.link_loss_bursts as f64;
        println!("{m:?}: mean burst {mean_burst:.2} packets");
        bursts.push(mean_burst);
    }
    assert!(bursts[0] < 1.1, "Bernoulli losses are isolated: {bursts:?}");
    // GE with loss_bad = 1: a bad period lasts 1 / p_bad_good = 5 packets on average (about
    // 200 bursts here: the standard error of the mean is about 0.3, the tolerance 4 of them).
    assert!(
        (bursts[1] - 5.0).abs() < 1.2,
        "Gilbert-Elliott bursts: {bursts:?}"
    );
}

/// Every flow reports what its receiving application read, finished or not, for every
/// transport: the per-flow counts add up to the total, and a run cut short leaves flows with
/// part of their bytes and a positive goodput.
#[test]
fn per_flow_delivered_bytes_for_unfinished_flows() {
    for kind in ["stride", "dctcp", "newreno", "vegas", "aimd"] {
        let flows = (0..4)
            .map(|i| Flow {
                src: i,
                dst: 4,
                bytes: 10_000_000,
                start: 0,
            })
            .collect();
        let mut sim = Sim::new(dumbbell(4), hosts(kind, 5), flows, 2);
        assert!(!sim.run(2_000_000, |_, _| {}), "{kind}: must be cut short");
        let sum: u64 = sim.flow_delivered.iter().sum();
        assert_eq!(sum, sim.stats.bytes_delivered, "{kind}");
        let r = rows(&sim);
        for row in &r {
            assert!(row.fct_ns.is_none(), "{kind}");
            assert!(
                row.delivered > 0 && row.delivered < row.flow.bytes,
                "{kind}: {} of {}",
                row.delivered,
                row.flow.bytes
            );
            assert!(row.goodput_gbps > 0.0 && row.goodput_gbps < 10.0, "{kind}");
        }
        // 2 ms of a shared 10 Gbit/s bottleneck: at most 2.5 MB of payload.
        assert!(sum <= 2_500_000, "{kind}: {sum} bytes");
    }
}

/// NewReno's window under independent random loss p: the square-root law of Mathis, Semke,
/// Mahdavi and Ott (CCR 1997), throughput = (MSS / RTT) * sqrt(3/2) / sqrt(p) for an ACK per
/// segment. The law ignores timeouts and assumes one loss per window, so it is checked where
/// that holds (p <= 1e-3, windows of 40-90 segments below the 130-segment bandwidth-delay
/// product, so no queue and RTT = the base RTT); tolerance +-25 %, the spread between periodic
/// and random loss in their paper. Measured: ratio 1.05-1.08. (At p = 2e-3 NewReno without SACK
/// falls to 0.74 of the law: several losses per window cost one RTT each.)
#[test]
fn newreno_follows_the_square_root_law_under_random_loss() {
    let l = LinkSpec {
        rate_bps: G10,
        delay_ns: 25_000,
    };
    for p in [0.0002, 0.0005, 0.001] {
        let topo = Topology::dumbbell(1, 1, l, l, queue());
        let (fwd, _) = topo.path_latency(0, 1, 1538);
        let (back, _) = topo.path_latency(1, 0, 78);
        let rtt = (fwd + back) as f64 * 1e-9;
        let cfg = TcpConfig {
            mss: 1460,
            init_cwnd: 10,
            min_rto_ns: 1_000_000,
            init_rto_ns: 10_000_000,
            delack: None,
        };
        let hs: Vec<Box<dyn HostStack>> = (0..2)
            .map(|i| Box::new(TcpHost::new(i, cfg, NewReno)) as Box<dyn HostStack>)
            .collect();
        let flows = vec![Flow {
            src: 0,
            dst: 1,
            bytes: u64::MAX / 2,
            start: 0,
        }];
        let mut sim = Sim::new(topo, hs, flows, 5);
        let nic = sim.topo.host_port[0];
        sim.set_loss(nic, LossModel::Bernoulli { p });
        let t = 2_000_000_000;
        sim.run(t, |_, _| {});
        let got = sim.flow_delivered[0] as f64 * 8.0 / (t as f64 * 1e-9);
        let law = 1460.0 * 8.0 / rtt * (1.5f64).sqrt() / p.sqrt();
        println!(
            "p {p}: rtt {:.1} us, goodput {:.3} Gbit/s, law {:.3} Gbit/s, ratio {:.3}",
            rtt * 1e6,
            got / 1e9,
            law / 1e9,
            got / law
        );
        assert!(law < 0.7 * 10e9, "the law must predict a loss-bound window");
        assert!(
            (got / law - 1.0).abs() < 0.25,
            "p {p}: goodput {got:.3e} against the law's {law:.3e}"
        );
    }
}

/// The incast ideal: N senders to one receiver through one 10 Gbit/s port can finish no
/// earlier than N x bytes of wire data at the port's rate (plus one RTT of handshake). A
/// transport that works (no RTO stalls, the port busy throughout) stays close to it: the
/// tolerance is 1.6x, which covers loss recovery at a 1 ms minimum RTO in this 32-sender burst
/// while still failing if the initial RTO (10 ms, the ts = 0 bug) idles the port. Measured:
/// DCTCP 1.11x, NewReno 1.26x, STRIDE 1.51x (3811 drops: 32 senders starting at its start rate
/// overflow the 100-packet port; worth its own look).
#[test]
fn incast_finishes_near_the_ideal() {
    let n = 32;
    let bytes = 256_000u64;
    for kind in ["stride", "dctcp", "newreno"] {
        let flows = (0..n)
            .map(|i| Flow {
                src: i,
                dst: n,
                bytes,
                start: 0,
            })
            .collect();
        let mut sim = Sim::new(dumbbell(n), hosts(kind, n + 1), flows, 1);
        assert!(sim.run(1_000_000_000, |_, _| {}), "{kind}: incomplete");
        let last = *sim.done.iter().max().unwrap() as f64;
        let payload = if kind == "stride" { 1440.0 } else { 1460.0 };
        let wire = f64::from(n) * (bytes as f64 / payload).ceil() * 1538.0;
        let ideal = wire * 8.0 / 10.0; // ns at 10 Gbit/s
        println!(
            "{kind}: incast {:.0} us, ideal {:.0} us, ratio {:.2}, drops {}",
            last / 1e3,
            ideal / 1e3,
            last / ideal,
            sim.stats.drops
        );
        assert!(last >= ideal, "{kind}: faster than the line rate allows");
        assert!(last < 1.6 * ideal, "{kind}: {:.2}x the ideal", last / ideal);
    }
}
