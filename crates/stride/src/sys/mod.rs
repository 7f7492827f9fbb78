//! Linux socket plumbing: socket buffers, kernel receive timestamps (`SO_TIMESTAMPNS`) and
//! batched datagram I/O (`recvmmsg`/`sendmmsg`) with a one-datagram fallback.
//!
//! Every function here works on a raw file descriptor in non-blocking mode; readiness is
//! handled by the caller (the endpoint's driver thread waits in `ppoll` on the socket and its
//! eventfd, or spins for short waits: see the `endpoint` module).
//!
//! This module holds the clocks, socket options and process settings; `rx` the receive
//! batches ([`RxBatch`]: `recvmmsg`, control messages, GRO), `tx` the send batches
//! ([`TxBatch`]: `sendmmsg`, GSO).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

mod rx;
mod tx;

pub use rx::{Received, RxBatch, RX_ALLOC, RX_SHARE_MIN};
pub use tx::{disable_gso, gso, send_many, send_one, TxBatch, MAX_PARTS};

/// Room for one datagram at the default payload size (1440 bytes, a 1500-byte MTU): anything
/// longer is truncated by the kernel and dropped by us. Endpoints configured for larger
/// datagrams (jumbo frames, [`datagram_room`]) size their buffers by their own payload.
pub const DATAGRAM_ROOM: usize = 2048;

/// Room for one datagram of `max_payload` bytes of payload: [`DATAGRAM_ROOM`] or the whole
/// datagram (header and payload) rounded up to 64 bytes, whichever is larger.
pub fn datagram_room(max_payload: usize) -> usize {
    DATAGRAM_ROOM.max((stride_proto::wire::HEADER_LEN + max_payload).next_multiple_of(64))
}
/// Datagrams moved per system call at most.
pub const BATCH: usize = 32;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts: libc::timespec = unsafe { zeroed() };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of `CLOCK_MONOTONIC`: the one clock of timers, tx stamps and (converted) rx
/// stamps, so a step of the wall clock (NTP, an administrator) disturbs nothing.
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The wall clock and the monotonic clock read back to back: `(realtime, monotonic)`.
pub fn clock_pair() -> (u64, u64) {
    let r = clock_ns(libc::CLOCK_REALTIME);
    (r, now_ns())
}

/// A kernel receive stamp (`CLOCK_REALTIME`, the only clock `SO_TIMESTAMPNS` offers) on the
/// monotonic clock, given a `(realtime, monotonic)` pair read after the receive: the packet's
/// age on the wall clock, subtracted from monotonic now. An age outside 0..1 s (the wall clock
/// stepped between the stamp and the pair) gives None: the caller then uses its own reading.
pub fn stamp_to_monotonic(stamp: u64, pair: (u64, u64)) -> Option<u64> {
    let age = pair.0.checked_sub(stamp)?;
    (age < 1_000_000_000).then(|| pair.1.saturating_sub(age))
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, val: i32) -> io::Result<()> {
    // SAFETY: a plain int option on a descriptor we own.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &val as *const i32 as *const libc::c_void,
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks for a send buffer of `send` and a receive buffer of `recv` bytes: first with the
/// `*FORCE` options (root may exceed `net.core.rmem_max`), then with the ordinary ones.
pub fn set_buffers(sock: &socket2::Socket, send: usize, recv: usize) {
    use std::os::fd::AsRawFd;
    let fd = sock.as_raw_fd();
    let v = recv.min(i32::MAX as usize) as i32;
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
        let _ = sock.set_recv_buffer_size(recv);
    }
    let v = send.min(i32::MAX as usize) as i32;
    if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, v).is_err() {
        let _ = sock.set_send_buffer_size(send);
    }
}

/// Linux `UDP_GRO` socket option (not exported by every `libc` target).
const UDP_GRO: i32 = 104;
/// Receive slot size with UDP GRO: the largest coalesced message the kernel builds.
pub const GRO_ROOM: usize = 65_536;
/// Slots per receive call with UDP GRO (each holds up to 64 KiB of coalesced datagrams).
pub const GRO_BATCH: usize = 8;

/// Turns on UDP GRO (Linux 5.0+): runs of datagrams from one sender arrive as one message with
/// their segment size in a control message. False when the kernel refuses.
pub fn enable_gro(fd: RawFd) -> bool {
    setsockopt_int(fd, libc::SOL_UDP, UDP_GRO, 1).is_ok()
}

/// Asks the kernel to report with every received datagram how many datagrams it has dropped
/// at this socket so far for lack of buffer room (`SO_RXQ_OVFL`); false when it refuses.
pub fn enable_rxq_ovfl(fd: RawFd) -> bool {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RXQ_OVFL, 1).is_ok()
}

