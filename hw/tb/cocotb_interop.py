"""Interoperation of the whole RTL engine (stride_engine) with the Rust core, both directions at
once: a stride-proto client (hw/peer) connects to the NIC and sends INTEROP_BYTES while the
engine sends INTEROP_BYTES back on the same connection. The handshake runs in host software (a
stride-proto listener in the same helper, fed the packets the engine hands to the host), which
the testbench then installs in the engine over the control port. From then on the engine alone
decides what is delivered, when to ACK or NACK, what to send, resend (go-back-N) and when
(stride_cc + stride_pacer); every frame it sends is built by its frame builder. The testbench
only carries datagrams (checking the engine's frames: addresses, ports, checksums), plays the
NIC's host software for the send stream (writes the ring, rings the doorbell as acknowledgements
free space) and injects loss and reordering (INTEROP_LOSS) in both directions. The stream the
engine delivers must equal the client's bytes exactly; the client checks every byte it reads
from the engine and must read them all; both sides must see everything acknowledged."""
import os
import random
import subprocess

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import Event, First, ReadOnly, RisingEdge, Timer
from cocotb.utils import get_sim_time

from bus import handshake, reset
from frames import csum16, parse_header

M32 = 0xFFFFFFFF
PEER_IP, PEER_PORT = 0x0A000001, 40000
NIC_IP, NIC_PORT = 0x0A000002, 21332
NIC_MAC, GW_MAC = 0x020000000002, 0x020000000001
BUF_LOG2 = int(os.environ.get("INTEROP_BUF_LOG2", "16"))
RING = 1 << BUF_LOG2


def pattern(i):
    return (i * 7 ^ (i >> 8) ^ (i >> 16)) & 0xFF


def reverse_pattern(i):
    return (i * 13 ^ (i >> 9) ^ 0xA5) & 0xFF


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
                return out, int(r[1]), int(r[2]), int(r[3]), int(r[4])
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


def check_frame(f):
    """The engine's frame: Ethernet to the next hop, IPv4 from the NIC to the peer with a good
    header checksum, UDP between the STRIDE ports with a good checksum. Returns the datagram."""
    assert f[0:6] == GW_MAC.to_bytes(6, "big") and f[6:12] == NIC_MAC.to_bytes(6, "big")
    assert f[12:14] == b"\x08\x00" and f[14] == 0x45
    assert csum16(f[14:34]) == 0, "IPv4 header checksum"
    assert int.from_bytes(f[26:30], "big") == NIC_IP
    assert int.from_bytes(f[30:34], "big") == PEER_IP
    assert int.from_bytes(f[16:18], "big") == len(f) - 14
    udp = f[34:]
    assert int.from_bytes(udp[0:2], "big") == NIC_PORT
    assert int.from_bytes(udp[2:4], "big") == PEER_PORT
    assert int.from_bytes(udp[4:6], "big") == len(udp)
    pseudo = f[26:34] + b"\x00\x11" + len(udp).to_bytes(2, "big")
    assert udp[6:8] != b"\0\0" and csum16(pseudo + udp) == 0, "UDP checksum"
    return bytes(udp[8:])


def build_rx_frame(d):
    from frames import build_frame
    return build_frame(d[:32], d[32:], ip_src=PEER_IP, ip_dst=NIC_IP, sport=PEER_PORT,
                       dport=NIC_PORT, src_mac=GW_MAC.to_bytes(6, "big"),
                       dst_mac=NIC_MAC.to_bytes(6, "big"))


