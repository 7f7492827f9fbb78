#!/usr/bin/env python3
"""Bulk goodput and CPU of STRIDE by datagram size (`--mtu`) against kernel TCP, on loopback.

  python3 bench/mtu_sweep.py [ROUNDS] [--bytes 1GB] [--mtus 1500,9000,65536] [--stride BIN]

Each round runs one 1 GB transfer per MTU and one with kernel TCP, interleaved, through
`stride perf` (the same harness for both). CPU: the client's rusage plus the server's
/proc/PID/stat before and after, in CPU-seconds per Gbit moved. Prints each run and the
medians. Kernel TCP sends 64 KiB segments on loopback (its MTU is 65536).
"""
import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path

from benchlib import children_cpu, port, proc_cpu

ROOT = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", type=int, nargs="?", default=5)
    ap.add_argument("--bytes", default="1GB")
    ap.add_argument("--mtus", default="1500,9000,65536")
    ap.add_argument("--stride", help="the stride binary (default: build this tree's)")
    a = ap.parse_args()
    if a.stride:
        stride = Path(a.stride).resolve()
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       check=True)
        stride = target / "release" / "stride"
    p_s, p_t = port(), port()
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    srv = subprocess.Popen([stride, "perf", "server", "--listen", f"127.0.0.1:{p_s}"], **quiet)
    tcp = subprocess.Popen([stride, "perf", "server", "--tcp", "--listen", f"127.0.0.1:{p_t}"],
                           **quiet)
    time.sleep(0.5)
    runs = [(f"stride {m}", ["--to", f"127.0.0.1:{p_s}", "--line-rate", "40gbit", "--mtu", m],
             srv.pid) for m in a.mtus.split(",")]
    runs.append(("kernel tcp", ["--tcp", "--to", f"127.0.0.1:{p_t}"], tcp.pid))
    res = {name: [] for name, _, _ in runs}
    try:
        for _ in range(a.rounds):
            for name, args, pid in runs:
                s0, c0 = proc_cpu(pid), children_cpu()
                out = subprocess.run([stride, "perf", "client", "--bytes", a.bytes, "--json",
                                      *args], capture_output=True, text=True, timeout=300)
                s1, c1 = proc_cpu(pid), children_cpu()
                if out.returncode != 0:
                    raise SystemExit(f"{name}: {out.stderr}")
                j = json.loads([ln for ln in out.stdout.splitlines() if ln.startswith("{")][-1])
                gbit = j["bytes"] * 8 / 1e9
                r = (gbit / j["seconds"], (c1 - c0 + s1 - s0) / gbit, c1 - c0, s1 - s0)
                res[name].append(r)
                print(f"{name}: {r[0]:.2f} Gbit/s, {r[1]:.4f} CPU s per Gbit "
                      f"(sender {r[2]:.2f} s, receiver {r[3]:.2f} s)", flush=True)
    finally:
        srv.kill()
        tcp.kill()
    print(f"\n| sender | Gbit/s | CPU s per Gbit | sender CPU s | receiver CPU s |\n"
          f"|---|---|---|---|---|")
    for name, v in res.items():
        m = [statistics.median(x[i] for x in v) for i in range(4)]
        print(f"| {name} | {m[0]:.2f} | {m[1]:.4f} | {m[2]:.2f} | {m[3]:.2f} |")
    print(f"medians of {a.rounds} interleaved rounds")


if __name__ == "__main__":
    main()
