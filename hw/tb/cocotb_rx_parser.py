"""cocotb driver and checks for stride_rx_parser: Ethernet/IPv4/UDP/STRIDE frames built here
(checksums computed independently of the RTL), good ones with every header field and payload
byte checked, bad ones one per drop reason and counted. Random input gaps and output
back-pressure; a line-rate run with neither."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from frames import PORT, VERSION, build_frame, header_bytes

COUNTERS = ["ok", "mac_err", "truncated", "other", "bad_ip", "bad_csum", "bad_version",
            "bad_flags", "bad_length"]
HDR = ["flags", "payload_len", "dst_cid", "src_cid", "seq", "ack", "tx_ts", "echo_stt", "window",
       "ce_count", "ip_src", "udp_sport", "ecn_ce"]


def good(rng, payload_len, flags=None, **kw):
    if flags is None:
        flags = 0x22 if payload_len else rng.choice([0x01, 0x03, 0x02, 0x06, 0x0A, 0x10, 0x12, 0x82])
    fields = {"version": VERSION, "flags": flags, "payload_len": payload_len,
              "dst_cid": rng.getrandbits(32), "src_cid": rng.getrandbits(32),
              "seq": rng.getrandbits(32), "ack": rng.getrandbits(32), "tx_ts": rng.getrandbits(32),
              "echo_stt": rng.getrandbits(32), "window": rng.getrandbits(16),
              "ce_count": rng.getrandbits(16)}
    payload = bytes(rng.getrandbits(8) for _ in range(payload_len))
    ip_src = rng.getrandbits(32)
    sport = rng.getrandbits(16)
    tos = rng.choice([0, 1, 2, 3])
    frame = build_frame(header_bytes(fields), payload, ip_src=ip_src, sport=sport, tos=tos, **kw)
    exp = {k: v for k, v in fields.items() if k != "version"}
    exp.update(ip_src=ip_src, udp_sport=sport, ecn_ce=int(tos == 3))
    return {"frame": frame, "verdict": "ok", "hdr": exp, "payload": payload}


def bad_cases(rng):
    """One or more frames per drop reason; 'early' = dropped before any payload leaves."""
    out = []

    def add(verdict, frame, early=True, tuser=0):
        out.append({"frame": frame, "verdict": verdict, "early": early, "tuser": tuser})

    def stride(payload_len=100, **f):
        fields = {"version": VERSION, "flags": 0x22 if payload_len else 0x02,
                  "payload_len": payload_len, "dst_cid": 5, "src_cid": 6, "seq": 7, "ack": 8,
                  "tx_ts": 9, "echo_stt": 10, "window": 11, "ce_count": 12}
        fields.update(f)
        return header_bytes(fields)

    pl = bytes(rng.getrandbits(8) for _ in range(100))
    add("mac_err", build_frame(stride(), pl), early=False, tuser=1)
    out[-1]["mac_err"] = True
    add("truncated", build_frame(stride(), pl)[:41])                    # no full UDP header
    add("truncated", build_frame(stride(), pl)[:60])                    # header cut short
    add("truncated", build_frame(stride(), pl, udp_len_delta=-100 - 9, ip_len_delta=-109))
    add("truncated", build_frame(stride(), pl)[:-3], early=False, tuser=1)   # IP says longer
    add("other", build_frame(stride(), pl, ethertype=0x0806))
    add("other", build_frame(stride(), pl, proto=6))
    add("other", build_frame(stride(), pl, dport=PORT + 1))
    add("bad_ip", build_frame(stride(), pl, ver_ihl=0x46))
    add("bad_ip", build_frame(stride(), pl, frag=0x2000))               # MF
    add("bad_ip", build_frame(stride(), pl, frag=0x0001))               # offset
    add("bad_ip", build_frame(stride(), pl, ip_csum_xor=0x0100))
    add("bad_ip", build_frame(stride(), pl, ip_len_delta=-2))          # IP total < UDP + 20
    add("bad_ip", build_frame(stride(), pl) + b"\x00\x00", early=False, tuser=1)  # longer than IP
    add("bad_csum", build_frame(stride(), pl, flip_byte=80), early=False)
    add("bad_csum", build_frame(stride(), pl, udp_csum_zero=True), early=False)
    add("bad_csum", build_frame(stride(0, flags=0x02), b"", udp_csum_xor=1), early=False)
    add("bad_version", build_frame(stride(version=1), pl))
    add("bad_version", build_frame(stride(0, version=3, flags=0x02), b""))
    for f in (0x80, 0x84, 0xA2, 0x00, 0x04, 0x08, 0x20, 0x42, 0x05, 0x16):
        add("bad_flags", build_frame(stride(0 if not f & 0x20 else 100, flags=f),
                                     b"" if not f & 0x20 else pl))
    add("bad_length", build_frame(stride(99), pl))                      # payload_len != UDP - 40
    add("bad_length", build_frame(stride(0, flags=0x22), b""))          # DATA without payload
    add("bad_length", build_frame(stride(100, flags=0x02), pl))         # payload without DATA
    add("bad_length", build_frame(stride(100, flags=0x82), pl))         # ACK|CN with payload
    return out


async def drive(dut, frames, rng, gap):
    for item in frames:
        data = item["frame"]
        beats = [data[i:i + 8] for i in range(0, len(data), 8)]
        for i, b in enumerate(beats):
            while gap and rng.random() < gap:
                dut.s_axis_tvalid.value = 0
                await RisingEdge(dut.clk)
            dut.s_axis_tdata.value = int.from_bytes(b.ljust(8, b"\0"), "little")
            dut.s_axis_tkeep.value = (1 << len(b)) - 1
            dut.s_axis_tlast.value = int(i == len(beats) - 1)
            dut.s_axis_tuser.value = int(i == len(beats) - 1 and item.get("mac_err", False))
            dut.s_axis_tvalid.value = 1
            while True:
                await ReadOnly()
                taken = bool(dut.s_axis_tready.value)
                await RisingEdge(dut.clk)
                if taken:
                    break
    dut.s_axis_tvalid.value = 0


class Monitor:
    def __init__(self, dut, rng, backpressure):
        self.dut, self.rng, self.bp = dut, rng, backpressure
        self.packets, self.done, self.cur = [], [], bytearray()
        self.stall_cycles = 0
        self.cycle = 0
        self.first_fire = None
        self.last_fire = None

    async def run(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            dut.m_axis_tready.value = int(not (self.bp and self.rng.random() < self.bp))
            await ReadOnly()
            self.cycle += 1
            if dut.s_axis_tvalid.value and not dut.s_axis_tready.value:
                self.stall_cycles += 1
            if dut.s_axis_tvalid.value and dut.s_axis_tready.value:
                if self.first_fire is None:
                    self.first_fire = self.cycle
                self.last_fire = self.cycle
            if dut.m_axis_tvalid.value and dut.m_axis_tready.value:
                keep = int(dut.m_axis_tkeep.value)
                n = bin(keep).count("1")
                assert keep == (1 << n) - 1, f"tkeep not contiguous: {keep:#x}"
                self.cur += int(dut.m_axis_tdata.value).to_bytes(8, "little")[:n]
                if dut.m_axis_tlast.value:
                    self.packets.append((bytes(self.cur), int(dut.m_axis_tuser.value)))
                    self.cur = bytearray()
            if dut.done_valid.value:
                hdr = None
                if dut.hdr_valid.value:
                    hdr = {k: int(getattr(dut, "hdr_" + k).value) for k in HDR}
                self.done.append((hdr, int(dut.done_payload.value), self.cycle))
            else:
                assert not dut.hdr_valid.value, "hdr_valid without done_valid"


async def setup(dut):
    cocotb.start_soon(Clock(dut.clk, 6400, units="ps").start())   # 156.25 MHz
    dut.rst.value = 1
    dut.cfg_udp_port.value = PORT
    dut.s_axis_tvalid.value = 0
    dut.s_axis_tuser.value = 0
    dut.m_axis_tready.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


def check(dut, items, mon):
    assert len(mon.done) == len(items), (len(mon.done), len(items))
    packets = list(mon.packets)
    counts = {k: 0 for k in COUNTERS}
    for i, (item, (hdr, had_payload, _)) in enumerate(zip(items, mon.done)):
        counts[item["verdict"]] += 1
        where = f"frame {i} ({item['verdict']}, {len(item['frame'])} bytes)"
        pkt = packets.pop(0) if had_payload else None
        if item["verdict"] == "ok":
            assert hdr == item["hdr"], f"{where}: header {hdr} != {item['hdr']}"
            if item["payload"]:
                assert pkt is not None, f"{where}: payload missing"
                assert pkt == (item["payload"], 0), f"{where}: payload differs"
            else:
                assert pkt is None, f"{where}: payload out of an empty packet"
        else:
            assert hdr is None, f"{where}: a dropped frame produced a header"
            if item.get("early", True):
                assert pkt is None, f"{where}: payload of a frame failing a header check"
            elif pkt is not None and item.get("tuser"):
                assert pkt[1] == 1, f"{where}: condemned payload without tuser"
    assert not packets, f"{len(packets)} payload packets left over"
    got = {k: int(getattr(dut, "cnt_" + k).value) for k in COUNTERS}
    assert got == counts, f"counters {got} != expected {counts}"


@cocotb.test()
async def parse_and_drop(dut):
    rng = random.Random(int(os.environ.get("PARSER_SEED", "1")))
    await setup(dut)
    items = []
    # payload sizes around every lane boundary of the last beat, and large ones
    for n in [0] * 8 + list(range(1, 20)) + [63, 64, 65, 1000, 1440]:
        items.append(good(rng, n))
    items.append(good(rng, 0, flags=0x82))            # ACK | CN (wire v2)
    items.append(good(rng, 77, flags=0x62))           # DATA | PSH
    bad = bad_cases(rng)
    for b in bad:
        items.append(b)
        items.append(good(rng, rng.choice([0, 3, 6, 7, 200])))   # a good frame right after
    mon = Monitor(dut, rng, float(os.environ.get("PARSER_BP", "0.3")))
    cocotb.start_soon(mon.run())
    await RisingEdge(dut.clk)
    await drive(dut, items, rng, float(os.environ.get("PARSER_GAP", "0.2")))
    for _ in range(40):
        await RisingEdge(dut.clk)
    check(dut, items, mon)
    assert {b["verdict"] for b in bad} == set(COUNTERS) - {"ok"}


@cocotb.test()
async def line_rate(dut):
    """Back-to-back frames with no gaps and no back-pressure: the parser takes one beat per
    clock (never lowers s_axis_tready) and the header comes 3 cycles after the last beat."""
    rng = random.Random(2)
    await setup(dut)
    size = int(os.environ.get("PARSER_LINE_PAYLOAD", "1440"))
    count = int(os.environ.get("PARSER_LINE_COUNT", "50"))
    items = [good(rng, size) for _ in range(count)]
    # and pure ACKs (74-byte frames, 10 beats) back to back, mixed with payloads ending in
    # every lane (the extra output beat must not stall)
    items += [good(rng, 0) for _ in range(count)]
    items += [good(rng, n) for n in range(1, 17)] * 2
    mon = Monitor(dut, rng, 0.0)
    cocotb.start_soon(mon.run())
    await RisingEdge(dut.clk)
    await drive(dut, items, rng, 0.0)
    for _ in range(20):
        await RisingEdge(dut.clk)
    check(dut, items, mon)
    beats = sum((len(i["frame"]) + 7) // 8 for i in items)
    cycles = mon.last_fire - mon.first_fire + 1
    assert mon.stall_cycles == 0, f"{mon.stall_cycles} stall cycles"
    assert cycles == beats, (cycles, beats)
    per = (len(items[0]["frame"]) + 7) // 8
    dut._log.info("LINE RATE: %d frames, %d beats in %d cycles, %d cycles per %d-byte frame, "
                  "0 stalls; header latency 3 cycles after the last beat",
                  len(items), beats, cycles, per, len(items[0]["frame"]))


@cocotb.test()
async def header_latency(dut):
    """hdr_valid comes exactly 3 cycles after the frame's last beat."""
    rng = random.Random(3)
    await setup(dut)
    mon = Monitor(dut, rng, 0.0)
    cocotb.start_soon(mon.run())
    items = [good(rng, 0, flags=0x06)]
    await drive(dut, items, rng, 0.0)
    for _ in range(10):
        await RisingEdge(dut.clk)
    check(dut, items, mon)
    assert mon.done[0][2] - mon.last_fire == 3, (mon.done[0][2], mon.last_fire)

