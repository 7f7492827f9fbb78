"""Shared helpers of the hardware tests: paths, vector loading, grouping by shift parameters."""
import json
import os
import re
import subprocess
from pathlib import Path

HW = Path(__file__).resolve().parent.parent
ROOT = HW.parent
RTL = HW / "rtl"
VECTORS = ROOT / "vectors" / "cc"
# One build tree per pytest-xdist worker (`make -C hw test` runs the tests on every CPU): tests that
# share a build directory within a worker run one after another, and no two workers share one.
BUILD = HW / "sim_build" / os.environ.get("PYTEST_XDIST_WORKER", "serial")

BRANCHES = {"none": 0, "low": 1, "high": 2, "grad_inc": 3, "grad_dec": 4, "nack": 5, "timeout": 6,
            "nack_held": 7}
EVENTS = {"sample": 0, "nack": 1, "timeout": 2}
SHIFT_KEYS = ("alpha_shift", "md_shift", "norm_shift")


def arithmetic_operators(verilog_file):
    """The operators among `*`, `/`, `%` that `verilog_file` (in rtl/) uses outside comments and
    compiler directives (`timescale 1ns / 1ps is not a division)."""
    code = re.sub(r"/\*.*?\*/", "", (RTL / verilog_file).read_text(), flags=re.S)
    code = "\n".join(
        line.split("//")[0] for line in code.splitlines() if not line.lstrip().startswith("`")
    )
    return {op for op in "*/%" if op in code}


CC_CFG = ("beta", "wbeta", "t_low", "t_high", "rate_min", "rate_max", "rate_init", "min_window")


def drive_cc_idle(dut, params):
    """A rate controller's (`stride_cc`, `stride_cc_table`) `cfg_*` inputs from a vector's
    parameters, and no event offered: what each of their testbenches drives through reset."""
    for f in CC_CFG:
        getattr(dut, f"cfg_{f}").value = params[f]
    dut.in_valid.value = 0
    dut.in_ctx.value = 0
    dut.in_event.value = 0
    dut.in_stt.value = 0


def load_cases(paths):
    cases = []
    for p in paths:
        with open(p) as f:
            for line in f:
                if line.strip():
                    cases.append(json.loads(line))
    return cases


def build_key(params):
    """The synthesis-time parameters of a case: its shifts and its NACK gate (0 or 1; a case
    without the field is the paper's controller, gate off)."""
    return tuple(params[k] for k in SHIFT_KEYS) + (int(bool(params.get("nack_gate", False))),)


def group_by_shifts(cases):
    groups = {}
    for c in cases:
        groups.setdefault(build_key(c["params"]), []).append(c)
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


def group_by_params(cases):
    """Cases that share every parameter, in order of first appearance (cfg_* are shared by the
    contexts of one core, so only such cases can run side by side)."""
    groups = {}
    for c in cases:
        groups.setdefault(json.dumps(c["params"], sort_keys=True), []).append(c)
    return list(groups.values())


def prefix(case, n):
    return {"name": f"{case['name']} (first {n} steps)", "params": case["params"],
            "steps": case["steps"][:n]}


def lanes_for(group, contexts):
    """One lane per context. With two contexts every case runs in both, against a different
    case (lane 1 takes the cases in reverse order) or, for a case alone with its parameters,
    against itself shifted by a third of its length (lane 1 first runs that prefix)."""
    if contexts == 1:
        return [list(group)]
    if len(group) > 1:
        return [list(group), list(reversed(group))]
    (case,) = group
    return [[case], [prefix(case, max(1, len(case["steps"]) // 3)), case]]


def plan(batches, contexts, seed=1):
    events = sum(len(item["steps"]) + 1 for b in batches for lane in b["lanes"] for item in lane)
    return {"contexts": contexts, "seed": seed, "batches": batches, "events": events}


def plan_interleaved(cases, contexts, gap=0.0):
    return plan([{"params": g[0]["params"], "lanes": lanes_for(g, contexts), "gap": gap}
                 for g in group_by_params(cases)], contexts)


def simulators():
    """Both simulators unless SIM names one."""
    sim = os.environ.get("SIM")
    return [sim] if sim else ["icarus", "verilator"]


def run_stride_cc(the_plan, shifts, sim, name, widths=(32, 32)):
    """Compiles stride_cc with these shift parameters, NACK gate, CONTEXTS and datapath widths
    (TW, RW) and drives the plan."""
    from cocotb_test.simulator import run

    alpha, md, norm, gate = shifts
    tw, rw = widths
    contexts = the_plan["contexts"]
    the_plan = dict(the_plan, tw=tw, rw=rw)
    tag = "" if widths == (32, 32) else f"_w{tw}_{rw}"
    build = BUILD / sim / f"stride_cc_c{contexts}_{alpha}_{md}_{norm}_g{gate}{tag}"
    build.mkdir(parents=True, exist_ok=True)
    plan_file = build / f"plan-{name}.json"
    plan_file.write_text(json.dumps(the_plan))
    run(
        verilog_sources=[str(RTL / "stride_cc.v")],
        toplevel="stride_cc",
        module="cocotb_stride_cc",
        python_search=[str(HW / "tb")],
        parameters={"ALPHA_SHIFT": alpha, "MD_SHIFT": md, "NORM_SHIFT": norm,
                    "CONTEXTS": contexts, "NACK_GATE": gate, "TW": tw, "RW": rw},
        sim_build=str(build),
        extra_env={"STRIDE_PLAN": str(plan_file)},
        simulator=sim,
        waves=False,
    )


def run_module(top, module, sim, params=None, env=None, sources=None, tag="", testcase=None):
    """Runs the cocotb test `module` on the RTL `top` (plus `sources`, by name under rtl/) under
    simulator `sim`, in its own build directory sim_build/<sim>/<top><tag>."""
    from cocotb_test.simulator import run

    run(
        verilog_sources=[str(RTL / f"{s}.v") for s in (sources or [top])],
        toplevel=top,
        module=module,
        python_search=[str(HW / "tb")],
        parameters=params or {},
        sim_build=str(BUILD / sim / f"{top}{tag}"),
        extra_env=env or {},
        simulator=sim,
        testcase=testcase,
        waves=False,
    )
