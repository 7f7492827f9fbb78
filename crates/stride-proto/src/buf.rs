//! The connection's send and receive buffers, kept as reference-counted [`Bytes`] chunks so
//! an application (or driver) can hand data over and take it back without copying it.
//!
//! - [`SendBuf`]: the bytes written and not yet acknowledged. [`SendBuf::push`] appends a
//!   chunk the application owns (no copy); [`SendBuf::extend_from_slice`] copies a slice in
//!   (small writes are gathered into one growing tail chunk, so a stream of small writes does
//!   not become a chain of tiny chunks). A datagram's payload is either copied out
//!   ([`SendBuf::copy_out`]) or handed out as slices of the chunks ([`SendBuf::slices`]) that
//!   a driver passes to the kernel as an iovec list.
//! - [`RecvBuf`]: the bytes delivered in order and not yet read. [`RecvBuf::extend_from_slice`]
//!   copies a payload into a growing tail chunk; [`RecvBuf::read_chunk`] hands out the oldest
//!   bytes as a [`Bytes`] without copying; [`RecvBuf::read`] copies into a caller's slice.
//!
//! Both count payload bytes only (`len`); the flow-control window and send-buffer limits are
//! the caller's, as before.

use bytes::{Buf, Bytes, BytesMut};
use std::collections::VecDeque;

/// Size of the tail chunk that gathers copied-in bytes.
const TAIL_CHUNK: usize = 64 * 1024;

/// A `Bytes` that shares `src`'s memory for the sub-slice `sub`, when `sub` lies inside it.
pub fn sub_bytes(src: &Bytes, sub: &[u8]) -> Option<Bytes> {
    let base = src.as_ptr() as usize;
    let p = sub.as_ptr() as usize;
    if sub.is_empty() || p < base || p + sub.len() > base + src.len() {
        return None;
    }
    Some(src.slice(p - base..p - base + sub.len()))
}

/// Unacknowledged bytes: chunks in stream order, each with its absolute stream offset.
#[derive(Default)]
pub struct SendBuf {
    /// `(absolute offset of the chunk's first byte, chunk)`, ascending and contiguous.
    chunks: VecDeque<(u64, Bytes)>,
    /// Bytes copied in and not yet frozen into `chunks` (they follow every chunk).
    tail: BytesMut,
    /// Absolute offset of the first unacknowledged byte.
    head: u64,
    /// Absolute offset one past the last byte.
    end: u64,
    /// Index of the chunk the last lookup found: sends read the buffer in order, so the next
    /// lookup is nearly always in it or the one after (checked, else a binary search).
    hint: usize,
}

