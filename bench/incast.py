#!/usr/bin/env python3
"""Incast figures: N senders x 64 KiB at t = 0 into one receiver behind one 10 Gbit/s
port with a 100-packet buffer (scenarios/incast.toml), for N in 8..128 and each transport.

Prints, per transport and N, the last completion over the wire-time ideal (N x ceil(65536 /
payload) x 1538 B at 10 Gbit/s; STRIDE carries 1440 payload bytes, the TCP models 1460) and the
switch drops.

    python3 bench/incast.py --cc stride,stride-paper,dctcp [--n 8,16,32,64,128] [--set k=v ...]
"""
import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(binary, cc, n, sets, scenario):
    with tempfile.TemporaryDirectory() as out:
        cmd = [binary, "sim", "compare", scenario, "--cc", cc,
               "--set", f"workload.senders={n}", "--set", f"topology.senders={n}", "--out", out]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        summ = json.load(open(os.path.join(out, "summary.json")))
        rows = list(csv.DictReader(open(os.path.join(out, f"flows-{cc}.csv"))))
    t = summ["transports"][cc]
    done = [int(r["fct_ns"]) for r in rows if r["fct_ns"] not in ("", "-1")]
    payload = 1460 if cc in ("dctcp", "newreno", "vegas", "aimd") else 1440
    ideal = n * math.ceil(65536 / payload) * 1538 * 8 / 10.0
    last = max(done) if len(done) == n else float("inf")
    return {"cc": cc, "n": n, "last_us": last / 1e3, "ideal_us": ideal / 1e3,
            "ratio": last / ideal, "drops": t["drops"], "completed": t["completed"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="stride,stride-paper,dctcp")
    ap.add_argument("--n", default="8,16,32,64,128")
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--scenario", default=os.path.join(ROOT, "scenarios", "incast.toml"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "stride"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    res = []
    for n in [int(x) for x in a.n.split(",")]:
        for cc in a.cc.split(","):
            res.append(run(a.bin, cc, n, a.set, a.scenario))
    if a.json:
        json.dump(res, sys.stdout, indent=1)
        print()
        return
    print("| N | transport | last (µs) | ideal (µs) | last / ideal | drops |")
    print("|---|---|---|---|---|---|")
    for r in res:
        print(f"| {r['n']} | {r['cc']} | {r['last_us']:.0f} | {r['ideal_us']:.0f} | "
              f"{r['ratio']:.2f} | {r['drops']} |")


if __name__ == "__main__":
    main()
