//! Connection and endpoint configuration (the defaults table of `docs/spec.md`).

use crate::cc::{rate_from_gbps, CcConfig, StrideParams};

/// Which STT the receiver echoes in an ACK that covers many packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum EchoPolicy {
    /// The STT of the last in-order packet before the ACK (freshest signal).
    Last,
    /// The smallest STT seen since the previous ACK (filters timestamp noise).
    Min,
}

/// How lost data is repaired (spec §6.3, §6.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum Recovery {
    /// Offered in the handshake; with a peer that offers it too, the receiver keeps data that
    /// arrives beyond a gap (within its window) and its NACKs name the missing ranges, which
    /// the sender resends alone. With a peer that does not, exactly [`Recovery::GoBackN`].
    Selective,
    /// The paper's recovery: the receiver drops data beyond a gap, one NACK per gap, and the
    /// sender resends everything from the first missing byte.
    GoBackN,
}

impl Recovery {
    /// The configuration name (`selective`, `go-back-n`).
    pub fn name(self) -> &'static str {
        match self {
            Recovery::Selective => "selective",
            Recovery::GoBackN => "go-back-n",
        }
    }
}

impl std::str::FromStr for Recovery {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "selective" => Ok(Recovery::Selective),
            "go-back-n" | "gbn" => Ok(Recovery::GoBackN),
            _ => Err(format!(
                "recovery: unknown value {s:?} (expected \"selective\" or \"go-back-n\")"
            )),
        }
    }
}

/// Configuration shared by every connection of an endpoint. Times in ns, sizes in bytes.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest payload per DATA packet (1440 gives 1500-byte IPv4 packets).
    pub max_payload: u16,
    /// Acknowledge after this many in-order bytes (the paper's 64 KB data segment).
    pub ack_interval: u32,
    /// Acknowledge received data at the latest this long after it arrived.
    pub delayed_ack_ns: u64,
    /// While a gap persists, repeat its NACK after this long.
    pub nack_retry_ns: u64,
    /// Selective recovery: while segments are held and more arrive beyond the holes, repeat
    /// the NACK after this long instead of `nack_retry_ns` (a lost resend is then asked for
    /// again within a few round trips, not after half a millisecond). Default 50 us.
    pub nack_repeat_ns: u64,
    /// Retransmission timeout before any RTT sample (also the SYN timeout).
    pub initial_rto_ns: u64,
    /// Lower bound of the retransmission timeout.
    pub min_rto_ns: u64,
    /// Upper bound of the backed-off retransmission timeout.
    pub max_rto_ns: u64,
    /// Handshake retransmissions after which connecting fails with `TimedOut`; also the least
    /// number of consecutive data timeouts before an established connection gives up. Default 8:
    /// with `initial_rto_ns` 20 ms doubling to `max_rto_ns` 1 s (each SYN timer spread by up to
    /// an eighth either way, spec §6.6) the SYN is resent for 3.7 to 4.8 s; 14 gives 9.0 to 11.5 s
    /// (`stride send`'s setting, for receivers overloaded by hundreds of concurrent starts).
    pub max_retries: u32,
    /// Give-up time of an established connection: it fails with `TimedOut` (and sends RST)
    /// once sent data has gone unacknowledged through consecutive retransmission timeouts for
    /// this long (and at least `max_retries` of them). Default 30 s.
    pub give_up_ns: u64,
    /// Close when nothing has been received for this long (keepalives are sent at a quarter).
    pub idle_timeout_ns: u64,
    /// How long a finished connection stays to re-acknowledge a retransmitted FIN; must cover
    /// the peer's retransmission span (default 2 x `max_rto_ns`, like TCP's TIME_WAIT).
    pub linger_ns: u64,
    /// Send buffer (bytes written but not yet acknowledged).
    pub send_buffer: usize,
    /// Receive buffer (bytes delivered in order but not yet read).
    pub recv_buffer: usize,
    /// Pacing bucket depth: bytes that may leave back to back after an idle period.
    pub burst_bytes: u32,
    /// Pacing quantum: the bucket holds at least this long at the current rate (bounded by
    /// [`crate::conn::PACING_QUANTUM_MAX_BYTES`]), so a software sender that runs in turns
    /// of up to this long keeps its rate (0: `burst_bytes` alone, the protocol's behaviour).
    pub burst_min_ns: u64,
    /// Congestion controller.
    pub cc: CcConfig,
    /// STT echo choice.
    pub echo: EchoPolicy,
    /// Loss recovery: selective (negotiated, default) or the paper's go-back-N.
    pub recovery: Recovery,
    /// Selective recovery: most out-of-order segments a receiver keeps per connection (their
    /// bytes are bounded by the receive window as well); arrivals beyond are dropped (counted).
    pub ooo_max_segments: usize,
    /// A receiver sends a congestion notification (`ACK|CN`, DCQCN's CNP) when a CE-marked
    /// DATA packet arrives, at most once per this interval (DCQCN's N = 50 us; 0: never).
    pub cnp_interval_ns: u64,
    /// Largest number of connections an endpoint holds (new handshakes are refused beyond it).
    pub max_connections: usize,
    /// Largest number of accepted connections from one IP address (its further handshakes are
    /// refused), so one host cannot take every slot.
    pub max_per_source: usize,
    /// An established connection on which no payload or FIN moved either way for this long
    /// after its handshake is closed (RST); keepalives do not keep it. Default 10 s.
    pub unused_timeout_ns: u64,
    /// RST replies to unknown connections per second (token bucket, burst of the same size).
    pub rst_per_sec: u32,
    /// Take an RTT sample from the handshake when the SYN-ACK echoes the SYN's STT (spec
    /// §8.6); off in the `stride-paper` profile, whose first RTO is `initial_rto_ns`.
    pub handshake_rtt: bool,
    /// Receive share (spec §8.6 `rx_share`): with n connections of this endpoint
    /// receiving data, each advertises at most `rx_share >> ceil(log2 n)` bytes of window (and
    /// acknowledges every half of it), so the senders into one receiver hold at most about
    /// `rx_share` bytes in flight together. 0: off (the window is the free receive buffer).
    pub rx_share: u32,
    /// ACKs ride on DATA (spec §6.4): an ACK due for fewer than an ACK interval of bytes (at
    /// a message end, by the delayed-ACK timer or as a window update) is not sent on its own
    /// when DATA leaves at that moment, since the DATA's `ack` and `window` fields carry it,
    /// provided a pure ACK (whose `echo_stt` is the peer's STT and RTT sample) left within
    /// this long. One datagram each way per request/response exchange instead of two.
    /// 0: off (every due ACK is a pure ACK, as in the paper).
    pub ack_ride_ns: u64,
    /// Send batch (spec §9): a sender with at least this many bytes ready to send (queued
    /// and within the window) waits until the pacer allows this many at once (at most half
    /// the pacing bucket), then sends them back to back: a software host then makes one
    /// system call (one GSO message) per batch instead of one per packet, at the same rate.
    /// The burst stays within the bucket. 0: off (each packet leaves as soon as the pacer
    /// allows it, as in the paper).
    pub send_batch_bytes: u32,
}

