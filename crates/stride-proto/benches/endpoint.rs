//! Cost of the endpoint's zero-copy path alone, as the UDP driver uses it: a bulk transfer
//! between two `Endpoint`s in memory, the sender handing over 256 KiB chunks
//! (`write_bytes`) and producing datagrams with `poll_transmit_parts`, the receiver taking
//! a 64 KiB message of datagrams whole (`handle_segments`, as a GRO receive) and
//! reading with `read_chunks`; ACKs go back through the copying calls. Reports, median of
//! several runs, ns per DATA packet on each side (sender: `write_bytes` and
//! `poll_transmit_parts` and the ACKs it handles; receiver: `handle_segments`,
//! `read_chunks` and the ACKs it produces).
//!
//! Run: `cargo bench -p stride-proto --bench endpoint` (`-- --quick` for a short run)
use bytes::{Bytes, BytesMut};
use std::time::{Duration, Instant};
use stride_proto::cc::CcConfig;
use stride_proto::testkit::Pair;
use stride_proto::Config;
use stride_units::stats::median;

/// Returns ns per DATA packet (sender, receiver) and the DATA packets sent.
fn run(total: usize) -> (f64, f64, u64) {
    let cfg = Config {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        // The pacer is exercised but never waits.
        cc: CcConfig::fixed(u32::MAX / 2),
        ..Config::default()
    };
    let mut now = 1_000u64;
    let mut p = Pair::new(cfg);
    let (hs, hr) = p.connect(&mut now);
    let Pair {
        c: mut s,
        ca: sa,
        s: mut r,
        sa: ra,
        ..
    } = p;
    let mut buf = vec![0u8; 2048];
    let chunk = Bytes::from(vec![0x5au8; 256 * 1024]);
    let (mut written, mut read) = (0usize, 0usize);
    let mut head = vec![0u8; 2048];
    let mut parts: Vec<Bytes> = Vec::new();
    let mut msg = BytesMut::with_capacity(65_536);
    let mut lens: Vec<usize> = Vec::new();
    let mut chunks: Vec<Bytes> = Vec::new();
    let (mut t_send, mut t_recv) = (Duration::ZERO, Duration::ZERO);
    while read < total {
        // Sender: hand over chunks, build up to one GSO message of datagrams.
        let t0 = Instant::now();
        while written < total {
            let n = s
                .write_bytes(hs, &chunk.slice(..(total - written).min(chunk.len())))
                .unwrap();
            if n == 0 {
                break;
            }
            written += n;
        }
        msg.clear();
        lens.clear();
        for _ in 0..44 {
            parts.clear();
            let Some(t) = s.poll_transmit_parts(now, &mut head, &mut parts) else {
                break;
            };
            let in_parts: usize = parts.iter().map(|p| p.len()).sum();
            msg.extend_from_slice(&head[..t.len - in_parts]);
            for p in &parts {
                msg.extend_from_slice(p);
            }
            lens.push(t.len);
        }
        let t1 = Instant::now();
        // Receiver: the message arrives as one buffer (a GRO message of equal datagrams,
        // the last possibly shorter), handed over whole; the reader takes what it holds.
        let m = msg.split().freeze();
        if let Some(&seg) = lens.first() {
            assert!(
                lens.iter().rev().skip(1).all(|&l| l == seg),
                "not a GRO message"
            );
            r.handle_segments(now, sa, &m, seg, false);
        }
        chunks.clear();
        read += r
            .read_chunks(hr, usize::MAX, usize::MAX, &mut chunks)
            .unwrap();
        let mut acks = Vec::new();
        while let Some(t) = r.poll_transmit(now, &mut buf) {
            acks.push(buf[..t.len].to_vec());
        }
        let t2 = Instant::now();
        for a in &acks {
            s.handle(now, ra, a);
        }
        while r.poll_event().is_some() {}
        while s.poll_event().is_some() {}
        let t3 = Instant::now();
        t_send += (t1 - t0) + (t3 - t2);
        t_recv += t2 - t1;
        now += 5_000;
    }
    let pkts = s.conn(hs).unwrap().stats().data_packets_sent as f64;
    assert_eq!(s.conn(hs).unwrap().stats().retransmitted_packets, 0);
    // The receiver's assembly of the message (memcpy) is the sender's side here: on a host
    // the kernel does it.
    (
        t_send.as_nanos() as f64 / pkts,
        t_recv.as_nanos() as f64 / pkts,
        pkts as u64,
    )
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let total = if quick { 128 << 20 } else { 1 << 30 };
    let runs = if quick { 3 } else { 7 };
    let (mut snd, mut rcv, mut pkts) = (Vec::new(), Vec::new(), 0);
    for _ in 0..runs {
        let (a, b, n) = run(total);
        snd.push(a);
        rcv.push(b);
        pkts += n;
    }
    println!(
        "stride-proto endpoint, zero-copy bulk in memory, {} MiB per run, median of {runs} runs",
        total >> 20
    );
    println!("sender   {:>7.1} ns per DATA packet (includes assembling the datagram: a memcpy the kernel does on a host)", median(&mut snd));
    println!("receiver {:>7.1} ns per DATA packet", median(&mut rcv));
    // For bench/core_instructions.py: the work done in all, DATA packets.
    println!("units: {pkts}");
}
