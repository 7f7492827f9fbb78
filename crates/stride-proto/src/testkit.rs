//! An in-memory network for tests and benchmarks: two endpoints joined by a link model with
//! delay, random loss, reordering and duplication, driven by a deterministic virtual clock.

use crate::conn::{CloseReason, Event};
use crate::endpoint::{ConnHandle, Endpoint};
use crate::vectors::SplitMix;
use crate::Config;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

/// Link impairments (probabilities in parts per million).
#[derive(Clone, Copy, Debug, Default)]
pub struct Link {
    /// One-way propagation delay, ns.
    pub delay_ns: u64,
    /// Drop probability, ppm.
    pub loss_ppm: u32,
    /// Probability that a packet is held back by up to `reorder_ns` (reordering), ppm.
    pub reorder_ppm: u32,
    /// Extra delay of a reordered packet, ns (uniform in 0..reorder_ns).
    pub reorder_ns: u64,
    /// Duplication probability, ppm.
    pub dup_ppm: u32,
}

/// Outcome of [`transfer`].
#[derive(Debug)]
pub struct Outcome {
    /// Bytes the server received from the client.
    pub at_server: Vec<u8>,
    /// Bytes the client received from the server.
    pub at_client: Vec<u8>,
    /// How the client's connection ended.
    pub client_close: Option<CloseReason>,
    /// How the server's connection ended.
    pub server_close: Option<CloseReason>,
    /// Connections still held by the client endpoint at the end.
    pub client_conns_left: usize,
    /// Connections still held by the server endpoint at the end.
    pub server_conns_left: usize,
    /// Virtual time at the end, ns.
    pub end_ns: u64,
    /// Datagrams the link carried (duplicates included).
    pub datagrams: u64,
    /// Client-side data packets sent, retransmitted, NACKs received, timeouts.
    pub client_stats: crate::ConnStats,
}

struct Flight {
    at: u64,
    seq: u64,
    to_server: bool,
    data: Vec<u8>,
}
impl PartialEq for Flight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Flight {}
impl PartialOrd for Flight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Flight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// Whether an event of probability `ppm` (parts per million) happens.
fn chance(rng: &mut SplitMix, ppm: u32) -> bool {
    ppm > 0 && rng.below(1_000_000) < u64::from(ppm)
}

/// The link between the client (at `a`) and the server (at `b`): its impairments, the
/// generator that draws them, and the datagrams in flight by arrival time (ties in sending
/// order).
struct Air {
    link: Link,
    rng: SplitMix,
    a: SocketAddr,
    b: SocketAddr,
    flights: BinaryHeap<Reverse<Flight>>,
    seq: u64,
}

impl Air {
    /// Puts every datagram `ep` may send at `now` on the link, impaired.
    fn transmit(
        &mut self,
        ep: &mut Endpoint,
        to_server: bool,
        now: u64,
        buf: &mut [u8],
        out: &mut Outcome,
    ) {
        let (link, rng) = (&self.link, &mut self.rng);
        while let Some(t) = ep.poll_transmit(now, buf) {
            out.datagrams += 1;
            if chance(rng, link.loss_ppm) {
                continue;
            }
            let copies = if chance(rng, link.dup_ppm) { 2 } else { 1 };
            for _ in 0..copies {
                let mut at = now + link.delay_ns;
                if link.reorder_ns > 0 && chance(rng, link.reorder_ppm) {
                    at += rng.below(link.reorder_ns);
                }
                self.seq += 1;
                self.flights.push(Reverse(Flight {
                    at,
                    seq: self.seq,
                    to_server,
                    data: buf[..t.len].to_vec(),
                }));
            }
        }
    }

    /// When the next datagram arrives.
    fn next_at(&self) -> Option<u64> {
        self.flights.peek().map(|Reverse(f)| f.at)
    }

    /// Hands every datagram that arrived by `now` to its endpoint.
    fn deliver(&mut self, now: u64, client: &mut Endpoint, server: &mut Endpoint) {
        while let Some(Reverse(f)) = self.flights.peek() {
            if f.at > now {
                break;
            }
            let Reverse(f) = self.flights.pop().expect("peeked");
            if f.to_server {
                server.handle(now, self.a, &f.data);
            } else {
                client.handle(now, self.b, &f.data);
            }
        }
    }
}

