//! When the receiver answers: an ACK per ACK interval of bytes (or at once for PSH), a delayed
//! ACK otherwise, ACKs held for or riding on DATA (spec §6.4), and the STT each ACK echoes;
//! a NACK per gap, repeated by timer while holes remain (spec §6.3, §6.5).

use crate::config::EchoPolicy;

/// The ACK side of the receiver's feedback.
pub(super) struct AckPolicy {
    /// An ACK is due: it leaves at the next transmit (unless held, see [`AckPolicy::hold`]).
    due: bool,
    /// Bytes received since the last ACK.
    unacked: u32,
    /// The delayed-ACK timer.
    delack_at: Option<u64>,
    /// The STT of the latest in-order DATA, and the least since the last ACK.
    stt_last: u32,
    stt_seg_min: Option<u32>,
    /// When the last pure ACK left (an ACK may ride on DATA only shortly after one).
    last_pure_at: Option<u64>,
    /// A pure ACK waits until then for DATA to ride on ([`AckPolicy::hold`]; 0: none).
    hold_until: u64,
    /// The timer of a held ACK (at or after `hold_until`).
    hold_wake: u64,
}

impl AckPolicy {
    /// Nothing received, nothing due.
    pub(super) fn new() -> AckPolicy {
        AckPolicy {
            due: false,
            unacked: 0,
            delack_at: None,
            stt_last: 0,
            stt_seg_min: None,
            last_pure_at: None,
            hold_until: 0,
            hold_wake: 0,
        }
    }

    /// Makes an ACK due now.
    pub(super) fn request(&mut self) {
        self.due = true;
    }

    /// Whether an ACK is due (held or not).
    pub(super) fn is_due(&self) -> bool {
        self.due
    }

    /// Whether an ACK is due and may leave at `now` (it is not held past `now`).
    pub(super) fn due_at(&self, now: u64) -> bool {
        self.due && now >= self.hold_until
    }

    /// Takes the due ACK, if any, as a bare acknowledgement (the lingering connection's
    /// re-acknowledgement of a FIN).
    pub(super) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// Holds the due ACK until `until`, its timer at `wake_by` (at least `until`).
    pub(super) fn hold(&mut self, until: u64, wake_by: u64) {
        self.hold_until = until;
        self.hold_wake = wake_by.max(until);
    }

    /// The ACK deadlines: the delayed ACK's and a held ACK's timer.
    pub(super) fn timers(&self) -> [Option<u64>; 2] {
        let held = (self.due && self.hold_until > 0).then_some(self.hold_wake);
        [self.delack_at, held]
    }

    /// Runs the delayed-ACK timer at `now`: once it expired, an ACK is due.
    pub(super) fn on_timer(&mut self, now: u64) {
        if self.delack_at.is_some_and(|t| now >= t) {
            self.delack_at = None;
            self.due = true;
        }
    }

    /// Stops the delayed-ACK timer.
    pub(super) fn stop_delack(&mut self) {
        self.delack_at = None;
    }

    /// Counts `bytes` received (delivered or duplicate) towards the next ACK.
    pub(super) fn count(&mut self, bytes: u32) {
        self.unacked = self.unacked.saturating_add(bytes);
    }

    /// Notes the STT of in-order DATA.
    pub(super) fn record_stt(&mut self, stt: u32) {
        self.stt_last = stt;
        self.stt_seg_min = Some(match self.stt_seg_min {
            Some(m) if (stt.wrapping_sub(m) as i32) >= 0 => m,
            _ => stt,
        });
    }

    /// The STT of the latest in-order DATA (a NACK echoes it).
    pub(super) fn stt_last(&self) -> u32 {
        self.stt_last
    }

    /// After DATA arrived at `now`: an ACK is due once `due_bytes` are unacknowledged or the
    /// sender pushed (`push`), else the delayed ACK runs (`delayed_ack_ns`, if not running).
    pub(super) fn after_data(&mut self, now: u64, due_bytes: u32, push: bool, delayed_ack_ns: u64) {
        if self.unacked >= due_bytes || push {
            self.due = true;
        } else if self.delack_at.is_none() {
            self.delack_at = Some(now + delayed_ack_ns);
        }
    }

    /// Whether fewer than `due_bytes` are unacknowledged (an ACK of less may ride on DATA).
    pub(super) fn below(&self, due_bytes: u32) -> bool {
        self.unacked < due_bytes
    }

    /// Whether a pure ACK left within `ride_ns` before `now` (0: ACKs never ride).
    pub(super) fn pure_within(&self, now: u64, ride_ns: u64) -> bool {
        ride_ns > 0
            && self
                .last_pure_at
                .is_some_and(|t| now < t.saturating_add(ride_ns))
    }

