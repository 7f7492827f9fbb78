"""stride_cc against stride-proto's vectors: every checked-in vector and a random stimulus, with
different cases in the two contexts at the same time, under Icarus and Verilator."""
import os
import subprocess

import pytest

from common import (BRANCHES, EVENTS, RTL, VECTORS, arithmetic_operators, build_key,
                    group_by_params, group_by_shifts, lanes_for, load_cases, plan,
                    plan_interleaved, prefix, random_vectors, run_stride_cc, simulators)

CHECKED_IN = sorted(VECTORS.glob("*.jsonl"))
SIMS = simulators()
# STRIDE_HW_FULL=1 (`make -C hw test-full`): the random stimulus runs whole under every simulator.
# Otherwise (CI, `make -C hw test`) its shift sets are dealt out among the simulators, so every
# random case still runs bit for bit, each under one of them, with half the events.
FULL = os.environ.get("STRIDE_HW_FULL") == "1"


def test_vectors_exist():
    names = {p.name for p in CHECKED_IN}
    assert {"branches.jsonl", "extremes.jsonl", "wrap.jsonl", "random.jsonl",
            "nack_gate.jsonl"} <= names
    cases = load_cases(CHECKED_IN)
    assert len(cases) >= 30
    assert sum(len(c["steps"]) for c in cases) > 4000
    # the hand-checked parameter set has enough cases to pair different ones in two contexts
    assert max(len(g) for g in group_by_params(cases)) >= 10


_groups = group_by_shifts(load_cases(CHECKED_IN))
_keys = sorted(_groups)


def _ids(k):
    return "a%d-md%d-n%d-g%d" % k


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("key", _keys, ids=_ids)
def test_checked_in_vectors_two_contexts(key, sim):
    # one event per clock, contexts alternating, every result checked
    run_stride_cc(plan_interleaved(_groups[key], 2), key, sim, "vec")


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("key", _keys, ids=_ids)
def test_checked_in_vectors_one_context(key, sim):
    run_stride_cc(plan_interleaved(_groups[key], 1), key, sim, "vec")


@pytest.mark.parametrize("sim", SIMS)
def test_random_stimulus_from_stride_proto(sim):
    # 12 cases of random events, random parameters, expected outputs by stride-proto;
    # slots left idle at random (5 %), and then the other context's event is offered (refused)
    # CI's slice: 1000 events per case; test-full: 2000
    steps = 2000 if FULL else 1000
    cases = random_vectors(12 * steps, seed=20261122, steps=steps)
    assert len(cases) == 12
    groups = sorted(group_by_shifts(cases).items())
    if not FULL:
        groups = groups[SIMS.index(sim)::len(SIMS)]
    assert groups
    for key, group in groups:
        run_stride_cc(plan_interleaved(group, 2, gap=0.05), key, sim, "rand")


@pytest.mark.parametrize("sim", SIMS)
def test_contexts_do_not_leak(sim):
    # One context runs the longest hand-checked case without a break while the other runs
    # short prefixes of every other case, each opened by a context reset, with idle slots; then
    # the roles swap. Every result of both is checked against the vectors, so any state shared
    # between contexts (or a reset reaching the wrong one) fails.
    group = max(group_by_params(load_cases(CHECKED_IN)), key=len)
    key = build_key(group[0]["params"])
    longest = max(group, key=lambda c: len(c["steps"]))
    others = [c for c in group if c is not longest]
    lengths = [1, 2, 3, 5, 8, 13]
    chopped = [prefix(c, lengths[i % len(lengths)]) for i, c in enumerate(others * 3)]
    assert len(longest["steps"]) >= 100 and len(chopped) >= 30
    batches = [
        {"params": longest["params"], "lanes": [[longest], chopped], "gap": 0.1},
        {"params": longest["params"], "lanes": [chopped, [longest]], "gap": 0.1},
    ]
    run_stride_cc(plan(batches, 2, seed=7), key, sim, "leak")


def test_lanes_pair_different_cases():
    # the planner really puts different cases side by side where parameters allow
    group = max(group_by_params(load_cases(CHECKED_IN)), key=len)
    l0, l1 = lanes_for(group, 2)
    assert [c["name"] for c in l0] != [c["name"] for c in l1]
    assert sum(a["name"] != b["name"] for a, b in zip(l0, l1)) >= len(group) - 1


