"""stride_cc_table (the controller for N connection contexts, one update core, state in a table)
against stride-proto's vectors replayed per context with other contexts' traffic interleaved,
and against a Python model (checked against the same vectors) on random interleavings of events
across contexts, for N = 4 and N = 1024 under Icarus and Verilator."""
import json
import os
import random
import subprocess

import pytest

from cc_model import EV_RESET, Controller
from common import (BRANCHES, BUILD, EVENTS, HW, RTL, VECTORS, arithmetic_operators,
                    group_by_params, group_by_shifts, load_cases, simulators)

CASES = load_cases(sorted(VECTORS.glob("*.jsonl")))
SIMS = simulators()
DEFAULT = (3, 3, 13, 1)  # stride-proto's default profile: shifts 3/3/13, NACK gate on
# Builds take time (Verilator tens of seconds each): N = 4 under Icarus runs every shift set of
# the vectors; N = 1024 under Icarus and both N under Verilator the shift sets with the most
# cases (both gate settings) and the default profile.
MAIN_KEYS = [(2, 3, 10, 0), (2, 3, 10, 1), DEFAULT]


def test_model_matches_vectors():
    # the model is a reference only because it reproduces every step stride-proto recorded
    steps = 0
    for c in CASES:
        ctl = Controller(c["params"], bool(c["params"].get("nack_gate", False)))
        for i, s in enumerate(c["steps"]):
            rate, branch = ctl.step(EVENTS[s["event"]], s.get("stt", 0))
            want = {f: s[f] & (0xFFFF if f == "count" else 0xFFFFFFFF)
                    for f in ("rate", "d", "stt_old", "min_cur", "min_prev", "count")}
            assert ctl.state() == want and branch == BRANCHES[s["branch"]], \
                f"{c['name']} step {i}: model {ctl.state()}, branch {branch}; vector {s}"
            steps += 1
    assert steps > 4000


def _noise(ctl, rng, stt):
    """A random event for a context run by the model: mostly samples around a drifting STT."""
    r = rng.random()
    if r < 0.06:
        return EV_RESET, 0
    if r < 0.14:
        return 1, rng.getrandbits(32)
    if r < 0.20:
        return 2, rng.getrandbits(32)
    if rng.random() < 0.02:
        return 0, rng.getrandbits(32)  # a wild sample (wraps, clamps)
    return 0, (stt + rng.randrange(-3000, 6000)) & 0xFFFFFFFF


def vector_plan(cases, n, seed):
    """Each case of a parameter group on its own context (a random one of the N; with fewer
    contexts than cases, one after another), opened by a reset event, its steps checked against
    the vector; two other contexts carry model-driven random traffic. Ops of all contexts are
    interleaved at random, so one context often gets several events back to back."""
    rng = random.Random(seed)
    batches = []
    for group in group_by_params(cases):
        p = group[0]["params"]
        gate = bool(p.get("nack_gate", False))
        ctxs = rng.sample(range(n), min(n, len(group) + 2))
        lanes = {c: [] for c in ctxs}
        vec_ctxs = ctxs[:max(1, len(ctxs) - 2)]
        for i, case in enumerate(group):
            lane = lanes[vec_ctxs[i % len(vec_ctxs)]]
            lane.append((EV_RESET, 0, p["rate_init"], 0))
            for s in case["steps"]:
                lane.append((EVENTS[s["event"]], s.get("stt", 0), s["rate"],
                             BRANCHES[s["branch"]]))
        # other contexts' traffic, from the model, on the contexts left (or, with N too small,
        # not at all: every context then replays vectors)
        budget = sum(len(lanes[c]) for c in vec_ctxs) // 2 + 8
        for c in ctxs[len(vec_ctxs):]:
            ctl, stt = Controller(p, gate), rng.getrandbits(20) + 10000
            lanes[c].append((EV_RESET, 0, p["rate_init"], 0))
            ctl.reset()
            for _ in range(budget):
                ev, x = _noise(ctl, rng, stt)
                if ev == 0:
                    stt = x
                rate, br = ctl.step(ev, x)
                lanes[c].append((ev, x, rate, br))
        ops = []
        pos = {c: 0 for c in ctxs}
        while any(pos[c] < len(lanes[c]) for c in ctxs):
            c = rng.choice([c for c in ctxs if pos[c] < len(lanes[c])])
            ev, stt, rate, br = lanes[c][pos[c]]
            pos[c] += 1
            ops.append([c, ev, stt, rate, br])
        batches.append({"params": p, "ops": ops, "gap": 0.1})
    return batches