/// The MTU of the kernel's route to `to` (`IP_MTU` / `IPV6_MTU` of a UDP socket connected to
/// it; nothing is sent), `None` when the kernel cannot tell (no route).
pub fn path_mtu(to: SocketAddr) -> Option<u32> {
    let any: SocketAddr = if to.is_ipv6() {
        SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))
    };
    let probe = std::net::UdpSocket::bind(any).ok()?;
    probe.connect(to).ok()?;
    let (level, name) = if to.is_ipv6() {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: reads one int into `v`, whose size is passed.
    let r = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&probe),
            level,
            name,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0 && v > 0).then_some(v as u32)
}

/// Path-MTU discovery with nothing fragmented (`IP_MTU_DISCOVER` = `IP_PMTUDISC_DO`, and
/// `IPV6_MTU_DISCOVER` on IPv6 sockets): every datagram leaves with Don't Fragment set, and one
/// larger than the route's MTU (the interface's, or less once an ICMP "fragmentation needed"
/// / "packet too big" lowered it) is refused with `EMSGSIZE` instead of being fragmented by
/// this host. True when it took.
pub fn set_no_fragment(fd: RawFd, v6: bool) -> bool {
    // Both levels on a dual-stack socket, each tried whatever the other did: IPv4 peers
    // (`::ffff:a.b.c.d`) take the IPv4 option.
    let v4 = setsockopt_int(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
    .is_ok();
    let v6 = !v6
        || setsockopt_int(
            fd,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DO,
        )
        .is_ok();
    v4 && v6
}

/// Whether a send failed because the datagram is larger than the route's MTU ([`set_no_fragment`]).
pub fn too_big(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EMSGSIZE)
}

/// Turns on kernel receive timestamps; false when the kernel refuses.
pub fn enable_rx_timestamps(fd: RawFd) -> bool {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1).is_ok()
}

fn to_storage(a: &SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: all-zero is a valid sockaddr_storage.
    let mut st: libc::sockaddr_storage = unsafe { zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in, sin) };
            (st, size_of::<libc::sockaddr_in>() as libc::socklen_t)
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above.
            unsafe { std::ptr::write(&mut st as *mut _ as *mut libc::sockaddr_in6, sin6) };
            (st, size_of::<libc::sockaddr_in6>() as libc::socklen_t)
        }
    }
}

fn from_storage(st: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match i32::from(st.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let sin = unsafe { &*(st as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let sin6 = unsafe { &*(st as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

static NO_MMSG: AtomicBool = AtomicBool::new(false);

fn mmsg_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS) | Some(libc::EOPNOTSUPP)
    )
}

/// Whether batched calls are in use (false after a fallback).
pub fn batching() -> bool {
    !NO_MMSG.load(Ordering::Relaxed)
}

/// ECN codepoint "congestion experienced".
pub const ECN_CE: u8 = 3;
/// ECN codepoint ECT(0), what STRIDE senders set (spec 3.3).
pub const ECN_ECT0: u8 = 2;

/// Asks the kernel for each datagram's TOS / traffic class (`IP_RECVTOS`, and
/// `IPV6_RECVTCLASS` on IPv6 sockets), whose ECN bits the receive batch reports. True when
/// it took.
pub fn enable_recv_tos(fd: RawFd, v6: bool) -> bool {
    let v4 = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1).is_ok();
    v4 && (!v6 || setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1).is_ok())
}

/// Marks every datagram the socket sends with the TOS byte / traffic class `tos` (DSCP in the
/// upper six bits, ECN in the lower two: [`crate::Dscp::tos`]): `IP_TOS`, and on IPv6 sockets
/// `IPV6_TCLASS` too (a dual-stack socket sends to IPv4 peers with IPv4 headers, which take
/// `IP_TOS`). Socket-wide, so it holds for every way the socket sends (`sendmmsg`, GSO
/// messages, whose segments copy the header, and the application threads' direct sends).
pub fn set_tos(fd: RawFd, v6: bool, tos: u8) -> io::Result<()> {
    setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, i32::from(tos))?;
    if v6 {
        setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, i32::from(tos))?;
    }
    Ok(())
}

/// [`enable_recv_tos`] and ECT(0) on our sends (DSCP 0) in one call; true when both took.
pub fn enable_ecn(fd: RawFd, v6: bool) -> bool {
    enable_recv_tos(fd, v6) && set_tos(fd, v6, ECN_ECT0).is_ok()
}

/// How much free memory glibc's heap keeps instead of returning it to the kernel
/// ([`keep_freed_memory`]).
pub const HEAP_KEEP: usize = 64 << 20;

