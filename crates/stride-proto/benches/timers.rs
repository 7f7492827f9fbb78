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

use std::time::Instant;
use stride_proto::testkit::Pair;
use stride_proto::Config;
use stride_units::stats::median;

/// Moves every datagram between the two endpoints at `now` and drops their events;
/// returns how many datagrams moved.
fn pump(p: &mut Pair, now: u64) -> u64 {
    let moved = p.pump(now);
    while p.c.poll_event().is_some() {}
    while p.s.poll_event().is_some() {}
    moved
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
    let mut p = Pair::new(cfg);
    // Open the connections spread over 8 s so their keepalives are staggered.
    let mut now = 1_000u64;
    let step = 8_000_000_000 / n as u64;
    for _ in 0..n {
        p.c.connect(now, p.sa).unwrap();
        pump(&mut p, now);
        now += step;
    }
    assert_eq!(
        p.s.connection_count(),
        n,
        "not every connection was accepted"
    );
    let end = now + 60_000_000_000;
    let t = Instant::now();
    let mut events = 0u64;
    while now < end {
        let next = [p.c.poll_timeout(), p.s.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(end)
            .max(now + 1);
        now = next;
        events += pump(&mut p, now);
        p.c.handle_timeout(now);
        p.s.handle_timeout(now);
    }
    let ns = t.elapsed().as_nanos() as f64;
    assert_eq!(p.c.connection_count(), n, "connections were lost");
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
    let base = median(&mut results[0].clone());
    println!(
        "size of a Connection record: {} bytes (buffers, allocated when data flows, on top)",
        std::mem::size_of::<stride_proto::Connection>()
    );
    println!(
        "connections  events  ns/event (median of {rounds})  ratio to N={}",
        sizes[0]
    );
    for (i, &n) in sizes.iter().enumerate() {
        let m = median(&mut results[i]);
        println!("{n:>11}  {:>6}  {m:>10.0}  {:>6.2}", counts[i], m / base);
    }
}
