//! Sending from application threads: after a call that changed the core, the calling thread
//! sends what may leave now and wakes the driver only when it must act before its own timeout
//! ([`settle`]).

use super::shared::{Shared, State};
use super::{ACK_HOLD_NS, DIRECT_MAX_DATAGRAMS, HOLD_LATE_NS, HOLD_MAX_CONNECTIONS};
use crate::sys;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::MutexGuard;

/// After an application call changed the core: sends what may leave now from the calling
/// thread ([`send_direct`], only while the driver holds nothing unsent), then wakes the driver
/// only when it must act before its own timeout: datagrams are left to send, or the core's
/// earliest deadline (an RTO, a pacing slot, a delayed ACK) is earlier. The core's ready queue
/// counts every touched connection, so walking it here (cheap when nothing is due) is also what
/// tells "nothing to send" from "something to send".
///
/// `mode`: [`Tx::Now`] sends (and ends a hold), [`Tx::Keep`] sends unless a hold is on,
/// [`Tx::Hold`] holds the due ACKs for [`ACK_HOLD_NS`] (the whole endpoint's transmissions
/// when one connection is open; the driver then sends at its end).
pub(super) fn settle(shared: &Shared, mut st: MutexGuard<'_, State>, mode: Tx) {
    // The clock is read only when something needs it (a hold to check or start, a datagram
    // to send): a read after which nothing is due reads none.
    let mut clock = None;
    let mut now = || *clock.get_or_insert_with(sys::now_ns);
    match mode {
        Tx::Now => st.hold_until = None,
        Tx::Keep => {
            if st.hold_until.is_some_and(|t| now() >= t) {
                st.hold_until = None;
            }
        }
        Tx::Hold => {
            // On an endpoint with this one open connection the driver holds every
            // transmission (no other connection's data can wait behind it, and the hold's
            // end need not wake a sleeping driver, see HOLD_LATE_NS). Connections lingering
            // after a close have no data (a re-acknowledged FIN may wait the hold's 50 µs),
            // so they do not count; the walk that tells them apart is bounded by
            // HOLD_MAX_CONNECTIONS. With other connections open, the core holds the due
            // pure ACKs alone (of every connection the batch brought a request for: the
            // reader receives for the whole socket), not their DATA. Their timers are
            // HOLD_LATE_NS past the hold's end, as the endpoint-wide hold's: a deadline at the
            // hold's end woke the sleeping driver for nearly every exchange (1.4 eventfd
            // writes per exchange, round trips twice as long, on a server that also held a
            // connection whose client had left without closing).
            // Either way only when the core holds an ACK: one it may not hold (after the
            // peer's FIN, a NACK, a CNP) leaves now, and so does everything with it.
            if st.hold_until.is_none() && st.ep.has_pending_transmit() {
                let end = now() + ACK_HOLD_NS;
                if st.ep.hold_acks(end, end + HOLD_LATE_NS) > 0
                    && st.ep.connection_count() <= HOLD_MAX_CONNECTIONS
                    && st.ep.open_connection_count() == 1
                {
                    st.hold_until = Some(end);
                }
            }
        }
    }
    if let Some(t) = st.hold_until {
        st.dispatch();
        // The hold's end wakes the driver only when it would otherwise sleep more than
        // HOLD_LATE_NS past it; the core's own timers still wake it on time.
        let late = t.saturating_add(HOLD_LATE_NS);
        let deadline = st.ep.next_timer().map_or(late, |d| d.min(late));
        drop(st);
        shared.wake_for(false, Some(deadline));
        return;
    }
    if st.ep.has_pending_transmit() && !st.tx_inflight {
        send_direct(&mut st, shared.sock_fd, now());
    }
    st.dispatch();
    let pending = st.ep.has_pending_transmit() || st.tx_inflight;
    let deadline = st.ep.poll_timeout();
    drop(st);
    shared.wake_for(pending, deadline);
}

/// What [`settle`] does with the core's datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tx {
    Now,
    Keep,
    /// Hold the ACKs of the requests just received for their responses.
    Hold,
}

/// Sends, from the calling application thread, the few datagrams the core lets leave now, so a
/// small write does not wait for the driver thread to wake (one thread wake-up less on a
/// request/response path). Only while the driver holds no unsent datagrams, so nothing is
/// reordered; a datagram the kernel refuses (buffer full) goes to `spill` for the driver.
fn send_direct(st: &mut State, fd: RawFd, now: u64) {
    let State {
        ep,
        direct_bufs,
        room,
        io,
        spill,
        tx_inflight,
        ..
    } = st;
    let room = *room;
    let mut took: [Option<(SocketAddr, usize)>; DIRECT_MAX_DATAGRAMS] =
        [None; DIRECT_MAX_DATAGRAMS];
    let mut n = 0;
    // One clock read for the call (the caller's): its datagrams leave in one system call (as
    // the driver's batches do).
    for (b, t) in direct_bufs.chunks_exact_mut(room).zip(took.iter_mut()) {
        let Some(x) = ep.poll_transmit(now, b) else {
            break;
        };
        *t = Some((x.remote, x.len));
        n += 1;
    }
    if n == 0 {
        return;
    }
    // One call for all of them, so a peer woken by the first finds the rest (an ACK and the
    // response that follows it) already queued.
    let mut msgs: [(SocketAddr, &[u8]); DIRECT_MAX_DATAGRAMS] =
        [(SocketAddr::from(([0, 0, 0, 0], 0)), &[]); DIRECT_MAX_DATAGRAMS];
    for i in 0..n {
        let (to, len) = took[i].expect("taken");
        msgs[i] = (to, &direct_bufs[i * room..i * room + len]);
    }
    let sent = match sys::send_many(fd, &msgs[..n]) {
        Ok(k) => {
            io.tx_calls += 1;
            io.datagrams_out += k as u64;
            io.direct_sends += k as u64;
            io.direct_calls += 1;
            k
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::WouldBlock
                || e.kind() == std::io::ErrorKind::Interrupted =>
        {
            0
        }
        Err(e) => {
            // Dropped like any datagram the network loses; the core repairs it.
            io.send_errors += n as u64;
            if sys::too_big(&e) {
                // The route's MTU went down: what is resent must fit it.
                io.too_big += 1;
                super::refit_payloads(ep);
            }
            n
        }
    };
    if sent < n {
        // The socket buffer is full: the driver sends the rest first.
        for (to, d) in &msgs[sent..n] {
            spill.push((*to, d.to_vec()));
        }
        *tx_inflight = true;
    }
}
