//! The line rate a sender's controller works against: given, read from the interface that
//! carries the route to the peer, or [`DEFAULT_LINE_BPS`].
//!
//! The route's egress device is what `ip route get ADDR` prints as `dev`: an `RTM_GETROUTE`
//! request for the peer's address over rtnetlink (the kernel's answer names the output
//! interface), the same lookup the kernel makes for a datagram to that peer. Its speed is
//! what the driver reports in `/sys/class/net/DEV/speed` (Mbit/s; `-1`, or a read error, when
//! it does not know). A speed the kernel does not know leaves the default:
//!
//! - loopback (`lo`, and every address of this host, whose route is `local`) reports none;
//! - most virtual NICs of cloud machines (`virtio_net` without a configured speed) report -1;
//! - `veth` reports a nominal 10 000 Mbit/s whatever shapes the path behind it (the testbed's
//!   `tbf`): the same 10 Gbit/s as the default, so nothing changes there either.
//!
//! ```
//! # use std::net::SocketAddr;
//! let lr = stride::LineRate::of_route("127.0.0.1:9".parse().unwrap());
//! // Loopback reports no speed: the default, and the device that had none.
//! assert_eq!(lr.bps, stride::DEFAULT_LINE_BPS);
//! assert_eq!(lr.source.kind(), "default");
//! ```

use std::net::{IpAddr, SocketAddr};
use std::path::Path;

/// The line rate used when neither the caller nor the route's interface gives one: 10 Gbit/s.
pub const DEFAULT_LINE_BPS: u64 = 10_000_000_000;

/// The lowest line rate the host profile accepts (see [`crate::ControllerOverrides`]): a
/// slower speed reported by an interface is not used.
pub const MIN_LINE_BPS: u64 = 10_000_000;

/// Where the kernel lists interfaces, each with its `speed`.
pub const SYS_CLASS_NET: &str = "/sys/class/net";

/// Where a [`LineRate`] came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LineRateSource {
    /// Set by the caller (`--line-rate`).
    Given,
    /// The speed the kernel reports for the route's egress interface.
    Interface {
        /// The interface's name.
        device: String,
    },
    /// [`DEFAULT_LINE_BPS`]: the route's interface reports no speed, or none was found (no
    /// route, or rtnetlink could not be asked).
    Default {
        /// The route's interface, when the kernel named one.
        device: Option<String>,
    },
}

impl LineRateSource {
    /// `given`, `interface` or `default`.
    pub fn kind(&self) -> &'static str {
        match self {
            LineRateSource::Given => "given",
            LineRateSource::Interface { .. } => "interface",
            LineRateSource::Default { .. } => "default",
        }
    }

    /// The route's interface, when one was looked up and found.
    pub fn device(&self) -> Option<&str> {
        match self {
            LineRateSource::Given => None,
            LineRateSource::Interface { device } => Some(device),
            LineRateSource::Default { device } => device.as_deref(),
        }
    }
}

impl std::fmt::Display for LineRateSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineRateSource::Given => write!(f, "given"),
            LineRateSource::Interface { device } => write!(f, "interface {device}"),
            LineRateSource::Default { device: Some(d) } => {
                write!(f, "default: {d} reports no speed")
            }
            LineRateSource::Default { device: None } => {
                write!(f, "default: no interface found for the peer")
            }
        }
    }
}

/// A line rate and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRate {
    /// Bits per second.
    pub bps: u64,
    /// Its source.
    pub source: LineRateSource,
}

impl LineRate {
    /// A rate set by the caller.
    pub fn given(bps: u64) -> LineRate {
        LineRate {
            bps,
            source: LineRateSource::Given,
        }
    }

    /// The speed of the interface that carries the kernel's route to `to`, or
    /// [`DEFAULT_LINE_BPS`] when it reports none (see the module's notes).
    pub fn of_route(to: SocketAddr) -> LineRate {
        LineRate::of_device(Path::new(SYS_CLASS_NET), route_device(to.ip()).as_deref())
    }

    /// The speed `root/DEV/speed` reports for `device` (`root` is [`SYS_CLASS_NET`] but for
    /// tests), or [`DEFAULT_LINE_BPS`] when there is no device or it reports no usable speed
    /// (unknown, or below [`MIN_LINE_BPS`]).
    pub fn of_device(root: &Path, device: Option<&str>) -> LineRate {
        let speed = device.and_then(|d| interface_speed_bps(root, d));
        match (device, speed) {
            (Some(d), Some(bps)) if bps >= MIN_LINE_BPS => LineRate {
                bps,
                source: LineRateSource::Interface { device: d.into() },
            },
            _ => LineRate {
                bps: DEFAULT_LINE_BPS,
                source: LineRateSource::Default {
                    device: device.map(str::to_string),
                },
            },
        }
    }
}

/// The speed in bit/s an interface's `speed` file reports (`root/DEV/speed`), `None` when it
/// cannot be read or says the speed is unknown.
pub fn interface_speed_bps(root: &Path, device: &str) -> Option<u64> {
    // A name with a separator would read another file than the interface's.
    if device.is_empty() || device.contains('/') || device == "." || device == ".." {
        return None;
    }
    parse_speed(&std::fs::read_to_string(root.join(device).join("speed")).ok()?)
}

