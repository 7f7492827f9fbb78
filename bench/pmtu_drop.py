#!/usr/bin/env python3
"""A route's MTU drops mid-transfer: what the sender's host fragments and resends, by build.

  sudo python3 bench/pmtu_drop.py [ROUNDS] --stride OLD,NEW [--bytes 30MB --rate 300mbit]

Two network namespaces joined by a 1500-byte veth pair; `stride perf client --pin-rate` sends
BYTES at RATE to a `perf server` and, 0.4 s in, a host route with `mtu lock 1280` lowers the
path's MTU (what an ICMP "fragmentation needed" from a router does). Per build and round: the
seconds, datagrams sent, resends and timeouts of the client's report, and the IP fragments the
sender's namespace created (`/proc/net/snmp` FragCreates). Builds interleave. Needs root and
iproute2.
"""
import argparse
import json
import subprocess
import time


def ip(*args):
    subprocess.run(["ip", *args], check=True)


def snmp_frag_creates(ns):
    text = subprocess.run(["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"],
                          check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in text.splitlines() if line.startswith("Ip:")]
    return int(rows[1][rows[0].index("FragCreates")])


def run(binary, nbytes, rate):
    a, b = "pmtu-bench-a", "pmtu-bench-b"
    for n in (a, b):
        subprocess.run(["ip", "netns", "del", n], capture_output=True)
        ip("netns", "add", n)
    try:
        ip("link", "add", "pba", "netns", a, "type", "veth", "peer", "name", "pbb", "netns", b)
        for n, dev, addr in ((a, "pba", "10.78.0.1/24"), (b, "pbb", "10.78.0.2/24")):
            ip("-n", n, "addr", "add", addr, "dev", dev)
            ip("-n", n, "link", "set", dev, "up")
            ip("-n", n, "link", "set", "lo", "up")
        server = subprocess.Popen(["ip", "netns", "exec", b, binary, "perf", "server",
                                   "--listen", "10.78.0.2:7001"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        client = subprocess.Popen(["ip", "netns", "exec", a, binary, "perf", "client", "--json",
                                   "--to", "10.78.0.2:7001", "--bytes", nbytes,
                                   "--pin-rate", "--line-rate", rate],
                                  stdout=subprocess.PIPE, text=True)
        time.sleep(0.4)
        ip("-n", a, "route", "add", "10.78.0.2/32", "dev", "pba", "mtu", "lock", "1280")
        out, _ = client.communicate()
        server.terminate()
        server.wait()
        r = json.loads(out.strip().splitlines()[-1])
        return {"seconds": round(r["seconds"], 3), "datagrams": r["packets_sent"],
                "resent": r["retransmitted_packets"], "timeouts": r["timeouts"],
                "fragments": snmp_frag_creates(a)}
    finally:
        for n in (a, b):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rounds", type=int, nargs="?", default=3)
    ap.add_argument("--stride", required=True, help="comma-separated stride binaries")
    ap.add_argument("--bytes", default="30MB")
    ap.add_argument("--rate", default="300mbit")
    a = ap.parse_args()
    for i in range(a.rounds):
        for binary in a.stride.split(","):
            print(f"round {i + 1} {binary}: {json.dumps(run(binary, a.bytes, a.rate))}",
                  flush=True)


if __name__ == "__main__":
    main()
