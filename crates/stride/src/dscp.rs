//! The DSCP an endpoint marks its datagrams with ([`Dscp`], [`crate::EndpointConfig::dscp`]):
//! the upper six bits of the IPv4 TOS byte / IPv6 traffic class (RFC 2474), next to the two
//! ECN bits, which stay ECT(0) (spec §3.3). A switch or a host qdisc that gives STRIDE a class
//! of its own classifies by it (docs/spec.md, "A traffic class of its own").
//!
//! ```
//! use stride::Dscp;
//! let d: Dscp = "af41".parse().unwrap();
//! assert_eq!(d.value(), 34);
//! assert_eq!(d.tos(stride::sys::ECN_ECT0), 0x8a);
//! assert_eq!("46".parse::<Dscp>().unwrap(), Dscp::EF);
//! assert!("af44".parse::<Dscp>().is_err());
//! ```

use std::fmt;
use std::str::FromStr;

/// A DiffServ codepoint, 0..=63. The default, 0 (CS0), is the best-effort class every
/// unmarked packet is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Dscp(u8);

/// The names [`Dscp`]'s parser takes besides numbers, with their codepoints: the class
/// selectors `cs0`..`cs7` (RFC 2474), the assured-forwarding classes `af11`..`af43` (RFC 2597),
/// expedited forwarding `ef` (RFC 3246) and lower effort `le` (RFC 8622).
pub const DSCP_NAMES: &[(&str, u8)] = &[
    ("cs0", 0),
    ("le", 1),
    ("cs1", 8),
    ("af11", 10),
    ("af12", 12),
    ("af13", 14),
    ("cs2", 16),
    ("af21", 18),
    ("af22", 20),
    ("af23", 22),
    ("cs3", 24),
    ("af31", 26),
    ("af32", 28),
    ("af33", 30),
    ("cs4", 32),
    ("af41", 34),
    ("af42", 36),
    ("af43", 38),
    ("cs5", 40),
    ("ef", 46),
    ("cs6", 48),
    ("cs7", 56),
];

impl Dscp {
    /// Best effort (CS0), the default.
    pub const DEFAULT: Dscp = Dscp(0);
    /// Expedited forwarding (46, RFC 3246).
    pub const EF: Dscp = Dscp(46);

    /// The codepoint `v`; None above 63 (six bits).
    pub const fn new(v: u8) -> Option<Dscp> {
        if v <= 63 {
            Some(Dscp(v))
        } else {
            None
        }
    }

    /// The codepoint, 0..=63.
    pub const fn value(self) -> u8 {
        self.0
    }

    /// The TOS byte / traffic class carrying this codepoint and the ECN codepoint `ecn` (its
    /// two low bits): `dscp << 2 | ecn`.
    pub const fn tos(self, ecn: u8) -> u8 {
        self.0 << 2 | (ecn & 3)
    }

    /// The codepoint's name in [`DSCP_NAMES`], if it has one.
    pub fn name(self) -> Option<&'static str> {
        DSCP_NAMES
            .iter()
            .find(|(_, v)| *v == self.0)
            .map(|(n, _)| *n)
    }
}

impl fmt::Display for Dscp {
    /// The name (`af41`) when the codepoint has one, else the number.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.0),
        }
    }
}

impl FromStr for Dscp {
    type Err = String;
    /// A number 0..=63 (decimal) or a name of [`DSCP_NAMES`], in any case.
    fn from_str(s: &str) -> Result<Dscp, String> {
        let t = s.trim().to_ascii_lowercase();
        if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
            return t
                .parse::<u8>()
                .ok()
                .and_then(Dscp::new)
                .ok_or_else(|| format!("DSCP {s:?} is out of range: a DSCP is 0..=63 (six bits)"));
        }
        DSCP_NAMES
            .iter()
            .find(|(n, _)| *n == t)
            .map(|&(_, v)| Dscp(v))
            .ok_or_else(|| {
                format!(
                    "{s:?} is not a DSCP: give a number 0..=63 or a name (cs0..cs7, af11..af43, ef, le)"
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names_parse() {
        assert_eq!("0".parse::<Dscp>(), Ok(Dscp::DEFAULT));
        assert_eq!("63".parse::<Dscp>().map(Dscp::value), Ok(63));
        assert_eq!(" EF ".parse::<Dscp>(), Ok(Dscp::EF));
        assert_eq!("af11".parse::<Dscp>().map(Dscp::value), Ok(10));
        assert_eq!("AF43".parse::<Dscp>().map(Dscp::value), Ok(38));
        assert_eq!("cs1".parse::<Dscp>().map(Dscp::value), Ok(8));
        assert_eq!("cs7".parse::<Dscp>().map(Dscp::value), Ok(56));
        assert_eq!("le".parse::<Dscp>().map(Dscp::value), Ok(1));
        for bad in [
            "64", "256", "-1", "", "0x2e", "af14", "af51", "cs8", "e f", "1.5",
        ] {
            let e = bad.parse::<Dscp>().unwrap_err();
            assert!(e.contains("0..=63"), "{bad}: {e}");
        }
        // Every name is unique and in range, and prints back as itself.
        for (n, v) in DSCP_NAMES {
            let d: Dscp = n.parse().unwrap();
            assert_eq!(d.value(), *v);
            assert_eq!(d.to_string(), *n);
        }
        assert_eq!(Dscp::new(5).unwrap().to_string(), "5");
        assert_eq!(Dscp::new(64), None);
    }

    #[test]
    fn the_ecn_bits_sit_below_the_codepoint() {
        let af41 = Dscp::new(34).unwrap();
        assert_eq!(af41.tos(2), 0x8a);
        assert_eq!(af41.tos(3), 0x8b);
        assert_eq!(Dscp::DEFAULT.tos(2), 2);
        assert_eq!(Dscp::new(63).unwrap().tos(7), 0xff);
    }
}
