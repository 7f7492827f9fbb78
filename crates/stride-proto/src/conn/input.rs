//! A connection's input: a datagram routed to it completes the handshake, resets it, or
//! carries an acknowledgement (with NACK ranges, window, echoed STT and CE count) for the
//! sender and DATA or FIN for the receiver (spec §5, §6).

use super::{ts32, CloseReason, Connection, Event, State};
use crate::cc::AckSample;
use crate::wire::{seq_le, seq_lt, syn_ack_peer_caps, Flags, Packet, CAPS_KNOWN};

impl Connection {
    /// Handles a datagram already routed to this connection (`dst_cid` matched), received at
    /// `now` (ideally the kernel or NIC receive timestamp).
    pub fn handle(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        self.handle_ecn(now, pkt, false)
    }

    /// Like [`Connection::handle`] for a datagram whose IP ECN codepoint was CE (`ce`).
    pub fn handle_ecn(&mut self, now: u64, pkt: &Packet<&[u8]>, ce: bool) {
        if self.is_closed() {
            return;
        }
        let f = pkt.flags();
        self.stats.packets_received += 1;
        if f.contains(Flags::RST) {
            self.on_rst(pkt);
            return;
        }
        if self.state == State::SynSent {
            if f.contains(Flags::SYN)
                && f.contains(Flags::ACK)
                && pkt.ack() == self.iss.wrapping_add(1)
            {
                self.on_syn_ack(now, pkt);
            }
            return;
        }
        if pkt.src_cid() != self.remote_cid {
            return;
        }
        if f.contains(Flags::SYN) {
            // A retransmitted SYN-ACK: our third packet was lost; repeat it.
            if self.is_client && !self.confirmed {
                self.ack.request();
            }
            return;
        }
        self.last_rx = now;
        if !self.confirmed {
            self.confirmed = true;
            self.confirm_seq = self.send.max;
        }
        if self.state == State::Linger {
            if f.contains(Flags::FIN) {
                self.ack.request();
            }
            return;
        }
        if f.contains(Flags::ACK) {
            self.on_ack_field(now, pkt);
            if self.is_closed() {
                return;
            }
        }
        if f.contains(Flags::DATA) {
            if ce {
                let interval = self.cfg.cnp_interval_ns;
                if self.signals.on_ce(now, interval, &mut self.stats) {
                    self.ack.request();
                }
            }
            self.on_data(now, pkt);
        } else if f.contains(Flags::FIN) {
            self.on_fin(now, pkt);
        }
        self.check_done(now);
    }

    /// The SYN-ACK to our SYN: the connection is established, the handshake's third packet
    /// due.
    fn on_syn_ack(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        self.last_rx = now;
        self.remote_cid = pkt.src_cid();
        self.recv.nxt = pkt.seq().wrapping_add(1);
        self.send.start(self.iss.wrapping_add(1), pkt.window());
        // The SYN-ACK's ce_count carries the listener's capabilities in bits 8..14
        // beside the start grant (0 from a peer without any).
        self.peer_caps = syn_ack_peer_caps(pkt.ce_count()) & CAPS_KNOWN;
        self.state = State::Established;
        self.rto.reset(self.cfg.initial_rto_ns);
        // The handshake's third packet.
        self.ack.request();
        // Start hints of the SYN-ACK (spec §8.6); a listener without them sends zeros.
        let stt = Some(pkt.echo_stt()).filter(|&s| s != 0);
        if let (true, Some(s)) = (self.cfg.handshake_rtt, stt) {
            // An RTT sample from the handshake (the SYN's STT plus the SYN-ACK's way
            // back): a tail lost before the first ACK then waits min_rto, not the
            // 20 ms initial RTO.
            let rtt = u64::from(s.wrapping_add(ts32(now).wrapping_sub(pkt.tx_ts())));
            if rtt < 1 << 31 {
                self.rtt_sample(rtt);
            }
        }
        let g = pkt.ce_count();
        let grant = (g & crate::endpoint::GRANT_PRESENT != 0).then_some((g & 31) as u8);
        self.signals.cc_mut().on_handshake(now, stt, grant);
        self.refresh_rate();
        self.events.push_back(Event::Connected);
        self.pacer.restart(now);
    }

    /// An RST: believed only when it names what we sent (spec §5.3); then the connection
    /// ends.
    fn on_rst(&mut self, pkt: &Packet<&[u8]>) {
        let ok = match self.state {
            // A refusal of our SYN names our initial sequence number.
            State::SynSent => pkt.ack() == self.iss,
            _ if self.is_client && !self.confirmed => {
                // Before the server proved it holds state, only a refusal of the packet that
                // carries the cookie (sequence iss+1) counts: RSTs to later packets answer
                // datagrams that overtook it, and go-back-N will resend them.
                pkt.src_cid() == self.remote_cid && pkt.ack() == self.iss.wrapping_add(1)
            }
            // An abort by the peer's connection (RST|ACK) names our identifier.
            _ if pkt.flags().contains(Flags::ACK) => pkt.src_cid() == self.remote_cid,
            // The peer endpoint holds no state for us: believe it only for packets sent after
            // it had shown it held state.
            _ => pkt.src_cid() == self.remote_cid && seq_le(self.confirm_seq, pkt.ack()),
        };
        if ok {
            self.close_with(CloseReason::Reset);
        }
    }

