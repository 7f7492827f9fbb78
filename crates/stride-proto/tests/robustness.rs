//! Hostile input: arbitrary datagrams never panic, a SYN flood allocates no state, sequence
//! numbers wrap.
use proptest::prelude::*;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use stride_proto::vectors::SplitMix;
use stride_proto::wire::{Flags, Header, Packet, HEADER_LEN};
use stride_proto::{Config, Connection, Endpoint, Event, State};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn addr(i: u64) -> SocketAddr {
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::from((i as u32) | 0x0a00_0000)),
        (i >> 32) as u16 | 1,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn parser_never_panics(data in proptest::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(p) = Packet::new_checked(&data[..]) {
            // Whatever parses re-emits to the same header bytes.
            let mut b = [0u8; HEADER_LEN];
            p.header().emit(&mut b).unwrap();
            prop_assert_eq!(&b[..], &data[..HEADER_LEN]);
            prop_assert_eq!(p.payload().len(), usize::from(p.payload_len()));
        }
    }

    #[test]
    fn endpoint_survives_arbitrary_datagrams(
        seed in any::<u64>(),
        datagrams in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..120), any::<u8>(), any::<u32>(), any::<u32>(), any::<u32>()), 1..60),
    ) {
        // A live connection pair plus garbage aimed at both, including well-formed headers
        // with forged identifiers and sequence numbers.
        let cfg = Config { rst_per_sec: 10, ..Config::default() };
        let mut server = Endpoint::new(cfg.clone(), [1; 16], seed);
        server.listen(true);
        let mut client = Endpoint::new(cfg, [2; 16], seed ^ 1);
        let (a, b) = (addr(1), addr(2));
        let mut now = 1_000;
        let h = client.connect(now, b).unwrap();
        let mut buf = vec![0u8; 2048];
        let mut pump = |client: &mut Endpoint, server: &mut Endpoint, now: u64| {
            for _ in 0..50 {
                let mut moved = false;
                while let Some(t) = client.poll_transmit(now, &mut buf) { server.handle(now, a, &buf[..t.len]); moved = true; }
                while let Some(t) = server.poll_transmit(now, &mut buf) { client.handle(now, b, &buf[..t.len]); moved = true; }
                if !moved { break; }
            }
        };
        pump(&mut client, &mut server, now);
        let _ = client.write(h, &[7u8; 5000]);
        for (raw, flags, x, y, z) in datagrams {
            now += 1_000;
            let mut d = raw.clone();
            if flags & 1 == 0 && d.len() >= HEADER_LEN {
                // A well-formed header with forged fields.
                let fl = Flags::from_bits(flags & 0x7f).unwrap_or(Flags::ACK);
                let mut hd = Header::new(fl, x, y, z, x ^ z, y);
                hd.payload_len = (d.len() - HEADER_LEN) as u16;
                hd.emit(&mut d).unwrap();
            }
            server.handle(now, addr(u64::from(y)), &d);
            client.handle(now, b, &d);
            server.handle_timeout(now);
            client.handle_timeout(now);
            pump(&mut client, &mut server, now);
        }
        prop_assert!(server.connection_count() <= 1);
        while client.poll_event().is_some() {}
    }
}

#[test]
fn syn_flood_allocates_no_state() {
    let mut server = Endpoint::new(Config::default(), [9; 16], 1);
    server.listen(true);
    let mut rng = SplitMix::new(42);
    let mut buf = vec![0u8; 2048];
    let mut replies = 0;
    for i in 0..100_000u64 {
        let mut h = Header::new(
            Flags::SYN,
            0,
            rng.next_u64() as u32,
            rng.next_u64() as u32,
            0,
            0,
        );
        h.window = 64;
        let mut d = [0u8; HEADER_LEN];
        h.emit(&mut d).unwrap();
        server.handle(i * 100, addr(rng.next_u64()), &d);
        while server.poll_transmit(i * 100, &mut buf).is_some() {
            replies += 1;
        }
    }
    assert_eq!(
        server.connection_count(),
        0,
        "SYNs must not create connections"
    );
    assert_eq!(server.stats().syns, 100_000);
    assert_eq!(replies, 100_000, "every SYN gets a stateless SYN-ACK");
    // Forged third packets (guessed cookies) are refused too.
    for i in 0..10_000u64 {
        let h = Header::new(
            Flags::ACK,
            rng.next_u64() as u32,
            rng.next_u64() as u32,
            rng.next_u64() as u32,
            rng.next_u64() as u32,
            0,
        );
        let mut d = [0u8; HEADER_LEN];
        h.emit(&mut d).unwrap();
        server.handle(10_000_000 + i, addr(rng.next_u64()), &d);
    }
    assert_eq!(server.connection_count(), 0);
    assert_eq!(server.stats().bad_cookies, 10_000);
    // RST answers are rate limited (1000/s default; these 10k arrived within 10 ms).
    assert!(
        server.stats().rsts_sent <= 1_010,
        "rsts {}",
        server.stats().rsts_sent
    );
    assert!(server.stats().rsts_suppressed >= 8_990);
}

