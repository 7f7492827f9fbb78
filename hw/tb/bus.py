"""Valid/ready handshakes of the cocotb testbenches (the RTL's control, write and doorbell
ports)."""
from cocotb.triggers import ReadOnly, RisingEdge


async def handshake(dut, valid, ready):
    """Raises `dut.<valid>` and holds it until a rising edge of `dut.clk` at which
    `dut.<ready>` is high (sampled in that cycle's read-only phase), then lowers it: one
    transfer of whatever the caller set on the port's other inputs."""
    getattr(dut, valid).value = 1
    while True:
        await ReadOnly()
        ok = int(getattr(dut, ready).value)
        await RisingEdge(dut.clk)
        if ok:
            break
    getattr(dut, valid).value = 0


async def reset(dut, hold, settle):
    """Holds `dut.rst` high for `hold` rising edges of `dut.clk`, then low for `settle` more
    (a design that clears its tables after reset needs them before it takes a request)."""
    dut.rst.value = 1
    for _ in range(hold):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(settle):
        await RisingEdge(dut.clk)
