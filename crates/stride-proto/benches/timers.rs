//! Timer cost per event against the number of connections an endpoint holds.
//!
//! Two in-memory endpoints hold N established, idle connections (no sockets). Over 60 s of
//! virtual time each connection's keepalive timer fires every `idle_timeout / 4` (set to 8 s,
//! staggered); one *event* is one timer expiry: the client endpoint's `handle_timeout`, the
//! keepalive it sends and the server's handling of it (which rearms the server's timers).
//! Reports, per N, the median over interleaved runs of wall-clock ns per event, and the ratio
//! to the smallest N: a heap costs O(log N) per event, so the ratio should stay small.
//!
//! Run: `cargo bench -p stride-proto --bench timers`

use std::net::SocketAddr;
use std::time::Instant;
use stride_proto::{Config, Endpoint};

fn pump(
    a: &mut Endpoint,
    a_addr: SocketAddr,
    b: &mut Endpoint,
    b_addr: SocketAddr,
    now: u64,
) -> u64 {
    let mut buf = vec![0u8; 2048];
    let mut moved = 0;
    loop {
        let mut any = false;
        while let Some(t) = a.poll_transmit(now, &mut buf) {
            b.handle(now, a_addr, &buf[..t.len]);
            moved += 1;
            any = true;
        }
        while let Some(t) = b.poll_transmit(now, &mut buf) {
            a.handle(now, b_addr, &buf[..t.len]);
            moved += 1;
            any = true;
        }
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        if !any {
            return moved;
        }
    }
}

/// (ns per event, events) for `n` connections.
fn run(n: usize) -> (f64, u64) {
    let cfg = Config {
        max_connections: 2 * n + 16,
        max_per_source: n + 16,
        idle_timeout_ns: 32_000_000_000,
        unused_timeout_ns: u64::MAX / 4,
        ..Config::default()
    };
    let (ca, sa): (SocketAddr, SocketAddr) =
        ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
    let mut c = Endpoint::new(cfg.clone(), [1; 16], 1);
    let mut s = Endpoint::new(cfg, [2; 16], 2);
    s.listen(true);
    // Open the connections spread over 8 s so their keepalives are staggered.
    let mut now = 1_000u64;
    let step = 8_000_000_000 / n as u64;
    for _ in 0..n {
        c.connect(now, sa).unwrap();
        pump(&mut c, ca, &mut s, sa, now);
        now += step;
    }
    assert_eq!(s.connection_count(), n, "not every connection was accepted");
    let end = now + 60_000_000_000;
    let t = Instant::now();
    let mut events = 0u64;
    while now < end {
        let next = [c.poll_timeout(), s.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end)
            .max(now + 1);
        now = next;
        events += pump(&mut c, ca, &mut s, sa, now);
        c.handle_timeout(now);
        s.handle_timeout(now);
        events += 0;
    }
    let ns = t.elapsed().as_nanos() as f64;
    assert_eq!(c.connection_count(), n, "connections were lost");
    (ns / events.max(1) as f64, events)
}

fn main() {
    if let Some(n) = std::env::args().nth(1).and_then(|a| a.parse().ok()) {
        let (ns, ev) = run(n);
        println!("{n} connections: {ns:.0} ns/event over {ev} events");
        return;
    }
    let sizes = [100usize, 1_000, 10_000, 100_000];
    let rounds = 3;
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    let mut counts = vec![0u64; sizes.len()];
    for _ in 0..rounds {
        for (i, &n) in sizes.iter().enumerate() {
            let (ns, ev) = run(n);
            results[i].push(ns);
            counts[i] = ev;
        }
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let base = med(&mut results[0].clone());
    println!(
        "size of a Connection record: {} bytes (buffers, allocated when data flows, on top)",
        std::mem::size_of::<stride_proto::Connection>()
    );
    println!(
        "connections  events  ns/event (median of {rounds})  ratio to N={}",
        sizes[0]
    );
    for (i, &n) in sizes.iter().enumerate() {
        let m = med(&mut results[i]);
        println!("{n:>11}  {:>6}  {m:>10.0}  {:>6.2}", counts[i], m / base);
    }
}
