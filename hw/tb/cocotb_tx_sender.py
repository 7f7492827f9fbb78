"""cocotb checks for stride_tx_sender against receivers modelled here (spec §6.3-6.4: in-order
delivery, one NACK per gap, cumulative ACKs every few packets and on PSH), with host software
that writes each connection's stream into its ring as acknowledgements free it.

Several connections send at once; the testbench, standing in for the frame builder, takes
descriptors and payload words with random back-pressure, drops DATA at random (and, in one
phase, everything for a while, so the retransmission timer has to fire), delays the feedback,
and injects ACK/NACK requests of the receive side. Checked: every DATA descriptor's payload
equals the stream bytes at its seq, its fields (cids, peer, ack carried, PSH exactly when it
reaches the doorbell's end, length rules); every ACK/NACK descriptor's fields (seq = snd_max);
go-back-N resends from the NACKed byte and from snd_una after a timeout; each stream is
delivered complete and acknowledged; refused doorbells are counted."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from bus import handshake

M32 = 0xFFFFFFFF
N = int(os.environ.get("SENDER_N", "4"))
BUF_LOG2 = int(os.environ.get("SENDER_BUF_LOG2", "13"))
RING = 1 << BUF_LOG2
MAXP = 1440
LIMIT = int(os.environ.get("SENDER_LIMIT", "200000"))
GB_BOUND = 2000   # cycles; the first RTO is 2500 cycles
DFIELDS = ["flags", "len", "dst_cid", "src_cid", "seq", "ack", "echo_stt", "window", "ce_count",
           "peer_ip", "peer_port"]


def lt(a, b):
    return ((a - b) & M32) >> 31 == 1


class Conn:
    def __init__(self, rng, ctx, size):
        self.ctx = ctx
        self.cid = (rng.getrandbits(20) << 10) | ctx
        self.pcid = rng.getrandbits(32) | 1
        self.ip, self.port = rng.getrandbits(32), rng.getrandbits(16)
        self.iss = rng.getrandbits(32)
        self.rack = rng.getrandbits(32)
        self.data = bytes(rng.getrandbits(8) for _ in range(size))
        self.written = 0      # bytes written into the ring and rung
        self.una = 0          # acknowledged (relative)
        self.rcv = 0          # receiver model: next expected (relative)
        self.nack_for = None  # receiver: rcv_nxt a NACK is outstanding for
        self.since_ack = 0
        self.max_sent = 0     # relative snd_max as seen in descriptors
        self.gb_expect = None  # (seq, cycle) a NACK asked to resend
        self.last_nack = None
        self.forced = False   # the one loss every stream of more than 3 packets has (a gap)


@cocotb.test()
async def senders_against_receivers(dut):
    rng = random.Random(int(os.environ.get("SEED", "7")))
    cocotb.start_soon(Clock(dut.clk, 8, units="ns").start())
    for name in ["rst", "ctl_valid", "wr_valid", "db_valid", "snd_valid", "ack_valid",
                 "d_ready", "m_axis_tready"]:
        getattr(dut, name).value = 0
    dut.rst.value = 1
    rate_max = 1310720
    cfg = {"cfg_window": 4096, "cfg_beta": rate_max >> 6, "cfg_wbeta": rate_max >> 8,
           "cfg_t_low": 5000, "cfg_t_high": 80000, "cfg_rate_min": 1311,
           "cfg_rate_max": rate_max, "cfg_rate_init": rate_max, "cfg_min_window": 256}
    for k, v in cfg.items():
        getattr(dut, k).value = v
    cycle = [0]

    async def clock():
        while True:
            dut.now.value = (cycle[0] * 8) & M32
            await RisingEdge(dut.clk)
            cycle[0] += 1

    cocotb.start_soon(clock())
    for _ in range(4):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(N + 4):
        await RisingEdge(dut.clk)

    sizes = [20000, 13333, 8, 9001][:N] if N > 1 else [30000]
    conns = [Conn(rng, i, s) for i, s in enumerate(sizes)]

    async def ctl(op, c, window=4096):
        dut.ctl_op.value = op
        dut.ctl_ctx.value = c.ctx
        dut.ctl_cid.value = c.cid
        dut.ctl_peer_cid.value = c.pcid
        dut.ctl_peer_ip.value = c.ip
        dut.ctl_peer_port.value = c.port
        dut.ctl_snd_nxt.value = c.iss
        dut.ctl_rcv_nxt.value = c.rack
        dut.ctl_peer_window.value = window
        await handshake(dut, "ctl_valid", "ctl_ready")

    async def doorbell(c, end):
        dut.db_ctx.value = c.ctx
        dut.db_end.value = end & M32
        await handshake(dut, "db_valid", "db_ready")

    for c in conns:
        await ctl(1, c)

    # host software: fill rings in 4 KiB chunks (word-aligned ends but the stream's last)
    async def host():
        errs = 0
        # a refused doorbell first: beyond the ring
        await doorbell(conns[0], conns[0].iss + RING + 8)
        errs += 1
        while any(c.written < len(c.data) for c in conns):
            progress = False
            for c in conns:
                room = RING - (c.written - c.una)
                n = min(4096, len(c.data) - c.written, room)
                if n < len(c.data) - c.written:
                    n &= ~7
                if n <= 0:
                    continue
                for w in range(c.written // 8 * 8, c.written + n, 8):
                    dut.wr_valid.value = 1
                    dut.wr_ctx.value = c.ctx
                    dut.wr_addr.value = (w % RING) // 8
                    dut.wr_data.value = int.from_bytes(c.data[w:w + 8].ljust(8, b"\0"), "little")
                    await RisingEdge(dut.clk)
                dut.wr_valid.value = 0
                c.written += n
                await doorbell(c, c.iss + c.written)
                progress = True
            if not progress:
                await RisingEdge(dut.clk)
        # a doorbell that moves the end backwards is refused
        await doorbell(conns[0], conns[0].iss + conns[0].written - 8)
        errs += 1
        return errs

    host_task = cocotb.start_soon(host())

    feedback = []      # [cycle due, fields]
    events = {"nacks": 0, "acks": 0, "drops": 0, "ctl_desc": 0, "resends": 0, "stale": 0,
              "gbn_seen": 0}
    pending_ctl = []   # ACK/NACK requests we injected, awaiting their descriptor
    blackout = [False]
    byctx = {c.ctx: c for c in conns}

    def receiver(c, seq, payload, flags):
        rel = (seq - c.iss) & M32
        drop = blackout[0] or rng.random() < 0.03
        # one certain gap per stream (the first packet sent from its middle third, when more
        # follow), so go-back-N on NACK is exercised whatever the random draws
        if (not c.forced and len(c.data) // 3 <= rel and rel + len(payload) < len(c.data)
                and len(payload) > 0 and not blackout[0]):
            c.forced = drop = True
        if drop:
            events["drops"] += 1
            return
        if rel == c.rcv:
            c.rcv += len(payload)
            c.nack_for = None
            c.since_ack += 1
            if c.since_ack >= 4 or flags & 0x40:
                c.since_ack = 0
                feedback.append([cycle[0] + rng.randint(20, 400), c, 0x02, c.rcv])
            else:
                # the delayed-ACK timer (spec §6.4, 3), shortened
                feedback.append([cycle[0] + 1500, c, 0x02, c.rcv])
        elif lt(rel, c.rcv):
            if flags & 0x40:
                feedback.append([cycle[0] + rng.randint(20, 400), c, 0x02, c.rcv])
        elif c.nack_for != c.rcv:
            c.nack_for = c.rcv
            feedback.append([cycle[0] + rng.randint(20, 400), c, 0x06, c.rcv])

    descs, words = [], []
    cur = []
    done = lambda: all(c.una == len(c.data) for c in conns)  # noqa: E731
    blackout_at, blackout_len = 1500, 6000   # cycles
    # run until every stream is acknowledged and every injected ACK/NACK request has left as a
    # descriptor (requests stop once the streams are done)
    while not done() or pending_ctl:
        assert cycle[0] < LIMIT, (f"not done: {[(c.una, c.rcv, c.written, len(c.data)) for c in conns]} "
                                  f"{events}")
        if cycle[0] % 10000 == 0:
            dut._log.info("cycle %d: %s %s", cycle[0],
                          [(c.una, c.rcv, c.written, len(c.data)) for c in conns], events)
        blackout[0] = blackout_at <= cycle[0] < blackout_at + blackout_len
        for c in conns:
            assert not c.gb_expect or cycle[0] - c.gb_expect[1] < GB_BOUND, \
                f"no go-back-N resend of {c.gb_expect} on ctx {c.ctx} at {cycle[0]}"
        dut.d_ready.value = int(rng.random() < 0.8)
        dut.m_axis_tready.value = int(rng.random() < 0.85)
        # feedback into snd_*
        due = [f for f in feedback if f[0] <= cycle[0]]
        dut.snd_valid.value = 0
        if due and rng.random() < 0.5:
            f = due[0]
            feedback.remove(f)
            _, c, flags, rel = f
            dut.snd_valid.value = 1
            dut.snd_ctx.value = c.ctx
            dut.snd_flags.value = flags
            dut.snd_ack.value = (c.iss + rel) & M32
            dut.snd_window.value = 4096
            dut.snd_echo_stt.value = rng.randint(1000, 2000)
            events["nacks" if flags == 0x06 else "acks"] += 1
            if flags == 0x06 and c.una <= rel < c.max_sent and c.last_nack != rel:
                # go-back-N: the NACKed byte must be resent soon (the descriptors already
                # queued drain first), long before a retransmission timeout could do it
                c.gb_expect = ((c.iss + rel) & M32, cycle[0])
            if flags == 0x06:
                c.last_nack = rel
        # receive-side ACK/NACK requests
        dut.ack_valid.value = 0
        if rng.random() < 0.002 and not done():
            c = rng.choice(conns)
            req = {"ctx": c.ctx, "nack": rng.random() < 0.3, "ack": rng.getrandbits(32),
                   "echo": rng.getrandbits(32), "ce": rng.getrandbits(16)}
            dut.ack_valid.value = 1
            dut.ack_ctx.value = req["ctx"]
            dut.ack_nack.value = int(req["nack"])
            dut.ack_ack.value = req["ack"]
            dut.ack_echo_stt.value = req["echo"]
            dut.ack_ce_count.value = req["ce"]
            pending_ctl.append(req)
        await ReadOnly()
        if dut.d_valid.value and dut.d_ready.value:
            d = {k: int(getattr(dut, "d_" + k).value) for k in DFIELDS}
            descs.append(d)
        if dut.m_axis_tvalid.value and dut.m_axis_tready.value:
            n = bin(int(dut.m_axis_tkeep.value)).count("1")
            cur.append(int(dut.m_axis_tdata.value).to_bytes(8, "little")[:n])
            if dut.m_axis_tlast.value:
                words.append(b"".join(cur))
                cur = []
        await RisingEdge(dut.clk)
        # match DATA descriptors with their payloads, in order
        while descs and (descs[0]["len"] == 0 or words):
            d = descs.pop(0)
            c = next((x for x in conns if x.ctx == (d["src_cid"] & 1023)), None)
            assert c is not None and d["src_cid"] == c.cid and d["dst_cid"] == c.pcid
            assert d["peer_ip"] == c.ip and d["peer_port"] == c.port and d["window"] == 4096
            if d["len"] == 0:
                req = pending_ctl.pop(0)
                assert byctx[req["ctx"]] is c
                assert d["flags"] == (0x06 if req["nack"] else 0x02)
                assert (d["ack"], d["echo_stt"], d["ce_count"]) == \
                    (req["ack"], req["echo"], req["ce"])
                assert d["seq"] == (c.iss + c.max_sent) & M32, "ACK seq must be snd_max"
                c.rack = req["ack"]
                events["ctl_desc"] += 1
                continue
            p = words.pop(0)
            rel = (d["seq"] - c.iss) & M32
            assert len(p) == d["len"] and 0 < d["len"] <= MAXP
            # bytes below what the host saw acknowledged may have been overwritten since the
            # descriptor was queued (a resend the ACK overtook; see stride_tx_sender.v)
            k = max(0, min(d["len"], c.una - rel))
            events["stale"] += k > 0
            assert p[k:] == c.data[rel + k:rel + d["len"]], \
                f"payload of ctx {c.ctx} at {rel} differs"
            assert k == 0 or rel < c.una
            assert rel + d["len"] <= c.written
            assert d["ack"] == c.rack, "DATA carries the receive side's latest ack"
            assert d["echo_stt"] == 0
            # DATA flags; PSH exactly when the packet reaches the stream's current end is
            # checked loosely: PSH implies the packet ended at a doorbell's end
            assert d["flags"] in (0x22, 0x62)
            if rel < c.max_sent:
                events["resends"] += 1
            if c.gb_expect and d["seq"] == c.gb_expect[0]:
                events["gbn_seen"] += 1
                c.gb_expect = None
            c.max_sent = max(c.max_sent, rel + d["len"])
            receiver(c, d["seq"], p, d["flags"])
        # acknowledgements reach the host (una_valid)
        if dut.una_valid.value:
            c = byctx[int(dut.una_ctx.value)]
            c.una = (int(dut.una.value) - c.iss) & M32
    errs = await host_task
    for _ in range(10):
        await RisingEdge(dut.clk)
    await ReadOnly()
    for c in conns:
        assert c.rcv == len(c.data)
    assert not pending_ctl
    counters = {k: int(getattr(dut, "cnt_" + k).value) for k in
                ["data", "resent", "ctl_pkts", "gbn_nack", "nack_held", "rto", "db_err",
                 "overrun"]}
    dut._log.info("SENDER: %s %s at cycle %d", events, counters, cycle[0])
    assert counters["db_err"] == errs
    assert counters["overrun"] == 0
    assert counters["gbn_nack"] > 0 and counters["rto"] > 0 and counters["resent"] > 0
    assert events["gbn_seen"] > 0
    assert counters["resent"] == events["resends"]
    assert counters["ctl_pkts"] == events["ctl_desc"]
