//! Receiving: [`RxBatch`] takes up to a batch of messages in one `recvmmsg` (one `recvmsg`
//! after a fallback), with each message's sender, kernel receive stamp, ECN codepoint, GRO
//! segment size and the socket's drop count read from its control messages.

use super::{clock_pair, from_storage, mmsg_unsupported, stamp_to_monotonic, NO_MMSG};
use super::{BATCH, DATAGRAM_ROOM, GRO_BATCH, GRO_ROOM, UDP_GRO};
use std::io;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;

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
    /// Kernel receive timestamp converted to [`now_ns`](super::now_ns)'s clock, when the
    /// kernel gave one (and the wall clock did not step meanwhile).
    pub kernel_ts: Option<u64>,
    /// The IP header's ECN codepoint (0 Not-ECT, 2 ECT(0), 1 ECT(1), 3 CE; 0 when the kernel
    /// did not report the TOS / traffic class).
    pub ecn: u8,
    /// The whole TOS byte / IPv6 traffic class: the sender's DSCP in the upper six bits, the
    /// ECN codepoint in the lower two (0 when the kernel did not report it).
    pub tos: u8,
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
    /// [`now_ns`](super::now_ns) read just after the last receive that got something (the
    /// monotonic half of the clock pair its stamps were converted with).
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
    /// [`datagram_room`](super::datagram_room)).
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
        self.set_up_slots();
        let Some(n) = self.receive_call(fd, flags)? else {
            // The kernel has no recvmmsg: again with recvmsg.
            return self.recv_flags(fd, flags);
        };
        self.dirty = n;
        let pair = clock_pair();
        self.read_at = pair.1;
        for i in 0..n {
            self.take_message(i, pair);
        }
        Ok(n)
    }

    /// Sets up the slots the last call used (their buffers and headers) for the next one.
    fn set_up_slots(&mut self) {
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
    }

    /// The receive call itself (`recvmmsg`, or `recvmsg` after the kernel refused it once):
    /// how many messages it filled, None when the kernel has just refused `recvmmsg` (the
    /// call is to be made again). A failed call leaves every slot to be set up again.
    fn receive_call(&mut self, fd: RawFd, flags: libc::c_int) -> io::Result<Option<usize>> {
        if !NO_MMSG.load(Ordering::Relaxed) {
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
                return Ok(None);
            }
            Ok(Some(r as usize))
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
            Ok(Some(1))
        }
    }

    /// Takes the `i`-th message the call filled: its bytes (split off the slot's buffer when
    /// long enough to share), and into [`RxBatch::got`] its sender and what its control
    /// messages say; `pair` is the clock pair read after the call.
    fn take_message(&mut self, i: usize, pair: (u64, u64)) {
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
                tos: 0,
            });
            return;
        };
        let mut len = h.msg_len as usize;
        if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
            self.truncated += 1;
            len = 0;
        }
        let c = read_cmsgs(&h.msg_hdr, len, pair, &mut self.overflow);
        self.got.push(Received {
            from,
            len,
            seg: c.seg,
            kernel_ts: c.kernel_ts,
            ecn: c.tos & 3,
            tos: c.tos,
        });
    }
}

/// What a received message's control messages told.
struct Cmsgs {
    /// Kernel receive stamp on the monotonic clock.
    kernel_ts: Option<u64>,
    /// TOS byte / traffic class (DSCP and ECN).
    tos: u8,
    /// GRO segment size (`len` without GRO).
    seg: usize,
}

