//! The driver thread: one turn receives what is queued, runs the core's timers and takes its
//! datagrams, sends them as one batch, then waits for the earliest of a datagram, an
//! application wake-up or the core's next deadline. See the module documentation of
//! [`crate::endpoint`].

use super::shared::{HandleGuard, Shared};
use super::{CONN_WAIT_NS, IDLE_AFTER_NS, IDLE_WAIT_NS, MAX_WAIT_NS, READER_WAIT_NS, RX_DEFER_NS};
use crate::sys::{self, TxBatch};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

/// The driver thread. See the module documentation.
pub(super) fn drive(
    shared: Arc<Shared>,
    sock: std::net::UdpSocket,
    handles: Weak<HandleGuard>,
    spin_ns: u64,
) {
    // SAFETY: changes only this thread's timer slack (1 µs), so short ppoll waits are precise.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    let fd = sock.as_raw_fd();
    let tx = TxBatch::with_room(shared.lock().room);
    let mut d = Driver {
        shared,
        fd,
        handles,
        spin_ns,
        tx,
        need_writable: false,
        traffic: 0,
        last_traffic: sys::now_ns(),
    };
    loop {
        // 1. Receive what is queued.
        let got_any = d.receive();
        // 2. Timers and transmissions.
        let turn = d.run_core();
        if turn.exit && d.tx.is_empty() {
            return;
        }
        // 3. Send.
        let sent_full = d.send();
        if got_any || sent_full || (!d.tx.is_empty() && !d.need_writable) {
            continue;
        }
        // 4. Wait for a datagram, an application wake-up or the next deadline.
        d.wait(&turn);
    }
}

/// The driver thread's own state between its turns (the socket itself is owned by [`drive`]).
struct Driver {
    shared: Arc<Shared>,
    /// The socket.
    fd: RawFd,
    /// The application handles: the driver ends once none is left (and no connection).
    handles: Weak<HandleGuard>,
    /// Waits shorter than this are spun (see [`super::EndpointConfig::spin_ns`]).
    spin_ns: u64,
    /// Datagrams taken from the core and not yet in the kernel.
    tx: TxBatch,
    /// The last send found the socket buffer full: wait for it to become writable.
    need_writable: bool,
    /// Datagrams received and sent so far (by this thread and application threads), as last
    /// seen.
    traffic: u64,
    /// When `traffic` last changed: the endpoint is idle [`IDLE_AFTER_NS`] after it.
    last_traffic: u64,
}

/// What the core told the driver in one turn ([`Driver::run_core`]).
struct Turn {
    /// When the driver must look again (the core's next timer, or a hold's end).
    deadline: Option<u64>,
    /// Connections the core has.
    conns: usize,
    /// Every handle is gone and no connection is left: the driver ends (after sending what
    /// it holds).
    exit: bool,
}

impl Driver {
    /// Receives what is queued (a few batches at most, so sending is not starved), unless a
    /// reader is receiving right now. True when something arrived.
    fn receive(&self) -> bool {
        let mut got_any = false;
        for _ in 0..4 {
            let Ok(mut rx) = self.shared.rx.try_lock() else {
                break;
            };
            match self.shared.receive(&mut rx, None) {
                Ok(n) => {
                    got_any = true;
                    if n < rx.slots() {
                        break;
                    }
                }
                Err(_) => break, // WouldBlock, or an ICMP error reported on the socket
            }
        }
        got_any
    }

    /// Runs the core's timers and takes the datagrams it lets leave (unless a hold is on or
    /// the last batch is still unsent). Whatever the application changed before this point is
    /// seen under the lock below; a later change sets `notified` again.
    fn run_core(&mut self) -> Turn {
        let shared = &self.shared;
        let tx = &mut self.tx;
        shared.notified.store(false, Ordering::SeqCst);
        let mut st = shared.lock();
        let now = sys::now_ns();
        st.ep.handle_timeout(now);
        let held = match st.hold_until {
            Some(t) if now < t => Some(t),
            _ => {
                st.hold_until = None;
                None
            }
        };
        if tx.is_empty() && held.is_none() {
            for (to, d) in std::mem::take(&mut st.spill) {
                tx.push(to, &d);
            }
            // One clock read per batch: the batch leaves in one system call, so its
            // datagrams share a departure time (a read per datagram was 3.6 % of a bulk
            // sender's samples on a VM whose clock reads cost ~45 ns).
            while !tx.is_full() {
                // Payloads stay in the send buffer: the kernel reads them from there.
                let (buf, parts) = tx.next_slot();
                match st.ep.poll_transmit_parts(now, buf, parts) {
                    Some(t) => tx.commit(t.remote, t.len),
                    None => break,
                }
            }
        }
        st.tx_inflight = !tx.is_empty();
        st.dispatch();
        st.check_shutdowns();
        let deadline = match held {
            Some(t) => Some(st.ep.next_timer().map_or(t, |d| d.min(t))),
            None => st.ep.poll_timeout(),
        };
        let conns = st.ep.connection_count();
        let traffic = st.io.datagrams_in + st.io.datagrams_out;
        if traffic != self.traffic {
            self.traffic = traffic;
            self.last_traffic = now;
        }
        let exit = self.handles.strong_count() == 0 && st.ep.connection_count() == 0;
        if exit {
            st.driver_gone = true;
        }
        Turn {
            deadline,
            conns,
            exit,
        }
    }

