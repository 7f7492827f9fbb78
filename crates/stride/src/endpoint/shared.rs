//! What the driver thread and the application handles share: the protocol core and the
//! per-connection wakers under one lock ([`State`]), and the flags and eventfd by which
//! application calls wake the driver ([`Shared`]).

use super::{IoStats, SocketInfo};
use crate::sys::{self, RxBatch};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;
use stride_proto::{CloseReason, ConnHandle, ConnStats, Event};

#[derive(Default)]
pub(super) struct Slot {
    pub(super) read: Option<Waker>,
    pub(super) write: Option<Waker>,
    pub(super) connect: Option<Waker>,
    pub(super) connected: bool,
    pub(super) closed: Option<CloseReason>,
    pub(super) detached: bool,
    pub(super) shutdown_wait: bool,
    pub(super) last_stats: Option<Box<ConnStats>>,
}

pub(super) struct State {
    pub(super) ep: stride_proto::Endpoint,
    pub(super) slots: stride_proto::CidMap<ConnHandle, Slot>,
    pub(super) accept_q: VecDeque<ConnHandle>,
    pub(super) accept_wakers: Vec<Waker>,
    pub(super) shutdown_waiters: Vec<ConnHandle>,
    pub(super) io: IoStats,
    pub(super) driver_gone: bool,
    /// The driver holds datagrams taken from the core that are not in the kernel yet (or
    /// `spill` holds some): an application thread must not send around them.
    pub(super) tx_inflight: bool,
    /// Datagrams an application thread took from the core but could not send (socket buffer
    /// full); the driver sends them first.
    pub(super) spill: Vec<(SocketAddr, Vec<u8>)>,
    /// Transmissions are held back until this time ([`ACK_HOLD_NS`](super::ACK_HOLD_NS)).
    pub(super) hold_until: Option<u64>,
    /// The datagram buffers of [`super::direct`]'s sends
    /// ([`DIRECT_MAX_DATAGRAMS`](super::DIRECT_MAX_DATAGRAMS) of `room` bytes), kept so that a
    /// call does not clear them first.
    pub(super) direct_bufs: Box<[u8]>,
    /// Bytes of room per datagram buffer ([`sys::datagram_room`] of the configured payload).
    pub(super) room: usize,
}

impl State {
    /// Moves the core's events into the slots and wakes whoever waits for them.
    pub(super) fn dispatch(&mut self) {
        while let Some((h, ev)) = self.ep.poll_event() {
            match ev {
                Event::Accepted => {
                    self.slots.insert(
                        h,
                        Slot {
                            connected: true,
                            ..Slot::default()
                        },
                    );
                    self.accept_q.push_back(h);
                    for w in self.accept_wakers.drain(..) {
                        w.wake();
                    }
                }
                Event::Connected => {
                    if let Some(s) = self.slots.get_mut(&h) {
                        s.connected = true;
                        if let Some(w) = s.connect.take() {
                            w.wake();
                        }
                    }
                }
                Event::Readable => {
                    let detached = self.slots.get(&h).is_some_and(|s| s.detached);
                    if detached {
                        let mut sink = [0u8; 4096];
                        while matches!(self.ep.read(h, &mut sink), Ok(n) if n > 0) {}
                    } else if let Some(w) = self.slots.get_mut(&h).and_then(|s| s.read.take()) {
                        w.wake();
                    }
                }
                Event::Writable => {
                    if let Some(w) = self.slots.get_mut(&h).and_then(|s| s.write.take()) {
                        w.wake();
                    }
                }
                Event::Closed(r) => {
                    let stats = self.ep.conn(h).map(|c| Box::new(c.stats().clone()));
                    let remove = match self.slots.get_mut(&h) {
                        Some(s) => {
                            s.closed = Some(r);
                            if stats.is_some() {
                                s.last_stats = stats;
                            }
                            for w in [s.read.take(), s.write.take(), s.connect.take()]
                                .into_iter()
                                .flatten()
                            {
                                w.wake();
                            }
                            s.detached
                        }
                        None => false,
                    };
                    if remove {
                        self.slots.remove(&h);
                    }
                }
            }
        }
    }

