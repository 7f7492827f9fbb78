#!/usr/bin/env bash
# The quick test command for contributors: Rust only, under 3 minutes on a warm target/.
# Formatting, lints, and every Rust test except the loopback file-transfer end-to-end tests
# (crates/stride-cli/tests/e2e.rs), the Ray sweep test (tests/ray_sweep.rs, needs ray) and the tshark test of the Wireshark dissector
# (crates/stride-cli/tests/wireshark.rs, needs tshark), with 32 proptest cases instead of 256. The full suite,
# which CI runs, is `bash scripts/test.sh` (all Rust tests, 256 cases, the hardware tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-32}"
start=$(date +%s)
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test (without the e2e transfers)"
cargo test --workspace --exclude stride-cli
# stride-cli's own tests, every test target but e2e and wireshark (listed from the directory so a new test
# file is picked up without editing this script).
targets=()
for f in crates/stride-cli/tests/*.rs; do
  name=$(basename "$f" .rs)
  case "$name" in e2e | wireshark | ray_sweep) ;; *) targets+=(--test "$name") ;; esac
done
cargo test -p stride-cli --bins "${targets[@]}"
echo "quick tests passed in $(( $(date +%s) - start )) s (full suite: bash scripts/test.sh)"
