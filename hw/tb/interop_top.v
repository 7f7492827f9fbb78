// Test top of the interoperation test: stride_rx_parser feeding stride_rx_engine, with `now`
// a nanosecond counter (8 ns clock).
`timescale 1ns / 1ps
`default_nettype none

module interop_top #(
    parameter integer N = 64,
    parameter integer VERSION = 2
) (
    input  wire        clk,
    input  wire        rst,
    output reg  [31:0] now,
    input  wire [63:0] s_axis_tdata,
    input  wire [7:0]  s_axis_tkeep,
    input  wire        s_axis_tvalid,
    output wire        s_axis_tready,
    input  wire        s_axis_tlast,
    output wire [63:0] m_axis_tdata,
    output wire [7:0]  m_axis_tkeep,
    output wire        m_axis_tvalid,
    output wire        m_axis_tlast,
    output wire        m_axis_tuser,
    output wire        done_valid,
    output wire        done_payload,
    output wire        hdr_valid,
    input  wire        ctl_valid,
    output wire        ctl_ready,
    input  wire [1:0]  ctl_op,
    input  wire [31:0] ctl_cid,
    input  wire [31:0] ctl_peer_ip,
    input  wire [15:0] ctl_peer_port,
    input  wire [31:0] ctl_rcv_nxt,
    output wire        dlv_valid,
    output wire        dlv_accept,
    output wire [31:0] dlv_seq,
    output wire        ack_valid,
    output wire        ack_nack,
    output wire [31:0] ack_ack,
    output wire [31:0] ack_echo_stt,
    output wire [15:0] ack_ce_count,
    output wire        snd_valid,
    output wire        host_valid,
    output wire        hdr_overrun,
    output wire        any_out          // some output is valid (lets the testbench sleep)
);
    assign any_out = m_axis_tvalid | done_valid | dlv_valid | ack_valid | snd_valid | host_valid;
    always @(posedge clk) now <= rst ? 32'd0 : now + 32'd8;

    wire [7:0]  f_flags;
    wire [15:0] f_len, f_window, f_ce, f_sport;
    wire [31:0] f_dst, f_src, f_seq, f_ack, f_ts, f_echo, f_ip;
    wire        f_ecn;
    /* verilator lint_off PINCONNECTEMPTY */
    stride_rx_parser #(.VERSION(VERSION)) parser (
        .clk(clk), .rst(rst), .cfg_udp_port(16'd21332),
        .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
        .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast), .s_axis_tuser(1'b0),
        .m_axis_tdata(m_axis_tdata), .m_axis_tkeep(m_axis_tkeep), .m_axis_tvalid(m_axis_tvalid),
        .m_axis_tready(1'b1), .m_axis_tlast(m_axis_tlast), .m_axis_tuser(m_axis_tuser),
        .done_valid(done_valid), .done_payload(done_payload), .hdr_valid(hdr_valid),
        .hdr_flags(f_flags), .hdr_payload_len(f_len), .hdr_dst_cid(f_dst), .hdr_src_cid(f_src),
        .hdr_seq(f_seq), .hdr_ack(f_ack), .hdr_tx_ts(f_ts), .hdr_echo_stt(f_echo),
        .hdr_window(f_window), .hdr_ce_count(f_ce), .hdr_ip_src(f_ip), .hdr_udp_sport(f_sport),
        .hdr_ecn_ce(f_ecn),
        .cnt_ok(), .cnt_mac_err(), .cnt_truncated(), .cnt_other(), .cnt_bad_ip(),
        .cnt_bad_csum(), .cnt_bad_version(), .cnt_bad_flags(), .cnt_bad_length()
    );
    stride_rx_engine #(.N(N)) engine (
        .clk(clk), .rst(rst), .now(now),
        .hdr_valid(hdr_valid), .hdr_flags(f_flags), .hdr_payload_len(f_len),
        .hdr_dst_cid(f_dst), .hdr_seq(f_seq), .hdr_ack(f_ack), .hdr_tx_ts(f_ts),
        .hdr_echo_stt(f_echo), .hdr_window(f_window), .hdr_ce_count(f_ce), .hdr_ip_src(f_ip),
        .hdr_udp_sport(f_sport), .hdr_ecn_ce(f_ecn), .hdr_overrun(hdr_overrun),
        .ctl_valid(ctl_valid), .ctl_ready(ctl_ready), .ctl_op(ctl_op), .ctl_cid(ctl_cid),
        .ctl_peer_ip(ctl_peer_ip), .ctl_peer_port(ctl_peer_port), .ctl_rcv_nxt(ctl_rcv_nxt),
        .ctl_rd_valid(), .ctl_rd_rcv_nxt(), .ctl_rd_installed(),
        .dlv_valid(dlv_valid), .dlv_accept(dlv_accept), .dlv_ctx(), .dlv_seq(dlv_seq),
        .dlv_len(),
        .ack_valid(ack_valid), .ack_nack(ack_nack), .ack_ctx(), .ack_ack(ack_ack),
        .ack_echo_stt(ack_echo_stt), .ack_ce_count(ack_ce_count),
        .snd_valid(snd_valid), .snd_ctx(), .snd_flags(), .snd_ack(), .snd_window(),
        .snd_echo_stt(), .snd_tx_ts(), .snd_ce_count(),
        .host_valid(host_valid), .host_flags(), .host_dst_cid(),
        .cnt_in_order(), .cnt_dup(), .cnt_gap(), .cnt_to_host()
    );
    /* verilator lint_on PINCONNECTEMPTY */
    wire unused = &{1'b0, f_src};
endmodule

`default_nettype wire
