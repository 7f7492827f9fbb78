"""Line rate of the whole engine (stride_engine) at 156.25 MHz with 64-bit beats, counted in
cycles: one connection, its ring written in advance, the rate controller at 10 Gbit/s (start and
maximum), the MAC always ready. 1440-byte DATA (1514-byte frames, 190 beats) must leave back to
back: no cycle without a beat on m_axis_tx from the first frame to the last, 190 cycles per
frame. Meanwhile ACK and NACK frames arrive on s_axis_rx; each is processed in a bounded number
of cycles, counted from its last beat into the parser: ACK until the sender reports the advanced
snd_una (una_valid), NACK until the sender has gone back (its go-back-N counter moves), and the
first resent DATA frame's start. The figures are logged for docs/results.md.
With PBUF_EXT=1 the engine's packet buffer is external (pbx_* ports): the test models that
memory, answering each read PBUF_LAT clocks after pbx_rd_en; the same checks apply (line rate,
every payload byte)."""
import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ReadOnly, RisingEdge

from bus import handshake, reset
from frames import build_frame, header_bytes

M32 = 0xFFFFFFFF
CFG_IP, CFG_PORT = 0x0A000002, 21332
PEER_IP, PEER_PORT = 0x0A000001, 40000
CID, PCID, ISS, RCV = 0x1000, 0x77, 0xFFFF0000, 5000
MAXP = 1440
ACK_BOUND = int(os.environ.get("ACK_BOUND", "26"))
PBUF_EXT = int(os.environ.get("PBUF_EXT", "0"))
PBUF_LAT = int(os.environ.get("PBUF_LAT", "1"))


def pattern(i):
    return (i * 7 ^ (i >> 8) ^ (i >> 16)) & 0xFF


async def external_buffer(dut, lat):
    """The external packet buffer: writes from pbx_wr_*, each read (pbx_rd_en at cycle t)
    answered on pbx_rd_data during cycle t + lat, 0 otherwise."""
    mem, due, cyc = {}, {}, 0
    dut.pbx_rd_data.value = 0
    while True:
        await ReadOnly()
        if int(dut.pbx_rd_en.value):
            due[cyc + lat] = mem.get(int(dut.pbx_rd_addr.value), 0)
        if int(dut.pbx_wr_en.value):
            mem[int(dut.pbx_wr_addr.value)] = int(dut.pbx_wr_data.value)
        await RisingEdge(dut.clk)
        cyc += 1
        dut.pbx_rd_data.value = due.pop(cyc, 0)


