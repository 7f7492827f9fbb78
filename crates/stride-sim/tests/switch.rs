//! Switch features: PFC (lossless incast, resume below XON, pause propagation through a
//! tree), the per-packet port path, INT stamping and the QCN congestion point. Each test can
//! fail.
use stride_sim::control::{Pause, QcnFeedback};
use stride_sim::engine::{Ctx, Flow, HostStack, PfcEvent, Sim};
use stride_sim::net::{
    LinkSpec, Packet, Payload, PfcSpec, QueueSpec, Topology, CONTROL_FRAME_WIRE,
};
use stride_sim::qdisc::{QcnCp, QcnParams};
use stride_sim::tcp::dctcp::Dctcp;
use stride_sim::tcp::newreno::NewReno;
use stride_sim::tcp::{Congestion, DelAck, TcpConfig, TcpHost};

const G10: u64 = 10_000_000_000;
const MTU: u64 = 1538;

fn link() -> LinkSpec {
    LinkSpec {
        rate_bps: G10,
        delay_ns: 1_000,
    }
}

fn queue(packets: u64) -> QueueSpec {
    QueueSpec {
        cap_bytes: packets * MTU,
        ecn_k_bytes: 0,
        red: None,
    }
}

fn tcp_hosts(n: u32, kind: &str) -> Vec<Box<dyn HostStack>> {
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
    (0..n)
        .map(|i| match kind {
            "newreno" => tcp(i, NewReno),
            "dctcp" => tcp(i, Dctcp::new(1.0 / 16.0, 1.0)),
            _ => unreachable!(),
        })
        .collect()
}

fn pfc(xoff_packets: u64, xon_packets: u64) -> PfcSpec {
    PfcSpec {
        xoff_bytes: xoff_packets * MTU,
        xon_bytes: xon_packets * MTU,
        headroom_bytes: None,
        mtu_bytes: MTU,
    }
}

/// `n` senders on the left switch of a dumbbell send `bytes` each to the one receiver.
fn incast(n: u32, bytes: u64, with_pfc: Option<PfcSpec>) -> Sim {
    let mut topo = Topology::dumbbell(n, 1, link(), link(), queue(20));
    if let Some(p) = with_pfc {
        topo.enable_pfc(p);
    }
    let flows = (0..n)
        .map(|i| Flow {
            src: i,
            dst: n,
            bytes,
            start: 0,
        })
        .collect();
    Sim::new(topo, tcp_hosts(n + 1, "newreno"), flows, 1)
}

#[test]
fn pfc_incast_loses_no_packet() {
    // The same incast drops packets in 20-packet drop-tail queues without PFC...
    let mut sim = incast(16, 500_000, None);
    assert!(sim.run(2_000_000_000, |_, _| {}));
    assert!(sim.stats.drops > 0, "the baseline must lose packets");
    // ...and loses none with PFC at the same thresholds.
    let mut sim = incast(16, 500_000, Some(pfc(10, 8)));
    assert!(sim.run(2_000_000_000, |_, _| {}), "every flow completes");
    assert_eq!(sim.stats.drops, 0);
    assert!(sim.stats.pause_frames > 0);
    // the host NICs were the ports paused
    let paused_nics = (0..16)
        .filter(|&h| sim.topo.ports[sim.topo.host_port[h]].pauses > 0)
        .count();
    assert!(paused_nics > 8, "{paused_nics} of 16 sender NICs paused");
    assert!(sim.stats.pause_ns > 0);
}

#[test]
fn a_too_small_headroom_loses_packets() {
    // Headroom is what keeps PFC lossless: with none, bytes in flight during the pause drop.
    let mut p = pfc(10, 8);
    p.headroom_bytes = Some(0);
    let mut sim = incast(16, 500_000, Some(p));
    assert!(sim.run(2_000_000_000, |_, _| {}));
    assert!(sim.stats.headroom_drops > 0);
}

