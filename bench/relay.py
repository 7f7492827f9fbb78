#!/usr/bin/env python3
"""The 1 Gbit/s relay rows, interleaved: `stride demo` through its 1 Gbit/s relay
(256 KiB drop-tail queue, 20 us one way) with the sender's NIC at 10 Gbit/s (a fast sender into
a slow bottleneck) and at 1 Gbit/s (the demo's default), for each variant, rep by rep.

  python3 bench/relay.py                     # 5 reps, variants default and delack50
  python3 bench/relay.py --reps 3 --bytes 100MB --variants default,delack50,paper

Variants: `default` (the build's host profile), `delack50` (receiver's `--delayed-ack 50us`,
the core's backstop before the host profile raised it), `paper` (`--cc stride-paper`).
Reports medians per (NIC, variant): relay utilisation, relay queue p50/p99 (the relay's own
measure), queue drops and those after the first 10 ms, retransmissions, timeouts. Raw runs go
to out/bench-relay.json. Loopback only. Builds the release `stride` binary.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
STRIDE = TARGET / "release" / "stride"
VARIANTS = {"default": [], "delack50": ["--delayed-ack", "50us"], "paper": ["--cc", "stride-paper"]}
NICS = {"10g": ["--line-rate", "10gbit"], "1g": []}


def demo(args, nbytes):
    p = subprocess.run([str(STRIDE), "demo", "--via", "relay", "--json", "--bytes", nbytes, *args],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        sys.exit(f"stride demo {' '.join(args)} failed: {p.stderr.strip()[-500:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    r = d["relay"]
    return {"utilization": r["utilization"], "q50_us": r["queue_delay_p50_ns"] / 1e3,
            "q99_us": r["queue_delay_p99_ns"] / 1e3, "drops": r["queue_drops"],
            "drops_after_10ms": r["queue_drops_after_10ms"],
            "retransmitted": d["retransmitted_packets"], "timeouts": d["timeouts"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bytes", default="300MB")
    ap.add_argument("--variants", default="default,delack50")
    ap.add_argument("--nics", default="10g,1g")
    ap.add_argument("--out", default=str(ROOT / "out" / "bench-relay.json"))
    a = ap.parse_args()
    variants = a.variants.split(",")
    nics = a.nics.split(",")
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"--variants: unknown {v!r} (known: {', '.join(VARIANTS)})")
    for n in nics:
        if n not in NICS:
            sys.exit(f"--nics: unknown {n!r} (known: {', '.join(NICS)})")
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT, check=True)
    runs = {(n, v): [] for n in nics for v in variants}
    for rep in range(a.reps):
        for n in nics:
            for v in variants:
                r = demo(NICS[n] + VARIANTS[v], a.bytes)
                runs[(n, v)].append(r)
                print(f"rep {rep + 1} {n} {v}: {r}", file=sys.stderr)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps({f"{n}/{v}": r for (n, v), r in runs.items()}, indent=1))
    print(f"\n## Through the 1 Gbit/s relay, {a.bytes}, medians of {a.reps} interleaved reps")
    print("| sender NIC | variant | utilization | queue p50 / p99 (us) | drops | after 10 ms "
          "| retransmitted | timeouts |\n|---|---|---|---|---|---|---|---|")
    for (n, v), rs in runs.items():
        m = {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        print(f"| {n} | {v} | {100 * m['utilization']:.1f} % (" +
              ", ".join(f"{100 * r['utilization']:.1f}" for r in rs) +
              f") | {m['q50_us']:.0f} / {m['q99_us']:.0f} | {m['drops']:.0f} | "
              f"{m['drops_after_10ms']:.0f} | {m['retransmitted']:.0f} | {m['timeouts']:.0f} |")


if __name__ == "__main__":
    main()
