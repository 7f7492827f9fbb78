#!/usr/bin/env python3
"""Simulator speed guard: two `stride` builds on cut-down scenarios, interleaved, by CPU time.

  python3 bench/sim_speed.py OLD_BIN NEW_BIN [--rounds 5] [--only NAME] [--json]

Run it on any change to the engine, the network, the queue disciplines or the transports, and
quote its output in the change's note. Each scenario runs OLD, NEW, OLD, NEW, ... `--rounds`
times; the report gives each binary's median CPU time (user + system of the child, all its
threads), the speed of NEW relative to OLD (OLD CPU / NEW CPU: above 1 means NEW is faster)
and whether the two produced identical results.

Run it on a quiet machine (no build or test running): the timing is the child's CPU time, not
wall time, but the caches, memory bandwidth and clock frequency are shared with whatever else
runs. Compare builds by the ratios of one run of this script, never by CPU seconds across runs
or machines.

Identical results: every run's JSON summary, wall-clock fields dropped (keys containing `wall`
or `per_sec`), must equal OLD's first one; otherwise the first differing path is reported and
the script exits with status 1 (a speed-up that changes the work measures nothing). A run that
fails ends the script with status 2. `--self-test` checks the comparison on made-up summaries.

The scenarios (simulated time or size cut so that each run takes seconds):
  dctcp-permutation  bench-dctcp-permutation.toml, 50 ms of the 210 ms: the engine, routing and
                     ECN queues under TCP models at 432 hosts
  stride-fattree     paper-fattree.toml with STRIDE, 500 of the 5 000 web-search flows (all
                     complete): the real STRIDE endpoint and its controller on the FatTree
  pfc-incast         pfc-incast.toml, 16 senders of 10 MB into one host: NewReno and DCQCN
                     under PFC pause and resume, and STRIDE in the same incast
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from benchlib import children_cpu, cpu_shares, cpu_times

ROOT = Path(__file__).resolve().parent.parent

# name -> the `stride` arguments (run from the repository root).
SCENARIOS = {
    "dctcp-permutation": ["sim", "run", "scenarios/bench-dctcp-permutation.toml",
                          "--set", "limit=50ms"],
    "stride-fattree": ["sim", "compare", "scenarios/paper-fattree.toml", "--cc", "stride",
                       "--set", "workload.flows=500"],
    "pfc-incast": ["sim", "compare", "scenarios/pfc-incast.toml", "--cc", "newreno,dcqcn,stride",
                   "--set", "workload.bytes=10000000"],
}


def without_wall_clock(value):
    """The summary with every key that measures the machine rather than the simulation
    (containing `wall` or `per_sec`) removed, at any depth."""
    if isinstance(value, dict):
        return {k: without_wall_clock(v) for k, v in value.items()
                if "wall" not in k and "per_sec" not in k}
    if isinstance(value, list):
        return [without_wall_clock(v) for v in value]
    return value


def first_difference(a, b, path=""):
    """Where two JSON values first differ, as `path: A vs B` (keys in sorted order, list items
    by index), or None when they are equal. An int and a float of equal value differ: the
    summary's types are part of its output; NaN equals NaN."""
    here = path or "(top)"
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            sub = f"{path}.{k}" if path else k
            if k not in b:
                return f"{sub}: only in the first"
            if k not in a:
                return f"{sub}: only in the second"
            d = first_difference(a[k], b[k], sub)
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{here}: {len(a)} items vs {len(b)}"
        return None
    nans = isinstance(a, float) and isinstance(b, float) and a != a and b != b
    if type(a) is not type(b) or (a != b and not nans):
        return f"{here}: {json.dumps(a)[:80]} vs {json.dumps(b)[:80]}"
    return None


def run(binary, args):
    """(CPU seconds of the child, user + system, all threads; its JSON summary). Exits with
    status 2 when the run fails or prints no JSON."""
    cmd = [binary, *args, "--json"]
    before = children_cpu()
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    cpu = round(children_cpu() - before, 6)
    try:
        if p.returncode != 0:
            raise ValueError(f"exit status {p.returncode}")
        summary = json.loads(p.stdout)
    except ValueError as e:
        print(f"sim_speed: `{' '.join(cmd)}` failed ({e}):\n{p.stderr[-2000:]}", file=sys.stderr)
        sys.exit(2)
    return cpu, summary


def measure(name, args, old, new, rounds, new_extra):
    """One scenario's rounds, OLD then NEW in each: the CPU times and the identity check."""
    cpu = {"old": [], "new": []}
    reference, difference = None, None
    for r in range(1, rounds + 1):
        for side, binary, extra in (("old", old, []), ("new", new, new_extra)):
            t, summary = run(binary, args + extra)
            cpu[side].append(t)
            print(f"{name}: round {r}/{rounds} {side.upper()} {t:.2f} s CPU", file=sys.stderr)
            summary = without_wall_clock(summary)
            if reference is None:
                reference = summary
            elif difference is None:
                d = first_difference(reference, summary)
                if d:
                    difference = f"OLD round 1 vs {side.upper()} round {r}: {d}"
    med = {side: statistics.median(ts) for side, ts in cpu.items()}
    return {
        "command": ["stride", *args, "--json"],
        "old_cpu_s": cpu["old"],
        "new_cpu_s": cpu["new"],
        "old_median_cpu_s": med["old"],
        "new_median_cpu_s": med["new"],
        "speed_new_over_old": med["old"] / med["new"] if med["new"] > 0 else None,
        "identical": difference is None,
        "difference": difference,
    }


