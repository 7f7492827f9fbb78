"""The sender's pacing after a long idle spell: the elapsed-tick saturation of the token bucket.

stride_tx_sender credits a connection rate x (ticks since its last pacing update) x 2^TICK_LOG2,
with the ticks counted modulo 2^26 (`now` >> TICK_LOG2) and saturated at 2^16 - 1 (4.2 ms), and
caps the credit at the burst. Only the low 16 bits of the elapsed count reach the multiply; the
saturation (high part not zero) is decided apart (pc_sat), from two equalities of the high bits
and the borrow out of the low ones. A bucket left idle for 2^16 ticks or more must be credited as
for 2^16 - 1 ticks, not for the low 16 bits of the count.

The testbench holds `now` still and moves it in jumps, so that every pacing update of the one
connection sees either no elapsed time or exactly the jump. Per case: install the connection
with a chosen rate (credit = the burst), ring the doorbell for more than the bucket allows, let it
send until its credit is negative (time still), jump `now` by D ticks (time still again), and
count the packets it sends back to back until it waits again. Cases: D just below 2^16, exactly
2^16 (saturated: the same credit as 2^16 - 1), above it at a high rate (capped at the burst) and
at a low rate (not capped: the saturated count shows whole), far above (high part 16), and with
the tick counter's high part wrapping (from 2^26 - x to a small count, below and above 2^16, and
with the borrow taking the high part below zero).

Checked against a Python token bucket (below) at every write of the connection's record (the
table's write port): credit (2^-20 bytes, signed), update time and rate, the departure decision
(a departure only with credit >= 0 after the accrual; a connection with data and such credit
that does not depart is an error) and the charge (payload + 74 bytes); and per case the number of
packets sent back to back after the jump against the model's.
Checked to fail with pc_sat tied to 0 (the count taken modulo 2^16) in a copy of the RTL."""
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from bus import handshake, reset

M32 = 0xFFFFFFFF
N = int(os.environ.get("PACE_N", "4"))
CTX = int(os.environ.get("PACE_CTX", "1"))
BUF_LOG2 = int(os.environ.get("PACE_BUF_LOG2", "15"))
MAXP = int(os.environ.get("PACE_MAXP", "256"))
BURST = int(os.environ.get("PACE_BURST", "4096"))
RING = 1 << BUF_LOG2
OVH = 74
TICK_LOG2, TLW, DTW = 6, 26, 16
CAP = BURST << 20
# record layout (stride_tx_sender.v)
R_VALID, R_NXT, R_RATE, R_CRED, R_TL = 0, 177, 487, 519, 561
CRW = 42
R_LO = 500          # 2^-20 bytes/ns: 2^16 - 1 ticks earn 2000 bytes, less than the burst
R_HI = 1 << 19      # 0.5 bytes/ns: 32 bytes per tick, the burst refills in 128 ticks

# (name, rate, tick of the install, D: ticks from there to the jump)
CASES = [
    ("below 2^16, borrow", R_LO, 0x0012345, (1 << 16) - 1),
    ("exactly 2^16", R_LO, 0x0012345, 1 << 16),
    ("exactly 2^16, no borrow", R_LO, 0x0230000, 1 << 16),
    ("2^16 + 3, capped at the burst", R_HI, 0x0012345, (1 << 16) + 3),
    ("2^16 + 2^15, not capped", R_LO, 0x0001000, (1 << 16) + (1 << 15)),
    ("2^20 + 7", R_LO, 0x0100007, (1 << 20) + 7),
    ("high part wraps, below 2^16", R_LO, (1 << 26) - 0x100, 0xFF80),
    ("high part wraps, 2^16 + 16", R_LO, (1 << 26) - 0x100, 0x10010),
    ("high part wraps, 2^16 + 16, capped", R_HI, (1 << 26) - 0x100, 0x10010),
    ("high part less one wraps, 2^16 + 0x110", R_LO, 0x3FEFF00, 0x10110),
    ("high part wraps, 0x8000", R_LO, (1 << 26) - 0x100, 0x8000),
]


