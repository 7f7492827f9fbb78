//! What keeps hostile or slow senders from locking a receiver: upload slots shared fairly
//! between source addresses, a minimum progress rate per upload, and the disk space the
//! uploads in progress have claimed.
//!
//! - **Slots.** A receiver holds at most `max_uploads` uploads at once, at most
//!   `max_per_source` of them from one source (an IPv4 address, or an IPv6 /64, what one host
//!   controls). When every slot is taken, a newcomer whose source holds fewer than the
//!   busiest source less one takes a slot from that source: its slowest upload (fewest bytes
//!   per second so far) is dropped. So the slots of a source that trickles go to the others
//!   first, and no source keeps more than its share while others wait (as OpenSSH's
//!   `MaxStartups` and nginx's `limit_conn` bound what one client holds).
//! - **Progress.** Every `grace` (the first one from the connection's start, covering the
//!   header, as OpenSSH's `LoginGraceTime`), an upload must have moved `min_rate` bytes per
//!   second of it, or it is dropped (nginx's `client_body_timeout` bounds only the gap between
//!   reads; a byte every few seconds passes that).
//! - **Disk.** An upload is admitted only if its declared size fits the free space less the
//!   reserve and less what the uploads in progress still have to write, and within the quota.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use stride::Stream;
use tokio::io::AsyncReadExt;
use tokio::sync::Notify;

/// Counters of the uploads a receiver refused or dropped, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Not authenticated with the receiver's key (no key, another key, a bad tag, a replayed
    /// header or a clock too far off).
    pub unauthenticated: u64,
    /// From an address outside the allowed networks.
    pub not_allowed: u64,
    /// Refused for want of a slot (every slot taken, or the source's cap reached).
    pub busy: u64,
    /// Dropped for moving fewer bytes than the minimum rate.
    pub too_slow: u64,
    /// Dropped to give its slot to a source holding fewer.
    pub evicted: u64,
    /// Refused because the declared size did not fit the free space or quota.
    pub no_space: u64,
}

/// Limits of one receiver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most uploads at once (default [`super::upload_limit`]).
    pub max_uploads: usize,
    /// Most uploads at once from one source (default [`DEFAULT_PER_SOURCE`], at most
    /// `max_uploads`).
    pub max_per_source: usize,
    /// Bytes per second an upload must move in every `grace` (0: no minimum). Default
    /// [`DEFAULT_MIN_RATE`].
    pub min_rate: u64,
    /// The span over which progress is measured, the first from the connection's start.
    /// Default [`DEFAULT_GRACE`].
    pub grace: Duration,
    /// Free space that uploads must leave on the file system, bytes. Default
    /// [`DEFAULT_RESERVE`].
    pub reserve: u64,
    /// Most bytes the target directory's files may hold, with the uploads in progress
    /// (None: no quota).
    pub quota: Option<u64>,
}

/// Default [`Limits::max_per_source`].
pub const DEFAULT_PER_SOURCE: usize = 256;
/// Default [`Limits::min_rate`]: 16 KiB/s.
pub const DEFAULT_MIN_RATE: u64 = 16 * 1024;
/// Default [`Limits::grace`].
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);
/// Default [`Limits::reserve`]: 64 MiB.
pub const DEFAULT_RESERVE: u64 = 64 << 20;

impl Default for Limits {
    fn default() -> Self {
        let max = super::upload_limit();
        Limits {
            max_uploads: max,
            max_per_source: DEFAULT_PER_SOURCE.min(max),
            min_rate: DEFAULT_MIN_RATE,
            grace: DEFAULT_GRACE,
            reserve: DEFAULT_RESERVE,
            quota: None,
        }
    }
}

/// The key of a sender's source: its IPv4 address, or the /64 of its IPv6 address.
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

/// An upload's progress, seen by the table (to find the slowest) and its own task.
#[derive(Default)]
pub(super) struct Progress {
    /// Bytes read from the sender so far.
    pub read: AtomicU64,
    /// Bytes written to the temporary file so far.
    pub written: AtomicU64,
    /// Declared size, once admitted to the disk (0 before).
    pub reserved: AtomicU64,
    evicted: AtomicBool,
    wake: Notify,
}

struct Slot {
    id: u64,
    source: IpAddr,
    started: Instant,
    progress: Arc<Progress>,
}

/// The uploads in progress of one receiver.
#[derive(Default)]
pub(super) struct Table {
    next: u64,
    slots: Vec<Slot>,
}

/// Why a slot was refused.
pub(super) enum NoSlot {
    /// The source holds its cap.
    Source(usize),
    /// Every slot is taken and the source holds its share.
    Full(usize),
}

