//! Handshake and admission: the stateless SYN-ACK with its cookie and start hints, the
//! verification of the cookie when the handshake's third packet (or a later packet of the first
//! window) arrives, the limits a new connection must pass, and the rate-limited RST for
//! packets nobody holds state for (spec §5, §8.6).

use super::{Endpoint, Entry};
use crate::conn::{offered_caps, Connection};
use crate::wire::{syn_ack_caps, Flags, Header, Packet};
use siphasher::sip::{SipHasher13, SipHasher24};
use std::hash::Hasher;
use std::net::{IpAddr, SocketAddr};

/// Cookie lifetime: a SYN-ACK's cookie verifies during its 2^32 ns slot and the next one.
pub(super) const COOKIE_SLOT_SHIFT: u32 = 32;

/// Flag bit of a start grant in the SYN-ACK's `ce_count` field (spec §8.6).
pub const GRANT_PRESENT: u16 = 0x8000;

/// Connection identifiers and initial sequence numbers: SipHash-2-4 (a PRF) of a counter under
/// a key derived from the endpoint's secret, so an observer of any number of them cannot
/// predict the next without the secret (a plain seeded generator gives its state away).
pub(super) struct IdGen {
    key: (u64, u64),
    counter: u64,
}

impl IdGen {
    pub(super) fn new(secret: (u64, u64), seed: u64) -> IdGen {
        let derive = |domain: u64| {
            let mut h = SipHasher24::new_with_keys(secret.0, secret.1);
            h.write(b"stride-ids");
            h.write_u64(domain);
            h.write_u64(seed);
            h.finish()
        };
        IdGen {
            key: (derive(1), derive(2)),
            counter: 0,
        }
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.counter += 1;
        let mut h = SipHasher24::new_with_keys(self.key.0, self.key.1);
        h.write_u64(self.counter);
        h.finish()
    }
}

impl Endpoint {
    /// Whether `remote`'s address holds `max_per_source` accepted connections.
    pub(super) fn source_full(&self, remote: SocketAddr) -> bool {
        self.per_source.get(&remote.ip()).copied().unwrap_or(0) >= self.cfg.max_per_source
    }

    /// Accepted connections currently held from `ip`.
    pub fn connections_from(&self, ip: IpAddr) -> usize {
        self.per_source.get(&ip).copied().unwrap_or(0)
    }

    /// The listener's (identifier, ISN) for a handshake: a keyed hash of the time slot, the
    /// peer and variant `k` (0..4), which is also the identifier's low two bits, so the listener
    /// can pick a variant whose identifier is free and still verify with one hash per slot.
    pub(super) fn cookie(
        &self,
        slot: u64,
        k: u32,
        remote: SocketAddr,
        peer_cid: u32,
        peer_iss: u32,
        caps: u32,
    ) -> (u32, u32) {
        let mut h = SipHasher13::new_with_keys(self.key.0, self.key.1);
        h.write_u64(slot);
        if k > 0 {
            h.write_u32(k);
        }
        match remote.ip() {
            IpAddr::V4(a) => h.write(&a.octets()),
            IpAddr::V6(a) => h.write(&a.octets()),
        }
        h.write_u16(remote.port());
        h.write_u32(peer_cid);
        h.write_u32(peer_iss);
        if caps > 0 {
            // The capabilities both sides offered ride in the cookie (the listener keeps no
            // state), hashed only when non-zero so a peer without any sees the same cookie.
            h.write_u32(caps);
        }
        let v = h.finish();
        let mut cid = (v as u32 & !3) | (k & 3);
        if cid == 0 {
            cid = 4;
        }
        (cid, (v >> 32) as u32)
    }