impl SendBuf {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        (self.end - self.head) as usize
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.end == self.head
    }

    /// Bytes of memory reserved beyond what is held (the tail chunk's spare room).
    pub fn capacity(&self) -> usize {
        self.len() + self.tail.capacity() - self.tail.len()
    }

    fn freeze_tail(&mut self) {
        if !self.tail.is_empty() {
            let n = self.tail.len() as u64;
            let b = self.tail.split().freeze();
            self.chunks.push_back((self.end - n, b));
        }
    }

    /// Appends a chunk without copying it.
    pub fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        self.freeze_tail();
        let n = b.len() as u64;
        self.chunks.push_back((self.end, b));
        self.end += n;
    }

    /// Appends a copy of `data`.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if data.len() >= TAIL_CHUNK {
            self.push(Bytes::copy_from_slice(data));
            return;
        }
        if self.tail.capacity() - self.tail.len() < data.len() {
            self.freeze_tail();
            self.tail.reserve(TAIL_CHUNK);
        }
        self.tail.extend_from_slice(data);
        self.end += data.len() as u64;
    }

    /// Drops the first `n` bytes (acknowledged).
    pub fn drain_front(&mut self, n: usize) {
        let n = n.min(self.len());
        self.head += n as u64;
        while let Some((start, b)) = self.chunks.front() {
            if start + b.len() as u64 <= self.head {
                self.chunks.pop_front();
                self.hint = self.hint.saturating_sub(1);
            } else {
                break;
            }
        }
        if self.chunks.is_empty() && self.head == self.end {
            // The tail's bytes are acknowledged too: reuse its room from the start.
            self.tail.clear();
        }
    }

    /// Index of the chunk holding absolute offset `abs`, after freezing the tail when the
    /// range `[abs, last]` reaches into it.
    fn locate(&mut self, abs: u64, last: u64) -> usize {
        let frozen_end = self
            .chunks
            .back()
            .map_or(self.end - self.tail.len() as u64, |(s, b)| {
                s + b.len() as u64
            });
        if last >= frozen_end {
            self.freeze_tail();
        }
        self.find(abs)
    }

    /// Index of the (frozen) chunk holding absolute offset `abs`.
    fn find(&mut self, abs: u64) -> usize {
        let holds = |i: usize| {
            self.chunks
                .get(i)
                .is_some_and(|(s, b)| *s <= abs && abs < s + b.len() as u64)
        };
        let i = if holds(self.hint) {
            self.hint
        } else if holds(self.hint + 1) {
            self.hint + 1
        } else {
            self.chunks.partition_point(|(s, _)| *s <= abs) - 1
        };
        self.hint = i;
        i
    }

    /// Copies the bytes at offset `off` (from the first unacknowledged byte) into `dst`. Bytes
    /// still in the tail are copied from there: a copy needs no frozen chunk.
    pub fn copy_out(&mut self, off: usize, dst: &mut [u8]) {
        assert!(off + dst.len() <= self.len(), "copy_out beyond the buffer");
        let mut abs = self.head + off as u64;
        let tail_start = self.end - self.tail.len() as u64;
        let in_chunks = (tail_start.saturating_sub(abs) as usize).min(dst.len());
        if in_chunks > 0 {
            let mut i = self.find(abs);
            let mut done = 0;
            while done < in_chunks {
                let (s, b) = &self.chunks[i];
                let from = (abs - s) as usize;
                let n = (b.len() - from).min(in_chunks - done);
                dst[done..done + n].copy_from_slice(&b[from..from + n]);
                done += n;
                abs += n as u64;
                i += 1;
            }
        }
        if in_chunks < dst.len() {
            let from = (abs - tail_start) as usize;
            let n = dst.len() - in_chunks;
            dst[in_chunks..].copy_from_slice(&self.tail[from..from + n]);
        }
    }

    /// Appends to `out` the bytes at offset `off` of length `len` as slices of the chunks (no
    /// copy; one slice per chunk touched).
    pub fn slices(&mut self, off: usize, len: usize, out: &mut Vec<Bytes>) {
        assert!(off + len <= self.len(), "slices beyond the buffer");
        if len == 0 {
            return;
        }
        let mut abs = self.head + off as u64;
        let mut i = self.locate(abs, abs + len as u64 - 1);
        let mut left = len;
        while left > 0 {
            let (s, b) = &self.chunks[i];
            let from = (abs - s) as usize;
            let n = (b.len() - from).min(left);
            out.push(b.slice(from..from + n));
            left -= n;
            abs += n as u64;
            i += 1;
        }
    }
}

/// Bytes delivered in order and not yet read.
#[derive(Default)]
pub struct RecvBuf {
    /// Chunks in stream order (shared with nobody once here, or slices of received
    /// datagrams).
    chunks: VecDeque<Bytes>,
    /// Copied-in bytes that follow every chunk.
    tail: BytesMut,
    len: usize,
}

