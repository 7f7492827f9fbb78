//! Cost of the protocol core alone: a bulk transfer between two `Connection`s in memory, no
//! loss, no sockets. Reports the median of several runs in Gbit/s of payload and ns per DATA
//! packet (sender and receiver work together, ACKs included).
//!
//! Run: `cargo bench -p stride-proto --bench core`
use std::time::Instant;
use stride_proto::cc::CcConfig;
use stride_proto::wire::{Flags, Header, Packet, HEADER_LEN};
use stride_proto::{Config, Connection, State};
use stride_units::stats::median;

fn run(mtu: usize, total: usize) -> (f64, f64) {
    let payload = (mtu - 20 - 8 - HEADER_LEN) as u16;
    let cfg = Config {
        max_payload: payload,
        send_buffer: 8 << 20,
        recv_buffer: 8 << 20,
        // The pacer is exercised, but set far above what a core can do so it never waits.
        cc: CcConfig::fixed(u32::MAX / 2),
        ..Config::default()
    };
    let mut c = Connection::client(cfg.clone(), 0, 1, 1000);
    let mut s = Connection::server(cfg, 0, 2, 5000, 1, 1000, 0xffff);
    let mut sa = Header::new(Flags::SYN | Flags::ACK, 1, 2, 5000, 1001, 0);
    sa.window = 0xffff;
    let mut d = [0u8; HEADER_LEN];
    sa.emit(&mut d).unwrap();
    c.handle(1, &Packet::new_checked(&d[..]).unwrap());
    assert_eq!(c.state(), State::Established);
    let chunk = vec![0x5au8; 1 << 20];
    let mut buf = vec![0u8; 65536];
    let mut sink = vec![0u8; 1 << 20];
    let (mut written, mut read) = (0usize, 0usize);
    let mut now = 10u64;
    let t0 = Instant::now();
    while read < total {
        if written < total {
            written += c.write(&chunk[..(total - written).min(chunk.len())]);
        }
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            s.handle(now, &Packet::new_checked(&buf[..n]).unwrap());
        }
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            c.handle(now, &Packet::new_checked(&buf[..n]).unwrap());
        }
        loop {
            let n = s.read(&mut sink);
            if n == 0 {
                break;
            }
            read += n;
        }
        now += 1_000;
    }
    let secs = t0.elapsed().as_secs_f64();
    let pkts = c.stats().data_packets_sent as f64;
    assert_eq!(c.stats().retransmitted_packets, 0);
    (total as f64 * 8.0 / secs / 1e9, secs * 1e9 / pkts)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let total = if quick { 64 << 20 } else { 512 << 20 };
    let runs = if quick { 3 } else { 7 };
    println!(
        "stride-proto core, bulk transfer in memory, {} MiB per run, median of {runs} runs",
        total >> 20
    );
    println!("{:>10} {:>12} {:>14}", "packet", "Gbit/s", "ns/packet");
    for mtu in [1500usize, 9000] {
        let mut g = Vec::new();
        let mut ns = Vec::new();
        for _ in 0..runs {
            let (a, b) = run(mtu, total);
            g.push(a);
            ns.push(b);
        }
        println!(
            "{:>9}B {:>12.1} {:>14.1}",
            mtu,
            median(&mut g),
            median(&mut ns)
        );
    }
}
