//! Linux socket plumbing: socket buffers, kernel receive timestamps (`SO_TIMESTAMPNS`) and
//! batched datagram I/O (`recvmmsg`/`sendmmsg`) with a one-datagram fallback.
//!
//! Every function here works on a raw file descriptor in non-blocking mode; readiness is
//! handled by the caller (the endpoint's driver thread waits in `ppoll` on the socket and its
//! eventfd, or spins for short waits: see the `endpoint` module).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

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
static NO_GSO: AtomicBool = AtomicBool::new(false);
/// Most datagrams in one GSO message.
const GSO_MAX_SEGMENTS: usize = 32;

fn gso_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO) | Some(libc::EINVAL) | Some(libc::ENOPROTOOPT) | Some(libc::EOPNOTSUPP)
    )
}

fn same_addr(a: &libc::sockaddr_storage, b: &libc::sockaddr_storage, len: libc::socklen_t) -> bool {
    let n = (len as usize).min(size_of::<libc::sockaddr_storage>());
    // SAFETY: both are live sockaddr_storage values of at least n bytes.
    unsafe {
        std::slice::from_raw_parts(a as *const _ as *const u8, n)
            == std::slice::from_raw_parts(b as *const _ as *const u8, n)
    }
}

/// Turns UDP GSO off for this process (the fallback path; also for tests).
pub fn disable_gso() {
    NO_GSO.store(true, Ordering::Relaxed);
}

/// Whether UDP GSO is in use (false after the kernel refused it once).
pub fn gso() -> bool {
    !NO_GSO.load(Ordering::Relaxed)
}

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

/// One received message of a [`RxBatch`]: one datagram, or with GRO several of `seg` bytes
/// each (the last may be shorter).
#[derive(Clone, Copy, Debug)]
pub struct Received {
    /// Sender.
    pub from: SocketAddr,
    /// Length in the batch buffer.
    pub len: usize,
    /// Size of each coalesced datagram (equal to `len` without GRO).
    pub seg: usize,
    /// Kernel receive timestamp converted to [`now_ns`]'s clock, when the kernel gave one
    /// (and the wall clock did not step meanwhile).
    pub kernel_ts: Option<u64>,
    /// The IP header's ECN codepoint (0 Not-ECT, 2 ECT(0), 1 ECT(1), 3 CE; 0 when the kernel
    /// did not report the TOS / traffic class).
    pub ecn: u8,
}

/// ECN codepoint "congestion experienced".
pub const ECN_CE: u8 = 3;
/// ECN codepoint ECT(0), what STRIDE senders set (spec 3.3).
pub const ECN_ECT0: u8 = 2;

/// Asks the kernel for each datagram's TOS / traffic class (`IP_RECVTOS`, and
/// `IPV6_RECVTCLASS` on IPv6 sockets) and marks our sends ECT(0). True when both took.
pub fn enable_ecn(fd: RawFd, v6: bool) -> bool {
    let tos = i32::from(ECN_ECT0);
    let v4 = setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_RECVTOS, 1).is_ok()
        && setsockopt_int(fd, libc::IPPROTO_IP, libc::IP_TOS, tos).is_ok();
    if !v6 {
        return v4;
    }
    setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS, 1).is_ok()
        && setsockopt_int(fd, libc::IPPROTO_IPV6, libc::IPV6_TCLASS, tos).is_ok()
}

/// Allocation size of a receive slot's buffer: received messages are split off it as
/// [`bytes::Bytes`] (handed to the connections without a copy) until less than one message's
/// room is left, then the slot takes a fresh buffer (or its old one back, once every slice of
/// it has been dropped).
pub const RX_ALLOC: usize = 64 * 1024;
/// A received message at least this long (a GRO run of datagrams) is split off its slot's
/// buffer and shared without a copy; a shorter one stays in the slot, which is reused for the
/// next call, and its datagrams are copied by whoever keeps them. A shared slice pins its whole
/// allocation until dropped, so sharing only long messages bounds that overhead at
/// `RX_ALLOC / RX_SHARE_MIN` (2x) instead of 64 KiB per held datagram.
pub const RX_SHARE_MIN: usize = 32 * 1024;

