//! The event loop and the counters of a run.

use super::{Ev, Sim};
use crate::net::Payload;

/// Counters of a run.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Events processed.
    pub events: u64,
    /// Packets that crossed one queue and link.
    pub packet_hops: u64,
    /// Packets dropped at switch queues.
    pub drops: u64,
    /// Packets lost on links by a random loss model (not counted in `drops`).
    pub link_losses: u64,
    /// Runs of consecutive link losses on the same link (mean burst = losses / bursts).
    pub link_loss_bursts: u64,
    /// Packets marked CE.
    pub ecn_marks: u64,
    /// QCN feedback frames switches sent.
    pub qcn_feedback: u64,
    /// PFC pause and resume frames switches sent.
    pub pause_frames: u64,
    /// Time ports spent paused, summed over ports, ns.
    pub pause_ns: u64,
    /// Ports (host NICs included) that were paused at least once.
    pub ports_paused: u64,
    /// Switches that sent at least one PFC pause.
    pub pausing_switches: u64,
    /// Switches that sent a PFC pause before they had marked any packet CE.
    pub paused_before_marking: u64,
    /// Packets dropped because a PFC ingress headroom was full (included in `drops`).
    pub headroom_drops: u64,
    /// Packets handed to the network by hosts.
    pub packets_sent: u64,
    /// Packets delivered to hosts.
    pub packets_delivered: u64,
    /// Payload bytes delivered to applications.
    pub bytes_delivered: u64,
    /// Simulated time at the end, ns.
    pub end_ns: u64,
}

/// Where a run is (see [`Sim::run_with_progress`]).
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Simulated time, ns.
    pub now: u64,
    /// Events processed.
    pub events: u64,
    /// Flows completed.
    pub completed: u64,
}

/// A queue-occupancy sample of a watched port.
#[derive(Clone, Copy, Debug)]
pub struct QueueSample {
    /// Time, ns.
    pub t: u64,
    /// Port index.
    pub port: usize,
    /// Bytes queued.
    pub bytes: u64,
}

impl Sim {
    /// Runs until every flow completed, or simulated time passes `limit_ns`, or no event is
    /// left. Returns whether every flow completed. `progress(now, events)` is called every
    /// 2^20 events.
    pub fn run(&mut self, limit_ns: u64, mut progress: impl FnMut(u64, u64)) -> bool {
        self.run_with_progress(limit_ns, |p| progress(p.now, p.events))
    }

    /// Like [`Sim::run`], reporting completed flows too.
    pub fn run_with_progress(&mut self, limit_ns: u64, mut progress: impl FnMut(Progress)) -> bool {
        let total = self.flows.len() as u64;
        self.next_sample = self.next_due();
        while self.completed < total {
            let Some((t, ev)) = self.events.pop() else {
                break;
            };
            if t > limit_ns {
                self.now = limit_ns;
                break;
            }
            self.now = t;
            self.stats.events += 1;
            if self.stats.events & 0xfffff == 0 {
                progress(Progress {
                    now: self.now,
                    events: self.stats.events,
                    completed: self.completed,
                });
            }
            if t >= self.next_sample {
                self.sample(t);
            }
            self.handle(t, ev);
        }
        self.finish();
        self.completed == total
    }

    /// Runs the samplers due at `t` (before the events at `t`), in a fixed order: the watched
    /// queues, the traces, the meter. Kept out of the loop, which tests one time per event.
    #[cold]
    #[inline(never)]
    fn sample(&mut self, t: u64) {
        if self.watch_every > 0 && t >= self.next_watch {
            self.sample_queues(t);
            self.next_watch = t + self.watch_every;
        }
        if self.trace_every > 0 && t >= self.next_trace {
            self.sample_traces(t);
            self.next_trace = t + self.trace_every;
        }
        self.sample_meter(t);
        self.next_sample = self.next_due();
    }

