#!/usr/bin/env python3
"""The UDP transport's benchmarks, each a ratio measured in one run (docs/results.md).

  python3 bench/transport.py [--reps 5] [--bytes 1GB] [--rr 5000] [--out out/bench-transport.json]
                             [--stride BIN]   (another `stride` binary, e.g. an older build; not built)

1. Loopback memory-to-memory goodput, 1500-byte packets: STRIDE (`stride perf`, line rate
   40 Gbit/s: loopback has none) vs kernel TCP (`stride perf --tcp`, same harness) vs QUIC
   (`bench/quic-perf`, quinn). Rounds interleave them; medians and per-round ratios. Kernel
   TCP sends 64 KiB segments on loopback (its MTU is 65536), so STRIDE also runs at that MTU
   (`--mtu 65536`, rows `stride_lo`): the like-for-like comparison of the two protocols'
   per-byte costs, where the 1500-byte rows show STRIDE at Ethernet's datagram size.
2. 64-byte request/response round trips: STRIDE vs kernel TCP (TCP_NODELAY) vs raw UDP, all
   through `stride perf --rr` (one tokio harness); medians of the per-run medians. The same
   three again with `--blocking` on both ends (no tokio: STRIDE through `stride::blocking`,
   the core driven by the calling thread; TCP and UDP on std's blocking sockets), rows
   `*_blocking`, compared with each other. Each round
   runs twice: with the CPUs held out of deep idle (`/dev/cpu_dma_latency` = 0 while it runs,
   as latency benchmarks such as netperf's TCP_RR are normally run) and with the machine's
   default idle policy. On a VM whose idle vCPUs halt, a round trip that finds the peer's vCPU
   halted pays its wake-up (tens of µs), so the default-idle figures are bimodal for raw UDP as
   much as for STRIDE; the target row reads the polled figures. With the CPUs held awake, the
   CPU time each exchange costs the client and the server (the client's user and system time
   from rusage, the server's from its process CPU-time clock) shows where a round trip's extra time goes when the system calls per
   exchange are the same.
3. Pacing: a sender pinned at 0.1, 1, 5, 10 and 25 Gbit/s on loopback (no queue can build at
   these rates): achieved goodput over the pinned rate (the payload share of a 1472-byte
   datagram is 0.978), the share of the time the pacer's allowance expired unused while the
   sender was backlogged (`pacing_forfeit_ns`: turns that came later than the bucket covers),
   pacing lateness p50/p99, the sender's CPU cores, and the jitter of STT
   (its p50/p99 above the minimum, which on an empty path is timestamp and scheduling noise).
   At 1, 10 and 25 Gbit/s kernel TCP paced at the same rate by the kernel (`stride perf
   --tcp --pin-rate`: SO_MAX_PACING_RATE) runs right after each STRIDE round: how well this
   machine lets any sender hold the rate; STRIDE/TCP per round.
   CPU of the bulk runs of 1.: sender (the client's rusage) + receiver (the server's
   process CPU-time clock, before and after) in CPU-seconds per Gbit moved, STRIDE over TCP per round,
   and each side's context switches per GB (thread hand-offs: each is a wake-up somewhere).
   Aggregate goodput of 1, 2, 4 and 8 parallel connections (`stride perf client --parallel N`
   against `stride perf server --shards 2`, and TCP the same way), rounds interleaved; kernel
   TCP's own 4-vs-1 ratio beside STRIDE's.
4. Through the userspace bottleneck (`stride demo`: 1 Gbit/s, 20 us, 256 KiB queue): STRIDE's
   default controller vs the same sender pinned at its line rate (no controller), with the
   sender's line rate equal to the bottleneck (the demo's model) and at 10 Gbit/s, and an
   open-loop sender at 90 % of the bottleneck (the queue it sees is the host's own jitter).
   Beside the relay's queue: how late the relay sent packets against its own model (its
   thread off the CPU: delay outside the modelled queue that the senders see too) and the
   datagrams the kernel dropped at the relay's and the receiver's sockets.

Everything runs on loopback. Builds what it needs (release). The machine's CPU time over the
whole run is reported by kind, steal (the hypervisor's) included: on a shared host that is the
first thing to read before comparing two runs.
"""
import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchlib import (children_cpu, children_cpu_split, children_switches, cpu_shares, cpu_times,
                      idle_polling, legacy_warm_up, port, proc_cpu, proc_switches)