/// Buffers for receiving up to [`BATCH`] messages in one call ([`GRO_BATCH`] with GRO). Each
/// slot receives into the spare room of its own `BytesMut`; a received message is split off
/// as [`bytes::Bytes`], so its datagrams can be kept (as slices) by whoever handles them.
pub struct RxBatch {
    slots_buf: Vec<bytes::BytesMut>,
    /// The shared messages of the last call (None: the message is in its slot's buffer).
    held: Vec<Option<bytes::Bytes>>,
    room: usize,
    slots: usize,
    names: Vec<libc::sockaddr_storage>,
    ctrl: Vec<[u64; 16]>,
    iov: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    /// Leading slots whose buffer and header must be set up again before the next call: those
    /// the last call filled (the kernel rewrote their headers' lengths and flags, and their
    /// buffers were handed on), or every slot after a failed call. The others are as set.
    dirty: usize,
    /// What the last [`RxBatch::recv`] got.
    pub got: Vec<Received>,
    /// Datagrams dropped because they did not fit in a slot (the room the batch was made with).
    pub truncated: u64,
    /// The kernel's count of datagrams dropped at this socket because its receive buffer was
    /// full (`SO_RXQ_OVFL`, the latest value seen; 0 when the option is off).
    pub overflow: u64,
    /// [`now_ns`] read just after the last receive that got something (the monotonic half of
    /// the clock pair its stamps were converted with).
    pub read_at: u64,
}

impl Default for RxBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RxBatch {
    /// Empty buffers for one datagram per message.
    pub fn new() -> Self {
        Self::with_slots(BATCH, DATAGRAM_ROOM)
    }

    /// Empty buffers for one datagram per message of up to `room` bytes (see
    /// [`datagram_room`]).
    pub fn with_room(room: usize) -> Self {
        Self::with_slots(BATCH, room.max(DATAGRAM_ROOM))
    }

    /// Empty buffers for a socket with UDP GRO on ([`GRO_BATCH`] slots of [`GRO_ROOM`] bytes).
    pub fn for_gro() -> Self {
        Self::with_slots(GRO_BATCH, GRO_ROOM)
    }

    fn with_slots(slots: usize, room: usize) -> Self {
        RxBatch {
            slots_buf: (0..slots)
                .map(|_| bytes::BytesMut::with_capacity(RX_ALLOC.max(room)))
                .collect(),
            held: Vec::with_capacity(slots),
            room,
            slots,
            // SAFETY: all-zero is valid for these C structs.
            names: vec![unsafe { zeroed() }; slots],
            ctrl: vec![[0; 16]; slots],
            iov: vec![unsafe { zeroed() }; slots],
            hdrs: vec![unsafe { zeroed() }; slots],
            dirty: slots,
            got: Vec::with_capacity(slots),
            truncated: 0,
            overflow: 0,
            read_at: 0,
        }
    }

    /// Messages one call can return.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The payload of the `i`-th message of the last call.
    pub fn data(&self, i: usize) -> &[u8] {
        match &self.held[i] {
            Some(b) => &b[..self.got[i].len],
            None => &self.slots_buf[i][..self.got[i].len],
        }
    }

    /// The `i`-th message of the last call as shared bytes (no copy), when it was long enough
    /// to be shared ([`RX_SHARE_MIN`]).
    pub fn message(&self, i: usize) -> Option<&bytes::Bytes> {
        self.held[i].as_ref()
    }

