"""cocotb checks for stride_fifo against a Python deque: random pushes and pops (pops only while
out_valid), every popped word in order, `full` exactly when the array holds 2^DEPTH_LOG2 words,
pushes while full dropped, out_valid exactly when the model holds a word (but for the one-cycle
fall-through of a push into an empty FIFO)."""
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge


@cocotb.test()
async def against_deque(dut):
    depth = 1 << int(os.environ["FIFO_DEPTH_LOG2"])
    width = int(os.environ["FIFO_WIDTH"])
    rng = random.Random(3)
    cocotb.start_soon(Clock(dut.clk, 8, units="ns").start())
    dut.rst.value = 1
    dut.push.value = 0
    dut.pop.value = 0
    dut.in_data.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    model = deque()            # words in the FIFO (array + output register)
    popped = fulls = drops = 0
    just_pushed = False
    for cycle in range(6000):
        # phases: fill-heavy, drain-heavy, mixed
        p_push = (0.9, 0.2, 0.5)[(cycle // 700) % 3]
        push = rng.random() < p_push
        word = rng.getrandbits(width)
        await ReadOnly()
        out_valid = bool(dut.out_valid.value)
        full = bool(dut.full.value)
        head = int(dut.out_data.value) if out_valid else None
        in_array = len(model) - (1 if out_valid else 0)
        assert full == (in_array == depth), (cycle, full, len(model))
        if out_valid:
            assert head == model[0], f"cycle {cycle}: head {head:#x} != {model[0]:#x}"
        else:
            # a word falls through one cycle after the edge that pushed it, which is the edge
            # just before this sample
            assert not model or (len(model) == 1 and just_pushed), (cycle, len(model))
        pop = out_valid and rng.random() < 0.6
        await RisingEdge(dut.clk)
        dut.push.value = int(push)
        dut.in_data.value = word
        dut.pop.value = int(pop)
        await RisingEdge(dut.clk)
        dut.push.value = 0
        dut.pop.value = 0
        if pop:
            model.popleft()
            popped += 1
        just_pushed = push and not full
        if push:
            if full:
                drops += 1
            else:
                model.append(word)
        fulls += full
    assert popped > 1000 and fulls > 50 and drops > 0
    dut._log.info("FIFO: %d popped in order, full in %d samples, %d pushes refused", popped,
                  fulls, drops)
