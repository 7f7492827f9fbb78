#![no_main]
//! An endpoint holding a live connection, fed arbitrary datagrams from arbitrary sources with
//! arbitrary time steps, must never panic and must keep its connection table bounded.
use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;
use stride_proto::{Config, Endpoint};

fuzz_target!(|data: &[u8]| {
    let cfg = Config { max_connections: 4, ..Config::default() };
    let mut server = Endpoint::new(cfg.clone(), [7; 16], 1);
    server.listen(true);
    let mut client = Endpoint::new(cfg, [8; 16], 2);
    let a: SocketAddr = "10.0.0.1:1".parse().unwrap();
    let b: SocketAddr = "10.0.0.2:2".parse().unwrap();
    let mut now = 1_000u64;
    let h = client.connect(now, b).unwrap();
    let mut buf = vec![0u8; 70_000];
    let _ = client.write(h, &[1u8; 3000]);
    // Input: a sequence of [len u8][src u8][dt u8][bytes...] records.
    let mut rest = data;
    while rest.len() >= 3 {
        let (len, src, dt) = (rest[0] as usize, rest[1], rest[2]);
        rest = &rest[3..];
        let n = len.min(rest.len());
        let d = &rest[..n];
        rest = &rest[n..];
        now += u64::from(dt) * 1_000;
        let from = if src & 1 == 0 { a } else { SocketAddr::from(([10, 0, 1, src], 9)) };
        server.handle(now, from, d);
        client.handle(now, b, d);
        server.handle_timeout(now);
        client.handle_timeout(now);
        for _ in 0..64 {
            let mut moved = false;
            if let Some(t) = client.poll_transmit(now, &mut buf) {
                let pkt = buf[..t.len].to_vec();
                server.handle(now, a, &pkt);
                moved = true;
            }
            if let Some(t) = server.poll_transmit(now, &mut buf) {
                let pkt = buf[..t.len].to_vec();
                client.handle(now, b, &pkt);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        while server.poll_event().is_some() {}
        while client.poll_event().is_some() {}
        assert!(server.connection_count() <= 4);
    }
});
