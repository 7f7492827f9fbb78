//! Wire format: the fixed 32-byte STRIDE header (four 64-bit bus beats), network byte order.
//!
//! ```text
//!  0       8      16              32                              64
//!  +-------+-------+---------------+-------------------------------+
//!  |version| flags |  payload_len  |            dst_cid            |  beat 0
//!  +-------+-------+---------------+-------------------------------+
//!  |            src_cid            |              seq              |  beat 1
//!  +-------------------------------+-------------------------------+
//!  |              ack              |             tx_ts             |  beat 2
//!  +-------------------------------+---------------+---------------+
//!  |            echo_stt           |    window     |   ce_count    |  beat 3
//!  +-------------------------------+---------------+---------------+
//! ```
//!
//! [`Packet`] is a zero-copy view with checked accessors; [`Header`] is the parsed form with an
//! emitter. Parsing any byte string returns `Ok` or a [`WireError`]; it never panics.

use core::fmt;
use core::ops::BitOr;

/// Header length in bytes.
pub const HEADER_LEN: usize = 32;
/// The protocol version this crate speaks.
pub const VERSION: u8 = 2;

/// Packet flags (one byte). See `docs/spec.md` for the legal combinations.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u8);

impl Flags {
    /// Opens a connection.
    pub const SYN: Flags = Flags(0x01);
    /// The `ack` field is valid (set on every packet after the SYN).
    pub const ACK: Flags = Flags(0x02);
    /// A gap: the receiver asks for go-back-N from `ack` or, with a payload (selective NACK,
    /// negotiated), for the ranges it names.
    pub const NACK: Flags = Flags(0x04);
    /// The sender has no more data; `seq` is the FIN's sequence number.
    pub const FIN: Flags = Flags(0x08);
    /// Abort.
    pub const RST: Flags = Flags(0x10);
    /// The packet carries `payload_len > 0` bytes of stream data at `seq`.
    pub const DATA: Flags = Flags(0x20);
    /// Acknowledge now: the sender has nothing more queued after this packet.
    pub const PSH: Flags = Flags(0x40);
    /// Congestion notification (DCQCN's CNP): only as `ACK | CN`, a pure ACK (version 2).
    pub const CN: Flags = Flags(0x80);