#[test]
fn cookie_expires_after_two_slots() {
    let mut server = Endpoint::new(Config::default(), [3; 16], 1);
    server.listen(true);
    let mut client = Endpoint::new(Config::default(), [4; 16], 2);
    let (a, b) = (addr(1), addr(2));
    let _h = client.connect(0, b).unwrap();
    let mut buf = vec![0u8; 2048];
    let t = client.poll_transmit(0, &mut buf).unwrap();
    server.handle(0, a, &buf[..t.len]);
    let t = server.poll_transmit(0, &mut buf).unwrap();
    client.handle(0, b, &buf[..t.len]);
    let t = client.poll_transmit(0, &mut buf).unwrap(); // the third packet
    let third = buf[..t.len].to_vec();
    // Replayed three slots later: refused, no state.
    server.handle(3 << 32, a, &third);
    assert_eq!(server.connection_count(), 0);
    assert_eq!(server.stats().bad_cookies, 1);
    // In time: accepted.
    server.handle(1 << 20, a, &third);
    assert_eq!(server.connection_count(), 1);
    assert!(matches!(server.poll_event(), Some((_, Event::Accepted))));
}

/// Drives two raw Connections (no endpoint) whose sequence numbers start just below 2^32.
#[test]
fn sequence_numbers_wrap() {
    let cfg = Config::default();
    let c_iss = u32::MAX - 3000;
    let s_iss = u32::MAX - 10;
    let mut c = Connection::client(cfg.clone(), 0, 11, c_iss);
    let mut s = Connection::server(cfg, 0, 22, s_iss, 11, c_iss, 4096);
    // Hand the client a SYN-ACK from the server's numbers.
    let mut sa = Header::new(
        Flags::SYN | Flags::ACK,
        11,
        22,
        s_iss,
        c_iss.wrapping_add(1),
        0,
    );
    sa.window = 4096;
    let mut d = [0u8; HEADER_LEN];
    sa.emit(&mut d).unwrap();
    c.handle(10, &Packet::new_checked(&d[..]).unwrap());
    assert_eq!(c.state(), State::Established);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let back: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    let (mut off_c, mut off_s) = (0, 0);
    let (mut got_s, mut got_c) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 2048];
    let mut rb = vec![0u8; 65536];
    let mut now = 100;
    for _ in 0..200_000 {
        off_c += c.write(&data[off_c..]);
        off_s += s.write(&back[off_s..]);
        if off_c == data.len() {
            c.close();
        }
        if off_s == back.len() {
            s.close();
        }
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            s.handle(now, &Packet::new_checked(&buf[..n]).unwrap());
        }
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            c.handle(now, &Packet::new_checked(&buf[..n]).unwrap());
        }
        loop {
            let n = s.read(&mut rb);
            if n == 0 {
                break;
            }
            got_s.extend_from_slice(&rb[..n]);
        }
        loop {
            let n = c.read(&mut rb);
            if n == 0 {
                break;
            }
            got_c.extend_from_slice(&rb[..n]);
        }
        if c.state() == State::Linger && s.state() == State::Linger {
            break;
        }
        now += 500;
        c.handle_timeout(now);
        s.handle_timeout(now);
    }
    assert!(got_s == data, "server got {} bytes", got_s.len());
    assert!(got_c == back, "client got {} bytes", got_c.len());
    assert!(c.is_eof() && s.is_eof());
    assert_eq!(c.state(), State::Linger);
    assert_eq!(s.state(), State::Linger);
}

