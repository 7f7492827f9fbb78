//! The host side of the engine: what a transport implements ([`HostStack`]) and may do
//! ([`Ctx`]), NIC polling and wake-ups, and the `[trace]` samples of senders.

use super::{Ev, Sim, LOCAL};
use crate::net::Packet;

/// A flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    /// Source host.
    pub src: u32,
    /// Destination host.
    pub dst: u32,
    /// Bytes the application sends.
    pub bytes: u64,
    /// Arrival time, ns.
    pub start: u64,
}

/// What a host's transport may do to the world during a callback.
pub struct Ctx<'a> {
    /// Current time.
    pub now: u64,
    /// Flows (read-only).
    pub flows: &'a [Flow],
    /// Completion time of each flow (u64::MAX until the receiver read the last byte).
    pub done: &'a mut [u64],
    /// Payload bytes delivered to receiving applications.
    pub delivered: &'a mut u64,
    /// The same per flow.
    pub flow_delivered: &'a mut [u64],
    /// Flows completed so far.
    pub completed: &'a mut u64,
}

impl Ctx<'_> {
    /// The receiving application of `flow` read `bytes` more (counts total and per flow).
    pub fn deliver(&mut self, flow: u32, bytes: u64) {
        *self.delivered += bytes;
        self.flow_delivered[flow as usize] += bytes;
    }

    /// The receiving application read the last byte of `flow`.
    pub fn complete(&mut self, flow: u32) {
        if self.done[flow as usize] == u64::MAX {
            self.done[flow as usize] = self.now;
            *self.completed += 1;
        }
    }
}

/// A host's transport stack. The engine asks it for a packet whenever the host's NIC is idle.
pub trait HostStack {
    /// A flow starts at this host (its source).
    fn start_flow(&mut self, ctx: &mut Ctx, flow: u32);
    /// A packet addressed to this host arrived.
    fn receive(&mut self, ctx: &mut Ctx, pkt: Packet);
    /// The NIC is idle: the next packet to send now, if any.
    fn poll_packet(&mut self, ctx: &mut Ctx) -> Option<Packet>;
    /// The earliest time the stack has timer work or may send (pacing), if any.
    fn next_wake(&mut self) -> Option<u64>;
    /// Timers due at `ctx.now`.
    fn wake(&mut self, ctx: &mut Ctx);
    /// The sender state of `flow` (sourced at this host) for `[trace]`, if it is still sending.
    fn trace(&self, _flow: u32) -> Option<FlowTrace> {
        None
    }
    /// The application of `flow` (sourced at this host) leaves: its sender stops sending now
    /// and the flow stays unfinished. Every registered transport implements it; the default
    /// ignores the stop (stacks that serve only tests).
    fn stop_flow(&mut self, _ctx: &mut Ctx, _flow: u32) {}
    /// The mode counters of `flow`'s congestion controller (sourced at this host), if its
    /// controller has modes and the flow is still sending.
    fn mode_stats(&self, _flow: u32) -> Option<ModeStats> {
        None
    }
}

/// A congestion controller's mode counters for one flow's sender (a controller that switches
/// between a delay mode and a competitive mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModeStats {
    /// Switches between modes.
    pub switches: u32,
    /// Time spent in the competitive mode, ns.
    pub competitive_ns: u64,
}

/// What a transport exposes of one flow's sender for traces (fields it does not have: None).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowTrace {
    /// Congestion window, bytes.
    pub cwnd_bytes: Option<f64>,
    /// Sending rate, bit/s.
    pub rate_bps: Option<f64>,
    /// DCTCP's alpha.
    pub alpha: Option<f64>,
    /// Latest RTT sample, ns.
    pub rtt_ns: Option<f64>,
    /// Queueing delay: latest RTT (or STT) sample minus the smallest seen, ns.
    pub queueing_ns: Option<f64>,
    /// STRIDE's STT, ns.
    pub stt_ns: Option<f64>,
    /// STRIDE's rate-update branch last taken.
    pub branch: Option<&'static str>,
}

/// One `[trace]` sample.
#[derive(Clone, Copy, Debug)]
pub struct TraceSample {
    /// Time, ns.
    pub t: u64,
    /// Flow.
    pub flow: u32,
    /// Sender state.
    pub trace: FlowTrace,
    /// Payload bytes the flow's receiver read so far.
    pub delivered: u64,
}

impl Sim {
    pub(super) fn sample_traces(&mut self, t: u64) {
        for &f in &self.trace_flows {
            let fl = self.flows[f as usize];
            if fl.start > t || self.done[f as usize] != u64::MAX {
                continue;
            }
            if let Some(tr) = self.hosts[fl.src as usize].trace(f) {
                self.traces.push(TraceSample {
                    t,
                    flow: f,
                    trace: tr,
                    delivered: self.flow_delivered[f as usize],
                });
            }
        }
        // Jain's index over the flows that ran through the whole last period.
        if !self.last_delivered.is_empty() {
            let since = t.saturating_sub(self.trace_every);
            let xs: Vec<f64> = (0..self.flows.len())
                .filter(|&i| self.flows[i].start <= since && self.done[i] == u64::MAX)
                .map(|i| (self.flow_delivered[i] - self.last_delivered[i]) as f64)
                .collect();
            if !xs.is_empty() {
                let s: f64 = xs.iter().sum();
                let s2: f64 = xs.iter().map(|x| x * x).sum();
                let j = if s2 > 0.0 {
                    s * s / (xs.len() as f64 * s2)
                } else {
                    0.0
                };
                self.jain_samples.push((t, j, xs.len()));
            }
        }
        self.last_delivered.clone_from(&self.flow_delivered);
    }

    pub(super) fn with_host<R>(
        &mut self,
        h: u32,
        f: impl FnOnce(&mut dyn HostStack, &mut Ctx) -> R,
    ) -> R {
        let mut ctx = Ctx {
            now: self.now,
            flows: &self.flows,
            done: &mut self.done,
            delivered: &mut self.stats.bytes_delivered,
            flow_delivered: &mut self.flow_delivered,
            completed: &mut self.completed,
        };
        f(self.hosts[h as usize].as_mut(), &mut ctx)
    }

    /// Lets an idle host NIC take the next packet; re-arms the host's wake-up.
    pub(super) fn kick(&mut self, h: u32) {
        let port = self.topo.host_port[h as usize];
        if !self.topo.ports[port].busy && !self.topo.ports[port].paused(self.now) {
            if let Some(p) = self.with_host(h, |hs, ctx| hs.poll_packet(ctx)) {
                self.stats.packets_sent += 1;
                let id = self.store(p);
                self.enqueue(port, id, LOCAL);
            }
        }
        if let Some(t) = self.with_host(h, |hs, _| hs.next_wake()) {
            let t = t.max(self.now + 1);
            if t < self.wake_at[h as usize] || self.wake_at[h as usize] <= self.now {
                self.wake_at[h as usize] = t;
                self.push(t, Ev::Wake { host: h });
            }
        }
    }
}