    /// No flags.
    pub const fn empty() -> Flags {
        Flags(0)
    }
    /// Raw bits.
    pub const fn bits(self) -> u8 {
        self.0
    }
    /// From raw bits. Every bit has a meaning in version 2 (0x80 is CN), so none is unknown;
    /// illegal combinations are refused by [`Flags::is_legal`].
    pub const fn from_bits(b: u8) -> Option<Flags> {
        Some(Flags(b))
    }
    /// All of `other`'s bits are set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
    /// Returns `self` with `other`'s bits added.
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Whether this combination is legal (see the flag table in `docs/spec.md`).
    pub fn is_legal(self) -> bool {
        let f = self.0;
        let has = |x: Flags| f & x.0 != 0;
        if has(Flags::SYN) {
            // SYN or SYN|ACK only.
            return f & !(Flags::SYN.0 | Flags::ACK.0) == 0;
        }
        if has(Flags::RST) {
            // RST or RST|ACK only.
            return f & !(Flags::RST.0 | Flags::ACK.0) == 0;
        }
        if !has(Flags::ACK) {
            return false;
        }
        if has(Flags::CN) {
            // ACK|CN only: a pure ACK that also notifies congestion.
            return f == Flags::ACK.0 | Flags::CN.0;
        }
        if has(Flags::PSH) && !has(Flags::DATA) {
            return false;
        }
        if has(Flags::NACK) && (has(Flags::DATA) || has(Flags::FIN)) {
            return false;
        }
        if has(Flags::FIN) && has(Flags::DATA) {
            return false;
        }
        true
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (Flags::SYN, "SYN"),
            (Flags::ACK, "ACK"),
            (Flags::NACK, "NACK"),
            (Flags::FIN, "FIN"),
            (Flags::RST, "RST"),
            (Flags::DATA, "DATA"),
            (Flags::PSH, "PSH"),
            (Flags::CN, "CN"),
        ];
        let mut first = true;
        for (fl, n) in names {
            if self.contains(fl) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(n)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// Why a datagram was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than the 32-byte header.
    Truncated {
        /// Bytes present.
        len: usize,
    },
    /// Unknown version.
    BadVersion(u8),
    /// Unknown flag bits or an illegal combination.
    BadFlags(u8),
    /// `payload_len` disagrees with the datagram length, or DATA disagrees with it.
    BadLength {
        /// Declared payload length.
        declared: u16,
        /// Bytes after the header.
        actual: usize,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated { len } => {
                write!(f, "truncated: {len} bytes, header needs {HEADER_LEN}")
            }
            WireError::BadVersion(v) => write!(f, "unsupported version {v}"),
            WireError::BadFlags(b) => write!(f, "illegal flags 0x{b:02x}"),
            WireError::BadLength { declared, actual } => {
                write!(f, "payload_len {declared} but {actual} payload bytes")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// A checked, zero-copy view of a STRIDE datagram.
#[derive(Clone, Copy, Debug)]
pub struct Packet<T: AsRef<[u8]>> {
    buf: T,
}

macro_rules! be32 {
    ($name:ident, $off:expr, $doc:expr) => {
        #[doc = $doc]
        pub fn $name(&self) -> u32 {
            let b = self.buf.as_ref();
            u32::from_be_bytes([b[$off], b[$off + 1], b[$off + 2], b[$off + 3]])
        }
    };
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Validates length, version, flags and payload length.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        let b = buf.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated { len: b.len() });
        }
        if b[0] != VERSION {
            return Err(WireError::BadVersion(b[0]));
        }
        let flags = match Flags::from_bits(b[1]) {
            Some(f) if f.is_legal() => f,
            _ => return Err(WireError::BadFlags(b[1])),
        };
        let declared = u16::from_be_bytes([b[2], b[3]]);
        let actual = b.len() - HEADER_LEN;
        let shape_ok = if flags.contains(Flags::DATA) {
            declared > 0
        } else if flags.contains(Flags::NACK) {
            // A selective NACK: whole (seq, len) ranges, at most MAX_NACK_RANGES of them.
            declared % NACK_RANGE_LEN as u16 == 0
                && usize::from(declared) <= MAX_NACK_RANGES * NACK_RANGE_LEN
        } else {
            declared == 0
        };
        if usize::from(declared) != actual || !shape_ok {
            return Err(WireError::BadLength { declared, actual });
        }
        Ok(Packet { buf })
    }

    /// Version byte.
    pub fn version(&self) -> u8 {
        self.buf.as_ref()[0]
    }
    /// Flags.
    pub fn flags(&self) -> Flags {
        Flags(self.buf.as_ref()[1])
    }
    /// Payload length.
    pub fn payload_len(&self) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[2], b[3]])
    }
    be32!(
        dst_cid,
        4,
        "Connection identifier chosen by the receiver of this packet."
    );
    be32!(
        src_cid,
        8,
        "Connection identifier chosen by the sender of this packet."
    );
    be32!(
        seq,
        12,
        "Sequence number of the first payload byte (or of the SYN/FIN)."
    );
    be32!(
        ack,
        16,
        "Cumulative acknowledgement: the next byte expected."
    );
    be32!(tx_ts, 20, "Sender's transmit timestamp, ns mod 2^32.");
    be32!(
        echo_stt,
        24,
        "Echoed single trip time, ns mod 2^32 (ACK/NACK)."
    );
    /// Receive window in KiB beyond `ack`.
    pub fn window(&self) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[28], b[29]])
    }
    /// With ACK: the receiver's count of CE-marked DATA packets, mod 2^16 (0 without ACK).
    pub fn ce_count(&self) -> u16 {
        let b = self.buf.as_ref();
        u16::from_be_bytes([b[30], b[31]])
    }
    /// The payload: stream bytes in DATA, missing ranges in a selective NACK.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
    /// The parsed header.
    pub fn header(&self) -> Header {
        Header {
            version: self.version(),
            flags: self.flags(),
            payload_len: self.payload_len(),
            dst_cid: self.dst_cid(),
            src_cid: self.src_cid(),
            seq: self.seq(),
            ack: self.ack(),
            tx_ts: self.tx_ts(),
            echo_stt: self.echo_stt(),
            window: self.window(),
            ce_count: self.ce_count(),
        }
    }
}

