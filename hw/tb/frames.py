"""Ethernet II / IPv4 / UDP / STRIDE frame construction for the engine tests (wire version 2,
docs/spec.md §2-3), with knobs that break one thing at a time. Checksums per RFC 791 / RFC 768,
computed here and not by the RTL under test."""
import struct

VERSION = 2
PORT = 0x5354          # UDP port the engine is configured with in the tests
HDR_FMT = ">BBHIIIIIIHH"   # version flags payload_len dst src seq ack tx_ts echo window ce_count
FIELDS = ["version", "flags", "payload_len", "dst_cid", "src_cid", "seq", "ack", "tx_ts",
          "echo_stt", "window", "ce_count"]


def header_bytes(f):
    return struct.pack(HDR_FMT, *(f[k] for k in FIELDS))


def parse_header(b):
    return dict(zip(FIELDS, struct.unpack(HDR_FMT, b[:32])))


def csum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f">{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def build_frame(header, payload, ip_src=0x0A000001, ip_dst=0x0A000002, sport=40000, dport=PORT,
                tos=0, ethertype=0x0800, proto=17, ver_ihl=0x45, frag=0, ip_len_delta=0,
                udp_len_delta=0, ip_csum_xor=0, udp_csum_xor=0, udp_csum_zero=False,
                flip_byte=None, ip_id=0x1234, ttl=64, dst_mac=b"\x02\0\0\0\0\x02",
                src_mac=b"\x02\0\0\0\0\x01"):
    udp_payload = header + payload
    udp_len = 8 + len(udp_payload) + udp_len_delta
    ip_total = 20 + 8 + len(udp_payload) + ip_len_delta
    pseudo = struct.pack(">IIBBH", ip_src, ip_dst, 0, 17, udp_len)
    udp = struct.pack(">HHHH", sport, dport, udp_len, 0) + udp_payload
    c = csum16(pseudo + udp)
    c = c or 0xFFFF
    if udp_csum_zero:
        c = 0
    c ^= udp_csum_xor
    udp = udp[:6] + struct.pack(">H", c) + udp[8:]
    ip = struct.pack(">BBHHHBBHII", ver_ihl, tos, ip_total, ip_id, frag, ttl, proto, 0, ip_src,
                     ip_dst)
    ip = ip[:10] + struct.pack(">H", csum16(ip) ^ ip_csum_xor) + ip[12:]
    frame = bytearray(dst_mac + src_mac + struct.pack(">H", ethertype) + ip + udp)
    if flip_byte is not None:
        frame[flip_byte] ^= 0x01
    return bytes(frame)
