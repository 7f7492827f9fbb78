#!/usr/bin/env python3
"""Reads hw/build/syn/*.stat (and nextpnr logs) and writes hw/report.md.
    report.py SYNDIR REPORT [MODULE ...]      (default: every module)
A module whose statistics or Fmax are missing stops the report with the reason (exit status 1)
instead of writing "not run", so a failed run cannot overwrite a good report unnoticed.
REPORT_SEEDS="2 3" (make's SEEDS) adds a table of the Fmax at seed 1 and at each of those seeds
for the modules in REPORT_SEED_MODULES (make: the stride_engine rows), read from
SYNDIR/seedS/MODULE_ecp5_pnr.log; each such run must have placed the same netlist as the seed-1
run (SYNDIR/seedS/MODULE_ecp5.json equal to SYNDIR/MODULE_ecp5.json up to the directory of the
source files named in it), and a missing or mismatched run stops the report too."""
import hashlib
import os
import re
import sys
from pathlib import Path

OUT = Path(sys.argv[1])
REPORT = Path(sys.argv[2])
ALL_MODULES = ["stride_cc", "stride_cc_c1", "stride_pacer", "timely_cc", "stride_rx_parser",
               "stride_rx_engine_n1", "stride_rx_engine_n64", "stride_rx_engine_n1024",
               "stride_engine_n1", "stride_engine_n64", "stride_engine_n1024",
               "stride_cc_table_n64", "stride_cc_table_n1024"]
MODULES = sys.argv[3:] or ALL_MODULES
for _m in MODULES:
    if _m not in ALL_MODULES:
        sys.exit(f"report.py: unknown module {_m!r} (known: {', '.join(ALL_MODULES)})")
LABEL = {"stride_cc_c1": "stride_cc, CONTEXTS=1", "stride_rx_engine_n1": "stride_rx_engine, N=1",
         "stride_rx_engine_n64": "stride_rx_engine, N=64",
         "stride_rx_engine_n1024": "stride_rx_engine, N=1024",
         "stride_engine_n1": "stride_engine, N=1", "stride_engine_n64": "stride_engine, N=64",
         "stride_engine_n1024": "stride_engine, N=1024",
         "stride_cc_table_n64": "stride_cc_table, N=64",
         "stride_cc_table_n1024": "stride_cc_table, N=1024"}
TARGETS = (os.environ.get("TARGETS") or "ecp5 xilinx arriav").split()
KEEP_FMAX = (os.environ.get("REPORT_KEEP_FMAX") or "").split()
# REPORT_NOT_RUN=MODULE:TARGET... (or MODULE:fmax): cells written as "not run" (named
# explicitly, never implied)
NOT_RUN = set((os.environ.get("REPORT_NOT_RUN") or "").split())
OLD_REPORT = REPORT.read_text() if REPORT.exists() else ""
SEEDS = [int(x) for x in (os.environ.get("REPORT_SEEDS") or "").split()]
SEED_MODULES = [m for m in (os.environ.get("REPORT_SEED_MODULES") or "").split() if m in MODULES]
for _s in SEEDS:
    if _s == 1:
        sys.exit("report.py: REPORT_SEEDS lists seed 1, which is the main table's run")