/// A parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Version (1).
    pub version: u8,
    /// Flags.
    pub flags: Flags,
    /// Payload bytes after the header.
    pub payload_len: u16,
    /// Receiver's connection identifier (0 in a SYN).
    pub dst_cid: u32,
    /// Sender's connection identifier.
    pub src_cid: u32,
    /// Sequence number.
    pub seq: u32,
    /// Cumulative acknowledgement.
    pub ack: u32,
    /// Transmit timestamp (ns mod 2^32).
    pub tx_ts: u32,
    /// Echoed STT (ns mod 2^32).
    pub echo_stt: u32,
    /// Receive window, KiB.
    pub window: u16,
    /// With ACK: CE-marked DATA packets received on the connection, mod 2^16 (0 otherwise).
    pub ce_count: u16,
}

impl Header {
    /// A header with the given flags and fields; payload length, STT, window and CE count zero.
    pub fn new(flags: Flags, dst_cid: u32, src_cid: u32, seq: u32, ack: u32, tx_ts: u32) -> Self {
        Header {
            version: VERSION,
            flags,
            payload_len: 0,
            dst_cid,
            src_cid,
            seq,
            ack,
            tx_ts,
            echo_stt: 0,
            window: 0,
            ce_count: 0,
        }
    }

    /// Writes the 32 header bytes into `buf[..32]`.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), WireError> {
        if buf.len() < HEADER_LEN {
            return Err(WireError::Truncated { len: buf.len() });
        }
        buf[0] = self.version;
        buf[1] = self.flags.bits();
        buf[2..4].copy_from_slice(&self.payload_len.to_be_bytes());
        buf[4..8].copy_from_slice(&self.dst_cid.to_be_bytes());
        buf[8..12].copy_from_slice(&self.src_cid.to_be_bytes());
        buf[12..16].copy_from_slice(&self.seq.to_be_bytes());
        buf[16..20].copy_from_slice(&self.ack.to_be_bytes());
        buf[20..24].copy_from_slice(&self.tx_ts.to_be_bytes());
        buf[24..28].copy_from_slice(&self.echo_stt.to_be_bytes());
        buf[28..30].copy_from_slice(&self.window.to_be_bytes());
        buf[30..32].copy_from_slice(&self.ce_count.to_be_bytes());
        Ok(())
    }
}

/// Bytes of one range in a selective NACK's payload: `seq` (4) and `len` (4), big-endian.
pub const NACK_RANGE_LEN: usize = 8;
/// Most ranges one NACK carries (512 bytes of payload: fits any IPv4 path's minimum MTU).
pub const MAX_NACK_RANGES: usize = 64;

/// Capability bits (spec §5.1): in a SYN they fill `echo_stt`; in a SYN-ACK, whose `echo_stt`
/// carries the SYN's STT (§8.6), they sit in bits 8..14 of `ce_count` beside the start grant
/// ([`syn_ack_caps`]). A peer without them sends 0 there and ignores the field. Bit 0: the
/// sender of this packet acts on the missing ranges of a selective NACK, so its peer may send
/// them.
pub const CAP_SELECTIVE: u32 = 1;
/// Every capability bit this crate understands; others are ignored on receipt.
pub const CAPS_KNOWN: u32 = CAP_SELECTIVE;
/// Where a SYN-ACK's capability bits sit in its `ce_count`: 7 bits from bit 8.
pub const SYN_ACK_CAPS_SHIFT: u32 = 8;
const SYN_ACK_CAPS_MASK: u32 = 0x7f;

/// The `ce_count` bits that carry `caps` in a SYN-ACK (bits of `caps` beyond the 7 that fit are
/// not sent).
pub const fn syn_ack_caps(caps: u32) -> u16 {
    ((caps & SYN_ACK_CAPS_MASK) << SYN_ACK_CAPS_SHIFT) as u16
}

/// The capability bits of a SYN-ACK's `ce_count`.
pub const fn syn_ack_peer_caps(ce_count: u16) -> u32 {
    (ce_count as u32 >> SYN_ACK_CAPS_SHIFT) & SYN_ACK_CAPS_MASK
}

