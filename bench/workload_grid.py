#!/usr/bin/env python3
"""STRIDE against DCTCP on a grid of workloads: three flow-size CDFs x three loads x three seeds on
the paper's lossy FatTree (`scenarios/paper-fattree.toml`), one `stride sim sweep` with DCTCP as
the baseline on the same flows at every point. Prints, per CDF and load, the all-flows average
FCT factor (DCTCP FCT / STRIDE FCT: above 1, STRIDE is faster) of each seed, STRIDE's and
DCTCP's drops, and whether the cell meets the targets (factor >= --target in every seed, no more
drops than DCTCP, every flow complete).

The simulator is deterministic per seed, so the grid may run beside other work (only its wall
time changes).

    python3 bench/workload_grid.py --stride target/release/stride [--cc stride] [--flows 5000]
    python3 bench/workload_grid.py --json out/grid.json     # also keep the whole sweep
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CDFS = {
    "WebSearch": "workloads/WebSearch_distribution.txt",
    "FbHadoop": "workloads/FbHdp_distribution.txt",
    "AliStorage": "workloads/AliStorage2019.txt",
}
LOADS = ["0.3", "0.5", "0.7"]
SEEDS = ["1", "2", "3"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stride", default=str(ROOT / "target/release/stride"))
    ap.add_argument("--scenario", default="scenarios/paper-fattree.toml")
    ap.add_argument("--cc", default="stride", help="the transport under test")
    ap.add_argument("--baseline", default="dctcp")
    ap.add_argument("--flows", type=int, default=None, help="flows per point (the scenario's by default)")
    ap.add_argument("--target", type=float, default=1.1, help="all-flows avg factor every cell must reach")
    ap.add_argument("--set", action="append", default=[], help="extra KEY=VALUE for every point")
    ap.add_argument("--json", help="write the whole sweep result here")
    a = ap.parse_args()
    cmd = [a.stride, "sim", "sweep", a.scenario, "--cc", a.cc, "--baseline", a.baseline,
           "--vary", "workload.cdf=" + ",".join(CDFS.values()),
           "--vary", "workload.load=" + ",".join(LOADS),
           "--vary", "seed=" + ",".join(SEEDS), "--json"]
    if a.flows:
        cmd += ["--set", f"workload.flows={a.flows}"]
    for s in a.set:
        cmd += ["--set", s]
    print("$ " + " ".join(cmd[1:]), file=sys.stderr)
    out = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"the sweep failed (exit {out.returncode})")
    res = json.loads(out.stdout)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")
    sys.exit(0 if report(res, a) else 1)


def report(res, a):
    cells = {}
    for p in res["points"]:
        key = (p["workload.cdf"], p["workload.load"])
        cells.setdefault(key, []).append(p)
    name = {v: k for k, v in CDFS.items()}
    print(f"{a.cc} vs {a.baseline}: all-flows avg FCT factor ({a.baseline} / {a.cc}) per seed "
          f"{','.join(SEEDS)}; drops {a.cc}/{a.baseline}; target >= {a.target} and drops <= {a.baseline}'s")
    print(f"{'workload':<11} {'load':>4}  {'factor per seed':<22} {'min':>5}  {'drops':<24} met")
    all_met = True
    for cdf in CDFS.values():
        for load in LOADS:
            pts = sorted(cells.get((cdf, load), []), key=lambda p: int(p["seed"]))
            f = [p["improvement"]["all"]["avg"] for p in pts]
            drops = [(p["drops"], p["baseline_drops"]) for p in pts]
            complete = all(p["completed"] == p["flows"] for p in pts)
            met = (len(f) == len(SEEDS) and min(f) >= a.target and complete
                   and all(s <= b for s, b in drops))
            all_met &= met
            fs = " ".join(f"{x:.2f}" for x in f)
            ds = " ".join(f"{s}/{b}" for s, b in drops)
            note = "" if complete else " (unfinished flows)"
            print(f"{name[cdf]:<11} {load:>4}  {fs:<22} {min(f):>5.2f}  {ds:<24} "
                  f"{'met' if met else 'not met'}{note}")
    return all_met


if __name__ == "__main__":
    main()