# cell -> column, per target
# (column, cell pattern, weight): the column sums count * weight over matching cells; "BRAM
# kbit" is the capacity of the block RAMs used (DP16KD and RAMB18E1 18 kbit, RAMB36E1 36, M10K
# 10), "LUT RAM" the cells of memory built from logic (ECP5 DPR16X4, 7-series RAMnnM/X1D, Arria V
# MLAB), which the LUT column does not include.
COLS = {
    "ecp5": [("LUT4", r"^LUT4$", 1), ("carry (CCU2C)", r"^CCU2C$", 1),
             ("wide mux", r"^(PFUMX|L6MUX21)$", 1), ("FF", r"^TRELLIS_FF$", 1),
             ("DSP (MULT18X18D)", r"^MULT18X18D|ALU54B$", 1), ("BRAM", r"^DP16KD|PDPW16KD$", 1),
             ("BRAM kbit", r"^DP16KD|PDPW16KD$", 18), ("LUT RAM", r"^TRELLIS_DPR16X4$", 1)],
    "xilinx": [("LUT", r"^LUT[1-6]$", 1), ("carry (CARRY4)", r"^CARRY4$", 1),
               ("wide mux", r"^MUXF[78]$", 1), ("FF", r"^FD[RSCP]E$", 1),
               ("DSP (DSP48E1)", r"^DSP48E1$", 1), ("BRAM", r"^RAMB(18|36)E1$", 1),
               ("BRAM kbit", r"^RAMB18E1$", 18), ("LUT RAM", r"^RAM(32|64|128|256)[MX]", 1)],
    "arriav": [("ALUT", r"^MISTRAL_ALUT[2-6]$|^MISTRAL_NOT$", 1),
               ("carry ALUT", r"^MISTRAL_ALUT_ARITH$", 1), ("wide mux", r"^$^", 1),
               ("FF", r"^MISTRAL_FF$", 1), ("DSP", r"^MISTRAL_MUL", 1),
               ("BRAM", r"^MISTRAL_M10K$", 1), ("BRAM kbit", r"^MISTRAL_M10K$", 10),
               ("LUT RAM", r"^MISTRAL_MLAB$", 1)],
}


def cells(stat):
    text = stat.read_text()
    out = {}
    for m in re.finditer(r"^\s+(\S+)\s+(\d+)\s*$", text, re.M):
        out[m.group(1)] = int(m.group(2))
    return out


def row(target, c):
    vals = []
    for name, pat, weight in COLS[target]:
        vals.append(sum(v * weight for k, v in c.items() if re.match(pat, k)))
        if name == "BRAM kbit" and target == "xilinx":
            vals[-1] += 36 * sum(v for k, v in c.items() if k == "RAMB36E1")
    return vals


def netlist_digest(path):
    """SHA-256 of a Yosys JSON netlist with the directory part of every source path (the `src`
    attributes) removed, so the same RTL synthesized from another checkout compares equal."""
    if not path.exists():
        sys.exit(f"report.py: no netlist {path}")
    data = re.sub(rb'[^"|$ \\]*/rtl/', b"rtl/", path.read_bytes())
    return hashlib.sha256(data).hexdigest()


def logged_fmax(log):
    """The last Fmax in a nextpnr log; stops the report if there is none."""
    if not log.exists():
        sys.exit(f"report.py: no place-and-route log {log}")
    text = log.read_text()
    found = re.findall(r"Max frequency for clock\s+'[^']*':\s+([\d.]+) MHz", text)
    if not found:
        errors = [ln for ln in text.splitlines() if ln.startswith("ERROR")] or text.splitlines()[-5:]
        sys.exit(f"report.py: no Fmax in {log}:\n" + "\n".join(errors))
    return float(found[-1])


def seed_fmax(mod, seed):
    """Fmax of MODULE placed at another seed (SYNDIR/seedS/), after checking that it placed the
    netlist the main table's seed-1 run placed."""
    d = OUT / f"seed{seed}"
    if netlist_digest(d / f"{mod}_ecp5.json") != netlist_digest(OUT / f"{mod}_ecp5.json"):
        sys.exit(f"report.py: {d / (mod + '_ecp5.json')} is not the netlist in {OUT}: "
                 f"seed {seed} of {mod} placed other RTL (run make pnr-seeds)")
    nofit = d / f"{mod}_ecp5_pnr.nofit"
    if nofit.exists():
        return nofit.read_text().strip()
    return logged_fmax(d / f"{mod}_ecp5_pnr.log")


def fmax(mod):
    """The Fmax nextpnr reported, or the reason the design does not fit the device (pnr.sh
    writes MODULE_ecp5_pnr.nofit when nextpnr stops on a resource count)."""
    if f"{mod}:fmax" in NOT_RUN:
        return "not run"
    nofit = OUT / f"{mod}_ecp5_pnr.nofit"
    if nofit.exists():
        return nofit.read_text().strip()
    if mod in KEEP_FMAX:
        # REPORT_KEEP_FMAX=MODULE...: place and route not re-run (TIMELY's takes over half an hour
        # on a loaded machine); the figure is carried over from the report being replaced, marked
        old_pnr = OLD_REPORT.split("## ECP5 place and route")[-1] if OLD_REPORT else ""
        m = re.search(rf"^\| {re.escape(LABEL.get(mod, mod))} \| ([\d.]+)", old_pnr, re.M)
        if not m:
            sys.exit(f"report.py: REPORT_KEEP_FMAX names {mod}, but {REPORT} has no Fmax for it")
        return f"{m.group(1)} (carried over from the previous report; not re-run)"
    return logged_fmax(OUT / f"{mod}_ecp5_pnr.log")


