#!/usr/bin/env bash
# Regenerates docs/img (the figures README and docs/results.md show) from the paper's 256-host
# FatTree scenario: one command, about a minute on 2 cores after the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p stride-cli
out=${1:-out/paper}
./target/release/stride sim compare scenarios/paper-fattree.toml --cc stride,dctcp,vegas,newreno --out "$out" >/dev/null
for f in fct-avg fct-p99 queue; do
  cp "$out/$f.png" "docs/img/paper-$f.png"
done
echo "docs/img regenerated from $out"