#[test]
fn a_paused_port_resumes_below_xon() {
    let spec = pfc(10, 6);
    let mut sim = incast(8, 300_000, Some(spec));
    sim.pfc_trace = Some(Vec::new());
    assert!(sim.run(2_000_000_000, |_, _| {}));
    let trace = sim.pfc_trace.take().unwrap();
    let (mut xoff, mut xon) = (0, 0);
    for e in &trace {
        if let PfcEvent::Sent {
            xoff: off,
            in_bytes,
            ..
        } = *e
        {
            if off {
                xoff += 1;
                assert!(in_bytes >= spec.xoff_bytes, "XOFF at {in_bytes}");
            } else {
                xon += 1;
                assert!(in_bytes <= spec.xon_bytes, "XON at {in_bytes}");
            }
        }
    }
    assert!(xoff > 0);
    assert_eq!(xoff, xon, "every pause was lifted");
    // Each XON reaches the paused port one serialization + propagation later and the port
    // restarts then.
    for e in &trace {
        if let PfcEvent::Sent {
            t,
            link,
            xoff: false,
            ..
        } = *e
        {
            let l = &sim.topo.ports[link];
            let at = t + l.ser_ns(CONTROL_FRAME_WIRE) + l.delay_ns;
            assert!(
                trace.contains(&PfcEvent::Obeyed {
                    t: at,
                    port: link,
                    paused: false
                }),
                "port {link} did not restart at {at}"
            );
        }
    }
    for p in &sim.topo.ports {
        assert_eq!(p.paused_until, 0, "no port left paused");
        assert_eq!(p.in_bytes, 0, "ingress accounting drains to zero");
    }
}

/// FatTree(4), 2 hosts per edge: every host but 0 sends to host 0 (incast), and host 15
/// (pod 3) sends to host 9 (pod 2), a destination nobody else uses.
fn tree(with_pfc: bool) -> (Sim, Vec<u64>) {
    let mut topo = Topology::fat_tree(4, 2, link(), link(), queue(30));
    if with_pfc {
        topo.enable_pfc(pfc(12, 9));
    }
    let mut flows: Vec<Flow> = (1..16)
        .map(|i| Flow {
            src: i,
            dst: 0,
            bytes: 2_000_000,
            start: 0,
        })
        .collect();
    flows.push(Flow {
        src: 15,
        dst: 9,
        bytes: 2_000_000,
        start: 0,
    });
    let mut sim = Sim::new(topo, tcp_hosts(16, "newreno"), flows, 1);
    assert!(sim.run(5_000_000_000, |_, _| {}));
    let done = sim.done.clone();
    (sim, done)
}

#[test]
fn pause_propagation_stalls_a_whole_tree() {
    let (sim, done) = tree(true);
    assert_eq!(sim.stats.drops, 0);
    let t = &sim.topo;
    let name = |n: u32| {
        if n < t.hosts {
            "host".to_string()
        } else {
            t.switch_names[(n - t.hosts) as usize].clone()
        }
    };
    let layer = |n: u32| {
        name(n)
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
            .to_string()
    };
    let mut paused = std::collections::BTreeSet::new();
    for p in &t.ports {
        if p.pauses > 0 {
            paused.insert((layer(p.from), layer(p.to)));
        }
    }
    // The hot spot is edge0.0 -> host 0. Pauses climb from it to the top of the tree and
    // down into every other pod, to the sending hosts.
    for hop in [
        ("agg", "edge"),  // pod 0 aggregation paused by edge0.0
        ("core", "agg"),  // cores paused by pod 0's aggregation
        ("agg", "core"),  // other pods' aggregation paused by the cores
        ("edge", "agg"),  // edge uplinks paused
        ("host", "edge"), // sender NICs paused
    ] {
        assert!(
            paused.contains(&(hop.0.to_string(), hop.1.to_string())),
            "no {}->{} port paused: {paused:?}",
            hop.0,
            hop.1
        );
    }
    // Host NICs of every pod were paused.
    for pod in 0..4 {
        let any = (pod * 4..pod * 4 + 4)
            .filter(|&h| h != 0)
            .any(|h| t.ports[t.host_port[h as usize]].pauses > 0);
        assert!(any, "no host NIC paused in pod {pod}");
    }
    // The victim flow 15 -> 9 goes nowhere near the hot spot but shares host 15's paused NIC
    // and pod 3's paused uplinks: head-of-line blocking makes it much slower than without PFC.
    let (_, done_nopfc) = tree(false);
    let victim = done[15];
    eprintln!(
        "tree: {} of {} ports paused, {} pause frames, victim FCT {victim} ns with PFC, {} ns without",
        t.ports.iter().filter(|p| p.pauses > 0).count(),
        t.ports.len(),
        sim.stats.pause_frames,
        done_nopfc[15]
    );
    assert!(
        victim > 2 * done_nopfc[15],
        "victim {victim} ns with PFC, {} ns without",
        done_nopfc[15]
    );
}

