//! The receiver's stream state: the next expected sequence number, the buffer of delivered
//! bytes, the segments held beyond a gap, the peer's FIN, and the window it advertises within
//! the endpoint's receive share (spec §8.6).

use super::assembler::Assembler;
use super::IDLE_BUFFER;
use crate::buf::{sub_bytes, RecvBuf};
use crate::config::Config;
use bytes::Bytes;

/// What a connection has received.
pub(super) struct RecvState {
    /// The next in-order sequence number expected (`rcv_nxt`).
    pub(super) nxt: u32,
    /// Delivered bytes, waiting for the application.
    buf: RecvBuf,
    /// The received datagram being handled, when the caller handed it over as [`Bytes`]
    /// (`Connection::set_rx_source`): in-order payloads are kept as slices of it, not copied.
    src: Option<Bytes>,
    /// Selective recovery: what is held beyond a gap.
    pub(super) ooo: Assembler,
    /// The peer's FIN was received in order: its stream is complete.
    pub(super) peer_fin: bool,
    /// The endpoint's receive share for this connection (spec §8.6 `rx_share`; `u32::MAX`:
    /// none): the advertised window is at most this, and an ACK is due every half of it.
    share: u32,
    /// The peer is sending: DATA arrived and its last DATA did not empty its queue (no PSH).
    active: bool,
    /// The window of the latest packet sent.
    last_adv_window: u32,
}

impl RecvState {
    /// Nothing received; `nxt` is set when the peer's initial sequence number is known.
    pub(super) fn new() -> RecvState {
        RecvState {
            nxt: 0,
            buf: RecvBuf::new(),
            src: None,
            ooo: Assembler::new(),
            peer_fin: false,
            share: u32::MAX,
            active: false,
            last_adv_window: 0,
        }
    }

    /// The delivered bytes.
    pub(super) fn buf(&self) -> &RecvBuf {
        &self.buf
    }

    /// The delivered bytes, for the application to take.
    pub(super) fn buf_mut(&mut self) -> &mut RecvBuf {
        &mut self.buf
    }

    /// Hands over (Some) or forgets (None) the datagram being handled.
    pub(super) fn set_source(&mut self, src: Option<Bytes>) {
        self.src = src;
    }

    /// After the application read `n` bytes: an emptied large buffer is freed, and returns
    /// whether the window opened enough to announce it. A window update is due when the window
    /// last advertised was too small for a packet and reading has reopened at least one ACK
    /// interval (not when the receive share, rather than the buffer, made it small).
    pub(super) fn after_read(&mut self, n: usize, cfg: &Config) -> bool {
        if self.buf.is_empty() && self.buf.capacity() > IDLE_BUFFER {
            // Idle connections keep a small record, not the high-water mark of their buffer.
            self.buf = RecvBuf::new();
        }
        n > 0
            && self.last_adv_window < u32::from(cfg.max_payload)
            && self.last_adv_window < self.share
            && self.window_bytes(cfg) >= cfg.ack_interval.min(cfg.recv_buffer as u32 / 2)
    }

    /// The free receive buffer.
    pub(super) fn window_bytes(&self, cfg: &Config) -> u32 {
        cfg.recv_buffer.saturating_sub(self.buf.len()) as u32
    }

    /// The window to advertise: the free buffer, at most the receive share (spec §8.6).
    pub(super) fn advertised_window(&self, cfg: &Config) -> u32 {
        self.window_bytes(cfg).min(self.share)
    }

    /// Notes the window (bytes) a packet leaving now advertises.
    pub(super) fn advertised(&mut self, window: u32) {
        self.last_adv_window = window;
    }

    /// Bytes received after which an ACK is due: `ack_interval`, or half the receive share
    /// when that is smaller (the sender would otherwise stall on the window until the
    /// delayed ACK).
    pub(super) fn ack_due_bytes(&self, cfg: &Config) -> u32 {
        cfg.ack_interval.min((self.share >> 1).max(1))
    }

    /// Sets the receive share (`u32::MAX` for none).
    pub(super) fn set_share(&mut self, bytes: u32) {
        self.share = bytes;
    }

    /// Whether the peer's last DATA left more queued behind it.
    pub(super) fn active(&self) -> bool {
        self.active
    }

    /// DATA arrived; `push` tells whether it emptied the peer's queue (PSH).
    pub(super) fn on_data_flags(&mut self, push: bool) {
        self.active = !push;
    }

    /// Whether the in-order `payload` fits in the receive buffer.
    pub(super) fn fits(&self, payload: &[u8], cfg: &Config) -> bool {
        payload.len() <= cfg.recv_buffer - self.buf.len()
    }

    /// Delivers the in-order `payload` (a slice of the handed-over datagram when there is
    /// one, else a copy) and the held segments it reaches. Returns whether the buffer was
    /// empty before, and the held bytes that followed.
    pub(super) fn deliver(&mut self, payload: &[u8]) -> (bool, u32) {
        let was_empty = self.buf.is_empty();
        match self.src.as_ref().and_then(|src| sub_bytes(src, payload)) {
            Some(b) => self.buf.push(b),
            None => self.buf.extend_from_slice(payload),
        }
        self.nxt = self.nxt.wrapping_add(payload.len() as u32);
        // Segments kept beyond the gap this packet closed follow it.
        let moved = if self.ooo.is_empty() {
            0
        } else {
            self.ooo.drain(&mut self.nxt, &mut self.buf)
        };
        (was_empty, moved)
    }

    /// Accepts the peer's FIN, which is at `nxt`.
    pub(super) fn accept_fin(&mut self) {
        self.peer_fin = true;
        self.ooo.clear_fin();
        self.nxt = self.nxt.wrapping_add(1);
    }

    /// The connection lingers: the buffer is shrunk to what is unread and nothing more is
    /// held beyond a gap.
    pub(super) fn shrink(&mut self) {
        self.buf.shrink_to_fit();
        self.ooo.release();
    }
}
