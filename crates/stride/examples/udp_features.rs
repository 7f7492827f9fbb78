//! Experiment: what each of the endpoint's socket features costs a 64-byte UDP echo, without
//! the protocol. Both sides run the same loop on a blocking socket; features are switched on
//! by name: `stamps` (SO_TIMESTAMPNS), `gro` (UDP_GRO), `ecn` (IP_RECVTOS, ECT(0) sent),
//! `ovfl` (SO_RXQ_OVFL), `mmsg` (receive with `RxBatch`: recvmmsg and MSG_WAITFORONE, as
//! `stride::blocking` does), `buf` (the endpoint's 4 / 16 MiB socket buffers), `timeo`
//! (a receive timeout, as the blocking endpoint sets). `all` is every one.
//!
//! `udp_features server ADDR [FEATURES...]` / `udp_features client ADDR COUNT [FEATURES...]`;
//! the client prints the p50 round trip and its user and system CPU per round trip.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use stride::sys;

fn has(a: &[String], f: &str) -> bool {
    a.iter().any(|x| x == f || x == "all")
}

fn open(addr: SocketAddr, a: &[String]) -> UdpSocket {
    let sock = socket2::Socket::new(
        socket2::Domain::IPV4,
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )
    .unwrap();
    if has(a, "buf") {
        sys::set_buffers(&sock, 4 << 20, 16 << 20);
    }
    sock.bind(&addr.into()).unwrap();
    let fd = sock.as_raw_fd();
    if has(a, "stamps") {
        assert!(sys::enable_rx_timestamps(fd));
    }
    if has(a, "gro") {
        assert!(sys::enable_gro(fd));
    }
    if has(a, "ovfl") {
        assert!(sys::enable_rxq_ovfl(fd));
    }
    if has(a, "ecn") {
        assert!(sys::enable_ecn(fd, false));
    }
    let sock: UdpSocket = sock.into();
    if has(a, "timeo") {
        sock.set_read_timeout(Some(Duration::from_millis(8)))
            .unwrap();
    }
    sock
}

/// One datagram in: (length, sender).
fn recv(
    sock: &UdpSocket,
    rx: &mut sys::RxBatch,
    mmsg: bool,
    buf: &mut [u8],
) -> (usize, SocketAddr) {
    if mmsg {
        loop {
            match rx.recv_wait(sock.as_raw_fd()) {
                Ok(n) if n > 0 => {
                    let r = rx.got[0];
                    return (r.len, r.from);
                }
                _ => continue,
            }
        }
    }
    loop {
        if let Ok(x) = sock.recv_from(buf) {
            return x;
        }
    }
}

fn cpu_us() -> (f64, f64) {
    // SAFETY: getrusage fills the struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |v: libc::timeval| v.tv_sec as f64 * 1e6 + v.tv_usec as f64;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let addr: SocketAddr = a[2].parse().unwrap();
    let mmsg = has(&a, "mmsg");
    let mut rx = sys::RxBatch::new();
    let mut buf = vec![0u8; 65536];
    if a[1] == "server" {
        let sock = open(addr, &a);
        loop {
            let (n, from) = recv(&sock, &mut rx, mmsg, &mut buf);
            let _ = sys::send_one(sock.as_raw_fd(), &from, &buf[..n.min(64)]);
        }
    }
    let count: usize = a[3].parse().unwrap();
    let sock = open("127.0.0.1:0".parse().unwrap(), &a);
    let req = [0x5au8; 64];
    let mut rtts = Vec::with_capacity(count);
    let warm = count / 10;
    let mut c0 = (0.0, 0.0);
    for i in 0..count + warm {
        if i == warm {
            c0 = cpu_us();
        }
        let s = Instant::now();
        sys::send_one(sock.as_raw_fd(), &addr, &req).unwrap();
        recv(&sock, &mut rx, mmsg, &mut buf);
        if i >= warm {
            rtts.push(s.elapsed().as_nanos() as u64);
        }
    }
    let c1 = cpu_us();
    rtts.sort_unstable();
    println!(
        "p50 {:.1} us  user {:.2} sys {:.2} us per round trip",
        rtts[rtts.len() / 2] as f64 / 1e3,
        (c1.0 - c0.0) / count as f64,
        (c1.1 - c0.1) / count as f64
    );
}
