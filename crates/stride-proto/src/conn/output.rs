//! A connection's output: the next datagram to send, in order of precedence: RST, SYN, the
//! lingering re-acknowledgement, NACK, pure ACK, selective resend, DATA (paced, carrying a due
//! ACK when it may ride), FIN, keepalive (spec §6, §9).

use super::{offered_caps, ts32, Connection, State};
use crate::wire::{
    emit_nack_ranges, seq_lt, Flags, Header, NackRange, HEADER_LEN, MAX_NACK_RANGES, NACK_RANGE_LEN,
};

impl Connection {
    /// Written bytes not yet sent.
    pub(super) fn pending_data(&self) -> u32 {
        self.send.pending()
    }

    /// Bytes the peer's and the controller's windows allow now.
    pub(super) fn window_room(&self) -> u32 {
        (self.send).window_room(self.signals.window(), self.cfg.max_payload)
    }

    /// Whether a DATA or FIN packet is waiting for the pacer (not for window or buffer).
    pub(super) fn data_ready(&self) -> bool {
        self.state == State::Established
            && (self.send.has_rexmit()
                || (self.pending_data() > 0 && self.window_room() > 0)
                || self.send.fin_due())
    }

    /// Whether the due ACK may ride on the DATA packet that leaves now instead of leaving on
    /// its own (spec §6.4, `Config::ack_ride_ns`): fewer than an ACK interval of bytes is
    /// due, nothing but the ACK and window fields is owed (no CNP, no FIN, no handshake
    /// confirmation), new DATA leaves now, and a pure ACK, which alone carries the peer's
    /// STT and RTT sample, left within `ack_ride_ns`.
    fn ack_rides(&self, now: u64) -> bool {
        self.ack.pure_within(now, self.cfg.ack_ride_ns)
            && self.ack_may_ride()
            && !self.send.has_rexmit()
            && self.pending_data() > 0
            && self.window_room() > 0
            && now >= self.data_at()
    }

    /// What the due ACK owes, as far as riding on DATA is concerned (shared by
    /// [`Connection::ack_rides`] and [`Connection::hold_ack`]): fewer than an ACK interval of
    /// bytes, no CNP, no FIN received, the handshake confirmed.
    pub(super) fn ack_may_ride(&self) -> bool {
        self.ack.below(self.ack_due_bytes())
            && !self.signals.cn_due()
            && !self.recv.peer_fin
            && (self.confirmed || !self.is_client)
    }

    /// A header from our identifiers and sequence numbers, advertising our window (and the
    /// CE count, on an ACK).
    fn header(&self, flags: Flags, now: u64) -> Header {
        let mut h = Header::new(
            flags,
            self.remote_cid,
            self.local_cid,
            self.send.nxt,
            self.recv.nxt,
            ts32(now),
        );
        h.window = (self.recv.advertised_window(&self.cfg) >> 10).min(0xffff) as u16;
        if flags.contains(Flags::ACK) {
            h.ce_count = self.signals.ce_received();
        }
        h
    }

    /// Writes the header `h` into `buf` and counts the packet; returns the datagram's length.
    fn finish(&mut self, now: u64, h: &mut Header, buf: &mut [u8]) -> usize {
        self.recv.advertised(u32::from(h.window) << 10);
        if self.is_client
            && !self.confirmed
            && (h.flags.contains(Flags::DATA) || h.flags.contains(Flags::FIN))
        {
            // Until the listener has shown it holds the connection, DATA and FIN carry their
            // offset from ISN + 1 in `echo_stt` (spec §5): the stateless listener recovers our
            // ISN from any packet of the first window and verifies the cookie with it when
            // the third packet and the first DATA were lost.
            h.echo_stt = h.seq.wrapping_sub(self.iss.wrapping_add(1));
        }
        h.emit(buf).expect("caller checked buffer size");
        self.stats.packets_sent += 1;
        self.last_tx = now;
        HEADER_LEN + usize::from(h.payload_len)
    }