    /// The earliest time a sampler is due (`u64::MAX`: none is on).
    fn next_due(&self) -> u64 {
        let mut due = self.meter.as_ref().map_or(u64::MAX, |m| m.due());
        if self.watch_every > 0 {
            due = due.min(self.next_watch);
        }
        if self.trace_every > 0 {
            due = due.min(self.next_trace);
        }
        due
    }

    /// Records the queue of every watched port at `t`.
    fn sample_queues(&mut self, t: u64) {
        for &p in &self.watch {
            self.topo.ports[p].advance(t);
            self.samples.push(QueueSample {
                t,
                port: p,
                bytes: self.topo.ports[p].qbytes,
            });
        }
    }

    /// Runs event `ev`, due now (`t`). Inline: the loop above is generic, so it is compiled
    /// in the caller's crate, and the dispatch belongs in it.
    #[inline]
    fn handle(&mut self, t: u64, ev: Ev) {
        match ev {
            Ev::FlowStart { flow } => {
                let src = self.flows[flow as usize].src;
                self.with_host(src, |h, ctx| h.start_flow(ctx, flow));
                self.kick(src);
            }
            Ev::Arrive { pkt } => {
                let slot = &self.packets[pkt as usize];
                let (node, via) = (slot.node, slot.via);
                let p = slot.pkt.as_ref().expect("live packet");
                if matches!(&p.payload, Payload::Control(f) if f.hop_by_hop()) {
                    // The node at this end of the link consumes it.
                    let p = self.take(pkt);
                    if let Payload::Control(f) = &p.payload {
                        f.arrive(self, node, p.src);
                    }
                    return;
                }
                if node < self.topo.hosts {
                    let p = self.take(pkt);
                    self.stats.packets_delivered += 1;
                    self.with_host(node, |h, ctx| h.receive(ctx, p));
                    self.kick(node);
                } else {
                    self.forward(node, pkt, via);
                }
            }
            Ev::PauseEnd { port } => {
                if self.topo.ports[port as usize].paused_until == t {
                    self.resume(port as usize);
                }
            }
            Ev::FlowStop { flow } => self.stop_flow(flow),
            Ev::RateChange { idx } => {
                let (port, bps) = self.rate_changes[idx as usize];
                self.topo.ports[port].rate_bps = bps;
            }
            Ev::PortFree { port } => {
                // Host NICs and per-packet switch ports (fast-path switch ports are
                // scheduled at enqueue).
                let pt = &mut self.topo.ports[port as usize];
                pt.busy = false;
                let from = pt.from;
                if from < self.topo.hosts {
                    self.kick(from);
                } else {
                    self.start_tx(port as usize);
                }
            }
            Ev::Wake { host } => {
                if self.wake_at[host as usize] == t {
                    self.wake_at[host as usize] = u64::MAX;
                    self.with_host(host, |h, ctx| h.wake(ctx));
                    self.kick(host);
                }
            }
        }
    }

    /// The source of `flow` stops sending it (its mode counters read first).
    #[cold]
    fn stop_flow(&mut self, flow: u32) {
        self.meter_flow_stops(flow);
        let src = self.flows[flow as usize].src;
        self.with_host(src, |h, ctx| h.stop_flow(ctx, flow));
        self.kick(src);
    }

    /// Closes the counters at the end of a run: pauses still running end now, and the per-port
    /// counts are summed.
    fn finish(&mut self) {
        self.stats.end_ns = self.now;
        self.finish_meter();
        for p in &mut self.topo.ports {
            if p.paused_until > 0 {
                p.pause_ns += self.now.saturating_sub(p.paused_since);
                p.paused_since = self.now;
            }
        }
        self.stats.pause_ns = self.topo.ports.iter().map(|p| p.pause_ns).sum();
        self.stats.ports_paused = self.topo.ports.iter().filter(|p| p.pauses > 0).count() as u64;
        self.stats.drops = self.topo.ports.iter().map(|p| p.drops).sum();
        self.stats.ecn_marks = self.topo.ports.iter().map(|p| p.marks).sum();
        let (pausing, unmarked) = self.pauses_before_marks();
        self.stats.pausing_switches = pausing;
        self.stats.paused_before_marking = unmarked;
    }
}
