//! The switches' ECMP sets, compact: each switch has only a few distinct candidate sets (in a
//! FatTree: its up-links, or one down-link), so a (switch, destination) pair maps to a small id
//! of a shared list of ports.
//!
//! The per-hop lookup reads one 2-byte id (4 past 65 536 distinct sets) and a list that stays
//! in cache, where a `Vec` of ports per (switch, destination) missed the cache on most hops
//! and, at 3 456 hosts and 720 switches, took most of a run's memory.

use rustc_hash::FxHashMap as HashMap;

/// Every switch's candidate output ports per destination host.
#[derive(Debug, Default)]
pub struct Routes {
    hosts: usize,
    /// `ids[switch * hosts + dst]`: index into `lists`.
    ids: Ids,
    /// (start, len) in `ports`.
    lists: Vec<(u32, u32)>,
    ports: Vec<u32>,
}

/// The id table, in 2 bytes per entry when every id fits (half the cache lines of 4).
#[derive(Debug)]
enum Ids {
    Narrow(Vec<u16>),
    Wide(Vec<u32>),
}

impl Default for Ids {
    fn default() -> Self {
        Ids::Narrow(Vec::new())
    }
}

/// Builds a [`Routes`] one destination at a time.
pub(crate) struct RoutesBuilder {
    hosts: usize,
    switches: usize,
    ids: Vec<u32>,
    lists: Vec<(u32, u32)>,
    ports: Vec<u32>,
    /// Per switch: its distinct sets so far and their ids.
    seen: Vec<HashMap<Vec<u32>, u32>>,
}

impl RoutesBuilder {
    /// A table for `switches` switches and `hosts` destinations, every set empty.
    pub(crate) fn new(hosts: usize, switches: usize) -> Self {
        RoutesBuilder {
            hosts,
            switches,
            ids: vec![u32::MAX; hosts * switches],
            lists: Vec::new(),
            ports: Vec::new(),
            seen: (0..switches).map(|_| HashMap::default()).collect(),
        }
    }

    /// Switch index `sw` reaches host `dst` through `cands`, in this order.
    pub(crate) fn set(&mut self, sw: usize, dst: usize, cands: &[u32]) {
        let id = match self.seen[sw].get(cands) {
            Some(&id) => id,
            None => {
                let id = self.lists.len() as u32;
                self.lists
                    .push((self.ports.len() as u32, cands.len() as u32));
                self.ports.extend_from_slice(cands);
                self.seen[sw].insert(cands.to_vec(), id);
                id
            }
        };
        self.ids[sw * self.hosts + dst] = id;
    }

    /// The table; a pair never [`set`](RoutesBuilder::set) has no candidate.
    pub(crate) fn finish(mut self) -> Routes {
        if self.ids.contains(&u32::MAX) {
            let empty = self.lists.len() as u32;
            self.lists.push((0, 0));
            for id in &mut self.ids {
                if *id == u32::MAX {
                    *id = empty;
                }
            }
        }
        debug_assert_eq!(self.ids.len(), self.hosts * self.switches);
        let ids = match self.ids.iter().map(|&i| u16::try_from(i)).collect() {
            Ok(narrow) => Ids::Narrow(narrow),
            Err(_) => Ids::Wide(self.ids),
        };
        Routes {
            hosts: self.hosts,
            ids,
            lists: self.lists,
            ports: self.ports,
        }
    }
}

impl Routes {
    /// The candidate output ports of switch index `sw` (node id minus the host count) towards
    /// host `dst`, in ECMP order (empty: no path).
    #[inline]
    pub fn candidates(&self, sw: usize, dst: u32) -> &[u32] {
        let i = sw * self.hosts + dst as usize;
        let id = match &self.ids {
            Ids::Narrow(v) => usize::from(v[i]),
            Ids::Wide(v) => v[i] as usize,
        };
        let (start, len) = self.lists[id];
        &self.ports[start as usize..(start + len) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_equal_sets_and_keeps_their_order() {
        let mut b = RoutesBuilder::new(3, 2);
        b.set(0, 0, &[5, 6]);
        b.set(0, 1, &[5, 6]);
        b.set(0, 2, &[7]);
        b.set(1, 0, &[6, 5]);
        b.set(1, 1, &[8]);
        let r = b.finish();
        assert_eq!(r.candidates(0, 0), &[5, 6]);
        assert_eq!(r.candidates(0, 1), &[5, 6]);
        assert_eq!(r.candidates(0, 2), &[7]);
        assert_eq!(r.candidates(1, 0), &[6, 5]);
        assert_eq!(r.candidates(1, 1), &[8]);
        assert!(r.candidates(1, 2).is_empty(), "never set: no path");
        assert_eq!(r.lists.len(), 5, "the shared set is stored once");
    }

    #[test]
    fn ids_widen_past_two_bytes() {
        let switches = 1;
        let hosts = 70_000;
        let mut b = RoutesBuilder::new(hosts, switches);
        for d in 0..hosts {
            b.set(0, d, &[d as u32]);
        }
        let r = b.finish();
        assert!(matches!(r.ids, Ids::Wide(_)));
        assert_eq!(r.candidates(0, 69_999), &[69_999]);
    }
}