#[test]
fn identifiers_and_sequence_numbers_are_keyed_by_the_secret() {
    // Unkeyed (SplitMix64 of the seed alone), anyone who knew or recovered the seed (one
    // 64-bit output gives the generator's state away) could predict them and inject into
    // connections. The endpoint's secret keys them.
    let first = |secret: [u8; 16]| {
        let mut ep = stride_proto::Endpoint::new(stride_proto::Config::default(), secret, 7);
        let h = ep.connect(0, "10.0.0.2:2".parse().unwrap()).unwrap();
        let mut buf = vec![0u8; 2048];
        let t = ep.poll_transmit(0, &mut buf).unwrap();
        let p = stride_proto::wire::Packet::new_checked(&buf[..t.len]).unwrap();
        (h.0, p.src_cid(), p.seq())
    };
    let (a, b) = (first([1; 16]), first([2; 16]));
    assert_eq!(a.0, a.1);
    assert_ne!(a.0, b.0, "same identifier under different secrets");
    assert_ne!(
        a.2, b.2,
        "same initial sequence number under different secrets"
    );
    // And a seeded SplitMix64 (what the old endpoint used) is not what comes out.
    let mut old = stride_proto::rng::SplitMix::new(7);
    assert_ne!(a.0, old.next_u64() as u32);
}

/// A selective NACK whose ranges lie outside what was sent, are empty, or overlap is refused
/// and counted, and resends nothing; a good one resends exactly its range.
#[test]
fn malicious_nack_ranges_are_refused_and_counted() {
    use stride_proto::wire::{emit_nack_ranges, syn_ack_caps, NackRange, CAP_SELECTIVE};
    let cfg = Config::default();
    let c_iss = 1_000_000u32;
    let s_iss = 5_000u32;
    let mut c = Connection::client(cfg, 0, 11, c_iss);
    let mut sa = Header::new(
        Flags::SYN | Flags::ACK,
        11,
        22,
        s_iss,
        c_iss.wrapping_add(1),
        0,
    );
    sa.window = 4096;
    sa.ce_count = syn_ack_caps(CAP_SELECTIVE);
    let mut d = [0u8; HEADER_LEN];
    sa.emit(&mut d).unwrap();
    c.handle(10, &Packet::new_checked(&d[..]).unwrap());
    assert!(c.selective(), "the SYN-ACK offered selective recovery");
    let mut buf = vec![0u8; 2048];
    let mut now = 1_000;
    // Drain the third packet, then send 20 full packets.
    assert_eq!(c.write(&[7u8; 20 * 1440]), 20 * 1440);
    let mut data_seqs = vec![];
    for _ in 0..200 {
        now += 100_000;
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            let p = Packet::new_checked(&buf[..n]).unwrap();
            if p.flags().contains(Flags::DATA) {
                data_seqs.push(p.seq());
            }
        }
    }
    assert_eq!(data_seqs.len(), 20);
    let first = c_iss.wrapping_add(1);
    let snd_max = first.wrapping_add(20 * 1440);
    let nack = |ranges: &[NackRange]| {
        let mut h = Header::new(Flags::ACK | Flags::NACK, 11, 22, s_iss + 1, first, 0);
        h.window = 4096;
        let mut v = vec![0u8; HEADER_LEN + ranges.len() * 8];
        h.payload_len = emit_nack_ranges(ranges, &mut v[HEADER_LEN..]) as u16;
        h.emit(&mut v).unwrap();
        v
    };
    let r = |seq: u32, len: u32| NackRange { seq, len };
    let bad: [&[NackRange]; 5] = [
        &[r(first, 21 * 1440)],                    // beyond snd_max
        &[r(first, 0)],                            // empty
        &[r(first + 2880, 1440), r(first, 1440)],  // out of order
        &[r(first, 2880), r(first + 1440, 1440)],  // overlapping
        &[r(snd_max.wrapping_sub(1 << 31), 1440)], // far outside the window
    ];
    let mut want = 0;
    for b in bad {
        want += b.len() as u64;
        let v = nack(b);
        c.handle(now, &Packet::new_checked(&v[..]).unwrap());
        assert_eq!(c.stats().nack_ranges_rejected, want, "{b:?}");
        now += 100_000;
        while let Some(n) = c.poll_transmit(now, &mut buf) {
            let p = Packet::new_checked(&buf[..n]).unwrap();
            assert!(
                !p.flags().contains(Flags::DATA),
                "{b:?} made the sender resend"
            );
        }
    }
    assert_eq!(c.stats().retransmitted_packets, 0);
    // A good range: exactly the second packet is resent.
    let v = nack(&[r(first + 1440, 1440)]);
    c.handle(now, &Packet::new_checked(&v[..]).unwrap());
    now += 100_000;
    let mut resent = vec![];
    while let Some(n) = c.poll_transmit(now, &mut buf) {
        let p = Packet::new_checked(&buf[..n]).unwrap();
        if p.flags().contains(Flags::DATA) {
            resent.push((p.seq(), p.payload().len()));
        }
    }
    assert_eq!(resent, vec![(first + 1440, 1440)]);
    assert_eq!(c.stats().retransmitted_packets, 1);
    assert_eq!(c.stats().nack_ranges_rejected, want);
}

