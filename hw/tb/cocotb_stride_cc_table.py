"""cocotb test of stride_cc_table: drives planned event sequences (test_stride_cc_table.py writes
them with the expected rate and branch of every event) and checks every result in order.

The plan (STRIDE_PLAN) holds batches; each batch has one parameter set (rst and the init sweep
run before it) and a list of ops [ctx, event, stt, rate, branch]. An op is offered until the core
takes it; with probability `gap` the driver leaves in_valid low for a cycle instead (random inputs
then, which must be ignored). Every result must come exactly LATENCY cycles after its event was
taken, with the event's context, rate and branch."""
import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from common import drive_cc_idle

LATENCY = 11  # documented in stride_cc_table.v


async def reset(dut, p, n):
    await FallingEdge(dut.clk)
    drive_cc_idle(dut, p)
    dut.rst.value = 1
    for _ in range(2):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    # the init sweep: in_ready stays low for N cycles, even with an event offered
    dut.in_valid.value = 1
    for i in range(n):
        await ReadOnly()
        assert int(dut.in_ready.value) == 0, f"in_ready high {i} cycles into the init sweep of {n}"
        await FallingEdge(dut.clk)
    dut.in_valid.value = 0


async def run_batch(dut, batch, n, rng):
    p = batch["params"]
    gap = batch.get("gap", 0.0)
    ops = batch["ops"]
    cw = max(1, (n - 1).bit_length())
    await reset(dut, p, n)
    pending = []  # (due cycle, ctx, rate, branch, label)
    i = cycle = checked = 0
    busy_until = -1
    limit = len(ops) * (LATENCY + 1) * (3 if gap else 1) + 200
    while i < len(ops) or pending:
        assert cycle < limit, "the core stopped taking events or producing results"
        offer = i < len(ops) and not (gap and rng.random() < gap)
        if offer:
            ctx, ev, stt, want_rate, want_branch = ops[i]
            dut.in_valid.value = 1
            dut.in_ctx.value = ctx
            dut.in_event.value = ev
            dut.in_stt.value = stt
        else:
            dut.in_valid.value = 0
            dut.in_ctx.value = rng.getrandbits(cw)
            dut.in_event.value = rng.randrange(4)
            dut.in_stt.value = rng.getrandbits(32)
        await ReadOnly()
        ready = int(dut.in_ready.value)
        # ready exactly when no event is in the core (its last cycle, the write, excepted)
        assert ready == int(cycle >= busy_until), f"cycle {cycle}: in_ready = {ready}"
        if offer and ready:
            pending.append((cycle + LATENCY, ctx, want_rate, want_branch, f"op {i} {ops[i]}"))
            busy_until = cycle + LATENCY
            i += 1
        await RisingEdge(dut.clk)
        await ReadOnly()
        cycle += 1
        if int(dut.out_valid.value):
            assert pending, f"cycle {cycle}: out_valid with no event in the core"
            due, ctx, rate, branch, label = pending.pop(0)
            assert due == cycle, f"{label}: result at cycle {cycle}, expected at {due}"
            got = (int(dut.out_ctx.value), int(dut.out_rate.value), int(dut.out_branch.value))
            assert got == (ctx, rate, branch), \
                f"{label}: (ctx, rate, branch) = {got}, expected {(ctx, rate, branch)}"
            checked += 1
        else:
            assert not pending or pending[0][0] != cycle, f"{pending[0][4]}: no result at {cycle}"
        await FallingEdge(dut.clk)
    return checked


@cocotb.test()
async def table(dut):
    with open(os.environ["STRIDE_PLAN"]) as f:
        plan = json.load(f)
    n = plan["n"]
    rng = random.Random(plan.get("seed", 1))
    cocotb.start_soon(Clock(dut.clk, 4, units="ns").start())
    checked = 0
    for batch in plan["batches"]:
        checked += await run_batch(dut, batch, n, rng)
    expected = sum(len(b["ops"]) for b in plan["batches"])
    assert checked == expected, f"checked {checked} results, the plan has {expected}"
    dut._log.info("N = %d: %d events checked (rate and branch)", n, checked)
