//! The event queue: a hierarchical timing wheel (a radix heap of base 64) over integer
//! nanoseconds.
//!
//! A discrete-event simulator never schedules into the past, so the times it pops only grow.
//! The queue keeps the time of the last event popped (`now`) and files each pending event by
//! the highest 6-bit digit in which its time differs from `now` (its level) and by its time's
//! digit at that level (its slot). Level 0 slots hold one time each, so their events leave
//! straight from the front. When level 0 is empty, the first slot of the lowest non-empty level
//! is emptied: `now` moves to that slot's start and its events are filed again, each at a
//! lower level. An event is so filed once per level it descends (one or two for the
//! microseconds between a packet's hops), each move a sequential read and an append, where a
//! binary heap's pop walks a path of a tree larger than the cache.
//!
//! Order: events due at the same time come out in the order they were scheduled, as the binary
//! heap ordered by (time, sequence number) did. Each slot stays in scheduling order: a push
//! appends the newest event, and refiling moves a slot's events, in order, into slots of lower
//! levels, which are empty then. The queue therefore needs no sequence number, and runs are
//! identical per seed to those of the binary heap it replaces.

use super::Ev;

/// Bits per level (64 slots).
const BITS: u32 = 6;
/// Levels: 11 * 6 bits cover a 64-bit time.
const LEVELS: usize = 11;
const SLOTS: usize = 1 << BITS;

/// Pending events by time (see the module documentation).
#[derive(Debug)]
pub(super) struct EventQueue {
    /// The time of the last event popped (or the start of the slot being refiled): no event
    /// may be scheduled before it.
    now: u64,
    /// Level 0: `due[d]` holds the events at time `now` with its low digit replaced by `d`.
    /// Only the lowest occupied slot is ever popped from, at index `head`; it is cleared
    /// when its last event leaves (a plain `Vec`: a push is a store and a length bump).
    due: Vec<Vec<Ev>>,
    /// Events already popped from the lowest occupied slot of level 0.
    head: usize,
    /// Levels 1..LEVELS: `upper[(level - 1) * SLOTS + digit]`, events with their times.
    upper: Vec<Vec<(u64, Ev)>>,
    /// Per level, bit d set: slot d is not empty.
    occupied: [u64; LEVELS],
}

impl Default for EventQueue {
    fn default() -> Self {
        EventQueue {
            now: 0,
            due: (0..SLOTS).map(|_| Vec::new()).collect(),
            head: 0,
            upper: (0..(LEVELS - 1) * SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; LEVELS],
        }
    }
}

impl EventQueue {
    /// Schedules `ev` at time `t`, which must not be before the last event popped.
    #[inline]
    pub(super) fn push(&mut self, t: u64, ev: Ev) {
        assert!(
            t >= self.now,
            "an event at {t} ns scheduled after time {} ns",
            self.now
        );
        self.file(t, ev);
    }

    /// Files `ev` by the highest digit in which `t` differs from `now`. Inlined into both
    /// callers: it runs once per level an event descends.
    #[inline(always)]
    fn file(&mut self, t: u64, ev: Ev) {
        let x = t ^ self.now;
        if x < SLOTS as u64 {
            let d = (t as usize) & (SLOTS - 1);
            self.due[d].push(ev);
            self.occupied[0] |= 1 << d;
        } else {
            let level = ((63 - x.leading_zeros()) / BITS) as usize;
            let d = ((t >> (BITS as usize * level)) as usize) & (SLOTS - 1);
            self.upper[(level - 1) * SLOTS + d].push((t, ev));
            self.occupied[level] |= 1 << d;
        }
    }

    /// The earliest event and its time (of equal times, the first scheduled).
    #[inline]
    pub(super) fn pop(&mut self) -> Option<(u64, Ev)> {
        while self.occupied[0] == 0 {
            let level = self.occupied.iter().position(|&m| m != 0)?;
            self.refile(level);
        }
        let d = self.occupied[0].trailing_zeros() as usize;
        let slot = &mut self.due[d];
        let ev = slot[self.head];
        self.head += 1;
        if self.head == slot.len() {
            slot.clear();
            self.head = 0;
            self.occupied[0] &= !(1 << d);
        }
        self.now = (self.now & !(SLOTS as u64 - 1)) | d as u64;
        Some((self.now, ev))
    }

    /// Empties the first occupied slot of `level` (every lower level is empty): `now` moves to
    /// the slot's start and each of its events is filed at a lower level.
    fn refile(&mut self, level: usize) {
        let d = self.occupied[level].trailing_zeros() as usize;
        self.occupied[level] &= !(1 << d);
        let shift = BITS as usize * level;
        let above = if shift + (BITS as usize) < 64 {
            !((1u64 << (shift + BITS as usize)) - 1)
        } else {
            0
        };
        self.now = (self.now & above) | ((d as u64) << shift);
        let i = (level - 1) * SLOTS + d;
        let mut moving = std::mem::take(&mut self.upper[i]);
        for &(t, ev) in &moving {
            debug_assert!(
                t >= self.now && (t ^ self.now) < 1 << shift,
                "refiling moves down"
            );
            self.file(t, ev);
        }
        moving.clear();
        // The emptied slot keeps its allocation for the events it will hold next.
        self.upper[i] = moving;
    }

    /// Events pending.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.due.iter().map(Vec::len).sum::<usize>() - self.head
            + self.upper.iter().map(Vec::len).sum::<usize>()
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