impl Table {
    /// A slot for an upload from `source`, taking one from the busiest source if every slot
    /// is taken and that source holds more than one more than `source`.
    pub fn take(&mut self, source: IpAddr, lim: &Limits) -> Result<(u64, Arc<Progress>), NoSlot> {
        let mine = self.slots.iter().filter(|s| s.source == source).count();
        if mine >= lim.max_per_source.max(1) {
            return Err(NoSlot::Source(mine));
        }
        if self.slots.len() >= lim.max_uploads.max(1) && !self.evict_for(mine) {
            return Err(NoSlot::Full(self.slots.len()));
        }
        self.next += 1;
        let progress = Arc::new(Progress::default());
        self.slots.push(Slot {
            id: self.next,
            source,
            started: Instant::now(),
            progress: progress.clone(),
        });
        Ok((self.next, progress))
    }

    /// Drops the slowest upload of the busiest source if it holds more than `mine + 1`.
    fn evict_for(&mut self, mine: usize) -> bool {
        let mut counts: std::collections::HashMap<IpAddr, usize> = Default::default();
        for s in &self.slots {
            *counts.entry(s.source).or_default() += 1;
        }
        let Some((&busiest, &n)) = counts.iter().max_by_key(|(_, n)| **n) else {
            return false;
        };
        if n <= mine + 1 {
            return false;
        }
        let rate = |s: &Slot| {
            let secs = s.started.elapsed().as_secs_f64().max(1e-3);
            s.progress.read.load(Ordering::Relaxed) as f64 / secs
        };
        let victim = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.source == busiest)
            .min_by(|a, b| rate(a.1).total_cmp(&rate(b.1)))
            .map(|(i, _)| i)
            .expect("the busiest source holds a slot");
        let v = self.slots.swap_remove(victim);
        v.progress.evicted.store(true, Ordering::Relaxed);
        v.progress.wake.notify_one();
        true
    }

    /// Frees slot `id` (if it was not taken from it already).
    pub fn free(&mut self, id: u64) {
        self.slots.retain(|s| s.id != id);
    }

    /// Bytes the admitted uploads still have to write.
    pub fn outstanding(&self) -> u64 {
        self.slots
            .iter()
            .map(|s| {
                let p = &s.progress;
                let r = p.reserved.load(Ordering::Relaxed);
                r.saturating_sub(p.written.load(Ordering::Relaxed))
            })
            .sum()
    }
}

/// The state the connections of one receiver share: its counters, its slots and the recent
/// authenticated headers (for replay detection).
#[derive(Default)]
pub struct ReceiverState {
    refusals: Mutex<Refusals>,
    pub(super) replay: Mutex<super::auth::ReplayGuard>,
    pub(super) table: Mutex<Table>,
}

impl std::fmt::Debug for ReceiverState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReceiverState")
            .field("refusals", &self.refusals())
            .field("uploads", &self.uploads())
            .finish()
    }
}

