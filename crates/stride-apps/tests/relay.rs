//! The relay (`stride_apps::relay`): its bottleneck model timed packet by packet, and STRIDE
//! endpoints (async and blocking) repairing its loss, reordering and duplication.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::thread;
use std::time::{Duration, Instant};
use stride::blocking::{self, Connection};
use stride::Endpoint;
use stride_apps::relay::{Relay, RelayConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// `n` bytes of test data, different for each `seed`.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ seed)
        .collect()
}

fn local() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_impaired_relay() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut rc = RelayConfig::new("127.0.0.1:0".parse().unwrap(), server.local_addr());
    rc.rate_bps = 1_000_000_000;
    rc.delay_ns = 20_000;
    rc.queue_bytes = 256 << 10;
    rc.loss = 0.05;
    rc.reorder = 0.01;
    rc.dup = 0.01;
    rc.seed = 7;
    let relay = Relay::spawn(rc).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let up = pattern(2_000_000, 3);
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    let t = Instant::now();
    let mut c = client.connect(relay.local_addr()).await.unwrap();
    c.write_all(&up).await.unwrap();
    c.shutdown().await.unwrap();
    let got = srv.await.unwrap();
    let el = t.elapsed();
    assert!(got == up, "stream differs");
    let rs = relay.stop();
    let cs = c.stats().unwrap();
    eprintln!(
        "{el:?} relay {rs:?} retx {} nacks {} to {}",
        cs.retransmitted_packets, cs.nacks_received, cs.timeouts
    );
    assert!(rs.random_drops > 0 && cs.retransmitted_packets > 0);
}

/// The relay times every forwarded packet's send against the time its model gave it
/// (`late`: one sample per forwarded packet), and counts no socket drops when it keeps up.
#[test]
fn relay_times_each_forwarded_packet_against_its_model() {
    let start = Instant::now();
    let dst = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    dst.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    // Room for the whole burst, as the relay's own sockets have: the reader may fall behind
    // on a loaded machine without the destination dropping any of it.
    stride::sys::set_buffers(&socket2::SockRef::from(&dst), 4 << 20, 4 << 20);
    let mut rc = RelayConfig::new("127.0.0.1:0".parse().unwrap(), dst.local_addr().unwrap());
    rc.rate_bps = 100_000_000;
    rc.delay_ns = 200_000;
    rc.queue_bytes = 1 << 20;
    let relay = Relay::spawn(rc).unwrap();
    const N: u64 = 200;
    // Read while the relay sends: the socket's default buffer holds only part of the burst.
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut got = 0;
        while got < N && dst.recv_from(&mut buf).is_ok() {
            got += 1;
        }
        got
    });
    let src = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    for i in 0..N {
        let mut d = vec![0u8; 1000];
        d[..8].copy_from_slice(&i.to_be_bytes());
        src.send_to(&d, relay.local_addr()).unwrap();
        if i % 20 == 19 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let got = reader.join().unwrap();
    let rs = relay.stop();
    assert_eq!(got, N, "{rs:?}");
    assert_eq!(rs.fwd_out, N, "{rs:?}");
    assert_eq!(rs.late.count(), N, "{rs:?}");
    assert_eq!(rs.socket_drops, 0, "{rs:?}");
    // Modelled: 200 x 1000 bytes at 100 Mbit/s = 16 ms of serialisation in about 10 ms of
    // sending, so the queue builds; a send later than the whole run would be a broken clock.
    assert!(rs.queue_delay.max() > 0, "{rs:?}");
    let run_ns = start.elapsed().as_nanos() as u64;
    assert!(
        rs.late.max() <= run_ns,
        "later than the {run_ns} ns run: {rs:?}"
    );
}

#[test]
fn blocking_endpoints_repair_loss_and_reordering() {
    let mut srv = blocking::Endpoint::bind(local()).unwrap();
    let relay = Relay::spawn(RelayConfig {
        loss: 0.02,
        reorder: 0.02,
        seed: 7,
        ..RelayConfig::new(local(), srv.local_addr())
    })
    .unwrap();
    let data = pattern(2_000_003, 4);
    let want = data.clone();
    let h = thread::spawn(move || {
        let c = srv
            .accept(Some(Duration::from_secs(10)))
            .unwrap()
            .expect("a client");
        let mut got = Vec::new();
        srv.stream(c).read_to_end(&mut got).unwrap();
        srv.close(c, Duration::from_secs(5)).unwrap();
        got
    });
    let mut c = Connection::connect(relay.local_addr(), Duration::from_secs(5)).unwrap();
    c.write_all(&data).unwrap();
    c.flush().unwrap();
    let (ep, id) = c.endpoint();
    let resent = ep.conn_stats(id).unwrap().retransmitted_packets;
    assert!(resent > 0, "nothing was resent");
    assert!(c.close(Duration::from_secs(10)).unwrap());
    let got = h.join().unwrap();
    assert!(
        got == want,
        "stream differs ({} bytes of {})",
        got.len(),
        want.len()
    );
    let st = relay.stop();
    assert!(st.random_drops > 0, "the relay dropped nothing: {st:?}");
}
