"""cocotb test of stride_pacer: grants compared cycle by cycle with the token-bucket rule of
docs/spec.md section 9 (hardware form), and the long-run rate with the configured rate."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

CLK_NS_LOG2 = int(os.environ.get("PACER_CLK_NS_LOG2", "2"))
BURST = int(os.environ.get("PACER_BURST", "16384"))
CAP = BURST << 20


@cocotb.test()
async def pacing(dut):
    cocotb.start_soon(Clock(dut.clk, 1 << CLK_NS_LOG2, units="ns").start())
    rng = random.Random(7)
    for gbps in (1.0, 10.0, 37.5, 100.0):
        rate = round(gbps / 8 * (1 << 20))
        await Timer(1, units="ps")
        dut.rate.value = rate
        dut.req_valid.value = 0
        dut.req_len.value = 0
        dut.rst.value = 1
        await RisingEdge(dut.clk)
        await RisingEdge(dut.clk)
        dut.rst.value = 0
        credit = CAP
        granted_bytes = 0
        cycles = 20000
        first_grant = None
        for cyc in range(cycles):
            await Timer(1, units="ps")  # leave the read-only phase before driving
            length = rng.choice((64, 1500, 9000, rng.randint(1, 9000)))
            dut.req_valid.value = 1
            dut.req_len.value = length
            await Timer(1, units="ps")
            await ReadOnly()
            got = int(dut.req_ready.value)
            want = 1 if credit >= 0 else 0
            assert got == want, f"{gbps} Gbit/s cycle {cyc}: grant {got}, model {want} (credit {credit})"
            filled = min(credit + (rate << CLK_NS_LOG2), CAP)
            credit = filled - (length << 20) if want else filled
            if want:
                granted_bytes += length
                first_grant = cyc if first_grant is None else first_grant
            await RisingEdge(dut.clk)
            await ReadOnly()
            got_credit = dut.credit_out.value.signed_integer
            assert got_credit == credit, f"cycle {cyc}: credit {got_credit}, model {credit}"
        # Long run: bytes granted = burst + rate x time, within one packet.
        elapsed_ns = cycles << CLK_NS_LOG2
        expected = BURST + rate * elapsed_ns / (1 << 20)
        assert abs(granted_bytes - expected) <= 9000, f"{gbps} Gbit/s: {granted_bytes} B vs {expected:.0f} B"
        dut._log.info("%.1f Gbit/s: granted %d B over %d ns (%.3f Gbit/s)", gbps, granted_bytes,
                      elapsed_ns, (granted_bytes - BURST) * 8 / elapsed_ns)
