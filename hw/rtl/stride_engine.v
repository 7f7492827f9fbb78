// STRIDE packet engine: the whole data path of established connections (docs/spec.md §13).
//
//   MAC rx -> stride_rx_parser -> stride_rx_engine -> payload + verdicts to the host
//                                        | ACK fields, ACK/NACK requests
//                                        v
//   host writes + doorbells -> stride_tx_sender (N contexts, packet buffer, go-back-N,
//                              stride_cc_table, a pacer per connection) -> stride_tx_builder
//                              -> MAC tx
//
// Clocking: one clock; `now` (ns mod 2^32, the transmit and receive timestamps) is a
// free-running counter advanced by CLK_PS picoseconds per clock in 16-bit binary fraction of a
// ns (6.4 ns at 156.25 MHz counts 6.399994 ns per clock: 1 ppm).
//
// Control port (host software, after its handshake; spec §13): op 1 installs connection
// ctl_cid (its low log2 N bits are the context index, the same in both tables) in the receive
// engine (peer address and port, rcv_nxt) and in the sender (peer cid, snd_nxt = our ISN + 1,
// the peer's window in KiB); op 2 removes it from both; op 0 reads both back (ctl_rd_*).
// ctl_ready is high for one cycle when the op is taken; ctl_rd_valid pulses once with the
// read-back of an op 0.
//
// Host data: rx payload leaves on m_axis_rx_* exactly as stride_rx_parser emits it (a consumer
// stages each packet and commits it on dlv_valid with dlv_accept: deliver at dlv_seq of context
// dlv_ctx; or on done_valid without dlv for a packet the engine did not claim); packets the
// engine does not own are announced on host_* (the host keeps its own copy of the frame).
// The send stream is written into the packet buffer (wr_*) and announced by doorbells (db_*);
// una_* reports acknowledged bytes (ring space freed). See stride_tx_sender for the rules.
//
// Statistics: stat_sel picks a 32-bit counter, stat_value shows it one cycle later:
//   0-8 parser (ok, mac_err, truncated, other, bad_ip, bad_csum, bad_version, bad_flags,
//   bad_length), 9-12 receive engine (in_order, dup, gap, to_host), 13-20 sender (data,
//   resent, ctl_pkts, gbn_nack, nack_held, rto, db_err, overrun), 21-22 builder (frames,
//   len_err), 23 the latest rate controller result (rate), 24 its context, 25 bit 0: the
//   receive engine saw a header overrun since reset.
`timescale 1ns / 1ps
`default_nettype none

