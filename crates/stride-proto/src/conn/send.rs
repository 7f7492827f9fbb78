//! The sender's stream state: counters over one byte buffer (`snd_una`, `snd_nxt`, `snd_max`
//! and the end of written data), the peer's window, the FIN, and loss recovery: go-back-N, or
//! selective recovery's two short bounded lists of ranges (to resend, and resent within the
//! last round trip), spec §6.3, §6.5.

use super::{IDLE_BUFFER, SMALL_PAYLOAD_COPY};
use crate::buf::SendBuf;
use crate::config::Config;
use crate::stats::ConnStats;
use crate::wire::{nack_ranges, seq_le, seq_lt, MAX_NACK_RANGES, NACK_RANGE_LEN};
use bytes::Bytes;
use std::collections::VecDeque;

/// Selective recovery, sender: most ranges queued for resending, and most remembered as
/// resent within the last round trip (oldest forgotten first).
const MAX_REXMIT: usize = 2 * MAX_NACK_RANGES;

/// What a connection sends.
pub(super) struct SendState {
    /// The first unacknowledged sequence number.
    pub(super) una: u32,
    /// The next sequence number to send (lowered by go-back-N).
    pub(super) nxt: u32,
    /// The highest sequence number sent, plus one.
    pub(super) max: u32,
    /// Written bytes from `una` on.
    buf: SendBuf,
    /// Set by `Connection::poll_transmit_parts` for one call: DATA payloads go here as
    /// slices of the send buffer instead of being copied into the datagram buffer.
    tx_parts: Option<Vec<Bytes>>,
    /// The application finished its stream: a FIN follows the buffered bytes.
    close_requested: bool,
    fin_sent: bool,
    fin_acked: bool,
    /// The window the peer advertised, bytes.
    peer_window: u32,
    /// A write did not fit: the writer waits for [`crate::Event::Writable`].
    want_writable: bool,
    /// Free send-buffer bytes that make the waiting writer writable again: an ACK interval
    /// (at most a quarter of the buffer) for a copying writer, a quarter for one that hands
    /// over chunks (see [`SendState::on_ack`]).
    writable_step: usize,
    /// Selective recovery: ranges `[start, end)` the peer's NACKs named, waiting to be resent.
    rexmit: VecDeque<(u32, u32)>,
    /// Selective recovery: ranges resent and when, so a NACK repeating a range whose resend is
    /// still in flight does not resend it again within a round trip.
    resent_log: VecDeque<(u32, u32, u64)>,
    /// Selective recovery: the end of the last range of the latest selective NACK. The peer
    /// held data at or beyond it then; after a timeout, only if it is past `una` is a
    /// resend of the first packet enough.
    nack_hi: Option<u32>,
    /// The sequence number and time of the latest NACK the controller reacted to.
    last_gbn_seq: u32,
    last_gbn_at: u64,
}

impl SendState {
    /// Nothing written; every counter at `iss`.
    pub(super) fn new(iss: u32) -> SendState {
        SendState {
            una: iss,
            nxt: iss,
            max: iss,
            buf: SendBuf::new(),
            tx_parts: None,
            close_requested: false,
            fin_sent: false,
            fin_acked: false,
            peer_window: 0,
            want_writable: false,
            writable_step: 0,
            rexmit: VecDeque::new(),
            resent_log: VecDeque::new(),
            nack_hi: None,
            last_gbn_seq: iss,
            last_gbn_at: 0,
        }
    }

    /// The handshake completed: data starts at `seq` and the peer offered `window` (in KiB,
    /// as on the wire).
    pub(super) fn start(&mut self, seq: u32, window: u16) {
        self.una = seq;
        self.nxt = seq;
        self.max = seq;
        self.set_peer_window(window);
    }

    /// Takes the window of a packet from the peer (in KiB, as on the wire).
    pub(super) fn set_peer_window(&mut self, window: u16) {
        self.peer_window = u32::from(window) << 10;
    }

    /// Bytes written and not yet acknowledged.
    pub(super) fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether the application finished its stream.
    pub(super) fn close_requested(&self) -> bool {
        self.close_requested
    }

    /// The application finished its stream.
    pub(super) fn request_close(&mut self) {
        self.close_requested = true;
    }

    /// Whether our FIN was acknowledged.
    pub(super) fn fin_acked(&self) -> bool {
        self.fin_acked
    }

