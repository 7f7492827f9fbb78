#!/usr/bin/env bash
# Synthesis sweep of stride_cc's datapath widths on Arria V.
#   cc_width_sweep.sh OUTDIR [TW:RW ...]     default: the list below
# Synthesizes hw/rtl/stride_cc.v with its time width TW and rate width RW set (STATE_OUT=0,
# CONTEXTS=2, default shifts and NACK_GATE; 32:32 is the report's stride_cc) with Yosys for
# Arria V and prints one markdown row per width pair: ALUTs, arithmetic ALUTs, their sum, FFs
# and the ratio of the sum to timely_cc's (read from OUTDIR/timely_cc_arriav.stat, written by `make -C hw synth`).
set -euo pipefail
out=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
pairs=${*:-"32:32 32:24 28:24 24:24 24:22 20:22 20:20 16:22 16:16 12:16"}
mkdir -p "$out"
count() {  # count STATFILE REGEX -> sum of matching cell counts
  awk -v re="$2" '$1 ~ re && $2 ~ /^[0-9]+$/ {s += $2} END {print s + 0}' "$1"
}
timely=""
if [ -f "$out/timely_cc_arriav.stat" ]; then
  t_lut=$(count "$out/timely_cc_arriav.stat" '^MISTRAL_ALUT[2-6]$|^MISTRAL_NOT$')
  t_ari=$(count "$out/timely_cc_arriav.stat" '^MISTRAL_ALUT_ARITH$')
  timely=$((t_lut + t_ari))
fi
echo "| TW (time bits) | RW (rate bits) | ALUT | carry ALUT | ALUT + carry | FF | / timely_cc ($timely) |"
echo "|---|---|---|---|---|---|---|"
for p in $pairs; do
  tw=${p%:*} rw=${p#*:}
  st="$out/stride_cc_w_${tw}_${rw}_arriav.stat"
  yosys -q -l "$out/stride_cc_w_${tw}_${rw}_arriav.log" -p "read_verilog -sv $here/../rtl/stride_cc.v; \
    chparam -set STATE_OUT 0 -set TW $tw -set RW $rw stride_cc; \
    synth_intel_alm -family arriav -top stride_cc; tee -q -o $st stat"
  lut=$(count "$st" '^MISTRAL_ALUT[2-6]$|^MISTRAL_NOT$')
  ari=$(count "$st" '^MISTRAL_ALUT_ARITH$')
  ff=$(count "$st" '^MISTRAL_FF$')
  ratio="-"
  [ -n "$timely" ] && ratio=$(awk -v a=$((lut + ari)) -v b="$timely" 'BEGIN {printf "%.3f (1/%.1f)", a / b, b / a}')
  echo "| $tw | $rw | $lut | $ari | $((lut + ari)) | $ff | $ratio |"
done
