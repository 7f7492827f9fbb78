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
