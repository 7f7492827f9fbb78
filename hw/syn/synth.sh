#!/usr/bin/env bash
# Synthesizes one module for one target with Yosys and writes its statistics.
#   synth.sh MODULE TARGET OUTDIR      TARGET: ecp5 | xilinx | arriav
# stride_cc is synthesized with STATE_OUT=0 (rate output only, as a NIC would use it).
set -euo pipefail
mod=$1 target=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
rtl="$here/../rtl/$mod.v"
mkdir -p "$out"
chparam=""
[ "$mod" = stride_cc ] && chparam="chparam -set STATE_OUT 0 stride_cc;"
case "$target" in
  ecp5)   synth="synth_ecp5 -top $mod -json $out/${mod}_ecp5.json" ;;
  xilinx) synth="synth_xilinx -top $mod -family xc7" ;;
  arriav) synth="synth_intel_alm -family arriav -top $mod" ;;
  *) echo "unknown target $target (ecp5, xilinx, arriav)" >&2; exit 2 ;;
esac
yosys -q -l "$out/${mod}_${target}.log" -p "read_verilog -sv $rtl; $chparam $synth; tee -q -o $out/${mod}_${target}.stat stat"