    /// The DATA leaving now carries the due ACK.
    pub(super) fn on_ride(&mut self) {
        self.due = false;
        self.delack_at = None;
        self.unacked = 0;
        self.stt_seg_min = None;
        self.hold_until = 0;
    }

    /// A pure ACK leaves at `now`; returns the STT it echoes under `echo`.
    pub(super) fn on_pure(&mut self, now: u64, echo: EchoPolicy) -> u32 {
        self.due = false;
        self.hold_until = 0;
        self.delack_at = None;
        self.unacked = 0;
        self.last_pure_at = Some(now);
        let stt = match echo {
            EchoPolicy::Last => self.stt_last,
            EchoPolicy::Min => self.stt_seg_min.unwrap_or(self.stt_last),
        };
        self.stt_seg_min = None;
        stt
    }
}

/// The NACK side: one NACK per gap, repeated by timer.
pub(super) struct NackPolicy {
    /// A NACK is due (it leaves at the next transmit).
    due: bool,
    /// The `rcv_nxt` the latest NACK was for.
    seq: u32,
    /// The NACK timer.
    at: Option<u64>,
    /// Packets beyond the same gap arrived since the last NACK.
    since: bool,
    /// Selective: segments were kept beyond the holes since the last timer expiry.
    arrived: bool,
}

impl NackPolicy {
    /// No gap.
    pub(super) fn new() -> NackPolicy {
        NackPolicy {
            due: false,
            seq: 0,
            at: None,
            since: false,
            arrived: false,
        }
    }

    /// Whether a NACK is due.
    pub(super) fn is_due(&self) -> bool {
        self.due
    }

    /// Takes the due NACK, if any.
    pub(super) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// The timer, if armed.
    pub(super) fn timer(&self) -> Option<u64> {
        self.at
    }

    /// Stops the timer.
    pub(super) fn stop(&mut self) {
        self.at = None;
    }

    /// Nothing is missing any more (the gap filled, or the stream ended): no NACK is due and
    /// the timer stops.
    pub(super) fn cancel(&mut self) {
        self.at = None;
        self.due = false;
    }

    /// Every gap is filled: as [`NackPolicy::cancel`], and arrivals beyond it are forgotten.
    pub(super) fn on_filled(&mut self) {
        self.cancel();
        self.since = false;
    }

    /// Arms the timer `retry_ns` from `now` unless it is armed.
    pub(super) fn arm(&mut self, now: u64, retry_ns: u64) {
        if self.at.is_none() {
            self.at = Some(now + retry_ns);
        }
    }

    /// A packet beyond the gap at `rcv_nxt` arrived at `now` and opened no new hole: one
    /// NACK per gap, then the timer repeats it if packets keep arriving beyond it.
    pub(super) fn on_gap(&mut self, now: u64, rcv_nxt: u32, retry_ns: u64) {
        if self.seq != rcv_nxt || (self.at.is_none() && !self.due && !self.since) {
            // One NACK per gap.
            self.seq = rcv_nxt;
            self.due = true;
            self.since = false;
            self.at = Some(now + retry_ns);
        } else {
            self.since = true;
            self.arm(now, retry_ns);
        }
    }

    /// Selective: a segment was kept beyond the holes.
    pub(super) fn on_kept(&mut self) {
        self.arrived = true;
    }

    /// Selective: a kept segment opened a new hole (it lies beyond everything held): a NACK
    /// is due at once, its repeat after `repeat_ns` (at most `retry_ns`) if none is armed.
    pub(super) fn on_new_hole(&mut self, now: u64, rcv_nxt: u32, repeat_ns: u64, retry_ns: u64) {
        self.seq = rcv_nxt;
        self.due = true;
        self.since = false;
        self.arrived = false;
        self.arm(now, repeat_ns.min(retry_ns));
    }

    /// Runs the timer at `now`. `holds` tells whether segments (or a FIN) are held beyond the
    /// holes (selective): then the missing ranges are repeated while any remain (a resend may
    /// have been lost too, and at the tail no later arrival would ask again; the sender
    /// resends a range at most once per round trip), soon (`repeat_ns`) while segments keep
    /// arriving beyond the holes, slowly (`retry_ns`) at a tail. Otherwise the NACK is
    /// repeated only if packets beyond the same gap at `rcv_nxt` arrived since.
    pub(super) fn on_timer(
        &mut self,
        now: u64,
        holds: bool,
        rcv_nxt: u32,
        repeat_ns: u64,
        retry_ns: u64,
    ) {
        if self.at.is_none_or(|t| now < t) {
            return;
        }
        self.at = None;
        if holds {
            self.due = true;
            let wait = if std::mem::take(&mut self.arrived) {
                repeat_ns
            } else {
                retry_ns
            };
            self.at = Some(now + wait);
        } else if rcv_nxt == self.seq && self.since {
            self.due = true;
        }
    }
}