    /// The datagrams of the `i`-th message of the last call (one without GRO).
    pub fn datagrams(&self, i: usize) -> std::slice::Chunks<'_, u8> {
        self.data(i).chunks(self.got[i].seg.max(1))
    }

    /// The `i`-th message of the last call as shared bytes (no copy) with its datagram size
    /// (a GRO message's datagrams are that long, the last possibly shorter), for
    /// `Endpoint::handle_segments`; none when the message was not shared (see
    /// [`RxBatch::message`]) or was truncated.
    pub fn segments(&self, i: usize) -> Option<(&bytes::Bytes, usize)> {
        let m = self.held[i].as_ref()?;
        let r = &self.got[i];
        (r.len > 0 && m.len() == r.len).then_some((m, r.seg.max(1)))
    }

    /// Receives what is queued (non-blocking); `WouldBlock` when nothing is.
    pub fn recv(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_DONTWAIT)
    }

    /// Like [`RxBatch::recv`] on a blocking socket: waits for the first datagram (at most the
    /// socket's `SO_RCVTIMEO`, then `WouldBlock`), then takes what else is queued without
    /// waiting (`MSG_WAITFORONE`).
    pub fn recv_wait(&mut self, fd: RawFd) -> io::Result<usize> {
        self.recv_flags(fd, libc::MSG_WAITFORONE)
    }

    fn recv_flags(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<usize> {
        self.got.clear();
        self.held.clear();
        // Only the slots the last call used: setting up every slot on each call (8 on a GRO
        // socket, 32 without) cost a 64-byte round trip about 385 instructions per receive
        // (`bench/rr_instructions.py`, blocking), where one slot is filled.
        for i in 0..self.dirty {
            let b = &mut self.slots_buf[i];
            // A message left in its slot (not shared) is done with: reuse the room.
            b.clear();
            if b.capacity() < self.room {
                // Reclaims the old buffer when nothing refers to it any more, else allocates.
                b.reserve(RX_ALLOC.max(self.room));
            }
            self.iov[i] = libc::iovec {
                // The kernel writes into the spare room; only what it wrote becomes the length.
                iov_base: b.spare_capacity_mut().as_mut_ptr() as *mut libc::c_void,
                iov_len: self.room,
            };
            // SAFETY: zero is a valid msghdr; every pointer set below outlives the call.
            let mut m: libc::msghdr = unsafe { zeroed() };
            m.msg_name = &mut self.names[i] as *mut _ as *mut libc::c_void;
            m.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            m.msg_iov = &mut self.iov[i];
            m.msg_iovlen = 1;
            m.msg_control = self.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            m.msg_controllen = size_of::<[u64; 16]>() as _;
            self.hdrs[i] = libc::mmsghdr {
                msg_hdr: m,
                msg_len: 0,
            };
        }
        let n = if !NO_MMSG.load(Ordering::Relaxed) {
            // SAFETY: hdrs holds `slots` initialised headers pointing at our buffers.
            let r = unsafe {
                libc::recvmmsg(
                    fd,
                    self.hdrs.as_mut_ptr(),
                    self.slots as libc::c_uint,
                    flags,
                    std::ptr::null_mut(),
                )
            };
            if r < 0 {
                self.dirty = self.slots;
                let e = io::Error::last_os_error();
                if !mmsg_unsupported(&e) {
                    return Err(e);
                }
                NO_MMSG.store(true, Ordering::Relaxed);
                return self.recv_flags(fd, flags);
            }
            r as usize
        } else {
            // SAFETY: hdrs[0] is initialised and points at our buffers.
            // (MSG_WAITFORONE is recvmmsg's; a single receive waits unless told not to.)
            let one = flags & libc::MSG_DONTWAIT;
            let r = unsafe { libc::recvmsg(fd, &mut self.hdrs[0].msg_hdr, one) };
            if r < 0 {
                self.dirty = self.slots;
                return Err(io::Error::last_os_error());
            }
            self.hdrs[0].msg_len = r as libc::c_uint;
            1
        };
        self.dirty = n;
        let pair = clock_pair();
        self.read_at = pair.1;
        for i in 0..n {
            let h = &self.hdrs[i];
            let got = (h.msg_len as usize).min(self.room);
            let b = &mut self.slots_buf[i];
            // SAFETY: the kernel wrote `got` bytes at the start of the spare room (msg_len is
            // at most the iovec's length without MSG_TRUNC in the call's flags).
            unsafe { b.set_len(got) };
            self.held
                .push((got >= RX_SHARE_MIN).then(|| b.split().freeze()));
            let Some(from) = from_storage(&self.names[i]) else {
                self.got.push(Received {
                    from: SocketAddr::from(([0, 0, 0, 0], 0)),
                    len: 0,
                    seg: 0,
                    kernel_ts: None,
                    ecn: 0,
                });
                continue;
            };
            let mut len = h.msg_len as usize;
            if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                self.truncated += 1;
                len = 0;
            }
            let mut kernel_ts = None;
            let mut ecn = 0u8;
            let mut seg = len;
            // SAFETY: walking the control messages the kernel wrote into ctrl[i].
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SCM_TIMESTAMPNS
                    {
                        let ts: libc::timespec =
                            std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        kernel_ts = stamp_to_monotonic(
                            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
                            pair,
                        );
                    } else if (*c).cmsg_level == libc::IPPROTO_IP
                        && ((*c).cmsg_type == libc::IP_TOS || (*c).cmsg_type == libc::IP_RECVTOS)
                    {
                        ecn = *libc::CMSG_DATA(c) & 3;
                    } else if (*c).cmsg_level == libc::IPPROTO_IPV6
                        && (*c).cmsg_type == libc::IPV6_TCLASS
                    {
                        let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32);
                        ecn = (t & 3) as u8;
                    } else if (*c).cmsg_level == libc::SOL_SOCKET
                        && (*c).cmsg_type == libc::SO_RXQ_OVFL
                    {
                        let d = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32);
                        // A 32-bit counter that wraps: keep the largest in a 64-bit total.
                        let low = self.overflow as u32;
                        self.overflow += u64::from(d.wrapping_sub(low));
                    } else if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                        let s = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32);
                        if s > 0 {
                            seg = (s as usize).min(len);
                        }
                    }
                    c = libc::CMSG_NXTHDR(&h.msg_hdr, c);
                }
            }
            self.got.push(Received {
                from,
                len,
                seg,
                kernel_ts,
                ecn,
            });
        }
        Ok(n)
    }
}

