"""cocotb checks for stride_rx_engine: connections installed over the control port, random
in-order / duplicate / out-of-order / FIN / PSH / CE traffic over many connections against a
model of docs/spec.md §6.3-6.4 written here, plus the delayed-ACK and NACK timers."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from bus import handshake

M32 = 0xFFFFFFFF
CLK_NS = 8   # `now` advances 8 ns per clock in these tests


def lt32(a, b):
    return ((a - b) & M32) >> 31 == 1


class Conn:
    def __init__(self, cid, ip, port, rnxt):
        self.cid, self.ip, self.port, self.rnxt = cid, ip, port, rnxt
        self.acc = 0
        self.stt = 0
        self.nack = False
        self.ooo = False
        self.ce = 0
        self.don = False


class Model:
    """The receiver rules with timers far away (the packet test sets them to 2^30 ns)."""

    def __init__(self, n, ack_interval):
        self.n, self.ack_interval = n, ack_interval
        self.conns = {}

    def packet(self, p, rx_ts):
        out = []
        idx = p["dst_cid"] & ((1 << max(1, (self.n - 1).bit_length())) - 1)
        c = self.conns.get(idx)
        matched = (idx < self.n and c is not None and c.cid == p["dst_cid"] and c.ip == p["ip_src"]
                   and c.port == p["udp_sport"])
        if not matched or p["flags"] & 0x11:
            return [("host", p["flags"], p["dst_cid"])]
        send_ack = send_nack = False
        in_order = p["seq"] == c.rnxt
        old = lt32(p["seq"], c.rnxt)
        if p["flags"] & 0x20:
            out.append(("dlv", idx, p["seq"], p["payload_len"], int(in_order)))
            if p["ecn_ce"]:
                c.ce = (c.ce + 1) & 0xFFFF
            if in_order:
                c.rnxt = (c.rnxt + p["payload_len"]) & M32
                c.stt = (rx_ts - p["tx_ts"]) & M32
                c.nack = c.ooo = False
                c.acc += p["payload_len"]
            elif old:
                c.acc += p["payload_len"]
            else:
                if not c.nack:
                    send_nack, c.nack, c.ooo = True, True, False
                else:
                    c.ooo = True
            if in_order or old:
                if c.acc >= self.ack_interval or p["flags"] & 0x40:
                    send_ack = True
                else:
                    c.don = True
        if p["flags"] & 0x08 and (in_order or (p["seq"] + 1) & M32 == c.rnxt):
            if in_order:
                c.rnxt = (c.rnxt + 1) & M32
            send_ack = True
        if send_ack:
            c.acc, c.don = 0, False
        if send_ack or send_nack:
            out.append(("ack", idx, int(send_nack and not send_ack), c.rnxt, c.stt, c.ce))
        if p["flags"] & 0x02:
            out.append(("snd", idx, p["flags"], p["ack"], p["window"], p["echo_stt"], p["tx_ts"],
                        p["ce_count"]))
        return out


class Bench:
    def __init__(self, dut):
        self.dut = dut
        self.events = []
        self.cycle = 0

    async def clock(self):
        dut = self.dut
        while True:
            await RisingEdge(dut.clk)
            self.cycle += 1
            dut.now.value = (self.cycle * CLK_NS) & M32
            await ReadOnly()
            now = self.cycle * CLK_NS
            assert not dut.hdr_overrun.value, "header overrun"
            if dut.dlv_valid.value:
                self.events.append((now, ("dlv", int(dut.dlv_ctx.value), int(dut.dlv_seq.value),
                                          int(dut.dlv_len.value), int(dut.dlv_accept.value))))
            if dut.ack_valid.value:
                self.events.append((now, ("ack", int(dut.ack_ctx.value), int(dut.ack_nack.value),
                                          int(dut.ack_ack.value), int(dut.ack_echo_stt.value),
                                          int(dut.ack_ce_count.value))))
            if dut.snd_valid.value:
                self.events.append((now, ("snd", int(dut.snd_ctx.value), int(dut.snd_flags.value),
                                          int(dut.snd_ack.value), int(dut.snd_window.value),
                                          int(dut.snd_echo_stt.value), int(dut.snd_tx_ts.value),
                                          int(dut.snd_ce_count.value))))
            if dut.host_valid.value:
                self.events.append((now, ("host", int(dut.host_flags.value),
                                          int(dut.host_dst_cid.value))))

    async def start(self):
        dut = self.dut
        cocotb.start_soon(Clock(dut.clk, 10, units="ns").start())
        dut.rst.value = 1
        dut.hdr_valid.value = 0
        dut.ctl_valid.value = 0
        dut.now.value = 0
        for _ in range(3):
            await RisingEdge(dut.clk)
        dut.rst.value = 0
        cocotb.start_soon(self.clock())

    async def control(self, op, cid, ip=0, port=0, rnxt=0):
        dut = self.dut
        await RisingEdge(dut.clk)
        dut.ctl_op.value = op
        dut.ctl_cid.value = cid
        dut.ctl_peer_ip.value = ip
        dut.ctl_peer_port.value = port
        dut.ctl_rcv_nxt.value = rnxt
        await handshake(dut, "ctl_valid", "ctl_ready")
        while not dut.ctl_rd_valid.value and op == 0:
            await RisingEdge(dut.clk)
            await ReadOnly()
        if op == 0:
            return int(dut.ctl_rd_installed.value), int(dut.ctl_rd_rcv_nxt.value)

    async def header(self, p, spacing=10):
        """Presents a header for one cycle, as the parser does; returns its rx timestamp."""
        dut = self.dut
        await RisingEdge(dut.clk)
        for k, v in p.items():
            getattr(dut, "hdr_" + k).value = v
        dut.hdr_valid.value = 1
        rx_ts = ((self.cycle + 1) * CLK_NS) & M32  # `now` during this cycle
        await RisingEdge(dut.clk)
        dut.hdr_valid.value = 0
        for _ in range(spacing - 2):
            await RisingEdge(dut.clk)
        return rx_ts


def pkt(rng, c, flags, seq, length=0, ce=0):
    return {"flags": flags, "payload_len": length, "dst_cid": c.cid, "seq": seq & M32,
            "ack": rng.getrandbits(32), "tx_ts": rng.getrandbits(32),
            "echo_stt": rng.getrandbits(32), "window": rng.getrandbits(16),
            "ce_count": rng.getrandbits(16), "ip_src": c.ip, "udp_sport": c.port, "ecn_ce": ce}


@cocotb.test()
async def traffic_against_model(dut):
    n = int(os.environ["ENGINE_N"])
    ack_interval = int(os.environ["ENGINE_ACK"])
    rng = random.Random(n)
    bench = Bench(dut)
    await bench.start()
    model = Model(n, ack_interval)
    aw = max(1, (n - 1).bit_length())
    idxs = rng.sample(range(n), min(n, 12))
    for i in idxs:
        c = Conn((rng.getrandbits(32 - aw) << aw) | i, rng.getrandbits(32), rng.getrandbits(16),
                 rng.getrandbits(32))
        model.conns[i] = c
        await bench.control(1, c.cid, c.ip, c.port, c.rnxt)
        assert await bench.control(0, c.cid) == (1, c.rnxt)
    expected = []
    marks = []   # per packet: its header's time and how many output events the model gives it
    gaps = random.Random(n + 1)   # header spacing 10-14 cycles: headers meet every op phase
    nxt = {i: model.conns[i].rnxt for i in idxs}   # the peer's next new byte
    for step in range(int(os.environ.get("ENGINE_STEPS", "1500"))):
        i = rng.choice(idxs)
        c = model.conns[i]
        r = rng.random()
        length = rng.choice([1, 100, 1440, 1440, 1440])
        flags = 0x22 | (0x40 if rng.random() < 0.05 else 0)
        if r < 0.70:
            seq = c.rnxt                                   # in order
        elif r < 0.80:
            seq = (c.rnxt - rng.randint(1, 5000)) & M32    # a resend of old bytes
        elif r < 0.90:
            seq = (c.rnxt + rng.randint(1, 5000)) & M32    # a gap
        elif r < 0.93:
            seq, flags, length = c.rnxt, 0x0A, 0           # FIN in order
        elif r < 0.95:
            seq, flags, length = (c.rnxt - 1) & M32, 0x0A, 0   # repeated FIN
        elif r < 0.97:
            seq, flags, length = c.rnxt, rng.choice([0x02, 0x06, 0x82]), 0   # ACK / NACK / CN
        elif r < 0.98:
            seq, flags, length = c.rnxt, rng.choice([0x01, 0x03, 0x10, 0x12]), 0  # to the host
        else:                                              # unknown connection or wrong peer
            other = Conn(c.cid ^ (1 << 31), c.ip, c.port, 0) if rng.random() < 0.5 else \
                Conn(c.cid, c.ip ^ 1, c.port, 0)
            p = pkt(rng, other, 0x22, 0, 100)
            rx = await bench.header(p, 10 + gaps.randrange(5))
            out = model.packet(p, rx)
            marks.append((rx, len(out)))
            expected += out
            continue
        p = pkt(rng, c, flags, seq, length if flags & 0x20 else 0, int(rng.random() < 0.1))
        rx = await bench.header(p, 10 + gaps.randrange(5))
        out = model.packet(p, rx)
        marks.append((rx, len(out)))
        expected += out
        nxt[i] = max(nxt[i], c.rnxt)
    for _ in range(10):
        await RisingEdge(dut.clk)
    got = [e for _, e in bench.events]
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"event {k}: engine {g} != model {e}"
    assert len(got) == len(expected), (len(got), len(expected))
    kinds = {e[0] for e in expected}
    assert kinds == {"dlv", "ack", "snd", "host"}, kinds
    assert any(e[0] == "ack" and e[2] == 1 for e in expected), "no NACK exercised"
    assert int(dut.cnt_gap.value) > 0 and int(dut.cnt_dup.value) > 0
    # every packet has at least one output; the events in order belong to the packets in order.
    # Each comes at most 11 cycles after its header (up to 5 cycles to the next pick, then 6
    # cycles to the outputs)
    assert all(k > 0 for _, k in marks)
    k, lats = 0, []
    for rx, cnt in marks:
        for t, e in bench.events[k:k + cnt]:
            assert 0 < t - rx <= 11 * CLK_NS, f"{e}: {t - rx} ns after its header"
            lats.append((t - rx) // CLK_NS)
        k += cnt
    dut._log.info("ENGINE LATENCY: outputs %d to %d cycles after the header", min(lats), max(lats))


@cocotb.test()
async def timers(dut):
    """Delayed ACK and NACK repeat fire after their deadline and no later than the scanner's
    bound (6 cycles per context, packets first)."""
    n = int(os.environ["ENGINE_N"])
    dack = int(os.environ["ENGINE_DACK"])
    nretry = int(os.environ["ENGINE_NACK"])
    rng = random.Random(7)
    bench = Bench(dut)
    await bench.start()
    c = Conn(n - 1, 0x0A000001, 4000, 1000)
    await bench.control(1, c.cid, c.ip, c.port, c.rnxt)
    bound = (6 * n + 18) * CLK_NS

    def acks_after(t0):
        return [(t, e) for t, e in bench.events if t > t0 and e[0] == "ack"]

    # delayed ACK: one in-order packet without PSH
    t0 = await bench.header(pkt(rng, c, 0x22, 1000, 100))
    for _ in range((dack + bound) // CLK_NS + 10):
        await RisingEdge(dut.clk)
    acks = acks_after(t0)
    assert len(acks) == 1, acks
    t, e = acks[0]
    assert e[2] == 0 and e[3] == 1100, e
    assert dack <= t - t0 <= dack + bound, (t - t0, dack, bound)

    # a gap: NACK at once; another out-of-order packet; the NACK repeats after nack_retry
    t1 = await bench.header(pkt(rng, c, 0x22, 5000, 100))
    await bench.header(pkt(rng, c, 0x22, 6000, 100))
    for _ in range((nretry + bound) // CLK_NS + 10):
        await RisingEdge(dut.clk)
    acks = acks_after(t1)
    assert [e[2] for _, e in acks] == [1, 1], acks
    assert acks[0][0] - t1 <= 11 * CLK_NS
    assert nretry <= acks[1][0] - t1 <= nretry + bound, (acks[1][0] - t1, nretry, bound)
    # nothing new out of order: no further NACK
    t2 = bench.cycle * CLK_NS
    for _ in range((nretry + bound) // CLK_NS + 10):
        await RisingEdge(dut.clk)
    assert acks_after(t2) == [], acks_after(t2)
    # the in-order resend closes the gap (ACK once the delayed-ACK timer fires)
    t3 = await bench.header(pkt(rng, c, 0x62, 1100, 100))
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    acks = acks_after(t3 - CLK_NS)
    assert len(acks) == 1 and acks[0][1][2] == 0 and acks[0][1][3] == 1200, acks