def random_plan(n, key, seed, events):
    """Random events across contexts (a small hot set, so contexts see events back to back and
    interleaved, plus the highest and lowest index), expected outputs from the model. The first
    event of a context is either a reset or anything (every context starts fresh after rst)."""
    rng = random.Random(seed)
    gate = bool(key[3])
    p = {"alpha_shift": key[0], "md_shift": key[1], "norm_shift": key[2],
         "beta": rng.randrange(1, 1 << 18), "wbeta": rng.randrange(1, 1 << 20),
         "t_low": rng.randrange(0, 20000), "t_high": rng.randrange(20000, 200000),
         "rate_min": rng.randrange(1, 1 << 12), "rate_max": rng.randrange(1 << 24, 1 << 32),
         "min_window": rng.randrange(1, 40)}
    p["rate_init"] = rng.randrange(p["rate_min"], p["rate_max"] + 1)
    hot = sorted(set(rng.sample(range(n), min(n, 6)) + [0, n - 1]))
    ctls = {c: Controller(p, gate) for c in hot}
    stts = {c: rng.getrandbits(20) + 10000 for c in hot}
    ops = []
    for _ in range(events):
        c = rng.choice(hot)
        ev, x = _noise(ctls[c], rng, stts[c])
        if ev == 0:
            stts[c] = x
        rate, br = ctls[c].step(ev, x)
        ops.append([c, ev, x, rate, br])
    return {"params": p, "ops": ops, "gap": 0.2}


def run_table(n, key, batches, sim, name, seed=1):
    from cocotb_test.simulator import run

    alpha, md, norm, gate = key
    build = BUILD / sim / f"stride_cc_table_n{n}_{alpha}_{md}_{norm}_g{gate}"
    build.mkdir(parents=True, exist_ok=True)
    plan_file = build / f"plan-{name}.json"
    plan_file.write_text(json.dumps({"n": n, "seed": seed, "batches": batches}))
    run(
        verilog_sources=[str(RTL / "stride_cc_table.v"), str(RTL / "stride_ctx_ram.v")],
        toplevel="stride_cc_table",
        module="cocotb_stride_cc_table",
        python_search=[str(HW / "tb")],
        parameters={"N": n, "ALPHA_SHIFT": alpha, "MD_SHIFT": md, "NORM_SHIFT": norm,
                    "NACK_GATE": gate},
        sim_build=str(build),
        extra_env={"STRIDE_PLAN": str(plan_file)},
        simulator=sim,
        waves=False,
    )


_groups = group_by_shifts(CASES)
# STRIDE_HW_FULL=1 (`make -C hw test-full`): every combination below. Otherwise (CI, `make -C hw
# test`) a slice: the shift sets with the most cases and the default profile at N = 4 under Icarus,
# the default profile at N = 4 and 1024 under both simulators. Every other shift set of the
# vectors is checked bit for bit on the same datapath by test_stride_cc.py in both slices.
FULL = os.environ.get("STRIDE_HW_FULL") == "1"
if FULL:
    _params = [(sim, n, key) for sim in SIMS for n in (4, 1024)
               for key in (sorted(_groups) if (sim, n) == ("icarus", 4) else MAIN_KEYS)]
else:
    _params = sorted({(sim, n, key) for sim in SIMS for n in (4, 1024)
                      for key in ((MAIN_KEYS if (sim, n) == ("icarus", 4) else [DEFAULT]))})


@pytest.mark.parametrize("sim,n,key", _params,
                         ids=[f"{s}-n{n}-a%d-md%d-n%d-g%d" % k for s, n, k in _params])
def test_vectors_per_context(sim, n, key):
    batches = vector_plan(_groups[key], n, seed=n * 7919 + sum(key))
    if key in (DEFAULT, (2, 3, 10, 0)):
        # random traffic with the model in the same build: both gate settings overall
        batches.append(random_plan(n, key, seed=n + 1, events=1500))
    run_table(n, key, batches, sim, "vec")


@pytest.mark.parametrize("sim", SIMS)
def test_random_one_context_and_odd_n(sim):
    # N = 1 (every event on context 0, back to back) and N = 5 (not a power of two)
    for n in (1, 5):
        run_table(n, DEFAULT, [random_plan(n, DEFAULT, seed=n, events=400)], sim, "rand")


@pytest.mark.parametrize("n", [0, 1025])
def test_bad_n_stops_elaboration(n, tmp_path):
    out = tmp_path / "a.out"
    srcs = [str(RTL / "stride_cc_table.v"), str(RTL / "stride_ctx_ram.v")]
    r = subprocess.run(["iverilog", "-o", str(out), f"-Pstride_cc_table.N={n}", *srcs],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "parameter_N_must_be_1_to_1024" in r.stdout + r.stderr
    r = subprocess.run(["iverilog", "-o", str(out), "-Pstride_cc_table.N=1024", *srcs],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_multiply_divide_or_modulo():
    assert arithmetic_operators("stride_cc_table.v") == set()
