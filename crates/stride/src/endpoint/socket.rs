//! The endpoint's UDP socket: opened and bound with what the kernel grants (buffers,
//! timestamps, GRO, ECN and DSCP, drop counting), the protocol configuration fitted to it (receive share
//! and window, connection limit), and the payload the route to a peer carries.

use super::EndpointConfig;
use crate::error::{Error, Result};
use crate::sys;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use stride_proto::Config;

/// What the socket ended up with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketInfo {
    /// Local address.
    pub local: SocketAddr,
    /// Receive buffer the kernel granted (bytes).
    pub recv_buffer: usize,
    /// Send buffer the kernel granted (bytes).
    pub send_buffer: usize,
    /// Whether kernel receive timestamps are on.
    pub kernel_timestamps: bool,
    /// Whether UDP GRO is on (the kernel hands over runs of datagrams as one message).
    pub gro: bool,
    /// The receive share in force (spec §8.6 `rx_share`, bytes; 0: off): the configured one,
    /// at most a quarter of `recv_buffer` (see [`HOST_RX_SHARE`](super::HOST_RX_SHARE)).
    pub rx_share: u32,
    /// Each connection's receive buffer, the most it advertises as window: the configured
    /// `Config::recv_buffer`, at most an eighth of `recv_buffer` (at least 64 KiB), so what a
    /// peer may have in flight fits the socket even when this endpoint falls behind, and the
    /// first windows of a burst of starts (before the share counts its senders) do too.
    pub conn_recv_buffer: usize,
}

/// The largest DATA payload the route to `remote` carries in one datagram (its interface's
/// MTU, `IP_MTU`), when the kernel tells.
pub(crate) fn route_payload(remote: SocketAddr) -> Option<u16> {
    sys::path_mtu(remote)
        .and_then(|mtu| max_payload_for_mtu(mtu, remote.is_ipv6() && !is_v4_mapped(remote)))
}

/// Lowers every connection's payload to what the route to its peer carries now: after a
/// send was refused as too big ([`sys::too_big`]: an ICMP message lowered the route's MTU
/// below the payload the connection started with), so that its next datagrams, resends
/// included, fit instead of being refused again. One route lookup per peer; returns how
/// many connections' payloads went down.
pub(crate) fn refit_payloads(ep: &mut stride_proto::Endpoint) -> usize {
    let handles: Vec<_> = ep.handles().collect();
    let mut fits: Vec<(SocketAddr, Option<u16>)> = Vec::new();
    let mut lowered = 0;
    for h in handles {
        let Some(remote) = ep.remote(h) else {
            continue;
        };
        let fit = match fits.iter().find(|(r, _)| *r == remote) {
            Some(&(_, f)) => f,
            None => {
                let f = route_payload(remote);
                fits.push((remote, f));
                f
            }
        };
        if let (Some(fit), Some(c)) = (fit, ep.conn(h)) {
            if c.max_payload() > fit {
                ep.limit_payload(h, fit);
                lowered += 1;
            }
        }
    }
    lowered
}

/// An IPv4 peer written as an IPv6 address (`::ffff:a.b.c.d`, on a dual-stack socket): its
/// packets carry IPv4 headers.
fn is_v4_mapped(a: SocketAddr) -> bool {
    matches!(a, SocketAddr::V6(v6) if v6.ip().to_ipv4_mapped().is_some())
}

/// The payload per datagram ([`Config::max_payload`]) that fills a path MTU of `mtu` bytes:
/// the MTU less the IP header (20 bytes, 40 for IPv6), the UDP header (8) and STRIDE's
/// ([`stride_proto::wire::HEADER_LEN`]). `None` when nothing fits (or the datagram would pass
/// UDP's 65 507-byte limit). The default payload, 1440 bytes, fits a 1500-byte IPv4 MTU;
/// `9000` (jumbo frames) gives 8940, and loopback's 65 536 the UDP limit less the header.
///
/// ```
/// assert_eq!(stride::max_payload_for_mtu(9000, false), Some(8940));
/// assert_eq!(stride::max_payload_for_mtu(9000, true), Some(8920));
/// assert_eq!(stride::max_payload_for_mtu(60, false), None);
/// ```
pub fn max_payload_for_mtu(mtu: u32, ipv6: bool) -> Option<u16> {
    let ip = if ipv6 { 40 } else { 20 };
    let p = u64::from(mtu)
        .min(65_535)
        .checked_sub(ip + 8 + stride_proto::wire::HEADER_LEN as u64)?;
    let p = p.min(65_507 - stride_proto::wire::HEADER_LEN as u64);
    (p > 0).then_some(p as u16)
}

/// The receive share and each connection's receive buffer for a socket whose kernel-granted
/// receive buffer is `socket_rcvbuf` (0: not reported, both kept as configured). What peers
/// have in flight toward the socket stays within a quarter of its buffer (the kernel reports
/// the doubled figure it charges each datagram's full size against, about 1.6x the payload):
/// a lone sender through its window (an eighth, at least 64 KiB: a burst of starts gets first
/// windows of up to twice that before the share counts them), several through the share (a
/// quarter, at least 1 KiB; 0 stays off). Then neither kernel overhead nor a resend of what is
/// still queued overflows it, however late the driver reads.
fn fit_to_socket(socket_rcvbuf: usize, rx_share: u32, recv_buffer: usize) -> (u32, usize) {
    if socket_rcvbuf == 0 {
        return (rx_share, recv_buffer);
    }
    let quarter = socket_rcvbuf / 4;
    let share_cap = u32::try_from(quarter).unwrap_or(u32::MAX).max(1024);
    (
        rx_share.min(share_cap),
        recv_buffer.min((quarter / 2).max(64 << 10)),
    )
}

