//! Round-trip time: the smoothed estimate from ACK samples (Jacobson/Karels, in shifts), and
//! the retransmission timer it sets, with its backoff and its count of unanswered timeouts.

use crate::config::Config;

/// Smoothed round-trip time and its variation, ns.
pub(super) struct RttEstimator {
    srtt: u64,
    rttvar: u64,
    /// Whether any sample was taken (before one, the timer runs on `initial_rto_ns`).
    have: bool,
}

impl RttEstimator {
    /// No sample yet.
    pub(super) fn new() -> RttEstimator {
        RttEstimator {
            srtt: 0,
            rttvar: 0,
            have: false,
        }
    }

    /// Takes one RTT sample, ns.
    pub(super) fn update(&mut self, rtt: u64) {
        // Jacobson/Karels with shifts: srtt += (rtt - srtt)/8, rttvar += (|err| - rttvar)/4.
        if !self.have {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.have = true;
        } else {
            let err = rtt.abs_diff(self.srtt);
            self.rttvar = self.rttvar - (self.rttvar >> 2) + (err >> 2);
            self.srtt = self.srtt - (self.srtt >> 3) + (rtt >> 3);
        }
    }

    /// The smoothed RTT (0 before the first sample).
    pub(super) fn srtt(&self) -> u64 {
        self.srtt
    }

    /// The retransmission timeout the estimate gives: `srtt + 4 rttvar` plus the peer's
    /// delayed ACK (`initial_rto_ns` before any sample), within `[min_rto_ns, max_rto_ns]`.
    pub(super) fn rto(&self, cfg: &Config) -> u64 {
        let base = if self.have {
            self.srtt + 4 * self.rttvar + cfg.delayed_ack_ns
        } else {
            cfg.initial_rto_ns
        };
        base.clamp(cfg.min_rto_ns, cfg.max_rto_ns)
    }

    /// How long after a loss signal a repeat of it is taken as the same loss (the controller
    /// reacts once per round trip): the smoothed RTT, at least the peer's delayed ACK.
    pub(super) fn repeat_window(&self, cfg: &Config) -> u64 {
        self.srtt.max(cfg.delayed_ack_ns)
    }

    /// How long a resend counts as in flight: a round trip plus its variation, at least the
    /// peer's delayed ACK.
    pub(super) fn resend_guard(&self, cfg: &Config) -> u64 {
        (self.srtt + 2 * self.rttvar).max(cfg.delayed_ack_ns)
    }
}

/// The SYN timer: `rto` spread over [7/8, 9/8) of it by a fraction taken from the
/// (unpredictable) ISN, different at every retry, so clients that started together do not
/// resend in lockstep; the mean is `rto`.
fn syn_timer(iss: u32, retries: u32, rto: u64) -> u64 {
    let frac = u64::from(iss.rotate_left(retries.wrapping_mul(7)));
    rto - (rto >> 3) + ((frac * (rto >> 2)) >> 32)
}

/// The retransmission timer: its current timeout (backed off on every expiry), its deadline,
/// and the run of consecutive expiries without progress.
pub(super) struct RtoTimer {
    rto_ns: u64,
    at: Option<u64>,
    retries: u32,
    /// When the current run of unanswered retransmission timeouts began (the first timer's
    /// arming time).
    stall_since: u64,
}

impl RtoTimer {
    /// A stopped timer whose timeout is `rto_ns`.
    pub(super) fn new(rto_ns: u64) -> RtoTimer {
        RtoTimer {
            rto_ns,
            at: None,
            retries: 0,
            stall_since: 0,
        }
    }

    /// The deadline, if armed.
    pub(super) fn at(&self) -> Option<u64> {
        self.at
    }

    /// Whether the timer is armed and due at `now`.
    pub(super) fn expired(&self, now: u64) -> bool {
        self.at.is_some_and(|t| now >= t)
    }

    /// Arms the timer one timeout from `now` unless it is armed already.
    pub(super) fn arm(&mut self, now: u64) {
        if self.at.is_none() {
            self.at = Some(now + self.rto_ns);
        }
    }

    /// Arms the SYN timer from `now` (see `syn_timer`): the timeout spread by the client's
    /// initial sequence number and the retry count.
    pub(super) fn arm_syn(&mut self, now: u64, iss: u32) {
        self.at = Some(now + syn_timer(iss, self.retries, self.rto_ns));
    }

    /// Stops the timer.
    pub(super) fn stop(&mut self) {
        self.at = None;
    }

    /// Sets the timeout (from the RTT estimate); the deadline is left as it is.
    pub(super) fn set_timeout(&mut self, rto_ns: u64) {
        self.rto_ns = rto_ns;
    }

    /// The peer answered: the run of timeouts ends and the timer stops.
    pub(super) fn on_progress(&mut self) {
        self.retries = 0;
        self.at = None;
    }

    /// The handshake completed: no timeouts, the timer stopped, the timeout back at `rto_ns`.
    pub(super) fn reset(&mut self, rto_ns: u64) {
        self.on_progress();
        self.rto_ns = rto_ns;
    }

    /// The timer expired at `now` with data outstanding: counts the timeout (the run's first
    /// started one timeout before `now`) and returns how many ran in a row.
    pub(super) fn on_expiry(&mut self, now: u64) -> u32 {
        self.retries += 1;
        if self.retries == 1 {
            self.stall_since = now.saturating_sub(self.rto_ns);
        }
        self.retries
    }

    /// How long the current run of timeouts has lasted at `now`.
    pub(super) fn stalled_for(&self, now: u64) -> u64 {
        now.saturating_sub(self.stall_since)
    }

    /// Doubles the timeout (at most `max_ns`) and arms the timer with it from `now`.
    pub(super) fn back_off(&mut self, now: u64, max_ns: u64) {
        self.rto_ns = (self.rto_ns * 2).min(max_ns);
        self.at = Some(now + self.rto_ns);
    }
}
