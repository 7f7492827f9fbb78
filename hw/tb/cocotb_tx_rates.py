"""Per-connection rate control of stride_tx_sender: every connection has its own controller
(stride_cc_table, by context index) and its own token bucket (credit in its record), so
connections driven apart by their events leave at their own rates.

The testbench stands in for the frame builder (descriptors and payload always taken) and for the
peers. Every connection's ring holds its whole stream from the start (one doorbell). In phase 1
each connection's peer answers its first DATA packets with pure ACKs (one per packet, each
acknowledging new data) whose STT samples follow the connection's own plan: samples at the
windowed minimum (branch "low": the rate rises towards rate_max) or 85 us above it (branch
"high": the rate is cut by 1/8), and for some connections one go-back-N NACK after them. Then the
peer is silent (the ring holds the rest of the stream, the window is wide, the RTO far away): the
connection keeps sending at its final rate.

Checked:
- the controller events the sender issued, per context, are exactly those the peers' packets
  call for (a reset at install, an STT sample per pure ACK of new data with its echo_stt, the NACK
  reaction per go-back-N NACK), and every result of stride_cc_table (context, rate, branch) equals
  the Python model (cc_model.py, NACK gate off as in the sender) stepped by those events;
- each connection's departures after its last result against its own final rate r (the model's),
  with bytes counted as the pacer charges them (payload + 74). The token bucket (credit at most
  BURST, a departure needs credit >= 0, credit accrues in whole ticks of 2^TICK_LOG2 ns) gives,
  for departures a..b at times t_a <= t_b:
      upper: bytes(a..b)   <= BURST + Bmax + r * (t_b - t_a + TICK)
      lower: bytes(a..b-1) >= r * (t_b - t_a - TICK) - BURST   (the connection has data
                                                                 throughout, so it is never
                                                                 capped while it waits)
  Bmax = MAX_PAYLOAD + 74. The window of each connection must carry at least 6 (BURST + Bmax)
  bytes so that the bounds can fail.
Checked to fail with a mutant in which every connection is paced at context 0's rate (the upper
bound breaks for the connections slower than context 0, the lower bound for the faster ones)."""
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from bus import handshake, reset
from cc_model import EV_NACK, EV_RESET, EV_SAMPLE, Controller

M32 = 0xFFFFFFFF
N = int(os.environ.get("RATES_N", "4"))
CTXS = [int(x) for x in os.environ.get("RATES_CTXS", "0,1,2,3").split(",")]
R0 = int(os.environ.get("RATES_R0", str(int(0.2 * (1 << 20)))))   # 2^-20 bytes/ns
BUF_LOG2 = int(os.environ.get("RATES_BUF_LOG2", "15"))
MAXP = int(os.environ.get("RATES_MAXP", "256"))
BURST = int(os.environ.get("RATES_BURST", "1024"))
LIMIT = int(os.environ.get("RATES_LIMIT", "300000"))
RING = 1 << BUF_LOG2
OVH = 74
BMAX = MAXP + OVH
TICK = 64            # ns, 2^TICK_LOG2 in stride_tx_sender.v
NS = 8               # ns per clock (now advances by 8 per clock)
MINB = 6 * (BURST + BMAX)
STT0, T_HIGH = 10000, 80000
# per connection (in the order of CTXS, cycling): samples "L" (at the minimum) and "H" (above
# t_high), then an optional NACK
PLANS = [("H" * 4, False), ("L" * 12, False), ("H" * 10, False), ("H" * 6, True),
         ("H" * 2, False), ("H" * 8, True), ("L", False), ("H" * 3 + "L" * 3, False)]


class Conn:
    def __init__(self, rng, i, ctx):
        self.ctx = ctx
        self.cid = (rng.getrandbits(20) << 10) | ctx
        self.pcid = rng.getrandbits(32) | 1
        self.ip, self.port = rng.getrandbits(32), rng.getrandbits(16)
        self.iss = rng.getrandbits(32)
        samples, self.nack = PLANS[i % len(PLANS)]
        # the first sample opens the window (branch "low" whatever its value)
        self.samples = [STT0 if k == "L" or j == 0 else STT0 + T_HIGH + 5000
                        for j, k in enumerate(samples)]
        self.acked = 0          # relative, what our ACKs have acknowledged
        self.max_sent = 0
        self.expect = [(EV_RESET, 0)]   # the controller events the sender must issue
        self.issued = []
        self.results = 0
        self.t_final = None     # cycle of the last expected result
        self.deps = []          # (cycle, charged bytes, psh) after t_final
        self.done = False       # the stream's end has left after t_final
        self.nack_sent = False


