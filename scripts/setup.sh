#!/usr/bin/env bash
# Installs the tools the test suite needs on a fresh machine. Idempotent; quiet when all is present.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (rustup) first" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
# A TrueType font for the simulator's plots (`stride sim ... --out`).
if ! ls /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf >/dev/null 2>&1 && [ -z "${STRIDE_FONT:-}" ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq fonts-dejavu-core >/dev/null
fi
# iperf3 (UDP background traffic of `stride testbed`, generator = "iperf3"), and iproute2 for
# its namespaces and bottleneck qdisc.
if ! command -v iperf3 >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iperf3 iproute2 >/dev/null
fi
# tshark for the Wireshark dissector's test (tools/wireshark/, crates/stride-cli/tests/wireshark.rs).
if ! command -v tshark >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections 2>/dev/null || true
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq tshark >/dev/null
fi
# Ray for `stride sim sweep --ray` and its test (crates/stride-cli/tests/ray_sweep.rs), in
# tools/ray/.venv (STRIDE_RAY_VENV names another): pip wheels of ray exist for CPython 3.9-3.13.
ray_venv=${STRIDE_RAY_VENV:-tools/ray/.venv}
if ! "$ray_venv/bin/python" -c 'import ray' 2>/dev/null; then
  echo "scripts/setup.sh: creating $ray_venv with ray 2.60 (pip)"
  python3 -m venv "$ray_venv"
  "$ray_venv/bin/pip" install -q 'ray==2.60.*'
fi
# The Python package (crates/stride-py) and its tests, in the same virtualenv: maturin builds the
# wheel; pandas, matplotlib, nbclient and ipykernel run the notebook in docs/; pytest the tests.
if [ ! -x "$ray_venv/bin/maturin" ] || ! "$ray_venv/bin/python" -c 'import pandas, matplotlib, nbclient, nbformat, ipykernel, pytest' 2>/dev/null; then
  echo "scripts/setup.sh: installing maturin, pandas, matplotlib, nbclient, ipykernel and pytest into $ray_venv (pip)"
  "$ray_venv/bin/pip" install -q 'maturin>=1.9.4,<2' 'pandas<4' 'matplotlib<4' 'nbclient<1' 'nbformat<6' 'ipykernel<8' 'pytest<10'
fi
if [ -f hw/Makefile ]; then
  bash hw/setup.sh
fi
