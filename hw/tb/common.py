"""Shared helpers of the hardware tests: paths, vector loading, grouping by shift parameters."""
import json
import os
import subprocess
from pathlib import Path

HW = Path(__file__).resolve().parent.parent
ROOT = HW.parent
RTL = HW / "rtl"
VECTORS = ROOT / "vectors" / "cc"
BUILD = HW / "sim_build"

BRANCHES = {"none": 0, "low": 1, "high": 2, "grad_inc": 3, "grad_dec": 4, "nack": 5, "timeout": 6}
EVENTS = {"sample": 0, "nack": 1, "timeout": 2}
SHIFT_KEYS = ("alpha_shift", "md_shift", "norm_shift")


def load_cases(paths):
    cases = []
    for p in paths:
        with open(p) as f:
            for line in f:
                if line.strip():
                    cases.append(json.loads(line))
    return cases


def group_by_shifts(cases):
    groups = {}
    for c in cases:
        key = tuple(c["params"][k] for k in SHIFT_KEYS)
        groups.setdefault(key, []).append(c)
    return groups


def random_vectors(n, seed, steps):
    """Random stimulus with expected outputs, produced by stride-proto (never a second model)."""
    out = BUILD / f"random-{seed}-{n}-{steps}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["cargo", "run", "-q", "-p", "stride-cli", "--", "vectors",
         "--random", str(n), "--seed", str(seed), "--steps", str(steps), "--out", str(out)],
        cwd=ROOT, check=True,
    )
    return load_cases([out])


def run_group(key, cases, name):
    """Compiles stride_cc with these shift parameters and drives the cases through it."""
    from cocotb_test.simulator import run

    alpha, md, norm = key
    build = BUILD / f"stride_cc_{name}_{alpha}_{md}_{norm}"
    build.mkdir(parents=True, exist_ok=True)
    cases_file = build / "cases.json"
    cases_file.write_text(json.dumps(cases))
    run(
        verilog_sources=[str(RTL / "stride_cc.v")],
        toplevel="stride_cc",
        module="cocotb_stride_cc",
        python_search=[str(HW / "tb")],
        parameters={"ALPHA_SHIFT": alpha, "MD_SHIFT": md, "NORM_SHIFT": norm},
        sim_build=str(build),
        extra_env={"STRIDE_CASES": str(cases_file)},
        simulator=os.environ.get("SIM", "icarus"),
        waves=False,
    )