/// Tells glibc's allocator to keep up to [`HEAP_KEEP`] (64 MiB) of freed memory instead of
/// returning it to the kernel (`M_TRIM_THRESHOLD`; this also fixes the otherwise adaptive
/// `mmap` threshold at its 128 KiB default). A receiver hands its 64 KiB receive buffers to
/// the connections without a copy and takes fresh ones; the reader frees them on another
/// thread, glibc trims the freed top of its heap, and the next buffers fault their pages back
/// in: 43 000 page faults (a tenth of the receiving thread's time in `clear_page` and
/// `exc_page_fault`) per 2 GB received on loopback, 1 800 to 3 200 with this
/// (docs/results.md, "What the host settings buy"). Process-wide, so it is the program's choice: the
/// `stride` command calls it first thing; a library user may too. Returns false where it does
/// not apply (not glibc) or glibc refused.
pub fn keep_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallopt takes two integers and only changes allocator parameters.
        unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, HEAP_KEEP as libc::c_int) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// `MemAvailable` of `/proc/meminfo` in bytes, when readable.
pub fn mem_available() -> Option<u64> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = m.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Sixteen random bytes from the kernel (`getrandom`); an error when it has none.
pub fn random16() -> io::Result<[u8; 16]> {
    let mut b = [0u8; 16];
    // No predictable fallback (time, process id): without the kernel's randomness, fail.
    getrandom::getrandom(&mut b)
        .map_err(|e| io::Error::other(format!("no random numbers from the kernel: {e}")))?;
    Ok(b)
}

#[cfg(test)]
mod clock_tests {
    use super::*;

    #[test]
    fn timers_run_on_the_monotonic_clock() {
        // Not on CLOCK_REALTIME, which a wall-clock step moves.
        let mono = clock_ns(libc::CLOCK_MONOTONIC);
        let now = now_ns();
        let real = clock_ns(libc::CLOCK_REALTIME);
        assert!(
            now >= mono && now - mono < 1_000_000_000,
            "now_ns is not CLOCK_MONOTONIC"
        );
        assert!(
            real.abs_diff(now) > 1_000_000_000,
            "now_ns follows the wall clock"
        );
    }

    #[test]
    fn kernel_stamps_convert_to_the_monotonic_clock() {
        let pair = (1_700_000_000_000_000_000, 5_000_000_000);
        // A datagram stamped 30 us before the pair was read.
        assert_eq!(
            stamp_to_monotonic(pair.0 - 30_000, pair),
            Some(pair.1 - 30_000)
        );
        // The wall clock stepped back (stamp in the future) or forward by more than 1 s.
        assert_eq!(stamp_to_monotonic(pair.0 + 1, pair), None);
        assert_eq!(stamp_to_monotonic(pair.0 - 2_000_000_000, pair), None);
    }

    #[test]
    fn loopback_routes_report_their_mtu() {
        // Loopback's MTU is 65536 on Linux; IPv4 reports at most 65535 (its packet size
        // limit). IPv6 only where the host has ::1.
        let v4 = path_mtu("127.0.0.1:9".parse().unwrap()).expect("a route to loopback");
        assert!((65_535..=65_536).contains(&v4), "{v4}");
        if let Some(m) = path_mtu("[::1]:9".parse().unwrap()) {
            assert!((65_535..=65_536).contains(&m), "{m}");
        }
    }

    #[test]
    fn random_bytes_come_from_the_kernel() {
        let (a, b) = (random16().unwrap(), random16().unwrap());
        assert_ne!(a, b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minor_faults_of_this_thread() -> i64 {
        // SAFETY: getrusage fills the struct it is given.
        let mut u: libc::rusage = unsafe { zeroed() };
        assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
        u.ru_minflt
    }

    /// Freed receive-sized buffers stay with the process: a second round of 16 MiB in 64 KiB
    /// buffers (each written, then all freed) reuses the first round's pages instead of
    /// faulting 4 096 fresh ones in (glibc trims the freed top of its heap without the setting).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn freed_receive_buffers_are_kept() {
        assert!(keep_freed_memory());
        let round = || {
            let bufs: Vec<Vec<u8>> = (0..256).map(|i| vec![i as u8; 64 << 10]).collect();
            std::hint::black_box(&bufs);
        };
        round();
        let before = minor_faults_of_this_thread();
        for _ in 0..4 {
            round();
        }
        let faults = minor_faults_of_this_thread() - before;
        assert!(
            faults < 400,
            "{faults} page faults in 4 rounds of 4 096 pages"
        );
    }
}