/// The applications of [`transfer`]: each writes its stream, closes its direction once all of
/// it is written, and reads what arrives.
struct Apps<'a> {
    up: &'a [u8],
    down: &'a [u8],
    ch: ConnHandle,
    sh: Option<ConnHandle>,
    up_off: usize,
    down_off: usize,
    up_closed: bool,
    down_closed: bool,
    rbuf: Vec<u8>,
}

impl Apps<'_> {
    /// One turn of both applications: their events, then their writes, closes and reads.
    fn run(&mut self, client: &mut Endpoint, server: &mut Endpoint, out: &mut Outcome) {
        while let Some((_, ev)) = client.poll_event() {
            if let Event::Closed(r) = ev {
                out.client_close = Some(r);
            }
        }
        while let Some((h, ev)) = server.poll_event() {
            match ev {
                Event::Accepted => self.sh = Some(h),
                Event::Closed(r) => out.server_close = Some(r),
                _ => {}
            }
        }
        self.client(client, out);
        if let Some(s) = self.sh {
            if server.conn(s).is_some() {
                self.server(server, s, out);
            }
        }
    }

    /// The client writes `up` (closing once it is written and the connection established)
    /// and reads.
    fn client(&mut self, client: &mut Endpoint, out: &mut Outcome) {
        let ch = self.ch;
        let Some(c) = client.conn(ch) else {
            return;
        };
        out.client_stats = c.stats().clone();
        let established = c.state() == crate::State::Established;
        if self.up_off < self.up.len() {
            self.up_off += client.write(ch, &self.up[self.up_off..]).unwrap_or(0);
        }
        if self.up_off == self.up.len() && !self.up_closed && established {
            self.up_closed = client.close(ch).is_ok();
        }
        while let Ok(n) = client.read(ch, &mut self.rbuf) {
            if n == 0 {
                break;
            }
            out.at_client.extend_from_slice(&self.rbuf[..n]);
        }
    }

    /// The server writes `down` on connection `s` (closing once it is written) and reads.
    fn server(&mut self, server: &mut Endpoint, s: ConnHandle, out: &mut Outcome) {
        if self.down_off < self.down.len() {
            self.down_off += server.write(s, &self.down[self.down_off..]).unwrap_or(0);
        }
        if self.down_off == self.down.len() && !self.down_closed {
            self.down_closed = server.close(s).is_ok();
        }
        while let Ok(n) = server.read(s, &mut self.rbuf) {
            if n == 0 {
                break;
            }
            out.at_server.extend_from_slice(&self.rbuf[..n]);
        }
    }
}

