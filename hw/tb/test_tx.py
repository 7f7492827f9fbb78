"""Runners for the transmit side of the packet engine, each under Icarus and Verilator."""
import os

import pytest

from common import run_module, simulators

SIMS = simulators()


@pytest.mark.parametrize("sim", SIMS)
def test_tx_builder(sim):
    run_module("stride_tx_builder", "cocotb_tx_builder", sim)


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("bad", [{"MAX_PAYLOAD": 4}], ids=["payload"])
def test_tx_builder_bad_params_stop_elaboration(sim, bad):
    with pytest.raises(SystemExit):
        run_module("stride_tx_builder", "cocotb_tx_builder", sim, bad,
             tag="_bad_" + "_".join(f"{k}{v}" for k, v in bad.items()))


SENDER = ["stride_tx_sender", "stride_fifo", "stride_cc_table", "stride_ctx_ram"]


# four connections under both simulators, one connection (N = 1) under Icarus
SENDER_CASES = [(n, sim) for sim in SIMS for n in (1, 4) if n == 4 or sim == "icarus"]


@pytest.mark.parametrize("n,sim", SENDER_CASES)
def test_tx_sender(sim, n):
    run_module("stride_tx_sender", "cocotb_tx_sender", sim,
         {"N": n, "BUF_LOG2": 13, "RTO_NS": 20000, "NACK_HOLD_NS": 2000},
         {"SENDER_N": str(n), "SENDER_BUF_LOG2": "13"}, SENDER, f"_n{n}")


# the token bucket after a long idle spell: elapsed ticks at and around 2^16 (saturation), with
# the tick counter's high part wrapping; credit and departures against a Python bucket
@pytest.mark.parametrize("sim", SIMS)
def test_tx_sender_pacing_saturation(sim):
    run_module("stride_tx_sender", "cocotb_tx_pacing", sim,
               {"N": 4, "BUF_LOG2": 15, "MAX_PAYLOAD": 256, "BURST_BYTES": 4096,
                "RTO_NS": 1 << 29, "RTO_MAX_SHIFT": 0},
               {"PACE_N": "4", "PACE_CTX": "1", "PACE_BUF_LOG2": "15", "PACE_MAXP": "256",
                "PACE_BURST": "4096"},
               SENDER, "_pacing")


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("bad", [{"N": 1025}, {"MAX_PAYLOAD": 1441}], ids=["n1025", "payload"])
def test_tx_sender_bad_params_stop_elaboration(sim, bad):
    with pytest.raises(SystemExit):
        run_module("stride_tx_sender", "cocotb_tx_sender", sim, bad, {}, SENDER,
             "_bad_" + "_".join(f"{k}{v}" for k, v in bad.items()))


ENGINE_ALL = ["stride_engine", "stride_rx_parser", "stride_rx_engine", "stride_ctx_ram",
              "stride_tx_sender", "stride_tx_builder", "stride_fifo", "stride_cc_table"]


@pytest.mark.parametrize("sim", SIMS)
def test_engine_line_rate(sim):
    run_module("stride_engine", "cocotb_engine_rate", sim, {"N": 64, "BUF_LOG2": 16, "CLK_PS": 6400},
         {}, ENGINE_ALL, "_rate")


# N = 1024 with the packet buffer in external memory (modelled by the test) whose reads answer
# 12 clocks later: line rate and every payload byte, as on chip
@pytest.mark.parametrize("sim", SIMS)
def test_engine_line_rate_external_buffer(sim):
    run_module("stride_engine", "cocotb_engine_rate", sim,
               {"N": 1024, "BUF_LOG2": 16, "CLK_PS": 6400, "PBUF_EXT": 1, "PBUF_LAT": 12},
               {"PBUF_EXT": "1", "PBUF_LAT": "12", "ENGINE_N": "1024"}, ENGINE_ALL, "_rate_ext")


@pytest.mark.parametrize("sim", SIMS)
@pytest.mark.parametrize("bad", [{"CLK_PS": 500}, {"PBUF_EXT": 0, "PBUF_LAT": 4}],
                         ids=["clk", "pbuf_lat"])
def test_engine_bad_params_stop_elaboration(sim, bad):
    with pytest.raises(SystemExit):
        run_module("stride_engine", "cocotb_engine_rate", sim, bad, {}, ENGINE_ALL,
             "_bad_" + "_".join(f"{k}{v}" for k, v in bad.items()))


@pytest.mark.parametrize("sim", SIMS)
def test_fifo(sim):
    run_module("stride_fifo", "cocotb_fifo", sim, {"WIDTH": 12, "DEPTH_LOG2": 3},
         {"FIFO_WIDTH": "12", "FIFO_DEPTH_LOG2": "3"}, tag="_w12_d3")


# per-connection rates: connections driven apart by their own controller events, each checked
# against its own rate (token-bucket bounds) and every controller result against cc_model.py.
# N = 4 (contexts 0-3) under both simulators, N = 64 (eight contexts spread over the table)
# under Icarus; STRIDE_HW_FULL=1 (`make -C hw test-full`) adds N = 64 under Verilator.
FULL = os.environ.get("STRIDE_HW_FULL") == "1"
RATE_CASES = [(4, "0,1,2,3", sim) for sim in SIMS] + \
    [(64, "0,63,5,17,32,40,50,9", sim) for sim in SIMS if sim == "icarus" or FULL]


@pytest.mark.parametrize("n,ctxs,sim", RATE_CASES)
def test_tx_sender_rates(sim, n, ctxs):
    r0 = int((0.2 if n == 4 else 0.1) * (1 << 20))
    run_module("stride_tx_sender", "cocotb_tx_rates", sim,
               {"N": n, "BUF_LOG2": 15, "MAX_PAYLOAD": 256, "BURST_BYTES": 1024,
                "RTO_NS": 1 << 29, "RTO_MAX_SHIFT": 0},
               {"RATES_N": str(n), "RATES_CTXS": ctxs, "RATES_R0": str(r0),
                "RATES_BUF_LOG2": "15", "RATES_MAXP": "256", "RATES_BURST": "1024",
                "RATES_LIMIT": os.environ.get("RATES_LIMIT", "300000")},
               SENDER, f"_rates_n{n}")