    /// Copies what fits of `data` into the send buffer; returns how many bytes did. A writer
    /// left with bytes over is woken after an ACK interval (at most a quarter of the buffer).
    pub(super) fn write(&mut self, data: &[u8], cfg: &Config) -> usize {
        let room = cfg.send_buffer.saturating_sub(self.buf.len());
        let n = room.min(data.len());
        self.buf.extend_from_slice(&data[..n]);
        if n < data.len() {
            self.want_writable = true;
            self.writable_step = (cfg.ack_interval as usize).min(cfg.send_buffer / 4);
        }
        n
    }

    /// Takes what fits of `data` (a prefix) into the send buffer without copying; returns how
    /// many bytes did. A writer left with bytes over is woken after a quarter of the buffer.
    pub(super) fn write_bytes(&mut self, data: &Bytes, cfg: &Config) -> usize {
        let room = cfg.send_buffer.saturating_sub(self.buf.len());
        let n = room.min(data.len());
        if n == data.len() {
            self.buf.push(data.clone());
        } else {
            self.buf.push(data.slice(..n));
            self.want_writable = true;
            self.writable_step = cfg.send_buffer / 4;
        }
        n
    }

    /// Frees the send buffer (everything in it is acknowledged or abandoned).
    pub(super) fn release(&mut self) {
        self.buf = SendBuf::new();
    }

    /// The connection closed: the buffer and the resend lists are freed.
    pub(super) fn release_all(&mut self) {
        self.release();
        self.rexmit = VecDeque::new();
        self.resent_log = VecDeque::new();
    }

    /// Written bytes not yet sent (from `nxt`).
    pub(super) fn pending(&self) -> u32 {
        let end = self.una.wrapping_add(self.buf.len() as u32);
        if seq_lt(self.nxt, end) {
            end.wrapping_sub(self.nxt)
        } else {
            0
        }
    }

    /// Bytes the window allows beyond `nxt`: the peer's window, capped by the controller's
    /// window `cc_window` (at least one packet of `max_payload`).
    pub(super) fn window_room(&self, cc_window: Option<u32>, max_payload: u16) -> u32 {
        let w = match cc_window {
            Some(cap) => self.peer_window.min(cap.max(u32::from(max_payload))),
            None => self.peer_window,
        };
        let limit = self.una.wrapping_add(w);
        if seq_lt(self.nxt, limit) {
            limit.wrapping_sub(self.nxt)
        } else {
            0
        }
    }

    /// Whether the FIN is to be sent now: the stream is finished, every byte sent.
    pub(super) fn fin_due(&self) -> bool {
        self.close_requested && !self.fin_sent && self.pending() == 0
    }

    /// Whether sent data is unacknowledged.
    pub(super) fn outstanding(&self) -> bool {
        self.una != self.max
    }

    /// Bytes sent and not acknowledged.
    pub(super) fn inflight(&self) -> u32 {
        self.max.wrapping_sub(self.una)
    }

    /// A timeout with nothing outstanding, while data waits for the window: the window is
    /// opened to one packet of `max_payload` to probe it.
    pub(super) fn open_probe(&mut self, max_payload: u16) {
        if self.pending() > 0 {
            self.peer_window = self.peer_window.max(u32::from(max_payload));
        }
    }

    /// The peer acknowledged up to `a`. Returns the bytes newly acknowledged (0 for an old
    /// or impossible acknowledgement) and whether the waiting writer is now writable.
    pub(super) fn on_ack(&mut self, a: u32, send_buffer: usize) -> (u32, bool) {
        if !(seq_lt(self.una, a) && seq_le(a, self.max)) {
            return (0, false);
        }
        let newly = a.wrapping_sub(self.una);
        let data_end = self.una.wrapping_add(self.buf.len() as u32);
        if self.close_requested && seq_lt(data_end, a) {
            // Everything up to and including our FIN is acknowledged (possibly a FIN
            // that go-back-N had queued again: it is no longer owed).
            self.fin_sent = true;
            self.fin_acked = true;
        }
        let data_acked = (newly as usize).min(self.buf.len());
        self.buf.drain_front(data_acked);
        if self.buf.is_empty() && self.buf.capacity() > IDLE_BUFFER {
            self.buf = SendBuf::new();
        }
        self.una = a;
        if seq_lt(self.nxt, a) {
            self.nxt = a;
        }
        if !self.rexmit.is_empty() || !self.resent_log.is_empty() {
            self.prune_rexmit();
        }
        // Writable once `writable_step` of room is free again: not per freed packet (a
        // writer woken per ACK costs a wake-up per packet at low rates). A copying writer
        // waits for an ACK interval (at most a quarter of the buffer), not for large steps:
        // one that then copies a megabyte at once steals its core from the pacer on a small
        // host (`stride demo` fell from ~93 % to ~75 % utilisation with a quarter-buffer
        // step). A writer handing over chunks copies nothing, so it waits for a quarter of
        // the buffer: a wake-up per 64 KiB was a third of a bulk sender's context switches.
        let writable = self.want_writable && self.buf.len() + self.writable_step <= send_buffer;
        if writable {
            self.want_writable = false;
        }
        (newly, writable)
    }

