//! Standard pcap files of STRIDE traffic, readable by Wireshark, tshark and tcpdump.
//!
//! STRIDE datagrams are UDP payloads; a capture point that sees only the payload (the relay, the
//! simulator) gives it here with the two UDP endpoints, and [`Writer`] wraps it in an IPv4 or
//! IPv6 header and a UDP header (both with correct checksums) and writes one pcap record with a
//! nanosecond timestamp. The file uses link type RAW (101: the record starts with the IP header),
//! so IPv4 and IPv6 records can share one file. The pcap framing itself is the `pcap-file`
//! crate's.
//!
//! ```
//! let mut w = stride_pcap::Writer::new(Vec::new()).unwrap();
//! let (a, b) = ("10.0.0.1:5000".parse().unwrap(), "10.0.0.2:7000".parse().unwrap());
//! w.write_udp(1_000, a, b, &[1u8; 32]).unwrap();
//! assert_eq!(w.packets(), 1);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, TsResolution};
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// Largest UDP payload a record can hold (the IPv4 total length is 16 bits).
pub const MAX_PAYLOAD: usize = 65_535 - 20 - 8;

/// A pcap writer of UDP datagrams.
pub struct Writer<W: Write> {
    inner: PcapWriter<W>,
    packets: u64,
    buf: Vec<u8>,
}

fn err(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

/// The ones'-complement sum of `data` as 16-bit big-endian words, folded later.
fn sum16(mut acc: u32, data: &[u8]) -> u32 {
    let mut it = data.chunks_exact(2);
    for w in &mut it {
        acc += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = it.remainder() {
        acc += u32::from(*last) << 8;
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

impl<W: Write> Writer<W> {
    /// Writes the pcap file header (nanosecond timestamps, link type RAW).
    pub fn new(w: W) -> io::Result<Self> {
        let header = PcapHeader {
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            snaplen: 65_535,
            ..PcapHeader::default()
        };
        Ok(Writer {
            inner: PcapWriter::with_header(w, header).map_err(err)?,
            packets: 0,
            buf: Vec::with_capacity(2048),
        })
    }

    /// Records one UDP datagram from `src` to `dst` carrying `payload`, at `ts_ns` nanoseconds
    /// (since the Unix epoch for real captures, since the start for simulated ones). Both
    /// addresses must be of one family.
    pub fn write_udp(
        &mut self,
        ts_ns: u64,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
    ) -> io::Result<()> {
        self.write_udp_ecn(ts_ns, src, dst, payload, 0)
    }

    /// [`Writer::write_udp`] with the IP header's ECN field set to `ecn` (0..=3; 3 is CE,
    /// congestion experienced; 2 is ECT(0)).
    pub fn write_udp_ecn(
        &mut self,
        ts_ns: u64,
        src: SocketAddr,
        dst: SocketAddr,
        payload: &[u8],
        ecn: u8,
    ) -> io::Result<()> {
        let ecn = ecn & 3;
        if payload.len() > MAX_PAYLOAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a {}-byte datagram does not fit one IP packet",
                    payload.len()
                ),
            ));
        }
        let udp_len = (8 + payload.len()) as u16;
        let b = &mut self.buf;
        b.clear();
        // The pseudo-header sum for the UDP checksum.
        let mut pseudo = 0u32;
        match (src.ip(), dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let total = 20 + udp_len;
                b.extend_from_slice(&[0x45, ecn]);
                b.extend_from_slice(&total.to_be_bytes());
                b.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]); // id, DF, TTL 64, UDP
                b.extend_from_slice(&s.octets());
                b.extend_from_slice(&d.octets());
                let c = fold(sum16(0, &b[..20]));
                b[10..12].copy_from_slice(&c.to_be_bytes());
                pseudo = sum16(pseudo, &s.octets());
                pseudo = sum16(pseudo, &d.octets());
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                b.extend_from_slice(&[0x60, ecn << 4, 0, 0]);
                b.extend_from_slice(&udp_len.to_be_bytes());
                b.extend_from_slice(&[17, 64]); // next header UDP, hop limit 64
                b.extend_from_slice(&s.octets());
                b.extend_from_slice(&d.octets());
                pseudo = sum16(pseudo, &s.octets());
                pseudo = sum16(pseudo, &d.octets());
            }
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{src} and {dst} are of different address families"),
                ))
            }
        }
        pseudo += 17 + u32::from(udp_len);
        let udp_at = b.len();
        b.extend_from_slice(&src.port().to_be_bytes());
        b.extend_from_slice(&dst.port().to_be_bytes());
        b.extend_from_slice(&udp_len.to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(payload);
        let c = match fold(sum16(pseudo, &b[udp_at..])) {
            0 => 0xffff, // 0 means "no checksum" in UDP
            c => c,
        };
        b[udp_at + 6..udp_at + 8].copy_from_slice(&c.to_be_bytes());
        let ts = Duration::from_nanos(ts_ns);
        self.inner
            .write_packet(&PcapPacket::new(ts, b.len() as u32, b))
            .map_err(err)?;
        self.packets += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> W {
        self.inner.into_writer()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcap::PcapReader;

    #[test]
    fn records_read_back_with_valid_ip_and_udp_checksums() {
        let mut w = Writer::new(Vec::new()).unwrap();
        let a: SocketAddr = "127.0.0.1:40000".parse().unwrap();
        let b: SocketAddr = "127.0.0.2:7000".parse().unwrap();
        let payload: Vec<u8> = (0..45u8).collect(); // odd length: the checksum pads
        w.write_udp_ecn(1_500_000_123, a, b, &payload, 3).unwrap();
        let a6: SocketAddr = "[::1]:1".parse().unwrap();
        w.write_udp(2, a6, a6, &payload).unwrap();
        assert!(w.write_udp(3, a, a6, &payload).is_err());
        let bytes = w.into_inner();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().datalink, DataLink::RAW);
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.timestamp, Duration::from_nanos(1_500_000_123));
        let d = &p.data[..];
        assert_eq!(d.len(), 20 + 8 + 45);
        assert_eq!(fold(sum16(0, &d[..20])), 0, "IPv4 header checksum");
        assert_eq!(d[1] & 3, 3, "CE");
        let mut pseudo = sum16(0, &d[12..20]) + 17 + 53;
        pseudo = sum16(pseudo, &d[20..]);
        assert_eq!(fold(pseudo), 0, "UDP checksum");
        assert_eq!(u16::from_be_bytes([d[20], d[21]]), 40000);
        assert_eq!(u16::from_be_bytes([d[22], d[23]]), 7000);
        assert_eq!(&d[28..], &payload[..]);
        let p = r.next_packet().unwrap().unwrap();
        let d = &p.data[..];
        assert_eq!(d[0] >> 4, 6);
        let mut pseudo = sum16(0, &d[8..40]) + 17 + 53;
        pseudo = sum16(pseudo, &d[40..]);
        assert_eq!(fold(pseudo), 0, "UDP over IPv6 checksum");
        assert!(r.next_packet().is_none());
    }
}
