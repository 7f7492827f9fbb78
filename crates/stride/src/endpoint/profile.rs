//! The host profile: the protocol's defaults adjusted for a software stack on a
//! general-purpose OS ([`host_config`]), and the constants it sets.

use stride_proto::Config;

/// Host-stack tuning of T_low (see [`host_config`]).
pub const HOST_T_LOW_NS: u32 = 60_000;
/// Host-stack tuning of T_high (see [`host_config`]).
pub const HOST_T_HIGH_NS: u32 = 300_000;
/// Host-stack gradient normaliser: 2^19 ns = 524 µs (see [`host_config`]).
pub const HOST_NORM_SHIFT: u8 = 19;
/// The competitive mode's growth, `2^HOST_COMPETE_AI` bytes per RTT per RTT (the protocol's
/// default): through the testbed's 200 Mbit/s bottleneck, with a quarter cut, STRIDE carried
/// 108 Mbit/s against cubic's 78 (Jain 0.97) and 65 against bbr's 121 (0.92), medians of
/// three; at 2^10, 143 against 46 and 77 against 111 (0.79, 0.97), at 2^10 with halving 124
/// against 64 next to cubic (0.91), single runs (spec §8.7, docs/results.md).
pub const HOST_COMPETE_AI: u8 = 9;
/// The competitive mode's cut per loss episode, `rate >> HOST_COMPETE_MD`: a quarter, as
/// the kernel's cubic (beta 0.7) which a software host meets (spec §8.7, §11.1).
pub const HOST_COMPETE_MD: u8 = 2;
/// Time without a drained sample before the competitive mode (spec §8.7, §11.1): a few
/// round trips of a software path behind a full queue (64 KiB at 200 Mbit/s is 2.6 ms).
pub const HOST_COMPETE_AFTER_NS: u32 = 50_000_000;
/// Time the queue must stay drained, the rate held, before the delay mode again.
pub const HOST_COMPETE_HOLD_NS: u32 = 20_000_000;
/// The host profile's first window, at least, in datagrams of `max_payload` (spec §8.6
/// `first_window`, §11.1): ten, as the initial window of kernel TCP, which a software host
/// meets (RFC 6928 §2: min(10 MSS, max(2 MSS, 14 600 bytes))). The protocol's 13 µs of line
/// is 4 KiB (its floor) at 200 Mbit/s, under a third of what TCP sends in its first round trip.
pub const HOST_FIRST_WINDOW_PACKETS: u32 = 10;
/// Host-stack pacing bucket depth, at least (see [`host_config`]).
pub const HOST_BURST_BYTES: u32 = 8 * 1024;
/// Host-stack pacing bucket depth in time at the line rate, at least (see [`host_config`]).
pub const HOST_BURST_NS: u64 = 10_000;
/// Host-stack pacing quantum (see [`host_config`]).
pub const HOST_PACING_QUANTUM_NS: u64 = 50_000;
/// Host-stack floor of the retransmission timeout (see [`host_config`]).
pub const HOST_MIN_RTO_NS: u64 = 10_000_000;
/// Host-stack delayed-ACK backstop (see [`host_config`]).
pub const HOST_DELAYED_ACK_NS: u64 = 100_000;
/// Host-stack ACK riding (see [`host_config`]): at least one pure ACK per millisecond.
pub const HOST_ACK_RIDE_NS: u64 = 1_000_000;
/// Host-stack send batch of a sender pinned at a rate (`Config::send_batch_bytes`, spec §9;
/// applied by [`crate::ControllerOverrides`] with the `fixed` controller, not by [`host_config`]): up to
/// one GSO message, within the room the pacing bucket leaves. Where 64 KiB last at least two
/// pacing quanta (rates up to ~5 Gbit/s), the bucket holds a batch plus a quantum (spec §9), so
/// the sender sleeps a batch at a time: pinned at 1 Gbit/s it uses 0.30 cores instead of 0.99,
/// at 100 Mbit/s 0.04 instead of 0.27, at the same goodput (docs/results.md, "What the host settings buy").
/// Not under a controller that reads delay: a batch reaches the bottleneck as a burst whose
/// queueing is in every STT sample of its packets (`stride demo` fell from 0.64 to 0.48 of the
/// bottleneck with batches; docs/results.md, "What the host settings buy").
pub const HOST_SEND_BATCH_BYTES: u32 = 64 * 1024;