/// One missing range named by a selective NACK: `len` bytes from `seq`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NackRange {
    /// First missing byte.
    pub seq: u32,
    /// Missing bytes (at least 1).
    pub len: u32,
}

/// Writes `ranges` as a selective NACK payload into `buf`; returns the bytes written.
/// Panics if `buf` is too small or more than [`MAX_NACK_RANGES`] are given (caller bug).
pub fn emit_nack_ranges(ranges: &[NackRange], buf: &mut [u8]) -> usize {
    assert!(ranges.len() <= MAX_NACK_RANGES);
    for (i, r) in ranges.iter().enumerate() {
        let o = i * NACK_RANGE_LEN;
        buf[o..o + 4].copy_from_slice(&r.seq.to_be_bytes());
        buf[o + 4..o + 8].copy_from_slice(&r.len.to_be_bytes());
    }
    ranges.len() * NACK_RANGE_LEN
}

/// The ranges of a selective NACK payload (already length-checked by [`Packet::new_checked`]:
/// a whole number of ranges). Yields them in wire order; semantic checks are the caller's.
pub fn nack_ranges(payload: &[u8]) -> impl Iterator<Item = NackRange> + '_ {
    payload.chunks_exact(NACK_RANGE_LEN).map(|c| NackRange {
        seq: u32::from_be_bytes([c[0], c[1], c[2], c[3]]),
        len: u32::from_be_bytes([c[4], c[5], c[6], c[7]]),
    })
}