impl RecvBuf {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Nothing held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of memory reserved (held plus the tail's spare room).
    pub fn capacity(&self) -> usize {
        self.len + self.tail.capacity() - self.tail.len()
    }

    /// Releases spare room.
    pub fn shrink_to_fit(&mut self) {
        if self.tail.is_empty() {
            self.tail = BytesMut::new();
        }
    }

    fn freeze_tail(&mut self) {
        if !self.tail.is_empty() {
            let b = self.tail.split().freeze();
            self.chunks.push_back(b);
        }
    }

    /// Appends a chunk without copying it (e.g. a slice of a received datagram).
    pub fn push(&mut self, b: Bytes) {
        if b.is_empty() {
            return;
        }
        self.freeze_tail();
        self.len += b.len();
        self.chunks.push_back(b);
    }

    /// Appends a copy of `data`.
    pub fn extend_from_slice(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if self.tail.capacity() - self.tail.len() < data.len() {
            self.freeze_tail();
            self.tail.reserve(TAIL_CHUNK.max(data.len()));
        }
        self.tail.extend_from_slice(data);
        self.len += data.len();
    }

    /// Takes up to `max` of the oldest bytes without copying them; None when empty.
    pub fn read_chunk(&mut self, max: usize) -> Option<Bytes> {
        if self.len == 0 || max == 0 {
            return None;
        }
        if self.chunks.is_empty() {
            self.freeze_tail();
        }
        let front = self
            .chunks
            .front_mut()
            .expect("len > 0 means a chunk or a tail");
        let b = if front.len() <= max {
            self.chunks.pop_front().expect("front exists")
        } else {
            front.split_to(max)
        };
        self.len -= b.len();
        Some(b)
    }

    /// Copies up to `out.len()` of the oldest bytes into `out`; returns how many.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let mut done = 0;
        while done < out.len() {
            if let Some(front) = self.chunks.front_mut() {
                let n = front.len().min(out.len() - done);
                out[done..done + n].copy_from_slice(&front[..n]);
                if n == front.len() {
                    self.chunks.pop_front();
                } else {
                    front.advance(n);
                }
                done += n;
            } else {
                let n = self.tail.len().min(out.len() - done);
                if n == 0 {
                    break;
                }
                out[done..done + n].copy_from_slice(&self.tail[..n]);
                self.tail.advance(n);
                done += n;
            }
        }
        self.len -= done;
        if self.len == 0 {
            // Reuse the tail's room from its start (nothing else refers to it once split off
            // and dropped).
            self.tail.clear();
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn send_buffer_serves_any_range_across_pushed_and_copied_chunks() {
        let mut sb = SendBuf::new();
        let mut model = Vec::new();
        for (k, n) in [10usize, 3000, 70_000, 1, 500, 65_536, 7]
            .into_iter()
            .enumerate()
        {
            let d = pattern(n, k as u8);
            if k % 2 == 0 {
                sb.extend_from_slice(&d);
            } else {
                sb.push(Bytes::from(d.clone()));
            }
            model.extend_from_slice(&d);
        }
        assert_eq!(sb.len(), model.len());
        let mut acked = 0;
        for (off, len, ack) in [
            (0, 1400, 0),
            (9, 1400, 5),
            (2990, 3000, 1000),
            (70_000, 1460, 66_000),
        ] {
            sb.drain_front(ack);
            acked += ack;
            let mut dst = vec![0u8; len];
            sb.copy_out(off, &mut dst);
            assert_eq!(dst, model[acked + off..acked + off + len], "copy at {off}");
            let mut parts = Vec::new();
            sb.slices(off, len, &mut parts);
            let joined: Vec<u8> = parts.iter().flat_map(|b| b.iter().copied()).collect();
            assert_eq!(joined, dst, "slices at {off}");
        }
        sb.drain_front(sb.len());
        assert!(sb.is_empty());
        sb.extend_from_slice(b"again");
        let mut dst = [0u8; 5];
        sb.copy_out(0, &mut dst);
        assert_eq!(&dst, b"again");
    }

    /// A copy that reaches into the tail reads it where it is: the tail stays unfrozen (a
    /// request/response stream would otherwise freeze one chunk per message), and the bytes
    /// are the model's across a frozen tail, a pushed chunk and the live tail.
    #[test]
    fn copies_read_the_tail_without_freezing_it() {
        let mut sb = SendBuf::new();
        let (a, b, c) = (pattern(100, 1), pattern(300, 2), pattern(50, 3));
        sb.extend_from_slice(&a);
        sb.push(Bytes::from(b.clone()));
        sb.extend_from_slice(&c);
        let model = [a, b, c].concat();
        for (off, len) in [(0, 450), (90, 320), (395, 55), (420, 30)] {
            let mut dst = vec![0u8; len];
            sb.copy_out(off, &mut dst);
            assert_eq!(dst, model[off..off + len], "copy at {off}");
            assert_eq!(sb.tail.len(), 50, "copy at {off} froze the tail");
        }
        sb.drain_front(420);
        let mut dst = [0u8; 30];
        sb.copy_out(0, &mut dst);
        assert_eq!(dst[..], model[420..]);
        assert_eq!(sb.tail.len(), 50);
    }

    proptest::proptest! {
        /// Any sequence of writes (pushed or copied), acknowledgements and reads (in order,
        /// as a sender reads, or anywhere, as a resend does) returns the model's bytes: the
        /// lookup hint never serves a wrong chunk.
        #[test]
        fn send_buffer_matches_a_model(ops in proptest::collection::vec(
            (0u8..4, 1usize..5000, 0usize..100_000), 1..200)) {
            let mut sb = SendBuf::new();
            let mut model: Vec<u8> = Vec::new();
            let mut acked = 0usize;
            let mut cursor = 0usize;
            for (k, (op, n, at)) in ops.into_iter().enumerate() {
                let held = model.len() - acked;
                match op {
                    0 => {
                        let d = pattern(n, k as u8);
                        sb.push(Bytes::from(d.clone()));
                        model.extend_from_slice(&d);
                    }
                    1 => {
                        let d = pattern(n, k as u8);
                        sb.extend_from_slice(&d);
                        model.extend_from_slice(&d);
                    }
                    2 => {
                        let a = at.min(held);
                        sb.drain_front(a);
                        acked += a;
                        cursor = cursor.saturating_sub(a);
                    }
                    _ => {
                        // In order from the cursor, or (every other read) at a random offset.
                        let off = if k % 2 == 0 { cursor.min(held) } else { at % (held + 1) };
                        let len = n.min(held - off);
                        let mut parts = Vec::new();
                        sb.slices(off, len, &mut parts);
                        let joined: Vec<u8> = parts.iter().flat_map(|b| b.iter().copied()).collect();
                        proptest::prop_assert_eq!(&joined[..], &model[acked + off..acked + off + len]);
                        let mut dst = vec![0u8; len];
                        sb.copy_out(off, &mut dst);
                        proptest::prop_assert_eq!(&dst[..], &model[acked + off..acked + off + len]);
                        cursor = off + len;
                    }
                }
                proptest::prop_assert_eq!(sb.len(), model.len() - acked);
            }
        }
    }

    #[test]
    fn receive_buffer_hands_out_chunks_in_order() {
        let mut rb = RecvBuf::new();
        let mut model = Vec::new();
        for k in 0..50u8 {
            let d = pattern(1000 + usize::from(k) * 37, k);
            if k % 3 == 0 {
                rb.push(Bytes::from(d.clone()));
            } else {
                rb.extend_from_slice(&d);
            }
            model.extend_from_slice(&d);
        }
        let mut got = Vec::new();
        let mut small = [0u8; 333];
        let mut turn = 0;
        while !rb.is_empty() {
            if turn % 2 == 0 {
                let c = rb.read_chunk(5000).unwrap();
                assert!(c.len() <= 5000 && !c.is_empty());
                got.extend_from_slice(&c);
            } else {
                let n = rb.read(&mut small);
                got.extend_from_slice(&small[..n]);
            }
            turn += 1;
        }
        assert_eq!(got, model);
        assert_eq!(rb.read_chunk(10), None);
        assert_eq!(rb.len(), 0);
    }

    #[test]
    fn sub_bytes_refuses_foreign_slices() {
        let b = Bytes::from(pattern(100, 1));
        assert_eq!(sub_bytes(&b, &b[10..20]).unwrap(), b.slice(10..20));
        let other = pattern(100, 1);
        assert!(sub_bytes(&b, &other[10..20]).is_none());
    }
}