/// Opens a connection from a client to a server across `link` (both directions impaired
/// alike), sends `up` from client to server and `down` from server to client, closes both
/// directions, and runs until both endpoints hold no connection or `limit_ns` of virtual time
/// passes.
pub fn transfer(
    cfg: Config,
    link: Link,
    seed: u64,
    up: &[u8],
    down: &[u8],
    limit_ns: u64,
) -> Outcome {
    let a: SocketAddr = "10.0.0.1:1000".parse().expect("addr");
    let b: SocketAddr = "10.0.0.2:2000".parse().expect("addr");
    let mut rng = SplitMix::new(seed);
    let endpoint = |rng: &mut SplitMix| {
        let key = rng.next_u64().to_le_bytes().repeat(2);
        Endpoint::new(
            cfg.clone(),
            key.try_into().expect("16 bytes"),
            rng.next_u64(),
        )
    };
    let mut client = endpoint(&mut rng);
    let mut server = endpoint(&mut rng);
    server.listen(true);
    let mut now: u64 = 1_000_000;
    let mut apps = Apps {
        up,
        down,
        ch: client.connect(now, b).expect("connect"),
        sh: None,
        up_off: 0,
        down_off: 0,
        up_closed: false,
        down_closed: false,
        rbuf: vec![0u8; 65_536],
    };
    let mut out = Outcome {
        at_server: Vec::new(),
        at_client: Vec::new(),
        client_close: None,
        server_close: None,
        client_conns_left: 0,
        server_conns_left: 0,
        end_ns: 0,
        datagrams: 0,
        client_stats: Default::default(),
    };
    let mut air = Air {
        link,
        rng,
        a,
        b,
        flights: BinaryHeap::new(),
        seq: 0,
    };
    let mut buf = vec![0u8; 65_536];
    let mut iterations = 0u64;
    loop {
        apps.run(&mut client, &mut server, &mut out);
        // Transmit everything that may leave now.
        for (ep, to_server) in [(&mut client, true), (&mut server, false)] {
            air.transmit(ep, to_server, now, &mut buf, &mut out);
        }
        if client.connection_count() == 0 && server.connection_count() == 0 && apps.sh.is_some() {
            break;
        }
        // Advance to the next event.
        let mut next = air.next_at().unwrap_or(u64::MAX);
        for t in [client.poll_timeout(), server.poll_timeout()]
            .into_iter()
            .flatten()
        {
            next = next.min(t.max(now));
        }
        iterations += 1;
        if next == u64::MAX || next > limit_ns || iterations > 20_000_000 {
            break;
        }
        let progressed = next > now;
        now = next;
        air.deliver(now, &mut client, &mut server);
        client.handle_timeout(now);
        server.handle_timeout(now);
        if !progressed {
            // Guard against a livelock at one instant: time must move eventually.
            now += 1;
        }
    }
    out.client_conns_left = client.connection_count();
    out.server_conns_left = server.connection_count();
    out.end_ns = now;
    out
}

/// Two endpoints wired by hand, for tests and benchmarks that move datagrams themselves: a
/// client (`c`, at `ca`) and a listening server (`s`, at `sa`), both with the same
/// configuration and fixed secrets and seeds.
pub struct Pair {
    /// The client endpoint.
    pub c: Endpoint,
    /// The client's address.
    pub ca: SocketAddr,
    /// The server endpoint (listening).
    pub s: Endpoint,
    /// The server's address.
    pub sa: SocketAddr,
    buf: Vec<u8>,
}

impl Pair {
    /// The two endpoints, not yet connected.
    pub fn new(cfg: Config) -> Pair {
        let mut s = Endpoint::new(cfg.clone(), [2; 16], 2);
        s.listen(true);
        Pair {
            c: Endpoint::new(cfg, [1; 16], 1),
            ca: "10.0.0.1:1".parse().expect("address"),
            s,
            sa: "10.0.0.2:2".parse().expect("address"),
            buf: vec![0u8; 65_536],
        }
    }

    /// Moves every datagram either endpoint has to send at `now` to the other (copying
    /// calls) until neither has one; returns how many moved.
    pub fn pump(&mut self, now: u64) -> u64 {
        let buf = &mut self.buf;
        let mut moved = 0;
        loop {
            let before = moved;
            while let Some(t) = self.c.poll_transmit(now, buf) {
                self.s.handle(now, self.ca, &buf[..t.len]);
                moved += 1;
            }
            while let Some(t) = self.s.poll_transmit(now, buf) {
                self.c.handle(now, self.sa, &buf[..t.len]);
                moved += 1;
            }
            if moved == before {
                return moved;
            }
        }
    }

    /// Opens a connection from the client at `now` and runs the handshake (1 µs per
    /// exchange, the clock advanced in `now`); returns the client's and the server's
    /// handles. Panics when the server accepted nothing. The endpoints' events are consumed.
    pub fn connect(&mut self, now: &mut u64) -> (ConnHandle, ConnHandle) {
        let hc = self.c.connect(*now, self.sa).expect("connect");
        let mut hs = None;
        for _ in 0..10 {
            self.pump(*now);
            while let Some((h, ev)) = self.s.poll_event() {
                if ev == Event::Accepted {
                    hs = Some(h);
                }
            }
            while self.c.poll_event().is_some() {}
            *now += 1_000;
        }
        (hc, hs.expect("the server accepted no connection"))
    }
}