/// Memory an endpoint budgets per connection when it derives its connection limit: the fixed
/// record plus an idle connection's buffers (each side keeps up to 64 KiB once drained).
pub const CONN_MEMORY_BUDGET: u64 = 160 * 1024;

/// The connection limit an endpoint applies: the configured one, capped so that that many
/// connections fit in half of `mem_available` bytes at [`CONN_MEMORY_BUDGET`] each (at least
/// 64). A connection moving data may use its full send and receive buffers on top.
pub fn connection_limit(configured: usize, mem_available: Option<u64>) -> usize {
    match mem_available {
        Some(m) => configured.min(((m / 2 / CONN_MEMORY_BUDGET) as usize).max(64)),
        None => configured,
    }
}

/// Opens and binds the UDP socket of an endpoint (either kind: [`Endpoint`](super::Endpoint) or
/// [`crate::blocking::Endpoint`]) with `opts`, non-blocking: buffers, timestamps, GRO, ECN and
/// drop counting as the kernel grants them. Returns the socket, what was granted, and the
/// protocol configuration fitted to it (receive share and buffer, connection limit).
pub(crate) fn open_socket(
    addr: SocketAddr,
    opts: &EndpointConfig,
) -> Result<(std::net::UdpSocket, SocketInfo, Config)> {
    if let Err((f, why)) = opts.proto.validate() {
        return Err(Error::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("invalid configuration field {f}: {why}"),
        )));
    }
    let domain = socket2::Domain::for_address(addr);
    let sock = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    if addr.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    sys::set_buffers(&sock, opts.socket_buffer, opts.recv_buffer);
    if opts.reuse_port {
        sock.set_reuse_port(true)?;
    }
    sock.set_nonblocking(true)?;
    sock.bind(&addr.into())?;
    let fd = sock.as_raw_fd();
    let kernel_timestamps = opts.kernel_timestamps && sys::enable_rx_timestamps(fd);
    let gro = opts.gro && sys::enable_gro(fd);
    // Nothing fragmented by this host: a datagram too big for its route is refused and the
    // connections' payloads refitted (`refit_payloads`); a kernel that refuses leaves the
    // default (fragments past a lowered path MTU).
    let _ = sys::set_no_fragment(fd, addr.is_ipv6());
    let _ = sys::enable_rxq_ovfl(fd);
    // ECN (spec 3.3): send ECT(0), read each datagram's codepoint. A kernel that refuses
    // leaves both off; CE then never reaches the controllers. The DSCP shares the byte.
    let _ = sys::enable_recv_tos(fd, addr.is_ipv6());
    if let Err(e) = sys::set_tos(fd, addr.is_ipv6(), opts.dscp.tos(sys::ECN_ECT0)) {
        if opts.dscp != crate::Dscp::DEFAULT {
            return Err(Error::Io(std::io::Error::new(
                e.kind(),
                format!("cannot mark datagrams with DSCP {}: {e}", opts.dscp),
            )));
        }
    }
    let recv_buffer = sock.recv_buffer_size().unwrap_or(0);
    let (rx_share, conn_recv_buffer) =
        fit_to_socket(recv_buffer, opts.proto.rx_share, opts.proto.recv_buffer);
    let info = SocketInfo {
        local: sock
            .local_addr()?
            .as_socket()
            .ok_or_else(|| std::io::Error::other("not an IP socket"))?,
        recv_buffer,
        send_buffer: sock.send_buffer_size().unwrap_or(0),
        kernel_timestamps,
        gro,
        rx_share,
        conn_recv_buffer,
    };
    let mut proto = opts.proto.clone();
    proto.rx_share = info.rx_share;
    proto.recv_buffer = info.conn_recv_buffer;
    proto.max_connections = connection_limit(proto.max_connections, sys::mem_available());
    Ok((sock.into(), info, proto))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{host_config, HOST_RX_SHARE};

    #[test]
    fn the_connection_limit_follows_memory() {
        // 1 GiB available: half of it at 160 KiB per connection.
        assert_eq!(connection_limit(65_536, Some(1 << 30)), 3276);
        assert_eq!(connection_limit(1_000, Some(1 << 30)), 1_000);
        assert_eq!(connection_limit(65_536, Some(0)), 64);
        assert_eq!(connection_limit(65_536, None), 65_536);
    }

    #[test]
    fn the_socket_buffer_bounds_share_and_window() {
        let c = host_config(10_000_000_000);
        // The default 16 MiB request, granted doubled: the profile's values stand.
        assert_eq!(
            fit_to_socket(32 << 20, c.rx_share, c.recv_buffer),
            (HOST_RX_SHARE, c.recv_buffer)
        );
        // 256 KiB granted doubled: a quarter for the share, an eighth (at least 64 KiB) each.
        assert_eq!(
            fit_to_socket(512 << 10, c.rx_share, c.recv_buffer),
            (128 << 10, 64 << 10)
        );
        // Off stays off; an unreported buffer keeps the configuration.
        assert_eq!(fit_to_socket(512 << 10, 0, 1 << 20), (0, 64 << 10));
        assert_eq!(fit_to_socket(0, 7, 9), (7, 9));
    }
}
