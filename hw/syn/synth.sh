#!/usr/bin/env bash
# Synthesizes one module for one target with Yosys and writes its statistics.
#   synth.sh MODULE TARGET OUTDIR      TARGET: ecp5 | xilinx | arriav
# stride_cc is synthesized with STATE_OUT=0 (rate output only, as a NIC would use it) and its
# default CONTEXTS=2; stride_cc_c1 is the same file with CONTEXTS=1 (one context, loops in one
# cycle), for comparison. stride_rx_engine_nN is the receive engine with N contexts (its context
# table included); stride_rx_parser the 64-bit parser; stride_engine_nN the whole engine
# (hw/rtl/stride_engine.v: parser, receive engine, sender with stride_cc_table and a token
# bucket per connection, frame builder) with N contexts. stride_cc_table_nN is the controller
# for N contexts (one update core, the state in a table).
set -euo pipefail
mod=$1 target=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
top=$mod
chparam=""
extra=""
case "$mod" in
  stride_cc)    chparam="chparam -set STATE_OUT 0 stride_cc;" ;;
  stride_cc_c1) top=stride_cc; chparam="chparam -set STATE_OUT 0 -set CONTEXTS 1 stride_cc;" ;;
  stride_cc_table_n*)
    top=stride_cc_table; extra="$here/../rtl/stride_ctx_ram.v"
    chparam="chparam -set N ${mod#stride_cc_table_n} stride_cc_table;" ;;
  stride_rx_engine_n*)
    top=stride_rx_engine; extra="$here/../rtl/stride_ctx_ram.v"
    chparam="chparam -set N ${mod#stride_rx_engine_n} stride_rx_engine;" ;;
  stride_engine_n*)
    # the whole engine; packet buffer rings of 2^BUF_LOG2 = 2 KiB per connection (the smallest
    # the sender allows), so the buffer is N x 2 KiB of block RAM; with N = 1024 (2 MiB, more
    # than the LFE5U-85F's 3.7 Mbit of block RAM) the buffer is external (PBUF_EXT=1, reads
    # answered 12 clocks later: the engine's part is the 16-word output queue)
    top=stride_engine
    extra=$(ls "$here"/../rtl/*.v | grep -v -e /stride_engine.v -e /timely_cc.v | tr '\n' ' ')
    n=${mod#stride_engine_n}
    ext=""
    [ "$n" -ge 1024 ] && ext="-set PBUF_EXT 1 -set PBUF_LAT 12"
    chparam="chparam -set N $n -set BUF_LOG2 11 $ext stride_engine;" ;;
esac
rtl="$here/../rtl/$top.v $extra"
mkdir -p "$out"
# ECP5 only: stride_ctx_ram builds its output-register tables (OUTREG = 1) from DP16KD
# instances with the block RAM's own output register (Yosys 0.23 does not infer it); the other
# targets infer them from the behavioural model
defs=""
case "$target" in
  ecp5)   synth="synth_ecp5 -top $top -json $out/${mod}_ecp5.json"; defs="-DSTRIDE_ECP5_PRIMS" ;;
  xilinx) synth="synth_xilinx -top $top -family xc7" ;;
  arriav) synth="synth_intel_alm -family arriav -top $top" ;;
  *) echo "unknown target $target (ecp5, xilinx, arriav)" >&2; exit 2 ;;
esac
yosys -q -l "$out/${mod}_${target}.log" -p "read_verilog -sv $defs $rtl; $chparam $synth; tee -q -o $out/${mod}_${target}.stat stat"