module stride_engine #(
    parameter integer N = 64,
    parameter integer VERSION = 2,
    parameter integer CLK_PS = 6400,
    parameter integer MAX_PAYLOAD = 1440,
    parameter integer BUF_LOG2 = 14,
    parameter integer ACK_INTERVAL = 65536,
    parameter integer DELAYED_ACK_NS = 50000,
    parameter integer NACK_RETRY_NS = 500000,
    parameter integer RTO_NS = 1000000,
    parameter integer NACK_HOLD_NS = 50000,
    parameter integer BURST_BYTES = 16384,
    parameter integer ALPHA_SHIFT = 3,
    parameter integer MD_SHIFT = 3,
    parameter integer NORM_SHIFT = 13,
    // packet buffer: 0 on chip (N x 2^BUF_LOG2 bytes of block RAM), 1 in external memory on the
    // pbx_* ports (read data PBUF_LAT clocks after pbx_rd_en); see stride_tx_sender
    parameter integer PBUF_EXT = 0,
    parameter integer PBUF_LAT = 1
) (
    input  wire        clk,
    input  wire        rst,
    output wire [31:0] now,

    input  wire [47:0] cfg_src_mac,
    input  wire [47:0] cfg_dst_mac,     // next hop
    input  wire [31:0] cfg_ip,
    input  wire [15:0] cfg_udp_port,
    input  wire [15:0] cfg_window,      // advertised receive window, KiB
    input  wire [31:0] cfg_beta,
    input  wire [31:0] cfg_wbeta,
    input  wire [31:0] cfg_t_low,
    input  wire [31:0] cfg_t_high,
    input  wire [31:0] cfg_rate_min,
    input  wire [31:0] cfg_rate_max,
    input  wire [31:0] cfg_rate_init,
    input  wire [15:0] cfg_min_window,

    // from the MAC
    input  wire [63:0] s_axis_rx_tdata,
    input  wire [7:0]  s_axis_rx_tkeep,
    input  wire        s_axis_rx_tvalid,
    output wire        s_axis_rx_tready,
    input  wire        s_axis_rx_tlast,
    input  wire        s_axis_rx_tuser,
    // to the MAC
    output wire [63:0] m_axis_tx_tdata,
    output wire [7:0]  m_axis_tx_tkeep,
    output wire        m_axis_tx_tvalid,
    input  wire        m_axis_tx_tready,
    output wire        m_axis_tx_tlast,
    output wire        m_axis_tx_tuser,

    // received payload and verdicts, to the host
    output wire [63:0] m_axis_rx_tdata,
    output wire [7:0]  m_axis_rx_tkeep,
    output wire        m_axis_rx_tvalid,
    input  wire        m_axis_rx_tready,
    output wire        m_axis_rx_tlast,
    output wire        m_axis_rx_tuser,
    output wire        done_valid,
    output wire        done_payload,
    output wire        dlv_valid,
    output wire        dlv_accept,
    output wire [15:0] dlv_ctx,
    output wire [31:0] dlv_seq,
    output wire [15:0] dlv_len,
    output wire        host_valid,
    output wire [7:0]  host_flags,
    output wire [31:0] host_dst_cid,

    // control port
    input  wire        ctl_valid,
    output wire        ctl_ready,
    input  wire [1:0]  ctl_op,
    input  wire [31:0] ctl_cid,
    input  wire [31:0] ctl_peer_cid,
    input  wire [31:0] ctl_peer_ip,
    input  wire [15:0] ctl_peer_port,
    input  wire [31:0] ctl_snd_nxt,
    input  wire [31:0] ctl_rcv_nxt,
    input  wire [15:0] ctl_peer_window,
    output reg         ctl_rd_valid,
    output reg         ctl_rd_installed,
    output reg  [31:0] ctl_rd_rcv_nxt,
    output reg  [31:0] ctl_rd_una,
    output reg  [31:0] ctl_rd_nxt,
    output reg  [31:0] ctl_rd_end,

    // send stream
    input  wire        wr_valid,
    input  wire [15:0] wr_ctx,
    input  wire [BUF_LOG2-4:0] wr_addr,
    input  wire [63:0] wr_data,
    // external packet buffer (PBUF_EXT = 1): 64-bit words at {context, ring word}; the host's
    // wr_* come out on pbx_wr_* one clock later, reads on pbx_rd_*
    output wire        pbx_wr_en,
    output wire [31:0] pbx_wr_addr,
    output wire [63:0] pbx_wr_data,
    output wire        pbx_rd_en,
    output wire [31:0] pbx_rd_addr,
    input  wire [63:0] pbx_rd_data,
    input  wire        db_valid,
    output wire        db_ready,
    input  wire [15:0] db_ctx,
    input  wire [31:0] db_end,
    output wire        una_valid,
    output wire [15:0] una_ctx,
    output wire [31:0] una,

    input  wire [4:0]  stat_sel,
    output reg  [31:0] stat_value
);
    generate
        if (CLK_PS < 1000 || CLK_PS > 16000) begin : bad_clk
            parameter_CLK_PS_must_be_1000_to_16000 error_instance();
        end
    endgenerate
    localparam [47:0] NS_Q16 = (CLK_PS * 65536 + 500) / 1000;

    reg [47:0] clock_q16;
    always @(posedge clk) clock_q16 <= rst ? 48'd0 : clock_q16 + NS_Q16;
    assign now = clock_q16[47:16];

    // ---- receive path
    wire [7:0]  f_flags;
    wire [15:0] f_len, f_window, f_ce, f_sport;
    wire [31:0] f_dst, f_src, f_seq, f_ack, f_ts, f_echo, f_ip;
    wire        f_ecn, hdr_valid, hdr_overrun;
    wire [31:0] c_ok, c_mac, c_trunc, c_other, c_ip, c_csum, c_ver, c_flags, c_len;
    stride_rx_parser #(.VERSION(VERSION)) parser (
        .clk(clk), .rst(rst), .cfg_udp_port(cfg_udp_port),
        .s_axis_tdata(s_axis_rx_tdata), .s_axis_tkeep(s_axis_rx_tkeep),
        .s_axis_tvalid(s_axis_rx_tvalid), .s_axis_tready(s_axis_rx_tready),
        .s_axis_tlast(s_axis_rx_tlast), .s_axis_tuser(s_axis_rx_tuser),
        .m_axis_tdata(m_axis_rx_tdata), .m_axis_tkeep(m_axis_rx_tkeep),
        .m_axis_tvalid(m_axis_rx_tvalid), .m_axis_tready(m_axis_rx_tready),
        .m_axis_tlast(m_axis_rx_tlast), .m_axis_tuser(m_axis_rx_tuser),
        .done_valid(done_valid), .done_payload(done_payload), .hdr_valid(hdr_valid),
        .hdr_flags(f_flags), .hdr_payload_len(f_len), .hdr_dst_cid(f_dst), .hdr_src_cid(f_src),
        .hdr_seq(f_seq), .hdr_ack(f_ack), .hdr_tx_ts(f_ts), .hdr_echo_stt(f_echo),
        .hdr_window(f_window), .hdr_ce_count(f_ce), .hdr_ip_src(f_ip), .hdr_udp_sport(f_sport),
        .hdr_ecn_ce(f_ecn),
        .cnt_ok(c_ok), .cnt_mac_err(c_mac), .cnt_truncated(c_trunc), .cnt_other(c_other),
        .cnt_bad_ip(c_ip), .cnt_bad_csum(c_csum), .cnt_bad_version(c_ver),
        .cnt_bad_flags(c_flags), .cnt_bad_length(c_len)
    );

    // control sequencing: an op is held here and handed to the receive engine, then the sender
    reg         cp, cp_rx_done, cp_tx_done;
    reg  [1:0]  cp_op;
    reg  [31:0] cp_cid, cp_pcid, cp_ip, cp_snd, cp_rcv;
    reg  [15:0] cp_port, cp_wnd;
    wire        rx_ctl_ready, tx_ctl_ready, rx_rd_valid, rx_rd_inst, tx_rd_valid, tx_rd_inst;
    wire [31:0] rx_rd_rcv, tx_rd_una, tx_rd_nxt, tx_rd_end;
    assign ctl_ready = !cp && ctl_valid;
    reg         got_rx, got_tx, inst_rx, inst_tx, overrun_seen;
    // the context index: the cid's low log2 N bits (as stride_rx_engine indexes its table)
    localparam integer AW = (N <= 2) ? 1 : $clog2(N);
    wire [15:0] cp_ctx = {{(16 - AW) {1'b0}}, cp_cid[AW-1:0]};

    wire        ack_valid, ack_nack, snd_valid;
    wire [15:0] ack_ctx, ack_ce, snd_ctx, snd_window, snd_ce;
    wire [31:0] ack_ack, ack_echo, snd_ack, snd_echo, snd_ts;
    wire [7:0]  snd_flags;
    wire [31:0] r_in_order, r_dup, r_gap, r_host;
    stride_rx_engine #(.N(N), .ACK_INTERVAL(ACK_INTERVAL), .DELAYED_ACK_NS(DELAYED_ACK_NS),
                       .NACK_RETRY_NS(NACK_RETRY_NS)) rx (
        .clk(clk), .rst(rst), .now(now),
        .hdr_valid(hdr_valid), .hdr_flags(f_flags), .hdr_payload_len(f_len),
        .hdr_dst_cid(f_dst), .hdr_seq(f_seq), .hdr_ack(f_ack), .hdr_tx_ts(f_ts),
        .hdr_echo_stt(f_echo), .hdr_window(f_window), .hdr_ce_count(f_ce), .hdr_ip_src(f_ip),
        .hdr_udp_sport(f_sport), .hdr_ecn_ce(f_ecn), .hdr_overrun(hdr_overrun),
        .ctl_valid(cp && !cp_rx_done), .ctl_ready(rx_ctl_ready), .ctl_op(cp_op),
        .ctl_cid(cp_cid), .ctl_peer_ip(cp_ip), .ctl_peer_port(cp_port), .ctl_rcv_nxt(cp_rcv),
        .ctl_rd_valid(rx_rd_valid), .ctl_rd_rcv_nxt(rx_rd_rcv), .ctl_rd_installed(rx_rd_inst),
        .dlv_valid(dlv_valid), .dlv_accept(dlv_accept), .dlv_ctx(dlv_ctx), .dlv_seq(dlv_seq),
        .dlv_len(dlv_len),
        .ack_valid(ack_valid), .ack_nack(ack_nack), .ack_ctx(ack_ctx), .ack_ack(ack_ack),
        .ack_echo_stt(ack_echo), .ack_ce_count(ack_ce),
        .snd_valid(snd_valid), .snd_ctx(snd_ctx), .snd_flags(snd_flags), .snd_ack(snd_ack),
        .snd_window(snd_window), .snd_echo_stt(snd_echo), .snd_tx_ts(snd_ts),
        .snd_ce_count(snd_ce),
        .host_valid(host_valid), .host_flags(host_flags), .host_dst_cid(host_dst_cid),
        .cnt_in_order(r_in_order), .cnt_dup(r_dup), .cnt_gap(r_gap), .cnt_to_host(r_host)
    );

    // ---- transmit path
    wire        d_valid, d_ready;
    wire [7:0]  d_flags;
    wire [15:0] d_len, d_window, d_ce, d_port;
    wire [31:0] d_dst, d_src, d_seq, d_ack, d_echo, d_ip;
    wire [63:0] p_data;
    wire [7:0]  p_keep;
    wire        p_valid, p_ready, p_last;
    wire [31:0] last_rate;
    wire [15:0] last_rate_ctx;
    wire [31:0] t_data, t_resent, t_ctl, t_gbn, t_held, t_rto, t_dberr, t_overrun;
    wire [31:0] b_frames, b_len_err;
    stride_tx_sender #(.N(N), .BUF_LOG2(BUF_LOG2), .MAX_PAYLOAD(MAX_PAYLOAD), .RTO_NS(RTO_NS),
                       .NACK_HOLD_NS(NACK_HOLD_NS), .BURST_BYTES(BURST_BYTES),
                       .ALPHA_SHIFT(ALPHA_SHIFT), .MD_SHIFT(MD_SHIFT),
                       .NORM_SHIFT(NORM_SHIFT), .PBUF_EXT(PBUF_EXT),
                       .PBUF_LAT(PBUF_LAT)) tx (
        .clk(clk), .rst(rst), .now(now), .cfg_window(cfg_window),
        .cfg_beta(cfg_beta), .cfg_wbeta(cfg_wbeta), .cfg_t_low(cfg_t_low),
        .cfg_t_high(cfg_t_high), .cfg_rate_min(cfg_rate_min), .cfg_rate_max(cfg_rate_max),
        .cfg_rate_init(cfg_rate_init), .cfg_min_window(cfg_min_window),
        .ctl_valid(cp && !cp_tx_done), .ctl_ready(tx_ctl_ready), .ctl_op(cp_op),
        .ctl_ctx(cp_ctx), .ctl_cid(cp_cid), .ctl_peer_cid(cp_pcid), .ctl_peer_ip(cp_ip),
        .ctl_peer_port(cp_port), .ctl_snd_nxt(cp_snd), .ctl_rcv_nxt(cp_rcv),
        .ctl_peer_window(cp_wnd),
        .ctl_rd_valid(tx_rd_valid), .ctl_rd_installed(tx_rd_inst), .ctl_rd_una(tx_rd_una),
        .ctl_rd_nxt(tx_rd_nxt), .ctl_rd_end(tx_rd_end),
        .wr_valid(wr_valid), .wr_ctx(wr_ctx), .wr_addr(wr_addr), .wr_data(wr_data),
        .pbx_wr_en(pbx_wr_en), .pbx_wr_addr(pbx_wr_addr), .pbx_wr_data(pbx_wr_data),
        .pbx_rd_en(pbx_rd_en), .pbx_rd_addr(pbx_rd_addr), .pbx_rd_data(pbx_rd_data),
        .db_valid(db_valid), .db_ready(db_ready), .db_ctx(db_ctx), .db_end(db_end),
        .una_valid(una_valid), .una_ctx(una_ctx), .una(una),
        .snd_valid(snd_valid), .snd_ctx(snd_ctx), .snd_flags(snd_flags), .snd_ack(snd_ack),
        .snd_window(snd_window), .snd_echo_stt(snd_echo),
        .ack_valid(ack_valid), .ack_nack(ack_nack), .ack_ctx(ack_ctx), .ack_ack(ack_ack),
        .ack_echo_stt(ack_echo), .ack_ce_count(ack_ce),
        .d_valid(d_valid), .d_ready(d_ready), .d_flags(d_flags), .d_len(d_len),
        .d_dst_cid(d_dst), .d_src_cid(d_src), .d_seq(d_seq), .d_ack(d_ack),
        .d_echo_stt(d_echo), .d_window(d_window), .d_ce_count(d_ce), .d_peer_ip(d_ip),
        .d_peer_port(d_port),
        .m_axis_tdata(p_data), .m_axis_tkeep(p_keep), .m_axis_tvalid(p_valid),
        .m_axis_tready(p_ready), .m_axis_tlast(p_last),
        .last_rate(last_rate), .last_rate_ctx(last_rate_ctx), .cnt_data(t_data), .cnt_resent(t_resent),
        .cnt_ctl_pkts(t_ctl), .cnt_gbn_nack(t_gbn), .cnt_nack_held(t_held), .cnt_rto(t_rto),
        .cnt_db_err(t_dberr), .cnt_overrun(t_overrun)
    );
    stride_tx_builder #(.VERSION(VERSION), .MAX_PAYLOAD(MAX_PAYLOAD)) builder (
        .clk(clk), .rst(rst), .now(now), .cfg_src_mac(cfg_src_mac), .cfg_dst_mac(cfg_dst_mac),
        .cfg_ip(cfg_ip), .cfg_udp_port(cfg_udp_port),
        .d_valid(d_valid), .d_ready(d_ready), .d_flags(d_flags), .d_len(d_len),
        .d_dst_cid(d_dst), .d_src_cid(d_src), .d_seq(d_seq), .d_ack(d_ack),
        .d_echo_stt(d_echo), .d_window(d_window), .d_ce_count(d_ce), .d_peer_ip(d_ip),
        .d_peer_port(d_port),
        .s_axis_tdata(p_data), .s_axis_tkeep(p_keep), .s_axis_tvalid(p_valid),
        .s_axis_tready(p_ready), .s_axis_tlast(p_last),
        .m_axis_tdata(m_axis_tx_tdata), .m_axis_tkeep(m_axis_tx_tkeep),
        .m_axis_tvalid(m_axis_tx_tvalid), .m_axis_tready(m_axis_tx_tready),
        .m_axis_tlast(m_axis_tx_tlast), .m_axis_tuser(m_axis_tx_tuser),
        .cnt_frames(b_frames), .cnt_len_err(b_len_err)
    );

    // ---- control sequencing and read-back
    always @(posedge clk) begin
        ctl_rd_valid <= 1'b0;
        if (rst) begin
            cp <= 1'b0; cp_rx_done <= 1'b0; cp_tx_done <= 1'b0; got_rx <= 1'b0; got_tx <= 1'b0;
            overrun_seen <= 1'b0;
        end else begin
            if (ctl_ready) begin
                cp <= 1'b1; cp_rx_done <= 1'b0; cp_tx_done <= 1'b0;
                got_rx <= ctl_op != 2'd0; got_tx <= ctl_op != 2'd0;
                cp_op <= ctl_op; cp_cid <= ctl_cid; cp_pcid <= ctl_peer_cid;
                cp_ip <= ctl_peer_ip; cp_port <= ctl_peer_port; cp_snd <= ctl_snd_nxt;
                cp_rcv <= ctl_rcv_nxt; cp_wnd <= ctl_peer_window;
            end
            if (rx_ctl_ready) cp_rx_done <= 1'b1;
            if (tx_ctl_ready) cp_tx_done <= 1'b1;
            if (rx_rd_valid) begin
                got_rx <= 1'b1; ctl_rd_rcv_nxt <= rx_rd_rcv; inst_rx <= rx_rd_inst;
            end
            if (tx_rd_valid) begin
                got_tx <= 1'b1; ctl_rd_una <= tx_rd_una; ctl_rd_nxt <= tx_rd_nxt;
                ctl_rd_end <= tx_rd_end; inst_tx <= tx_rd_inst;
            end
            // both parts taken (and, for a read, both answers in): the op is done
            if (cp && cp_rx_done && cp_tx_done && got_rx && got_tx) begin
                cp <= 1'b0;
                ctl_rd_valid <= cp_op == 2'd0;
                ctl_rd_installed <= inst_rx && inst_tx;
            end
            if (hdr_overrun) overrun_seen <= 1'b1;
        end
    end

    // ---- statistics
    always @(posedge clk) begin
        case (stat_sel)
            5'd0: stat_value <= c_ok;        5'd1: stat_value <= c_mac;
            5'd2: stat_value <= c_trunc;     5'd3: stat_value <= c_other;
            5'd4: stat_value <= c_ip;        5'd5: stat_value <= c_csum;
            5'd6: stat_value <= c_ver;       5'd7: stat_value <= c_flags;
            5'd8: stat_value <= c_len;       5'd9: stat_value <= r_in_order;
            5'd10: stat_value <= r_dup;      5'd11: stat_value <= r_gap;
            5'd12: stat_value <= r_host;     5'd13: stat_value <= t_data;
            5'd14: stat_value <= t_resent;   5'd15: stat_value <= t_ctl;
            5'd16: stat_value <= t_gbn;      5'd17: stat_value <= t_held;
            5'd18: stat_value <= t_rto;      5'd19: stat_value <= t_dberr;
            5'd20: stat_value <= t_overrun;  5'd21: stat_value <= b_frames;
            5'd22: stat_value <= b_len_err;  5'd23: stat_value <= last_rate;
            5'd24: stat_value <= {16'd0, last_rate_ctx};      5'd25: stat_value <= {31'd0, overrun_seen};
            default: stat_value <= 32'd0;
        endcase
    end
    wire unused = &{1'b0, f_src, snd_ts, snd_ce};
endmodule

`default_nettype wire