/// Serial-number arithmetic on 32-bit sequence numbers (RFC 1982): `a` is before `b`.
#[inline]
pub fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `a` is before or equal to `b` on the sequence circle.
#[inline]
pub fn seq_le(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) <= 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn datagram(h: &Header, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0u8; HEADER_LEN + payload.len()];
        h.emit(&mut v).unwrap();
        v[HEADER_LEN..].copy_from_slice(payload);
        v
    }

    #[test]
    fn roundtrip() {
        let mut h = Header::new(Flags::DATA | Flags::ACK, 1, 2, 3, 4, 5);
        h.payload_len = 3;
        h.echo_stt = 6;
        h.window = 7;
        let d = datagram(&h, b"abc");
        let p = Packet::new_checked(&d[..]).unwrap();
        assert_eq!(p.header(), h);
        assert_eq!(p.payload(), b"abc");
    }

    #[test]
    fn layout_is_big_endian_at_fixed_offsets() {
        let mut h = Header::new(
            Flags::ACK,
            0x04050607,
            0x08090a0b,
            0x0c0d0e0f,
            0x10111213,
            0x14151617,
        );
        h.echo_stt = 0x18191a1b;
        h.window = 0x1c1d;
        h.ce_count = 0x1e1f;
        let mut b = [0u8; 32];
        h.emit(&mut b).unwrap();
        assert_eq!(b[0], 2);
        assert_eq!(b[1], 0x02);
        assert_eq!(&b[2..4], &[0, 0]);
        for (i, x) in b.iter().enumerate().skip(4) {
            assert_eq!(*x as usize, i, "byte {i}");
        }
        assert_eq!(Packet::new_checked(&b[..]).unwrap().ce_count(), 0x1e1f);
    }

    #[test]
    fn errors_are_precise() {
        assert_eq!(
            Packet::new_checked(&[1u8; 5][..]).unwrap_err(),
            WireError::Truncated { len: 5 }
        );
        let h = Header::new(Flags::ACK, 1, 2, 3, 4, 5);
        let mut d = datagram(&h, &[]);
        d[0] = 9;
        assert_eq!(
            Packet::new_checked(&d[..]).unwrap_err(),
            WireError::BadVersion(9)
        );
        // A version-1 datagram is dropped by a version-2 receiver.
        d[0] = 1;
        assert_eq!(
            Packet::new_checked(&d[..]).unwrap_err(),
            WireError::BadVersion(1)
        );
        d[0] = 2;
        d[1] = 0x80 | 0x02;
        assert!(Packet::new_checked(&d[..]).is_ok(), "ACK|CN is legal");
        d[1] = 0x80 | 0x02 | 0x04;
        assert_eq!(
            Packet::new_checked(&d[..]).unwrap_err(),
            WireError::BadFlags(0x86)
        );
        d[1] = (Flags::SYN | Flags::FIN).bits();
        assert!(matches!(
            Packet::new_checked(&d[..]),
            Err(WireError::BadFlags(_))
        ));
        d[1] = Flags::ACK.bits();
        d[3] = 4;
        assert_eq!(
            Packet::new_checked(&d[..]).unwrap_err(),
            WireError::BadLength {
                declared: 4,
                actual: 0
            }
        );
        // DATA flag with an empty payload is illegal too.
        d[3] = 0;
        d[1] = (Flags::DATA | Flags::ACK).bits();
        assert!(matches!(
            Packet::new_checked(&d[..]),
            Err(WireError::BadLength { .. })
        ));
        // payload without DATA likewise
        let mut d2 = datagram(&Header::new(Flags::ACK, 1, 2, 3, 4, 5), b"x");
        d2[3] = 1;
        assert!(matches!(
            Packet::new_checked(&d2[..]),
            Err(WireError::BadLength { .. })
        ));
    }

    #[test]
    fn legal_flag_combinations() {
        let legal = [
            Flags::SYN,
            Flags::SYN | Flags::ACK,
            Flags::ACK,
            Flags::ACK | Flags::DATA,
            Flags::ACK | Flags::DATA | Flags::PSH,
            Flags::ACK | Flags::NACK,
            Flags::ACK | Flags::FIN,
            Flags::RST,
            Flags::RST | Flags::ACK,
            Flags::ACK | Flags::CN,
        ];
        for b in 0u8..=255 {
            let ok = Flags::from_bits(b).is_some_and(|f| f.is_legal());
            let expect = legal.iter().any(|f| f.bits() == b);
            assert_eq!(ok, expect, "flags 0x{b:02x}");
        }
    }

    #[test]
    fn nack_ranges_roundtrip_and_payload_shape() {
        let ranges = [
            NackRange { seq: 7, len: 1440 },
            NackRange {
                seq: u32::MAX - 5,
                len: 2880,
            },
        ];
        let mut h = Header::new(Flags::ACK | Flags::NACK, 1, 2, 3, 7, 5);
        let mut d = vec![0u8; HEADER_LEN + 16];
        h.payload_len = emit_nack_ranges(&ranges, &mut d[HEADER_LEN..]) as u16;
        assert_eq!(h.payload_len, 16);
        h.emit(&mut d).unwrap();
        assert_eq!(&d[32..40], &[0, 0, 0, 7, 0, 0, 0x05, 0xa0]);
        let p = Packet::new_checked(&d[..]).unwrap();
        assert_eq!(nack_ranges(p.payload()).collect::<Vec<_>>(), ranges);
        // Not whole ranges, or more than MAX_NACK_RANGES: bad length.
        for (n, ok) in [
            (12usize, false),
            (8, true),
            (MAX_NACK_RANGES * 8, true),
            ((MAX_NACK_RANGES + 1) * 8, false),
        ] {
            let mut h = Header::new(Flags::ACK | Flags::NACK, 1, 2, 3, 7, 5);
            h.payload_len = n as u16;
            let v = datagram(&h, &vec![0u8; n]);
            assert_eq!(Packet::new_checked(&v[..]).is_ok(), ok, "{n} bytes");
        }
        // Other packets without DATA still carry no payload.
        for f in [
            Flags::ACK,
            Flags::SYN,
            Flags::SYN | Flags::ACK,
            Flags::ACK | Flags::FIN,
        ] {
            let mut h = Header::new(f, 1, 2, 3, 7, 5);
            h.payload_len = 8;
            let v = datagram(&h, &[0u8; 8]);
            assert!(
                matches!(
                    Packet::new_checked(&v[..]),
                    Err(WireError::BadLength { .. })
                ),
                "{f:?} with a payload"
            );
        }
    }

    #[test]
    fn serial_arithmetic_wraps() {
        assert!(seq_lt(u32::MAX, 0));
        assert!(seq_lt(u32::MAX - 5, 3));
        assert!(!seq_lt(3, u32::MAX - 5));
        assert!(seq_le(7, 7));
        assert!(seq_lt(0x7fff_ffff, 0xffff_fffe));
    }
}