/// Most payload slices one queued datagram keeps as separate iovec entries; a datagram
/// whose payload spans more chunks of the send buffer is flattened into its slot (copied).
pub const MAX_PARTS: usize = 8;

/// Datagrams waiting to be sent in one call. A datagram is its slot's bytes (the header, or
/// the whole datagram) followed by its payload parts (slices of a connection's send buffer,
/// passed to the kernel as further iovec entries: no copy in user space).
pub struct TxBatch {
    bufs: Vec<u8>,
    /// Bytes per slot (at least [`DATAGRAM_ROOM`]).
    room: usize,
    /// Whole datagram length (slot bytes + parts).
    lens: Vec<usize>,
    /// Bytes of the datagram in its slot.
    heads: Vec<usize>,
    parts: Vec<Vec<bytes::Bytes>>,
    iov: Vec<libc::iovec>,
    names: Vec<(libc::sockaddr_storage, libc::socklen_t)>,
    start: usize,
    end: usize,
}

impl Default for TxBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl TxBatch {
    /// Empty, with slots of [`DATAGRAM_ROOM`] bytes.
    pub fn new() -> Self {
        Self::with_room(DATAGRAM_ROOM)
    }
    /// Empty, with slots of `room` bytes (at least [`DATAGRAM_ROOM`]; see [`datagram_room`]).
    pub fn with_room(room: usize) -> Self {
        let room = room.max(DATAGRAM_ROOM);
        TxBatch {
            bufs: vec![0; BATCH * room],
            room,
            lens: vec![0; BATCH],
            heads: vec![0; BATCH],
            parts: (0..BATCH).map(|_| Vec::with_capacity(MAX_PARTS)).collect(),
            iov: Vec::with_capacity(BATCH * (1 + MAX_PARTS)),
            // SAFETY: all-zero is a valid sockaddr_storage.
            names: vec![(unsafe { zeroed() }, 0); BATCH],
            start: 0,
            end: 0,
        }
    }
    /// Nothing queued.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
    /// No room for another datagram.
    pub fn is_full(&self) -> bool {
        self.end == BATCH
    }
    /// Datagrams queued.
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    /// The buffer for the next datagram (call [`TxBatch::commit`] once it is written).
    pub fn next_buf(&mut self) -> &mut [u8] {
        &mut self.bufs[self.end * self.room..(self.end + 1) * self.room]
    }
    /// The slot and the parts list for the next datagram (for a `poll_transmit_parts` that
    /// writes the header into the slot and appends the payload's slices to the list; call
    /// [`TxBatch::commit`] with the whole length).
    pub fn next_slot(&mut self) -> (&mut [u8], &mut Vec<bytes::Bytes>) {
        let e = self.end;
        (
            &mut self.bufs[e * self.room..(e + 1) * self.room],
            &mut self.parts[e],
        )
    }
    /// Queues the datagram written into [`TxBatch::next_buf`] (or [`TxBatch::next_slot`]):
    /// `len` bytes in all, the slot's bytes first and then the slot's parts.
    pub fn commit(&mut self, to: SocketAddr, len: usize) {
        let e = self.end;
        let in_parts: usize = self.parts[e].iter().map(|b| b.len()).sum();
        let mut head = len - in_parts;
        if self.parts[e].len() > MAX_PARTS {
            for b in std::mem::take(&mut self.parts[e]) {
                let at = e * self.room + head;
                self.bufs[at..at + b.len()].copy_from_slice(&b);
                head += b.len();
            }
        }
        self.lens[e] = len;
        self.heads[e] = head;
        self.names[e] = to_storage(&to);
        self.end += 1;
    }
    /// Copies and queues a datagram (false when full).
    pub fn push(&mut self, to: SocketAddr, data: &[u8]) -> bool {
        if self.is_full() || data.len() > self.room {
            return false;
        }
        self.next_buf()[..data.len()].copy_from_slice(data);
        self.commit(to, data.len());
        true
    }