@cocotb.test()
async def rates_per_connection(dut):
    rng = random.Random(int(os.environ.get("SEED", "11")))
    cocotb.start_soon(Clock(dut.clk, NS, units="ns").start())
    for name in ["ctl_valid", "wr_valid", "db_valid", "snd_valid", "ack_valid"]:
        getattr(dut, name).value = 0
    dut.d_ready.value = 1
    dut.m_axis_tready.value = 1
    params = {"beta": R0 >> 6, "wbeta": R0 >> 8, "t_low": 5000, "t_high": T_HIGH,
              "rate_min": 1311, "rate_max": R0 + (R0 >> 2), "rate_init": R0,
              "min_window": 256, "alpha_shift": 3, "md_shift": 3, "norm_shift": 13}
    dut.cfg_window.value = 4096
    for k in ["beta", "wbeta", "t_low", "t_high", "rate_min", "rate_max", "rate_init",
              "min_window"]:
        getattr(dut, "cfg_" + k).value = params[k]
    cycle = [0]

    async def clock():
        while True:
            dut.now.value = (cycle[0] * NS) & M32
            await RisingEdge(dut.clk)
            cycle[0] += 1

    cocotb.start_soon(clock())
    await reset(dut, 4, N + 20)

    conns = [Conn(rng, i, c) for i, c in enumerate(CTXS)]
    byctx = {c.ctx: c for c in conns}
    models = {c.ctx: Controller(params, gate=False) for c in conns}

    taken = []          # controller events in flight: (ctx, event, stt)
    cc = dut.cc

    async def monitor():
        """The controller's events (as the sender issues them) and results, from reset on."""
        while True:
            await ReadOnly()
            if int(cc.in_valid.value) and int(cc.in_ready.value):
                ev = (int(cc.in_ctx.value), int(cc.in_event.value), int(cc.in_stt.value))
                assert ev[0] in byctx, f"event for context {ev[0]}, not a connection"
                taken.append(ev)
                byctx[ev[0]].issued.append((ev[1], ev[2] if ev[1] == EV_SAMPLE else 0))
            if int(cc.out_valid.value):
                assert taken, "a result without an event"
                ctx, ev, stt = taken.pop(0)
                rate, br = models[ctx].step(ev, stt)
                got = (int(cc.out_ctx.value), int(cc.out_rate.value), int(cc.out_branch.value))
                assert got == (ctx, rate, br), f"result {got}, model {(ctx, rate, br)} for {ev}"
                c = byctx[ctx]
                c.results += 1
                if c.results == len(c.expect) and not c.samples and (c.nack_sent or not c.nack):
                    c.t_final = cycle[0]
            await RisingEdge(dut.clk)

    mon = cocotb.start_soon(monitor())

    for c in conns:
        for k, v in {"ctl_op": 1, "ctl_ctx": c.ctx, "ctl_cid": c.cid, "ctl_peer_cid": c.pcid,
                     "ctl_peer_ip": c.ip, "ctl_peer_port": c.port, "ctl_snd_nxt": c.iss,
                     "ctl_rcv_nxt": 0, "ctl_peer_window": 4096}.items():
            getattr(dut, k).value = v
        await handshake(dut, "ctl_valid", "ctl_ready")
    # every ring holds its stream (a pattern of the context and offset), then one doorbell each
    for c in conns:
        for w in range(RING // 8):
            dut.wr_valid.value = 1
            dut.wr_ctx.value = c.ctx
            dut.wr_addr.value = w
            dut.wr_data.value = (c.ctx << 48) | w
            await RisingEdge(dut.clk)
        dut.wr_valid.value = 0
    for c in conns:
        dut.db_ctx.value = c.ctx
        dut.db_end.value = (c.iss + RING) & M32
        await handshake(dut, "db_valid", "db_ready")

    feedback = []       # [due cycle, conn, flags, ack (relative), stt]
    while not all(c.done or (c.t_final is not None and sum(b for _, b, _ in c.deps) >= 2 * MINB)
                  for c in conns):
        assert cycle[0] < LIMIT, ("not done", [(c.ctx, c.issued, c.expect, c.results, c.t_final,
                                                sum(b for _, b, _ in c.deps)) for c in conns])
        dut.snd_valid.value = 0
        due = [f for f in feedback if f[0] <= cycle[0]]
        if due:
            f = due[0]
            feedback.remove(f)
            _, c, flags, ack, stt = f
            dut.snd_valid.value = 1
            dut.snd_ctx.value = c.ctx
            dut.snd_flags.value = flags
            dut.snd_ack.value = (c.iss + ack) & M32
            dut.snd_window.value = 4096
            dut.snd_echo_stt.value = stt
        await ReadOnly()
        now = cycle[0]
        # departures
        if int(dut.d_valid.value) and int(dut.d_ready.value) and int(dut.d_len.value):
            ctx = int(dut.d_src_cid.value) & 1023
            c = byctx[ctx]
            n = int(dut.d_len.value)
            rel = (int(dut.d_seq.value) - c.iss) & M32
            psh = bool(int(dut.d_flags.value) & 0x40)
            assert n <= MAXP and rel + n <= RING
            if c.t_final is not None and now >= c.t_final + 40 and not c.done:
                c.deps.append((now, n + OVH, psh))
                c.done = psh
            if rel + n > c.max_sent:
                c.max_sent = rel + n
                # phase 1: a pure ACK of this packet with the plan's next sample, or the NACK
                if c.samples:
                    stt = c.samples.pop(0)
                    last_due = max([f[0] for f in feedback if f[1] is c], default=0)
                    feedback.append([max(last_due + 12, now + rng.randint(30, 120)), c, 0x02,
                                     rel + n, stt])
                    c.acked = rel + n
                    c.expect.append((EV_SAMPLE, stt))
                elif c.nack and not c.nack_sent:
                    last_due = max([f[0] for f in feedback if f[1] is c], default=0)
                    feedback.append([max(last_due + 12, now + 40), c, 0x06, c.acked, 0])
                    c.nack_sent = True
                    c.expect.append((EV_NACK, 0))
        await RisingEdge(dut.clk)

    mon.kill()
    assert not taken
    assert int(dut.cnt_overrun.value) == 0
    errors = []
    for c in conns:
        assert c.issued == c.expect, f"ctx {c.ctx}: events {c.issued}, expected {c.expect}"
        r = models[c.ctx].rate / (1 << 20)           # bytes per ns
        deps = c.deps
        total = sum(b for _, b, _ in deps)
        assert total >= MINB, f"ctx {c.ctx}: only {total} bytes in its window"
        worst_up, worst_lo = float("-inf"), float("-inf")
        low_pref = float("inf")     # min over a <= b of (bytes before a) - r t_a
        pre = 0
        for t, b, _ in deps:
            tn = t * NS
            low_pref = min(low_pref, pre - r * tn)
            pre += b
            worst_up = max(worst_up, pre - r * tn - low_pref - (BURST + BMAX + r * TICK))
        # lower bound from the first departure of the window to each later one
        t0 = deps[0][0] * NS
        pre = 0
        for t, b, _ in deps:
            tn = t * NS
            worst_lo = max(worst_lo, r * (tn - t0 - TICK) - BURST - pre)
            pre += b
        span = (deps[-1][0] - deps[0][0]) * NS
        dut._log.info("ctx %d: rate %.4f B/ns, %d departures, %d bytes in %d ns (%.4f B/ns); "
                      "upper bound margin %.0f, lower %.0f bytes", c.ctx, r, len(deps), total,
                      span, (total - deps[-1][1]) / span, -worst_up, -worst_lo)
        if worst_up > 0:
            errors.append(f"ctx {c.ctx} sent {worst_up:.0f} bytes beyond its rate's bound")
        if worst_lo > 0:
            errors.append(f"ctx {c.ctx} sent {worst_lo:.0f} bytes less than its rate's bound")
    assert not errors, errors
    rates = sorted(models[c.ctx].rate for c in conns)
    # the connections did diverge: the fastest at least twice the slowest
    assert rates[-1] >= 2 * rates[0], rates
