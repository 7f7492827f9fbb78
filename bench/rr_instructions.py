#!/usr/bin/env python3
"""User-space instructions per 64-byte round trip of a whole `stride perf --rr` client.

  python3 bench/rr_instructions.py [--stride BIN ...] [--modes async,blocking,udp,udp-blocking]
                                   [--repeat 1] [--json out/rr-instructions.json]

`bench/core_instructions.py` counts the protocol core alone; this counts everything the
client process executes in user space per exchange: the core, the endpoint around it (locks,
the receive batch, `settle`), tokio and the harness. It runs the client under Valgrind's
callgrind (`apt install valgrind`) against a server running natively on loopback, twice: with
N1 and N2 exchanges. The difference of the two totals over the difference of exchanges made
(warm-up included, as the client reports them) cancels start-up and connection set-up, so what
is left is the steady exchange. Also reported: clock reads per exchange (calls into
`clock_gettime`, from whichever caller).

Counts are not quite exact: how often a client polls, spins or parks depends on timing. Runs of
one binary varied by up to about 250 instructions per exchange for the blocking clients and 400
for the tokio ones, so compare two binaries (`--stride OLD --stride NEW`) by the median of a few
runs (`--repeat 3`). The async client's count also holds its driver thread's timed wake-ups
(every 1 ms while a reader waits, `READER_WAIT_NS`): under callgrind, which runs the client
tens of times slower, they fall on many more exchanges than in a native run (the driver
received 0.37 datagrams per exchange under callgrind, about 0.05 natively), so compare async
counts between builds, not with the tokio UDP client's. Instructions are not time: the kernel's share of a round
trip is not in them, nor cache misses. Modes: `async` (the tokio harness over `stride::Endpoint`),
`blocking` (`stride::blocking`), and raw UDP the same two ways for reference.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import callgrind_calls, legacy_warm_up, port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODES = {
    "async": [],
    "blocking": ["--blocking"],
    "udp": ["--udp"],
    "udp-blocking": ["--udp", "--blocking"],
}
N1, N2 = 1000, 5000


def callgrind(binary, flags, dst, count, out):
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", binary, "perf",
           "client", *flags, "--to", dst, "--rr", str(count), "--json"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{run.stderr[-2000:]}")
    report = json.loads(run.stdout.strip().splitlines()[-1])
    # Every exchange made, the warm-up included (as the client reports it, or by the rule of a
    # binary older than that field).
    made = report["round_trips"] + report.get("warm_up_round_trips", legacy_warm_up(count))
    total, calls = callgrind_calls(out)
    clock = sum(n for _, callee, n, _ in calls if "clock_gettime" in callee)
    return total, clock, made


def measure(binary, mode):
    flags = MODES[mode]
    p = port()
    srv = subprocess.Popen([binary, "perf", "server", *flags, "--listen", f"127.0.0.1:{p}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        with tempfile.TemporaryDirectory() as d:
            i1, c1, m1 = callgrind(binary, flags, f"127.0.0.1:{p}", N1, Path(d) / "a")
            i2, c2, m2 = callgrind(binary, flags, f"127.0.0.1:{p}", N2, Path(d) / "b")
    finally:
        srv.kill()
        srv.wait()
    made = m2 - m1
    return {"instructions_per_exchange": round((i2 - i1) / made),
            "clock_reads_per_exchange": round((c2 - c1) / made, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stride", action="append", help="binary to measure (repeatable; "
                    "default: build this tree's)")
    ap.add_argument("--modes", default="async,blocking,udp,udp-blocking")
    ap.add_argument("--repeat", type=int, default=1, help="measurements per binary and mode "
                    "(the median is reported)")
    ap.add_argument("--json")
    a = ap.parse_args()
    modes = a.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit(f"--modes: unknown mode {m!r} (known: {', '.join(MODES)})")
    bins = a.stride
    if not bins:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       check=True)
        bins = [str(ROOT / "target" / "release" / "stride")]
    res = {}
    for b in bins:
        res[b] = {}
        for m in modes:
            runs = [measure(b, m) for _ in range(max(a.repeat, 1))]
            res[b][m] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            res[b][m]["runs"] = runs
        for m, r in res[b].items():
            print(f"{b}  {m:13s} {r['instructions_per_exchange']:7.0f} instructions, "
                  f"{r['clock_reads_per_exchange']:5.2f} clock reads per exchange")
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
