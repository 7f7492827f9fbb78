//! Measurements of a run by class of flows (the groups of a mixed run, `crate::coexist`):
//! payload bytes delivered per class at chosen times, with one port's drops, and that port's
//! queueing delay on a regular grid. Taken between events, outside the per-hop path: the
//! event loop calls the samplers only when one of them is due.

use super::{ModeStats, Sim};

/// What a [`Meter`] measures and what it has recorded.
#[derive(Clone, Debug)]
pub struct Meter {
    /// Class of each flow (`0..classes`).
    pub class: Vec<u32>,
    /// Number of classes.
    pub classes: usize,
    /// When to record the delivered bytes, ns, ascending; the end of the run is recorded too.
    pub times: Vec<u64>,
    /// The port whose queueing delay and drops are recorded.
    pub port: usize,
    /// Period of the queue samples, ns (at least 1).
    pub port_every: u64,
    /// The delivered-bytes records, in time order.
    pub delivered: Vec<DeliveredSample>,
    /// The queue records, one per `port_every` from time 0.
    pub queue: Vec<QueueDelaySample>,
    /// Per flow, its controller's mode counters as last read (at each delivered-bytes record,
    /// before its stop, at the end); `None` if it never reported any.
    pub modes: Vec<Option<ModeStats>>,
    next_time: usize,
    next_port: u64,
}

/// Payload bytes delivered per class up to a time (events at that time not included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveredSample {
    /// Time, ns.
    pub t: u64,
    /// Cumulative payload bytes the receiving applications read, per class.
    pub bytes: Vec<u64>,
    /// Cumulative drops at the meter's port.
    pub drops: u64,
}

/// The queue of the meter's port at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueDelaySample {
    /// Time, ns.
    pub t: u64,
    /// Bytes waiting.
    pub bytes: u64,
    /// The wait of a packet arriving now before its first bit leaves, ns: exact on a FIFO
    /// switch port scheduled at enqueue; the waiting bytes at the link rate on a port that
    /// runs per packet (the packet being serialised not counted).
    pub wait_ns: u64,
}

impl Meter {
    /// A meter of `class.len()` flows in `classes` classes, recording the delivered bytes at
    /// `times` (sorted here) and port `port`'s queue every `port_every` ns.
    pub fn new(
        class: Vec<u32>,
        classes: usize,
        mut times: Vec<u64>,
        port: usize,
        port_every: u64,
    ) -> Meter {
        assert!(port_every > 0, "a queue sample period of at least 1 ns");
        assert!(class.iter().all(|&c| (c as usize) < classes), "classes");
        times.sort_unstable();
        times.dedup();
        let flows = class.len();
        Meter {
            class,
            classes,
            times,
            port,
            port_every,
            delivered: Vec::new(),
            queue: Vec::new(),
            modes: vec![None; flows],
            next_time: 0,
            next_port: 0,
        }
    }

    /// The next time a record is due (`u64::MAX`: none).
    pub(super) fn due(&self) -> u64 {
        self.times
            .get(self.next_time)
            .copied()
            .unwrap_or(u64::MAX)
            .min(self.next_port)
    }
}

impl Sim {
    /// Takes the meter's records due at or before `t` (the state before the events at `t`).
    pub(super) fn sample_meter(&mut self, t: u64) {
        let Some(mut m) = self.meter.take() else {
            return;
        };
        while m.next_port <= t {
            let g = m.next_port;
            let p = &mut self.topo.ports[m.port];
            p.advance(g);
            let wait_ns = if p.from >= self.topo.hosts && !p.per_packet {
                p.free_at.saturating_sub(g)
            } else {
                (u128::from(p.qbytes) * 8_000_000_000 / u128::from(p.rate_bps)) as u64
            };
            m.queue.push(QueueDelaySample {
                t: g,
                bytes: p.qbytes,
                wait_ns,
            });
            m.next_port = g.saturating_add(m.port_every);
        }
        if m.times.get(m.next_time).is_some_and(|&x| x <= t) {
            let bytes = self.delivered_by_class(&m);
            while let Some(&x) = m.times.get(m.next_time).filter(|&&x| x <= t) {
                m.delivered.push(DeliveredSample {
                    t: x,
                    bytes: bytes.clone(),
                    drops: self.topo.ports[m.port].drops,
                });
                m.next_time += 1;
            }
            self.read_modes(&mut m, t);
        }
        self.meter = Some(m);
    }

    /// Closes the meter at the end of the run (`now`): the records due by then, then one at
    /// the end itself.
    pub(super) fn finish_meter(&mut self) {
        let now = self.now;
        self.sample_meter(now);
        let Some(mut m) = self.meter.take() else {
            return;
        };
        if m.delivered.last().is_none_or(|s| s.t < now) {
            let bytes = self.delivered_by_class(&m);
            m.delivered.push(DeliveredSample {
                t: now,
                bytes,
                drops: self.topo.ports[m.port].drops,
            });
        }
        self.read_modes(&mut m, now);
        self.meter = Some(m);
    }

    /// Reads the mode counters of `flow` before its sender stops.
    pub(super) fn meter_flow_stops(&mut self, flow: u32) {
        let src = self.flows[flow as usize].src;
        if let Some(m) = self.meter.as_mut() {
            if let Some(s) = self.hosts[src as usize].mode_stats(flow) {
                m.modes[flow as usize] = Some(s);
            }
        }
    }

    fn delivered_by_class(&self, m: &Meter) -> Vec<u64> {
        let mut bytes = vec![0u64; m.classes];
        for (f, &c) in m.class.iter().enumerate() {
            bytes[c as usize] += self.flow_delivered[f];
        }
        bytes
    }

    /// The mode counters of every flow started by `t` and still sending.
    fn read_modes(&self, m: &mut Meter, t: u64) {
        for (f, fl) in self.flows.iter().enumerate() {
            if fl.start <= t && self.done[f] == u64::MAX {
                if let Some(s) = self.hosts[fl.src as usize].mode_stats(f as u32) {
                    m.modes[f] = Some(s);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_record_is_the_earlier_of_the_two_grids() {
        let mut m = Meter::new(vec![0, 1, 0], 2, vec![30, 10, 10, 20], 0, 7);
        assert_eq!(m.times, [10, 20, 30], "sorted, duplicates dropped");
        assert_eq!(m.due(), 0, "the first queue sample is at 0");
        m.next_port = 14;
        assert_eq!(m.due(), 10);
        m.next_time = 3;
        assert_eq!(m.due(), 14);
        assert_eq!(m.modes.len(), 3);
    }
}