    pub(super) fn check_shutdowns(&mut self) {
        if self.shutdown_waiters.is_empty() {
            return;
        }
        let mut i = 0;
        while i < self.shutdown_waiters.len() {
            let h = self.shutdown_waiters[i];
            let done = self
                .ep
                .conn(h)
                .is_none_or(|c| c.unacked() == 0 || c.is_closed());
            if done {
                self.shutdown_waiters.swap_remove(i);
                if let Some(s) = self.slots.get_mut(&h) {
                    s.shutdown_wait = false;
                    if let Some(w) = s.write.take() {
                        w.wake();
                    }
                }
            } else {
                i += 1;
            }
        }
    }
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    /// eventfd the driver sleeps on next to the socket.
    pub(super) efd: RawFd,
    /// The socket (owned by the driver thread, which outlives every handle).
    pub(super) sock_fd: RawFd,
    pub(super) info: SocketInfo,
    /// Set by [`Shared::wake`]: something changed that the driver has not looked at yet.
    pub(super) notified: AtomicBool,
    /// The driver is in (or about to enter) `ppoll`: only then does a wake-up cost an eventfd
    /// write. A driver that is running looks at `notified` before it sleeps.
    pub(super) sleeping: AtomicBool,
    /// When a sleeping driver wakes by itself (ns, [`sys::now_ns`] clock; written before
    /// `sleeping` is set): a change whose deadline is no earlier needs no eventfd write.
    pub(super) sleep_until: AtomicU64,
    /// Eventfd writes (reported as [`IoStats::driver_kicks`]).
    pub(super) kicks: AtomicU64,
    /// The driver's sleeps (reported as [`IoStats::driver_sleeps`]).
    pub(super) sleeps: AtomicU64,
    /// The receive buffers, shared by the driver and readers that receive inline; whoever
    /// holds them receives (so datagrams are handled in the order the socket gave them).
    pub(super) rx: Mutex<RxBatch>,
    /// See [`EndpointConfig::read_delay_slack_ns`](super::EndpointConfig::read_delay_slack_ns).
    pub(super) slack: Option<u64>,
    /// Readers receive from the socket themselves
    /// ([`EndpointConfig::inline_receive`](super::EndpointConfig::inline_receive)).
    pub(super) inline_rx: bool,
    /// The socket registered with the tokio reactor of the first reader that waited (a
    /// duplicate descriptor of the driver's socket), or None when there is no reactor.
    pub(super) reactor: OnceLock<Option<tokio::io::unix::AsyncFd<OwnedFd>>>,
    /// Readers waiting for the reactor to report the socket readable: while there are any,
    /// the driver leaves arriving datagrams to them.
    pub(super) rx_waiters: AtomicUsize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: we created this descriptor and nobody uses it any more.
        unsafe { libc::close(self.efd) };
    }
}

impl Shared {
    /// Tells the driver that something changed; wakes it (an eventfd write) only when it
    /// sleeps. The two flags pair up (sequentially consistent) so that either the driver sees
    /// `notified` before it sleeps or this call sees `sleeping` and writes.
    pub(super) fn wake(&self) {
        self.notified.store(true, Ordering::SeqCst);
        if !self.sleeping.load(Ordering::SeqCst) {
            return;
        }
        self.kick();
    }

    /// Like [`Shared::wake`], but writes the eventfd only when the driver must act before it
    /// wakes by itself: it has datagrams to send (`pending`) or the core's earliest deadline
    /// (`deadline`, read under the lock after the change) comes before the driver's own
    /// timeout. `sleep_until` is read after `sleeping`, so it belongs to the sleep that
    /// `sleeping` reports.
    pub(super) fn wake_for(&self, pending: bool, deadline: Option<u64>) {
        self.notified.store(true, Ordering::SeqCst);
        if !self.sleeping.load(Ordering::SeqCst) {
            return;
        }
        if !must_wake(pending, deadline, || {
            self.sleep_until.load(Ordering::SeqCst)
        }) {
            return;
        }
        self.kick();
    }

