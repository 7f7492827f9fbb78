"""Interoperation of the RTL receive path with the Rust core: a stride-proto client (hw/peer)
connects to the NIC and sends INTEROP_BYTES; the handshake runs in host software (a stride-proto
listener in the same helper, fed the packets the engine hands to the host), which the testbench
then installs in the engine over the control port. From then on the engine alone decides what
is delivered and when to ACK or NACK; the testbench only frames datagrams, carries the engine's
ACK/NACK requests back as STRIDE datagrams, and injects loss and reordering (INTEROP_LOSS) in
both directions. The stream the engine delivers must equal the client's bytes exactly, and the
client must see every byte acknowledged."""
import os
import random
import subprocess

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Event, First, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

from frames import build_frame, header_bytes, parse_header

M32 = 0xFFFFFFFF
PEER_IP, PEER_PORT = 0x0A000001, 40000


def pattern(i):
    return (i * 7 ^ (i >> 8) ^ (i >> 16)) & 0xFF


class Helper:
    def __init__(self, exe, total):
        self.p = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env={**os.environ, "BYTES": str(total)})

    def cmd(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        out = []
        while True:
            r = self.p.stdout.readline()
            assert r, f"helper exited (status {self.p.poll()})"
            r = r.split()
            if r[0] == ".":
                return out, int(r[1]), int(r[2]), int(r[3])
            out.append(r)

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=10)


class Impair:
    """Drops a fraction `loss` and holds back another `loss` for 1-3 later datagrams."""

    def __init__(self, rng, loss):
        self.rng, self.loss, self.held = rng, loss, []
        self.dropped = self.reordered = 0

    def __call__(self, d):
        out = []
        for h in list(self.held):
            h[1] -= 1
            if h[1] <= 0:
                out.append(h[0])
                self.held.remove(h)
        r = self.rng.random()
        if r < self.loss:
            self.dropped += 1
        elif r < 2 * self.loss:
            self.reordered += 1
            self.held.append([d, self.rng.randint(1, 3)])
        else:
            out.insert(0, d)
        return out