def spread(row):
    """The widest (max - min) / median of the two binaries' runs, as a percentage: how far
    apart the rounds were, so a ratio closer to 1 than this is noise."""
    out = 0.0
    for side in ("old", "new"):
        ts, m = row[f"{side}_cpu_s"], row[f"{side}_median_cpu_s"]
        if m > 0:
            out = max(out, (max(ts) - min(ts)) / m)
    return f"{out:.1%}"


def report(summary):
    print(f"OLD {summary['old']}\nNEW {summary['new']}\n"
          f"{summary['rounds']} round(s) each, interleaved; median CPU seconds (user + system)")
    print(f"{'scenario':<19} {'OLD cpu s':>9} {'NEW cpu s':>9} {'NEW/OLD speed':>13} "
          f"{'spread':>6}  results")
    for name, row in summary["scenarios"].items():
        speed = row["speed_new_over_old"]
        speed = f"{speed:.3f}x" if speed is not None else "-"
        ident = "identical" if row["identical"] else f"DIFFER: {row['difference']}"
        print(f"{name:<19} {row['old_median_cpu_s']:>9.2f} {row['new_median_cpu_s']:>9.2f} "
              f"{speed:>13} {spread(row) if summary['rounds'] > 1 else '-':>6}  {ident}")


def self_test():
    """The identity check on made-up summaries: wall-clock fields are ignored, anything else
    that differs is found with its path. True when every check passes."""
    base = {"transports": {"dctcp": {"events": 10, "wall_seconds": 1.0, "events_per_sec": 10.0,
                                     "categories": {"all": {"p99_fct_us": 5.5}}}},
            "wall_seconds_total": 1.1, "flows": [1, 2]}

    def dctcp(t):
        return t["transports"]["dctcp"]

    def fct(t):
        return dctcp(t)["categories"]["all"]

    # (a change made to a copy of `base`, what the comparison of base and the copy says)
    checks = [
        (lambda t: t.update(wall_seconds_total=2.2), None),
        (lambda t: dctcp(t).update(wall_seconds=2.0, events_per_sec=5.0), None),
        (lambda t: fct(t).update(p99_fct_us=5.6),
         "transports.dctcp.categories.all.p99_fct_us: 5.5 vs 5.6"),
        (lambda t: dctcp(t).update(events=10.0), "transports.dctcp.events: 10 vs 10.0"),
        (lambda t: t["flows"].append(3), "flows: 2 items vs 3"),
        (lambda t: t["transports"].update(stride={}), "transports.stride: only in the second"),
        (lambda t: t.pop("flows"), "flows: only in the first"),
        (lambda t: fct(t).update(p99_fct_us=float("nan")),
         "transports.dctcp.categories.all.p99_fct_us: 5.5 vs NaN"),
    ]
    failed = 0
    for change, want in checks:
        other = json.loads(json.dumps(base))
        change(other)
        got = first_difference(without_wall_clock(base), without_wall_clock(other))
        if got != want:
            print(f"self-test: expected {want!r}, got {got!r}", file=sys.stderr)
            failed += 1
    nan = {"x": float("nan")}
    if first_difference(nan, json.loads(json.dumps(nan))) is not None:
        print("self-test: NaN should equal NaN", file=sys.stderr)
        failed += 1
    total = len(checks) + 1
    print(f"self-test: {total - failed} of {total} checks passed")
    return failed == 0


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Run on a quiet machine; compare by the ratios of one run.")
    ap.add_argument("old", nargs="?", help="the reference `stride` binary")
    ap.add_argument("new", nargs="?", help="the `stride` binary under test")
    ap.add_argument("--rounds", type=int, default=5, help="runs of each binary per scenario")
    ap.add_argument("--only", choices=sorted(SCENARIOS), help="run this scenario only")
    ap.add_argument("--json", action="store_true", help="print the summary as JSON")
    ap.add_argument("--self-test", action="store_true",
                    help="check the identical-results comparison on made-up summaries and exit")
    # Appends `--set KEY=VALUE` to NEW's runs only: shows that the identity check fails.
    ap.add_argument("--new-set", action="append", default=[], metavar="KEY=VALUE",
                    help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.self_test:
        sys.exit(0 if self_test() else 1)
    if not a.old or not a.new:
        ap.error("give OLD_BIN and NEW_BIN (or --self-test)")
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    # Absolute paths: the runs start in the repository root, wherever this was started.
    found = [shutil.which(b) for b in (a.old, a.new)]
    for b, f in zip((a.old, a.new), found):
        if not f:
            ap.error(f"{b}: not an executable")
    a.old, a.new = (str(Path(f).resolve()) for f in found)
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"sim_speed: load average {load:.1f}: the machine is not quiet, the timings may "
              "not be meaningful", file=sys.stderr)
    names = [a.only] if a.only else list(SCENARIOS)
    extra = [w for kv in a.new_set for w in ("--set", kv)]
    t0 = cpu_times()
    rows = {n: measure(n, SCENARIOS[n], a.old, a.new, a.rounds, extra) for n in names}
    summary = {
        "old": a.old, "new": a.new,
        "rounds": a.rounds, "load_average_at_start": round(load, 2),
        "machine_cpu_shares": cpu_shares(t0, cpu_times()),
        "scenarios": rows,
        "identical": all(r["identical"] for r in rows.values()),
    }
    if a.new_set:
        summary["new_set"] = a.new_set
    if a.json:
        print(json.dumps(summary, indent=2))
    else:
        report(summary)
    if not summary["identical"]:
        print("sim_speed: the builds' results differ, so their speeds are not comparable",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
