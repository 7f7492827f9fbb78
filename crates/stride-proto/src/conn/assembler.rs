//! Selective recovery, receiver: the segments received beyond a gap, held until the gap fills,
//! and the holes between them that a NACK names (spec §6.5).

use crate::buf::RecvBuf;
use crate::wire::{seq_lt, NackRange};
use std::collections::VecDeque;

/// Segments held beyond `rcv_nxt`, and a FIN held beyond a gap.
pub(super) struct Assembler {
    /// `(seq, bytes)`, ascending from `rcv_nxt`, disjoint, all inside the advertised window.
    segs: VecDeque<(u32, Vec<u8>)>,
    /// Bytes held in `segs`.
    bytes: usize,
    /// The sequence number of a FIN received beyond a gap.
    fin: Option<u32>,
}

impl Assembler {
    /// Nothing held.
    pub(super) fn new() -> Assembler {
        Assembler {
            segs: VecDeque::new(),
            bytes: 0,
            fin: None,
        }
    }

    /// Whether no segment is held (a FIN may be).
    pub(super) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// Whether segments or a FIN are held beyond a gap.
    pub(super) fn holds_any(&self) -> bool {
        !self.segs.is_empty() || self.fin.is_some()
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The FIN held beyond a gap, if any.
    pub(super) fn fin(&self) -> Option<u32> {
        self.fin
    }

    /// Holds a FIN at `seq`, beyond a gap.
    pub(super) fn hold_fin(&mut self, seq: u32) {
        self.fin = Some(seq);
    }

    /// Forgets the held FIN (it was accepted).
    pub(super) fn clear_fin(&mut self) {
        self.fin = None;
    }

    /// Drops every held segment and frees their memory (a held FIN stays).
    pub(super) fn release(&mut self) {
        self.segs = VecDeque::new();
        self.bytes = 0;
    }

    /// Where the held segments end, as an offset from `nxt` (0 when none is held).
    pub(super) fn held_end(&self, nxt: u32) -> usize {
        self.segs
            .back()
            .map_or(0, |(s, d)| s.wrapping_sub(nxt) as usize + d.len())
    }

    /// Holds the parts of `payload`, which starts `start` bytes beyond `nxt`, that no held
    /// segment covers, in at most `max_segments` segments. Returns the bytes added and
    /// whether the segment limit cut the payload short.
    pub(super) fn insert(
        &mut self,
        nxt: u32,
        start: usize,
        payload: &[u8],
        max_segments: usize,
    ) -> (usize, bool) {
        let off = |s: u32| s.wrapping_sub(nxt) as usize;
        let end = start + payload.len();
        let mut i = self
            .segs
            .partition_point(|(s, d)| off(*s) + d.len() <= start);
        let mut cur = start;
        let mut added = 0usize;
        while cur < end {
            let next = self.segs.get(i).map(|(s, d)| (off(*s), off(*s) + d.len()));
            match next {
                Some((ns, ne)) if ns <= cur => {
                    cur = cur.max(ne);
                    i += 1;
                }
                _ => {
                    if self.segs.len() >= max_segments {
                        break;
                    }
                    let piece_end = next.map_or(end, |(ns, _)| ns.min(end));
                    let bytes = payload[cur - start..piece_end - start].to_vec();
                    self.segs.insert(i, (nxt.wrapping_add(cur as u32), bytes));
                    added += piece_end - cur;
                    cur = piece_end;
                    i += 1;
                }
            }
        }
        self.bytes += added;
        (added, cur < end)
    }

    /// Moves held segments that `rcv_nxt` has reached into `rbuf`, advancing `rcv_nxt`;
    /// returns the bytes moved.
    pub(super) fn drain(&mut self, rcv_nxt: &mut u32, rbuf: &mut RecvBuf) -> u32 {
        let mut moved = 0u32;
        while let Some((s, _)) = self.segs.front() {
            if seq_lt(*rcv_nxt, *s) {
                break;
            }
            let (s, d) = self.segs.pop_front().expect("front exists");
            self.bytes -= d.len();
            let skip = rcv_nxt.wrapping_sub(s) as usize;
            if skip < d.len() {
                let tail = &d[skip..];
                rbuf.extend_from_slice(tail);
                *rcv_nxt = rcv_nxt.wrapping_add(tail.len() as u32);
                moved += tail.len() as u32;
            }
        }
        if self.segs.is_empty() && self.segs.capacity() > 64 {
            self.segs = VecDeque::new();
        }
        moved
    }

    /// The holes before the held segments (and a held FIN), from `rcv_nxt`, at most
    /// `out.len()`; returns how many were written.
    pub(super) fn missing(&self, rcv_nxt: u32, out: &mut [NackRange]) -> usize {
        let mut n = 0;
        let mut prev = rcv_nxt;
        for (s, d) in &self.segs {
            if n == out.len() {
                break;
            }
            if seq_lt(prev, *s) {
                out[n] = NackRange {
                    seq: prev,
                    len: s.wrapping_sub(prev),
                };
                n += 1;
            }
            prev = s.wrapping_add(d.len() as u32);
        }
        if let Some(f) = self.fin {
            if n < out.len() && seq_lt(prev, f) {
                out[n] = NackRange {
                    seq: prev,
                    len: f.wrapping_sub(prev),
                };
                n += 1;
            }
        }
        n
    }
}