@cocotb.test()
async def line_rate(dut):
    cocotb.start_soon(Clock(dut.clk, 6400, units="ps").start())
    if PBUF_EXT:
        cocotb.start_soon(external_buffer(dut, PBUF_LAT))
    for name in ["ctl_valid", "wr_valid", "db_valid", "s_axis_rx_tvalid", "s_axis_rx_tuser"]:
        getattr(dut, name).value = 0
    dut.m_axis_tx_tready.value = 1
    dut.m_axis_rx_tready.value = 1
    dut.stat_sel.value = 0
    rate = 1310720          # 10 Gbit/s in 2^-20 bytes/ns
    cfg = {"cfg_src_mac": 0x020000000002, "cfg_dst_mac": 0x020000000001, "cfg_ip": CFG_IP,
           "cfg_udp_port": CFG_PORT, "cfg_window": 4096, "cfg_beta": rate >> 6,
           "cfg_wbeta": rate >> 8, "cfg_t_low": 5000, "cfg_t_high": 80000,
           "cfg_rate_min": 1311, "cfg_rate_max": rate, "cfg_rate_init": rate,
           "cfg_min_window": 256}
    for k, v in cfg.items():
        getattr(dut, k).value = v
    await reset(dut, 4, 80)

    # install the connection
    for k, v in {"ctl_op": 1, "ctl_cid": CID, "ctl_peer_cid": PCID, "ctl_peer_ip": PEER_IP,
                 "ctl_peer_port": PEER_PORT, "ctl_snd_nxt": ISS, "ctl_rcv_nxt": RCV,
                 "ctl_peer_window": 65535}.items():
        getattr(dut, k).value = v
    await handshake(dut, "ctl_valid", "ctl_ready")
    npk = int(os.environ.get("RATE_PACKETS", "40"))
    total = npk * MAXP
    stream = bytes(pattern(i) for i in range(total))
    ctx = CID % int(os.environ.get("ENGINE_N", "64"))
    for w in range(0, total, 8):
        dut.wr_valid.value = 1
        dut.wr_ctx.value = ctx
        dut.wr_addr.value = w // 8
        dut.wr_data.value = int.from_bytes(stream[w:w + 8], "little")
        await RisingEdge(dut.clk)
    dut.wr_valid.value = 0
    for _ in range(20):
        await RisingEdge(dut.clk)

    def ack_frame(flags, ack):
        h = {"version": 2, "flags": flags, "payload_len": 0, "dst_cid": CID, "src_cid": PCID,
             "seq": RCV, "ack": ack & M32, "tx_ts": 0, "echo_stt": 1500, "window": 65535,
             "ce_count": 0}
        return build_frame(header_bytes(h), b"", ip_src=PEER_IP, ip_dst=CFG_IP, sport=PEER_PORT,
                           dport=CFG_PORT)

    # the doorbell starts the transfer
    dut.db_ctx.value = ctx
    dut.db_end.value = (ISS + total) & M32
    await handshake(dut, "db_valid", "db_ready")

    cycle = 0
    starts, frames, cur, bubbles = [], [], bytearray(), 0
    in_frame, seen_first = False, False
    # inputs: (start at frame k, kind, ack)
    plan = [(8, "ack", 4 * MAXP), (14, "ack", 10 * MAXP), (20, "nack", 12 * MAXP),
            (30, "ack", 20 * MAXP)]
    rx_beats, rx_kind, rx_ack = [], None, 0
    lat = {"ack": [], "nack": [], "resend": []}
    waiting = None          # (kind, cycle of last beat, ack)
    gbn0 = 0
    nack_seq = None
    finished = False        # the stream's last packet left after the go-back-N resend began
    while not finished:
        assert cycle < 200 * (2 * npk + 20), f"only {len(frames)} frames after {cycle} cycles"
        # drive the receive side
        if not rx_beats and plan and len(frames) >= plan[0][0] and waiting is None:
            _, rx_kind, rx_ack = plan.pop(0)
            fr = ack_frame(0x06 if rx_kind == "nack" else 0x02, ISS + rx_ack)
            rx_beats = [fr[i:i + 8] for i in range(0, len(fr), 8)]
            gbn0 = int(dut.tx.cnt_gbn_nack.value)
        if rx_beats:
            b = rx_beats.pop(0)
            dut.s_axis_rx_tdata.value = int.from_bytes(b.ljust(8, b"\0"), "little")
            dut.s_axis_rx_tkeep.value = (1 << len(b)) - 1
            dut.s_axis_rx_tlast.value = int(not rx_beats)
            dut.s_axis_rx_tvalid.value = 1
            if not rx_beats:
                waiting = (rx_kind, cycle, rx_ack)
        else:
            dut.s_axis_rx_tvalid.value = 0
        await ReadOnly()
        if waiting:
            kind, t0, ack = waiting
            if kind == "ack" and dut.una_valid.value:
                assert int(dut.una.value) == (ISS + ack) & M32
                lat["ack"].append(cycle - t0)
                waiting = None
            elif kind == "nack" and int(dut.tx.cnt_gbn_nack.value) != gbn0:
                lat["nack"].append(cycle - t0)
                nack_seq = ((ISS + ack) & M32, t0)
                waiting = None
        if dut.m_axis_tx_tvalid.value:
            if not in_frame:
                starts.append(cycle)
                in_frame = True
                seen_first = True
            cur += int(dut.m_axis_tx_tdata.value).to_bytes(8, "little")[:bin(
                int(dut.m_axis_tx_tkeep.value)).count("1")]
            if dut.m_axis_tx_tlast.value:
                frames.append(bytes(cur))
                seq = int.from_bytes(cur[54:58], "big")
                if nack_seq and seq == nack_seq[0] and not lat["resend"]:
                    lat["resend"].append(starts[-1] - nack_seq[1])
                rel = (seq - ISS) & M32
                if lat["resend"] and rel + int.from_bytes(cur[44:46], "big") == total:
                    finished = True
                cur = bytearray()
                in_frame = False
        elif seen_first:
            bubbles += 1
        await RisingEdge(dut.clk)
        cycle += 1
    d = [b - a for a, b in zip(starts, starts[1:])]
    full = [x for x, f in zip(d, frames) if len(f) == 1514]
    dut._log.info("LINE RATE: %d frames, cycles per 1514-byte frame %s, bubbles %d; "
                  "ACK processed in %s cycles, NACK in %s, first resend starts %s cycles after "
                  "the NACK's last beat", len(frames), sorted(set(full)), bubbles, lat["ack"],
                  lat["nack"], lat["resend"])
    assert bubbles == 0, "the engine left the MAC without a beat"
    assert set(full) == {190}, d
    assert len(lat["ack"]) == 3 and max(lat["ack"]) <= ACK_BOUND, lat
    assert len(lat["nack"]) == 1 and lat["nack"][0] <= ACK_BOUND, lat
    # every frame is a DATA frame of this connection with the stream's bytes at its seq
    for f in frames:
        seq = int.from_bytes(f[54:58], "big")
        rel = (seq - ISS) & M32
        n = int.from_bytes(f[44:46], "big")
        assert f[74:74 + n] == stream[rel:rel + n]
