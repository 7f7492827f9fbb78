#!/usr/bin/env python3
"""The protocol core's cost in instructions, which a shared or virtual machine cannot blur.

  python3 bench/core_instructions.py [--top 15] [--json out/core-instructions.json]

Runs two in-memory benches of `stride-proto` under Valgrind's callgrind (`apt install
valgrind`) with their `--quick` sizes and counts the instructions executed inside the core:
the inclusive cost of every call the bench makes into `stride_proto`, so the bench's own
work (building datagrams, asserting) is left out, and reports them per unit of work:

  rr        per 64-byte request/response round trip, both endpoints (`benches/rr.rs`: the
            calls `stride::blocking` makes per exchange)
  endpoint  per DATA packet of a zero-copy bulk transfer, sender and receiver together
            (`benches/endpoint.rs`: `write_bytes`, `poll_transmit_parts`,
            `handle_ecn_bytes`, `read_chunk`, the ACKs)

Instruction counts are exact and repeatable on one build (the same binary gives the same
count), so two builds compare by one run each; wall-clock time on this project's 2-vCPU
machines varied 2x between runs of one binary. Instructions are not time (a cache miss costs
more than an add), so a change is also checked with the benches' own timings. Core functions
the compiler inlined into the bench count as the bench's (few: the event queue's pop).
"""
import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import callgrind_calls  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BENCHES = {"rr": "round trip", "endpoint": "DATA packet"}


def bench_binary(name):
    """Builds the bench (release, as `cargo bench`) and returns its executable."""
    out = subprocess.run(
        ["cargo", "bench", "-p", "stride-proto", "--bench", name, "--no-run",
         "--message-format=json"], cwd=ROOT, capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        m = json.loads(line)
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == name \
                and m.get("executable"):
            return m["executable"]
    sys.exit(f"no executable for bench {name}")


def parse(path):
    """(program total, {core function: inclusive Ir of the calls the bench made into it})."""
    total, calls = callgrind_calls(path)
    into = collections.Counter()
    for fn, cfn, _, cost in calls:
        caller_is_bench = not fn.startswith("stride_proto::") and (
            fn.startswith("rr::") or fn.startswith("endpoint::"))
        if caller_is_bench and "stride_proto::" in cfn:
            into[cfn.split(" [")[0]] += cost
    return total, into


def measure(name, top):
    exe = bench_binary(name)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "cg.out"
        run = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                              exe, "--bench", "--quick"], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"callgrind of {name} failed:\n{run.stderr[-2000:]}")
        units = [int(m.group(1)) for m in re.finditer(r"^units: (\d+)$", run.stdout, re.M)]
        if len(units) != 1:
            sys.exit(f"bench {name} printed no `units:` line:\n{run.stdout}")
        total, into = parse(out)
    n = units[0]
    core = sum(into.values())
    return {
        "unit": BENCHES[name],
        "units": n,
        "core_instructions_per_unit": round(core / n, 1),
        "program_instructions_per_unit": round(total / n, 1),
        "calls_into_core": {f: round(c / n, 1) for f, c in into.most_common(top)},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=15, help="core calls listed per bench")
    ap.add_argument("--json", help="also write the figures to this file")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("valgrind is not installed (apt install valgrind)")
    res = {name: measure(name, a.top) for name in BENCHES}
    for name, r in res.items():
        print(f"{name}: {r['core_instructions_per_unit']:.0f} core instructions per "
              f"{r['unit']} ({r['program_instructions_per_unit']:.0f} with the bench's own), "
              f"{r['units']} {r['unit']}s")
        for f, c in r["calls_into_core"].items():
            print(f"  {c:9.1f}  {f}")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
