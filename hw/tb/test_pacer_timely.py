"""Runners for the pacer and the TIMELY comparison core."""
import os

from common import BUILD, HW, RTL


def _run(top, module, params=None, env=None):
    from cocotb_test.simulator import run

    run(
        verilog_sources=[str(RTL / f"{top}.v")],
        toplevel=top,
        module=module,
        python_search=[str(HW / "tb")],
        parameters=params or {},
        sim_build=str(BUILD / f"{top}_{'_'.join(str(v) for v in (params or {}).values())}"),
        extra_env=env or {},
        simulator=os.environ.get("SIM", "icarus"),
    )


def test_pacer_250mhz():
    _run("stride_pacer", "cocotb_pacer", {"CLK_NS_LOG2": 2, "BURST_BYTES": 16384},
         {"PACER_CLK_NS_LOG2": "2", "PACER_BURST": "16384"})


def test_pacer_125mhz_small_burst():
    _run("stride_pacer", "cocotb_pacer", {"CLK_NS_LOG2": 3, "BURST_BYTES": 3000},
         {"PACER_CLK_NS_LOG2": "3", "PACER_BURST": "3000"})


def test_timely():
    _run("timely_cc", "cocotb_timely")