    /// Sends the batch. True when a full batch left (more may be waiting in the core).
    fn send(&mut self) -> bool {
        if self.tx.is_empty() {
            return false;
        }
        let queued = self.tx.len();
        match self.tx.send(self.fd) {
            Ok(n) => {
                let mut st = self.shared.lock();
                st.tx_inflight = !self.tx.is_empty() || !st.spill.is_empty();
                st.io.tx_calls += 1;
                st.io.datagrams_out += n as u64;
                self.need_writable = false;
                n == queued && queued == sys::BATCH
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                self.need_writable = true;
                false
            }
            Err(e) => {
                let mut st = self.shared.lock();
                st.io.send_errors += 1;
                if sys::too_big(&e) {
                    // The route's MTU went down: what is resent must fit it.
                    st.io.too_big += 1;
                    super::refit_payloads(&mut st.ep);
                }
                false
            }
        }
    }

    /// Waits for a datagram, an application wake-up or the turn's deadline (capped by the
    /// longest sleep for the driver's situation); a wait shorter than `spin_ns` gives the core
    /// away once instead.
    fn wait(&self, turn: &Turn) {
        let shared = &self.shared;
        let now = sys::now_ns();
        let idle = now.saturating_sub(self.last_traffic) >= IDLE_AFTER_NS;
        // An idle driver watches the socket itself (below): the first arrival ends the idle
        // spell, and a reader that stops waiting cannot leave the socket unwatched for long.
        let readers = !idle && shared.rx_waiters.load(Ordering::SeqCst) > 0;
        let cap = if idle {
            IDLE_WAIT_NS
        } else if readers {
            READER_WAIT_NS
        } else if turn.conns > 0 {
            CONN_WAIT_NS
        } else {
            MAX_WAIT_NS
        };
        let wait = match turn.deadline {
            Some(t) => t.saturating_sub(now).min(cap),
            None => cap,
        };
        if wait == 0 {
            return;
        }
        if wait < self.spin_ns {
            // Shorter than a sleep-and-wake costs on a busy machine: give the core away once
            // and look again.
            std::thread::yield_now();
            return;
        }
        // When the deadline is near, arrivals wait for it instead of waking the thread once
        // more: at low rates that halves the wake-ups (one per packet instead of one for the
        // pacer and one for the ACK). Their kernel timestamps keep the STT samples exact.
        // Waiting readers receive arrivals themselves (the reactor wakes them): a driver woken
        // too would only contend for the same datagrams.
        let rx_events = if wait <= RX_DEFER_NS || readers {
            0
        } else {
            libc::POLLIN
        };
        let mut fds = [
            libc::pollfd {
                fd: self.fd,
                events: rx_events | if self.need_writable { libc::POLLOUT } else { 0 },
                revents: 0,
            },
            libc::pollfd {
                fd: shared.efd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ts = libc::timespec {
            tv_sec: (wait / 1_000_000_000) as libc::time_t,
            tv_nsec: (wait % 1_000_000_000) as libc::c_long,
        };
        shared.sleep_until.store(now + wait, Ordering::SeqCst);
        shared.sleeping.store(true, Ordering::SeqCst);
        if shared.notified.load(Ordering::SeqCst) {
            shared.sleeping.store(false, Ordering::SeqCst);
            return;
        }
        shared.sleeps.fetch_add(1, Ordering::Relaxed);
        // SAFETY: two live pollfds.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
        shared.sleeping.store(false, Ordering::SeqCst);
        if fds[1].revents & libc::POLLIN != 0 {
            let mut v = 0u64;
            // SAFETY: reads 8 bytes into a live u64 (resets the eventfd counter).
            unsafe { libc::read(shared.efd, &mut v as *mut u64 as *mut libc::c_void, 8) };
        }
    }
}