    /// The acknowledgement fields of a packet from the peer: its window, echoed CE count and
    /// congestion notification, the acknowledged sequence number, and NACK ranges.
    fn on_ack_field(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let f = pkt.flags();
        let a = pkt.ack();
        self.send.set_peer_window(pkt.window());
        self.signals.on_ce_echo(pkt.ce_count(), &mut self.stats);
        if f.contains(Flags::CN) {
            self.stats.cnps_received += 1;
            self.signals.cc_mut().on_cnp(now);
            self.refresh_rate();
        }
        let (newly, writable) = self.send.on_ack(a, self.cfg.send_buffer);
        if newly > 0 {
            self.rto.on_progress();
            self.stats.acks_received += 1;
            if writable {
                self.events.push_back(Event::Writable);
            }
        }
        let repeat = self.rtt.repeat_window(&self.cfg);
        if f.contains(Flags::NACK) && !pkt.payload().is_empty() && self.selective() {
            self.stats.nacks_received += 1;
            let guard = self.rtt.resend_guard(&self.cfg);
            let payload = pkt.payload();
            if (self.send).on_selective_nack(now, a, payload, (repeat, guard), &mut self.stats) {
                self.signals.cc_mut().on_nack(now);
                self.refresh_rate();
            }
        } else if f.contains(Flags::NACK) {
            // A plain NACK (or ranges we never offered to act on): go-back-N.
            self.stats.nacks_received += 1;
            if self.send.on_plain_nack(now, a, repeat) {
                self.signals.cc_mut().on_nack(now);
                self.refresh_rate();
            }
        } else if newly > 0 && !f.contains(Flags::DATA) {
            self.on_ack_sample(now, pkt, newly);
        }
        self.arm_rto(now);
    }

    /// A pure ACK acknowledging `newly` bytes of new data: one STT sample, one RTT sample,
    /// handed to the controller with the echoed marks and the bytes in flight.
    fn on_ack_sample(&mut self, now: u64, pkt: &Packet<&[u8]>, newly: u32) {
        let stt = pkt.echo_stt();
        let mut rtt = u64::from(stt.wrapping_add(ts32(now).wrapping_sub(pkt.tx_ts())));
        self.echoed_stt = Some(stt);
        if rtt < 1 << 31 {
            self.rtt_sample(rtt);
            self.last_rtt = Some(rtt);
        } else {
            rtt = 0;
        }
        let sample = AckSample {
            stt,
            acked: newly,
            rtt,
            ce: self.signals.take_ce_echoed(),
            inflight: self.send.inflight(),
        };
        self.signals.cc_mut().on_ack(now, &sample);
        self.refresh_rate();
        if let Some(m) = self.signals.cc().mode_stats() {
            self.stats.cc_mode_switches = m.switches;
            self.stats.cc_competitive_ns = m.competitive_ns;
        }
        self.stats.stt_min = Some(match self.stats.stt_min {
            Some(m) if (stt.wrapping_sub(m) as i32) >= 0 => m,
            _ => stt,
        });
        let m = self.stats.stt_min.unwrap_or(stt);
        self.stats
            .queue_delay
            .record(u64::from(stt.wrapping_sub(m)));
    }

    /// One RTT sample, ns: the estimate and the retransmission timeout follow it.
    fn rtt_sample(&mut self, rtt: u64) {
        self.rtt.update(rtt);
        self.stats.srtt_ns = self.rtt.srtt();
        self.rto.set_timeout(self.rtt.rto(&self.cfg));
    }

    /// Bytes received after which an ACK is due (`RecvState::ack_due_bytes`).
    pub(super) fn ack_due_bytes(&self) -> u32 {
        self.recv.ack_due_bytes(&self.cfg)
    }

    /// DATA: delivered in order, acknowledged again when already held, kept beyond a gap
    /// (selective recovery) or dropped with a NACK for the gap.
    fn on_data(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let seq = pkt.seq();
        let payload = pkt.payload();
        let len = payload.len() as u32;
        let stt = ts32(now).wrapping_sub(pkt.tx_ts());
        self.used |= len > 0 || pkt.flags().contains(Flags::FIN);
        self.recv.on_data_flags(pkt.flags().contains(Flags::PSH));
        if seq == self.recv.nxt && !self.recv.peer_fin {
            if !self.recv.fits(payload, &self.cfg) {
                // No room: drop; the sender exceeded our window. The ACK repeats the window.
                self.stats.window_dropped += 1;
                self.ack.request();
                return;
            }
            let (was_empty, moved) = self.recv.deliver(payload);
            if was_empty {
                self.events.push_back(Event::Readable);
            }
            self.stats.bytes_received += u64::from(len) + u64::from(moved);
            self.ack.count(len.saturating_add(moved));
            self.ack.record_stt(stt);
            if self.recv.ooo.fin() == Some(self.recv.nxt) && self.recv.ooo.is_empty() {
                self.accept_fin();
            }
            if !self.recv.ooo.holds_any() {
                // The gap (if any) is filled.
                self.nack.on_filled();
            } else {
                self.nack.arm(now, self.cfg.nack_retry_ns);
            }
            self.after_data(now, pkt);
        } else if seq_lt(seq, self.recv.nxt) {
            // Bytes we already have (a go-back-N resend): acknowledge like new data so the
            // sender moves on, but without delivering them again.
            self.stats.duplicates += 1;
            self.ack.count(len);
            self.after_data(now, pkt);
        } else if self.selective() && !self.recv.peer_fin {
            self.keep_ooo(now, seq, payload);
        } else {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
        }
    }

