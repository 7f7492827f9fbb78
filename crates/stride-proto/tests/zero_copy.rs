//! The zero-copy buffer API: a chunk handed to `write_bytes` leaves through
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
    pair_with(Config::default())
}

fn pair_with(cfg: Config) -> Pair {
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

/// A payload of at most `SMALL_PAYLOAD_COPY` bytes leaves `poll_transmit_parts` copied
/// after the header (no parts: a slice costs more than the copy); one byte more leaves as a
/// slice of the send buffer. Either way the peer receives the bytes written.
#[test]
fn small_payloads_are_copied_larger_ones_sliced() {
    use stride_proto::conn::SMALL_PAYLOAD_COPY;
    let mut p = pair();
    for (len, seed) in [
        (1, 1),
        (64, 2),
        (SMALL_PAYLOAD_COPY, 3),
        (SMALL_PAYLOAD_COPY + 1, 4),
    ] {
        let data = pattern(len, seed);
        p.a.1.write(p.ha, &data).unwrap();
        let mut head = vec![0u8; 2048];
        let mut parts = Vec::new();
        let t =
            p.a.1
                .poll_transmit_parts(p.now, &mut head, &mut parts)
                .unwrap();
        assert_eq!(t.len, 32 + len);
        let in_parts: usize = parts.iter().map(|b| b.len()).sum();
        if len <= SMALL_PAYLOAD_COPY {
            assert!(parts.is_empty(), "{len} bytes: {} parts", parts.len());
        } else {
            assert_eq!(in_parts, len, "{len} bytes");
        }
        let mut d = head[..t.len - in_parts].to_vec();
        for part in &parts {
            d.extend_from_slice(part);
        }
        assert_eq!(&d[32..], &data[..], "{len} bytes");
        p.b.1.handle(p.now, p.a.0, &d);
        let mut got = vec![0u8; len + 1];
        assert_eq!(p.b.1.read(p.hb, &mut got).unwrap(), len);
        assert_eq!(got[..len], data[..]);
        p.now += 10_000;
        let now = p.now;
        acks(&mut p, now);
    }
}

/// Sends `total` bytes through a 512 KiB send buffer, refilling only on `Event::Writable`
/// (by chunks or by copies); returns the free room seen at each Writable and the bytes that
/// arrived.
fn writable_room(chunks: bool, total: usize) -> (Vec<usize>, Vec<u8>) {
    let mut p = pair_with(Config {
        send_buffer: 512 << 10,
        ..Config::default()
    });
    let data = Bytes::from(pattern(total, 5));
    let mut off = 0;
    let put = |p: &mut Pair, off: &mut usize| {
        let rest = data.slice(*off..);
        *off += if chunks {
            p.a.1.write_bytes(p.ha, &rest).unwrap()
        } else {
            p.a.1.write(p.ha, &rest).unwrap()
        };
    };
    put(&mut p, &mut off);
    let mut rooms = Vec::new();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 2048];
    for _ in 0..200_000 {
        while let Some(t) = p.a.1.poll_transmit(p.now, &mut buf) {
            p.b.1.handle(p.now, p.a.0, &buf[..t.len]);
        }
        let mut rd = vec![0u8; 65_536];
        while let Ok(n) = p.b.1.read(p.hb, &mut rd) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&rd[..n]);
        }
        p.now += 1_000;
        let now = p.now;
        acks(&mut p, now);
        while let Some((h, ev)) = p.a.1.poll_event() {
            if h == p.ha && ev == Event::Writable {
                rooms.push((512 << 10) - p.a.1.conn(p.ha).unwrap().unacked());
                put(&mut p, &mut off);
            }
        }
        if got.len() == total {
            break;
        }
    }
    assert!(
        got == data[..],
        "{} of {total} bytes arrived intact",
        got.len()
    );
    (rooms, got)
}

#[test]
fn a_chunk_writer_is_woken_per_quarter_buffer() {
    // A copying writer wakes per ACK interval (64 KiB): each wake copies little. A writer
    // handing over chunks copies nothing, so it wakes per quarter of the buffer (128 KiB
    // here): half the wake-ups, each with at least that much room.
    let total = 4 << 20;
    let (copy, _) = writable_room(false, total);
    let (chunk, _) = writable_room(true, total);
    assert!(copy.iter().all(|&r| r >= 64 << 10), "{copy:?}");
    assert!(chunk.iter().all(|&r| r >= 128 << 10), "{chunk:?}");
    assert!(
        copy.iter().any(|&r| r < 128 << 10),
        "the copying writer waited for a quarter: {copy:?}"
    );
    assert!(
        chunk.len() * 3 <= copy.len() * 2,
        "{} chunk wake-ups against {} copying",
        chunk.len(),
        copy.len()
    );
}