/// A `speed` file's text, in Mbit/s, as bit/s: `None` for `-1` (unknown), 0, the unsigned
/// form of -1 some drivers print (4294967295) and anything not a number.
pub fn parse_speed(text: &str) -> Option<u64> {
    let mbps: i64 = text.trim().parse().ok()?;
    if mbps <= 0 || mbps >= i64::from(u32::MAX) {
        return None;
    }
    Some(mbps as u64 * 1_000_000)
}

/// The name of the interface the kernel's route to `to` leaves by (`ip route get`'s `dev`),
/// `None` when there is no route or rtnetlink cannot be asked. An IPv4 address written as
/// IPv6 (`::ffff:a.b.c.d`) is looked up as IPv4.
pub fn route_device(to: IpAddr) -> Option<String> {
    let to = match to {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(to, IpAddr::V4),
        v4 => v4,
    };
    let oif = route_oif(to)?;
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: the buffer holds IF_NAMESIZE bytes, as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(oif, name.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: on success the buffer holds a NUL-terminated name.
    let name = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) };
    Some(name.to_string_lossy().into_owned())
}

/// The output interface's index of the route to `to` (`RTM_GETROUTE`, `RTA_OIF`).
fn route_oif(to: IpAddr) -> Option<u32> {
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
    use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
    use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
    use netlink_sys::{protocols::NETLINK_ROUTE, Socket};

    let mut msg = RouteMessage::default();
    let (family, prefix, dst) = match to {
        IpAddr::V4(a) => (AddressFamily::Inet, 32, RouteAddress::Inet(a)),
        IpAddr::V6(a) => (AddressFamily::Inet6, 128, RouteAddress::Inet6(a)),
    };
    msg.header.address_family = family;
    msg.header.destination_prefix_length = prefix;
    msg.attributes.push(RouteAttribute::Destination(dst));
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST;
    let mut req = NetlinkMessage::new(
        header,
        NetlinkPayload::from(RouteNetlinkMessage::GetRoute(msg)),
    );
    req.finalize();
    let mut buf = vec![0u8; req.buffer_len()];
    req.serialize(&mut buf);

    let mut sock = Socket::new(NETLINK_ROUTE).ok()?;
    sock.bind_auto().ok()?;
    sock.connect(&netlink_sys::SocketAddr::new(0, 0)).ok()?;
    sock.send(&buf, 0).ok()?;
    // The kernel answers a route request while handling the send: the reply (or the error)
    // is queued by now, and a reply that is not there is not waited for.
    let mut rx = vec![0u8; 8192];
    let n = sock.recv(&mut &mut rx[..], libc::MSG_DONTWAIT).ok()?;
    let reply = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&rx[..n]).ok()?;
    let NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(route)) = reply.payload else {
        return None;
    };
    route.attributes.iter().find_map(|a| match a {
        RouteAttribute::Oif(i) => Some(*i),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory laid out as `/sys/class/net` with the given `speed` files.
    fn fake_sys(tag: &str, speeds: &[(&str, &str)]) -> std::path::PathBuf {
        let root =
            std::env::temp_dir().join(format!("stride-line-rate-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (dev, speed) in speeds {
            std::fs::create_dir_all(root.join(dev)).unwrap();
            std::fs::write(root.join(dev).join("speed"), speed).unwrap();
        }
        root
    }

    #[test]
    fn speed_files_read_in_megabits() {
        assert_eq!(parse_speed("1000\n"), Some(1_000_000_000));
        assert_eq!(parse_speed("25000"), Some(25_000_000_000));
        for unknown in ["-1\n", "0", "4294967295", "", "fast", "10.5"] {
            assert_eq!(parse_speed(unknown), None, "{unknown:?}");
        }
    }

    #[test]
    fn an_interface_without_a_speed_leaves_the_default() {
        let root = fake_sys(
            "fallback",
            &[("eth0", "25000\n"), ("ens3", "-1\n"), ("slow0", "1\n")],
        );
        let lr = LineRate::of_device(&root, Some("eth0"));
        assert_eq!(lr.bps, 25_000_000_000);
        assert_eq!(lr.source.to_string(), "interface eth0");
        for dev in ["ens3", "slow0", "lo", "../eth0"] {
            let lr = LineRate::of_device(&root, Some(dev));
            assert_eq!(lr.bps, DEFAULT_LINE_BPS, "{dev}");
            assert_eq!(lr.source.kind(), "default");
            assert_eq!(lr.source.device(), Some(dev));
        }
        let none = LineRate::of_device(&root, None);
        assert_eq!(
            (none.bps, none.source.to_string()),
            (
                DEFAULT_LINE_BPS,
                "default: no interface found for the peer".into()
            )
        );
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn loopback_routes_leave_by_lo_which_reports_no_speed() {
        for to in ["127.0.0.1:9", "[::1]:9", "[::ffff:127.0.0.1]:9"] {
            let to: SocketAddr = to.parse().unwrap();
            match route_device(to.ip()) {
                Some(dev) => {
                    assert_eq!(dev, "lo", "{to}");
                    let lr = LineRate::of_route(to);
                    assert_eq!(lr.bps, DEFAULT_LINE_BPS);
                    assert_eq!(lr.source.to_string(), "default: lo reports no speed");
                }
                // A host without IPv6 has no route to ask about; IPv4 loopback is always there.
                None if to.is_ipv6() => println!("skipped {to}: the kernel gave no route"),
                None => panic!("no route to {to}"),
            }
        }
    }
}
