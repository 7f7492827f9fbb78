#!/usr/bin/env bash
# The whole test suite: formatting, lints, API docs, Rust tests (unit, property, vectors), hardware tests.
# Installs what it needs itself (see scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PROPTEST_CASES="${PROPTEST_CASES:-256}"
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo doc (warnings are errors: broken links, bad HTML in doc comments)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "== cargo test"
cargo test --workspace 2>&1 | tee "$log"
echo "== Python package: wheel, API tests, notebook, two-node Ray sweep (crates/stride-py)"
py_venv=${STRIDE_RAY_VENV:-tools/ray/.venv}
if [ -x "$py_venv/bin/maturin" ] && "$py_venv/bin/python" -c 'import pytest' 2>/dev/null; then
  py_started=$SECONDS
  py=$(realpath "$py_venv")/bin
  # Optimized as the tests (profile py), in the target dir of `cargo test`.
  wheels=$(realpath -m "${CARGO_TARGET_DIR:-target}/wheels")
  rm -f "$wheels"/stride_sim-*.whl
  "$py/maturin" build --quiet --profile py -m crates/stride-py/Cargo.toml \
    --interpreter "$py/python" --out "$wheels"
  # Installed beside, not into, the virtualenv: the Ray test's second node (the same
  # virtualenv) must get the package only from what the sweep ships it.
  py_site=$(mktemp -d)
  trap 'rm -f "$log"; rm -rf "$py_site"' EXIT
  "$py/pip" install --quiet --no-deps --target "$py_site" "$wheels"/stride_sim-*.whl
  PYTHONPATH="$py_site" "$py/python" -m pytest -q -rs -p no:cacheprovider crates/stride-py/tests 2>&1 | tee -a "$log"
  echo "python package: $((SECONDS - py_started)) s (wheel build, install, tests)"
else
  echo "SKIPPED: the Python package's tests: $py_venv has no maturin or pytest (scripts/setup.sh installs them)"
  if [ "${STRIDE_REQUIRE_PY:-}" = 1 ]; then
    exit 1
  fi
fi
if [ -f hw/Makefile ]; then
  echo "== hardware tests"
  make -C hw test 2>&1 | tee -a "$log"
fi
# One closing line over every runner: cargo's "test result" lines and pytest's summary.
sum() { awk -v f="$1" '{s+=$f} END {print s+0}'; }
passed=$({ grep -Eo '(ok|FAILED)\. [0-9]+ passed' "$log" || true; } | sum 2)
failed=$({ grep -Eo '[0-9]+ passed; [0-9]+ failed' "$log" || true; } | sum 3)
# pytest -q ends with e.g. "24 passed in 39.30s" or "1 failed, 23 passed in 40.1s"
pylines() { grep -E '^=*[ ]*([0-9]+ (passed|failed)(, )?)+.* in [0-9.]+s' "$log" || true; }
py_passed=$(pylines | { grep -Eo '[0-9]+ passed' || true; } | sum 1)
py_failed=$(pylines | { grep -Eo '[0-9]+ failed' || true; } | sum 1)
echo
echo "total: $((passed + py_passed)) passed, $((failed + py_failed)) failed"
