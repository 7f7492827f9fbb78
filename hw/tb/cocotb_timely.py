"""cocotb test of timely_cc: the update compared with a Python model of the same fixed-point
TIMELY rule, over a random RTT walk, and the qualitative behaviour (low RTT raises the rate,
a rising RTT lowers it, loss halves it)."""
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge, Timer

P = dict(alpha=19661, beta=52429, delta=1311, n=5, t_low=5000, t_high=50000, min_rtt=10000,
         rmin=1311, rmax=1310720, rinit=655360)


def sdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class Model:
    def __init__(self):
        self.rate, self.prev, self.rd, self.init = P["rinit"], 0, 0, False

    def step(self, ev, rtt):
        if ev != 0:
            nxt = self.rate >> 1
        else:
            diff = rtt - (self.prev if self.init else rtt)
            rd = ((65536 - P["alpha"]) * self.rd + P["alpha"] * diff) >> 16
            rd = ((rd + (1 << 31)) % (1 << 32)) - (1 << 31)
            g = sdiv(rd << 16, P["min_rtt"])
            if rtt < P["t_low"]:
                nxt = self.rate + P["delta"]
            elif rtt > P["t_high"]:
                th = (P["t_high"] << 16) // (rtt | 1)
                fact = (P["beta"] * (65536 - min(th, 65536))) >> 16
                nxt = self.rate - ((self.rate * fact) >> 16)
            elif rd <= 0:
                nxt = self.rate + P["n"] * P["delta"]
            else:
                bg = (P["beta"] * (g & 0xFFFFFFFF)) >> 16
                bg = 65536 if g > 65535 or bg > 65536 else bg
                nxt = self.rate - ((self.rate * bg) >> 16)
            self.prev, self.rd, self.init = rtt, rd, True
        self.rate = min(max(nxt, P["rmin"]), P["rmax"])
        return self.rate


@cocotb.test()
async def timely(dut):
    cocotb.start_soon(Clock(dut.clk, 10, units="ns").start())
    for name, sig in (("alpha", "cfg_alpha_q16"), ("beta", "cfg_beta_q16"), ("delta", "cfg_delta"),
                      ("n", "cfg_n"), ("t_low", "cfg_t_low"), ("t_high", "cfg_t_high"),
                      ("min_rtt", "cfg_min_rtt"), ("rmin", "cfg_rate_min"), ("rmax", "cfg_rate_max"),
                      ("rinit", "cfg_rate_init")):
        getattr(dut, sig).value = P[name]
    dut.in_valid.value = 0
    dut.rst.value = 1
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    m = Model()
    rng = random.Random(3)
    rtt = 20000
    trace = []
    for i in range(3000):
        ev = 1 if (i >= 200 and rng.random() < 0.01) else 0
        rtt = max(1000, min(200000, rtt + rng.randint(-3000, 3000)))
        if i < 200:
            rtt = 3000  # below t_low: rate must rise
        await Timer(1, units="ps")
        dut.in_valid.value = 1
        dut.in_event.value = ev
        dut.in_stt.value = rtt
        await RisingEdge(dut.clk)
        await ReadOnly()
        want = m.step(ev, rtt)
        got = int(dut.out_rate.value)
        assert got == want, f"step {i}: rate {got}, model {want}"
        trace.append(got)
    assert trace[199] > trace[0], "low RTT must raise the rate"