    /// Drops the parts of the resend lists that are acknowledged or no longer sent.
    fn prune_rexmit(&mut self) {
        let (una, nxt) = (self.una, self.nxt);
        self.rexmit.retain_mut(|r| {
            if seq_lt(r.0, una) {
                r.0 = una;
            }
            if seq_lt(nxt, r.1) {
                r.1 = nxt;
            }
            seq_lt(r.0, r.1)
        });
        self.resent_log.retain(|r| seq_lt(una, r.1));
    }

    /// Goes back to `seq` (the first unacknowledged byte, or the one a NACK names): it and
    /// everything after it are sent again in order, the FIN too when it was sent; the resend
    /// lists are emptied.
    pub(super) fn go_back(&mut self, seq: u32) {
        self.nxt = seq;
        self.rexmit.clear();
        self.resent_log.clear();
        if self.fin_sent && !self.fin_acked {
            self.fin_sent = false;
        }
    }

    /// A plain NACK for `a` arrived at `now` (go-back-N): unless it repeats the NACK acted on
    /// within `repeat_ns`, or names nothing sent and unacknowledged, the sender goes back to
    /// `a`. Returns whether it did (the controller then reacts).
    pub(super) fn on_plain_nack(&mut self, now: u64, a: u32, repeat_ns: u64) -> bool {
        let recent = a == self.last_gbn_seq && now.saturating_sub(self.last_gbn_at) < repeat_ns;
        if seq_le(self.una, a) && seq_lt(a, self.nxt) && !recent {
            // Go-back-N from the missing byte.
            self.go_back(a);
            self.last_gbn_seq = a;
            self.last_gbn_at = now;
            return true;
        }
        false
    }

    /// A selective NACK arrived at `now`: `a` was processed; `payload` names missing ranges
    /// (wire-checked to be whole ranges). Every range must lie in what was sent and is
    /// unacknowledged, be non-empty, and follow the previous one without overlap; otherwise
    /// the ranges are ignored (counted). Each range is queued for resending unless it was
    /// resent within `guard_ns` (its resend may still be in flight). Returns whether the
    /// controller reacts: as to a go-back-N NACK (§8), once per `repeat_ns`.
    pub(super) fn on_selective_nack(
        &mut self,
        now: u64,
        a: u32,
        payload: &[u8],
        (repeat_ns, guard_ns): (u64, u64),
        stats: &mut ConnStats,
    ) -> bool {
        let Some(last_end) = self.nack_ranges_end(payload) else {
            stats.nack_ranges_rejected += (payload.len() / NACK_RANGE_LEN) as u64;
            return false;
        };
        self.nack_hi = last_end;
        // Once per round trip, whatever `ack` says: selective NACKs come per new hole and
        // `ack` moves as each first hole fills, so the per-gap rule of go-back-N would cut the
        // rate once per loss (measured: 5 % loss then held a 1 Gbit/s path at ~10 %).
        // A repeat for the same first hole (its resend lost or still in flight) does not cut
        // again: the first NACK for it did.
        let recent = now.saturating_sub(self.last_gbn_at) < repeat_ns || a == self.last_gbn_seq;
        if !recent {
            self.last_gbn_seq = a;
            self.last_gbn_at = now;
        }
        self.queue_resends(now, payload, guard_ns, stats);
        !recent
    }

    /// Checks a selective NACK's ranges (see [`SendState::on_selective_nack`]); returns the
    /// end of the last one (None inside: no ranges), or None when they are refused.
    fn nack_ranges_end(&self, payload: &[u8]) -> Option<Option<u32>> {
        let mut prev_end: Option<u32> = None;
        for r in nack_ranges(payload) {
            let end = r.seq.wrapping_add(r.len);
            // (A range below una is only stale, from a NACK overtaken by an ACK: clipped
            // below, not refused.)
            let ok = r.len > 0
                && self.max.wrapping_sub(r.seq) <= 1 << 30
                && prev_end.is_none_or(|p| seq_le(p, r.seq))
                && seq_lt(r.seq, end)
                && seq_le(end, self.max);
            if !ok {
                return None;
            }
            prev_end = Some(end);
        }
        Some(prev_end)
    }

