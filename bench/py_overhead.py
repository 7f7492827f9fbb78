#!/usr/bin/env python3
"""Wall time of the Python package against the CLI on one scenario: `stride sim run SCENARIO
--json` against a Python process that imports stride_sim, loads the scenario and runs its
transports (`Scenario.compare`, as `sim run` does) and prints the summary as JSON. Both are
whole processes (the interpreter's start and the import included), interleaved, ROUNDS times
each; prints the medians of wall and CPU time (user + system: steadier on a shared machine)
and the overhead.

Release builds of both, from the repository root:

    cargo build --release -p stride-cli
    (cd crates/stride-py && maturin build --release --out ../../target/wheels-release)
    pip install --target /tmp/stride-py-release target/wheels-release/stride_sim-*.whl
    PYTHONPATH=/tmp/stride-py-release python3 bench/py_overhead.py [--rounds 7] [--stride target/release/stride] [SCENARIO]

The two give the same summary (checked here, wall-clock values aside).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

PY = """
import json, sys, stride_sim
sc = stride_sim.Scenario.load(sys.argv[1])
print(json.dumps(sc.compare(sc.transports).summary))
"""


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd):
    c0, t0 = cpu(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall, used = time.perf_counter() - t0, cpu() - c0
    if p.returncode != 0:
        sys.exit(f"{cmd[:3]}...: {p.stderr}")
    return wall, used, json.loads(p.stdout)


def strip(s, keys):
    if isinstance(s, dict):
        return {k: strip(v, keys) for k, v in s.items() if k not in keys}
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", nargs="?", default="scenarios/quick.toml")
    ap.add_argument("--stride", default=os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "release", "stride"))
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    import stride_sim

    cli_cmd = [a.stride, "sim", "run", a.scenario, "--json"]
    py_cmd = [sys.executable, "-c", PY, a.scenario]
    cli, py = [], []
    for i in range(a.rounds):
        order = [(cli_cmd, cli), (py_cmd, py)]
        for cmd, into in order if i % 2 == 0 else reversed(order):
            into.append(timed(cmd))
    keys = set(stride_sim.WALL_CLOCK_KEYS)
    same = strip(cli[0][2], keys) == strip(py[0][2], keys)
    print(f"scenario {a.scenario}, {a.rounds} rounds each, interleaved")
    for i, what in ((0, "wall"), (1, "CPU")):
        c = statistics.median(r[i] for r in cli)
        p = statistics.median(r[i] for r in py)
        print(f"{what:>4}: CLI median {c:.3f} s ({', '.join(f'{r[i]:.2f}' for r in cli)})")
        print(f"{'':>4}  Python median {p:.3f} s ({', '.join(f'{r[i]:.2f}' for r in py)})")
        print(f"{'':>4}  overhead {100 * (p - c) / c:+.1f} %")
    print(f"same summary: {same}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