lines = ["# Hardware resource report", "",
         "Generated by `make -C hw report` (Yosys " + (OUT / "yosys-version").read_text().strip() +
         "). Cell counts after technology mapping; `stride_cc` with `STATE_OUT=0`, default shifts "
         "(ALPHA_SHIFT=3, MD_SHIFT=3, NORM_SHIFT=13) and its default `CONTEXTS=2` (two connection "
         "contexts interleaved, one update per clock); `stride_cc, CONTEXTS=1` is the same core with "
         "one context (both recurrences close in one cycle), for comparison; the ratios use the "
         "default. `timely_cc` is the multiply/divide comparison point of the paper's Lesson 1. "
         "Logic = LUTs (plus carry cells, counted separately). `stride_rx_parser` is the 64-bit "
         "receive parser; `stride_rx_engine, N=...` the receive engine with N connection contexts, "
         "whose table holds 245 bits per context (N rounded up to a power of two: 245, 15 680 and "
         "250 880 bits for N = 1, 64, 1024), in block RAM where Yosys maps it (for small N it "
         "becomes LUT RAM: column `LUT RAM`, cells not included in the LUT column). "
         "`stride_engine, N=...` is the whole engine (`rtl/stride_engine.v`: parser, receive "
         "engine, sender with `stride_cc_table` and a token bucket per connection, packet "
         "buffer, frame builder) "
         "with N connection contexts and `BUF_LOG2=11`: a 2 KiB send ring per connection, so its "
         "packet buffer is N x 16 kbit of block RAM for N = 1 and 64; at N = 1024 (16 Mbit, more "
         "than the LFE5U-85F's 3.7 Mbit of block RAM) the buffer is in external memory "
         "(`PBUF_EXT=1`, `PBUF_LAT=12`, see `hw/README.md`) and the row counts only the engine's "
         "side of that port. `stride_cc_table, N=...` is the rate "
         "controller for N connections (`rtl/stride_cc_table.v`: one update core, 178 bits of "
         "state per connection in a table). `BRAM kbit` is the capacity of the block RAMs "
         "used, not the bits stored.", ""]
table = {}
for t in TARGETS:
    hdr = [c for c, _, _ in COLS[t]]
    lines += [f"## {t}", "", "| module | " + " | ".join(hdr) + " |", "|---" * (len(hdr) + 1) + "|"]
    for mod in MODULES:
        st = OUT / f"{mod}_{t}.stat"
        if f"{mod}:{t}" in NOT_RUN:
            lines.append(f"| {LABEL.get(mod, mod)} | " + " | ".join(["not run"] * len(hdr)) + " |")
            continue
        if not st.exists():
            sys.exit(f"report.py: no synthesis statistics {st}")
        vals = row(t, cells(st))
        table[(mod, t)] = vals
        lines.append(f"| {LABEL.get(mod, mod)} | " + " | ".join(str(v) for v in vals) + " |")
    if ("stride_cc", t) in table and ("timely_cc", t) in table:
        s, m = table[("stride_cc", t)], table[("timely_cc", t)]
        lut = s[0] / m[0] if m[0] else float("nan")
        logic = (s[0] + s[1]) / (m[0] + m[1]) if (m[0] + m[1]) else float("nan")
        lines += ["", f"stride_cc / timely_cc: LUTs {lut:.3f} (1/{1 / lut:.1f}), LUTs + carry {logic:.3f} "
                  f"(1/{1 / logic:.1f}); DSP {s[4]} vs {m[4]}."]
    lines.append("")
