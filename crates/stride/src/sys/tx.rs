//! Sending: [`TxBatch`] sends up to a batch of datagrams in one `sendmmsg`, their payloads
//! passed as further iovec entries (no copy), runs to one destination as one UDP GSO message
//! (`UDP_SEGMENT`), with fallbacks when the kernel refuses either; [`send_one`] and
//! [`send_many`] send a few datagrams without a batch.

use super::{mmsg_unsupported, to_storage, NO_MMSG};
use super::{BATCH, DATAGRAM_ROOM};
use std::io;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// Empty, with slots of `room` bytes (at least [`DATAGRAM_ROOM`]; see
    /// [`datagram_room`](super::datagram_room)).
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
                    if self.beyond_route_mtu(self.start) {
                        // Not GSO's fault: the route's MTU went down below these datagrams
                        // (the kernel refuses such a GSO message with EINVAL). Dropped and
                        // reported as too big, so the payloads are refitted; GSO stays on.
                        self.advance(groups[0]);
                        return Err(io::Error::from_raw_os_error(libc::EMSGSIZE));
                    }
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

    /// Whether datagram `k` is larger than the route to its destination carries now (IP and
    /// UDP headers included).
    fn beyond_route_mtu(&self, k: usize) -> bool {
        let Some(to) = super::from_storage(&self.names[k].0) else {
            return false;
        };
        let v4 = match to {
            SocketAddr::V4(_) => true,
            SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_some(),
        };
        let headers = if v4 { 28 } else { 48 };
        super::path_mtu(to).is_some_and(|mtu| self.lens[k] + headers > mtu as usize)
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

// SAFETY: TxBatch's iovecs (its only raw pointers) are rebuilt from its own buffers and the
// queued `Bytes` at the start of every send and only read during that call; nothing is shared
// between threads. (The blocking endpoint owns one and may be moved to another thread.)
unsafe impl Send for TxBatch {}