    /// Sends what is queued (non-blocking); returns how many left. On an error other than
    /// `WouldBlock` the first datagram is discarded so one bad destination cannot wedge the queue.
    ///
    /// With UDP GSO (Linux `UDP_SEGMENT`), runs of datagrams to one destination whose sizes are
    /// equal (the last may be shorter) leave as one message that the kernel splits; the first
    /// refusal turns GSO off for the process and the batch is sent datagram by datagram.
    pub fn send(&mut self, fd: RawFd) -> io::Result<usize> {
        if self.is_empty() {
            return Ok(0);
        }
        let gso = !NO_GSO.load(Ordering::Relaxed) && !NO_MMSG.load(Ordering::Relaxed);
        let base = self.bufs.as_mut_ptr();
        // iov[first[k]..first[k + 1]] are datagram k's entries (slot bytes, then parts); the
        // vector is filled before any pointer into it is taken, so it never moves meanwhile.
        let mut first = [0usize; BATCH + 1];
        self.iov.clear();
        for k in self.start..self.end {
            first[k - self.start] = self.iov.len();
            self.iov.push(libc::iovec {
                // SAFETY: inside bufs.
                iov_base: unsafe { base.add(k * self.room) } as *mut libc::c_void,
                iov_len: self.heads[k],
            });
            for b in &self.parts[k] {
                self.iov.push(libc::iovec {
                    iov_base: b.as_ptr() as *mut libc::c_void,
                    iov_len: b.len(),
                });
            }
        }
        first[self.end - self.start] = self.iov.len();
        // SAFETY: zero is a valid mmsghdr.
        let mut hdrs: [libc::mmsghdr; BATCH] = unsafe { zeroed() };
        let mut ctrl = [[0u64; 4]; BATCH];
        // groups[m] = datagrams carried by message m.
        let mut groups = [0usize; BATCH];
        let mut msgs = 0;
        let mut i = self.start;
        while i < self.end {
            let mut j = i + 1;
            if gso {
                let seg = self.lens[i];
                let mut total = seg;
                while j < self.end
                    && self.names[j].1 == self.names[i].1
                    && same_addr(&self.names[j].0, &self.names[i].0, self.names[i].1)
                    && self.lens[j] <= seg
                    && self.lens[j - 1] == seg
                    && total + self.lens[j] <= 60_000
                    && j - i < GSO_MAX_SEGMENTS
                {
                    total += self.lens[j];
                    j += 1;
                }
            }
            let m = &mut hdrs[msgs].msg_hdr;
            m.msg_name = &mut self.names[i].0 as *mut _ as *mut libc::c_void;
            m.msg_namelen = self.names[i].1;
            m.msg_iov = &mut self.iov[first[i - self.start]];
            m.msg_iovlen = (first[j - self.start] - first[i - self.start]) as _;
            if j - i > 1 {
                m.msg_control = ctrl[msgs].as_mut_ptr() as *mut libc::c_void;
                // SAFETY: CMSG_SPACE is a pure size computation.
                m.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
                // SAFETY: the control buffer is 32 bytes, enough for one u16 option.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(m);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = libc::UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, self.lens[i] as u16);
                }
            }
            groups[msgs] = j - i;
            msgs += 1;
            i = j;
        }
        let r = if !NO_MMSG.load(Ordering::Relaxed) {
            // SAFETY: msgs initialised headers pointing at live buffers.
            let r = unsafe {
                libc::sendmmsg(
                    fd,
                    hdrs.as_mut_ptr(),
                    msgs as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if mmsg_unsupported(&e) {
                    NO_MMSG.store(true, Ordering::Relaxed);
                    return self.send(fd);
                }
                if gso && msgs < self.len() && gso_refused(&e) {
                    NO_GSO.store(true, Ordering::Relaxed);
                    return self.send(fd);
                }
            }
            r
        } else {
            // SAFETY: header 0 is initialised.
            let r = unsafe { libc::sendmsg(fd, &hdrs[0].msg_hdr, libc::MSG_DONTWAIT) };
            if r < 0 {
                r as libc::c_int
            } else {
                1
            }
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted {
                self.advance(groups[0]);
            }
            return Err(e);
        }
        let sent: usize = groups[..r as usize].iter().sum();
        self.advance(sent);
        Ok(sent)
    }