def signed(v, bits):
    return v - (1 << bits) if v >> (bits - 1) else v


def accrue(cred, rate, tl, tick):
    """Credit after a pacing update at `tick` (before any charge, not yet capped)."""
    dt = min((tick - tl) % (1 << TLW), (1 << DTW) - 1)
    return cred + ((rate * dt) << TICK_LOG2)


class Bucket:
    def __init__(self):
        self.cred = self.tl = self.rate = self.nxt = None
        self.end = None             # stream end rung (None: nothing to send)


@cocotb.test()
async def pacing_saturation(dut):
    cocotb.start_soon(Clock(dut.clk, 8, units="ns").start())
    for name in ["rst", "ctl_valid", "wr_valid", "db_valid", "snd_valid", "ack_valid"]:
        getattr(dut, name).value = 0
    dut.d_ready.value = 1
    dut.m_axis_tready.value = 1
    cfg = {"cfg_window": 4096, "cfg_beta": 1 << 12, "cfg_wbeta": 1 << 10, "cfg_t_low": 5000,
           "cfg_t_high": 80000, "cfg_rate_min": 1, "cfg_rate_max": 1 << 24,
           "cfg_rate_init": R_LO, "cfg_min_window": 256}
    for k, v in cfg.items():
        getattr(dut, k).value = v
    now = [0]           # ns, held by the testbench; moved only by the test
    hist = []           # `now` in the last clocks

    async def clock():
        while True:
            dut.now.value = now[0] & M32
            hist.append(now[0])
            del hist[:-16]
            await RisingEdge(dut.clk)

    cocotb.start_soon(clock())
    await reset(dut, 4, N + 20)

    b = Bucket()
    st = {"deps": 0, "waits": 0, "rate_ops": 0, "writes": 0}
    tab = dut.table_

    async def monitor():
        while True:
            await ReadOnly()
            if int(dut.d_valid.value) and int(dut.d_ready.value) and int(dut.d_len.value):
                assert int(dut.d_len.value) == MAXP, f"departure of {int(dut.d_len.value)} bytes"
                st["deps"] += 1
            if int(tab.wr_en.value) and int(tab.wr_addr.value) == CTX and \
                    not int(dut.clearing.value):
                check_write(int(tab.wr_data.value))
            await RisingEdge(dut.clk)

    def check_write(rec):
        st["writes"] += 1
        cred = signed((rec >> R_CRED) & ((1 << CRW) - 1), CRW)
        tl = (rec >> R_TL) & ((1 << TLW) - 1)
        rate = (rec >> R_RATE) & M32
        nxt = (rec >> R_NXT) & M32
        valid = rec & 1
        ticks = {(t >> TICK_LOG2) & ((1 << TLW) - 1) for t in hist}
        if int(dut.x_is_ctl.value):
            if not valid:           # removed: the pacing state is not used again
                b.cred = None
                return
            assert cred == CAP and tl in ticks, ("install", cred, tl, ticks)
            b.cred, b.tl, b.rate, b.nxt, b.end = cred, tl, rate, nxt, None
            return
        if b.cred is None:
            return
        paces = int(dut.x_is_send.value) or (int(dut.x_is_rate.value) and valid)
        if not paces:
            assert (cred, tl) == (b.cred, b.tl), ("a write that does not pace changed the "
                                                  "bucket", cred, tl, b.cred, b.tl)
            return
        assert tl in ticks, ("update time", tl, ticks)
        acc = accrue(b.cred, b.rate, b.tl, tl)
        capped = min(acc, CAP)
        if int(dut.x_is_rate.value):
            st["rate_ops"] += 1
            assert cred == capped, ("rate op", cred, capped, b.cred, b.tl, tl)
            b.rate = rate
        else:
            sent = (nxt - b.nxt) & M32
            has_data = b.end is not None and b.nxt != b.end
            if sent:
                assert acc >= 0 and sent == MAXP, ("departure without credit", acc, sent)
                want = capped - ((sent + OVH) << 20)
            else:
                assert not (has_data and acc >= 0), ("eligible but held", acc, b.nxt, b.end)
                want = capped
                st["waits"] += 1
            assert cred == want, ("credit", cred, want, b.cred, b.tl, tl, sent)
            b.nxt = nxt
        b.cred, b.tl = cred, tl

    cocotb.start_soon(monitor())

    async def ctl(op, iss):
        for k, v in {"ctl_op": op, "ctl_ctx": CTX, "ctl_cid": 0x1000 | CTX,
                     "ctl_peer_cid": 0x77, "ctl_peer_ip": 0x0a000002, "ctl_peer_port": 4791,
                     "ctl_snd_nxt": iss, "ctl_rcv_nxt": 0, "ctl_peer_window": 4096}.items():
            getattr(dut, k).value = v
        await handshake(dut, "ctl_valid", "ctl_ready")

    async def settle(limit=6000):
        """Until the connection waits for credit again (three updates without a departure
        after the last departure), time still."""
        w0, d0 = st["waits"], st["deps"]
        for _ in range(limit):
            await RisingEdge(dut.clk)
            if st["deps"] != d0:
                w0, d0 = st["waits"], st["deps"]
            if st["waits"] >= w0 + 3:
                return
        assert False, "the connection did not settle"

    def predict(cred, rate, tl, tick):
        """Packets sent back to back from a pacing update at `tick` with time held still."""
        acc, k = accrue(cred, rate, tl, tick), 0
        while acc >= 0:
            acc = min(acc, CAP) - ((MAXP + OVH) << 20)
            k += 1
        return k

    report = []
    for i, (name, rate, t0, d) in enumerate(CASES):
        dut.cfg_rate_init.value = rate
        now[0] = (t0 << TICK_LOG2) + 17              # within the tick
        for _ in range(8):
            await RisingEdge(dut.clk)
        iss = (0x5000_0000 + i * 0x10_0000) & M32
        await ctl(1, iss)
        r0 = st["rate_ops"]
        for _ in range(400):
            await RisingEdge(dut.clk)
            if st["rate_ops"] > r0:
                break
        assert st["rate_ops"] == r0 + 1 and b.rate == rate, ("rate result", b.rate, rate)
        # a full bucket, time still: what the burst allows
        d0 = st["deps"]
        b.end = (iss + RING) & M32
        dut.db_ctx.value = CTX
        dut.db_end.value = b.end
        await handshake(dut, "db_valid", "db_ready")
        await settle()
        first = st["deps"] - d0
        assert first == predict(CAP, rate, 0, 0), (name, "first burst", first)
        assert b.cred < 0
        # the idle spell: D ticks at once
        want = predict(b.cred, rate, b.tl, (t0 + d) % (1 << TLW))
        cred_before = b.cred
        d1 = st["deps"]
        now[0] = ((t0 + d) << TICK_LOG2) + 17
        await settle()
        got = st["deps"] - d1
        report.append((name, d, rate, cred_before / (1 << 20), got, want))
        dut._log.info(f"{name}: D = {d:#x} ticks, rate {rate}, credit before "
                      f"{cred_before / (1 << 20):.1f} B: {got} packets back to back "
                      f"(model {want})")
        assert got == want, (name, got, want)
        if rate == R_HI and d >= 1 << DTW:
            assert want == first, (name, "a saturated high-rate bucket is full", want, first)
        await ctl(2, iss)
        for _ in range(200):
            await RisingEdge(dut.clk)
    # 2^16 - 1 and 2^16 ticks give the same credit (saturation), from the same state
    assert report[0][4] == report[1][4]
    dut._log.info(f"{st['writes']} record writes checked, {st['rate_ops']} rate results, "
                  f"{st['deps']} departures")
    assert st["writes"] > 0
