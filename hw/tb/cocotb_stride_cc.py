"""cocotb test of stride_cc: one lane of events per context, all lanes interleaved cycle by cycle
through one core, and every output bit compared with what stride-proto produced.

The plan (STRIDE_PLAN, written by common.plan_*) holds batches; a batch is one parameter set
(cfg_* are shared by the contexts) and one lane per context. A lane is a list of items, an item
a vector case or a prefix of one; each item starts with a context-reset event (in_event 3), whose
expected output is the controller before its first event (rate = the case's rate_init, state 0,
branch "none"), then every step of the case with the outputs stride-proto recorded."""
import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

from common import BRANCHES, EVENTS, drive_cc_idle

EV_RESET = 3
FIELDS = ("rate", "d", "stt_old", "min_cur", "min_prev", "count")
MASK = {"count": 0xFFFF}


def lane_ops(lane, params, tw=32, rw=32):
    """(event code, stt, expected outputs, label) for every event of a lane, in order; outputs
    on the TW/RW-bit ports of a narrowed core are the low bits of stride-proto's values."""
    mask = {f: (1 << (rw if f == "rate" else tw)) - 1 for f in FIELDS}
    mask.update(MASK)
    ops = []
    for item in lane:
        zero = {f: 0 for f in FIELDS}
        zero["rate"] = params["rate_init"]
        ops.append((EV_RESET, 0, dict(zero, branch=BRANCHES["none"]), f"{item['name']} reset"))
        for i, s in enumerate(item["steps"]):
            want = {f: s[f] & mask[f] for f in FIELDS}
            want["branch"] = BRANCHES[s["branch"]]
            ops.append((EVENTS[s["event"]], s.get("stt", 0), want, f"{item['name']} step {i}"))
    return ops


async def reset(dut, p):
    await FallingEdge(dut.clk)
    drive_cc_idle(dut, p)
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst.value = 0


async def run_batch(dut, batch, contexts, latency, rng, tw=32, rw=32):
    """Drives one batch; returns (events checked, cycles, cycles in which an event was accepted)."""
    p = batch["params"]
    gap = batch.get("gap", 0.0)  # probability that a lane leaves its slot idle
    lanes = [lane_ops(lane, p, tw, rw) for lane in batch["lanes"]]
    assert len(lanes) == contexts
    pos = [0] * contexts
    pending = []  # (due cycle, ctx, expected, label), in acceptance order
    await reset(dut, p)
    cycle = 0
    accepted = 0
    checked = 0
    limit = sum(len(l) for l in lanes) * (3 if gap else 1) + contexts * 2000 + latency + 50
    while any(pos[c] < len(lanes[c]) for c in range(contexts)) or pending:
        assert cycle < limit, "the core stopped accepting events or producing results"
        # -- inputs for this cycle (written after the falling edge) --
        slot = cycle % contexts
        got_slot = int(dut.in_slot.value)
        assert got_slot == slot, f"cycle {cycle}: in_slot = {got_slot}, expected {slot}"
        all_busy = all(pos[c] < len(lanes[c]) for c in range(contexts))
        own = pos[slot] < len(lanes[slot]) and not (gap and rng.random() < gap)
        others = [c for c in range(contexts) if c != slot and pos[c] < len(lanes[c])]
        ctx = op = None
        if own:
            ctx, op = slot, lanes[slot][pos[slot]]
        elif others:
            # a waiting context that is not in its slot: the core must not take it
            ctx, op = others[0], lanes[others[0]][pos[others[0]]]
        elif contexts == 1 and pos[0] < len(lanes[0]) and rng.random() < 0.5:
            # context 1 does not exist in a one-context core: must not be taken either
            ctx, op = 1, lanes[0][pos[0]]
        if op is None:
            # idle: random inputs with in_valid low, a context reset among them, are ignored
            dut.in_valid.value = 0
            dut.in_ctx.value = rng.randrange(2)
            dut.in_event.value = rng.randrange(4)
            dut.in_stt.value = rng.getrandbits(tw)
        else:
            dut.in_valid.value = 1
            dut.in_ctx.value = ctx
            dut.in_event.value = op[0]
            dut.in_stt.value = op[1]
        await ReadOnly()
        ready = int(dut.in_ready.value)
        if op is not None:
            assert ready == int(ctx == slot), f"cycle {cycle}: in_ready = {ready} for context {ctx} in slot {slot}"
            if ready:
                pending.append((cycle + latency, ctx, op[2], op[3]))
                pos[ctx] += 1
                accepted += 1
        if all_busy and not gap:
            # every context has work and none pauses: one event per clock
            assert op is not None and ready, f"cycle {cycle}: no event accepted while every lane had one"
        # -- outputs after the rising edge --
        await RisingEdge(dut.clk)
        await ReadOnly()
        cycle += 1
        if int(dut.out_valid.value):
            assert pending, f"cycle {cycle}: out_valid with no event in flight"
            due, ctx, want, label = pending.pop(0)
            assert due == cycle, f"{label}: result at cycle {cycle}, expected at {due} (latency {latency})"
            got_ctx = int(dut.out_ctx.value)
            assert got_ctx == ctx, f"{label}: out_ctx = {got_ctx}, expected {ctx}"
            got = {
                "rate": int(dut.out_rate.value),
                "d": int(dut.out_d.value),
                "stt_old": int(dut.out_stt_old.value),
                "min_cur": int(dut.out_min_cur.value),
                "min_prev": int(dut.out_min_prev.value),
                "count": int(dut.out_count.value),
                "branch": int(dut.out_branch.value),
            }
            for f, v in want.items():
                assert got[f] == v, f"context {ctx}, {label}: {f} = {got[f]}, stride-proto says {v}"
            checked += 1
        else:
            assert not pending or pending[0][0] != cycle, f"{pending[0][3]}: no result at cycle {cycle}"
        await FallingEdge(dut.clk)
    return checked, cycle, accepted


@cocotb.test()
async def lanes(dut):
    with open(os.environ["STRIDE_PLAN"]) as f:
        plan = json.load(f)
    contexts = plan["contexts"]
    latency = 6 + 2 * contexts  # documented in stride_cc.v
    rng = random.Random(plan.get("seed", 1))
    cocotb.start_soon(Clock(dut.clk, 4, units="ns").start())
    checked = cycles = accepted = 0
    for batch in plan["batches"]:
        n, c, a = await run_batch(dut, batch, contexts, latency, rng, plan.get("tw", 32),
                                  plan.get("rw", 32))
        checked += n
        cycles += c
        accepted += a
    expected = plan["events"]
    assert checked == expected, f"checked {checked} events, the plan has {expected}"
    dut._log.info("checked %d events bit for bit in %d cycles (%d contexts)", checked, cycles, contexts)