    /// Queues the checked ranges of a selective NACK for resending, but not those resent
    /// less than `guard_ns` (a round trip plus its variation) ago: they are in flight.
    fn queue_resends(&mut self, now: u64, payload: &[u8], guard_ns: u64, stats: &mut ConnStats) {
        let una = self.una;
        self.resent_log
            .retain(|r| now.saturating_sub(r.2) < guard_ns && seq_lt(una, r.1));
        for r in nack_ranges(payload) {
            let mut start = r.seq;
            let mut end = r.seq.wrapping_add(r.len);
            // Only what was sent and is still owed: below nxt (after a go-back-N the rest
            // is being resent in order anyway).
            if seq_lt(start, self.una) {
                start = self.una;
            }
            if seq_lt(self.nxt, end) {
                end = self.nxt;
            }
            if !seq_lt(start, end) {
                continue;
            }
            let in_flight = self
                .resent_log
                .iter()
                .any(|l| seq_lt(l.0, end) && seq_lt(start, l.1));
            if in_flight {
                continue;
            }
            if self.rexmit.len() >= MAX_REXMIT {
                break;
            }
            if self.resent_log.len() >= MAX_REXMIT {
                self.resent_log.pop_front();
            }
            self.resent_log.push_back((start, end, now));
            self.rexmit.push_back((start, end));
            stats.nack_ranges_resent += 1;
        }
    }

    /// Whether the latest selective NACK showed the peer holding data beyond `una`.
    pub(super) fn peer_holds_more(&self) -> bool {
        self.nack_hi.is_some_and(|h| seq_lt(self.una, h))
    }

    /// After a first timeout, selective: queues only the first unacknowledged packet (at most
    /// `max_payload` bytes) for resending at `now`; returns whether there was one.
    pub(super) fn resend_first(&mut self, now: u64, max_payload: u16) -> bool {
        let end = self.una.wrapping_add(
            (self.buf.len() as u32)
                .min(u32::from(max_payload))
                .min(self.nxt.wrapping_sub(self.una)),
        );
        self.rexmit.clear();
        if seq_lt(self.una, end) {
            self.rexmit.push_back((self.una, end));
            self.resent_log.push_back((self.una, end, now));
            return true;
        }
        false
    }

    /// Whether ranges wait to be resent.
    pub(super) fn has_rexmit(&self) -> bool {
        !self.rexmit.is_empty()
    }

    /// Takes the next piece (at most `max_payload` bytes) of the first range queued for
    /// resending: its start and length.
    pub(super) fn next_rexmit(&mut self, max_payload: u16) -> (u32, u32) {
        let (start, end) = self.rexmit[0];
        let len = end.wrapping_sub(start).min(u32::from(max_payload));
        if len == end.wrapping_sub(start) {
            self.rexmit.pop_front();
        } else {
            self.rexmit[0].0 = start.wrapping_add(len);
        }
        (start, len)
    }

    /// `len` bytes from `nxt` were sent.
    pub(super) fn advance(&mut self, len: u32) {
        self.nxt = self.nxt.wrapping_add(len);
        if seq_lt(self.max, self.nxt) {
            self.max = self.nxt;
        }
    }

    /// The FIN was sent (it takes one sequence number).
    pub(super) fn on_fin_sent(&mut self) {
        self.fin_sent = true;
        self.advance(1);
    }

    /// Makes DATA payloads of the next transmit slices appended to `parts` (None: copies).
    pub(super) fn set_tx_parts(&mut self, parts: Option<Vec<Bytes>>) {
        self.tx_parts = parts;
    }

    /// Takes the parts back after the transmit.
    pub(super) fn take_tx_parts(&mut self) -> Option<Vec<Bytes>> {
        self.tx_parts.take()
    }

    /// Copies send-buffer bytes from offset `off` (from `una`) into `dst`, or (while parts
    /// are set, see [`SendState::set_tx_parts`]) appends them as slices to the parts, unless
    /// they are at most [`SMALL_PAYLOAD_COPY`] bytes.
    pub(super) fn copy_out(&mut self, off: usize, dst: &mut [u8]) {
        match self.tx_parts.as_mut() {
            Some(parts) if dst.len() > SMALL_PAYLOAD_COPY => self.buf.slices(off, dst.len(), parts),
            _ => self.buf.copy_out(off, dst),
        }
    }
}
