//! The zero-copy buffer API (issue 17): a chunk handed to `write_bytes` leaves through
//! `poll_transmit_parts` as slices of the same memory, and a datagram handed over as `Bytes`
//! (`handle_ecn_bytes`) reaches `read_chunk` as a slice of the datagram, while the bytes on
//! the wire and in the stream are those of the copying API.

use bytes::Bytes;
use std::net::SocketAddr;
use stride_proto::{Config, ConnHandle, Endpoint, Event};

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13) ^ seed).collect()
}

struct Pair {
    now: u64,
    a: (SocketAddr, Endpoint),
    b: (SocketAddr, Endpoint),
    ha: ConnHandle,
    hb: ConnHandle,
}

/// Moves every datagram between the two endpoints (copying API) until none is left.
fn settle(p: &mut Pair) {
    let mut buf = vec![0u8; 4096];
    loop {
        let mut moved = false;
        for dir in 0..2 {
            let (src, dst) = if dir == 0 {
                (&mut p.a, &mut p.b)
            } else {
                (&mut p.b, &mut p.a)
            };
            while let Some(t) = src.1.poll_transmit(p.now, &mut buf) {
                assert_eq!(t.remote, dst.0);
                dst.1.handle(p.now, src.0, &buf[..t.len]);
                moved = true;
            }
        }
        p.now += 1_000;
        p.a.1.handle_timeout(p.now);
        p.b.1.handle_timeout(p.now);
        if !moved {
            return;
        }
    }
}

fn pair() -> Pair {
    let cfg = Config::default();
    let mut a = Endpoint::new(cfg.clone(), [1; 16], 1);
    let mut b = Endpoint::new(cfg, [2; 16], 2);
    b.listen(true);
    let (aa, ba): (SocketAddr, SocketAddr) =
        ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
    let ha = a.connect(1_000, ba).unwrap();
    let mut p = Pair {
        now: 1_000,
        a: (aa, a),
        b: (ba, b),
        ha,
        hb: ConnHandle(0),
    };
    settle(&mut p);
    while let Some((h, ev)) = p.b.1.poll_event() {
        if ev == Event::Accepted {
            p.hb = h;
        }
    }
    assert_ne!(p.hb, ConnHandle(0), "no connection accepted");
    p
}

fn inside(outer: &[u8], inner: &[u8]) -> bool {
    let (o, i) = (outer.as_ptr() as usize, inner.as_ptr() as usize);
    i >= o && i + inner.len() <= o + outer.len()
}

#[test]
fn chunks_leave_and_arrive_without_copies() {
    let mut p = pair();
    let chunk = Bytes::from(pattern(10_000, 7));
    let copied = pattern(3_000, 9);
    assert_eq!(p.a.1.write_bytes(p.ha, &chunk).unwrap(), chunk.len());
    assert_eq!(p.a.1.write(p.ha, &copied).unwrap(), copied.len());
    let mut want = chunk.to_vec();
    want.extend_from_slice(&copied);

    // Sender: DATA payloads are slices of the written chunk (same memory), the header alone
    // is in the buffer; the receiver takes the assembled datagram as Bytes.
    let mut got = Vec::new();
    let mut from_chunk = 0;
    let mut kept = Vec::new();
    for _ in 0..10_000 {
        let mut head = vec![0u8; 2048];
        let mut parts = Vec::new();
        let Some(t) = p.a.1.poll_transmit_parts(p.now, &mut head, &mut parts) else {
            p.now += 1_000;
            p.a.1.handle_timeout(p.now);
            p.b.1.handle_timeout(p.now);
            // ACKs back to the sender (copying API).
            let mut buf = vec![0u8; 2048];
            while let Some(t) = p.b.1.poll_transmit(p.now, &mut buf) {
                p.a.1.handle(p.now, p.b.0, &buf[..t.len]);
            }
            if got.len() == want.len() {
                break;
            }
            continue;
        };
        let in_parts: usize = parts.iter().map(|b| b.len()).sum();
        for part in &parts {
            if inside(&chunk, part) {
                from_chunk += part.len();
            }
        }
        let mut dgram = head[..t.len - in_parts].to_vec();
        for part in &parts {
            dgram.extend_from_slice(part);
        }
        let dgram = Bytes::from(dgram);
        kept.push(dgram.clone());
        p.b.1.handle_ecn_bytes(p.now, p.a.0, &dgram, false);
        while let Ok(Some(c)) = p.b.1.read_chunk(p.hb, usize::MAX) {
            assert!(
                kept.iter().any(|d| inside(d, &c)),
                "read_chunk returned a copy, not a slice of a received datagram"
            );
            got.extend_from_slice(&c);
        }
    }
    assert!(
        got == want,
        "stream differs: {} of {} bytes",
        got.len(),
        want.len()
    );
    assert_eq!(
        from_chunk,
        chunk.len(),
        "the chunk's bytes were copied before transmission"
    );
}

/// Runs both sides' timers and carries the receiver's datagrams (ACKs) to the sender.
fn acks(p: &mut Pair, now: u64) {
    p.a.1.handle_timeout(now);
    p.b.1.handle_timeout(now);
    let mut ack = vec![0u8; 2048];
    while let Some(t) = p.b.1.poll_transmit(now, &mut ack) {
        p.a.1.handle(now, p.b.0, &ack[..t.len]);
    }
}

#[test]
fn copying_and_zero_copy_transmits_are_the_same_datagrams() {
    let mut x = pair();
    let mut y = pair();
    let data = pattern(50_000, 3);
    x.a.1.write(x.ha, &data).unwrap();
    y.a.1.write_bytes(y.ha, &Bytes::from(data.clone())).unwrap();
    let mut now = x.now.max(y.now);
    let mut n = 0;
    let mut payload = 0;
    for _ in 0..100_000 {
        if payload >= data.len() {
            break;
        }
        let mut bx = vec![0u8; 2048];
        let mut by = vec![0u8; 2048];
        let mut parts = Vec::new();
        let tx = x.a.1.poll_transmit(now, &mut bx);
        let ty = y.a.1.poll_transmit_parts(now, &mut by, &mut parts);
        let (Some(tx), Some(ty)) = (tx, ty) else {
            assert!(tx.is_none() && ty.is_none(), "one stopped early");
            now += 10_000;
            acks(&mut x, now);
            acks(&mut y, now);
            continue;
        };
        assert_eq!(tx.len, ty.len);
        let in_parts: usize = parts.iter().map(|b| b.len()).sum();
        let mut dy = by[..ty.len - in_parts].to_vec();
        for part in &parts {
            dy.extend_from_slice(part);
        }
        // Connection identifiers and sequence numbers differ between the two pairs: compare
        // the payloads and lengths.
        assert_eq!(&bx[32..tx.len], &dy[32..], "datagram {n} payload differs");
        payload += tx.len - 32;
        n += 1;
        // Deliver, and carry the acknowledgements back (copying API on that side).
        x.b.1.handle(now, x.a.0, &bx[..tx.len]);
        y.b.1.handle(now, y.a.0, &dy);
        acks(&mut x, now);
        acks(&mut y, now);
    }
    assert!(
        n > 30 && payload >= data.len(),
        "only {n} datagrams, {payload} bytes"
    );
}