/// Sends `count` full packets to `dst` as fast as the NIC takes them (no congestion
/// control), optionally asking for INT; records what it receives.
struct Blaster {
    id: u32,
    dst: u32,
    count: u32,
    int: bool,
    got: Vec<Packet>,
}

impl HostStack for Blaster {
    fn start_flow(&mut self, _: &mut Ctx, _: u32) {}
    fn receive(&mut self, _: &mut Ctx, pkt: Packet) {
        self.got.push(pkt);
    }
    fn poll_packet(&mut self, _: &mut Ctx) -> Option<Packet> {
        if self.count == 0 || self.id == self.dst {
            return None;
        }
        self.count -= 1;
        Some(Packet {
            src: self.id,
            dst: self.dst,
            wire: MTU as u32,
            hash: u64::from(self.id),
            ect: true,
            ce: false,
            payload: Payload::Tcp(Default::default()),
            int: self.int.then(Default::default),
            hops: 0,
        })
    }
    fn next_wake(&mut self) -> Option<u64> {
        None
    }
    fn wake(&mut self, _: &mut Ctx) {}
}

/// `senders` blasters on a dumbbell whose bottleneck runs at `bottleneck` bit/s; returns
/// the simulator after `ns` of simulated time, and what each host received.
fn blast(
    senders: u32,
    bottleneck: u64,
    count: u32,
    int: bool,
    setup: impl FnOnce(&mut Topology),
) -> (Sim, Vec<Vec<Packet>>) {
    let mut topo = Topology::dumbbell(
        senders,
        1,
        link(),
        LinkSpec {
            rate_bps: bottleneck,
            delay_ns: 1_000,
        },
        queue(1000),
    );
    setup(&mut topo);
    let n = senders + 1;
    let got = std::rc::Rc::new(std::cell::RefCell::new(vec![Vec::new(); n as usize]));
    struct Rec(Blaster, std::rc::Rc<std::cell::RefCell<Vec<Vec<Packet>>>>);
    impl HostStack for Rec {
        fn start_flow(&mut self, c: &mut Ctx, f: u32) {
            self.0.start_flow(c, f)
        }
        fn receive(&mut self, c: &mut Ctx, p: Packet) {
            self.1.borrow_mut()[self.0.id as usize].push(p.clone());
            self.0.receive(c, p)
        }
        fn poll_packet(&mut self, c: &mut Ctx) -> Option<Packet> {
            self.0.poll_packet(c)
        }
        fn next_wake(&mut self) -> Option<u64> {
            None
        }
        fn wake(&mut self, _: &mut Ctx) {}
    }
    let hosts = (0..n)
        .map(|i| {
            Box::new(Rec(
                Blaster {
                    id: i,
                    dst: senders,
                    count,
                    int,
                    got: Vec::new(),
                },
                got.clone(),
            )) as Box<dyn HostStack>
        })
        .collect();
    // One flow per sender only starts the engine polling its NIC.
    let flows = (0..senders)
        .map(|i| Flow {
            src: i,
            dst: senders,
            bytes: 1,
            start: 0,
        })
        .collect();
    let mut sim = Sim::new(topo, hosts, flows, 1);
    sim.run(1_000_000_000, |_, _| {});
    let g = got.borrow().clone();
    (sim, g)
}

#[test]
fn int_records_one_hop_per_switch_and_the_queue() {
    let (_, got) = blast(2, G10, 200, true, Topology::enable_int);
    let rx = &got[2];
    assert_eq!(rx.len(), 400);
    let mut last_tx = 0;
    let mut max_q = 0;
    for p in rx {
        let hops = p.int.as_ref().expect("INT stack kept").hops();
        assert_eq!(hops.len(), 2, "left and right switch");
        assert!(hops[0].ts_ns < hops[1].ts_ns);
        assert!(hops.iter().all(|h| h.rate_bps == G10));
        // the bottleneck port's byte counter only grows, one packet at a time
        assert_eq!(hops[0].tx_bytes, last_tx + MTU);
        last_tx = hops[0].tx_bytes;
        max_q = max_q.max(hops[0].qlen_bytes);
        // nothing queues after the bottleneck
        assert_eq!(hops[1].qlen_bytes, 0);
    }
    // two line-rate senders into one line-rate link: the queue reaches about half the bytes
    assert!(max_q > 150 * MTU, "max queue {max_q}");
    // no stack when INT is off at the switches, and none requested: no allocation
    let (_, got) = blast(2, G10, 50, false, Topology::enable_int);
    assert!(got[2].iter().all(|p| p.int.is_none()));
    let (_, got) = blast(2, G10, 50, true, |_| {});
    assert!(got[2].iter().all(|p| p.int.as_ref().unwrap().n == 0));
}