    /// Selective recovery: keeps the new bytes of a packet beyond the gap (within the window
    /// and the segment limit) and sends a NACK at once when it opened a new hole (it lies
    /// beyond everything held), so the sender learns of every loss within one trip.
    fn keep_ooo(&mut self, now: u64, seq: u32, payload: &[u8]) {
        let nxt = self.recv.nxt;
        let start = seq.wrapping_sub(nxt) as usize;
        let end = start + payload.len();
        let held_end = self.recv.ooo.held_end(nxt);
        if end > self.recv.window_bytes(&self.cfg) as usize {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
            return;
        }
        // Insert the parts of [start, end) no held segment covers.
        let max_segments = self.cfg.ooo_max_segments;
        let (added, cut) = self.recv.ooo.insert(nxt, start, payload, max_segments);
        if added == 0 {
            if cut {
                // No room in the segment list: the packet is lost to us.
                self.stats.out_of_order_dropped += 1;
            } else {
                self.stats.duplicates += 1;
            }
            self.on_gap(now);
            return;
        }
        self.stats.out_of_order_kept += 1;
        self.nack.on_kept();
        let held = self.recv.ooo.bytes() as u64;
        self.stats.out_of_order_bytes_max = self.stats.out_of_order_bytes_max.max(held);
        if start > held_end {
            // A new hole [held_end, start): ask for it now.
            let (repeat, retry) = (self.cfg.nack_repeat_ns, self.cfg.nack_retry_ns);
            self.nack.on_new_hole(now, nxt, repeat, retry);
        } else {
            self.on_gap(now);
        }
    }

    /// A packet beyond the gap arrived that opened no new hole (`NackPolicy::on_gap`).
    fn on_gap(&mut self, now: u64) {
        self.nack.on_gap(now, self.recv.nxt, self.cfg.nack_retry_ns);
    }

    /// DATA was counted towards the next ACK: one is due after an ACK interval (or half the
    /// receive share) or at the sender's PSH, else the delayed ACK runs.
    fn after_data(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let push = pkt.flags().contains(Flags::PSH);
        let due = self.ack_due_bytes();
        self.ack.after_data(now, due, push, self.cfg.delayed_ack_ns);
    }

    /// A FIN without DATA: accepted in order, re-acknowledged when repeated, held beyond a
    /// gap (selective recovery) or dropped with a NACK for the gap.
    fn on_fin(&mut self, now: u64, pkt: &Packet<&[u8]>) {
        let seq = pkt.seq();
        if seq == self.recv.nxt && !self.recv.peer_fin {
            self.accept_fin();
        } else if seq_lt(seq, self.recv.nxt) {
            self.ack.request(); // a retransmitted FIN: our ACK was lost
        } else if self.selective()
            && !self.recv.peer_fin
            && seq.wrapping_sub(self.recv.nxt) <= self.recv.window_bytes(&self.cfg)
        {
            // Selective: a FIN beyond the gap is held like data (a selective sender resends
            // only named ranges, so it would resend the FIN only on a timeout, and a sending
            // application that exits once its data is confirmed may never do so).
            self.recv.ooo.hold_fin(seq);
            self.on_gap(now);
        } else {
            self.stats.out_of_order_dropped += 1;
            self.on_gap(now);
        }
    }

    /// The peer's stream ended: the FIN is acknowledged at once.
    fn accept_fin(&mut self) {
        self.recv.accept_fin();
        self.ack.request();
        self.ack.stop_delack();
        self.nack.cancel();
        self.events.push_back(Event::Readable);
    }

    /// Both streams ended and every FIN is acknowledged (ours by the peer, the peer's by an
    /// ACK that left): the connection lingers.
    pub(super) fn check_done(&mut self, now: u64) {
        if self.state == State::Established
            && self.send.fin_acked()
            && self.recv.peer_fin
            && !self.ack.is_due()
        {
            self.state = State::Linger;
            self.linger_until = now + self.cfg.linger_ns;
            // Everything we sent is acknowledged: give the send buffer's memory back now, not
            // at the end of the linger (thousands of lingering connections otherwise pin it).
            self.send.release();
            self.recv.shrink();
            self.rto.stop();
            self.ack.stop_delack();
            self.nack.stop();
        }
    }
}
