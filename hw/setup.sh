#!/usr/bin/env bash
# Installs the hardware test tools: Icarus Verilog, Verilator and Yosys (apt), cocotb in hw/.venv
# (pip).
# Idempotent and quiet when everything is present. Run as root on Debian (CI) or with sudo.
set -euo pipefail
cd "$(dirname "$0")"
need=()
command -v iverilog >/dev/null 2>&1 || need+=(iverilog)
command -v yosys >/dev/null 2>&1 || need+=(yosys)
command -v verilator >/dev/null 2>&1 || need+=(verilator)
if [ ${#need[@]} -gt 0 ]; then
  echo "hw/setup.sh: installing ${need[*]} (apt)"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ ! -x .venv/bin/pytest ] || ! .venv/bin/python -c 'import cocotb, cocotb_test' 2>/dev/null; then
  echo "hw/setup.sh: creating hw/.venv with cocotb 1.9 (pip)"
  python3 -m venv .venv
  .venv/bin/pip install -q 'cocotb==1.9.*' 'cocotb-test==0.2.*' 'pytest==8.*'
fi
