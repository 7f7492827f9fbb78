#!/usr/bin/env python3
"""Many senders into one receiver ("200 concurrent senders"): N concurrent
`stride send` processes, each sending its own file to one `stride recv` on loopback.

  python3 bench/many.py [--senders 200] [--size 1MB] [--runs 10] [--stride PATH] [--json OUT]
                        [--read-delay-slack 250us]

A run passes when every sender exits 0 (the receiver confirmed size and BLAKE3) and every file
is in the receiver's directory with the right bytes. Per run it prints the transfers that
completed, the slowest sender's time, and the receiver's socket-overflow count (datagrams the
kernel dropped at the receiver's UDP socket, from `SO_RXQ_OVFL`, reported by `stride recv
--json` in its counter lines) when the binary reports it. Exit status 1 when any run lost a
transfer. The CI slice is `--senders 50 --runs 1` (bench/test_many.py).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import port

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))


def parse_size(s):
    units = {"KB": 1000, "MB": 1000**2, "KIB": 1024, "MIB": 1024**2, "B": 1}
    u = s.upper()
    for k in sorted(units, key=len, reverse=True):
        if u.endswith(k):
            return int(float(u[: -len(k)]) * units[k])
    return int(u)


def one_run(stride, senders, size, timeout, work, recv_extra=()):
    src, dst = work / "src", work / "dst"
    shutil.rmtree(work, ignore_errors=True)
    src.mkdir(parents=True)
    dst.mkdir()
    files = []
    for i in range(senders):
        f = src / f"f{i:04d}.bin"
        f.write_bytes(os.urandom(size))
        files.append(f)
    p = port()
    recv = subprocess.Popen(
        [stride, "recv", "--listen", f"127.0.0.1:{p}", "--out", dst, "--json",
         "--report-interval", "1s", *recv_extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(0.3)
    t0 = time.monotonic()
    procs = [subprocess.Popen([stride, "send", "--to", f"127.0.0.1:{p}", "--json", f],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for f in files]
    ok, errors, slowest = 0, [], 0.0
    for f, pr in zip(files, procs):
        left = max(1.0, timeout - (time.monotonic() - t0))
        try:
            _, err = pr.communicate(timeout=left)
        except subprocess.TimeoutExpired:
            pr.kill()
            _, err = pr.communicate()
            errors.append(f"{f.name}: timed out")
            continue
        slowest = max(slowest, time.monotonic() - t0)
        got = dst / f.name
        if pr.returncode == 0 and got.exists() and got.read_bytes() == f.read_bytes():
            ok += 1
        else:
            errors.append(f"{f.name}: exit {pr.returncode}: {err.strip()[-200:]}")
    time.sleep(1.2)  # one more counter line from the receiver
    recv.terminate()
    out, _ = recv.communicate(timeout=10)
    counters = {}
    for line in out.splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        counters = j.get("counters", counters)
    shutil.rmtree(work, ignore_errors=True)
    return {"senders": senders, "completed": ok, "seconds": slowest,
            "rx_overflow": counters.get("rx_overflow"), "counters": counters,
            "errors": errors[:5]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--senders", type=int, default=200)
    ap.add_argument("--size", default="1MB")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per run")
    ap.add_argument("--stride", default=str(TARGET / "release" / "stride"))
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--read-delay-slack", help="passed to `stride recv` (e.g. 250us)")
    ap.add_argument("--json", help="write the runs here")
    a = ap.parse_args()
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       env=dict(os.environ, CARGO_TARGET_DIR=str(TARGET)), check=True)
    size = parse_size(a.size)
    runs = []
    with tempfile.TemporaryDirectory(prefix="stride-many-") as tmp:
        for r in range(a.runs):
            extra = ["--read-delay-slack", a.read_delay_slack] if a.read_delay_slack else []
            res = one_run(a.stride, a.senders, size, a.timeout, Path(tmp) / f"run{r}", extra)
            runs.append(res)
            print(f"run {r + 1}/{a.runs}: {res['completed']}/{a.senders} completed in "
                  f"{res['seconds']:.1f} s, receiver socket overflow {res['rx_overflow']}"
                  + f", RSTs sent {res['counters'].get('rsts_sent')}, datagrams for unknown "
                  f"connections {res['counters'].get('unknown_connection_datagrams')}"
                  + (f"; first errors: {res['errors']}" if res["errors"] else ""), flush=True)
    full = sum(1 for r in runs if r["completed"] == a.senders)
    print(f"\n{a.senders} senders x {a.size}: every transfer completed in {full} of "
          f"{a.runs} runs")
    if a.json:
        Path(a.json).write_text(json.dumps(runs, indent=1))
    sys.exit(0 if full == a.runs else 1)


if __name__ == "__main__":
    main()