    fn kick(&self) {
        self.kicks.fetch_add(1, Ordering::Relaxed);
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.efd, &one as *const u64 as *const libc::c_void, 8) };
    }

    /// The socket as registered with the current tokio reactor (registered on first use).
    pub(super) fn reactor(&self) -> Option<&tokio::io::unix::AsyncFd<OwnedFd>> {
        if !self.inline_rx {
            return None;
        }
        self.reactor
            .get_or_init(|| {
                tokio::runtime::Handle::try_current().ok()?;
                // SAFETY: duplicates our live socket descriptor; the copy is owned below.
                let fd = unsafe { libc::fcntl(self.sock_fd, libc::F_DUPFD_CLOEXEC, 0) };
                if fd < 0 {
                    return None;
                }
                // SAFETY: `fd` is a fresh descriptor nobody else owns.
                let owned = unsafe { OwnedFd::from_raw_fd(fd) };
                // SAFETY: the AsyncFd owns `owned`, which stays open and the same descriptor
                // for the AsyncFd's whole life.
                unsafe {
                    tokio::io::unix::AsyncFd::register_with_interest(
                        owned,
                        tokio::io::Interest::READABLE,
                    )
                }
                .ok()
            })
            .as_ref()
    }

    /// Receives one batch from the socket (non-blocking) and hands it to the core; the caller
    /// holds the receive buffers. `WouldBlock` when nothing is queued. A reader receiving
    /// inline names its connection (`me`): its own read waker is not woken (it is running and
    /// looks again itself; a task woken while it runs is polled once more for nothing, and
    /// tokio wakes a second worker to take it).
    pub(super) fn receive(
        &self,
        rx: &mut RxBatch,
        me: Option<ConnHandle>,
    ) -> std::io::Result<usize> {
        let n = rx.recv(self.sock_fd)?;
        // The clock read just after the receive call (the one its stamps were converted with).
        let fallback_now = rx.read_at;
        let mut st = self.lock();
        st.io.rx_calls += 1;
        st.io.inline_receives += u64::from(me.is_some());
        st.io.truncated = rx.truncated;
        st.io.rx_overflow = rx.overflow;
        for i in 0..n {
            let r = rx.got[i];
            if r.len == 0 {
                st.io.datagrams_in += 1;
                continue;
            }
            if r.seg < r.len {
                st.io.gro_messages += 1;
            }
            // A GRO message's datagrams share its one kernel stamp.
            let now = match r.kernel_ts {
                Some(t) => {
                    st.io.kernel_rx_stamps += 1;
                    match self.slack {
                        Some(s) if fallback_now.saturating_sub(t) > s => {
                            st.io.late_reads += 1;
                            fallback_now - s
                        }
                        _ => t,
                    }
                }
                None => fallback_now,
            };
            if let Some((m, seg)) = rx.segments(i) {
                // A long (GRO) message is shared, not copied: in-order payloads stay in the
                // receive buffer as slices of it until the application takes them. The core
                // takes it whole (one connection lookup for a run of its datagrams).
                st.io.datagrams_in += m.len().div_ceil(seg) as u64;
                st.ep
                    .handle_segments(now, r.from, m, seg, r.ecn == sys::ECN_CE);
            } else {
                for d in rx.datagrams(i) {
                    st.io.datagrams_in += 1;
                    st.ep.handle_ecn(now, r.from, d, r.ecn == sys::ECN_CE);
                }
            }
        }
        if let Some(s) = me.and_then(|h| st.slots.get_mut(&h)) {
            s.read = None;
        }
        st.dispatch();
        st.check_shutdowns();
        Ok(n)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether a sleeping driver must be woken (see [`Shared::wake_for`]): it has datagrams to
/// send (`pending`), or the core's earliest deadline comes before the end of its sleep
/// (`sleep_until`, read only when needed).
fn must_wake(pending: bool, deadline: Option<u64>, sleep_until: impl FnOnce() -> u64) -> bool {
    pending || deadline.is_some_and(|d| d < sleep_until())
}

/// Held by every application handle ([`super::Endpoint`], [`super::Stream`]): the driver
/// thread runs until the last one is dropped (and no connection is left), and each drop wakes
/// it to look.
pub(super) struct HandleGuard(pub(super) Arc<Shared>);
impl Drop for HandleGuard {
    fn drop(&mut self) {
        self.0.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::must_wake;
    use crate::endpoint::{ACK_HOLD_NS, HOLD_LATE_NS, READER_WAIT_NS};

    #[test]
    fn a_sleeping_driver_is_woken_only_for_what_comes_before_its_own_timeout() {
        let until = 1_000_000;
        assert!(must_wake(true, None, || until));
        assert!(must_wake(true, Some(until + 1), || until));
        assert!(must_wake(false, Some(until - 1), || until));
        assert!(!must_wake(false, Some(until), || until));
        assert!(!must_wake(false, None, || until));
    }

    /// A request's ACK held for its response does not wake a driver that sleeps while readers
    /// wait: the hold's deadline is `HOLD_LATE_NS` past its end (`settle`), and such a driver
    /// sleeps at most `READER_WAIT_NS` from before the hold began. (What this saves on a
    /// request/response stream, eventfd writes per exchange, is measured by the `exchanges`
    /// benchmark.)
    #[test]
    fn a_held_ack_does_not_wake_a_driver_sleeping_for_readers() {
        const { assert!(HOLD_LATE_NS >= READER_WAIT_NS) };
        let slept_at = 5_000_000_000u64;
        for since in [0, 1, READER_WAIT_NS / 2, READER_WAIT_NS] {
            let hold_end = slept_at + since + ACK_HOLD_NS;
            assert!(!must_wake(false, Some(hold_end + HOLD_LATE_NS), || {
                slept_at + READER_WAIT_NS
            }));
        }
    }
}
