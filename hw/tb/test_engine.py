"""Runners for the packet engine's modules, each under Icarus and Verilator."""
import pytest

from common import run_module, simulators

SIMS = simulators()


@pytest.mark.parametrize("sim", SIMS)
def test_rx_parser(sim):
    run_module("stride_rx_parser", "cocotb_rx_parser", sim)


@pytest.mark.parametrize("sim", SIMS)
def test_rx_parser_bad_width_stops_elaboration(sim):
    with pytest.raises(SystemExit):
        run_module("stride_rx_parser", "cocotb_rx_parser", sim, {"DATA_WIDTH": 512}, tag="_w512")


ENGINE = ["stride_rx_engine", "stride_ctx_ram"]


# every N under Icarus; Verilator (a long compile per design) at N = 64
ENGINE_CASES = [(n, ack, sim) for sim in SIMS for n, ack in [(1, 4096), (64, 65536), (1000, 16384)]
                if sim == "icarus" or n == 64]


@pytest.mark.parametrize("n,ack,sim", ENGINE_CASES)
def test_rx_engine_traffic(sim, n, ack):
    # timers far away: every output is decided by the packets, checked against the model
    run_module("stride_rx_engine", "cocotb_rx_engine", sim,
         {"N": n, "ACK_INTERVAL": ack, "DELAYED_ACK_NS": 1 << 30, "NACK_RETRY_NS": 1 << 30},
         {"ENGINE_N": str(n), "ENGINE_ACK": str(ack)}, ENGINE, f"_{n}_{ack}",
         "traffic_against_model")


@pytest.mark.parametrize("sim", SIMS)
def test_rx_engine_timers(sim):
    run_module("stride_rx_engine", "cocotb_rx_engine", sim,
         {"N": 16, "DELAYED_ACK_NS": 2000, "NACK_RETRY_NS": 4000},
         {"ENGINE_N": "16", "ENGINE_DACK": "2000", "ENGINE_NACK": "4000"}, ENGINE, "_timers",
         "timers")


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("n", [0, 1025])
def test_rx_engine_bad_n_stops_elaboration(sim, n):
    with pytest.raises(SystemExit):
        run_module("stride_rx_engine", "cocotb_rx_engine", sim, {"N": n}, {}, ENGINE, f"_bad{n}")