/// Walks the control messages of a received message `len` bytes long: the kernel's receive
/// stamp (converted with `pair`), the TOS byte / traffic class, the socket's drop count
/// (added to `overflow`) and the GRO segment size.
fn read_cmsgs(hdr: &libc::msghdr, len: usize, pair: (u64, u64), overflow: &mut u64) -> Cmsgs {
    let mut kernel_ts = None;
    let mut tos = 0u8;
    let mut seg = len;
    // SAFETY: walking the control messages the kernel wrote into the header's buffer.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                kernel_ts =
                    stamp_to_monotonic(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64, pair);
            } else if (*c).cmsg_level == libc::IPPROTO_IP
                && ((*c).cmsg_type == libc::IP_TOS || (*c).cmsg_type == libc::IP_RECVTOS)
            {
                tos = *libc::CMSG_DATA(c);
            } else if (*c).cmsg_level == libc::IPPROTO_IPV6 && (*c).cmsg_type == libc::IPV6_TCLASS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32);
                tos = (t & 0xff) as u8;
            } else if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SO_RXQ_OVFL {
                let d = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32);
                // A 32-bit counter that wraps: keep the largest in a 64-bit total.
                let low = *overflow as u32;
                *overflow += u64::from(d.wrapping_sub(low));
            } else if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                let s = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const i32);
                if s > 0 {
                    seg = (s as usize).min(len);
                }
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    Cmsgs {
        kernel_ts,
        tos,
        seg,
    }
}

// SAFETY: the raw pointers inside RxBatch point only into its own heap buffers and are
// rewritten before every call; nothing is shared between threads.
unsafe impl Send for RxBatch {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::{
        enable_ecn, enable_recv_tos, enable_rxq_ovfl, set_tos, setsockopt_int, TxBatch, ECN_CE,
        ECN_ECT0,
    };
    use std::os::fd::AsRawFd;

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

    /// Receives until `n` datagrams arrived (or a second passed): (first byte, TOS) of each.
    fn tos_of(rx: &std::net::UdpSocket, n: usize) -> Vec<(u8, u8)> {
        let mut batch = RxBatch::new();
        let mut seen = Vec::new();
        for _ in 0..1000 {
            if let Ok(k) = batch.recv(rx.as_raw_fd()) {
                for i in 0..k {
                    assert_eq!(batch.got[i].ecn, batch.got[i].tos & 3);
                    seen.push((batch.data(i)[0], batch.got[i].tos));
                }
            }
            if seen.len() >= n {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        seen
    }

    /// A DSCP set with [`set_tos`] leaves in the upper six bits of the TOS byte (IPv4) and of
    /// the traffic class (IPv6) with the ECN bits below it intact, for single sends and for a
    /// GSO batch the kernel splits; the receiver reads both (DSCP 46 with CE is still CE).
    #[test]
    fn dscp_and_ecn_share_the_tos_byte() {
        let mut families = vec![("127.0.0.1:0", false)];
        if std::net::UdpSocket::bind("[::1]:0").is_ok() {
            families.push(("[::1]:0", true));
        } else {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: dscp_and_ecn_share_the_tos_byte (IPv6 part): no ::1 on this host"
            );
        }
        for (at, v6) in families {
            let rx = std::net::UdpSocket::bind(at).unwrap();
            rx.set_nonblocking(true).unwrap();
            assert!(enable_recv_tos(rx.as_raw_fd(), v6));
            let dst = rx.local_addr().unwrap();
            let tx = std::net::UdpSocket::bind(at).unwrap();
            let fd = tx.as_raw_fd();
            let af41 = crate::Dscp::new(34).unwrap();
            set_tos(fd, v6, af41.tos(ECN_ECT0)).unwrap();
            tx.send_to(&[1], dst).unwrap();
            set_tos(fd, v6, crate::Dscp::EF.tos(ECN_CE)).unwrap();
            tx.send_to(&[2], dst).unwrap();
            assert_eq!(
                tos_of(&rx, 2),
                vec![(1, 0x8a), (2, 0xbb)],
                "{at}: DSCP and ECN as sent"
            );
            // A batch of equal datagrams to one peer: one GSO message where the kernel takes it.
            set_tos(fd, v6, af41.tos(ECN_ECT0)).unwrap();
            let mut b = TxBatch::new();
            for k in 0..8u8 {
                assert!(b.push(dst, &[10 + k; 1200]));
            }
            let mut left = 8;
            while left > 0 {
                match b.send(fd) {
                    Ok(n) => left -= n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{e}"),
                }
            }
            let got = tos_of(&rx, 8);
            assert_eq!(got.len(), 8, "{at}: {got:?}");
            assert!(got.iter().all(|&(_, t)| t == 0x8a), "{at}: {got:?}");
        }
    }
}