impl ReceiverState {
    /// The counters so far.
    pub fn refusals(&self) -> Refusals {
        *self.refusals.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Uploads in progress.
    pub fn uploads(&self) -> usize {
        self.table().slots.len()
    }

    pub(super) fn count(&self, f: impl FnOnce(&mut Refusals)) {
        f(&mut self.refusals.lock().unwrap_or_else(|e| e.into_inner()));
    }

    pub(super) fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An upload's slot; freed on drop.
pub(super) struct SlotGuard {
    state: Arc<ReceiverState>,
    id: u64,
    pub progress: Arc<Progress>,
}

impl SlotGuard {
    /// A slot for an upload from `from`, or why not (counted).
    pub fn take(state: &Arc<ReceiverState>, from: IpAddr, lim: &Limits) -> Result<Self, String> {
        let taken = state.table().take(source_of(from), lim);
        match taken {
            Ok((id, progress)) => Ok(SlotGuard {
                state: state.clone(),
                id,
                progress,
            }),
            Err(e) => {
                state.count(|c| c.busy += 1);
                Err(match e {
                    NoSlot::Source(n) => format!(
                        "receiver busy: {n} uploads in progress from your address (its per-source limit)"
                    ),
                    NoSlot::Full(n) => format!("receiver busy: {n} uploads in progress (its limit)"),
                })
            }
        }
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.state.table().free(self.id);
    }
}

/// Reads of one upload, bounded by the stall timeout and held to the minimum rate; ended at
/// once when the upload's slot is taken from it.
pub(super) struct Pace {
    state: Arc<ReceiverState>,
    progress: Arc<Progress>,
    stall: Duration,
    min_rate: u64,
    grace: Duration,
    window_end: Instant,
    window_bytes: u64,
    last: Instant,
}

impl Pace {
    /// The pace of the upload holding `slot`, its first window starting now.
    pub fn new(slot: &SlotGuard, stall: Duration, lim: &Limits) -> Pace {
        let now = Instant::now();
        Pace {
            state: slot.state.clone(),
            progress: slot.progress.clone(),
            stall,
            min_rate: lim.min_rate,
            grace: lim.grace.max(Duration::from_millis(1)),
            window_end: now + lim.grace,
            window_bytes: 0,
            last: now,
        }
    }

    /// Reads what `s` has (at least one byte, 0 at its end) into `buf`.
    pub async fn read(&mut self, s: &mut Stream, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let now = Instant::now();
            if self.min_rate > 0 && now >= self.window_end {
                let need = (self.min_rate as f64 * self.grace.as_secs_f64()) as u64;
                if self.window_bytes < need {
                    self.state.count(|c| c.too_slow += 1);
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!(
                            "too slow: {} bytes in {:.1} s, below the receiver's minimum of {} bytes/s",
                            self.window_bytes,
                            self.grace.as_secs_f64(),
                            self.min_rate
                        ),
                    ));
                }
                self.window_end = now + self.grace;
                self.window_bytes = 0;
            }
            let stall_at = self.last + self.stall;
            let until = if self.min_rate > 0 {
                stall_at.min(self.window_end)
            } else {
                stall_at
            };
            if self.progress.evicted.load(Ordering::Relaxed) {
                return Err(self.evicted());
            }
            tokio::select! {
                r = tokio::time::timeout_at(until.into(), s.read(buf)) => match r {
                    Ok(Ok(n)) => {
                        self.last = Instant::now();
                        self.window_bytes += n as u64;
                        self.progress.read.fetch_add(n as u64, Ordering::Relaxed);
                        return Ok(n);
                    }
                    Ok(Err(e)) => return Err(e),
                    Err(_) if Instant::now() >= stall_at => {
                        return Err(std::io::Error::new(
                            std::io::ErrorKind::TimedOut,
                            format!("no progress for {:.1} s", self.stall.as_secs_f64()),
                        ))
                    }
                    Err(_) => {} // the window ended: check it
                },
                _ = self.progress.wake.notified() => {}
            }
        }
    }

    /// The upload's progress.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    fn evicted(&self) -> std::io::Error {
        self.state.count(|c| c.evicted += 1);
        std::io::Error::other(
            "dropped: the receiver is full and your address held more than its share of uploads",
        )
    }

    /// Fills `buf` from `s` (an early end is `UnexpectedEof`).
    pub async fn read_exact(&mut self, s: &mut Stream, buf: &mut [u8]) -> std::io::Result<()> {
        let mut at = 0;
        while at < buf.len() {
            let n = self.read(s, &mut buf[at..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            at += n;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim(max: usize, per: usize) -> Limits {
        Limits {
            max_uploads: max,
            max_per_source: per,
            ..Limits::default()
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_source_is_capped_and_a_full_table_gives_the_busiest_source_s_slowest_slot_away() {
        let mut t = Table::default();
        let l = lim(4, 3);
        let a = ip("10.0.0.1");
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(t.take(a, &l).ok().unwrap());
        }
        assert!(matches!(t.take(a, &l), Err(NoSlot::Source(3))));
        // One source moved bytes, the others trickled: the table fills up with B.
        held[0].1.read.store(1 << 30, Ordering::Relaxed);
        held[2].1.read.store(1 << 20, Ordering::Relaxed);
        let b = ip("10.0.0.2");
        let _b1 = t.take(b, &l).ok().unwrap();
        // C holds none while A holds 3: A's slowest slot (held[1]) goes to C.
        let _c1 = t.take(ip("10.0.0.3"), &l).ok().unwrap();
        assert!(held[1].1.evicted.load(Ordering::Relaxed));
        assert!(!held[0].1.evicted.load(Ordering::Relaxed));
        assert!(!held[2].1.evicted.load(Ordering::Relaxed));
        // Now A 2, B 1, C 1: B (holding 1) may not take from A (2 <= 1 + 1).
        assert!(matches!(t.take(b, &l), Err(NoSlot::Full(4))));
    }

    #[test]
    fn outstanding_bytes_shrink_as_they_are_written() {
        let mut t = Table::default();
        let (_, p) = t.take(ip("10.0.0.1"), &lim(4, 4)).ok().unwrap();
        assert_eq!(t.outstanding(), 0);
        p.reserved.store(1000, Ordering::Relaxed);
        p.written.store(300, Ordering::Relaxed);
        assert_eq!(t.outstanding(), 700);
    }

    #[test]
    fn ipv6_sources_are_their_64_and_mapped_ipv4_is_ipv4() {
        assert_eq!(
            source_of(ip("2001:db8::1")),
            source_of(ip("2001:db8::ffff:2"))
        );
        assert_ne!(
            source_of(ip("2001:db8::1")),
            source_of(ip("2001:db8:0:1::1"))
        );
        assert_eq!(source_of(ip("::ffff:10.0.0.1")), ip("10.0.0.1"));
    }
}