    fn advance(&mut self, k: usize) {
        for p in &mut self.parts[self.start..self.start + k] {
            p.clear();
        }
        self.start += k;
        if self.start >= self.end {
            self.start = 0;
            self.end = 0;
        }
    }
}

/// Sends one datagram (non-blocking).
pub fn send_one(fd: RawFd, to: &SocketAddr, data: &[u8]) -> io::Result<()> {
    let (st, len) = to_storage(to);
    // SAFETY: data and the address are live for the call.
    let r = unsafe {
        libc::sendto(
            fd,
            data.as_ptr() as *const libc::c_void,
            data.len(),
            libc::MSG_DONTWAIT,
            &st as *const _ as *const libc::sockaddr,
            len,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Sends `msgs` (address, datagram) in one `sendmmsg` (non-blocking); returns how many the
/// kernel took, in order (an error only when it took none).
pub fn send_many(fd: RawFd, msgs: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    if msgs.len() == 1 {
        return send_one(fd, &msgs[0].0, msgs[0].1).map(|()| 1);
    }
    let names: Vec<_> = msgs.iter().map(|(a, _)| to_storage(a)).collect();
    let mut iov: Vec<libc::iovec> = msgs
        .iter()
        .map(|(_, d)| libc::iovec {
            iov_base: d.as_ptr() as *mut libc::c_void,
            iov_len: d.len(),
        })
        .collect();
    // SAFETY: all-zero is valid for mmsghdr; every pointer set below outlives the call.
    let mut hdrs: Vec<libc::mmsghdr> = (0..msgs.len()).map(|_| unsafe { zeroed() }).collect();
    for (i, h) in hdrs.iter_mut().enumerate() {
        h.msg_hdr.msg_name = &names[i].0 as *const _ as *mut libc::c_void;
        h.msg_hdr.msg_namelen = names[i].1;
        h.msg_hdr.msg_iov = &mut iov[i];
        h.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `hdrs` describes live buffers and addresses.
    let r = unsafe {
        libc::sendmmsg(
            fd,
            hdrs.as_mut_ptr(),
            hdrs.len() as libc::c_uint,
            libc::MSG_DONTWAIT,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
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
/// `exc_page_fault`) per 2 GB received on loopback, 1 800 to 3 200 with this (docs/results.md,
/// "What the host settings buy"). Process-wide, so it is the program's choice: the `stride`
/// command calls it first thing; a library user may too. Returns false where it does
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

// SAFETY: the raw pointers inside RxBatch point only into its own heap buffers and are
// rewritten before every call; nothing is shared between threads.
unsafe impl Send for RxBatch {}

// SAFETY: TxBatch's iovecs (its only raw pointers) are rebuilt from its own buffers and the
// queued `Bytes` at the start of every send and only read during that call; nothing is shared
// between threads. (The blocking endpoint owns one and may be moved to another thread.)
unsafe impl Send for TxBatch {}

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
    use std::os::fd::AsRawFd;

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

    /// Datagrams the kernel drops at a full socket are counted (`SO_RXQ_OVFL`) and reported
    /// with the next datagram read.
    #[test]
    fn socket_overflow_is_counted() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let fd = rx.as_raw_fd();
        setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, 4096).unwrap();
        assert!(enable_rxq_ovfl(fd));
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dst = rx.local_addr().unwrap();
        for _ in 0..200 {
            tx.send_to(&[7u8; 1000], dst).unwrap();
        }
        let mut batch = RxBatch::new();
        let mut got = 0;
        while let Ok(n) = batch.recv(fd) {
            got += n;
        }
        assert!(
            got > 0 && got < 200,
            "{got} of 200 arrived: the buffer did not overflow"
        );
        // The count rides on datagrams queued after the drops.
        tx.send_to(&[8u8; 10], dst).unwrap();
        let mut late = 0;
        for _ in 0..1000 {
            if let Ok(n) = batch.recv(fd) {
                late += n;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(late, 1);
        assert_eq!(batch.overflow, 200 - got as u64);
    }

    /// Short messages stay in their slot (reused by the next call, copied by whoever keeps
    /// them); only long ones (GRO runs) are shared, so a held datagram cannot pin a 64 KiB
    /// buffer.
    #[test]
    fn only_long_messages_are_shared() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dst = rx.local_addr().unwrap();
        let mut batch = RxBatch::for_gro();
        let recv_one = |batch: &mut RxBatch| {
            for _ in 0..1000 {
                if let Ok(n) = batch.recv(rx.as_raw_fd()) {
                    assert_eq!(n, 1);
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            panic!("nothing arrived");
        };
        let mut where_ = Vec::new();
        for k in 0..20u8 {
            tx.send_to(&[k; 1400], dst).unwrap();
            recv_one(&mut batch);
            assert_eq!(batch.data(0), &[k; 1400][..]);
            assert!(batch.message(0).is_none(), "a 1400-byte message was shared");
            assert!(batch.segments(0).is_none());
            where_.push(batch.data(0).as_ptr() as usize);
        }
        where_.dedup();
        assert_eq!(where_.len(), 1, "the slot's buffer was not reused");
        let big = vec![9u8; 40_000];
        tx.send_to(&big, dst).unwrap();
        recv_one(&mut batch);
        let m = batch.message(0).expect("a 40 kB message is shared").clone();
        assert_eq!(&m[..], &big[..]);
        let (d, seg) = batch.segments(0).expect("shared");
        assert_eq!(seg, big.len(), "one datagram");
        assert_eq!(
            d.as_ptr(),
            m.as_ptr(),
            "the datagram is a slice, not a copy"
        );
    }

    /// Calls that get different numbers of messages: each call sets up again only the slots
    /// the one before it filled, yet every call returns what was sent, from whom, and leaves
    /// the messages earlier calls shared intact (a slot set up with the old buffer would be
    /// received into memory a held message still uses).
    #[test]
    fn batches_of_changing_sizes_return_what_was_sent() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        let dst = rx.local_addr().unwrap();
        let senders: Vec<_> = (0..2)
            .map(|_| std::net::UdpSocket::bind("127.0.0.1:0").unwrap())
            .collect();
        let mut batch = RxBatch::for_gro();
        let mut held: Vec<(bytes::Bytes, u8)> = Vec::new();
        let mut tag = 0u8;
        for (round, &count) in [3usize, 1, 8, 2, 0, 5, 1].iter().enumerate() {
            let mut sent = Vec::new();
            for k in 0..count {
                tag = tag.wrapping_add(1);
                // Long (shared) and short (kept in the slot) messages, from both senders.
                let len = if (round + k) % 2 == 0 {
                    40_000
                } else {
                    700 + k
                };
                let from = &senders[(round + k) % 2];
                from.send_to(&vec![tag; len], dst).unwrap();
                sent.push((tag, len, from.local_addr().unwrap()));
            }
            let mut got = Vec::new();
            for _ in 0..1000 {
                if got.len() == count {
                    break;
                }
                match batch.recv(rx.as_raw_fd()) {
                    Ok(n) => {
                        for i in 0..n {
                            let d = batch.data(i);
                            assert!(d.iter().all(|&b| b == d[0]), "round {round}: mixed bytes");
                            got.push((d[0], d.len(), batch.got[i].from));
                            if let Some(m) = batch.message(i) {
                                held.push((m.clone(), d[0]));
                            }
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        std::thread::sleep(std::time::Duration::from_millis(1))
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(got, sent, "round {round}");
            if count == 0 {
                assert!(batch.recv(rx.as_raw_fd()).is_err());
            }
            for (m, t) in &held {
                assert!(m.iter().all(|b| b == t), "a held message was overwritten");
            }
        }
        assert!(held.len() >= 8, "{} shared messages", held.len());
    }

    /// The ECN bits a loopback datagram carries reach the receiver (ECT(0) from a socket with
    /// [`enable_ecn`], CE from one that sets its TOS to CE).
    #[test]
    fn ecn_bits_arrive_over_loopback() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_nonblocking(true).unwrap();
        assert!(enable_ecn(rx.as_raw_fd(), false));
        let dst = rx.local_addr().unwrap();
        let ect = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(enable_ecn(ect.as_raw_fd(), false));
        let ce = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        setsockopt_int(
            ce.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            i32::from(ECN_CE),
        )
        .unwrap();
        let plain = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        ect.send_to(b"a", dst).unwrap();
        ce.send_to(b"b", dst).unwrap();
        plain.send_to(b"c", dst).unwrap();
        let mut batch = RxBatch::new();
        let mut seen = std::collections::HashMap::new();
        for _ in 0..1000 {
            if let Ok(n) = batch.recv(rx.as_raw_fd()) {
                for i in 0..n {
                    seen.insert(batch.data(i).to_vec(), batch.got[i].ecn);
                }
            }
            if seen.len() == 3 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(seen.get(&b"a"[..]), Some(&ECN_ECT0), "{seen:?}");
        assert_eq!(seen.get(&b"b"[..]), Some(&ECN_CE), "{seen:?}");
        assert_eq!(seen.get(&b"c"[..]), Some(&0), "{seen:?}");
    }
}