#[test]
fn qcn_cp_sends_feedback_to_the_sources_of_a_congested_port() {
    let qcn = |t: &mut Topology| t.set_qdisc(|_| Box::new(QcnCp::new(QcnParams::default())));
    // one sender into a link of the same rate: no queue, no feedback
    let (sim, got) = blast(1, G10, 2000, false, qcn);
    assert_eq!(sim.stats.qcn_feedback, 0);
    assert!(got[0].is_empty());
    // two senders into one link: the bottleneck queue grows past Q_eq, both get feedback
    let (sim, got) = blast(2, G10, 2000, false, qcn);
    let bottleneck = sim
        .topo
        .port_between(sim.topo.hosts, sim.topo.hosts + 1)
        .unwrap();
    assert!(sim.stats.qcn_feedback > 10);
    for (h, rx) in got.iter().enumerate().take(2) {
        let fbs: Vec<_> = rx
            .iter()
            .filter_map(|p| {
                let q = p.payload.control::<QcnFeedback>()?;
                Some((q.fb, q.cpid, q.flow_src, q.flow_dst))
            })
            .collect();
        assert!(!fbs.is_empty(), "host {h} got no feedback");
        for (fb, cpid, src, dst) in fbs {
            assert!((1..=63).contains(&fb));
            assert_eq!(cpid as usize, bottleneck);
            assert_eq!((src, dst), (h as u32, 2));
        }
    }
    assert_eq!(
        got[0].len() + got[1].len(),
        sim.stats.qcn_feedback as usize,
        "every frame delivered"
    );
}

#[test]
fn per_packet_ports_give_the_fast_path_result() {
    // INT on (per-packet switch ports) with no packet asking for INT must not change what a
    // FIFO work-conserving port does.
    let run = |per_packet: bool| {
        let mut topo = Topology::dumbbell(
            4,
            1,
            link(),
            link(),
            QueueSpec {
                cap_bytes: 40 * MTU,
                ecn_k_bytes: 10 * MTU,
                red: None,
            },
        );
        if per_packet {
            topo.enable_int();
        }
        let flows = (0..4)
            .map(|i| Flow {
                src: i,
                dst: 4,
                bytes: 1_000_000 + u64::from(i) * 100_000,
                start: u64::from(i) * 10_000,
            })
            .collect();
        let mut sim = Sim::new(topo, tcp_hosts(5, "dctcp"), flows, 1);
        assert!(sim.run(1_000_000_000, |_, _| {}));
        (sim.done.clone(), sim.stats.ecn_marks, sim.stats.drops)
    };
    let fast = run(false);
    assert!(fast.1 > 0, "marks happen");
    assert_eq!(fast, run(true));
}

const SCN: &str = r#"
name = "sw"
seed = 2
transports = ["newreno"]
[topology]
kind = "dumbbell"
senders = 8
receivers = 1
host_gbps = 10.0
bottleneck_gbps = 10.0
link_delay_ns = 1000
[queue]
buffer_packets = 20
ecn_k_packets = 10
mtu_bytes = 1538
[workload]
kind = "incast"
senders = 8
bytes = 300000
"#;

