#!/usr/bin/env python3
"""Interleaved A/B of `stride` binaries on one `stride perf` row (docs/results.md, the transport rows).

  python3 bench/ab.py BIN_A,BIN_B[,...] REPS MODE

MODE: `bulk` (1 GB at a 40 Gbit/s line, prints Gbit/s), `rr` (3000 64-byte round trips,
prints the p50 in ns, with raw UDP through the first binary's `--udp` harness as a further row
in the same rounds), `rrpolled` (the same with the CPUs held out of idle while it runs,
`/dev/cpu_dma_latency` = 0, as bench/transport.py's target row), `parN` (1 GB split over N parallel connections against a server with
`--shards 2`, prints the aggregate Gbit/s), `demo` (`stride demo --via relay --bytes 300MB`, prints
the relay's utilization; no server), `cpuRATE` (2 s pinned at RATE, e.g. `cpu100mbit`,
prints the client's CPU cores) or a pinned rate such as `10gbit` (2 s, prints Gbit/s). Each binary
talks to its own `stride perf server`; rounds alternate the binaries; prints each binary's
median and runs.
"""
import contextlib
import json
import statistics
import subprocess
import sys
import time

from benchlib import idle_polling, port


def main():
    bins = sys.argv[1].split(",")
    reps, mode = int(sys.argv[2]), sys.argv[3]
    polled = mode == "rrpolled"
    if polled:
        mode = "rr"
    # Raw UDP rides along as one more "binary" in round-trip mode.
    runs = bins + (["udp"] if mode == "rr" else [])
    res = {b: [] for b in runs}
    srv = {}
    for b in runs if mode != "demo" else []:
        p = port()
        shards = ["--shards", "2"] if mode.startswith("par") else []
        cmd = [bins[0], "perf", "server", "--udp"] if b == "udp" else [b, "perf", "server"]
        srv[b] = (p, subprocess.Popen([*cmd, "--listen", f"127.0.0.1:{p}", *shards],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(0.5)
    held = idle_polling() if polled else contextlib.nullcontext(True)
    with held as ok:
        if not ok:
            for _, proc in srv.values():
                proc.kill()
            sys.exit("rrpolled: /dev/cpu_dma_latency cannot be opened (needs root)")
        rounds(bins, runs, reps, mode, srv, res)
    for b in runs:
        print(b, "median", statistics.median(res[b]), [round(x, 2) for x in res[b]])


def relay_only(b):
    """`--via relay` for a build whose demo has a choice of path (as root it would take the
    kernel qdisc), nothing for an older one (the relay was its only path)."""
    h = subprocess.run([b, "demo", "--help"], capture_output=True, text=True).stdout
    return ["--via", "relay"] if "--via" in h else []


def rounds(bins, runs, reps, mode, srv, res):
    try:
        for _ in range(reps):
            for b in runs:
                if mode == "demo":
                    out = subprocess.run([b, "demo", "--bytes", "300MB", "--json", *relay_only(b)],
                                         capture_output=True, text=True).stdout
                    j = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
                    res[b].append(j["relay"]["utilization"])
                    continue
                if mode == "bulk":
                    args = ["--bytes", "1GB", "--line-rate", "40gbit"]
                elif mode == "rr":
                    args = ["--rr", "3000"]
                elif mode.startswith("par"):
                    args = ["--bytes", "1GB", "--line-rate", "40gbit", "--parallel", mode[3:]]
                elif mode.startswith("cpu"):
                    args = ["--time", "2s", "--pin-rate", "--line-rate", mode[3:]]
                else:
                    args = ["--time", "2s", "--pin-rate", "--line-rate", mode]
                cmd = [bins[0], "perf", "client", "--udp"] if b == "udp" else [b, "perf", "client"]
                out = subprocess.run([*cmd, "--to", f"127.0.0.1:{srv[b][0]}", *args, "--json"],
                                     capture_output=True, text=True).stdout
                j = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
                key = "cpu_cores" if mode.startswith("cpu") else "goodput_gbps"
                res[b].append(j.get(key, j.get("rtt_p50_ns")))
    finally:
        for _, proc in srv.values():
            proc.kill()


if __name__ == "__main__":
    main()
