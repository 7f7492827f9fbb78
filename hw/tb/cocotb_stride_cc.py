"""cocotb test of stride_cc: every event of every case, back to back at one event per clock, and
every output bit compared with what stride-proto produced."""
import json
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from common import BRANCHES, EVENTS

LATENCY = 6
FIELDS = ("rate", "d", "stt_old", "min_cur", "min_prev", "count")


async def reset(dut, p):
    dut.cfg_beta.value = p["beta"]
    dut.cfg_wbeta.value = p["wbeta"]
    dut.cfg_t_low.value = p["t_low"]
    dut.cfg_t_high.value = p["t_high"]
    dut.cfg_rate_min.value = p["rate_min"]
    dut.cfg_rate_max.value = p["rate_max"]
    dut.cfg_rate_init.value = p["rate_init"]
    dut.cfg_min_window.value = p["min_window"]
    dut.in_valid.value = 0
    dut.in_event.value = 0
    dut.in_stt.value = 0
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def collect(dut, n, out):
    cycles = 0
    while len(out) < n:
        await RisingEdge(dut.clk)
        await ReadOnly()
        cycles += 1
        assert cycles < n + LATENCY + 50, "outputs stopped arriving"
        if int(dut.out_valid.value):
            out.append({
                "rate": int(dut.out_rate.value),
                "d": int(dut.out_d.value),
                "stt_old": int(dut.out_stt_old.value),
                "min_cur": int(dut.out_min_cur.value),
                "min_prev": int(dut.out_min_prev.value),
                "count": int(dut.out_count.value),
                "branch": int(dut.out_branch.value),
                "cycle": cycles,
            })


@cocotb.test()
async def vectors(dut):
    cases = json.loads(open(os.environ["STRIDE_CASES"]).read())
    cocotb.start_soon(Clock(dut.clk, 4, units="ns").start())
    checked = 0
    for case in cases:
        await reset(dut, case["params"])
        steps = case["steps"]
        out = []
        mon = cocotb.start_soon(collect(dut, len(steps), out))
        for s in steps:
            dut.in_valid.value = 1
            dut.in_event.value = EVENTS[s["event"]]
            dut.in_stt.value = s.get("stt", 0)
            await RisingEdge(dut.clk)
        dut.in_valid.value = 0
        await mon
        # one result per clock: the pipeline accepted an event every cycle
        assert [o["cycle"] for o in out] == list(range(out[0]["cycle"], out[0]["cycle"] + len(steps)))
        for i, (s, o) in enumerate(zip(steps, out)):
            for f in FIELDS:
                want = s[f] & (0xFFFFFFFF if f != "count" else 0xFFFF)
                assert o[f] == want, f"{case['name']} step {i} ({s['event']}): {f} = {o[f]}, stride-proto says {want}"
            assert o["branch"] == BRANCHES[s["branch"]], f"{case['name']} step {i}: branch"
            checked += 1
        await RisingEdge(dut.clk)
    dut._log.info("checked %d events bit for bit", checked)
