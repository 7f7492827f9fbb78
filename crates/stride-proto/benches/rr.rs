//! Cost of the protocol core in a request/response exchange: two `Endpoint`s in memory trade
//! 64-byte messages, each side making the calls `stride::blocking` makes per exchange (write,
//! `poll_transmit_parts` into a datagram, `handle_ecn` of the peer's datagram, the events,
//! `hold_acks` for a request, `poll_timeout`, `handle_timeout`, read). Time advances 10 µs per
//! one-way trip, so the timers (ACK hold, RTO, pacing) run as on a host. Reports the median of
//! several runs in ns of core work per round trip (both sides together) and the datagrams per
//! round trip (2.0 when every ACK rides on a response).
//!
//! Run: `cargo bench -p stride-proto --bench rr` (`-- --quick` for a short run)
use bytes::Bytes;
use std::net::SocketAddr;
use std::time::Instant;
use stride_proto::testkit::Pair;
use stride_proto::{Config, ConnHandle, Endpoint, Event};
use stride_units::stats::median;

const MSG: usize = 64;
const ONE_WAY_NS: u64 = 10_000;
/// `stride::blocking`'s ACK hold after a request.
const ACK_HOLD_NS: u64 = 50_000;

struct Side {
    ep: Endpoint,
    h: ConnHandle,
    me: SocketAddr,
    head: Vec<u8>,
    parts: Vec<Bytes>,
    rbuf: Vec<u8>,
    readable: bool,
}

impl Side {
    /// Sends what may leave into `wire` (one datagram per transmit, as a host's batch).
    fn flush(&mut self, now: u64, wire: &mut Vec<Vec<u8>>) {
        if !self.ep.has_pending_transmit() {
            return;
        }
        loop {
            self.parts.clear();
            let Some(t) = self
                .ep
                .poll_transmit_parts(now, &mut self.head, &mut self.parts)
            else {
                break;
            };
            let in_parts: usize = self.parts.iter().map(|p| p.len()).sum();
            let mut d = Vec::with_capacity(t.len);
            d.extend_from_slice(&self.head[..t.len - in_parts]);
            for p in &self.parts {
                d.extend_from_slice(p);
            }
            wire.push(d);
        }
    }

    fn events(&mut self) {
        while let Some((_, ev)) = self.ep.poll_event() {
            if ev == Event::Readable {
                self.readable = true;
            }
        }
    }

    /// One receive turn as the blocking endpoint takes it: the datagrams, the events, the
    /// ACK hold for a request, the timers.
    fn receive(&mut self, now: u64, from: SocketAddr, wire: &mut Vec<Vec<u8>>) {
        let _ = self.ep.poll_timeout();
        for d in wire.drain(..) {
            self.ep.handle_ecn(now, from, &d, false);
        }
        self.events();
        if self.readable {
            self.ep.hold_acks(now + ACK_HOLD_NS, now + ACK_HOLD_NS);
        }
        self.readable = false;
        self.ep.handle_timeout(now);
        self.events();
    }

    fn read_msg(&mut self) -> usize {
        self.ep.read(self.h, &mut self.rbuf).unwrap()
    }
}

fn pair() -> (Side, Side, u64) {
    let mut p = Pair::new(Config::default());
    let mut now = 1_000u64;
    let (hc, hs) = p.connect(&mut now);
    let side = |ep, h, me| Side {
        ep,
        h,
        me,
        head: vec![0u8; 2048],
        parts: Vec::new(),
        rbuf: vec![0u8; 4096],
        readable: false,
    };
    (side(p.c, hc, p.ca), side(p.s, hs, p.sa), now)
}

/// Runs `n` round trips; returns (ns per round trip, datagrams per round trip).
fn run(n: usize) -> (f64, f64) {
    let (mut c, mut s, mut now) = pair();
    let req = [0x11u8; MSG];
    let mut wire = Vec::new();
    let mut datagrams = 0usize;
    let t0 = Instant::now();
    for _ in 0..n {
        // Client: the request leaves.
        assert_eq!(c.ep.write(c.h, &req).unwrap(), MSG);
        c.flush(now, &mut wire);
        datagrams += wire.len();
        now += ONE_WAY_NS;
        // Server: takes it, reads it, answers.
        s.receive(now, c.me, &mut wire);
        assert_eq!(s.read_msg(), MSG);
        assert_eq!(s.ep.write(s.h, &req).unwrap(), MSG);
        s.flush(now, &mut wire);
        datagrams += wire.len();
        now += ONE_WAY_NS;
        // Client: takes the response.
        c.receive(now, s.me, &mut wire);
        assert_eq!(c.read_msg(), MSG);
        // Whatever the client's timers send (none when the ACK rode on the response).
        c.flush(now, &mut wire);
        datagrams += wire.len();
        let srv_me = c.me;
        s.receive(now, srv_me, &mut wire);
    }
    let el = t0.elapsed();
    let st = c.ep.conn(c.h).unwrap().stats();
    assert_eq!(st.retransmitted_packets, 0);
    (el.as_nanos() as f64 / n as f64, datagrams as f64 / n as f64)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (n, runs) = if quick { (20_000, 3) } else { (200_000, 7) };
    let (mut ns, mut dg) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let (a, b) = run(n);
        ns.push(a);
        dg.push(b);
    }
    println!(
        "stride-proto round trips in memory, {MSG}-byte messages, {n} per run, median of {runs} runs"
    );
    println!(
        "{:>7.1} ns of core work per round trip (both sides), {:.2} datagrams per round trip",
        median(&mut ns),
        median(&mut dg)
    );
    // For bench/core_instructions.py: the work done in all, round trips.
    println!("units: {}", n * runs);
}
