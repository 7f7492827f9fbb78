//! Experiment: the protocol core's own cost on a 64-byte round trip. Both sides drive
//! `stride_proto::Endpoint` on one thread over a blocking UDP socket (no tokio, no lock, no
//! driver thread); `udp` mode is the same loop without the core.
//!
//! `rr_floor server ADDR [udp]` / `rr_floor client ADDR COUNT [udp]`
//!
//! The client also reports the core's own time per round trip on its side (every call into
//! `stride_proto` timed, the system calls not), beside the same exchange's cost in memory
//! (`cargo bench -p stride-proto --bench rr`): how much dearer the same work is between
//! system calls than in a tight loop.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use stride_proto::{Endpoint, Event};

fn now(base: Instant) -> u64 {
    base.elapsed().as_nanos() as u64 + 1_000_000
}

/// Nanoseconds spent inside the core (client side).
static CORE_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// How many sections [`CORE_NS`] adds up.
static SECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs `f` (a call into the core) and adds its duration to [`CORE_NS`].
fn timed<R>(f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    CORE_NS.fetch_add(
        t.elapsed().as_nanos() as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
    SECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    r
}

fn flush(ep: &mut Endpoint, sock: &UdpSocket, t: u64, buf: &mut [u8]) {
    while let Some(tx) = timed(|| ep.poll_transmit(t, buf)) {
        sock.send_to(&buf[..tx.len], tx.remote).unwrap();
    }
}

/// Waits for one datagram (at most until the core's next deadline, roughly: the socket's
/// timeout is only changed between 100 µs and 10 ms, to keep system calls off the path) and
/// hands it to the core.
fn receive(ep: &mut Endpoint, sock: &UdpSocket, base: Instant, cur: &mut u64, buf: &mut [u8]) {
    let t = now(base);
    let wait = timed(|| ep.poll_timeout())
        .map(|d| d.saturating_sub(t))
        .unwrap_or(10_000_000);
    let w = if wait < 1_000_000 {
        100_000
    } else {
        10_000_000
    };
    if w != *cur {
        sock.set_read_timeout(Some(Duration::from_nanos(w)))
            .unwrap();
        *cur = w;
    }
    if let Ok((n, from)) = sock.recv_from(buf) {
        let t = now(base);
        timed(|| ep.handle(t, from, &buf[..n]));
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let addr: SocketAddr = a[2].parse().unwrap();
    let udp = a.iter().any(|x| x == "udp");
    let base = Instant::now();
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; 65536];
    if a[1] == "server" {
        let sock = UdpSocket::bind(addr).unwrap();
        if udp {
            loop {
                let (n, from) = sock.recv_from(&mut buf).unwrap();
                sock.send_to(&buf[..n], from).unwrap();
            }
        }
        let mut ep = Endpoint::new(stride::host_config(10_000_000_000), [7; 16], 1);
        ep.listen(true);
        let mut cur = 0u64;
        loop {
            receive(&mut ep, &sock, base, &mut cur, &mut buf);
            let t = now(base);
            ep.handle_timeout(t);
            while let Some((h, ev)) = ep.poll_event() {
                if let Event::Readable = ev {
                    while let Ok(n) = ep.read(h, &mut out) {
                        if n == 0 {
                            break;
                        }
                        ep.write(h, &out[..n]).unwrap();
                    }
                }
            }
            flush(&mut ep, &sock, now(base), &mut out);
        }
    }
    let count: usize = a[3].parse().unwrap();
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let req = [0x5au8; 64];
    let mut rtts = Vec::with_capacity(count);
    if udp {
        for _ in 0..count {
            let s = Instant::now();
            sock.send_to(&req, addr).unwrap();
            sock.recv_from(&mut buf).unwrap();
            rtts.push(s.elapsed().as_nanos() as u64);
        }
    } else {
        let mut ep = Endpoint::new(stride::host_config(10_000_000_000), [9; 16], 2);
        let h = ep.connect(now(base), addr).unwrap();
        let mut connected = false;
        let mut i = 0usize;
        let mut got = 0usize;
        let mut start = Instant::now();
        let mut sent = false;
        let mut cur = 0u64;
        while i < count {
            let t = now(base);
            let t0 = Instant::now();
            ep.handle_timeout(t);
            while let Some((_, ev)) = ep.poll_event() {
                match ev {
                    Event::Connected => connected = true,
                    Event::Readable => {
                        while let Ok(n) = ep.read(h, &mut out) {
                            if n == 0 {
                                break;
                            }
                            got += n;
                        }
                    }
                    _ => {}
                }
            }
            if connected && sent && got >= 64 {
                rtts.push(start.elapsed().as_nanos() as u64);
                got -= 64;
                i += 1;
                sent = false;
            }
            if connected && !sent && i < count {
                start = Instant::now();
                ep.write(h, &req).unwrap();
                sent = true;
            }
            CORE_NS.fetch_add(
                t0.elapsed().as_nanos() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
            SECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            flush(&mut ep, &sock, now(base), &mut out);
            receive(&mut ep, &sock, base, &mut cur, &mut buf);
        }
    }
    if !udp {
        // What one timing costs, to subtract: the same pair of clock reads around nothing.
        let n = 100_000u32;
        let mut empty = 0u64;
        for _ in 0..n {
            let s = Instant::now();
            empty += s.elapsed().as_nanos() as u64;
        }
        let per = empty as f64 / f64::from(n);
        let sections = SECTIONS.load(std::sync::atomic::Ordering::Relaxed) as f64 / count as f64;
        let core = CORE_NS.load(std::sync::atomic::Ordering::Relaxed) as f64 / count as f64;
        println!(
            "client core time per round trip {:.0} ns ({core:.0} measured, less {sections:.1} sections x {per:.0} ns of timing)",
            core - sections * per
        );
    }
    let warm = count / 10;
    let mut r = rtts[warm..].to_vec();
    r.sort_unstable();
    println!(
        "p50 {:.1} us  p99 {:.1} us",
        r[r.len() / 2] as f64 / 1e3,
        r[r.len() * 99 / 100] as f64 / 1e3
    );
}
