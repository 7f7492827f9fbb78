//! TCP NewReno (RFC 6582 recovery, RFC 5681 window growth): slow start, then one segment per
//! window of ACKed data. Loss recovery itself lives in the shared sender (`super`).

use super::{Ack, Congestion, Window};

/// NewReno has no state beyond the window.
#[derive(Clone, Copy, Debug, Default)]
pub struct NewReno;

impl Congestion for NewReno {
    fn on_ack(&mut self, w: &mut Window, a: &Ack) {
        if a.grow {
            w.reno_grow(a.newly);
        }
    }
}

/// Registry entry.
pub const TRANSPORT: crate::transport::Transport = crate::transport::Transport {
    name: "newreno",
    about: "TCP NewReno (RFC 5681 growth, RFC 6582 recovery)",
    build: crate::transport::Build::Fn(|sc, n| super::hosts(sc, n, NewReno)),
};
