//! `[trace]` for STRIDE-family hosts: the sender's rate, STT, queueing-delay estimate and the
//! branch of Algorithm 1 its controller last took.

use stride_sim::scenario::Scenario;

const TEXT: &str = r#"
name = "trace-stride"
seed = 1
limit = "5ms"
[topology]
kind = "dumbbell"
senders = 1
receivers = 4
host_rate = "10gbit"
bottleneck_rate = "10gbit"
link_delay = "1us"
[queue]
buffer_packets = 100
ecn_k_packets = 20
mtu_bytes = 1538
[workload]
kind = "incast"
senders = 4
bytes = 1000000000
[trace]
flows = [0, 1]
every = "100us"
"#;

fn traced(cc: &str) -> Vec<stride_sim::engine::TraceSample> {
    let dir = std::env::temp_dir().join(format!("stride-sim-trace-{}-{cc}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.toml");
    std::fs::write(&path, TEXT).unwrap();
    let l = Scenario::load(&path).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let mut sim = l.sc.sim(cc, &l.flows).unwrap();
    assert!(!sim.run(5_000_000, |_, _| {}), "long-lived flows");
    sim.traces.clone()
}

#[test]
fn stride_trace_fills_rate_stt_queueing_and_branch() {
    let tr = traced("stride");
    // 5 ms every 100 us for two flows
    assert!(tr.len() >= 2 * 45, "{} samples", tr.len());
    let names = [
        "none",
        "low",
        "high",
        "grad_inc",
        "grad_dec",
        "nack",
        "timeout",
        "nack_held",
    ];
    for x in &tr {
        let r = x.trace.rate_bps.expect("rate column");
        assert!(r > 0.0 && r <= 10.5e9, "{x:?}");
        assert!(
            names.contains(&x.trace.branch.expect("branch column")),
            "{x:?}"
        );
        assert!(x.trace.cwnd_bytes.is_none() && x.trace.alpha.is_none());
    }
    // once ACKs flow, every sample has an STT, an RTT and a queueing estimate
    let late: Vec<_> = tr.iter().filter(|x| x.t >= 1_000_000).collect();
    assert!(!late.is_empty());
    for x in &late {
        let stt = x.trace.stt_ns.expect("stt column");
        let q = x.trace.queueing_ns.expect("queueing column");
        assert!(x.trace.rtt_ns.expect("rtt column") > 0.0, "{x:?}");
        assert!((0.0..1e6).contains(&q), "{x:?}");
        assert!(stt >= q, "{x:?}");
    }
    // four senders into one 10 Gbit/s link: the controller leaves its initial branch and a
    // queue builds at some point
    assert!(late.iter().any(|x| x.trace.branch != Some("none")));
    assert!(late.iter().any(|x| x.trace.queueing_ns.unwrap() > 0.0));
}

#[test]
fn other_controllers_on_stride_report_rate_and_stt_but_no_branch() {
    let tr = traced("timely");
    assert!(!tr.is_empty());
    assert!(tr
        .iter()
        .all(|x| x.trace.rate_bps.is_some() && x.trace.branch.is_none()));
    assert!(tr.iter().any(|x| x.trace.stt_ns.is_some()));
}
