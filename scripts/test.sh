#!/usr/bin/env bash
# The whole test suite: formatting, lints, Rust tests (unit, property, vectors), hardware tests.
# Installs what it needs itself (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PROPTEST_CASES="${PROPTEST_CASES:-256}"
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
if [ -f hw/Makefile ]; then
  echo "== hardware tests"
  make -C hw test
fi
