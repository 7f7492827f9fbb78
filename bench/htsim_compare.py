#!/usr/bin/env python3
"""Simulator speed against htsim on the same work, side by side on one machine.

htsim (Broadcom/csg-htsim) is never vendored: give the path of a checkout (the directory that
holds `sim/`, or `sim/` itself). If its DCTCP permutation binary is missing, this script builds
it there (libhtsim.a, the datacenter objects, `old_tests/main_dctcp_permutation.cpp`, and
`parse_output` to read its log).

The work: htsim's `main_dctcp_permutation` (FatTree k = 12, 432 hosts, 10 Gbit/s, 9000-byte
packets, 100-packet queues, ECN, 0.21 s simulated) against
`stride sim run scenarios/bench-dctcp-permutation.toml` (the same fabric and traffic in this
simulator). The two runs alternate, `--runs` times each; the report gives the median wall time
of each, their ratio, peak memory, and both aggregate goodputs.

    python3 bench/htsim_compare.py --htsim /tmp/htsim-src --runs 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OBJS = [
    "firstfit.o", "vl2_topology.o", "fat_tree_topology.o", "fat_tree_switch.o",
    "bcube_topology.o", "connection_matrix.o", "oversubscribed_fat_tree_topology.o",
    "shortflows.o", "star_topology.o", "multihomed_fat_tree_topology.o",
]


def sim_dir(p: Path) -> Path:
    if (p / "sim" / "Makefile").exists():
        return p / "sim"
    if (p / "Makefile").exists() and (p / "datacenter").is_dir():
        return p
    sys.exit(f"--htsim {p}: no htsim checkout there (expected sim/Makefile)")


def build(sim: Path) -> Path:
    exe = sim / "datacenter/old_tests/htsim_dctcp_permutation"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE}

    def run(cmd, cwd):
        r = subprocess.run(cmd, cwd=cwd, **quiet)
        if r.returncode != 0:
            sys.exit(f"building htsim failed: {' '.join(cmd)}\n{r.stderr.decode()[-2000:]}")

    if not exe.exists():
        print(f"building htsim in {sim} ...", file=sys.stderr)
        run(["make", "-j2", "libhtsim.a", "parse_output"], sim)
        run(["make", "-j2", *OBJS], sim / "datacenter")
        old = sim / "datacenter/old_tests"
        run(["make", "main_dctcp_permutation.o"], old)
        # The old test defines ntoa/itoa that libhtsim now defines too.
        run(["g++", "-O2", "main_dctcp_permutation.o", *[f"../{o}" for o in OBJS],
             "-L..", "-L../..", "-lhtsim", "-Wl,--allow-multiple-definition",
             "-o", exe.name], old)
    if not (sim / "parse_output").exists():
        run(["make", "parse_output"], sim)
    return exe


def timed(cmd, cwd=None):
    """(wall seconds, peak RSS MiB, stdout) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd[0]} failed")
    return wall, ru.ru_maxrss / 1024, out.decode()


def htsim_goodput(sim: Path, log: Path) -> float:
    """Aggregate goodput, Gbit/s: the sinks' cumulative ACKs at the last sample over its time."""
    r = subprocess.run([str(sim / "parse_output"), str(log), "-ascii"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True)
    last = {}
    t_last = 0.0
    for line in r.stdout.decode(errors="replace").splitlines():
        if "TCP_SINK" not in line or "CAck" not in line:
            continue
        f = line.split()
        t = float(f[0])
        sink = f[f.index("ID") + 1]
        last[sink] = int(f[f.index("CAck") + 1])
        t_last = max(t_last, t)
    if t_last == 0:
        return float("nan")
    return sum(last.values()) * 8 / t_last / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--htsim", required=True, type=Path, help="htsim checkout (holds sim/)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios/bench-dctcp-permutation.toml"))
    ap.add_argument("--stride", default=str(ROOT / "target/release/stride"))
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    a = ap.parse_args()
    sim = sim_dir(a.htsim.resolve())
    exe = build(sim)
    if not Path(a.stride).exists():
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       check=True)
    log = Path("/tmp") / f"htsim-bench-{os.getpid()}.log"
    rows = {"htsim": [], "stride-sim": []}
    for i in range(a.runs):
        w, m, _ = timed([str(exe), "-nodes", "432", "-conns", "432", "-o", str(log)])
        g = htsim_goodput(sim, log)
        rows["htsim"].append({"wall_s": w, "peak_mib": m, "goodput_gbps": g})
        print(f"run {i + 1}: htsim {w:.1f} s, {m:.0f} MiB, goodput {g:.1f} Gbit/s",
              file=sys.stderr)
        w, m, out = timed([a.stride, "sim", "run", a.scenario, "--json"])
        t = json.loads(out)["transports"]["dctcp"]
        rows["stride-sim"].append({"wall_s": w, "peak_mib": m,
                                   "goodput_gbps": t["goodput_gbps"],
                                   "simulated_ms": t["simulated_ms"]})
        print(f"run {i + 1}: stride-sim {w:.1f} s, {m:.0f} MiB, goodput "
              f"{t['goodput_gbps']:.1f} Gbit/s", file=sys.stderr)
    log.unlink(missing_ok=True)
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("wall_s", "peak_mib",
                                                            "goodput_gbps")}
           for k, v in rows.items()}
    ratio = med["htsim"]["wall_s"] / med["stride-sim"]["wall_s"]
    result = {"runs": rows, "median": med, "speedup_vs_htsim": ratio}
    for k in rows:
        m = med[k]
        print(f"{k:<10} median wall {m['wall_s']:.2f} s, peak {m['peak_mib']:.0f} MiB, "
              f"aggregate goodput {m['goodput_gbps']:.1f} Gbit/s")
    print(f"speed-up vs htsim (htsim wall / stride-sim wall, medians): {ratio:.2f}x")
    if a.out:
        a.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