@cocotb.test()
async def byte_stream(dut):
    total = int(os.environ.get("INTEROP_BYTES", str(1 << 20)))
    loss = float(os.environ.get("INTEROP_LOSS", "0"))
    version = int(os.environ["INTEROP_VERSION"])
    rng = random.Random(int(os.environ.get("INTEROP_SEED", "1")))
    cocotb.start_soon(Clock(dut.clk, 8, units="ns").start())
    dut.rst.value = 1
    dut.s_axis_tvalid.value = 0
    dut.ctl_valid.value = 0
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(80):                      # the engine clears its table (N = 64)
        await RisingEdge(dut.clk)

    helper = Helper(os.environ["INTEROP_PEER"], total)
    to_nic, to_helper = [], []               # datagrams for the RTL; commands for the helper
    sent = []                                # datagrams driven, in order
    parsed = []                              # [datagram, payload from the RTL] of good frames
    payloads = []                            # payload packets out of the parser
    stream = bytearray()
    conn = {}
    imp_in, imp_out = Impair(rng, loss), Impair(rng, loss)
    stats = {"acks": 0, "nacks": 0, "frames": 0}

    nic_ready, helper_ready = Event(), Event()

    async def driver():
        while True:
            if not to_nic:
                nic_ready.clear()
                await nic_ready.wait()
                await RisingEdge(dut.clk)
                continue
            d = to_nic.pop(0)
            sent.append(d)
            frame = build_frame(d[:32], d[32:], ip_src=PEER_IP, sport=PEER_PORT)
            beats = [frame[i:i + 8] for i in range(0, len(frame), 8)]
            for i, b in enumerate(beats):
                dut.s_axis_tdata.value = int.from_bytes(b.ljust(8, b"\0"), "little")
                dut.s_axis_tkeep.value = (1 << len(b)) - 1
                dut.s_axis_tlast.value = int(i == len(beats) - 1)
                dut.s_axis_tvalid.value = 1
                await RisingEdge(dut.clk)
            dut.s_axis_tvalid.value = 0
            stats["frames"] += 1

    async def monitor():
        cur = bytearray()
        quiet = 0
        while True:
            if quiet > 4 and not sent and not parsed and not cur:
                # nothing in flight: sleep until the engine or the driver does something
                await First(RisingEdge(dut.any_out), RisingEdge(dut.s_axis_tvalid))
                quiet = 0
            else:
                await RisingEdge(dut.clk)
            await ReadOnly()
            quiet = 0 if dut.any_out.value or dut.s_axis_tvalid.value else quiet + 1
            assert not dut.hdr_overrun.value
            if dut.m_axis_tvalid.value:
                n = bin(int(dut.m_axis_tkeep.value)).count("1")
                cur += int(dut.m_axis_tdata.value).to_bytes(8, "little")[:n]
                if dut.m_axis_tlast.value:
                    payloads.append(bytes(cur))
                    cur = bytearray()
            if dut.done_valid.value:
                d = sent.pop(0)
                pl = payloads.pop(0) if dut.done_payload.value else b""
                assert dut.hdr_valid.value, f"the parser refused a stride-proto datagram {d[:32].hex()}"
                parsed.append([d, pl])
            if dut.host_valid.value:
                d, _ = parsed.pop(0)
                to_helper.append(("H", d))
                helper_ready.set()
            elif dut.snd_valid.value:
                d, pl = parsed.pop(0)
                if dut.dlv_valid.value:
                    assert pl == d[32:], "the parser's payload differs from the datagram's"
                    if dut.dlv_accept.value:
                        assert int(dut.dlv_seq.value) == (conn["rcv0"] + len(stream)) & M32
                        stream.extend(pl)
            if dut.ack_valid.value:
                nack = int(dut.ack_nack.value)
                stats["nacks" if nack else "acks"] += 1
                f = {"version": version, "flags": 0x06 if nack else 0x02, "payload_len": 0,
                     "dst_cid": conn["remote_cid"], "src_cid": conn["cid"], "seq": conn["snd"],
                     "ack": int(dut.ack_ack.value), "tx_ts": int(dut.now.value),
                     "echo_stt": int(dut.ack_echo_stt.value), "window": 4096,
                     "ce_count": int(dut.ack_ce_count.value) if version >= 2 else 0}
                for x in imp_out(header_bytes(f)):
                    to_helper.append(("P", x))
                helper_ready.set()

    def handle(resp):
        out, unacked, written, nxt = resp
        for r in out:
            if r[0] == "p":
                to_nic.extend(imp_in(bytes.fromhex(r[1])))
                nic_ready.set()
            elif r[0] == "h":
                to_helper.append(("P", bytes.fromhex(r[1])))
            elif r[0] == "accepted":
                # host software installs the connection: the packet just accepted carries it
                h = parse_header(last_to_host[0])
                conn.update(cid=h["dst_cid"], remote_cid=h["src_cid"], snd=h["ack"],
                            rcv0=h["seq"])
                pending_install.append(h)
        return unacked, written, nxt

    last_to_host = [b""]
    pending_install = []
    cocotb.start_soon(driver())
    cocotb.start_soon(monitor())
    now = lambda: int(get_sim_time("ns"))  # noqa: E731
    unacked, written, nxt = handle(helper.cmd(f"S {now()}"))
    limit_ns = int(os.environ.get("INTEROP_LIMIT_NS", str(400_000_000)))
    while not (len(stream) >= total and written == total and unacked == 0):
        assert now() < limit_ns, (f"not done at {now()} ns: delivered {len(stream)}, "
                                  f"written {written}, unacked {unacked}, {stats}")
        # sleep until the helper has work or its next timer is due
        helper_ready.clear()
        if not to_helper and not pending_install:
            wait = nxt - now() if nxt >= 0 else 100_000
            await First(Timer(max(8, min(wait, 100_000)), units="ns"), helper_ready.wait())
        await RisingEdge(dut.clk)
        while to_helper:
            kind, d = to_helper.pop(0)
            if kind == "H":
                last_to_host[0] = d
            unacked, written, nxt = handle(helper.cmd(f"{kind} {now()} {d.hex()}"))
        if pending_install:
            h = pending_install.pop()
            dut.ctl_op.value = 1
            dut.ctl_cid.value = h["dst_cid"]
            dut.ctl_peer_ip.value = PEER_IP
            dut.ctl_peer_port.value = PEER_PORT
            # the handshake's third packet (or the first DATA) carries ISNc + 1
            dut.ctl_rcv_nxt.value = h["seq"]
            dut.ctl_valid.value = 1
            while True:
                await ReadOnly()
                ok = bool(dut.ctl_ready.value)
                await RisingEdge(dut.clk)
                if ok:
                    break
            dut.ctl_valid.value = 0
        if 0 <= nxt <= now():
            unacked, written, nxt = handle(helper.cmd(f"T {now()}"))
    helper.close()
    if loss:
        assert imp_in.dropped and imp_in.reordered and stats["nacks"], "no loss was exercised"
    assert bytes(stream[:total]) == bytes(pattern(i) for i in range(total)), "stream differs"
    assert len(stream) == total
    dut._log.info("INTEROP: %d bytes delivered byte-exact in %.3f ms simulated; %d frames into "
                  "the RTL, %d ACKs and %d NACKs from it; dropped %d/%d, reordered %d/%d "
                  "(in/out)", total, now() / 1e6, stats["frames"], stats["acks"], stats["nacks"],
                  imp_in.dropped, imp_out.dropped, imp_in.reordered, imp_out.reordered)