    /// Answers an unknown identifier's packet with an RST, within the token bucket of
    /// `rst_per_sec` (never an RST with an RST).
    pub(super) fn maybe_rst(&mut self, now: u64, remote: SocketAddr, p: &Packet<&[u8]>) {
        if p.flags().contains(Flags::RST) {
            return; // never answer a RST
        }
        // Token bucket: rst_per_sec tokens per second, burst of the same size.
        let rate = u64::from(self.cfg.rst_per_sec);
        let elapsed = now.saturating_sub(self.rst_last);
        let add = (u128::from(elapsed) * u128::from(rate) / 1_000_000_000) as u64;
        if add > 0 {
            self.rst_tokens = (self.rst_tokens + add).min(rate);
            self.rst_last = now;
        }
        if self.rst_tokens == 0 {
            self.stats.rsts_suppressed += 1;
            return;
        }
        self.rst_tokens -= 1;
        self.stats.rsts_sent += 1;
        let h = Header::new(Flags::RST, p.src_cid(), p.dst_cid(), 0, p.seq(), now as u32);
        self.push_ctrl(remote, h);
    }

    /// A SYN: refused with an RST when not listening, dropped when the connection table or
    /// the source's share of it is full, else answered statelessly with a SYN-ACK.
    pub(super) fn on_syn(&mut self, now: u64, remote: SocketAddr, p: &Packet<&[u8]>) {
        self.stats.syns += 1;
        if !self.listening {
            let h = Header::new(Flags::RST, p.src_cid(), 0, 0, p.seq(), now as u32);
            self.stats.rsts_sent += 1;
            self.push_ctrl(remote, h);
            return;
        }
        if self.conns.len() >= self.cfg.max_connections {
            self.stats.refused_full += 1;
            return;
        }
        if self.source_full(remote) {
            self.stats.refused_per_source += 1;
            return;
        }
        // Stateless: the identifier and initial sequence number we would use are a keyed
        // hash of the peer and the time slot; nothing is stored.
        // Of the four variants, the first whose identifier no connection holds: with many
        // connections a single derived identifier would sometimes collide with a live one.
        let slot = now >> COOKIE_SLOT_SHIFT;
        let ours = offered_caps(&self.cfg);
        let caps = p.echo_stt() & ours;
        let Some((cid, iss)) = (0..4)
            .map(|k| self.cookie(slot, k, remote, p.src_cid(), p.seq(), caps))
            .find(|(cid, _)| !self.conns.contains_key(cid))
        else {
            self.stats.refused_full += 1;
            return;
        };
        let mut h = Header::new(
            Flags::SYN | Flags::ACK,
            p.src_cid(),
            cid,
            iss,
            p.seq().wrapping_add(1),
            now as u32,
        );
        // Start hints (spec §8.6), ignored by a client without them: the SYN's STT (0 means
        // none, so a measured 0 is sent as 1) and the start grant, `line >> ceil(log2 n)`
        // for the n SYNs answered in this and the previous epoch, this one included.
        let stt = (now as u32).wrapping_sub(p.tx_ts());
        h.echo_stt = stt.max(1);
        let n = self.count_start(now);
        let shift = 32 - (n.max(1) - 1).leading_zeros();
        // The listener's capabilities (spec §5.1) ride in bits 8..14 beside the grant: the
        // SYN-ACK's echo_stt is taken by the SYN's STT.
        h.ce_count = GRANT_PRESENT | shift as u16 | syn_ack_caps(ours);
        // The first window is the receive share of the n concurrent starts and of the
        // peers already sending (spec §8.6 `rx_share`): the data of a burst of starts is
        // bounded before any ACK, and so is a start into a busy receiver (a start counted
        // only against the SYNs of the last two epochs was given a whole share while
        // hundreds of peers were sending: 200 staggered 1 MB senders overflowed a 32 MiB
        // socket by thousands of datagrams).
        let w = (self.cfg.recv_buffer as u32).min(self.share_for(n + self.rx_active));
        h.window = (w >> 10).min(0xffff) as u16;
        self.stats.syn_acks_sent += 1;
        self.push_ctrl(remote, h);
    }

