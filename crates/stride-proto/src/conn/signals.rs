//! The rate controller and the congestion signals it is given: ECN marks counted on received
//! DATA and echoed to the peer in every ACK, congestion notifications (CNP) sent at most once
//! per `cnp_interval_ns`, and the peer's echoed CE count turned into marks for the controller.

use super::pacer::Pacer;
use crate::cc::Controller;
use crate::config::Config;
use crate::stats::ConnStats;

/// The controller and the ECN state around it.
pub(super) struct CongestionState {
    cc: Box<dyn Controller>,
    /// The controller's window cap, read after every controller event ([`CongestionState::refresh`]):
    /// the window is consulted several times per packet, the controller is a virtual call.
    window: Option<u32>,
    /// CE-marked DATA packets received, mod 2^16 (echoed in every ACK).
    ce_received: u16,
    /// A congestion notification is due (sent as the next ACK, with CN).
    cn_due: bool,
    /// No congestion notification before this time.
    cn_next: u64,
    /// The last `ce_count` the peer echoed, and marks echoed but not yet given to the controller.
    ce_echo_last: u16,
    ce_pending: u32,
}

impl CongestionState {
    /// The configured controller, started at `now`.
    pub(super) fn new(cfg: &Config, now: u64) -> CongestionState {
        let cc = cfg.cc.build(now);
        CongestionState {
            window: cc.window(),
            cc,
            ce_received: 0,
            cn_due: false,
            cn_next: 0,
            ce_echo_last: 0,
            ce_pending: 0,
        }
    }

    /// The controller, to read.
    pub(super) fn cc(&self) -> &dyn Controller {
        &*self.cc
    }

    /// The controller, to hand it an event; [`CongestionState::refresh`] must follow.
    pub(super) fn cc_mut(&mut self) -> &mut dyn Controller {
        &mut *self.cc
    }

    /// Reads the controller's window and rate after one of its events; the pacer takes the
    /// rate.
    pub(super) fn refresh(&mut self, pacer: &mut Pacer, cfg: &Config) {
        self.window = self.cc.window();
        pacer.set_rate(self.cc.rate(), cfg);
    }

    /// The controller's window cap (as of the latest [`CongestionState::refresh`]).
    pub(super) fn window(&self) -> Option<u32> {
        debug_assert_eq!(
            self.window,
            self.cc.window(),
            "window read before refresh_rate"
        );
        self.window
    }

    /// A DATA packet arrived CE-marked at `now`: counted, and a congestion notification is
    /// due if none was sent within `cnp_interval_ns` (0: none are sent). Returns whether one
    /// became due (it leaves as the next ACK).
    pub(super) fn on_ce(&mut self, now: u64, cnp_interval_ns: u64, stats: &mut ConnStats) -> bool {
        self.ce_received = self.ce_received.wrapping_add(1);
        stats.ce_received += 1;
        if cnp_interval_ns > 0 && now >= self.cn_next {
            self.cn_due = true;
            self.cn_next = now + cnp_interval_ns;
            return true;
        }
        false
    }

    /// The CE count to echo in an ACK.
    pub(super) fn ce_received(&self) -> u16 {
        self.ce_received
    }

    /// Whether a congestion notification is due.
    pub(super) fn cn_due(&self) -> bool {
        self.cn_due
    }

    /// Takes the due congestion notification, if any (the ACK leaving now carries it).
    pub(super) fn take_cn(&mut self) -> bool {
        std::mem::take(&mut self.cn_due)
    }

    /// The peer echoed CE count `count`: the marks it adds are kept for the controller's
    /// next ACK sample.
    pub(super) fn on_ce_echo(&mut self, count: u16, stats: &mut ConnStats) {
        // The echoed CE count only grows; a smaller one is a reordered older packet.
        let delta = count.wrapping_sub(self.ce_echo_last) as i16;
        if delta > 0 {
            self.ce_echo_last = count;
            self.ce_pending += delta as u32;
            stats.ce_echoed += delta as u64;
        }
    }

    /// Takes the echoed marks not yet given to the controller.
    pub(super) fn take_ce_echoed(&mut self) -> u32 {
        std::mem::take(&mut self.ce_pending)
    }
}