/// The host profile's receive share (spec §8.6 `rx_share`, §11.1): with two or more peers
/// sending to one endpoint (one socket), they hold at most about 2 MiB in flight together
/// (each `2 MiB >> ceil(log2 n)`); a lone sender is not limited. On a software host the queue
/// that matters is the socket's receive queue, which the kernel's receive stamp does not see
/// (see [`EndpointConfig::read_delay_slack_ns`]): when the receiving thread falls behind (it
/// shares the cores with the senders), only the window bounds that queue. Without a share each
/// peer may have its whole receive window (4 MiB) in flight, a few together overflow the
/// socket, and every overflow costs a timeout and a go-back-N resend that lands in the same
/// full queue: 8 loopback connections into a 2-socket server on 2 cores moved 3–5 Gbit/s with
/// 0.3–1 million resends and 300–800 timeouts per GB; with the share 10.7–13 Gbit/s and under
/// 1 400 resends (docs/results.md, "What the host settings buy").
/// [`Endpoint::bind_with`] lowers the share further to a quarter of the socket buffer the
/// kernel granted, so a datagram's kernel overhead (about 1.6x its payload) and a resend of
/// what is still queued both fit.
///
/// [`EndpointConfig::read_delay_slack_ns`]: super::EndpointConfig::read_delay_slack_ns
/// [`Endpoint::bind_with`]: super::Endpoint::bind_with
pub const HOST_RX_SHARE: u32 = 2 << 20;