    /// Counts a SYN answered at `now` in its 2^16 ns epoch; returns the SYNs answered in this
    /// and the previous epoch (the concurrent starts the grant divides the line among).
    fn count_start(&mut self, now: u64) -> u32 {
        let epoch = now >> 16;
        let (e, cur, prev) = self.syn_epoch;
        self.syn_epoch = match epoch.wrapping_sub(e) {
            0 => (e, cur + 1, prev),
            1 => (epoch, 1, cur),
            _ => (epoch, 1, 0),
        };
        self.syn_epoch.1 + self.syn_epoch.2
    }

    /// A packet for an unknown identifier that may complete a handshake: the third packet,
    /// or DATA or FIN of the first window. When its cookie verifies and the limits allow, the
    /// connection is created and handles the packet; a refusal or a bad cookie is answered
    /// with an RST.
    pub(super) fn on_handshake_ack(
        &mut self,
        now: u64,
        remote: SocketAddr,
        p: &Packet<&[u8]>,
        ce: bool,
    ) {
        let dst = p.dst_cid();
        match self.verify_cookie(now, remote, p) {
            Some(found) if !self.conns.contains_key(&dst) => {
                if self.conns.len() >= self.cfg.max_connections {
                    self.stats.refused_full += 1;
                    self.maybe_rst(now, remote, p);
                    return;
                }
                if self.source_full(remote) {
                    self.stats.refused_per_source += 1;
                    self.maybe_rst(now, remote, p);
                    return;
                }
                self.admit(now, remote, p, ce, found);
            }
            _ => {
                self.stats.bad_cookies += 1;
                self.maybe_rst(now, remote, p);
            }
        }
    }

    /// Checks the cookie of a packet that may complete a handshake; returns the peer's
    /// initial sequence number and the capabilities both sides offered when it verifies.
    fn verify_cookie(&self, now: u64, remote: SocketAddr, p: &Packet<&[u8]>) -> Option<(u32, u32)> {
        let f = p.flags();
        // The third packet carries ISNc + 1; DATA and FIN of a client that has not heard
        // from our connection yet carry their offset from ISNc + 1 in echo_stt (0 from a
        // peer without it, whose first DATA then verifies as before), spec §5.
        let offset = if f.contains(Flags::DATA) || f.contains(Flags::FIN) {
            p.echo_stt()
        } else {
            0
        };
        let peer_iss = p.seq().wrapping_sub(1).wrapping_sub(offset);
        let slot = now >> COOKIE_SLOT_SHIFT;
        // Which capabilities the SYN offered is known only through the cookie: try each
        // set we could have accepted (none, or all of ours).
        let ours = offered_caps(&self.cfg);
        let cap_sets: &[u32] = if ours == 0 { &[0] } else { &[0, ours] };
        let dst = p.dst_cid();
        let caps = [slot, slot.wrapping_sub(1)].into_iter().find_map(|s| {
            cap_sets.iter().copied().find(|&caps| {
                let (cid, iss) = self.cookie(s, dst & 3, remote, p.src_cid(), peer_iss, caps);
                cid == dst && iss.wrapping_add(1) == p.ack()
            })
        })?;
        Some((peer_iss, caps))
    }

    /// Creates the server connection of a verified handshake (`found`: the peer's initial
    /// sequence number and the capabilities both offered) and hands it the packet.
    fn admit(
        &mut self,
        now: u64,
        remote: SocketAddr,
        p: &Packet<&[u8]>,
        ce: bool,
        (peer_iss, caps): (u32, u32),
    ) {
        let dst = p.dst_cid();
        let iss = p.ack().wrapping_sub(1);
        let conn = Connection::server(
            self.cfg.clone(),
            now,
            dst,
            iss,
            p.src_cid(),
            peer_iss,
            p.window(),
        )
        .with_peer_caps(caps);
        self.conns.insert(
            dst,
            Entry {
                conn,
                remote,
                incoming: true,
                queued: false,
                timer_at: None,
                active: false,
            },
        );
        *self.per_source.entry(remote.ip()).or_insert(0) += 1;
        self.stats.accepted += 1;
        let e = self.conns.get_mut(&dst).expect("just inserted");
        e.conn.set_rx_share(self.rx_share);
        e.conn.handle_ecn(now, p, ce);
        self.touch(dst);
    }
}
