//! `EndpointConfig::dscp`: every datagram an endpoint sends, both endpoint kinds, IPv4 and
//! IPv6, carries the DSCP with ECT(0) below it. A forwarder between client and server reads
//! the TOS byte / traffic class of each datagram (`IP_RECVTOS`, `IPV6_RECVTCLASS`) on its way.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use stride::sys::{self, RxBatch};
use stride::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// AF41 with ECT(0): 34 << 2 | 2.
const AF41_ECT0: u8 = 0x8a;

/// The loopback address of each family this host has (IPv6 only with `::1`; its absence is
/// reported as a skip).
fn loopbacks() -> Vec<&'static str> {
    let mut v = vec!["127.0.0.1:0"];
    if UdpSocket::bind("[::1]:0").is_ok() {
        v.push("[::1]:0");
    } else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: the IPv6 half of the DSCP tests: no ::1 on this host"
        );
    }
    v
}

/// TOS bytes seen by the forwarder: (towards the server, towards the client).
type Seen = Arc<Mutex<(Vec<u8>, Vec<u8>)>>;

/// A UDP forwarder on `at`: what a client sends it goes to `server` (from a socket of its
/// own), the server's answers go back to the last client heard. Records the TOS byte of every
/// datagram either way until `stop`.
fn forwarder(at: &str, server: SocketAddr, stop: Arc<AtomicBool>) -> (SocketAddr, Seen) {
    let front = UdpSocket::bind(at).unwrap();
    let back = UdpSocket::bind(at).unwrap();
    let v6 = server.is_ipv6();
    for s in [&front, &back] {
        s.set_nonblocking(true).unwrap();
        assert!(sys::enable_recv_tos(s.as_raw_fd(), v6));
    }
    let addr = front.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let s2 = seen.clone();
    std::thread::spawn(move || {
        let mut batch = RxBatch::with_room(sys::GRO_ROOM);
        let mut client = None;
        while !stop.load(Ordering::Relaxed) {
            let mut idle = true;
            if let Ok(n) = batch.recv(front.as_raw_fd()) {
                idle = false;
                for i in 0..n {
                    client = Some(batch.got[i].from);
                    s2.lock().unwrap().0.push(batch.got[i].tos);
                    let _ = back.send_to(batch.data(i), server);
                }
            }
            if let Ok(n) = batch.recv(back.as_raw_fd()) {
                idle = false;
                for i in 0..n {
                    s2.lock().unwrap().1.push(batch.got[i].tos);
                    if let Some(c) = client {
                        let _ = front.send_to(batch.data(i), c);
                    }
                }
            }
            if idle {
                std::thread::sleep(Duration::from_micros(50));
            }
        }
    });
    (addr, seen)
}

/// Endpoint options with DSCP AF41.
fn marked(listen: bool) -> EndpointConfig {
    EndpointConfig {
        listen,
        dscp: "af41".parse().unwrap(),
        ..EndpointConfig::default()
    }
}

/// A 2 MB upload and a short answer between two endpoints marked AF41: data, ACKs and the
/// handshake all leave with AF41 and ECT(0), over IPv4 and IPv6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_datagram_carries_the_dscp() {
    for at in loopbacks() {
        let server = Endpoint::bind_with(at.parse().unwrap(), marked(true)).unwrap();
        let client = Endpoint::bind_with(at.parse().unwrap(), marked(false)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let (via, seen) = forwarder(at, server.local_addr(), stop.clone());
        let srv = tokio::spawn(async move {
            let mut s = server.accept().await.unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).await.unwrap();
            s.write_all(b"done").await.unwrap();
            s.shutdown().await.unwrap();
            let _ = s.read(&mut [0u8; 1]).await;
            got.len()
        });
        let mut c = client.connect(via).await.unwrap();
        c.write_all(&vec![7u8; 2_000_000]).await.unwrap();
        c.shutdown().await.unwrap();
        let mut answer = Vec::new();
        c.read_to_end(&mut answer).await.unwrap();
        assert_eq!(answer, b"done");
        assert_eq!(srv.await.unwrap(), 2_000_000);
        stop.store(true, Ordering::Relaxed);
        let (up, down) = seen.lock().unwrap().clone();
        assert!(up.len() > 1000, "{at}: {} datagrams up", up.len());
        assert!(!down.is_empty(), "{at}: no ACKs");
        for (dir, v) in [("up", &up), ("down", &down)] {
            let other: Vec<_> = v.iter().filter(|&&t| t != AF41_ECT0).collect();
            assert!(
                other.is_empty(),
                "{at} {dir}: {} of {} datagrams not AF41/ECT(0): {:x?}",
                other.len(),
                v.len(),
                &other[..other.len().min(8)]
            );
        }
    }
}

/// The blocking endpoint marks its datagrams too; an unmarked endpoint sends ECT(0) alone.
#[test]
fn the_blocking_endpoint_and_the_default_class() {
    for at in loopbacks() {
        for (opts, want) in [
            (marked(false), AF41_ECT0),
            (EndpointConfig::default(), sys::ECN_ECT0),
        ] {
            let silent = UdpSocket::bind(at).unwrap();
            silent.set_nonblocking(true).unwrap();
            let to = silent.local_addr().unwrap();
            assert!(sys::enable_recv_tos(silent.as_raw_fd(), to.is_ipv6()));
            let mut ep = stride::blocking::Endpoint::bind_with(at.parse().unwrap(), opts).unwrap();
            // Nobody answers: the SYN (and its resends) is all that leaves.
            let _ = ep.connect(to, Duration::from_millis(50));
            let mut batch = RxBatch::new();
            let n = batch.recv(silent.as_raw_fd()).expect("the SYN arrived");
            assert!(n >= 1);
            assert_eq!(batch.got[0].tos, want, "{at}");
        }
    }
}
