//! The event queue: a radix heap over integer nanoseconds.
//!
//! A discrete-event simulator never schedules into the past, so the keys it pops only grow.
//! A radix heap uses that: it keeps the time of the last event popped (`now`) and files each
//! pending event in the bucket of the highest bit in which its time differs from `now`. Bucket
//! 0 holds the events due at `now` itself; when it is empty, the lowest non-empty bucket is
//! emptied, its earliest time becomes `now`, and its events are filed again, each into a lower
//! bucket than before. An event thus moves at most 64 times and in practice a few times (the
//! bits of its distance from `now`), each move a sequential read and an append, where a binary
//! heap's pop walks a path of a tree larger than the cache.
//!
//! Order: events due at the same time come out in the order they were scheduled, as the binary
//! heap ordered by (time, sequence number) did. Each bucket stays in scheduling order: a push
//! appends the newest event, and refiling moves a bucket's events, in order, into buckets that
//! were empty. The queue therefore needs no sequence number, and runs are identical per seed to
//! those of the binary heap it replaces.

use super::Ev;
use std::collections::VecDeque;

/// Buckets 1..=64: bucket `b` holds events whose time differs from `now` first at bit `b - 1`.
const BUCKETS: usize = 65;

/// Pending events by time (see the module documentation).
#[derive(Debug)]
pub(super) struct EventQueue {
    /// The time of the last event popped: no event may be scheduled before it.
    now: u64,
    /// Events due at `now`, in scheduling order.
    due: VecDeque<Ev>,
    /// `buckets[b]` for b in 1..=64 (index 0 unused: those events are in `due`).
    buckets: Vec<Vec<(u64, Ev)>>,
    /// Bit b set: `buckets[b]` is not empty (bit 0 unused).
    occupied: u128,
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            now: 0,
            due: VecDeque::new(),
            buckets: (0..BUCKETS).map(|_| Vec::new()).collect(),
            occupied: 0,
        }
    }
}

impl EventQueue {
    /// The bucket of time `t` relative to `now` (0: due now).
    #[inline]
    fn bucket(now: u64, t: u64) -> usize {
        (64 - (t ^ now).leading_zeros()) as usize
    }

    /// Schedules `ev` at time `t`, which must not be before the last event popped.
    #[inline]
    pub(super) fn push(&mut self, t: u64, ev: Ev) {
        assert!(
            t >= self.now,
            "an event at {t} ns scheduled after time {} ns",
            self.now
        );
        let b = Self::bucket(self.now, t);
        if b == 0 {
            self.due.push_back(ev);
        } else {
            self.buckets[b].push((t, ev));
            self.occupied |= 1 << b;
        }
    }

    /// The earliest event and its time (of equal times, the first scheduled).
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(u64, Ev)> {
        if self.due.is_empty() {
            if self.occupied == 0 {
                return None;
            }
            self.refile();
        }
        self.due.pop_front().map(|ev| (self.now, ev))
    }

    /// Empties the lowest non-empty bucket: its earliest time becomes `now`, and each of its
    /// events goes to the bucket of its time relative to the new `now` (a lower one).
    fn refile(&mut self) {
        let b = self.occupied.trailing_zeros() as usize;
        let mut moving = std::mem::take(&mut self.buckets[b]);
        self.occupied &= !(1 << b);
        let now = moving.iter().map(|&(t, _)| t).min().expect("occupied bucket");
        self.now = now;
        for &(t, ev) in &moving {
            let nb = Self::bucket(now, t);
            debug_assert!(nb < b, "refiling moves an event down");
            if nb == 0 {
                self.due.push_back(ev);
            } else {
                self.buckets[nb].push((t, ev));
                self.occupied |= 1 << nb;
            }
        }
        moving.clear();
        // The emptied bucket keeps its allocation for the events it will hold next.
        self.buckets[b] = moving;
    }

    /// Events pending.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.due.len() + self.buckets.iter().map(Vec::len).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Against the binary heap ordered by (time, sequence): the same events come out in the
    /// same order, over random pushes interleaved with pops (the simulator's pattern: each
    /// event popped schedules a few at or after its own time).
    #[test]
    fn same_order_as_a_heap_by_time_then_sequence() {
        let mut q = EventQueue::default();
        let mut h = BinaryHeap::new();
        let mut seq = 0u64;
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0;
        let mut popped = 0;
        for i in 0..200_000u32 {
            let pushes = rnd() % 3;
            for _ in 0..pushes {
                // Many ties (delay 0 or a few values), some far ahead.
                let d = match rnd() % 4 {
                    0 => 0,
                    1 => rnd() % 4 * 1200,
                    2 => rnd() % 5000,
                    _ => rnd() % (1 << 40),
                };
                let ev = Ev::Wake { host: i };
                q.push(now + d, ev);
                seq += 1;
                h.push(Reverse((now + d, seq, ev)));
            }
            if rnd() % 2 == 0 {
                let a = q.pop();
                let b = h.pop().map(|Reverse((t, _, e))| (t, e));
                assert_eq!(a, b);
                if let Some((t, _)) = a {
                    assert!(t >= now);
                    now = t;
                    popped += 1;
                }
            }
            assert_eq!(q.len(), h.len());
        }
        while let Some(b) = h.pop() {
            assert_eq!(q.pop(), Some((b.0 .0, b.0 .2)));
        }
        assert_eq!(q.pop(), None);
        assert!(popped > 50_000, "the test exercised the pops");
    }

    #[test]
    fn times_near_the_top_of_the_range() {
        let mut q = EventQueue::default();
        q.push(u64::MAX, Ev::Wake { host: 1 });
        q.push(u64::MAX - 1, Ev::Wake { host: 2 });
        q.push(1, Ev::Wake { host: 3 });
        assert_eq!(q.pop(), Some((1, Ev::Wake { host: 3 })));
        assert_eq!(q.pop(), Some((u64::MAX - 1, Ev::Wake { host: 2 })));
        assert_eq!(q.pop(), Some((u64::MAX, Ev::Wake { host: 1 })));
        assert_eq!(q.pop(), None);
    }

    #[test]
    #[should_panic(expected = "scheduled after time")]
    fn refuses_an_event_in_the_past() {
        let mut q = EventQueue::default();
        q.push(10, Ev::Wake { host: 0 });
        q.pop();
        q.push(9, Ev::Wake { host: 0 });
    }
}
