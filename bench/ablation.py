#!/usr/bin/env python3
"""Ablation table: the default `stride` profile with each of its mechanisms off in turn,
and `stride-paper`, on the same seeds. Columns: incast (scenarios/incast.toml, N senders x 64 KiB
at t = 0, one 10 Gbit/s port, 100-packet buffer) last completion / wire-time ideal and drops for
each N, and the paper FatTree (scenarios/paper-fattree.toml, seed 1) FCT improvement over DCTCP
(DCTCP FCT / STRIDE FCT, > 1: STRIDE faster) per size class, avg and p99, and all flows avg.

    cargo build --release -p stride-cli
    python3 bench/ablation.py [--n 8,16,32,64,128] [--no-fattree] [--rows default,rx_share ...]

Every row is one run per scenario (the simulator is deterministic); FatTree runs take ~1.5 min
each on one core. Prints one markdown table.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import incast  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (row name, transport, scenario overrides): each mechanism of the default profile off in turn
# (`grant`, off by default since the receive share, on).
ROWS = [
    ("default", "stride", []),
    ("rx_share off", "stride", ["stride.rx_share=0"]),
    ("grant on", "stride", ["stride.grant=true"]),
    ("hs_min off", "stride", ["stride.hs_min=false"]),
    ("handshake_rtt off", "stride", ["stride.handshake_rtt=false"]),
    ("nack_gate off", "stride", ["stride.nack_gate=false"]),
    ("recovery go-back-n", "stride", ["stride.recovery=go-back-n"]),
    ("stride-paper", "stride-paper", []),
    ("DCTCP (reference)", "dctcp", []),
]
CLASSES = ["I", "II", "III", "IV"]


def fattree(binary, cc, sets, scenario):
    with tempfile.TemporaryDirectory() as out:
        cmd = [binary, "sim", "compare", scenario, "--cc", cc, "--out", out]
        for s in sets:
            cmd += ["--set", s]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        t = json.load(open(os.path.join(out, "summary.json")))["transports"][cc]
    c = t["categories"]
    return {"drops": t["drops"],
            **{f"{k}_avg": c[k]["avg_fct_us"] for k in CLASSES + ["all"]},
            **{f"{k}_p99": c[k]["p99_fct_us"] for k in CLASSES + ["all"]}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="8,16,32,64,128")
    ap.add_argument("--rows", default="", help="comma-separated row names (default: all)")
    ap.add_argument("--extra", action="append", default=[],
                    help="an extra row: NAME=key=value[;key=value...] on transport stride")
    ap.add_argument("--no-fattree", action="store_true")
    ap.add_argument("--incast-scenario", default=os.path.join(ROOT, "scenarios", "incast.toml"))
    ap.add_argument("--fattree-scenario",
                    default=os.path.join(ROOT, "scenarios", "paper-fattree.toml"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "stride"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--from-json", help="print the table of a saved --json run")
    a = ap.parse_args()
    if a.from_json:
        saved = json.load(open(a.from_json))
        table(saved["dctcp_fattree"], saved["rows"])
        return
    ns = [int(x) for x in a.n.split(",")]
    rows = ROWS
    if a.rows:
        want = a.rows.split(",")
        rows = [r for r in ROWS if r[0] in want]
    for e in a.extra:
        name, _, sets = e.partition("=")
        rows = rows + [(name, "stride", sets.split(";"))]
    ref = None
    if not a.no_fattree:
        ref = fattree(a.bin, "dctcp", [], a.fattree_scenario)
    res = []
    for name, cc, sets in rows:
        r = {"row": name, "cc": cc, "sets": sets,
             "incast": [incast.run(a.bin, cc, n, sets, a.incast_scenario) for n in ns]}
        if ref is not None:
            r["fattree"] = ref if cc == "dctcp" else fattree(a.bin, cc, sets, a.fattree_scenario)
        res.append(r)
        print(f"done: {name}", file=sys.stderr)
    if a.json:
        json.dump({"dctcp_fattree": ref, "rows": res}, sys.stdout, indent=1)
        print()
        return
    table(ref, res)


def table(ref, res):
    ns = [i["n"] for i in res[0]["incast"]]
    head = ["variant"] + [f"incast N={n}" for n in ns]
    if ref is not None:
        head += ["FatTree drops"] + [f"{k} avg / p99" for k in CLASSES] + ["all avg"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in res:
        cells = [r["row"]] + [f"{i['ratio']:.2f} / {i['drops']}" for i in r["incast"]]
        if ref is not None:
            f = r["fattree"]
            cells.append(str(f["drops"]))
            for k in CLASSES:
                cells.append(f"{ref[k + '_avg'] / f[k + '_avg']:.2f} / "
                             f"{ref[k + '_p99'] / f[k + '_p99']:.2f}")
            cells.append(f"{ref['all_avg'] / f['all_avg']:.2f}")
        print("| " + " | ".join(cells) + " |")
    print()
    print("Incast cells: last completion / wire-time ideal, drops. FatTree cells: DCTCP FCT / "
          "variant FCT (> 1: faster than DCTCP).")


if __name__ == "__main__":
    main()