impl Config {
    /// Defaults for a host whose NIC runs at `gbps`.
    pub fn for_line_rate_gbps(gbps: f64) -> Self {
        let line = rate_from_gbps(gbps);
        Config {
            max_payload: 1440,
            ack_interval: 64 * 1024,
            delayed_ack_ns: 50_000,
            nack_retry_ns: 500_000,
            nack_repeat_ns: 50_000,
            initial_rto_ns: 20_000_000,
            min_rto_ns: 1_000_000,
            max_rto_ns: 1_000_000_000,
            max_retries: 8,
            give_up_ns: 30_000_000_000,
            idle_timeout_ns: 30_000_000_000,
            linger_ns: 2_000_000_000,
            send_buffer: 4 << 20,
            recv_buffer: 4 << 20,
            burst_bytes: 16 * 1024,
            burst_min_ns: 0,
            cc: CcConfig::stride(StrideParams::for_line_rate(line)),
            echo: EchoPolicy::Last,
            recovery: Recovery::Selective,
            ooo_max_segments: 4096,
            cnp_interval_ns: 50_000,
            max_connections: 65_536,
            max_per_source: 1_024,
            unused_timeout_ns: 10_000_000_000,
            rst_per_sec: 1_000,
            handshake_rtt: true,
            // 52 µs at the line rate (64 KiB at 10 Gbit/s): above a fat tree's base BDP (~34 KB
            // at 10 Gbit/s), below t_high of queue (docs/results.md, "Incast").
            rx_share: (((gbps * 6553.6) as u32) >> 10 << 10).max(4096),
            ack_ride_ns: 0,
            send_batch_bytes: 0,
        }
    }

    /// The `stride-paper` profile for a host at `gbps`: Algorithm 1 exactly as spec §8.4 with
    /// go-back-N and none of the profile mechanisms of spec §8.6 (controller or connection).
    pub fn paper(gbps: f64) -> Self {
        Config::for_line_rate_gbps(gbps).into_paper()
    }

    /// These settings with every profile mechanism (spec §8.6) off (controller and connection).
    pub fn into_paper(mut self) -> Self {
        if let Some(p) = self.cc.params_ref::<StrideParams>().copied() {
            self.cc = CcConfig::stride(p.without_mechanisms());
        }
        self.handshake_rtt = false;
        self.rx_share = 0;
        self.recovery = Recovery::GoBackN;
        self.ack_ride_ns = 0;
        self.send_batch_bytes = 0;
        self
    }

    /// Checks the configuration; returns the bad field and why.
    pub fn validate(&self) -> Result<(), (&'static str, &'static str)> {
        if self.max_payload == 0 || usize::from(self.max_payload) > 65_507 - crate::wire::HEADER_LEN
        {
            return Err(("max_payload", "must be in 1..=65475"));
        }
        if self.ack_interval == 0 {
            return Err(("ack_interval", "must be positive"));
        }
        if self.min_rto_ns == 0 || self.min_rto_ns > self.max_rto_ns {
            return Err(("min_rto_ns", "must be positive and at most max_rto_ns"));
        }
        if self.initial_rto_ns == 0 {
            return Err(("initial_rto_ns", "must be positive"));
        }
        if self.send_buffer == 0 || self.send_buffer > (1 << 30) {
            return Err(("send_buffer", "must be in 1..=2^30"));
        }
        if self.recv_buffer < usize::from(self.max_payload) || self.recv_buffer > (1 << 30) {
            return Err(("recv_buffer", "must hold one packet and be at most 2^30"));
        }
        if self.unused_timeout_ns == 0 {
            return Err(("unused_timeout_ns", "must be positive"));
        }
        if self.max_per_source == 0 {
            return Err(("max_per_source", "must be positive"));
        }
        if self.give_up_ns == 0 {
            return Err(("give_up_ns", "must be positive"));
        }
        if self.idle_timeout_ns == 0 {
            return Err(("idle_timeout_ns", "must be positive"));
        }
        self.cc.validate()?;
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config::for_line_rate_gbps(10.0)
    }
}