ROOT = Path(__file__).resolve().parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
STRIDE = TARGET / "release" / "stride"
# pinned rates at which kernel TCP, paced by the kernel, is measured beside STRIDE
TCP_PACED = ("1gbit", "10gbit", "25gbit")
QUIC = ROOT / "bench" / "quic-perf" / "target" / "release" / "quic-perf"
# Loopback's MTU: kernel TCP's segments on loopback are this large, so STRIDE's rows marked
# `stride_lo` use it too (`--mtu`); the plain rows keep a 1500-byte Ethernet MTU.
LO_MTU = "65536"


def last_json(cmd, timeout=300):
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{out.stderr}")
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def timed_json(cmd, server_pid, timeout=300):
    """Runs a client; returns (its last JSON line, client CPU s, server CPU s during it)."""
    s0 = proc_cpu(server_pid)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    # communicate() reaped the child: its rusage is in RUSAGE_CHILDREN; take the delta.
    s1 = proc_cpu(server_pid)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{err}")
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]), s1 - s0


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--bytes", default="1GB")
    ap.add_argument("--rr", type=int, default=5000)
    ap.add_argument("--demo-bytes", default="300MB")
    ap.add_argument("--out", default=str(ROOT / "out" / "bench-transport.json"))
    ap.add_argument("--stride", help="the stride binary to measure (default: build this tree's)")
    a = ap.parse_args()

    global STRIDE
    if a.stride:
        STRIDE = Path(a.stride).resolve()
    else:
        env = dict(os.environ, CARGO_TARGET_DIR=str(TARGET))
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "stride-cli"], cwd=ROOT,
                       env=env, check=True)
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT / "bench" / "quic-perf",
                   env={k: v for k, v in os.environ.items() if k != "CARGO_TARGET_DIR"},
                   check=True)

    p_stride, p_tcp, p_udp, p_quic, p_shard = port(), port(), port(), port(), port()
    p_sb, p_tb, p_ub = port(), port(), port()
    # An older binary (--stride BIN) may lack --blocking: those rows are then left out, saying so.
    blocking = "--blocking" in subprocess.run([STRIDE, "perf", "server", "--help"],
                                              capture_output=True, text=True).stdout
    cert = ROOT / "out" / "quic-perf-cert.der"
    cert.parent.mkdir(parents=True, exist_ok=True)
    quiet = dict(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    servers = [
        subprocess.Popen([STRIDE, "perf", "server", "--listen", f"127.0.0.1:{p_stride}"], **quiet),
        subprocess.Popen([STRIDE, "perf", "server", "--tcp", "--listen", f"127.0.0.1:{p_tcp}"],
                         **quiet),
        subprocess.Popen([STRIDE, "perf", "server", "--udp", "--listen", f"127.0.0.1:{p_udp}"],
                         **quiet),
        subprocess.Popen([QUIC, "server", "--listen", f"127.0.0.1:{p_quic}", "--cert", cert],
                         **quiet),
        subprocess.Popen([STRIDE, "perf", "server", "--shards", "2", "--listen",
                          f"127.0.0.1:{p_shard}"], **quiet),
    ] + ([
        subprocess.Popen([STRIDE, "perf", "server", *f, "--blocking", "--listen",
                          f"127.0.0.1:{p}"], **quiet)
        for f, p in (([], p_sb), (["--tcp"], p_tb), (["--udp"], p_ub))] if blocking else [])
    machine0 = cpu_times()
    res = {"reps": a.reps, "bytes": a.bytes, "rr_count": a.rr, "cores": os.cpu_count(),
           "stride": str(STRIDE)}
    try:
        time.sleep(0.5)
        # 1. loopback goodput
        # "stride_lo": STRIDE with datagrams as large as loopback's MTU allows (--mtu 65536),
        # as kernel TCP's segments are on loopback; "stride" keeps the default 1440-byte
        # payload (a 1500-byte Ethernet MTU).
        bulk = {"stride": [], "stride_lo": [], "tcp": [], "quic": []}
        cpu = {"stride": [], "stride_lo": [], "tcp": []}
        for _ in range(a.reps):
            for name, cmd, spid in (
                    ("stride", [STRIDE, "perf", "client", "--to", f"127.0.0.1:{p_stride}",
                                "--bytes", a.bytes, "--line-rate", "40gbit", "--json"],
                     servers[0].pid),
                    ("stride_lo", [STRIDE, "perf", "client", "--to", f"127.0.0.1:{p_stride}",
                                   "--bytes", a.bytes, "--line-rate", "40gbit", "--mtu",
                                   LO_MTU, "--json"], servers[0].pid),
                    ("tcp", [STRIDE, "perf", "client", "--tcp", "--to", f"127.0.0.1:{p_tcp}",
                             "--bytes", a.bytes, "--json"], servers[1].pid)):
                c0, w0, sw0 = children_cpu(), children_switches(), proc_switches(spid)
                r, server_cpu = timed_json(cmd, spid)
                client_cpu = children_cpu() - c0
                gbit = r["bytes"] * 8 / 1e9
                gb = r["bytes"] / 1e9
                bulk[name].append(r)
                cpu[name].append({"sender_s": client_cpu, "receiver_s": server_cpu,
                                  "cpu_s_per_gbit": (client_cpu + server_cpu) / gbit,
                                  # thread hand-offs: each costs a wake-up on some CPU
                                  "sender_switches_per_gb": (children_switches() - w0) / gb,
                                  "receiver_switches_per_gb": (proc_switches(spid) - sw0) / gb})
            nbytes = bulk["stride"][-1]["bytes"]
            bulk["quic"].append(last_json(
                [QUIC, "client", "--to", f"127.0.0.1:{p_quic}", "--cert", cert, "--bytes",
                 str(nbytes)]))
        g = {k: [r["goodput_gbps"] for r in v] for k, v in bulk.items()}
        res["loopback"] = {
            "goodput_gbps": g,
            "median_gbps": {k: med(v) for k, v in g.items()},
            "ratio_stride_tcp_per_round": [s / t for s, t in zip(g["stride"], g["tcp"])],
            "ratio_stride_quic_per_round": [s / q for s, q in zip(g["stride"], g["quic"])],
            "ratio_stride_lo_tcp_per_round": [s / t for s, t in zip(g["stride_lo"], g["tcp"])],
            "stride_retransmitted": [r["retransmitted_packets"] for r in bulk["stride"]],
            "stride_timeouts": [r["timeouts"] for r in bulk["stride"]],
        }
        lb = res["loopback"]
        lb["median_ratio_stride_tcp"] = med(lb["ratio_stride_tcp_per_round"])
        lb["median_ratio_stride_quic"] = med(lb["ratio_stride_quic_per_round"])
        lb["median_ratio_stride_lo_tcp"] = med(lb["ratio_stride_lo_tcp_per_round"])
        cg = {k: [x["cpu_s_per_gbit"] for x in v] for k, v in cpu.items()}
        res["cpu"] = {
            "runs": cpu,
            "median_cpu_s_per_gbit": {k: med(v) for k, v in cg.items()},
            "median_sender_s": {k: med([x["sender_s"] for x in v]) for k, v in cpu.items()},
            "median_receiver_s": {k: med([x["receiver_s"] for x in v]) for k, v in cpu.items()},
            "median_sender_switches_per_gb": {
                k: med([x["sender_switches_per_gb"] for x in v]) for k, v in cpu.items()},
            "median_receiver_switches_per_gb": {
                k: med([x["receiver_switches_per_gb"] for x in v]) for k, v in cpu.items()},
            "ratio_stride_tcp_per_round": [s / t for s, t in zip(cg["stride"], cg["tcp"])],
            "ratio_stride_lo_tcp_per_round": [s / t for s, t in zip(cg["stride_lo"], cg["tcp"])],
        }
        res["cpu"]["median_ratio_stride_tcp"] = med(res["cpu"]["ratio_stride_tcp_per_round"])
        res["cpu"]["median_ratio_stride_lo_tcp"] = med(
            res["cpu"]["ratio_stride_lo_tcp_per_round"])

        # 1b. aggregate goodput of parallel connections (sharded STRIDE server, 2 sockets)
        par = {"stride": {}, "stride_lo": {}, "tcp": {}}
        for _ in range(a.reps):
            for n in (1, 2, 4, 8):
                for name, extra in (("stride", []), ("stride_lo", ["--mtu", LO_MTU])):
                    r = last_json([STRIDE, "perf", "client", "--to", f"127.0.0.1:{p_shard}",
                                   "--bytes", a.bytes, "--line-rate", "40gbit", "--parallel",
                                   str(n), "--json", *extra])
                    par[name].setdefault(str(n), []).append(r["goodput_gbps"])
                r = last_json([STRIDE, "perf", "client", "--tcp", "--to", f"127.0.0.1:{p_tcp}",
                               "--bytes", a.bytes, "--parallel", str(n), "--json"])
                par["tcp"].setdefault(str(n), []).append(r["goodput_gbps"])
        res["parallel"] = {
            "goodput_gbps": par,
            "median_gbps": {t: {n: med(v) for n, v in d.items()} for t, d in par.items()},
            "ratio_4_vs_1_per_round": [f / o for f, o in zip(par["stride"]["4"],
                                                             par["stride"]["1"])],
        }
        res["parallel"]["median_ratio_4_vs_1"] = med(res["parallel"]["ratio_4_vs_1_per_round"])
        res["parallel"]["lo_ratio_4_vs_1_per_round"] = [
            f / o for f, o in zip(par["stride_lo"]["4"], par["stride_lo"]["1"])]
        res["parallel"]["lo_median_ratio_4_vs_1"] = med(
            res["parallel"]["lo_ratio_4_vs_1_per_round"])
        # kernel TCP's own 4-vs-1 on the same machine, for reference
        res["parallel"]["tcp_ratio_4_vs_1_per_round"] = [
            f / o for f, o in zip(par["tcp"]["4"], par["tcp"]["1"])]
        res["parallel"]["tcp_median_ratio_4_vs_1"] = med(
            res["parallel"]["tcp_ratio_4_vs_1_per_round"])

        # 2. round trips, with the CPUs held awake and with the default idle policy
        rr_cases = [("stride", [], p_stride), ("tcp", ["--tcp"], p_tcp), ("udp", ["--udp"], p_udp)]
        server_of = {p_stride: servers[0].pid, p_tcp: servers[1].pid, p_udp: servers[2].pid}
        if blocking:
            rr_cases += [("stride_blocking", ["--blocking"], p_sb),
                         ("tcp_blocking", ["--tcp", "--blocking"], p_tb),
                         ("udp_blocking", ["--udp", "--blocking"], p_ub)]
            server_of.update({p_sb: servers[5].pid, p_tb: servers[6].pid, p_ub: servers[7].pid})
        rr = {m: {k: [] for k, _, _ in rr_cases} for m in ("polled", "default")}
        # CPU time per exchange (CPUs held awake), split user / system, client and server: where
        # a round trip's extra time goes when the system calls per exchange are the same
        rr_cpu = {k: [] for k, _, _ in rr_cases}
        polled_ok = True
        for _ in range(a.reps):
            for mode in ("polled", "default"):
                with (idle_polling() if mode == "polled" else contextlib.nullcontext(True)) as ok:
                    polled_ok &= ok
                    for name, flag, p in rr_cases:
                        c0, s0 = children_cpu_split(), proc_cpu(server_of[p])
                        r = last_json(
                            [STRIDE, "perf", "client", *flag, "--to", f"127.0.0.1:{p}", "--rr",
                             str(a.rr), "--json"])
                        rr[mode][name].append(r)
                        c1, s1 = children_cpu_split(), proc_cpu(server_of[p])
                        # Every exchange the client made, its warm-up included (as it
                        # reports it, or by the rule of a binary older than that field).
                        exchanges = r["round_trips"] + r.get("warm_up_round_trips",
                                                             legacy_warm_up(a.rr))
                        if mode == "polled":
                            us = [(y - x) / exchanges * 1e6
                                  for x, y in zip(c0 + (s0,), c1 + (s1,))]
                            rr_cpu[name].append(dict(zip(
                                ("client_user_us", "client_sys_us", "server_us"), us)))

        def rr_summary(runs):
            p50 = {k: [r["rtt_p50_ns"] for r in v] for k, v in runs.items()}
            p99 = {k: [r["rtt_p99_ns"] for r in v] for k, v in runs.items()}
            out = {
                "p50_ns": p50, "p99_ns": p99,
                "median_p50_ns": {k: med(v) for k, v in p50.items()},
                "median_p99_ns": {k: med(v) for k, v in p99.items()},
                "ratio_stride_udp_per_round": [s / u for s, u in zip(p50["stride"], p50["udp"])],
                "ratio_tcp_udp_per_round": [t / u for t, u in zip(p50["tcp"], p50["udp"])],
            }
            out["median_ratio_stride_udp"] = med(out["ratio_stride_udp_per_round"])
            out["median_ratio_tcp_udp"] = med(out["ratio_tcp_udp_per_round"])
            if "stride_blocking" in p50:
                out["ratio_blocking_stride_udp_per_round"] = [
                    s / u for s, u in zip(p50["stride_blocking"], p50["udp_blocking"])]
                out["ratio_blocking_tcp_udp_per_round"] = [
                    t / u for t, u in zip(p50["tcp_blocking"], p50["udp_blocking"])]
                out["median_ratio_blocking_stride_udp"] = med(
                    out["ratio_blocking_stride_udp_per_round"])
                out["median_ratio_blocking_tcp_udp"] = med(out["ratio_blocking_tcp_udp_per_round"])
            return out

        res["rr"] = rr_summary(rr["polled"])
        res["rr"]["idle_polling"] = polled_ok
        res["rr"]["cpu_per_exchange"] = rr_cpu
        res["rr"]["median_cpu_per_exchange_us"] = {
            k: {f: med([x[f] for x in v]) for f in v[0]} for k, v in rr_cpu.items()}
        res["rr_default_idle"] = rr_summary(rr["default"])

        # 3. pacing and STT jitter; at the rates in TCP_PACED, kernel TCP paced at the same
        # rate (SO_MAX_PACING_RATE) on the same loopback, each round right after STRIDE's
        pacing = {}
        for rate, gbps in (("100mbit", 0.1), ("1gbit", 1.0), ("5gbit", 5.0), ("10gbit", 10.0),
                           ("25gbit", 25.0)):
            runs, truns = [], []
            for _ in range(a.reps):
                r = last_json([STRIDE, "perf", "client", "--to", f"127.0.0.1:{p_stride}", "--time",
                               "2s", "--pin-rate", "--line-rate", rate, "--json"])
                runs.append({"goodput_over_rate": r["goodput_gbps"] / gbps,
                             # share of the run's time the pacer's allowance expired unused
                             # while the sender was backlogged (turns later than the bucket)
                             "forfeit_share": r["pacing_forfeit_ns"] / (r["seconds"] * 1e9),
                             "lateness_p50_ns": r["pacing_lateness_p50_ns"],
                             "lateness_p99_ns": r["pacing_lateness_p99_ns"],
                             "cpu_cores": r["cpu_cores"],
                             "stt_jitter_p50_ns": r["queue_delay_p50_ns"],
                             "stt_jitter_p99_ns": r["queue_delay_p99_ns"]})
                if rate in TCP_PACED:
                    r = last_json([STRIDE, "perf", "client", "--tcp", "--to",
                                   f"127.0.0.1:{p_tcp}", "--time", "2s", "--pin-rate",
                                   "--line-rate", rate, "--json"])
                    truns.append({"goodput_over_rate": r["goodput_gbps"] / gbps,
                                  "cpu_cores": r["cpu_cores"]})
            pacing[rate] = {"runs": runs, "median": {f: med([x[f] for x in runs]) for f in runs[0]}}
            if truns:
                ratios = [s["goodput_over_rate"] / t["goodput_over_rate"]
                          for s, t in zip(runs, truns)]
                pacing[rate]["tcp"] = {
                    "runs": truns,
                    "median": {f: med([x[f] for x in truns]) for f in truns[0]},
                    "ratio_stride_tcp_per_round": ratios,
                    "median_ratio_stride_tcp": med(ratios),
                }
        res["pacing"] = pacing
    finally:
        for s in servers:
            s.kill()

    # 3. through the bottleneck
    def demo(extra, nbytes):
        # The relay rows: the relay, also as root (where the demo would take the kernel qdisc).
        d = last_json([STRIDE, "demo", "--via", "relay", "--bytes", nbytes, "--json", *extra])
        r = d["relay"]
        return {"goodput_gbps": d["goodput_gbps"], "utilization": r["utilization"],
                "queue_p50_ns": r["queue_delay_p50_ns"], "queue_p99_ns": r["queue_delay_p99_ns"],
                "queue_max_ns": r["queue_delay_max_ns"], "drops": r["queue_drops"],
                "retransmitted": d["retransmitted_packets"], "timeouts": d["timeouts"],
                "relay_late_p99_ns": r["late_p99_ns"], "relay_late_max_ns": r["late_max_ns"],
                "socket_drops": r["socket_drops"] + d["receiver_socket_drops"]}

    relay = {"controller": [], "pinned": [], "pinned_90pct": []}
    for _ in range(a.reps):
        relay["controller"].append(demo([], a.demo_bytes))
        relay["pinned"].append(demo(["--pin-rate"], a.demo_bytes))
        # The noise floor: an open-loop sender at 90 % of the bottleneck never builds a
        # standing queue, so its queue is the host's own jitter.
        relay["pinned_90pct"].append(demo(["--pin-rate", "--line-rate", "900mbit"], a.demo_bytes))
    relay["controller_10g_nic"] = [demo(["--line-rate", "10gbit"], a.demo_bytes)]
    # A pinned 10 Gbit/s sender into a 1 Gbit/s bottleneck loses 90 %: a smaller transfer.
    relay["pinned_10g_nic"] = [demo(["--pin-rate", "--line-rate", "10gbit"], "30MB")]
    res["relay"] = {k: {"runs": v, "median": {f: med([x[f] for x in v]) for f in v[0]}}
                    for k, v in relay.items()}

    # How the machine's CPU time went during the whole run (steal: the hypervisor's).
    res["machine_cpu_shares"] = cpu_shares(machine0, cpu_times())

    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(res, indent=1))

    sh = res["machine_cpu_shares"]
    if sh:
        print(f"\nMachine during the run ({os.cpu_count()} CPUs): user {sh['user']:.0%}, "
              f"system {sh['system'] + sh['softirq'] + sh['irq']:.0%}, idle {sh['idle']:.0%}, "
              f"steal {sh['steal']:.0%} (the hypervisor's; figures from a run with much of it "
              f"measure the host as much as the code)")

    lb, rr, rl = res["loopback"], res["rr"], res["relay"]
    print(f"\n## Loopback goodput, {a.bytes}, median of {a.reps} interleaved rounds")
    print("| transport | median Gbit/s | runs |\n|---|---|---|")
    for k in ("stride", "stride_lo", "tcp", "quic"):
        print(f"| {k} | {lb['median_gbps'][k]:.2f} | "
              + ", ".join(f"{x:.2f}" for x in lb["goodput_gbps"][k]) + " |")
    print(f"STRIDE/TCP median ratio {lb['median_ratio_stride_tcp']:.2f} (target >= 1.0); "
          f"STRIDE/QUIC {lb['median_ratio_stride_quic']:.2f} (target >= 4); "
          f"stride_lo (--mtu {LO_MTU}, loopback's MTU as TCP uses it)/TCP "
          f"{lb['median_ratio_stride_lo_tcp']:.2f}; "
          f"STRIDE retransmitted {lb['stride_retransmitted']}, timeouts {lb['stride_timeouts']}")
    rd = res["rr_default_idle"]
    held = "CPUs held out of idle" if rr["idle_polling"] else \
        "idle polling NOT available (no /dev/cpu_dma_latency): default idle twice"
    print(f"\n## 64-byte round trips, {a.rr} per run, median of {a.reps} runs")
    print(f"| transport | median RTT (us), {held} | p99 (us) | median RTT (us), default idle "
          "| p99 (us) |\n|---|---|---|---|---|")
    for k in rr["median_p50_ns"]:
        print(f"| {k} | {rr['median_p50_ns'][k] / 1e3:.1f} | {rr['median_p99_ns'][k] / 1e3:.1f} | "
              f"{rd['median_p50_ns'][k] / 1e3:.1f} | {rd['median_p99_ns'][k] / 1e3:.1f} |")
    print(f"STRIDE/UDP median ratio {rr['median_ratio_stride_udp']:.2f} (target <= 1.1; "
          f"default idle {rd['median_ratio_stride_udp']:.2f}); "
          f"TCP/UDP {rr['median_ratio_tcp_udp']:.2f} (default idle {rd['median_ratio_tcp_udp']:.2f})")
    if "median_ratio_blocking_stride_udp" in rr:
        print(f"Blocking (both ends, no tokio): STRIDE/UDP median ratio "
              f"{rr['median_ratio_blocking_stride_udp']:.2f} (default idle "
              f"{rd['median_ratio_blocking_stride_udp']:.2f}); TCP/UDP "
              f"{rr['median_ratio_blocking_tcp_udp']:.2f} (default idle "
              f"{rd['median_ratio_blocking_tcp_udp']:.2f})")
    else:
        print("Blocking rows left out: this binary has no `perf --blocking`.")
    print(f"\nCPU time per exchange (us, CPUs held out of idle; median of {a.reps} runs; the "
          "client process's start and the warm-up included; the user/system split follows "
          "the kernel's tick samples)")
    print("| transport | client user | client system | client | server |\n|---|---|---|---|---|")
    for k, v in rr["median_cpu_per_exchange_us"].items():
        print(f"| {k} | {v['client_user_us']:.1f} | {v['client_sys_us']:.1f} | "
              f"{v['client_user_us'] + v['client_sys_us']:.1f} | {v['server_us']:.1f} |")
    print(f"\n## Pacing at a pinned rate on loopback, 2 s each, median of {a.reps}")
    print("| rate | goodput / rate | rate forfeited to late turns | lateness p50/p99 (us) "
          "| sender CPU cores | STT jitter p50/p99 (us) |\n|---|---|---|---|---|---|")
    for rate, v in res["pacing"].items():
        m = v["median"]
        print(f"| {rate} | {m['goodput_over_rate']:.3f} | {m['forfeit_share']:.3f} "
              f"| {m['lateness_p50_ns'] / 1e3:.1f}/"
              f"{m['lateness_p99_ns'] / 1e3:.1f} | {m['cpu_cores']:.2f} | "
              f"{m['stt_jitter_p50_ns'] / 1e3:.1f}/{m['stt_jitter_p99_ns'] / 1e3:.1f} |")
    print("\nKernel TCP paced at the same rate (SO_MAX_PACING_RATE; 64 KiB segments on loopback, "
          "payload share ~0.999), rounds interleaved with STRIDE's:")
    print("| rate | TCP goodput / rate | TCP sender CPU cores | STRIDE/TCP (median of per-round "
          "ratios) |\n|---|---|---|---|")
    for rate, v in res["pacing"].items():
        if "tcp" in v:
            t = v["tcp"]
            print(f"| {rate} | {t['median']['goodput_over_rate']:.3f} | "
                  f"{t['median']['cpu_cores']:.2f} | {t['median_ratio_stride_tcp']:.2f} |")
    print("\n## Through the 1 Gbit/s relay (256 KiB queue, 20 us), medians")
    print("| sender | runs | goodput Gbit/s | utilization | queue p50/p99/max (us) | drops "
          "| retransmitted | relay sent late p99/max (us) | socket drops |\n"
          "|---|---|---|---|---|---|---|---|---|")
    names = {"controller": "STRIDE controller, NIC = bottleneck (1G)",
             "pinned": "pinned at line rate, NIC = bottleneck (1G)",
             "pinned_90pct": "pinned at 0.9 Gbit/s (90 % of the bottleneck)",
             "controller_10g_nic": "STRIDE controller, 10G NIC",
             "pinned_10g_nic": "pinned at line rate, 10G NIC (30 MB)"}
    for k, v in rl.items():
        m = v["median"]
        print(f"| {names[k]} | {len(v['runs'])} | {m['goodput_gbps']:.3f} | "
              f"{100 * m['utilization']:.1f} % | {m['queue_p50_ns'] / 1e3:.0f}/"
              f"{m['queue_p99_ns'] / 1e3:.0f}/{m['queue_max_ns'] / 1e3:.0f} | {m['drops']:.0f} | "
              f"{m['retransmitted']:.0f} | {m['relay_late_p99_ns'] / 1e3:.0f}/"
              f"{m['relay_late_max_ns'] / 1e3:.0f} | {m['socket_drops']:.0f} |")
    cp, pa = res["cpu"], res["parallel"]
    print(f"\n## CPU per Gbit/s of goodput (sender + receiver), bulk runs above, median of {a.reps}")
    print("| transport | CPU s per Gbit | sender CPU s | receiver CPU s | context switches per GB, "
          "sender / receiver |\n|---|---|---|---|---|")
    for k in ("stride", "stride_lo", "tcp"):
        print(f"| {k} | {cp['median_cpu_s_per_gbit'][k]:.4f} | {cp['median_sender_s'][k]:.2f} | "
              f"{cp['median_receiver_s'][k]:.2f} | "
              f"{cp['median_sender_switches_per_gb'][k]:.0f} / "
              f"{cp['median_receiver_switches_per_gb'][k]:.0f} |")
    print(f"\n## Aggregate goodput of N parallel connections, {a.bytes} split, median of {a.reps}")
    print(f"| N | STRIDE Gbit/s (server --shards 2) | STRIDE --mtu {LO_MTU} | TCP Gbit/s |\n"
          "|---|---|---|---|")
    for n in ("1", "2", "4", "8"):
        print(f"| {n} | {pa['median_gbps']['stride'][n]:.2f} | "
              f"{pa['median_gbps']['stride_lo'][n]:.2f} | {pa['median_gbps']['tcp'][n]:.2f} |")
    print(f"4 vs 1: STRIDE {pa['median_ratio_4_vs_1']:.2f}, STRIDE --mtu {LO_MTU} "
          f"{pa['lo_median_ratio_4_vs_1']:.2f}, kernel TCP "
          f"{pa['tcp_median_ratio_4_vs_1']:.2f} (medians of per-round ratios)")
    pm = res["pacing"]
    rows = [
        ("loopback goodput vs kernel TCP, 1 connection", lb["median_ratio_stride_tcp"], ">= 1.0",
         lb["median_ratio_stride_tcp"] >= 1.0),
        ("loopback goodput vs quinn", lb["median_ratio_stride_quic"], ">= 4",
         lb["median_ratio_stride_quic"] >= 4),
        ("64-byte round trip vs raw UDP", rr["median_ratio_stride_udp"], "<= 1.1",
         rr["median_ratio_stride_udp"] <= 1.1),
        ("pinned 10 Gbit/s: goodput / rate", pm["10gbit"]["median"]["goodput_over_rate"], ">= 0.95",
         pm["10gbit"]["median"]["goodput_over_rate"] >= 0.95),
        ("pinned 25 Gbit/s: goodput / rate", pm["25gbit"]["median"]["goodput_over_rate"], ">= 0.9",
         pm["25gbit"]["median"]["goodput_over_rate"] >= 0.9),
        ("CPU per Gbit/s vs kernel TCP (sender + receiver)", cp["median_ratio_stride_tcp"],
         "<= 1.0", cp["median_ratio_stride_tcp"] <= 1.0),
        ("aggregate goodput, 4 connections vs 1", pa["median_ratio_4_vs_1"], ">= 1.6",
         pa["median_ratio_4_vs_1"] >= 1.6),
        (f"loopback goodput vs kernel TCP, STRIDE at TCP's MTU (--mtu {LO_MTU})",
         lb["median_ratio_stride_lo_tcp"], ">= 1.0", lb["median_ratio_stride_lo_tcp"] >= 1.0),
        (f"CPU per Gbit/s vs kernel TCP, STRIDE at TCP's MTU (--mtu {LO_MTU})",
         cp["median_ratio_stride_lo_tcp"], "<= 1.0", cp["median_ratio_stride_lo_tcp"] <= 1.0),
        (f"aggregate goodput, 4 connections vs 1, --mtu {LO_MTU}",
         pa["lo_median_ratio_4_vs_1"], ">= 1.6", pa["lo_median_ratio_4_vs_1"] >= 1.6),
    ]
    if "median_ratio_blocking_stride_udp" in rr:
        v = rr["median_ratio_blocking_stride_udp"]
        rows.insert(3, ("64-byte round trip vs raw UDP, both blocking (stride::blocking)", v,
                        "<= 1.1", v <= 1.1))
    print(f"\n## Transport targets (ratios: medians of per-round ratios, {a.reps} rounds)")
    print("| metric | measured | target | met |\n|---|---|---|---|")
    for name, v, t, ok in rows:
        print(f"| {name} | {v:.2f} | {t} | {'yes' if ok else 'no'} |")
    print(f"\nraw figures: {a.out}")


if __name__ == "__main__":
    main()
