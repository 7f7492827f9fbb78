#!/usr/bin/env python3
"""Loss recovery through the userspace bottleneck: `stride send` -> `stride relay`
-> `stride recv`, one file per run, the relay impairing the forward (data) path.

  python3 bench/loss.py                 # full: 100 MB per run, 5 reps, every case
  python3 bench/loss.py --quick         # CI-sized: 4 MB, 1 rep (a smoke run, not a figure)
  python3 bench/loss.py --cases loss5 --variants go-back-n,selective --reps 3 --size 100MB

Cases (relay at 1 Gbit/s, 256 KiB drop-tail queue, sender line rate 1 Gbit/s):
  clean    1 ms one way, no impairment
  loss5    1 ms one way, 5 % random loss
  loss1    1 ms one way, 1 % random loss
  reorder5 1 ms one way, 5 % of packets held back by up to 100 us (no loss)

Variants are the sender's and receiver's `--recovery` (the transport's `recovery` switch);
`default` passes nothing (the build's default). A `+md30` suffix (e.g. `selective+md30`) also
gives the sender `--cc-param md_shift=30`, which makes the controller's multiplicative cuts
(NACK and high delay) negligible: evidence of what the NACK reaction costs on a random-loss
path, not a configuration to use. A `+gatelow` suffix gives the sender `--cc-param
gate_high=off`: the NACK gate at t_low (the core's) instead of the host profile's t_high (spec
§8.6 `gate_high`). For each case the variants run interleaved
(case, rep, variant order), and the table reports medians per (case, variant):

  goodput  file bytes / sender's wall time (Gbit/s), and over (1 - loss) x bottleneck
  resent   retransmitted payload bytes / file bytes (retransmitted packets x max payload,
           an upper bound: a packet may be shorter)
  busy     the relay's utilisation of the bottleneck
  nacks    NACKs the sender received

Raw runs go to out/bench-loss.json. Loopback only. Builds the release `stride` binary.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import port

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
STRIDE = TARGET / "release" / "stride"
RATE_BPS = 1e9
MAX_PAYLOAD = 1440

CASES = {
    "clean": dict(loss=0.0, args=["--delay", "1ms"]),
    "loss5": dict(loss=0.05, args=["--delay", "1ms", "--loss", "5%"]),
    "loss1": dict(loss=0.01, args=["--delay", "1ms", "--loss", "1%"]),
    "reorder5": dict(loss=0.0, args=["--delay", "1ms", "--reorder", "5%",
                                     "--reorder-by", "100us"]),
}


def parse_size(s):
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 1 << 10, "MIB": 1 << 20}
    u = s.upper()
    for k, v in units.items():
        if u.endswith(k):
            return int(float(u[: -len(k)]) * v)
    return int(u)


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def one_run(case, variant, path, size, seed, timeout):
    c = CASES[case]
    rp, lp = port(), port()
    base, _, suffix = variant.partition("+")
    rec = [] if base == "default" else ["--recovery", base]
    suffixes = {"": [], "md30": ["--cc-param", "md_shift=30"],
                "gatelow": ["--cc-param", "gate_high=off"]}
    if suffix not in suffixes:
        sys.exit(f"unknown variant suffix {suffix!r} (known: md30, gatelow)")
    extra = suffixes[suffix]
    with tempfile.TemporaryDirectory() as out:
        recv = subprocess.Popen([STRIDE, "recv", "--listen", f"127.0.0.1:{rp}", "--out", out,
                                 "--once", "--json", "--force"] + rec,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        relay = subprocess.Popen([STRIDE, "relay", "--listen", f"127.0.0.1:{lp}", "--to",
                                  f"127.0.0.1:{rp}", "--rate", "1gbit", "--queue", "256KiB",
                                  "--seed", str(seed), "--json"] + c["args"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.3)
        t0 = time.monotonic()
        send = subprocess.run([STRIDE, "send", "--to", f"127.0.0.1:{lp}", "--line-rate", "1gbit",
                               "--json", str(path)] + rec + extra,
                              capture_output=True, text=True, timeout=timeout)
        wall = time.monotonic() - t0
        try:
            recv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            recv.kill()
        relay.send_signal(2)
        r_out, r_err = relay.communicate(timeout=10)
        v_out, v_err = recv.communicate()
    if send.returncode != 0:
        sys.exit(f"send failed ({case}, {variant}):\n{send.stderr}\nrecv: {v_err}\nrelay: {r_err}")
    s = json_lines(send.stdout)[-1]
    rl = json_lines(r_out)[-1]
    ok = [x for x in json_lines(v_out) if x.get("ok")]
    if not ok:
        sys.exit(f"receiver did not confirm ({case}, {variant}): {v_out} {v_err}")
    goodput = size * 8 / s["seconds"] / 1e9
    return {
        "case": case, "variant": variant, "seed": seed, "wall_s": wall,
        "seconds": s["seconds"], "goodput_gbps": goodput,
        "goodput_share": goodput * 1e9 / ((1 - c["loss"]) * RATE_BPS),
        "resent_ratio": s["retransmitted_packets"] * MAX_PAYLOAD / size,
        "retransmitted_packets": s["retransmitted_packets"], "nacks": s["nacks_received"],
        "timeouts": s["timeouts"], "busy": rl["utilization"],
        "random_drops": rl["random_drops"], "queue_drops": rl["queue_drops"],
        "reordered": rl["reordered"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="100MB")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cases", default="clean,loss5,loss1,reorder5")
    ap.add_argument("--variants", default="go-back-n,selective")
    ap.add_argument("--quick", action="store_true", help="4 MB, 1 rep (CI smoke run)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "out" / "bench-loss.json"))
    a = ap.parse_args()
    if a.quick:
        a.size, a.reps = "4MB", 1
    size = parse_size(a.size)
    cases = a.cases.split(",")
    variants = a.variants.split(",")
    for c in cases:
        if c not in CASES:
            sys.exit(f"unknown case {c!r} (known: {', '.join(CASES)})")
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       env=dict(os.environ, CARGO_TARGET_DIR=str(TARGET)), check=True)
    runs = []
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "payload.bin"
        with open(path, "wb") as f:
            left = size
            while left:
                n = min(left, 1 << 22)
                f.write(os.urandom(n))
                left -= n
        for case in cases:
            for rep in range(a.reps):
                for v in variants:
                    r = one_run(case, v, path, size, seed=rep + 1, timeout=600)
                    runs.append(r)
                    print(f"{case:9} {v:10} rep {rep}: {r['goodput_gbps']:.3f} Gbit/s, resent "
                          f"{r['resent_ratio']:.2f}x, busy {r['busy']:.2f}, nacks {r['nacks']}, "
                          f"timeouts {r['timeouts']}", file=sys.stderr)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"size": size, "reps": a.reps, "runs": runs}, indent=1))
    print(f"\n{a.size} per run, {a.reps} rep(s), medians; relay 1 Gbit/s, 256 KiB queue\n")
    print("| case | recovery | goodput (Gbit/s) | goodput / ((1-loss) x 1 Gbit/s) | resent / file "
          "| relay busy | NACKs | timeouts |")
    print("|---|---|---|---|---|---|---|---|")
    for case in cases:
        for v in variants:
            rs = [r for r in runs if r["case"] == case and r["variant"] == v]
            m = lambda k: statistics.median(r[k] for r in rs)  # noqa: E731
            print(f"| {case} | {v} | {m('goodput_gbps'):.3f} | {m('goodput_share'):.2f} | "
                  f"{m('resent_ratio'):.2f} | {m('busy'):.2f} | {m('nacks'):.0f} | "
                  f"{m('timeouts'):.0f} |")
    if len(variants) > 1:
        base = variants[0]
        print(f"\nRatios against {base} (median of per-rep ratios):")
        for case in cases:
            for v in variants[1:]:
                g = []
                for rep in range(a.reps):
                    pair = {r["variant"]: r for r in runs
                            if r["case"] == case and r["seed"] == rep + 1}
                    g.append(pair[v]["goodput_gbps"] / pair[base]["goodput_gbps"])
                print(f"  {case}: {v} goodput x{statistics.median(g):.2f}")


if __name__ == "__main__":
    main()
