#!/usr/bin/env python3
"""`stride demo` through the kernel qdisc between namespaces against the userspace relay,
interleaved round by round (docs/results.md, the demo rows). Needs root for the namespace path.

  python3 bench/demo_paths.py [--rounds 3] [--bytes 300MB] [--stride BIN] [-- DEMO_ARGS...]

Each round runs `stride demo --via netns` and `stride demo --via relay` (the order alternating),
with the same rate, delay and queue, and prints per run the goodput as a share of the bottleneck
and the bottleneck's own counters; then the medians. The machine is shared: figures taken on it
are provisional.
"""
import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(stride, via, nbytes, extra):
    p = subprocess.run([stride, "demo", "--via", via, "--bytes", nbytes, "--json", *extra],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit(f"stride demo --via {via} failed: {p.stderr.strip()[-500:]}")
    d = json.loads([ln for ln in p.stdout.splitlines() if ln.startswith("{")][-1])
    assert d["path"] == via, d
    row = {"share": d["bottleneck_share"], "retransmitted": d["retransmitted_packets"],
           "stt_queue_p99_us": d["queue_delay_p99_ns"] / 1e3}
    if via == "netns":
        q = d["qdisc"]
        row.update(drops=q["dropped"], drops_after_10ms=q["dropped_after_10ms"],
                   backlog_max_kib=q["backlog_max_bytes"] / 1024)
    else:
        r = d["relay"]
        row.update(drops=r["queue_drops"], drops_after_10ms=r["queue_drops_after_10ms"],
                   relay_late_p99_us=r["late_p99_ns"] / 1e3)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bytes", default="300MB")
    ap.add_argument("--stride", default=str(ROOT / "target" / "release" / "stride"))
    ap.add_argument("extra", nargs="*", help="further `stride demo` arguments (after --)")
    a = ap.parse_args()
    res = {"netns": [], "relay": []}
    for i in range(a.rounds):
        for via in (("netns", "relay") if i % 2 == 0 else ("relay", "netns")):
            row = run(a.stride, via, a.bytes, a.extra)
            res[via].append(row)
            print(f"round {i + 1} {via}: " + json.dumps(row), flush=True)
    for via, rows in res.items():
        print(f"{via}: median share {statistics.median(r['share'] for r in rows):.3f}, runs "
              f"{[round(r['share'], 3) for r in rows]}, drops after 10 ms "
              f"{[r['drops_after_10ms'] for r in rows]}")


if __name__ == "__main__":
    main()
