//! Admission control: one host cannot take every connection slot, and
//! handshaked connections that never carry data are culled even while keepalives flow.

use std::net::SocketAddr;
use stride_proto::{CloseReason, Config, ConnHandle, Endpoint, Event};

/// An address, its endpoint and the events it reported.
type Node = (SocketAddr, Endpoint, Vec<(ConnHandle, Event)>);

struct Net {
    now: u64,
    nodes: Vec<Node>,
}

impl Net {
    fn new(cfg: &Config, addrs: &[&str]) -> Net {
        let nodes = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let mut ep = Endpoint::new(cfg.clone(), [i as u8 + 1; 16], i as u64);
                ep.listen(i == 0);
                (a.parse().unwrap(), ep, Vec::new())
            })
            .collect();
        Net { now: 1_000, nodes }
    }

    /// Delivers every datagram at once (1 us hops) until `until`.
    fn run(&mut self, until: u64) {
        let mut buf = vec![0u8; 70_000];
        loop {
            let mut moved = true;
            while moved {
                moved = false;
                for i in 0..self.nodes.len() {
                    while let Some(t) = self.nodes[i].1.poll_transmit(self.now, &mut buf) {
                        moved = true;
                        let from = self.nodes[i].0;
                        let d = buf[..t.len].to_vec();
                        if let Some(n) = self.nodes.iter_mut().find(|n| n.0 == t.remote) {
                            n.1.handle(self.now, from, &d);
                        }
                    }
                    while let Some(ev) = self.nodes[i].1.poll_event() {
                        self.nodes[i].2.push(ev);
                    }
                }
            }
            let next = self
                .nodes
                .iter_mut()
                .filter_map(|n| n.1.poll_timeout())
                .min()
                .unwrap_or(u64::MAX)
                .max(self.now + 1_000);
            if next > until {
                self.now = until;
                return;
            }
            self.now = next;
            for n in &mut self.nodes {
                n.1.handle_timeout(self.now);
            }
        }
    }

    fn count(&self, i: usize, want: Event) -> usize {
        self.nodes[i].2.iter().filter(|(_, e)| *e == want).count()
    }
}

#[test]
fn one_source_cannot_take_every_slot() {
    let cfg = Config {
        max_per_source: 4,
        ..Config::default()
    };
    let mut net = Net::new(&cfg, &["10.0.0.1:7000", "10.0.0.2:1", "10.0.0.3:1"]);
    let server: SocketAddr = "10.0.0.1:7000".parse().unwrap();
    for _ in 0..6 {
        let now = net.now;
        net.nodes[1].1.connect(now, server).unwrap();
    }
    net.run(5_000_000);
    assert_eq!(net.count(0, Event::Accepted), 4, "{:?}", net.nodes[0].2);
    assert_eq!(
        net.nodes[0].1.connections_from("10.0.0.2".parse().unwrap()),
        4
    );
    assert!(net.nodes[0].1.stats().refused_per_source >= 2);
    // Another host still gets in.
    let now = net.now;
    net.nodes[2].1.connect(now, server).unwrap();
    net.run(10_000_000);
    assert_eq!(net.count(2, Event::Connected), 1);
    assert_eq!(net.count(0, Event::Accepted), 5);
}

#[test]
fn unused_connections_are_culled_despite_keepalives() {
    let cfg = Config {
        unused_timeout_ns: 2_000_000_000,
        idle_timeout_ns: 4_000_000_000, // keepalives every second
        ..Config::default()
    };
    let mut net = Net::new(&cfg, &["10.0.0.1:7000", "10.0.0.2:1", "10.0.0.3:1"]);
    let server: SocketAddr = "10.0.0.1:7000".parse().unwrap();
    let now = net.now;
    let idle = net.nodes[1].1.connect(now, server).unwrap();
    let used = net.nodes[2].1.connect(now, server).unwrap();
    net.run(1_000_000);
    net.nodes[2].1.write(used, b"hello").unwrap();
    net.run(10_000_000_000);
    assert_eq!(net.count(0, Event::Accepted), 2);
    // The fake connection is gone on both sides (the server's RST reached the client) ...
    assert!(net.nodes[0]
        .2
        .iter()
        .any(|e| e.1 == Event::Closed(CloseReason::IdleTimeout)));
    assert!(net.nodes[1].1.conn(idle).is_none(), "{:?}", net.nodes[1].2);
    assert_eq!(
        net.nodes[0].1.connections_from("10.0.0.2".parse().unwrap()),
        0
    );
    // ... while the one that carried data lives on its keepalives.
    assert!(net.nodes[2].1.conn(used).is_some(), "{:?}", net.nodes[2].2);
    assert_eq!(
        net.nodes[0].1.connections_from("10.0.0.3".parse().unwrap()),
        1
    );
}