PAPER = {"TOE": (12468, "2.294 MB", 392), "STRIDE": (6339, "1.4264 MB", 191)}
eng = [m for m in MODULES if m.startswith("stride_engine_n")]
if eng and "arriav" in TARGETS:
    lines += ["## Beside the paper's Table 1 (Arria V)", "",
              "The paper (Table 1, \"Resource usage on Arria V\") reports its whole STRIDE engine "
              "against a TCP offload engine (TOE) in Quartus figures. Our rows are Yosys "
              "`synth_intel_alm -family arriav` cells of `stride_engine` (ALUT = 6-input LUT "
              "cells and arithmetic ALUTs; one ALM holds up to two), not Quartus ALMs/ALUTs after "
              "packing and retiming; `M10K` blocks as Yosys maps them (Quartus may choose MLAB for "
              "small memories); the paper's \"ALUs\" and \"Mem. Alloc.\" units are not defined "
              "(ALMs or ALUTs; buffer bytes, possibly in DRAM). Our packet buffer is on chip "
              "(N x 2 KiB) for N = 1 and 64 and in external memory for N = 1024 (2 MiB, not in "
              "the row); the paper's memory allocation suggests buffers off the block RAM.",
              "",
              "| design | logic | memory | BRAM |", "|---|---|---|---|"]
    for name, (alus, mem, bram) in PAPER.items():
        lines.append(f"| paper: {name} | {alus} ALUs | {mem} allocated | {bram} |")
    for m in eng:
        if (m, "arriav") not in table:
            continue
        v = table[(m, "arriav")]
        ext = " + 2 MiB external packet buffer" if m == "stride_engine_n1024" else ""
        lines.append(f"| ours: {LABEL.get(m, m)} | {v[0]} ALUT + {v[1]} carry ALUT = {v[0] + v[1]} "
                     f"| {v[6]} kbit block RAM, {v[7]} MLAB{ext} | {v[5]} M10K |")
    lines.append("")
sweep = OUT / "cc_width_sweep.md"
if "arriav" in TARGETS and "stride_cc" in MODULES and sweep.exists():
    lines += ["## stride_cc datapath widths on Arria V (`make -C hw cc-sweep`)", "",
              "`stride_cc` with its time width TW (STT, minima, gradient, thresholds) and rate "
              "width RW set (TW = RW = 32 is `stride_cc` above); `timely_cc` stays at 32 bits.",
              "",
              sweep.read_text().strip(), ""]
lines += ["## ECP5 place and route (nextpnr-ecp5, LFE5U-85F, speed grade 8, 200 MHz constraint, seed 1)", "",
          "| module | Fmax (MHz) |", "|---|---|"]
for mod in MODULES:
    f = fmax(mod)
    name = LABEL.get(mod, mod)
    lines.append(f"| {name} | {f:.1f} |" if isinstance(f, float) else f"| {name} | {f} |")
lines.append("")
if SEEDS and SEED_MODULES:
    cols = [1] + SEEDS
    lines += [f"### Placement seeds {', '.join(str(s) for s in cols)}", "",
              "nextpnr's result depends on its placement seed; the same netlist and constraint "
              "at each seed (seed 1 is the run in the table above). Minimum and maximum over "
              "these seeds.", "",
              "| module | " + " | ".join(f"seed {s}" for s in cols) + " | min | max |",
              "|---" * (len(cols) + 3) + "|"]
    for mod in SEED_MODULES:
        if f"{mod}:fmax" in NOT_RUN or mod in KEEP_FMAX:
            sys.exit(f"report.py: {mod} is in REPORT_SEED_MODULES but its seed-1 run is not in "
                     "this report")
        figs = [fmax(mod)] + [seed_fmax(mod, s) for s in SEEDS]
        nums = [f for f in figs if isinstance(f, float)]
        cells_ = [f"{f:.1f}" if isinstance(f, float) else f for f in figs]
        span = [f"{min(nums):.1f}", f"{max(nums):.1f}"] if nums else ["-", "-"]
        lines.append(f"| {LABEL.get(mod, mod)} | " + " | ".join(cells_ + span) + " |")
    lines.append("")
REPORT.write_text("\n".join(lines))
print(REPORT.read_text())