fn scenario(name: &str, text: &str) -> Result<stride_sim::scenario::Loaded, String> {
    let dir = std::env::temp_dir().join(format!("stride-sim-switch-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, text).unwrap();
    let r = stride_sim::scenario::Scenario::load(&path).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    r
}

#[test]
fn switch_sections_name_their_bad_fields() {
    for (name, extra, field) in [
        (
            "xon",
            "[pfc]\nxoff_bytes = 1000\nxon_bytes = 1000\n",
            "pfc.xon_bytes",
        ),
        (
            "xoff0",
            "[pfc]\nxoff_bytes = 0\nxon_bytes = 0\n",
            "pfc.xoff_bytes",
        ),
        (
            "pfcunk",
            "[pfc]\nxoff_bytes = 10\nxon_bytes = 5\nxonn = 3\n",
            "xonn",
        ),
        (
            "redk",
            "[red]\nkmin_bytes = 5000\nkmax_bytes = 5000\npmax = 0.1\n",
            "red.kmax_bytes",
        ),
        (
            "redp",
            "[red]\nkmin_bytes = 5000\nkmax_bytes = 9000\npmax = 1.5\n",
            "red.pmax",
        ),
        ("qeq", "[qcn]\nq_eq_bytes = 0\n", "qcn.q_eq_bytes"),
        ("qj", "[qcn]\njitter = 1.0\n", "qcn.jitter"),
        ("qunk", "[qcn]\nqeq = 5\n", "qeq"),
        (
            "qred",
            "[qcn]\n[red]\nkmin_bytes = 1\nkmax_bytes = 2\npmax = 0.1\n",
            "qcn",
        ),
        ("mark", "[ecn]\nmark_at = \"egress\"\n", "ecn.mark_at"),
        ("intunk", "[int]\nenable = true\n", "enable"),
    ] {
        match scenario(name, &format!("{SCN}{extra}")) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => assert!(e.contains(field), "{name}: {e}"),
        }
    }
    let no_k = SCN.replace("ecn_k_packets = 10", "ecn_k_packets = 0");
    let e = scenario("deq", &format!("{no_k}[ecn]\nmark_at = \"dequeue\"\n"))
        .err()
        .unwrap();
    assert!(e.contains("ecn.mark_at"), "{e}");
}

#[test]
fn scenario_sections_reach_the_switches() {
    let run = |name: &str, extra: &str| {
        let l = scenario(name, &format!("{SCN}{extra}")).unwrap();
        let mut sim = l.sc.sim("newreno", &l.flows).unwrap();
        assert!(sim.run(2_000_000_000, |_, _| {}));
        sim
    };
    let plain = run("plain", "");
    assert!(plain.stats.drops > 0);
    let pfc = run("pfc", "[pfc]\nxoff_bytes = 15000\nxon_bytes = 12000\n");
    assert_eq!(pfc.stats.drops, 0);
    assert!(pfc.stats.pause_frames > 0);
    let sw = pfc.topo.hosts as usize;
    assert!(pfc
        .topo
        .ports
        .iter()
        .filter(|p| p.from as usize >= sw)
        .all(|p| p.per_packet));
    let qcn = run("qcn", "[qcn]\n");
    assert!(qcn.stats.qcn_feedback > 0);
    let deq = run("deq", "[ecn]\nmark_at = \"dequeue\"\n");
    assert!(deq
        .topo
        .ports
        .iter()
        .any(|p| p.qdisc().name() == "ecn-step-dequeue"));
    let red = run(
        "red",
        "[red]\nkmin_bytes = 5000\nkmax_bytes = 200000\npmax = 0.01\n",
    );
    assert!(red.topo.ports.iter().any(|p| p.qdisc().name() == "red-ecn"));
    let int = run("int", "[int]\nenabled = true\n");
    assert!(int.topo.ports.iter().any(|p| p.int));
}

/// `queue.discipline` picks a discipline by name: naming the one the settings imply changes
/// nothing, naming another runs it, and an unknown name or another discipline's section is
/// an error naming its field.
#[test]
fn queue_discipline_picks_by_name() {
    let named = |name: &str, extra: &str| {
        let q = format!("mtu_bytes = 1538\ndiscipline = \"{name}\"\n");
        scenario(name, &(SCN.replace("mtu_bytes = 1538\n", &q) + extra))
    };
    let run = |l: stride_sim::scenario::Loaded| {
        let mut sim = l.sc.sim("dctcp", &l.flows).unwrap();
        assert!(sim.run(2_000_000_000, |_, _| {}));
        let names: Vec<&str> = sim.topo.ports.iter().map(|p| p.qdisc().name()).collect();
        (sim.stats.clone(), names.join(","))
    };
    let implied = run(scenario("implied", SCN).unwrap());
    let ecn = run(named("ecn", "").unwrap());
    assert_eq!(format!("{:?}", implied.0), format!("{:?}", ecn.0));
    assert_eq!(implied.1, ecn.1);
    assert!(ecn.0.ecn_marks > 0);
    let tail = run(named("droptail", "").unwrap());
    assert_eq!(tail.0.ecn_marks, 0);
    assert!(!tail.1.contains("ecn"));
    let qcn = run(named("qcn", "").unwrap());
    assert!(qcn.0.qcn_feedback > 0);
    let qcn_section = run(scenario("qcn-section", &format!("{SCN}[qcn]\n")).unwrap());
    assert_eq!(format!("{:?}", qcn.0), format!("{:?}", qcn_section.0));
    for (name, extra, field) in [
        ("pie", "", "queue.discipline"),
        ("red", "", "queue.discipline"),
        ("droptail", "[qcn]\n", "`qcn`"),
    ] {
        match named(name, extra) {
            Ok(_) => panic!("{name}: accepted"),
            Err(e) => assert!(e.contains(field), "{name}: {e}"),
        }
    }
}

/// Host 1 of a one-to-one dumbbell: sends its switch one timed pause frame, and records when
/// each packet arrives.
struct Pauser {
    sent: bool,
    pause_ns: u64,
    arrivals: std::rc::Rc<std::cell::RefCell<Vec<u64>>>,
}

impl HostStack for Pauser {
    fn start_flow(&mut self, _: &mut Ctx, _: u32) {}
    fn receive(&mut self, c: &mut Ctx, _: Packet) {
        self.arrivals.borrow_mut().push(c.now);
    }
    fn poll_packet(&mut self, _: &mut Ctx) -> Option<Packet> {
        if self.sent {
            return None;
        }
        self.sent = true;
        let pause = Pause {
            pause_ns: self.pause_ns,
        };
        Some(Packet::control(1, 0, 0, pause))
    }
    fn next_wake(&mut self) -> Option<u64> {
        None
    }
    fn wake(&mut self, _: &mut Ctx) {}
}

#[test]
fn a_timed_pause_ends_by_itself() {
    let mut topo = Topology::dumbbell(1, 1, link(), link(), queue(1000));
    topo.enable_pfc(pfc(500, 400));
    let arrivals = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let hosts: Vec<Box<dyn HostStack>> = vec![
        Box::new(Blaster {
            id: 0,
            dst: 1,
            count: 100,
            int: false,
            got: Vec::new(),
        }),
        Box::new(Pauser {
            sent: false,
            pause_ns: 50_000,
            arrivals: arrivals.clone(),
        }),
    ];
    let flows = vec![
        Flow {
            src: 0,
            dst: 1,
            bytes: 1,
            start: 0,
        },
        Flow {
            src: 1,
            dst: 0,
            bytes: 1,
            start: 0,
        },
    ];
    let mut sim = Sim::new(topo, hosts, flows, 1);
    sim.run(1_000_000_000, |_, _| {});
    let a = arrivals.borrow();
    assert_eq!(a.len(), 100, "every packet delivered after the pause");
    // the frame reaches the right switch after its serialization and the link delay; the
    // port to host 1 then sends nothing for 50 us
    let port = sim.topo.port_between(3, 1).unwrap();
    let start = link_ser(CONTROL_FRAME_WIRE) + 1_000;
    assert_eq!(sim.topo.ports[port].pauses, 1);
    assert_eq!(sim.topo.ports[port].pause_ns, 50_000);
    let first = a[0];
    assert!(first >= start + 50_000, "first arrival {first}");
    assert!(
        first <= start + 50_000 + link_ser(MTU as u32) + 1_000,
        "resumed late: {first}"
    );
}

fn link_ser(bytes: u32) -> u64 {
    (u64::from(bytes) * 8 * 1_000_000_000).div_ceil(G10)
}

#[test]
fn dctcp_runs_with_marking_at_dequeue() {
    let k = 10 * MTU;
    let mut topo = Topology::dumbbell(4, 1, link(), link(), queue(100));
    topo.set_qdisc(|_| Box::new(stride_sim::qdisc::EcnStep::new(k, true)));
    let bottleneck = topo.port_between(5, 6).unwrap();
    assert!(topo.ports[bottleneck].per_packet);
    let flows = (0..4)
        .map(|i| Flow {
            src: i,
            dst: 4,
            bytes: 3_000_000,
            start: 0,
        })
        .collect();
    let mut sim = Sim::new(topo, tcp_hosts(5, "dctcp"), flows, 1);
    assert!(sim.run(1_000_000_000, |_, _| {}));
    let p = &sim.topo.ports[bottleneck];
    assert!(p.marks > 0);
    assert_eq!(sim.stats.drops, 0);
    // DCTCP holds the queue near K instead of filling the 100-packet buffer
    assert!(
        p.max_qbytes < 40 * MTU,
        "max queue {} packets",
        p.max_qbytes / MTU
    );
}
