//! The stream API: [`Stream`], one connection as tokio's `AsyncRead` and `AsyncWrite`, with
//! zero-copy reads and writes of [`Bytes`]. Reads on a request/response stream receive from
//! the socket themselves (see [`EndpointConfig::inline_receive`]); small writes leave from the
//! writing thread (see [`settle`]).
//!
//! [`EndpointConfig::inline_receive`]: super::EndpointConfig::inline_receive

use super::direct::{settle, Tx};
use super::shared::{HandleGuard, Shared, State};
use super::{route_payload, DIRECT_MAX_BYTES, WRITE_SLICE};
use crate::error::Error;
use bytes::Bytes;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::task::{Context, Poll};
use stride_proto::{CloseReason, ConnHandle, ConnStats};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// One connection: a reliable, ordered byte stream each way. Implements tokio's
/// [`AsyncRead`] and [`AsyncWrite`]. `poll_shutdown` sends FIN after the buffered bytes and
/// completes once every written byte is acknowledged. Dropping a stream closes it gracefully
/// (FIN) and discards whatever the peer still sends; use [`Stream::abort`] to reset it.
pub struct Stream {
    shared: Arc<Shared>,
    _guard: Arc<HandleGuard>,
    h: ConnHandle,
    remote: SocketAddr,
    shut: bool,
    /// A pending inline receive (see [`super::EndpointConfig::inline_receive`]).
    rx_wait: Option<RxWait>,
    /// Inline receive failed on this stream (no usable reactor): the driver receives.
    rx_off: bool,
    /// The last call that moved data was a read.
    last_read: bool,
    /// Reads and writes alternate (request/response): an inline receive holds the ACK back
    /// for the response ([`ACK_HOLD_NS`](super::ACK_HOLD_NS)).
    exchange: bool,
}

/// A reader's wait for the socket (see [`rx_wait`]).
type RxWait = Pin<Box<dyn std::future::Future<Output = RxOutcome> + Send + Sync>>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RxOutcome {
    /// The reader received a batch and handed it to the core.
    Received,
    /// The driver was receiving: it wakes the reader if anything arrived for it.
    Busy,
    /// The reactor failed; the driver receives for this stream from now on.
    Failed,
}

/// Counts a reader waiting on the reactor for as long as it lives.
struct Waiting(Arc<Shared>);
impl Waiting {
    fn new(s: &Arc<Shared>) -> Self {
        s.rx_waiters.fetch_add(1, Ordering::SeqCst);
        Waiting(s.clone())
    }
}
impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.rx_waiters.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Waits until the socket is readable, then receives one batch on the caller's thread. Uses
/// the readiness future (not `poll_read_ready`), so any number of readers may wait at once
/// and each is woken.
fn rx_wait(shared: Arc<Shared>, me: ConnHandle) -> RxWait {
    Box::pin(async move {
        let Some(afd) = shared.reactor() else {
            return RxOutcome::Failed;
        };
        let _waiting = Waiting::new(&shared);
        loop {
            let Ok(mut g) = afd.readable().await else {
                return RxOutcome::Failed;
            };
            let Ok(mut rx) = shared.rx.try_lock() else {
                return RxOutcome::Busy;
            };
            match shared.receive(&mut rx, Some(me)) {
                Ok(n) => {
                    if n < rx.slots() {
                        // A short batch emptied the queue: forget this readiness now instead of
                        // learning it from one more (empty) receive call before the next wait.
                        // The reactor keeps any readiness reported since it gave us `g`.
                        g.clear_ready();
                    }
                    return RxOutcome::Received;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => g.clear_ready(),
                Err(_) => {} // an ICMP error reported on the socket: look again
            }
        }
    })
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.h.0)
            .field("remote", &self.remote)
            .finish()
    }
}

impl Stream {
    pub(super) fn new(
        shared: Arc<Shared>,
        guard: Arc<HandleGuard>,
        h: ConnHandle,
        remote: SocketAddr,
    ) -> Self {
        // Datagrams no larger than the route to the peer carries: a payload configured for
        // jumbo frames (or loopback) is lowered for a peer behind a smaller MTU instead of
        // being fragmented by IP. Before any DATA is sent (a stream is made at the handshake).
        if let Some(fit) = route_payload(remote) {
            shared.lock().ep.limit_payload(h, fit);
        }
        Stream {
            shared,
            _guard: guard,
            h,
            remote,
            shut: false,
            rx_wait: None,
            rx_off: false,
            last_read: false,
            exchange: false,
        }
    }