    /// Writes the next datagram to send at `now` into `buf` (at least 32 + `max_payload`
    /// bytes) and returns its length, or None when nothing may be sent now.
    pub fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        assert!(buf.len() >= HEADER_LEN + usize::from(self.cfg.max_payload));
        if self.rst_now {
            self.rst_now = false;
            let mut h = self.header(Flags::RST | Flags::ACK, now);
            return Some(self.finish(now, &mut h, buf));
        }
        match self.state {
            State::Closed(_) => None,
            State::SynSent => self.syn_due.then(|| self.send_syn(now, buf)),
            State::Linger => {
                if !self.ack.take_due() {
                    return None;
                }
                // The re-acknowledgement of a FIN whose ACK was lost.
                let mut h = self.header(Flags::ACK, now);
                h.seq = self.send.max;
                self.stats.acks_sent += 1;
                Some(self.finish(now, &mut h, buf))
            }
            State::Established => self.poll_established(now, buf),
        }
    }

    /// The next datagram of an established connection, if any may leave at `now`.
    fn poll_established(&mut self, now: u64, buf: &mut [u8]) -> Option<usize> {
        if self.nack.take_due() {
            return Some(self.send_nack(now, buf));
        }
        if self.ack.is_due() && self.ack_rides(now) {
            // The DATA leaving below carries the ACK (spec §6.4).
            self.ack.on_ride();
            self.stats.acks_ridden += 1;
        }
        if self.ack.due_at(now) {
            return Some(self.send_ack(now, buf));
        }
        if self.send.has_rexmit() && now >= self.pacer.next_send() {
            return Some(self.send_rexmit(now, buf));
        }
        let data_at = self.data_at();
        if self.data_ready() && now >= data_at {
            self.pacer.start_batch(now);
            if self.pending_data() > 0 {
                return Some(self.send_data(now, data_at, buf));
            }
            let mut h = self.header(Flags::FIN | Flags::ACK, now);
            self.send.on_fin_sent();
            self.arm_rto(now);
            return Some(self.finish(now, &mut h, buf));
        }
        if now >= self.last_tx + self.cfg.idle_timeout_ns / 4 {
            // Keepalive.
            let mut h = self.header(Flags::ACK, now);
            h.seq = self.send.max;
            return Some(self.finish(now, &mut h, buf));
        }
        None
    }

    /// The SYN, offering our capabilities (spec §5.1).
    fn send_syn(&mut self, now: u64, buf: &mut [u8]) -> usize {
        self.syn_due = false;
        let mut h = Header::new(Flags::SYN, 0, self.local_cid, self.iss, 0, ts32(now));
        h.window = (self.recv.window_bytes(&self.cfg) >> 10).min(0xffff) as u16;
        h.echo_stt = offered_caps(&self.cfg);
        self.finish(now, &mut h, buf)
    }

    /// A NACK: for the gap at `rcv_nxt` or, when segments are held beyond it (selective
    /// recovery: the peer offered it, we hold data only then), naming the holes.
    fn send_nack(&mut self, now: u64, buf: &mut [u8]) -> usize {
        let mut h = self.header(Flags::ACK | Flags::NACK, now);
        h.echo_stt = self.ack.stt_last();
        h.seq = self.send.max;
        self.stats.nacks_sent += 1;
        if self.recv.ooo.holds_any() {
            let mut ranges = [NackRange { seq: 0, len: 0 }; MAX_NACK_RANGES];
            let room = ((buf.len() - HEADER_LEN) / NACK_RANGE_LEN).min(MAX_NACK_RANGES);
            let n = self.recv.ooo.missing(self.recv.nxt, &mut ranges[..room]);
            h.payload_len = emit_nack_ranges(&ranges[..n], &mut buf[HEADER_LEN..]) as u16;
            self.stats.nack_ranges_sent += n as u64;
        }
        self.finish(now, &mut h, buf)
    }

    /// A pure ACK, echoing an STT (`Config::echo`) and carrying a due congestion
    /// notification. A client not yet confirmed sends it as the handshake's third packet
    /// (sequence ISN + 1).
    fn send_ack(&mut self, now: u64, buf: &mut [u8]) -> usize {
        let echo = self.ack.on_pure(now, self.cfg.echo);
        let mut flags = Flags::ACK;
        if self.signals.take_cn() {
            flags = flags | Flags::CN;
            self.stats.cnps_sent += 1;
        }
        let mut h = self.header(flags, now);
        h.seq = if self.is_client && !self.confirmed {
            self.iss.wrapping_add(1)
        } else {
            self.send.max
        };
        h.echo_stt = echo;
        self.stats.acks_sent += 1;
        let n = self.finish(now, &mut h, buf);
        self.check_done(now);
        n
    }

    /// New DATA from `snd_nxt`, as much as the window and `max_payload` allow (PSH when it
    /// empties the queue), released by the pacer at `data_at`.
    fn send_data(&mut self, now: u64, data_at: u64, buf: &mut [u8]) -> usize {
        let pending = self.pending_data();
        let len = pending
            .min(self.window_room())
            .min(u32::from(self.cfg.max_payload));
        let mut flags = Flags::DATA | Flags::ACK;
        if len == pending {
            flags = flags | Flags::PSH;
        }
        let mut h = self.header(flags, now);
        h.payload_len = len as u16;
        let off = self.send.nxt.wrapping_sub(self.send.una) as usize;
        (self.send).copy_out(off, &mut buf[HEADER_LEN..HEADER_LEN + len as usize]);
        if seq_lt(self.send.nxt, self.send.max) {
            self.stats.retransmitted_packets += 1;
        }
        self.stats.data_packets_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        self.signals.cc_mut().on_sent(now, len);
        self.refresh_rate();
        self.send.advance(len);
        let backlogged = self.pending_data() > 0 && self.window_room() > 0;
        let bytes = HEADER_LEN as u64 + u64::from(len);
        self.pacer
            .on_data_sent(now, data_at, bytes, backlogged, &mut self.stats);
        self.arm_rto(now);
        self.finish(now, &mut h, buf)
    }

    /// Selective recovery: resends (part of) the first queued range. Queued ranges always lie
    /// in `[snd_una, snd_nxt)` (pruned on every acknowledgement and go-back-N), so the bytes
    /// are in the send buffer; they were sent within the window before, so only the pacer
    /// gates them.
    fn send_rexmit(&mut self, now: u64, buf: &mut [u8]) -> usize {
        let (start, len) = self.send.next_rexmit(self.cfg.max_payload);
        let mut flags = Flags::DATA | Flags::ACK;
        if !self.send.has_rexmit() && self.pending_data() == 0 {
            flags = flags | Flags::PSH;
        }
        let mut h = self.header(flags, now);
        h.seq = start;
        h.payload_len = len as u16;
        let off = start.wrapping_sub(self.send.una) as usize;
        (self.send).copy_out(off, &mut buf[HEADER_LEN..HEADER_LEN + len as usize]);
        self.stats.retransmitted_packets += 1;
        self.stats.data_packets_sent += 1;
        self.stats.bytes_sent += u64::from(len);
        self.signals.cc_mut().on_sent(now, len);
        self.refresh_rate();
        self.pacer
            .on_resent(now, HEADER_LEN as u64 + u64::from(len));
        self.arm_rto(now);
        self.finish(now, &mut h, buf)
    }
}