@pytest.mark.parametrize("contexts", [0, 3])
def test_unsupported_contexts_stop_elaboration(contexts, tmp_path):
    out = tmp_path / "a.out"
    r = subprocess.run(["iverilog", "-o", str(out), f"-Pstride_cc.CONTEXTS={contexts}",
                        str(RTL / "stride_cc.v")], capture_output=True, text=True)
    assert r.returncode != 0 and "parameter_CONTEXTS_must_be_1_or_2" in r.stdout + r.stderr
    r = subprocess.run(["iverilog", "-o", str(out), "-Pstride_cc.CONTEXTS=2",
                        str(RTL / "stride_cc.v")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_bad_nack_gate_stops_elaboration(tmp_path):
    out = tmp_path / "a.out"
    r = subprocess.run(["iverilog", "-o", str(out), "-Pstride_cc.NACK_GATE=2",
                        str(RTL / "stride_cc.v")], capture_output=True, text=True)
    assert r.returncode != 0 and "parameter_NACK_GATE_must_be_0_or_1" in r.stdout + r.stderr


def test_both_gate_settings_are_covered():
    # the checked-in vectors exercise the RTL with the gate off (the paper) and on (the
    # default), and a gated case really holds a NACK
    cases = load_cases(CHECKED_IN)
    assert {build_key(c["params"])[3] for c in cases} == {0, 1}
    assert any(s["branch"] == "nack_held" for c in cases for s in c["steps"])


def test_no_multiply_divide_or_modulo():
    assert arithmetic_operators("stride_cc.v") == set()
    # and the check itself can fail: the comparison core has all three kinds
    assert {"*", "/"} <= arithmetic_operators("timely_cc.v")


# ---- datapath widths (TW time bits, RW rate bits) -------------------------------------------
def _s32(v):
    return v - (1 << 32) if v >> 31 else v


def _fits(case, tw, rw):
    """Every value of the case fits the narrowed core: times and minima below 2^(TW-2), the
    gradient within +-2^(TW-2) (so no STT difference reaches the narrowed clamp, and none the
    32-bit one), rates, steps and bounds below 2^RW."""
    p, lim = case["params"], 1 << (tw - 2)
    if p["t_low"] >= 1 << tw or p["t_high"] >= 1 << tw:
        return False
    if any(p[k] >= 1 << rw for k in ("beta", "wbeta", "rate_min", "rate_max", "rate_init")):
        return False
    for s in case["steps"]:
        if any(s.get(k, 0) >= lim for k in ("stt", "stt_old", "min_cur", "min_prev")):
            return False
        if not -lim <= _s32(s["d"]) < lim or s["rate"] >= 1 << rw:
            return False
    return True


def _model_cases(key, tw, rw, seed, count=12, steps=120):
    """Cases in the vectors' format from the Python model (test_stride_cc_table.py checks it
    against every vector), with values small enough for TW/RW: STT around 2^(TW-4), rates below
    2^RW; kept only when every value fits."""
    import random

    from cc_model import EV_SAMPLE, Controller

    rng = random.Random(seed)
    names = {v: k for k, v in BRANCHES.items()}
    evnames = {v: k for k, v in EVENTS.items()}
    base = 1 << (tw - 4)
    rmax = (1 << rw) - 1
    p = {"alpha_shift": key[0], "md_shift": key[1], "norm_shift": key[2],
         "nack_gate": bool(key[3]), "beta": rng.randrange(1, rmax >> 8),
         "wbeta": rng.randrange(1, rmax >> 6), "t_low": base >> 6, "t_high": base >> 2,
         "rate_min": rng.randrange(1, 64), "rate_max": rng.randrange(rmax >> 1, rmax),
         "min_window": rng.randrange(1, 20)}
    p["rate_init"] = rng.randrange(p["rate_min"], p["rate_max"])
    cases = []
    for i in range(count):
        ctl = Controller(p, bool(key[3]))
        stt = base + rng.randrange(base >> 2)
        out = []
        for _ in range(steps):
            r = rng.random()
            ev = EV_SAMPLE if r < 0.85 else (1 if r < 0.95 else 2)
            if ev == EV_SAMPLE:
                stt = max(1, stt + rng.randrange(-(base >> 6), base >> 5))
            ctl.step(ev, stt if ev == EV_SAMPLE else 0)
            out.append(dict(ctl.state(), event=evnames[ev], stt=stt if ev == EV_SAMPLE else 0,
                            branch=names[ctl.last_branch]))
        case = {"name": f"model-w{tw}-{rw}-{i}", "params": p, "steps": out}
        if _fits(case, tw, rw):
            cases.append(case)
    return cases


WIDTHS = [(24, 24), (20, 20)]


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("widths", WIDTHS, ids=lambda w: "tw%d-rw%d" % w)
def test_narrow_widths_match_values_that_fit(widths, sim):
    tw, rw = widths
    vec = [c for c in load_cases(CHECKED_IN) if _fits(c, tw, rw)]
    assert len(vec) >= 5, "too few checked-in vectors fit the narrowed widths"
    groups = group_by_shifts(vec)
    # the hand-checked shift sets, with model cases added beside the vectors that fit; Verilator
    # (a build per shift set) runs the gated one only
    keys = sorted(groups) if sim == "icarus" else [(2, 3, 10, 1)]
    for key in keys:
        cases = groups[key]
        if key[:3] == (2, 3, 10):
            cases = cases + _model_cases(key, tw, rw, seed=tw * 100 + rw + key[3])
            assert len(cases) >= 10
        run_stride_cc(plan_interleaved(cases, 2, gap=0.05), key, sim, "narrow", widths)


@pytest.mark.parametrize("param,value,error", [
    ("TW", 30, "parameter_TW_must_be_a_multiple_of_4_from_8_to_32"),
    ("TW", 36, "parameter_TW_must_be_a_multiple_of_4_from_8_to_32"),
    ("RW", 7, "parameter_RW_must_be_8_to_32"),
    ("RW", 33, "parameter_RW_must_be_8_to_32"),
])
def test_unsupported_width_stops_elaboration(param, value, error, tmp_path):
    out = tmp_path / "a.out"
    r = subprocess.run(["iverilog", "-o", str(out), f"-Pstride_cc.{param}={value}",
                        str(RTL / "stride_cc.v")], capture_output=True, text=True)
    assert r.returncode != 0 and error in r.stdout + r.stderr, r.stdout + r.stderr