/// A selective receiver holds data beyond a gap only inside its window and up to
/// `ooo_max_segments` segments (the rest is dropped and counted); its NACK names the holes;
/// filling the first hole delivers everything held behind it.
#[test]
fn out_of_order_data_is_bounded_by_window_and_segment_limit() {
    use stride_proto::wire::{nack_ranges, CAP_SELECTIVE};
    let cfg = Config {
        recv_buffer: 64 * 1024,
        ooo_max_segments: 8,
        ..Config::default()
    };
    let c_iss = 7_000u32;
    let s_iss = 9_000u32;
    let mut s =
        Connection::server(cfg, 0, 22, s_iss, 11, c_iss, 4096).with_peer_caps(CAP_SELECTIVE);
    assert!(s.selective());
    let nxt = c_iss.wrapping_add(1);
    let data = |seq: u32, len: usize| {
        let mut h = Header::new(Flags::DATA | Flags::ACK, 22, 11, seq, s_iss + 1, 0);
        h.payload_len = len as u16;
        h.window = 4096;
        let mut v = vec![0u8; HEADER_LEN + len];
        h.emit(&mut v).unwrap();
        for (i, b) in v[HEADER_LEN..].iter_mut().enumerate() {
            *b = (seq as usize + i) as u8;
        }
        v
    };
    let feed = |s: &mut Connection, v: &[u8]| s.handle(1_000, &Packet::new_checked(v).unwrap());
    feed(&mut s, &data(nxt + 1440, 1440));
    assert_eq!(s.out_of_order_bytes(), 1440);
    assert_eq!(s.stats().out_of_order_kept, 1);
    // Ending beyond the window (64 KiB from rcv_nxt): dropped, counted.
    feed(&mut s, &data(nxt + 64 * 1024 - 100, 1440));
    assert_eq!(s.stats().out_of_order_dropped, 1);
    assert_eq!(s.out_of_order_bytes(), 1440);
    // Twenty 1-byte segments with holes between them: only 7 more fit the 8-segment limit.
    for i in 0..20u32 {
        feed(&mut s, &data(nxt + 10_000 + 2 * i, 1));
    }
    assert_eq!(s.stats().out_of_order_kept, 8);
    assert_eq!(s.stats().out_of_order_dropped, 1 + 13);
    assert_eq!(s.out_of_order_bytes(), 1440 + 7);
    // The NACK names the holes before the held segments, first one first.
    let mut buf = vec![0u8; 2048];
    let mut ranges = vec![];
    while let Some(n) = s.poll_transmit(2_000, &mut buf) {
        let p = Packet::new_checked(&buf[..n]).unwrap();
        if p.flags().contains(Flags::NACK) && !p.payload().is_empty() {
            ranges = nack_ranges(p.payload()).collect::<Vec<_>>();
        }
    }
    assert_eq!(ranges.len(), 8, "{ranges:?}");
    assert_eq!((ranges[0].seq, ranges[0].len), (nxt, 1440));
    assert_eq!((ranges[1].seq, ranges[1].len), (nxt + 2880, 10_000 - 2880));
    // Filling the first hole delivers it and the held segment behind it.
    feed(&mut s, &data(nxt, 1440));
    assert_eq!(s.readable(), 2880);
    let mut out = vec![0u8; 4096];
    assert_eq!(s.read(&mut out), 2880);
    for (i, b) in out[..2880].iter().enumerate() {
        assert_eq!(*b, (nxt as usize + i) as u8, "byte {i}");
    }
    assert_eq!(s.out_of_order_bytes(), 7);
}