    /// Called when a read found nothing (the read waker is in the slot): receives inline if
    /// the socket has something (true: look again) or leaves the reader waiting on the
    /// reactor (false: pending). A finished inline receive sends what the core now has to send
    /// (ACKs) from this thread when the driver holds nothing unsent, and wakes the driver only
    /// for what is left or for an earlier deadline.
    fn receive_inline(&mut self, cx: &mut Context<'_>) -> bool {
        // Only streams whose reads and writes alternate: a bulk receiver's batches stay with
        // the driver, whose receive loop and GRO batches keep its reader's thread free (inline
        // receive there measured slower: `bench/ab.py` bulk, par4 and demo, docs/results.md).
        if self.rx_off || !self.shared.inline_rx || !self.exchange {
            return false;
        }
        let w = self
            .rx_wait
            .get_or_insert_with(|| rx_wait(self.shared.clone(), self.h));
        let out = match w.as_mut().poll(cx) {
            Poll::Pending => return false,
            Poll::Ready(o) => o,
        };
        self.rx_wait = None;
        match out {
            RxOutcome::Received => {
                let mode = if self.exchange { Tx::Hold } else { Tx::Keep };
                settle(&self.shared, self.shared.lock(), mode);
                true
            }
            RxOutcome::Busy => false,
            RxOutcome::Failed => {
                self.rx_off = true;
                false
            }
        }
    }

    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.remote
    }

    /// The local connection identifier.
    pub fn id(&self) -> u32 {
        self.h.0
    }

    /// The connection's counters (the last snapshot once it is gone).
    pub fn stats(&self) -> Option<ConnStats> {
        let mut st = self.shared.lock();
        if let Some(c) = st.ep.conn(self.h) {
            let s = c.stats().clone();
            if let Some(slot) = st.slots.get_mut(&self.h) {
                slot.last_stats = Some(Box::new(s.clone()));
            }
            return Some(s);
        }
        st.slots
            .get(&self.h)
            .and_then(|s| s.last_stats.as_deref().cloned())
    }

    /// Bytes written but not yet acknowledged by the peer (0 once the connection is gone).
    pub fn unacked(&self) -> usize {
        self.shared
            .lock()
            .ep
            .conn(self.h)
            .map_or(0, |c| c.unacked())
    }

    /// How the connection ended, if it did.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared.lock().slots.get(&self.h).and_then(|s| s.closed)
    }

    /// Resets the connection (RST); unread data is discarded.
    pub fn abort(&mut self) {
        {
            let mut st = self.shared.lock();
            let _ = st.ep.abort(self.h);
            st.dispatch();
        }
        self.shared.wake();
    }

    /// Queues `data` without copying it (the send buffer keeps a reference until the peer
    /// acknowledges the bytes, and the driver passes them to the kernel from there); returns
    /// how many of its bytes (a prefix) were taken. The zero-copy counterpart of `poll_write`.
    pub fn poll_write_bytes(
        &mut self,
        cx: &mut Context<'_>,
        data: &Bytes,
    ) -> Poll<std::io::Result<usize>> {
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        self.note_write();
        let mut st = self.shared.lock();
        if let Some(e) = self.write_refused(&st) {
            return Poll::Ready(Err(e));
        }
        let r = st.ep.write_bytes(self.h, data);
        self.after_write(st, cx, r)
    }

    /// Writes all of `data` without copying it (see [`Stream::poll_write_bytes`]).
    pub async fn write_chunk(&mut self, mut data: Bytes) -> std::io::Result<()> {
        while !data.is_empty() {
            let n = std::future::poll_fn(|cx| self.poll_write_bytes(cx, &data)).await?;
            let _ = data.split_to(n);
        }
        Ok(())
    }

    /// Takes up to `max` received bytes without copying them: `Ok(None)` at the end of the
    /// stream. The zero-copy counterpart of `poll_read`.
    pub fn poll_read_chunk(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<std::io::Result<Option<Bytes>>> {
        let mut out = Vec::with_capacity(1);
        match self.poll_take_chunks(cx, &mut out, max, 1) {
            Poll::Ready(Ok(_)) => Poll::Ready(Ok(out.pop())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }

    /// Appends to `out` every received chunk available now, up to `max` bytes in all, under
    /// one lock (no copy); returns the bytes taken, 0 at the end of the stream.
    pub fn poll_read_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
    ) -> Poll<std::io::Result<usize>> {
        self.poll_take_chunks(cx, out, max, usize::MAX)
    }

    fn poll_take_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
        most: usize,
    ) -> Poll<std::io::Result<usize>> {
        loop {
            match self.try_take_chunks(cx, out, max, most) {
                Poll::Pending if self.receive_inline(cx) => continue,
                Poll::Pending => return Poll::Pending,
                r => {
                    self.rx_wait = None;
                    return r;
                }
            }
        }
    }

    fn try_take_chunks(
        &mut self,
        cx: &mut Context<'_>,
        out: &mut Vec<Bytes>,
        max: usize,
        most: usize,
    ) -> Poll<std::io::Result<usize>> {
        let mut st = self.shared.lock();
        let taken = st.ep.read_chunks(self.h, max, most, out).unwrap_or(0);
        if taken > 0 {
            // A read may reopen the window (a window update to send): sent from here, and
            // the driver is woken only when something is left for it.
            settle(&self.shared, st, Tx::Keep);
            self.read_done();
            return Poll::Ready(Ok(taken));
        }
        if let Some(e) = Stream::closed_error(&st, self.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if st.ep.is_eof(self.h) {
            return Poll::Ready(Ok(0));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        if let Some(s) = st.slots.get_mut(&self.h) {
            s.read = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Reads up to `max` bytes without copying them; `Ok(None)` at the end of the stream.
    pub async fn read_chunk(&mut self, max: usize) -> std::io::Result<Option<Bytes>> {
        std::future::poll_fn(|cx| self.poll_read_chunk(cx, max)).await
    }

    /// Appends every chunk available (at least one; up to `max` bytes) to `out` without
    /// copying; returns the bytes taken, 0 at the end of the stream.
    pub async fn read_chunks(
        &mut self,
        out: &mut Vec<Bytes>,
        max: usize,
    ) -> std::io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read_chunks(cx, out, max)).await
    }

    fn write_refused(&self, st: &State) -> Option<std::io::Error> {
        if let Some(e) = Stream::closed_error(st, self.h) {
            return Some(e.into_io());
        }
        if self.shut {
            return Some(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "write after shutdown",
            ));
        }
        if st.driver_gone {
            return Some(Error::EndpointClosed.into_io());
        }
        None
    }

    fn read_done(&mut self) {
        if self.last_read {
            // Two reads in a row: a receiving stream, whose ACKs must not wait.
            self.exchange = false;
        }
        self.last_read = true;
    }

    fn note_write(&mut self) {
        if self.last_read {
            self.exchange = true;
        }
        self.last_read = false;
    }

    fn after_write(
        &self,
        mut st: MutexGuard<'_, State>,
        cx: &mut Context<'_>,
        r: std::result::Result<usize, stride_proto::EndpointError>,
    ) -> Poll<std::io::Result<usize>> {
        match r {
            Ok(n) if n > 0 => {
                if n <= DIRECT_MAX_BYTES {
                    settle(&self.shared, st, Tx::Now);
                } else {
                    st.hold_until = None;
                    st.dispatch();
                    drop(st);
                    self.shared.wake();
                }
                Poll::Ready(Ok(n))
            }
            Ok(_) => {
                if let Some(s) = st.slots.get_mut(&self.h) {
                    s.write = Some(cx.waker().clone());
                }
                Poll::Pending
            }
            Err(_) => Poll::Ready(Err(Stream::closed_error(&st, self.h)
                .unwrap_or(Error::Reset)
                .into_io())),
        }
    }

    fn closed_error(st: &State, h: ConnHandle) -> Option<Error> {
        match st.slots.get(&h) {
            Some(s) => s.closed.and_then(Error::from_close),
            None => Some(Error::EndpointClosed),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.try_read(cx, buf) {
                Poll::Pending if this.receive_inline(cx) => continue,
                Poll::Pending => return Poll::Pending,
                r => {
                    this.rx_wait = None;
                    return r;
                }
            }
        }
    }
}

impl Stream {
    fn try_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self;
        let mut st = this.shared.lock();
        let dst = buf.initialize_unfilled();
        let n = st.ep.read(this.h, dst).unwrap_or(0);
        if n > 0 {
            buf.advance(n);
            settle(&this.shared, st, Tx::Keep);
            this.read_done();
            return Poll::Ready(Ok(()));
        }
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if st.ep.is_eof(this.h) {
            return Poll::Ready(Ok(()));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        if let Some(s) = st.slots.get_mut(&this.h) {
            s.read = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        this.note_write();
        let mut st = this.shared.lock();
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        if this.shut {
            return Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "write after shutdown",
            )));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        let data = &data[..data.len().min(WRITE_SLICE)];
        let r = st.ep.write(this.h, data);
        this.after_write(st, cx, r)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let mut st = this.shared.lock();
        if !this.shut {
            this.shut = true;
            let _ = st.ep.close(this.h);
            st.dispatch();
            this.shared.wake();
        }
        if let Some(e) = Stream::closed_error(&st, this.h) {
            return Poll::Ready(Err(e.into_io()));
        }
        let done = st.ep.conn(this.h).is_none_or(|c| c.unacked() == 0);
        if done {
            return Poll::Ready(Ok(()));
        }
        if st.driver_gone {
            return Poll::Ready(Err(Error::EndpointClosed.into_io()));
        }
        let h = this.h;
        if let Some(s) = st.slots.get_mut(&h) {
            s.write = Some(cx.waker().clone());
            if !s.shutdown_wait {
                s.shutdown_wait = true;
                st.shutdown_waiters.push(h);
            }
        }
        Poll::Pending
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        let h = self.h;
        let _ = st.ep.close(h);
        let mut sink = [0u8; 4096];
        while matches!(st.ep.read(h, &mut sink), Ok(n) if n > 0) {}
        st.dispatch();
        let gone = match st.slots.get_mut(&h) {
            Some(s) => {
                s.detached = true;
                s.closed.is_some() || st.ep.conn(h).is_none()
            }
            None => false,
        };
        if gone {
            st.slots.remove(&h);
        }
        drop(st);
        self.shared.wake();
    }
}