@cocotb.test()
async def byte_stream(dut):
    total = int(os.environ.get("INTEROP_BYTES", str(1 << 20)))
    loss = float(os.environ.get("INTEROP_LOSS", "0"))
    rng = random.Random(int(os.environ.get("INTEROP_SEED", "1")))
    cocotb.start_soon(Clock(dut.clk, 8, units="ns").start())
    for name in ["s_axis_rx_tvalid", "s_axis_rx_tuser", "ctl_valid", "wr_valid", "db_valid"]:
        getattr(dut, name).value = 0
    dut.m_axis_tx_tready.value = 1
    dut.m_axis_rx_tready.value = 1
    dut.stat_sel.value = 0
    rate = 1310720          # 10 Gbit/s
    cfg = {"cfg_src_mac": NIC_MAC, "cfg_dst_mac": GW_MAC, "cfg_ip": NIC_IP,
           "cfg_udp_port": NIC_PORT, "cfg_window": 4096, "cfg_beta": rate >> 6,
           "cfg_wbeta": rate >> 8, "cfg_t_low": 5000, "cfg_t_high": 80000,
           "cfg_rate_min": 1311, "cfg_rate_max": rate, "cfg_rate_init": rate >> 2,
           "cfg_min_window": 256}
    for k, v in cfg.items():
        getattr(dut, k).value = v
    await reset(dut, 3, 80)  # the engine clears its tables (N = 64)

    helper = Helper(os.environ["INTEROP_PEER"], total)
    to_nic, to_helper = [], []               # datagrams for the RTL; commands for the helper
    sent = []                                # datagrams driven, in order
    parsed = []                              # [datagram, payload from the RTL] of good frames
    payloads = []                            # payload packets out of the parser
    stream = bytearray()
    conn = {}
    imp_in, imp_out = Impair(rng, loss), Impair(rng, loss)
    stats = {"acks": 0, "nacks": 0, "data_out": 0, "frames_in": 0}
    tx = {"written": 0, "una": 0, "rung": 0}
    nic_ready, helper_ready, ring_ready = Event(), Event(), Event()

    async def driver():
        while True:
            if not to_nic:
                nic_ready.clear()
                await nic_ready.wait()
                await RisingEdge(dut.clk)
                continue
            d = to_nic.pop(0)
            sent.append(d)
            frame = build_rx_frame(d)
            beats = [frame[i:i + 8] for i in range(0, len(frame), 8)]
            for i, b in enumerate(beats):
                dut.s_axis_rx_tdata.value = int.from_bytes(b.ljust(8, b"\0"), "little")
                dut.s_axis_rx_tkeep.value = (1 << len(b)) - 1
                dut.s_axis_rx_tlast.value = int(i == len(beats) - 1)
                dut.s_axis_rx_tvalid.value = 1
                await RisingEdge(dut.clk)
            dut.s_axis_rx_tvalid.value = 0
            stats["frames_in"] += 1

    async def host_tx():
        """The NIC's host software for the send stream: fill the ring, ring the doorbell."""
        await ring_ready.wait()
        await RisingEdge(dut.clk)
        ctx = conn["cid"] % 64
        iss = conn["snd"]
        while tx["written"] < total:
            room = RING - (tx["written"] - tx["una"])
            n = min(16384, total - tx["written"], room)
            if n < total - tx["written"]:
                n &= ~7
            if n <= 0:
                ring_ready.clear()
                await ring_ready.wait()
                await RisingEdge(dut.clk)      # (set in a read-only phase)
                continue
            w0 = tx["written"]
            for w in range(w0, w0 + n, 8):
                chunk = bytes(reverse_pattern(i) for i in range(w, min(w + 8, total)))
                dut.wr_valid.value = 1
                dut.wr_ctx.value = ctx
                dut.wr_addr.value = (w % RING) // 8
                dut.wr_data.value = int.from_bytes(chunk.ljust(8, b"\0"), "little")
                await RisingEdge(dut.clk)
            dut.wr_valid.value = 0
            tx["written"] += n
            dut.db_ctx.value = ctx
            dut.db_end.value = (iss + tx["written"]) & M32
            await handshake(dut, "db_valid", "db_ready")
            tx["rung"] += 1

    async def monitor():
        cur, out = bytearray(), bytearray()
        quiet = 0
        while True:
            if quiet > 4 and not sent and not parsed and not cur and not out:
                # nothing in flight: sleep until the engine or the driver does something
                await First(RisingEdge(dut.m_axis_tx_tvalid), RisingEdge(dut.s_axis_rx_tvalid),
                            RisingEdge(dut.host_valid), RisingEdge(dut.una_valid))
                quiet = 0
            else:
                await RisingEdge(dut.clk)
            await ReadOnly()
            busy = (dut.m_axis_tx_tvalid.value or dut.s_axis_rx_tvalid.value or
                    dut.m_axis_rx_tvalid.value or dut.done_valid.value or dut.host_valid.value)
            quiet = 0 if busy else quiet + 1
            if dut.m_axis_rx_tvalid.value:
                n = bin(int(dut.m_axis_rx_tkeep.value)).count("1")
                cur += int(dut.m_axis_rx_tdata.value).to_bytes(8, "little")[:n]
                if dut.m_axis_rx_tlast.value:
                    payloads.append(bytes(cur))
                    cur = bytearray()
            assert not dut.rx.hdr_overrun.value
            if dut.done_valid.value:
                d = sent.pop(0)
                assert dut.parser.hdr_valid.value, \
                    f"the parser refused a stride-proto datagram {d[:32].hex()}"
                pl = payloads.pop(0) if dut.done_payload.value else b""
                parsed.append([d, pl])
            if dut.host_valid.value:
                d, _ = parsed.pop(0)
                to_helper.append(("H", d))
                helper_ready.set()
            elif dut.rx.snd_valid.value:
                # every packet of the installed connection carries ACK
                d, pl = parsed.pop(0)
                if dut.dlv_valid.value:
                    assert pl == d[32:], "the parser's payload differs from the datagram's"
                    if dut.dlv_accept.value:
                        assert int(dut.dlv_seq.value) == (conn["rcv0"] + len(stream)) & M32
                        stream.extend(pl)
            if dut.una_valid.value:
                tx["una"] = (int(dut.una.value) - conn["snd"]) & M32
                ring_ready.set()
            if dut.m_axis_tx_tvalid.value:
                n = bin(int(dut.m_axis_tx_tkeep.value)).count("1")
                # only the bytes under tkeep are the frame's (the others may be undefined)
                bits = dut.m_axis_tx_tdata.value.binstr[64 - 8 * n:]
                out += int(bits, 2).to_bytes(8, "little")[:n]
                if dut.m_axis_tx_tlast.value:
                    d = check_frame(bytes(out))
                    out = bytearray()
                    flags = d[1]
                    if flags & 0x20:
                        stats["data_out"] += 1
                    elif flags & 0x04:
                        stats["nacks"] += 1
                    else:
                        stats["acks"] += 1
                    for x in imp_out(d):
                        to_helper.append(("P", x))
                    helper_ready.set()

    def handle(resp):
        out, unacked, written, nxt, received = resp
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
                            rcv0=h["seq"], window=h["window"])
                pending_install.append(h)
        return unacked, written, nxt, received

    last_to_host = [b""]
    pending_install = []
    cocotb.start_soon(driver())
    cocotb.start_soon(monitor())
    now = lambda: int(get_sim_time("ns"))  # noqa: E731
    unacked, written, nxt, received = handle(helper.cmd(f"S {now()}"))
    limit_ns = int(os.environ.get("INTEROP_LIMIT_NS", str(400_000_000)))
    host_task = None

    def finished():
        return (len(stream) >= total and written == total and unacked == 0 and
                received == total and tx["una"] == total)

    while not finished():
        assert now() < limit_ns, (f"not done at {now()} ns: delivered {len(stream)}, "
                                  f"written {written}, unacked {unacked}, received {received}, "
                                  f"engine acked {tx['una']}, {stats}")
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
            unacked, written, nxt, received = handle(helper.cmd(f"{kind} {now()} {d.hex()}"))
        if pending_install:
            h = pending_install.pop()
            for k, v in {"ctl_op": 1, "ctl_cid": h["dst_cid"], "ctl_peer_cid": h["src_cid"],
                         "ctl_peer_ip": PEER_IP, "ctl_peer_port": PEER_PORT,
                         "ctl_snd_nxt": h["ack"],      # our ISN + 1
                         # the handshake's third packet (or the first DATA) carries ISNc + 1
                         "ctl_rcv_nxt": h["seq"], "ctl_peer_window": h["window"]}.items():
                getattr(dut, k).value = v
            await handshake(dut, "ctl_valid", "ctl_ready")
            host_task = cocotb.start_soon(host_tx())
            ring_ready.set()
        if 0 <= nxt <= now():
            unacked, written, nxt, received = handle(helper.cmd(f"T {now()}"))
    helper.close()
    assert host_task is not None
    dut.stat_sel.value = 14
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await ReadOnly()
    resent = int(dut.stat_value.value)
    if loss:
        assert imp_in.dropped and imp_in.reordered and stats["nacks"], "no loss was exercised"
        assert imp_out.dropped and resent, "the engine resent nothing"
    assert bytes(stream[:total]) == bytes(pattern(i) for i in range(total)), "stream differs"
    assert len(stream) == total
    dut._log.info("INTEROP: %d bytes each way byte-exact in %.3f ms simulated; %d frames into "
                  "the RTL; from it %d DATA (%d resent), %d ACKs, %d NACKs; dropped %d/%d, "
                  "reordered %d/%d (in/out)", total, now() / 1e6, stats["frames_in"],
                  stats["data_out"], resent, stats["acks"], stats["nacks"], imp_in.dropped,
                  imp_out.dropped, imp_in.reordered, imp_out.reordered)
