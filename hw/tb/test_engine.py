"""Runners for the packet engine's modules, each under Icarus and Verilator."""
import pytest

from common import BUILD, HW, RTL, simulators

SIMS = simulators()


def _run(top, module, sim, params=None, env=None, sources=None, tag=""):
    from cocotb_test.simulator import run

    run(
        verilog_sources=[str(RTL / f"{s}.v") for s in (sources or [top])],
        toplevel=top,
        module=module,
        python_search=[str(HW / "tb")],
        parameters=params or {},
        sim_build=str(BUILD / sim / f"{top}{tag}"),
        extra_env=env or {},
        simulator=sim,
        waves=False,
    )


@pytest.mark.parametrize("sim", SIMS)
def test_rx_parser(sim):
    _run("stride_rx_parser", "cocotb_rx_parser", sim)


@pytest.mark.parametrize("sim", SIMS)
def test_rx_parser_bad_width_stops_elaboration(sim):
    with pytest.raises(SystemExit):
        _run("stride_rx_parser", "cocotb_rx_parser", sim, {"DATA_WIDTH": 512}, tag="_w512")
