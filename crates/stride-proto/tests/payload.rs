//! A connection's payload per DATA packet: `Config::max_payload` by default, lowered per
//! connection by `Endpoint::limit_payload` (a host that learns its route to the peer carries
//! smaller datagrams), never raised; the stream is the same either way.

use stride_proto::testkit::Pair;
use stride_proto::wire::HEADER_LEN;
use stride_proto::{Config, ConnHandle, Event};

/// Sends `data` from a client to a server, both with `max_payload` 8940, after lowering the
/// client connection's payload to `limit` (if any) once the handshake is done. Returns the
/// bytes the server read and the largest DATA datagram the client sent.
fn transfer(data: &[u8], limit: Option<u16>) -> (Vec<u8>, usize) {
    let cfg = Config {
        max_payload: 8940,
        ..Config::default()
    };
    let Pair {
        mut c,
        ca,
        mut s,
        sa,
        ..
    } = Pair::new(cfg);
    let mut now = 1_000u64;
    let h = c.connect(now, sa).unwrap();
    let mut buf = vec![0u8; 65_536];
    let (mut out, mut largest, mut written, mut limited) = (Vec::new(), 0, 0, false);
    let mut hs = ConnHandle(0);
    for _ in 0..200_000 {
        if !limited
            && c.conn(h)
                .is_some_and(|x| x.state() == stride_proto::State::Established)
        {
            if let Some(l) = limit {
                assert_eq!(c.limit_payload(h, l), Some(l));
                // Never raised.
                assert_eq!(c.limit_payload(h, l + 1000), Some(l));
            }
            limited = true;
        }
        if limited && written < data.len() {
            written += c.write(h, &data[written..]).unwrap();
        }
        while let Some(t) = c.poll_transmit(now, &mut buf) {
            if t.len > HEADER_LEN + 64 {
                largest = largest.max(t.len);
            }
            s.handle(now, ca, &buf[..t.len]);
        }
        while let Some(t) = s.poll_transmit(now, &mut buf) {
            c.handle(now, sa, &buf[..t.len]);
        }
        while let Some((hh, ev)) = s.poll_event() {
            if ev == Event::Accepted {
                hs = hh;
            }
        }
        if hs != ConnHandle(0) {
            let mut r = vec![0u8; 65_536];
            while let Ok(n) = s.read(hs, &mut r) {
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&r[..n]);
            }
        }
        if out.len() == data.len() {
            break;
        }
        now += 2_000;
        c.handle_timeout(now);
        s.handle_timeout(now);
    }
    assert_eq!(c.limit_payload(ConnHandle(12_345), 100), None);
    (out, largest)
}

#[test]
fn a_lowered_payload_carries_the_stream_in_smaller_datagrams() {
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let (got, largest) = transfer(&data, None);
    assert!(got == data, "the stream differs without a limit");
    assert_eq!(largest, HEADER_LEN + 8940);
    let (got, largest) = transfer(&data, Some(1000));
    assert!(got == data, "the stream differs with a limit");
    assert_eq!(largest, HEADER_LEN + 1000);
}
