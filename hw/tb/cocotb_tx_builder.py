"""cocotb checks for stride_tx_builder: every frame it sends must equal, byte for byte, the frame
tb/frames.py builds (checksums computed here, independently of the RTL) from the same
descriptor, payload and the tx_ts the RTL stamped, which must be `now` of the frame's start.
Random descriptors (DATA of 1-1440 bytes with every last-beat lane, ACK, NACK, ACK|CN), random
payload gaps and output back-pressure; then a line-rate run: 1440-byte DATA frames back to back,
exactly 190 cycles each, m_axis_tvalid never low between them."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from frames import build_frame, header_bytes

SRC_MAC = bytes.fromhex("021122334455")
DST_MAC = bytes.fromhex("02aabbccddee")
CFG_IP, CFG_PORT = 0x0A000002, 0x5354
DFIELDS = ["flags", "len", "dst_cid", "src_cid", "seq", "ack", "echo_stt", "window", "ce_count",
           "peer_ip", "peer_port"]


def descriptor(rng, length):
    flags = (0x62 if rng.random() < 0.2 else 0x22) if length else rng.choice([0x02, 0x06, 0x82])
    d = {"flags": flags, "len": length, "dst_cid": rng.getrandbits(32),
         "src_cid": rng.getrandbits(32), "seq": rng.getrandbits(32), "ack": rng.getrandbits(32),
         "echo_stt": rng.getrandbits(32), "window": rng.getrandbits(16),
         "ce_count": rng.getrandbits(16), "peer_ip": rng.getrandbits(32),
         "peer_port": rng.getrandbits(16)}
    return d, bytes(rng.getrandbits(8) for _ in range(length))


def lanes(v, n):
    """The first n byte lanes of a 64-bit beat (lanes outside tkeep may be undefined)."""
    bits = v.binstr
    return bytes(int(bits[64 - 8 * (i + 1):64 - 8 * i], 2) for i in range(n))


def expected(d, payload, tx_ts):
    h = {"version": 2, "flags": d["flags"], "payload_len": d["len"], "dst_cid": d["dst_cid"],
         "src_cid": d["src_cid"], "seq": d["seq"], "ack": d["ack"], "tx_ts": tx_ts,
         "echo_stt": d["echo_stt"], "window": d["window"], "ce_count": d["ce_count"]}
    return build_frame(header_bytes(h), payload, ip_src=CFG_IP, ip_dst=d["peer_ip"],
                       sport=CFG_PORT, dport=d["peer_port"], tos=2, frag=0x4000, ip_id=0,
                       dst_mac=DST_MAC, src_mac=SRC_MAC)


async def setup(dut):
    cocotb.start_soon(Clock(dut.clk, 6400, units="ps").start())
    dut.rst.value = 1
    dut.d_valid.value = 0
    dut.s_axis_tvalid.value = 0
    dut.m_axis_tready.value = 0
    dut.now.value = 0
    dut.cfg_src_mac.value = int.from_bytes(SRC_MAC, "big")
    dut.cfg_dst_mac.value = int.from_bytes(DST_MAC, "big")
    dut.cfg_ip.value = CFG_IP
    dut.cfg_udp_port.value = CFG_PORT
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def run(dut, items, gap, backpressure, rng):
    """Drives descriptors and payloads, collects frames; returns (frames, start cycles)."""
    cycle = [0]

    async def clock():
        while True:
            await RisingEdge(dut.clk)
            cycle[0] += 1
            dut.now.value = (cycle[0] * 7 + 12345) & 0xFFFFFFFF

    async def descs():
        for d, _ in items:
            for k in DFIELDS:
                getattr(dut, "d_" + k).value = d[k]
            dut.d_valid.value = 1
            while True:
                await RisingEdge(dut.clk)
                if dut.d_ready.value:
                    break
            dut.d_valid.value = 0
            while gap and rng.random() < gap:
                await RisingEdge(dut.clk)

    async def payloads():
        for _, p in items:
            beats = [p[i:i + 8] for i in range(0, len(p), 8)]
            for i, b in enumerate(beats):
                while gap and rng.random() < gap:
                    dut.s_axis_tvalid.value = 0
                    await RisingEdge(dut.clk)
                dut.s_axis_tdata.value = int.from_bytes(b.ljust(8, b"\xa5"), "little")
                dut.s_axis_tkeep.value = (1 << len(b)) - 1
                dut.s_axis_tlast.value = int(i == len(beats) - 1)
                dut.s_axis_tvalid.value = 1
                while True:
                    await RisingEdge(dut.clk)
                    if dut.s_axis_tready.value:
                        break
            dut.s_axis_tvalid.value = 0

    cocotb.start_soon(clock())
    cocotb.start_soon(descs())
    cocotb.start_soon(payloads())
    frames, starts, nows = [], [], []
    cur = bytearray()
    first = True
    idle = 0
    while len(frames) < len(items):
        dut.m_axis_tready.value = int(not backpressure or rng.random() >= backpressure)
        await ReadOnly()
        if dut.m_axis_tvalid.value and dut.m_axis_tready.value:
            if first:
                starts.append(cycle[0])
                first = False
            n = bin(int(dut.m_axis_tkeep.value)).count("1")
            cur += lanes(dut.m_axis_tdata.value, n)
            if dut.m_axis_tlast.value:
                frames.append(bytes(cur))
                cur = bytearray()
                first = True
            idle = 0
        else:
            idle += 1
            assert idle < 5000, f"no output after {len(frames)} of {len(items)} frames"
        await RisingEdge(dut.clk)
    return frames, starts, nows


def check(dut, items, frames):
    for i, ((d, p), f) in enumerate(zip(items, frames)):
        tx_ts = int.from_bytes(f[62:66], "big")
        exp = expected(d, p, tx_ts)
        assert f == exp, (f"frame {i} (len {d['len']}, flags {d['flags']:#x}) differs:\n"
                          f"{f.hex()}\n{exp.hex()}")


@cocotb.test()
async def random_frames(dut):
    rng = random.Random(int(os.environ.get("SEED", "14")))
    await setup(dut)
    lengths = [0, 1, 2, 5, 6, 7, 8, 9, 13, 14, 15, 16, 63, 64, 65, 1000, 1438, 1439, 1440]
    lengths += [rng.choice([0, rng.randint(1, 1440)]) for _ in range(60)]
    items = [descriptor(rng, n) for n in lengths]
    frames, starts, _ = await run(dut, items, gap=0.2, backpressure=0.3, rng=rng)
    check(dut, items, frames)
    # tx_ts is `now` of the cycle the frame was started: strictly increasing, and the counter
    # moves by 7 per cycle in this test
    ts = [int.from_bytes(f[62:66], "big") for f in frames]
    assert all((b - a) % 7 == 0 and b > a for a, b in zip(ts, ts[1:]))
    await RisingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.cnt_frames.value) == len(items)
    assert int(dut.cnt_len_err.value) == 0
    dut._log.info("%d frames byte-exact", len(frames))


@cocotb.test()
async def line_rate(dut):
    rng = random.Random(5)
    await setup(dut)
    items = [descriptor(rng, 1440) for _ in range(24)] + [descriptor(rng, 0) for _ in range(8)]
    frames, starts, _ = await run(dut, items, gap=0.0, backpressure=0.0, rng=rng)
    check(dut, items, frames)
    d = [b - a for a, b in zip(starts, starts[1:])]
    # 1514-byte frames are 190 beats: back to back means a start every 190 cycles (the first
    # waits for its payload); 74-byte ACK frames are 10 beats
    assert d[:24] == [190] * 24, d
    assert d[24:] == [10] * 7, d
    dut._log.info("LINE RATE: 1440-byte DATA every %d cycles (190 beats), ACK every %d", d[1],
                  d[-1])
