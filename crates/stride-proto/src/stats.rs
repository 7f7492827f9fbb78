//! Per-connection counters and a small log-linear histogram of queueing delay.

/// Log-linear histogram of non-negative values (8 sub-buckets per power of two, so any
/// percentile is reported within 12.5 %), fixed size: its 1 KiB of buckets is allocated at the
/// first sample (so a connection that never carries data keeps a small record), none after.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    buckets: Option<Box<[u32; 256]>>,
    count: u64,
    max: u64,
}

fn bucket_of(v: u64) -> usize {
    if v < 8 {
        return v as usize;
    }
    let p = 63 - v.leading_zeros() as usize; // >= 3
    let sub = ((v >> (p - 3)) & 7) as usize;
    ((p - 2) * 8 + sub).min(255)
}

fn bucket_low(i: usize) -> u64 {
    if i < 8 {
        return i as u64;
    }
    let p = i / 8 + 2;
    let sub = (i % 8) as u64;
    (8 + sub) << (p - 3)
}

impl Histogram {
    /// Adds one value.
    pub fn record(&mut self, v: u64) {
        self.buckets.get_or_insert_with(|| Box::new([0; 256]))[bucket_of(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }
    /// Number of values.
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Largest value.
    pub fn max(&self) -> u64 {
        self.max
    }
    /// Adds another histogram's values.
    pub fn merge(&mut self, o: &Histogram) {
        if let Some(ob) = &o.buckets {
            let mine = self.buckets.get_or_insert_with(|| Box::new([0; 256]));
            for (a, b) in mine.iter_mut().zip(ob.iter()) {
                *a += b;
            }
        }
        self.count += o.count;
        self.max = self.max.max(o.max);
    }
    /// The lower edge of the bucket holding quantile `q` in `0.0..=1.0`; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let Some(buckets) = &self.buckets else {
            return 0;
        };
        let mut seen = 0u64;
        for (i, &c) in buckets.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                return bucket_low(i).min(self.max);
            }
        }
        self.max
    }
}

/// Counters of one connection.
#[derive(Clone, Debug, Default)]
pub struct ConnStats {
    /// Datagrams sent (all kinds).
    pub packets_sent: u64,
    /// DATA packets sent.
    pub data_packets_sent: u64,
    /// DATA packets that resent bytes already sent once.
    pub retransmitted_packets: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Datagrams received and accepted by this connection.
    pub packets_received: u64,
    /// In-order payload bytes delivered to the receive buffer.
    pub bytes_received: u64,
    /// ACKs sent (NACKs not included).
    pub acks_sent: u64,
    /// ACKs that rode on a DATA packet instead of leaving as pure ACKs (spec §6.4,
    /// `Config::ack_ride_ns`); not in `acks_sent`.
    pub acks_ridden: u64,
    /// NACKs sent.
    pub nacks_sent: u64,
    /// ACKs received that acknowledged new data.
    pub acks_received: u64,
    /// NACKs received (a plain one restarts sending from its `ack`: go-back-N).
    pub nacks_received: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// CE-marked DATA packets received (the receiver's count that ACKs echo).
    pub ce_received: u64,
    /// CE marks echoed by the peer's ACKs (the sender's view).
    pub ce_echoed: u64,
    /// Congestion notifications (`ACK|CN`) sent.
    pub cnps_sent: u64,
    /// Congestion notifications received.
    pub cnps_received: u64,
    /// DATA packets dropped because they were beyond a gap (go-back-N, or selective recovery
    /// with no room: beyond the window or [`crate::Config::ooo_max_segments`]).
    pub out_of_order_dropped: u64,
    /// Selective recovery: DATA packets beyond a gap whose new bytes were kept.
    pub out_of_order_kept: u64,
    /// Selective recovery: most bytes held beyond a gap at once (the receive buffer bounds
    /// them: in-order unread bytes plus these never exceed it).
    pub out_of_order_bytes_max: u64,
    /// Missing ranges named in the selective NACKs sent.
    pub nack_ranges_sent: u64,
    /// Missing ranges received in selective NACKs and resent (each at most once per
    /// round trip).
    pub nack_ranges_resent: u64,
    /// Selective NACK ranges refused: outside what was sent and unacknowledged, empty,
    /// overlapping or out of order (the NACK's ranges are then ignored; its `ack` still counts).
    pub nack_ranges_rejected: u64,
    /// DATA packets that carried bytes already received.
    pub duplicates: u64,
    /// In-order DATA packets dropped because the receive buffer had no room (the sender
    /// overran the advertised window).
    pub window_dropped: u64,
    /// Smallest STT echoed to this sender (raw, includes any clock offset).
    pub stt_min: Option<u32>,
    /// Smoothed RTT estimate (ns).
    pub srtt_ns: u64,
    /// Entries of the controller into its competitive mode (spec §8.7; 0 for controllers
    /// without one).
    pub cc_mode_switches: u32,
    /// Time the controller spent in its competitive mode, ns, up to its latest event.
    pub cc_competitive_ns: u64,
    /// Queueing delay per ACK, ns: the echoed STT minus [`ConnStats::stt_min`], the smallest STT
    /// echoed on this connection so far (an all-time minimum; the controller itself uses a
    /// windowed minimum that ages out, spec §8.4, so the two can differ after clock drift or a
    /// route change).
    pub queue_delay: Histogram,
    /// Per DATA packet sent while backlogged: how long after the pacer's release time it was
    /// produced (`now` passed to `poll_transmit` minus the release time), ns. Measures how
    /// closely the caller's clock and wake-ups follow the pacer.
    pub pacing_lateness: Histogram,
    /// Pacer time forfeited while backlogged, ns: for each DATA packet sent after the sender
    /// had data and window since its previous packet, how far the bucket had overflowed
    /// (`now − burst` past the virtual departure time). Divided by the connection's lifetime,
    /// the share of the paced rate lost to turns that came later than the bucket covers
    /// (idle time, when nothing could be sent, is not counted).
    pub pacing_forfeit_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_monotonic_and_tight() {
        let mut last = 0;
        for v in 0..100_000u64 {
            let b = bucket_of(v);
            assert!(b >= last);
            last = b;
            let lo = bucket_low(b);
            assert!(lo <= v, "v {v} bucket {b} low {lo}");
            assert!(v - lo <= v / 8 + 1, "v {v} low {lo}");
        }
    }

    #[test]
    fn quantiles() {
        let mut h = Histogram::default();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        let p50 = h.quantile(0.5);
        assert!((440_000..=500_000).contains(&p50), "{p50}");
        let p99 = h.quantile(0.99);
        assert!((860_000..=990_000).contains(&p99), "{p99}");
        assert_eq!(h.max(), 1_000_000);
        assert_eq!(Histogram::default().quantile(0.5), 0);
    }
}

#[cfg(test)]
mod record_size {
    use super::*;

    #[test]
    fn an_idle_connection_keeps_small_statistics() {
        // The two histograms held 2 KiB of buckets in every connection record, used or not.
        assert!(std::mem::size_of::<ConnStats>() < 512);
        let mut h = Histogram::default();
        assert_eq!(h.quantile(0.99), 0);
        for v in [10, 20, 30, 40_000] {
            h.record(v);
        }
        assert_eq!((h.count(), h.max()), (4, 40_000));
        assert_eq!(h.quantile(0.5), 20);
        let mut m = Histogram::default();
        m.merge(&h);
        assert_eq!(m.quantile(1.0), h.quantile(1.0));
    }
}
