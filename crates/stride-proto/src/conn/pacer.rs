//! The sender's pacer (spec §9): a token bucket kept as a virtual departure time, and the send
//! batch that lets a software sender wake once per batch instead of once per packet.
//!
//! Integer arithmetic only: the rate is turned into a cost per byte (2^-20 ns) once per rate
//! change, so a packet costs one multiply and a shift, never a division.

use super::PACING_QUANTUM_MAX_BYTES;
use crate::cc::RATE_FRAC_BITS;
use crate::config::Config;
use crate::stats::ConnStats;
use crate::wire::HEADER_LEN;

/// When new DATA may leave.
pub(super) struct Pacer {
    /// The controller's rate the costs below were computed for (2^-20 bytes/ns).
    rate: u32,
    /// Pacing cost of one byte in 2^-20 ns (recomputed only when the rate changes).
    ns_per_byte_fp: u64,
    /// The bucket in time at the current rate (see [`Pacer::bucket_ns`]).
    burst_ns: u64,
    /// The virtual departure time of the next packet.
    next_send: u64,
    /// Send batch (`Config::send_batch_bytes`): how long after `next_send` a whole batch may
    /// leave (0: no batching), and when the latest batch started: its packets are those the
    /// pacer allows by then.
    batch_wait_ns: u64,
    batch_at: u64,
    /// The last DATA packet left more data queued behind it (the pacer, not the
    /// application, decides when the next one goes).
    backlogged: bool,
    /// When the last DATA packet was produced.
    last_data_at: u64,
}

impl Pacer {
    /// A pacer without a rate yet (the connection sets one before its first packet).
    pub(super) fn new() -> Pacer {
        Pacer {
            rate: 0,
            ns_per_byte_fp: 0,
            burst_ns: 0,
            next_send: 0,
            batch_wait_ns: 0,
            batch_at: 0,
            backlogged: false,
            last_data_at: 0,
        }
    }

    /// Takes the controller's current rate (2^-20 bytes/ns); the costs are recomputed only
    /// when it changed.
    pub(super) fn set_rate(&mut self, rate: u32, cfg: &Config) {
        if rate != self.rate {
            self.rate = rate;
            // One division per rate change, never per packet: ns per byte in 2^-20 units.
            self.ns_per_byte_fp = (1u64 << (2 * RATE_FRAC_BITS)) / u64::from(rate.max(1));
            self.burst_ns = self.bucket_ns(cfg);
            self.batch_wait_ns = self.batch_wait(cfg);
        }
    }

    /// The time `bytes` take at the current rate.
    fn at_rate(&self, bytes: u64) -> u64 {
        (bytes * self.ns_per_byte_fp) >> RATE_FRAC_BITS
    }

    /// How long after `next_send` a send batch may leave whole: the pacer's time for the
    /// batch less one packet's. The batch leaves room in the bucket for a late start: at least
    /// half the bucket and at least the pacing quantum (`burst_min_ns`, how late a software
    /// sender's turn may come), so waiting for a batch never costs rate; where the bucket has
    /// no such room (a 10 Gbit/s host: a 64 KiB bucket is 52 µs) there is no batch.
    fn batch_wait(&self, cfg: &Config) -> u64 {
        if cfg.send_batch_bytes == 0 {
            return 0;
        }
        let room = self
            .burst_ns
            .saturating_sub(cfg.burst_min_ns.max(self.burst_ns / 2));
        let batch = self.at_rate(u64::from(cfg.send_batch_bytes)).min(room);
        batch.saturating_sub(self.at_rate(HEADER_LEN as u64 + u64::from(cfg.max_payload)))
    }

    /// The pacing bucket in time at the current rate: `burst_bytes`, or the pacing quantum
    /// (`burst_min_ns`, at most [`PACING_QUANTUM_MAX_BYTES`] at this rate) when that is longer.
    /// A software sender with a send batch (`send_batch_bytes` and `burst_min_ns` both set)
    /// whose batch lasts at least two quanta at this rate holds a batch plus a quantum, so
    /// that it can sleep for a batch and still wake up to a quantum late without losing rate
    /// (spec §9). Shorter batches (64 KiB above ~5 Gbit/s with a 50 µs quantum) keep the
    /// plain bucket: a sender that sleeps for them loses more to wake-up latency than it
    /// saves in system calls (pinned at 10 Gbit/s on a 2-vCPU VM: 9.10 against 9.48 Gbit/s).
    fn bucket_ns(&self, cfg: &Config) -> u64 {
        let quantum = cfg.burst_min_ns.min(self.at_rate(PACING_QUANTUM_MAX_BYTES));
        let bucket = self.at_rate(u64::from(cfg.burst_bytes)).max(quantum);
        let batch = self.at_rate(u64::from(cfg.send_batch_bytes));
        let q = cfg.burst_min_ns;
        if q > 0 && batch >= q << 1 {
            bucket.max(batch + q)
        } else {
            bucket
        }
    }

    /// When the next packet may leave by the bucket alone (resends wait only for this).
    pub(super) fn next_send(&self) -> u64 {
        self.next_send
    }

    /// Lets the next packet leave at `now` (after the handshake, and after a timeout).
    pub(super) fn restart(&mut self, now: u64) {
        self.next_send = now;
    }

    /// When the next new DATA packet may leave (spec §9): at `next_send`, or, while a batch is
    /// due, when the pacer allows the whole batch. `batch_ready` tells whether a whole
    /// `send_batch_bytes` is ready to send and nothing waits for a resend (resends and short
    /// messages never wait for a batch); it is asked only when a batch could be due.
    pub(super) fn data_at(&self, batch_ready: impl FnOnce() -> bool) -> u64 {
        if self.batch_wait_ns > 0 && self.next_send > self.batch_at && batch_ready() {
            self.next_send.saturating_add(self.batch_wait_ns)
        } else {
            self.next_send
        }
    }

    /// New DATA leaves at `now`: when the latest batch is spent, a new one starts (what the
    /// pacer allows by now leaves with this packet).
    pub(super) fn start_batch(&mut self, now: u64) {
        if self.next_send > self.batch_at {
            self.batch_at = now;
        }
    }

    /// A new DATA packet of `bytes` (header included) left at `now`, when the pacer allowed
    /// it at `data_at`; `backlogged` tells whether more is queued behind it. While the sender
    /// is backlogged the packet's lateness is recorded: how late it leaves after its release
    /// (the pacer's time or, inside a burst, the previous packet's departure), and the bucket
    /// time forfeited by it.
    pub(super) fn on_data_sent(
        &mut self,
        now: u64,
        data_at: u64,
        bytes: u64,
        backlogged: bool,
        stats: &mut ConnStats,
    ) {
        if self.backlogged {
            let release = data_at.max(self.last_data_at);
            stats.pacing_lateness.record(now.saturating_sub(release));
            stats.pacing_forfeit_ns += now
                .saturating_sub(self.burst_ns)
                .saturating_sub(self.next_send);
        }
        self.backlogged = backlogged;
        self.last_data_at = now;
        self.pace(now, bytes);
    }

    /// A resend of `bytes` (header included) left at `now`.
    pub(super) fn on_resent(&mut self, now: u64, bytes: u64) {
        self.last_data_at = now;
        self.pace(now, bytes);
    }

    fn pace(&mut self, now: u64, bytes: u64) {
        // Token bucket kept as a virtual departure time: an idle sender may burst
        // `burst_bytes`; each packet then costs bytes * ns_per_byte (a multiply, no divide).
        let floor = now.saturating_sub(self.burst_ns);
        let cost = self.at_rate(bytes);
        self.next_send = self.next_send.max(floor) + cost;
    }
}
