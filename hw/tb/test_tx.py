"""Runners for the transmit side of the packet engine, each under Icarus and Verilator."""
import pytest

from common import BUILD, HW, RTL, simulators

SIMS = simulators()


def _run(top, module, sim, params=None, env=None, sources=None, tag="", testcase=None):
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
        testcase=testcase,
        waves=False,
    )


@pytest.mark.parametrize("sim", SIMS)
def test_tx_builder(sim):
    _run("stride_tx_builder", "cocotb_tx_builder", sim)


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("bad", [{"MAX_PAYLOAD": 4}, {"DATA_WIDTH": 512}], ids=["payload", "width"])
def test_tx_builder_bad_params_stop_elaboration(sim, bad):
    with pytest.raises(SystemExit):
        _run("stride_tx_builder", "cocotb_tx_builder", sim, bad,
             tag="_bad_" + "_".join(f"{k}{v}" for k, v in bad.items()))