/// The protocol's defaults for a host whose NIC runs at `line_bps`, adjusted for a software
/// stack on a general-purpose OS:
///
/// - T_low / T_high ([`HOST_T_LOW_NS`], [`HOST_T_HIGH_NS`]) sit above the noise of software
///   timestamps: the transmit stamp is taken in user space before `sendmmsg` and the receive
///   stamp by the kernel, so scheduling puts tens of µs of jitter into every STT sample (the
///   protocol's 5 µs / 80 µs assume NIC timestamps);
/// - the gradient is normalised by 2^[`HOST_NORM_SHIFT`] ns (524 µs, above T_high) instead of
///   2^13: timestamp noise alone moves a software STT by a few µs from one sample to the next,
///   and against 8 µs (or even 33 µs) that reads as a steep rising gradient whose cut (1/8 and
///   more per ACK) the additive increase cannot repay, so the sender idles below the bottleneck
///   (`stride demo`: 73–86 % utilization at 2^15 against 91–98 % at 2^19, same queue p99).
///   Against 524 µs the same noise costs under 1 % per sample, about what one gradient-increase
///   step gives back, while a queue growing by T_high per sample still halves the rate;
/// - the retransmission timeout floor ([`HOST_MIN_RTO_NS`]) covers scheduler stalls: on a
///   loaded machine a thread can wait several milliseconds for a core, and with a 1 ms floor
///   such a stall fires spurious timeouts whose go-back-N resends waste the link. Losses in a
///   flow are still repaired at once by NACK; only a lost tail waits for the timer;
/// - the pacing bucket holds [`HOST_BURST_BYTES`] (8 KiB) or [`HOST_BURST_NS`] (10 µs) at the
///   line rate, whichever is more, instead of 16 KiB: a software sender is descheduled now and
///   then and spends its bucket at once when it runs again, and a bucket's worth arriving back
///   to back at a bottleneck of the sender's rate is that much queue (16 KiB = 131 µs at
///   1 Gbit/s; 8 KiB took the demo's p99 from 74–98 to 66 µs). At high line rates the bucket
///   must still cover the driver's turnaround between two sends, or pacing caps the rate (a
///   flat 8 KiB cost a quarter of the loopback goodput at a 40 Gbit/s line);
/// - the bucket also holds at least [`HOST_PACING_QUANTUM_NS`] (50 µs) at the *current* rate,
///   capped at one GSO message (64 KiB): a driver turn (send a batch, yield, look again) on a
///   shared core often takes longer than 10 µs, and every µs beyond the bucket is rate lost
///   for good (a sender pinned at 5 and 10 Gbit/s delivered 0.57 and 0.49 of its rate with
///   the 8 KiB / 10 µs bucket). At rates of 1.3 Gbit/s and below 8 KiB is the larger, so the
///   1 Gbit/s relay figures keep their bucket; a 10 Gbit/s sender slowed by its controller
///   to 1 Gbit/s has a 65 µs (8 KiB) bucket, not 50 µs at its line rate;
/// - an ACK due for less than an ACK interval rides on DATA leaving at the same moment
///   (spec §6.4, [`HOST_ACK_RIDE_NS`]: a pure ACK, the peer's STT and RTT sample, still leaves
///   at least once per millisecond): a request/response exchange is one datagram each way,
///   not two (the ACK held for the response, see [`ACK_HOLD_NS`], then costs nothing);
/// - with two or more peers sending to the endpoint, their windows share [`HOST_RX_SHARE`]
///   (2 MiB) instead of the protocol's 52 µs of line: software RTTs are hundreds of µs, and the
///   bound is there for the socket's receive queue, not a switch port;
/// - the first window (spec §8.6) is at least [`HOST_FIRST_WINDOW_PACKETS`] datagrams, kernel
///   TCP's initial window: software round trips are hundreds of µs, and at the rates a host
///   sends through (hundreds of Mbit/s) the protocol's 13 µs of line is a few KiB;
/// - the receiver's delayed-ACK backstop is [`HOST_DELAYED_ACK_NS`] (100 µs) instead of 50 µs.
///   ACKs still go every 64 KB and at once on PSH (the end of what the sender had queued), so
///   the backstop only decides how often a paced flow below 64 KB per 50 µs (10 Gbit/s) is
///   sampled, and each sample moves the rate by a fixed step (line/64 up, 1/8 down). With 50 µs
///   a 10 Gbit/s sender slowed to a 1 Gbit/s bottleneck is sampled ten times per 64 KB: it
///   climbs 10x faster than the paper's ACK-per-64 KB and, after the overshoot, keeps cutting
///   1/8 per sample while the queue it built drains, from 1.9 down to 0.06 Gbit/s, every few
///   ms. In the simulator's model of `stride demo --line-rate 10gbit`
///   (`scenarios/relay-10g-1g.toml`, docs/results.md) utilization goes from 88 % to 93 % at
///   100 µs and 94 % at 200 µs; through the UDP relay 200 µs lowered the demo's own figure
///   (sender line = bottleneck: 0.86 against 0.92 median of 8 interleaved runs) while 100 µs
///   raised both (0.96 against 0.90 at a 1 Gbit/s line, 0.91 against 0.88 at 10 Gbit/s).
///
/// [`ACK_HOLD_NS`]: super::ACK_HOLD_NS
pub fn host_config(line_bps: u64) -> Config {
    let mut c = Config::for_line_rate_gbps(line_bps as f64 / 1e9);
    c.min_rto_ns = HOST_MIN_RTO_NS;
    let line_burst = (line_bps / 8).saturating_mul(HOST_BURST_NS) / 1_000_000_000;
    c.burst_bytes = HOST_BURST_BYTES.max(line_burst.min(1 << 20) as u32);
    c.burst_min_ns = HOST_PACING_QUANTUM_NS;
    c.delayed_ack_ns = HOST_DELAYED_ACK_NS;
    c.ack_ride_ns = HOST_ACK_RIDE_NS;
    if let Some(p) = c.cc.params_mut::<stride_proto::cc::StrideParams>() {
        p.t_low = HOST_T_LOW_NS;
        p.t_high = HOST_T_HIGH_NS;
        p.norm_shift = HOST_NORM_SHIFT;
        // The receive share is off for software hosts (below), so the start grant stays on.
        p.grant = true;
        // Software STT noise reaches past t_low: a NACK cuts only behind t_high of queue.
        p.gate_high = true;
        // The competitive mode (on, as in the protocol's profile), its clocks scaled to
        // software noise and round trips of hundreds of µs. Alone, a software sender's 8 KiB
        // pacing bursts read as more than half of `t_high` for long stretches; the mode waits
        // for the rate to back off (`compete_backoff`), which they never make it do.
        p.compete = true;
        p.compete_after = HOST_COMPETE_AFTER_NS;
        p.compete_md = HOST_COMPETE_MD;
        p.compete_ai = HOST_COMPETE_AI;
        p.compete_hold = HOST_COMPETE_HOLD_NS;
        p.first_window = p
            .first_window
            .max(HOST_FIRST_WINDOW_PACKETS * u32::from(c.max_payload));
    }
    // Software RTTs are hundreds of µs: a 52 µs receive share would throttle concurrent
    // senders, but some share must keep them within the socket's buffer (spec §8.6 `rx_share`,
    // §11.1).
    c.rx_share = HOST_RX_SHARE;
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_profile_holds_nacks_below_t_high() {
        use stride_proto::cc::Controller;
        // A NACK after a sample 100 us above the minimum (past the host's t_low, below its
        // t_high): random loss on a noisy host, not congestion, so the rate stays.
        let cfg = host_config(1_000_000_000);
        let p = *cfg
            .cc
            .params_ref::<stride_proto::cc::StrideParams>()
            .unwrap();
        let mut c = stride_proto::cc::Stride::new(p);
        c.on_sample(1_000_000);
        c.on_sample(1_100_000);
        let r = c.rate();
        c.nack();
        assert_eq!(c.rate(), r);
        // The core's default (NIC stamps) cuts there.
        let core = stride_proto::Config::for_line_rate_gbps(1.0);
        let mut q = *core
            .cc
            .params_ref::<stride_proto::cc::StrideParams>()
            .unwrap();
        (q.t_low, q.t_high) = (p.t_low, p.t_high);
        let mut c = stride_proto::cc::Stride::new(q);
        c.on_sample(1_000_000);
        c.on_sample(1_100_000);
        let r = c.rate();
        c.nack();
        assert!(c.rate() < r);
    }
}
