// STRIDE sender: per-connection send state for N connections (docs/spec.md §6.1-6.2, §6.5-6.6),
// a packet buffer with go-back-N resends, stride_cc + stride_pacer driving departures, and the
// packet descriptors (DATA, ACK, NACK) for stride_tx_builder.
//
// Division of work (docs/spec.md §13): host software installs a connection over the control
// port (op 1; op 2 removes it, op 0 reads una/nxt/end back) after its handshake, writes the
// stream bytes into the connection's ring in the packet buffer (wr_*: word wr_addr of context
// wr_ctx's ring of 2^BUF_LOG2 bytes; byte (seq - iss) mod 2^BUF_LOG2 of the stream is at ring
// byte ((seq - iss) mod 2^BUF_LOG2), iss = ctl_snd_nxt at install), and rings the doorbell with
// the new end of its stream (db_end). A doorbell is refused (cnt_db_err) if it moves `end`
// backwards, beyond snd_una + 2^BUF_LOG2 (bytes not yet acknowledged would be overwritten), or
// if the current end is not a multiple of 8 bytes from iss (the packet buffer is read in whole
// 64-bit words, so every packet but a stream's last starts on a word: MAX_PAYLOAD is a multiple
// of 8). una_valid/una_ctx/una report every advance of snd_una (ring space freed). A resend
// already queued (descriptor issued, payload not yet read) when an ACK covers it may carry ring
// bytes the host has overwritten below the new snd_una: such a packet lies below the peer's
// rcv_nxt (una <= rcv_nxt), so the receiver discards it as a duplicate (spec §6.3), and any
// bytes at or above snd_una in it are intact.
//
// Record per connection (a table of N entries in block RAM, stride_ctx_ram): cid, peer cid,
// peer IPv4 address and UDP port, iss, snd_una, snd_nxt, snd_max, end, the peer's window, the
// ack / ce_count to carry in DATA (the receive side's latest ACK), the retransmission timer
// (deadline, back-off), the last go-back-N NACK (ack, time), the last STT sample, and whether
// the connection is in the ready queue, and its pacing state (rate, credit, last update). One op
// at a time, 9 cycles (a departure or a rate result 10; pipeline below), chosen in this order: a
// packet with ACK from the peer (snd_*, from stride_rx_engine), an ACK/NACK request of the
// receive side (ack_*), a control op, a doorbell, a rate controller result, a departure, the
// timer scanner.
//
// Departures: connections with bytes to send (snd_nxt < end, inside the peer's window) wait in
// a ready queue (FIFO of context indices, each at most once); a departure op takes the head,
// sends min(MAX_PAYLOAD, end - snd_nxt, window room) bytes from snd_nxt (PSH when that reaches
// end) and puts the connection back at the tail if more remains: round robin among senders.
// A departure waits for room in the descriptor and payload queues and, at its decision stage,
// for the head's pacing credit (see below); DATA, ACK and NACK leave through one descriptor queue in
// the order the ops produce them.
//
// Rate control, one controller and one pacer per connection (spec §8-9; hw/README.md): the
// events (an STT sample for a pure ACK that acknowledges new data, the NACK reaction for a
// go-back-N NACK, the timeout reaction for an RTO expiry, a context reset at install) go to
// stride_cc_table by context index; each result (context, rate) comes back as an op (OP_RATE)
// that writes the rate into that connection's record. Pacing is a token bucket per connection
// kept in its record: credit (signed, 2^-20 bytes, at most BURST_BYTES), the time of its last
// update (in ticks of 2^TICK_LOG2 ns) and the rate. An op that paces (a departure or a rate
// result) first adds rate x (whole ticks since the last update) x 2^TICK_LOG2, capped at the
// burst (the multiply is 16 gated shifts of the rate summed in a registered adder tree; no
// divide), and moves the update time to the current tick, so no time is lost or counted twice.
// A departure is eligible when that credit is not negative; it then subtracts payload +
// PACE_OVERHEAD bytes. A head that is not eligible yet goes back to the tail of the ready queue
// (round robin over the connections with something to send; the next op slot is left to
// another op, so a connection waiting for credit does not starve the timer scan). ACK and NACK
// are not paced (spec §9).
//
// Go-back-N (spec §6.5): a NACK with snd_una <= ack < snd_nxt sets snd_nxt = ack, unless a NACK
// for the same ack did so less than NACK_HOLD_NS ago (a fixed floor for spec's
// max(srtt, delayed_ack): no RTT estimator here). The retransmission timer (spec §6.6, simpler
// form): a fixed RTO_NS doubled per expiry up to RTO_NS << RTO_MAX_SHIFT, reset by progress; on
// expiry snd_nxt = snd_una. No give-up: host software removes a connection it abandons.
`timescale 1ns / 1ps
`default_nettype none

module stride_tx_sender #(
    parameter integer N = 64,
    parameter integer BUF_LOG2 = 14,
    parameter integer MAX_PAYLOAD = 1440,
    parameter integer RTO_NS = 1000000,
    parameter integer RTO_MAX_SHIFT = 6,
    parameter integer NACK_HOLD_NS = 50000,
    parameter integer PACE_OVERHEAD = 74,
    parameter integer BURST_BYTES = 16384,
    parameter integer ALPHA_SHIFT = 3,
    parameter integer MD_SHIFT = 3,
    parameter integer NORM_SHIFT = 13,
    // packet buffer: 0 = on chip (N rings of block RAM); 1 = external memory on the pbx_* ports
    // (read data PBUF_LAT clocks after pbx_rd_en, in order, one read per clock)
    parameter integer PBUF_EXT = 0,
    parameter integer PBUF_LAT = 1
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [31:0] now,
    input  wire [15:0] cfg_window,      // our receive window, KiB, sent in every packet
    input  wire [31:0] cfg_beta,
    input  wire [31:0] cfg_wbeta,
    input  wire [31:0] cfg_t_low,
    input  wire [31:0] cfg_t_high,
    input  wire [31:0] cfg_rate_min,
    input  wire [31:0] cfg_rate_max,
    input  wire [31:0] cfg_rate_init,
    input  wire [15:0] cfg_min_window,

    // control port: op 1 install, 2 remove, 0 read
    input  wire        ctl_valid,
    output wire        ctl_ready,
    input  wire [1:0]  ctl_op,
    input  wire [15:0] ctl_ctx,
    input  wire [31:0] ctl_cid,
    input  wire [31:0] ctl_peer_cid,
    input  wire [31:0] ctl_peer_ip,
    input  wire [15:0] ctl_peer_port,
    input  wire [31:0] ctl_snd_nxt,     // our first stream byte (ISN + 1)
    input  wire [31:0] ctl_rcv_nxt,     // the peer's next byte (the ack DATA carries)
    input  wire [15:0] ctl_peer_window, // KiB, from the handshake
    output reg         ctl_rd_valid,
    output reg         ctl_rd_installed,
    output reg  [31:0] ctl_rd_una,
    output reg  [31:0] ctl_rd_nxt,
    output reg  [31:0] ctl_rd_end,

    // packet buffer writes and doorbells (host software)
    input  wire        wr_valid,
    input  wire [15:0] wr_ctx,
    input  wire [BUF_LOG2-4:0] wr_addr,
    input  wire [63:0] wr_data,
    // external packet buffer (PBUF_EXT = 1; with 0, pbx_* outputs are 0 and pbx_rd_data unused):
    // word address {context, ring word}, the host's wr_* forwarded one clock later
    output reg         pbx_wr_en,
    output reg  [31:0] pbx_wr_addr,
    output reg  [63:0] pbx_wr_data,
    output wire        pbx_rd_en,
    output wire [31:0] pbx_rd_addr,
    input  wire [63:0] pbx_rd_data,
    input  wire        db_valid,
    output wire        db_ready,
    input  wire [15:0] db_ctx,
    input  wire [31:0] db_end,
    output reg         una_valid,
    output reg  [15:0] una_ctx,
    output reg  [31:0] una,

    // from stride_rx_engine: packets with ACK, and ACK/NACK requests
    input  wire        snd_valid,
    input  wire [15:0] snd_ctx,
    input  wire [7:0]  snd_flags,
    input  wire [31:0] snd_ack,
    input  wire [15:0] snd_window,
    input  wire [31:0] snd_echo_stt,
    input  wire        ack_valid,
    input  wire        ack_nack,
    input  wire [15:0] ack_ctx,
    input  wire [31:0] ack_ack,
    input  wire [31:0] ack_echo_stt,
    input  wire [15:0] ack_ce_count,

    // to stride_tx_builder
    output wire        d_valid,
    input  wire        d_ready,
    output wire [7:0]  d_flags,
    output wire [15:0] d_len,
    output wire [31:0] d_dst_cid,
    output wire [31:0] d_src_cid,
    output wire [31:0] d_seq,
    output wire [31:0] d_ack,
    output wire [31:0] d_echo_stt,
    output wire [15:0] d_window,
    output wire [15:0] d_ce_count,
    output wire [31:0] d_peer_ip,
    output wire [15:0] d_peer_port,
    output wire [63:0] m_axis_tdata,
    output wire [7:0]  m_axis_tkeep,
    output wire        m_axis_tvalid,
    input  wire        m_axis_tready,
    output wire        m_axis_tlast,

    output reg  [31:0] last_rate,       // the latest controller result (stride_cc_table)
    output reg  [15:0] last_rate_ctx,   // and its context, for statistics
    output reg  [31:0] cnt_data,        // DATA descriptors (first sends and resends)
    output reg  [31:0] cnt_resent,      // DATA descriptors below snd_max (resends)
    output reg  [31:0] cnt_ctl_pkts,    // ACK and NACK descriptors
    output reg  [31:0] cnt_gbn_nack,    // go-back-N on NACK
    output reg  [31:0] cnt_nack_held,   // repeated NACKs within NACK_HOLD_NS
    output reg  [31:0] cnt_rto,         // retransmission timer expiries
    output reg  [31:0] cnt_db_err,      // refused doorbells
    output reg  [31:0] cnt_overrun      // inputs lost to a full queue (never, by the op rate)
);
    localparam integer AW = (N <= 2) ? 1 : $clog2(N);
    localparam integer RW = BUF_LOG2 - 3;             // ring words, log2
    localparam integer LAST_I = N - 1;
    localparam [AW-1:0] LAST = LAST_I[AW-1:0];
    localparam [31:0] RING = 32'd1 << BUF_LOG2;
    localparam [31:0] RTO = RTO_NS, HOLD = NACK_HOLD_NS;
    localparam integer MAXP_I = MAX_PAYLOAD, OVH_I = PACE_OVERHEAD;
    localparam [15:0] MAXP = MAXP_I[15:0];
    localparam [15:0] OVH = OVH_I[15:0];
    generate
        if (N < 1 || N > 1024) begin : bad_n
            parameter_N_must_be_1_to_1024 error_instance();
        end
        if (BUF_LOG2 < 11 || BUF_LOG2 > 24) begin : bad_buf
            parameter_BUF_LOG2_must_be_11_to_24 error_instance();
        end
        if (MAX_PAYLOAD < 8 || MAX_PAYLOAD > 8952 || MAX_PAYLOAD % 8 != 0 ||
            MAX_PAYLOAD > (1 << BUF_LOG2)) begin : bad_payload
            parameter_MAX_PAYLOAD_must_be_a_multiple_of_8_up_to_8952_and_the_ring error_instance();
        end
        if (RTO_NS < 1 || RTO_MAX_SHIFT < 0 || RTO_MAX_SHIFT > 7 ||
            (RTO_NS << RTO_MAX_SHIFT) >= (1 << 30)) begin : bad_rto
            parameter_RTO_NS_shifted_must_stay_below_2pow30 error_instance();
        end
        if (NACK_HOLD_NS < 0 || NACK_HOLD_NS >= (1 << 30)) begin : bad_hold
            parameter_NACK_HOLD_NS_must_be_0_to_2pow30 error_instance();
        end
        if (BURST_BYTES < 1 || BURST_BYTES > 1048575) begin : bad_burst
            parameter_BURST_BYTES_must_be_1_to_2pow20 error_instance();
        end
        if (PBUF_EXT < 0 || PBUF_EXT > 1 || PBUF_LAT < 1 || PBUF_LAT > 32 ||
            (PBUF_EXT == 0 && PBUF_LAT != 1)) begin : bad_pbuf
            parameter_PBUF_EXT_0_or_1_and_PBUF_LAT_1_to_32_1_on_chip error_instance();
        end
        if (PACE_OVERHEAD < 0 || PACE_OVERHEAD > 1024) begin : bad_overhead
            parameter_PACE_OVERHEAD_must_be_0_to_1024 error_instance();
        end
    endgenerate

    function lt32;                      // a < b on the circle mod 2^32 (spec §1)
        input [31:0] a, b;
        reg [31:0] d;
        begin
            d = a - b;
            lt32 = d[31];
        end
    endfunction

    // ---- record layout
    localparam integer R_VALID = 0, R_CID = 1, R_PCID = 33, R_PIP = 65, R_PPORT = 97,
                       R_ISS = 113, R_UNA = 145, R_NXT = 177, R_MAX = 209, R_END = 241,
                       R_WND = 273, R_RACK = 305, R_RCE = 337, R_RTON = 353, R_RTDL = 354,
                       R_RTSH = 386, R_NKON = 389, R_NKACK = 390, R_NKT = 422, R_INQ = 454,
                       R_STT = 455, R_RATE = 487, R_CRED = 519, R_TL = 561, W = 587;
    // pacing: credit CRW bits signed in 2^-20 bytes, update time in ticks of 2^TICK_LOG2 ns
    // (TLW bits: `now` >> TICK_LOG2), at most 2^DTW - 1 ticks credited per update
    localparam integer TICK_LOG2 = 6, TLW = 32 - TICK_LOG2, DTW = 16, CRW = 42, ACW = 56;
    localparam [CRW-1:0] CAP = {22'd0, BURST_BYTES[19:0]} << 20;

    // ---- input queues (the receive engine's pulses have no back-pressure)
    // `full_next` of the queues whose `full` is read as is (only the descriptor and job queues'
    // are copied into registers, for the op pick)
    wire           sq_fnx, aq_fnx, rq_fnx, rq2_fnx, ce_fnx, rt_fnx, oq_fnx;
    localparam integer SQW = 16 + 8 + 32 + 16 + 32;
    wire           sq_full, sq_v;
    wire [SQW-1:0] sq_q;
    reg            sq_pop;
    stride_fifo #(.WIDTH(SQW), .DEPTH_LOG2(3)) snd_q (
        .full_next(sq_fnx),
        .clk(clk), .rst(rst), .push(snd_valid),
        .in_data({snd_ctx, snd_flags, snd_ack, snd_window, snd_echo_stt}), .full(sq_full),
        .pop(sq_pop), .out_valid(sq_v), .out_data(sq_q));
    localparam integer AQW = 16 + 1 + 32 + 32 + 16;
    wire           aq_full, aq_v;
    wire [AQW-1:0] aq_q;
    reg            aq_pop;
    stride_fifo #(.WIDTH(AQW), .DEPTH_LOG2(3)) ack_q (
        .full_next(aq_fnx),
        .clk(clk), .rst(rst), .push(ack_valid),
        .in_data({ack_ctx, ack_nack, ack_ack, ack_echo_stt, ack_ce_count}), .full(aq_full),
        .pop(aq_pop), .out_valid(aq_v), .out_data(aq_q));

    // ---- ready queue of context indices
    wire          rq_full, rq_v;
    wire [AW-1:0] rq_q;
    reg           rq_push, rq_pop;
    reg  [AW-1:0] rq_in;
    wire          rqb_v, rq2_full;
    wire [AW-1:0] rqb_q;
    // the head goes through a register of its own (rqm_*) and then a small queue: with many
    // contexts the ready queue is block RAM, whose slow clock-to-out would otherwise feed the op
    // pick, or (at N = 1024) the small queue's LUT RAM write port across the chip
    reg           rqm_v;
    reg  [AW-1:0] rqm_q;
    wire          rqm_move = rqm_v && !rq2_full;
    wire          rq_move = rqb_v && (!rqm_v || rqm_move);
    stride_fifo #(.WIDTH(AW), .DEPTH_LOG2(AW)) ready_q (
        .full_next(rq_fnx),
        .clk(clk), .rst(rst), .push(rq_push), .in_data(rq_in), .full(rq_full),
        .pop(rq_move), .out_valid(rqb_v), .out_data(rqb_q));
    always @(posedge clk) begin
        if (rq_move) rqm_q <= rqb_q;
        if (rst) rqm_v <= 1'b0;
        else if (rq_move) rqm_v <= 1'b1;
        else if (rqm_move) rqm_v <= 1'b0;
    end
    stride_fifo #(.WIDTH(AW), .DEPTH_LOG2(1)) ready_head (
        .full_next(rq2_fnx),
        .clk(clk), .rst(rst), .push(rqm_move), .in_data(rqm_q), .full(rq2_full),
        .pop(rq_pop), .out_valid(rq_v), .out_data(rq_q));

    // ---- descriptor queue (to the builder) and payload jobs (to the reader)
    localparam integer DW = 8 + 16 + 32 * 6 + 16 + 16 + 16;
    wire          dq_full, dq_full_nx;
    reg           dq_push;
    reg  [DW-1:0] dq_in;
    wire [DW-1:0] dq_q;
    stride_fifo #(.WIDTH(DW), .DEPTH_LOG2(2)) desc_q (
        .clk(clk), .rst(rst), .push(dq_push), .in_data(dq_in), .full(dq_full),
        .full_next(dq_full_nx), .pop(d_valid && d_ready), .out_valid(d_valid), .out_data(dq_q));
    assign {d_flags, d_len, d_dst_cid, d_src_cid, d_seq, d_ack, d_echo_stt, d_peer_ip,
            d_window, d_ce_count, d_peer_port} = dq_q;

    localparam integer JW = AW + RW + 12 + 8;         // ctx, first word, words, last tkeep
    wire          jq_full, jq_full_nx, jq_v;
    reg           jq_push;
    reg  [JW-1:0] jq_in;
    wire [JW-1:0] jq_q;
    wire          jq_pop;
    stride_fifo #(.WIDTH(JW), .DEPTH_LOG2(2)) job_q (
        .clk(clk), .rst(rst), .push(jq_push), .in_data(jq_in), .full(jq_full),
        .full_next(jq_full_nx),
        .pop(jq_pop), .out_valid(jq_v), .out_data(jq_q));

    // ---- rate control: stride_cc_table (one controller per connection). Its events wait in
    // cc_q; its results (context, rate) in rt_q until an OP_RATE writes them into the record.
    // An event enters the table only while rt_q has room: the table holds one event at a time,
    // and nothing else fills rt_q, so that result finds room (no result is ever lost). An op
    // that may push an event (packet with ACK, control, timer scan) is picked only while cc_q
    // has room: ops do not overlap, so that room is still there at its EX.
    localparam integer CEW = AW + 2 + 32;
    wire           ce_full, ce_v;
    wire [CEW-1:0] ce_q;
    reg            ce_push;
    reg  [CEW-1:0] ce_in;
    wire           cc_ready, cc_out_valid;
    wire [AW-1:0]  cc_out_ctx;
    wire [31:0]    cc_rate;
    localparam integer RTW = AW + 32;
    wire           rt_full, rt_v;
    wire [RTW-1:0] rt_q;
    reg            rt_pop;
    wire           cc_take = ce_v && cc_ready && !rt_full;
    stride_fifo #(.WIDTH(CEW), .DEPTH_LOG2(3)) cc_q (
        .full_next(ce_fnx),
        .clk(clk), .rst(rst), .push(ce_push), .in_data(ce_in), .full(ce_full),
        .pop(cc_take), .out_valid(ce_v), .out_data(ce_q));
    /* verilator lint_off PINCONNECTEMPTY */
    // NACK_GATE(0): this engine recovers by go-back-N, and with go-back-N an ungated rate is
    // spent on resending whole windows (spec §8.6 nack_gate; docs/results.md, "Loss recovery
    // and the NACK gate")
    stride_cc_table #(.N(N), .ALPHA_SHIFT(ALPHA_SHIFT), .MD_SHIFT(MD_SHIFT),
                      .NORM_SHIFT(NORM_SHIFT), .NACK_GATE(0)) cc (
        .clk(clk), .rst(rst),
        .cfg_beta(cfg_beta), .cfg_wbeta(cfg_wbeta), .cfg_t_low(cfg_t_low),
        .cfg_t_high(cfg_t_high), .cfg_rate_min(cfg_rate_min), .cfg_rate_max(cfg_rate_max),
        .cfg_rate_init(cfg_rate_init), .cfg_min_window(cfg_min_window),
        .in_valid(ce_v && !rt_full), .in_ready(cc_ready), .in_ctx(ce_q[CEW-1 -: AW]),
        .in_event(ce_q[33:32]), .in_stt(ce_q[31:0]),
        .out_valid(cc_out_valid), .out_ctx(cc_out_ctx), .out_rate(cc_rate), .out_branch()
    );
    /* verilator lint_on PINCONNECTEMPTY */
    stride_fifo #(.WIDTH(RTW), .DEPTH_LOG2(3)) rate_q (
        .full_next(rt_fnx),
        .clk(clk), .rst(rst), .push(cc_out_valid), .in_data({cc_out_ctx, cc_rate}),
        .full(rt_full), .pop(rt_pop), .out_valid(rt_v), .out_data(rt_q));
    always @(posedge clk) begin
        if (rst) begin
            last_rate <= cfg_rate_init; last_rate_ctx <= 16'd0;
        end else if (cc_out_valid) begin
            last_rate <= cc_rate; last_rate_ctx <= {{(16 - AW) {1'b0}}, cc_out_ctx};
        end
    end

    // ---- packet buffer: N rings of 2^RW words, on chip or in external memory
    localparam integer PAW = $clog2(N << RW);           // RW with one connection
    wire [AW+RW-1:0] pb_raddr;
    wire [63:0]      pb_q;
    wire             rd_issue;
    wire [AW-1:0]    wr_idx = wr_ctx[AW-1:0];
    wire [AW+RW-1:0] pb_waddr = {wr_idx, wr_addr};
    wire             pb_wen = wr_valid && {16'd0, wr_ctx} < N;
    generate
        if (PBUF_EXT == 0) begin : on_chip
            // the block RAM's output is registered twice more (timing: its clock-to-out is slow
            // on ECP5, and its 64 block RAMs are spread over the die): the first register is the
            // block RAM's own (stride_ctx_ram OUTREG), the second a fabric register; read latency
            // 3. Declared collision-free (no bypass logic behind the block RAM): a read meets
            // the host's write of the same word only for a word the reader does not need: the
            // host writes a word before the doorbell that covers it, into ring space below
            // snd_una, so a departure reading it at that moment is a resend of bytes below
            // snd_una (<= the peer's rcv_nxt: discarded there)
            wire [63:0] pb_q_r1;
            reg  [63:0] pb_q_r;
            stride_ctx_ram #(.DEPTH(N << RW), .AW(PAW), .WIDTH(64), .OLD_ON_COLLISION(0),
                             .OUTREG(1)) pbuf (
                .clk(clk), .rd_addr(pb_raddr[PAW-1:0]), .rd_data(pb_q_r1),
                .wr_en(pb_wen), .wr_addr(pb_waddr[PAW-1:0]), .wr_data(wr_data));
            always @(posedge clk) pb_q_r <= pb_q_r1;
            assign pb_q = pb_q_r;
            always @(posedge clk) begin
                pbx_wr_en <= 1'b0; pbx_wr_addr <= 32'd0; pbx_wr_data <= 64'd0;
            end
            assign pbx_rd_en = 1'b0;
            assign pbx_rd_addr = 32'd0;
        end else begin : external
            always @(posedge clk) begin
                pbx_wr_en <= pb_wen && !rst;
                pbx_wr_addr <= {{(32 - AW - RW) {1'b0}}, pb_waddr};
                pbx_wr_data <= wr_data;
            end
            assign pbx_rd_en = rd_issue;
            assign pbx_rd_addr = {{(32 - AW - RW) {1'b0}}, pb_raddr};
            assign pb_q = pbx_rd_data;
        end
    endgenerate

    // ---- payload reader: one word per clock into an output queue of 2^OQ_LOG2 (+1) entries,
    // credit-based: at most 2^OQ_LOG2 words read and not yet taken, enough to cover the read
    // latency (LAT: PBUF_LAT, or 3 on chip) and the queue's own with no bubble
    localparam integer LAT = (PBUF_EXT != 0) ? PBUF_LAT : 3;    // read latency, clocks
    localparam integer OQ_LOG2 = (LAT <= 1) ? 2 : $clog2(LAT + 4);
    localparam [OQ_LOG2:0] OQ_CREDIT = 1 << OQ_LOG2;
    reg  [AW-1:0] rd_ctx;
    reg  [RW-1:0] rd_word;
    reg  [11:0]   rd_left;            // words still to read of the current job
    reg  [7:0]    rd_lastkeep;
    reg           rd_busy;
    reg  [OQ_LOG2:0] inflight;        // words read or in the output queue
    wire          oq_full, oq_v;
    wire [72:0]   oq_q;
    wire          oq_pop = oq_v && m_axis_tready;
    assign jq_pop = jq_v && !rd_busy;
    assign rd_issue = rd_busy && inflight < OQ_CREDIT;
    assign pb_raddr = {rd_ctx, rd_word};
    // the read's tag (valid, last word, tkeep), delayed by the read latency
    reg  [LAT-1:0] rv_d;
    reg  [LAT*9-1:0] rv_tag;
    wire          rv = rv_d[LAT-1];
    wire          rv_last = rv_tag[LAT*9-1];
    wire [7:0]    rv_keep = rv_tag[LAT*9-2 -: 8];
    wire [8:0]    rd_tag = {rd_left == 12'd1, (rd_left == 12'd1) ? rd_lastkeep : 8'hff};
    wire [LAT:0] rv_d_next = {rv_d, rd_issue};
    wire [LAT*9+8:0] rv_tag_next = {rv_tag, rd_tag};
    always @(posedge clk) begin
        if (rst) begin
            rd_busy <= 1'b0; rv_d <= {LAT{1'b0}}; inflight <= {(OQ_LOG2 + 1) {1'b0}};
        end else begin
            if (jq_pop) begin
                rd_busy <= 1'b1;
                {rd_ctx, rd_word, rd_left, rd_lastkeep} <= jq_q;
            end
            rv_d <= rv_d_next[LAT-1:0];
            if (rd_issue) begin
                rd_word <= rd_word + 1'b1;
                rd_left <= rd_left - 12'd1;
                if (rd_left == 12'd1) rd_busy <= 1'b0;
            end
            inflight <= inflight + {{OQ_LOG2{1'b0}}, rd_issue} - {{OQ_LOG2{1'b0}}, oq_pop};
        end
        rv_tag <= rv_tag_next[LAT*9-1:0];
    end
    // never pushed while full (the credit above), so the queue takes `rv` unchecked
    stride_fifo #(.WIDTH(73), .DEPTH_LOG2(OQ_LOG2), .NO_FULL_CHECK(1)) out_q (
        .full_next(oq_fnx),
        .clk(clk), .rst(rst), .push(rv), .in_data({rv_last, rv_keep, pb_q}), .full(oq_full),
        .pop(oq_pop), .out_valid(oq_v), .out_data(oq_q));
    assign m_axis_tvalid = oq_v;
    assign {m_axis_tlast, m_axis_tkeep, m_axis_tdata} = oq_q;

    // ---- the record table and its op pipeline. One op per 9 cycles (departure, rate 10), never
    // overlapped (as stride_rx_engine's): PICK (idle) chooses the op and registers the choice and
    // the table index; TK presents that index to the table, captures the op's inputs and pops
    // its queue; RD registers the table's output (the block RAM's own output register, loaded
    // every clock: its clock-to-out without it is slow); RD2 registers it again (the record, loaded every clock:
    // the index and the table do not change during an op) and takes the pacing's elapsed ticks
    // and 3 x rate; P1, P2, P3 register the compares and sums (one carry chain per cycle: P1
    // from the record and the op's inputs, P2 from P1's sums, P3 the send length; pacing: P1 and
    // P2 a radix-4 adder tree of rate x ticks, P3 the accrued credit by one carry-save layer and
    // one adder; P3 is skipped by ops other than a departure or a rate result); D registers the
    // decisions from those flags as per-field selects (and the pacing sign, cap test and charged
    // credit); EX selects by them (one or two LUTs per bit) and registers the outputs and the
    // record to write back; WR writes it. A timer scan gives way up to its D to a packet with
    // ACK or an ACK/NACK request. The next op's read comes after the write: no forwarding, and
    // the table is declared collision-free (OLD_ON_COLLISION = 0, no bypass logic after the
    // block RAM).
    localparam [2:0] OP_RX = 0, OP_AOUT = 1, OP_CTL = 2, OP_DB = 3, OP_SEND = 4, OP_SCAN = 5,
                     OP_RATE = 6;
    localparam [3:0] PH_RD = 1, PH_RD2 = 2, PH_P1 = 3, PH_P2 = 4, PH_D = 6, PH_EX = 7,
                     PH_WR = 8;                                 // P3 = 5
    reg           busy;
    reg  [3:0]    ph;
    reg  [2:0]    op;
    reg  [AW-1:0] scan_idx, x_idx;
    reg           x_ok;
    reg           clearing;
    reg  [AW-1:0] clear_idx;
    wire [AW-1:0] sq_idx = sq_q[SQW-16 +: AW];
    wire [AW-1:0] aq_idx = aq_q[AQW-16 +: AW];
    wire [AW-1:0] ctl_idx = ctl_ctx[AW-1:0];
    wire [AW-1:0] db_idx = db_ctx[AW-1:0];
    wire [AW-1:0] rt_idx = rt_q[RTW-1 -: AW];
    wire idle = !clearing && !busy;
    // PICK (idle): the op is chosen from the queue heads and flags and only registered (its
    // one-hot choice and the table index); TK takes it one clock later from those registers:
    // captures the op's inputs, pops its queue, presents the registered index to the table.
    // Nothing the choice rests on can turn against it in between: no op runs (no push into
    // the descriptor, job or event queue), so queue room only grows, queue heads and ctl/db
    // requests (valid/ready: held until taken) stay put. Ops that may issue a controller event
    // wait while the event queue is full (the controller drains it, one event per 11 cycles).
    // A departure whose head was not eligible yet (pacing) leaves the next slot to another op
    // (pace_yield): the timer scan, otherwise last, is not starved by waiting connections.
    reg  pace_yield;
    // copies of the descriptor and job queues' `full` (equal to it in every clock), so that the
    // pick reads flip-flops placed with it (N = 1 seed 1: the job queue's `full`, 74
    // columns from the pick logic, -> pace_yield / ch_send -> pick_idx -> pk_idx, 7.15 ns)
    reg  dq_full_m, jq_full_m;
    always @(posedge clk) begin
        dq_full_m <= dq_full_nx;
        jq_full_m <= jq_full_nx;
    end
`ifndef SYNTHESIS
    always @(posedge clk)
        if (!rst && (dq_full_m !== dq_full || jq_full_m !== jq_full)) begin
            $display("stride_tx_sender %m: a queue's full flag and its copy differ");
            $finish;
        end
`endif
    wire w_rx   = sq_v && !ce_full;
    wire w_aout = aq_v && !dq_full_m;
    wire w_ctl  = ctl_valid && !ce_full;
    wire w_db   = db_valid;
    wire w_rate = rt_v;
    wire w_send = rq_v && !dq_full_m && !jq_full_m && !pace_yield;
    // the choice (by priority) as data: registered in every clock while no op runs, whether
    // or not an op starts (it counts only with tk); only busy and tk depend on `idle`
    wire ch_rx   = w_rx;
    wire ch_aout = !w_rx && w_aout;
    wire ch_ctl  = !w_rx && !w_aout && w_ctl;
    wire ch_db   = !w_rx && !w_aout && !w_ctl && w_db;
    wire ch_rate = !w_rx && !w_aout && !w_ctl && !w_db && w_rate;
    wire ch_send = !w_rx && !w_aout && !w_ctl && !w_db && !w_rate && w_send;
    wire ch_scan = !w_rx && !w_aout && !w_ctl && !w_db && !w_rate && !w_send;
    wire take_any = idle && (w_rx || w_aout || w_ctl || w_db || w_rate || w_send || !ce_full);
    reg           pk_rx, pk_aout, pk_ctl, pk_db, pk_rate, pk_send, pk_scan, tk;
    reg  [AW-1:0] pk_idx;
    assign ctl_ready = pk_ctl && tk;
    assign db_ready = pk_db && tk;
    // the head of the ready queue (block RAM at large N, slow out) enters the index mux last
    wire [AW-1:0] pick_other = w_rx ? sq_idx : w_aout ? aq_idx : w_ctl ? ctl_idx :
                               w_db ? db_idx : w_rate ? rt_idx : scan_idx;
    wire [AW-1:0] pick_idx = ch_send ? rq_q : pick_other;
    wire [AW-1:0] rd_addr = pk_idx;
    function idx_ok;
        input [15:0] c;
        idx_ok = {16'd0, c} < N;
    endfunction

    reg  [W-1:0] wr_data_r;
    // the table's write enable and address as registers of their own, loaded with the next
    // value of (EX's write || clearing) and of (clearing ? clear_idx : x_idx): no LUT between a
    // flip-flop and the block RAMs' byte enables (the OR of the two enables, placed away from
    // both, fed every DP16KD of the table: once the worst path at N = 64 seed 1, 6.95 ns).
    // The address is exact in the cycles that write (x_idx holds from TK to WR).
    reg          tbl_we;
    reg  [AW-1:0] tbl_wa;
    // the record: the table's output registered twice, every clock (RD: the table's own
    // output register, stride_ctx_ram OUTREG; RD2: rec); the table's index and contents do not
    // change from TK to WR, so rec holds the op's record from P1 to EX
    wire [W-1:0] rec1;
    reg  [W-1:0] rec;
    stride_ctx_ram #(.DEPTH(1 << AW), .AW(AW), .WIDTH(W), .OLD_ON_COLLISION(0),
                     .OUTREG(1)) table_ (
        .clk(clk), .rd_addr(rd_addr), .rd_data(rec1),
        .wr_en(tbl_we), .wr_addr(tbl_wa),
        .wr_data(wr_data_r));           // zero while clearing (no multiplexer before the RAM)
    always @(posedge clk) rec <= rec1;

    // the op's inputs, captured at IDLE
    reg  [7:0]  x_flags;
    reg  [31:0] x_a, x_b, x_c, x_d, x_e;
    reg  [15:0] x_s, x_t;
    reg  [1:0]  x_cop;
    reg         x_nack;
    reg  [TLW-DTW-1:0] x_now_h1;        // x_now's bits above DTW, less one
    reg  [TLW-1:0] x_now;               // the op's time in pacing ticks (taken at TK: every
                                        // pacing sum of the op rests on this one sample)
    reg         x_is_rx, x_is_aout, x_is_ctl, x_is_db, x_is_rate, x_is_send, x_is_scan;

    // the record's fields
    wire        f_valid = rec[R_VALID];
    wire [31:0] f_iss = rec[R_ISS +: 32], f_una = rec[R_UNA +: 32], f_nxt = rec[R_NXT +: 32],
                f_max = rec[R_MAX +: 32], f_end = rec[R_END +: 32], f_wnd = rec[R_WND +: 32],
                f_rack = rec[R_RACK +: 32], f_rtdl = rec[R_RTDL +: 32],
                f_nkack = rec[R_NKACK +: 32], f_nkt = rec[R_NKT +: 32], f_stt = rec[R_STT +: 32];
    wire [15:0] f_rce = rec[R_RCE +: 16];
    wire        f_rton = rec[R_RTON], f_nkon = rec[R_NKON], f_inq = rec[R_INQ];
    wire [31:0] f_rate = rec[R_RATE +: 32];
    wire [CRW-1:0] f_cred = rec[R_CRED +: CRW];
    wire [TLW-1:0] f_tl = rec[R_TL +: TLW];
    wire [2:0]  f_rtsh = rec[R_RTSH +: 3];
    wire [2:0]  rtsh_inc = (f_rtsh != RTO_MAX_SHIFT[2:0]) ? f_rtsh + 3'd1 : f_rtsh;
    wire [31:0] x_wnd = {6'd0, x_s, 10'd0};     // the window an ACK carries, bytes

    // time: registered each clock (one clock behind `now`: deadlines 1 clock early)
    reg  [31:0] now_r, now_rto, now_hold;
    always @(posedge clk) begin
        now_r <= now;
        now_rto <= now + RTO;                   // a deadline after progress
        now_hold <= now - HOLD;                 // lt32(now, t + HOLD) = lt32(now - HOLD, t)
    end

    // P1: compares and sums from the record and the inputs
    reg        a_gt_una, a_le_max, nxt_lt_a, a_lt_una, a_lt_nxt, a_eq_max, nk_hold, nk_on;
    reg [3:0]  nk_eq;                           // P1: the NACK's ack, byte by byte
    reg        nk_same;                         // P2: nk_on and all of nk_eq (read in D)
    reg        rto_due, nxt_lt_end, end_ok, a_lt_end;
    // P1: the record's and the inputs' tests that D combines (so D needs no wide compare)
    reg        p_una_eq_max, p_cid_eq, p_nack, p_pure_ack;
    reg [2:0]  p_rtsh_inc;
    reg [31:0] edge_, avail, off, max_nxt, una_xw, a_xw, a_una, dl_sh, dl_inc;
    // P2: compares of P1's sums
    reg        nxt_lt_edge, una_lt_end, una_lt_edge, nxt_lt_unaxw, nxt_lt_axw, a_lt_unaxw,
               a_lt_axw, db_over;
    reg [31:0] room;
    reg [15:0] len_a;                           // min(avail, MAX_PAYLOAD)
    // P3: the send length
    reg [15:0] slen;
    reg        can_send;
    reg        p_psh, p_more;                   // slen == avail; slen != avail and != room
    // pacing: RD2 the elapsed ticks' low DTW bits and their borrow, and 3 x rate (from rec1),
    // P1 four sums of two radix-4 digits of rate x ticks (digit k: dt[2k+1:2k] x rate, one of
    // 0, r, 2r, 3r), the saturation test (from the high bits) and 15 x rate, P2 two sums of
    // those (each pair 15 x rate when saturated: all digits 3), P3 the credit plus both (one
    // carry-save layer, one adder), D the cap test and the credit less the charge (one
    // carry-save layer with the constant, one adder)
    reg [DTW-1:0]  pc_dt;                       // ticks since the last pacing update, mod 2^DTW
    reg            pc_bw;                       // the borrow out of pc_dt's DTW bits
    reg            pc_sat;                      // P1: 2^DTW ticks or more (credit 2^DTW - 1)
    reg [35:0]     pc_r15;                      // P1: 15 x rate
    reg [33:0]     pc_r3;                       // 3 x rate
    reg [35:0]     pc_u0, pc_u1, pc_u2, pc_u3;  // digits 2j, 2j+1: weight 16^j
    reg [39:0]     pc_v0, pc_v1;                // weight 256^i
    reg [ACW-1:0]  pc_acc;                      // signed: credit + rate x elapsed time
    reg            pc_over;                     // pc_acc > CAP (the bucket is full)
    reg [CRW-1:0]  pc_sent, pc_capsent;         // pc_acc - charge, CAP - charge
    wire           pc_elig = !pc_acc[ACW-1];    // credit not negative: may depart
    // the charge is (slen + OVH) << 20: CAP - charge with the constant folded; pc_acc - charge
    // as pc_acc + ~(slen << 20) + (1 - (OVH << 20)) in one carry-save layer and one adder
    localparam [CRW-1:0] CAP_OVH = CAP - ({{(CRW - 16) {1'b0}}, OVH} << 20);
    localparam [CRW-1:0] ONE_OVH = {{(CRW - 1) {1'b0}}, 1'b1} -
                                   ({{(CRW - 16) {1'b0}}, OVH} << 20);
    wire [CRW-1:0] pc_nslen = ~({{(CRW - 16) {1'b0}}, slen} << 20);
    wire [CRW-1:0] pc_cs_s = pc_acc[CRW-1:0] ^ pc_nslen ^ ONE_OVH;
    wire [CRW-1:0] pc_cs_c = ((pc_acc[CRW-1:0] & pc_nslen) | (pc_acc[CRW-1:0] & ONE_OVH) |
                              (pc_nslen & ONE_OVH)) << 1;
    // P3's carry-save layer: credit (sign-extended), v0 << 6, v1 << 14
    wire [ACW-1:0] pc_a = {{(ACW - CRW) {f_cred[CRW-1]}}, f_cred};
    wire [ACW-1:0] pc_b = {{(ACW - 46) {1'b0}}, pc_v0, 6'd0};
    wire [ACW-1:0] pc_c = {{(ACW - 54) {1'b0}}, pc_v1, 14'd0};
    wire [ACW-1:0] pc_3s = pc_a ^ pc_b ^ pc_c;
    wire [ACW-1:0] pc_3c = ((pc_a & pc_b) | (pc_a & pc_c) | (pc_b & pc_c)) << 1;
    function [33:0] digit;                      // d x r, d = 0..3 (r3 = 3 x r)
        input [31:0] r;
        input [33:0] r3;
        input [1:0] d;
        case (d)
            2'd0: digit = 34'd0;
            2'd1: digit = {2'd0, r};
            2'd2: digit = {1'b0, r, 1'b0};
            default: digit = r3;
        endcase
    endfunction
    wire [31:0]    r1_rate = rec1[R_RATE +: 32];
    // RD2: only a DTW-bit chain from the table's output (its block RAM may sit far away), into
    // plain registers; P1 tests the high part of the difference (x_now's high bits less tl's
    // less that borrow) for zero from registers: x_now's high bits (less one with a borrow,
    // x_now_h1) equal to tl's. Two equalities from x_now and rec, the borrow only in their
    // final select (no carry chain: a chain fed by pc_bw, which sits beside the block RAM, was
    // the worst path at N = 1024 seed 1, 7.34 ns); P2 applies the saturation
    wire [DTW:0]   dt_lo = {1'b0, x_now[DTW-1:0]} - {1'b0, rec1[R_TL +: DTW]};
    wire           hi_ne0 = x_now[TLW-1:DTW] != f_tl[TLW-1:DTW];
    wire           hi_ne1 = x_now_h1 != f_tl[TLW-1:DTW];
    wire [35:0]    pc_w0 = pc_sat ? pc_r15 : pc_u0, pc_w1 = pc_sat ? pc_r15 : pc_u1,
                   pc_w2 = pc_sat ? pc_r15 : pc_u2, pc_w3 = pc_sat ? pc_r15 : pc_u3;

    always @(posedge clk) begin
        // P1
        a_gt_una <= lt32(f_una, x_a);
        a_le_max <= !lt32(f_max, x_a);
        nxt_lt_a <= lt32(f_nxt, x_a);
        a_lt_una <= lt32(x_a, f_una);
        a_lt_nxt <= lt32(x_a, f_nxt);
        a_eq_max <= x_a == f_max;
        // the NACK's ack against the last one: bytes compared here, combined in P2 (nk_same
        // is read in D, which follows P2 or P3)
        nk_eq[0] <= f_nkack[7:0] == x_a[7:0];
        nk_eq[1] <= f_nkack[15:8] == x_a[15:8];
        nk_eq[2] <= f_nkack[23:16] == x_a[23:16];
        nk_eq[3] <= f_nkack[31:24] == x_a[31:24];
        nk_on <= f_nkon;
        nk_hold <= lt32(now_hold, f_nkt);
        rto_due <= !lt32(now_r, f_rtdl);
        nxt_lt_end <= lt32(f_nxt, f_end);
        a_lt_end <= lt32(x_a, f_end);
        end_ok <= f_end[2:0] == f_iss[2:0];
        edge_ <= f_una + f_wnd;
        avail <= f_end - f_nxt;
        off <= f_nxt - f_iss;
        max_nxt <= f_max - f_nxt;
        una_xw <= f_una + x_wnd;
        a_xw <= x_a + x_wnd;
        a_una <= x_a - f_una;
        dl_sh <= now_r + (RTO << f_rtsh);
        dl_inc <= now_r + (RTO << rtsh_inc);
        p_una_eq_max <= f_una == f_max;
        p_cid_eq <= rec[R_CID +: 32] == x_a;
        p_nack <= x_flags == 8'h06;
        p_pure_ack <= (x_flags & 8'h7f) == 8'h02;
        p_rtsh_inc <= rtsh_inc;
        // RD2 (from rec1): ticks since the last update, mod 2^DTW, and the borrow; 3 x rate
        {pc_bw, pc_dt} <= dt_lo;
        pc_r3 <= {2'd0, r1_rate} + {1'b0, r1_rate, 1'b0};
        // P1: saturated at 2^DTW - 1 ticks (4.2 ms: a bucket not yet full after that long is
        // credited those 2^DTW - 1 ticks only) when the difference's high part is not zero
        pc_sat <= pc_bw ? hi_ne1 : hi_ne0;
        pc_r15 <= {f_rate, 4'd0} - {4'd0, f_rate};
        // P1: pairs of digits
        pc_u0 <= {2'd0, digit(f_rate, pc_r3, pc_dt[1:0])} +
                 {digit(f_rate, pc_r3, pc_dt[3:2]), 2'd0};
        pc_u1 <= {2'd0, digit(f_rate, pc_r3, pc_dt[5:4])} +
                 {digit(f_rate, pc_r3, pc_dt[7:6]), 2'd0};
        pc_u2 <= {2'd0, digit(f_rate, pc_r3, pc_dt[9:8])} +
                 {digit(f_rate, pc_r3, pc_dt[11:10]), 2'd0};
        pc_u3 <= {2'd0, digit(f_rate, pc_r3, pc_dt[13:12])} +
                 {digit(f_rate, pc_r3, pc_dt[15:14]), 2'd0};
        // P2
        nk_same <= nk_on && &nk_eq;
        nxt_lt_edge <= lt32(f_nxt, edge_);
        una_lt_end <= lt32(f_una, f_end);
        una_lt_edge <= lt32(f_una, edge_);
        nxt_lt_unaxw <= lt32(f_nxt, una_xw);
        nxt_lt_axw <= lt32(f_nxt, a_xw);
        a_lt_unaxw <= lt32(x_a, una_xw);
        a_lt_axw <= lt32(x_a, a_xw);
        db_over <= a_una > RING;
        room <= edge_ - f_nxt;
        len_a <= (avail < {16'd0, MAXP}) ? avail[15:0] : MAXP;
        pc_v0 <= {4'd0, pc_w0} + {pc_w1, 4'd0};
        pc_v1 <= {4'd0, pc_w2} + {pc_w3, 4'd0};
        // P3
        can_send <= f_valid && nxt_lt_end && nxt_lt_edge;
        slen <= ({16'd0, len_a} > room) ? room[15:0] : len_a;
        // slen == avail (PSH), and more to send after this packet (slen != avail, != room)
        p_psh <= ({16'd0, len_a} > room) ? room == avail : {16'd0, len_a} == avail;
        p_more <= ({16'd0, len_a} > room) ? 1'b0 :
                  ({16'd0, len_a} != avail && {16'd0, len_a} != room);
        pc_acc <= pc_3s + pc_3c;
        // D
        pc_over <= $signed(pc_acc) > $signed({{(ACW - CRW) {1'b0}}, CAP});
        pc_sent <= pc_cs_s + pc_cs_c;
        pc_capsent <= CAP_OVH - ({{(CRW - 16) {1'b0}}, slen} << 20);
    end

    // D: the op's decisions from the flags above, registered as per-field selects, so that EX
    // only selects by them (one or two LUTs per record bit; a decision that fed the enables of
    // hundreds of flip-flops was the critical path). Every D register is loaded every clock: its
    // inputs are stable from P1 (P2, P3) to EX.
    reg        d_rq, d_cid_eq, d_psh;
    reg [31:0] d_nxt_sent;
    // the record's new value per field: s_i (install or remove: the op's inputs), s_* (the op's
    // value), else the record's; one-bit fields are decided whole
    reg        s_i, s_una, s_nsent, s_nalt, s_max, s_end, s_wnd, s_ack, s_rtnow, s_rtalt, s_nk,
               s_stt, s_rate, s_cacc, s_csent, s_tl;
    reg [31:0] n_alt, rt_alt;           // new nxt (x_a, x_d or una), new deadline (0, dl_sh, dl_inc)
    reg        n_valid, n_rton, n_nkon, n_inq;
    reg [2:0]  n_rtsh;
    // the op's outputs and counters
    reg        s_wr, s_una_out, s_dq, s_jq, s_ce, s_rd, s_yield, c_held, c_gbn, c_ctl, c_dberr,
               c_data, c_resent, c_rto;
    reg [1:0]  s_ce_type;               // 0 STT sample (x_b), 1 NACK, 2 timeout, 3 reset
    always @(posedge clk) begin : decide
        reg ok, upd, gbn, held, to_a, rq_ok, err, due, inst, rx, stt, go, send, wait_, scan_rto;
        ok = x_ok && f_valid;
        upd = a_gt_una && a_le_max;
        // go-back-N on a NACK with una <= ack < nxt (una, nxt as updated by this ACK)
        gbn = p_nack && (upd ? (!nxt_lt_a && a_lt_nxt) : (!a_lt_una && a_lt_nxt));
        held = nk_same && nk_hold;
        to_a = (upd && nxt_lt_a) || (gbn && !held);
        err = a_lt_end || db_over || !end_ok;
        due = f_valid && f_rton && rto_due;
        inst = x_is_ctl && x_cop != 2'd0 && x_ok;          // install or remove
        rx = x_is_rx && ok;
        stt = p_pure_ack;
        go = gbn && !held;
        // a departure needs the head's credit (pacing): not negative after the accrual
        send = x_is_send && can_send && pc_elig;
        wait_ = x_is_send && can_send && !pc_elig;
        scan_rto = x_is_scan && due && !p_una_eq_max;
        d_cid_eq <= f_valid && p_cid_eq;
        d_psh <= p_psh;
        d_nxt_sent <= f_nxt + {16'd0, slen};
        case (op)
            // requeue test on the updated nxt (f_nxt or x_a), end, una + window
            OP_RX: rq_ok = ok && (to_a ? (a_lt_end && (upd ? a_lt_axw : a_lt_unaxw))
                                       : (nxt_lt_end && (upd ? nxt_lt_axw : nxt_lt_unaxw)));
            OP_DB: rq_ok = ok && !err && nxt_lt_a && nxt_lt_edge;
            // not eligible yet (back to the tail), or more to send after this packet:
            // len < end - nxt and len < window room
            OP_SEND: rq_ok = can_send && (!pc_elig || p_more);
            OP_SCAN: rq_ok = due && !p_una_eq_max && una_lt_end && una_lt_edge;
            default: rq_ok = 1'b0;
        endcase
        // (re)queue a connection that has something to send, unless it is queued already (a
        // departure has just taken it off the queue)
        d_rq <= rq_ok && f_valid && (x_is_send || !f_inq);
        // record fields
        s_i <= inst;
        s_una <= rx && upd;
        s_nsent <= send;
        s_nalt <= inst || (rx && to_a) || scan_rto;
        n_alt <= x_is_ctl ? x_d : x_is_rx ? x_a : f_una;
        s_max <= send && {16'd0, slen} > max_nxt;  // max = nxt + len if that passes it
        s_end <= x_is_db && ok && !err;
        s_wnd <= rx;
        s_ack <= x_is_aout && ok;
        s_rtnow <= rx && upd;
        s_rtalt <= inst || (send && !f_rton) || scan_rto;
        rt_alt <= x_is_ctl ? 32'd0 : x_is_send ? dl_sh : dl_inc;
        s_nk <= rx && gbn && !held;
        s_stt <= rx && upd && stt;
        s_rate <= x_is_rate && f_valid;
        s_cacc <= (x_is_rate && f_valid) || (x_is_send && !send);
        s_csent <= send;
        s_tl <= inst || (x_is_rate && f_valid) || x_is_send;
        n_valid <= inst ? x_cop == 2'd1 : f_valid;
        n_rton <= inst ? 1'b0 : (rx && upd) ? !a_eq_max : send ? 1'b1 :
                  (x_is_scan && due && p_una_eq_max) ? 1'b0 : f_rton;
        n_rtsh <= (inst || (rx && upd)) ? 3'd0 : scan_rto ? p_rtsh_inc : f_rtsh;
        n_nkon <= inst ? 1'b0 : (rx && go) ? 1'b1 : f_nkon;
        n_inq <= (rq_ok && f_valid && (x_is_send || !f_inq)) ? 1'b1 :
                 (inst || x_is_send) ? 1'b0 : f_inq;
        // outputs and counters
        s_wr <= rx || (x_is_aout && ok) || inst || (x_is_db && ok && !err) ||
                (x_is_rate && f_valid) || x_is_send || (x_is_scan && due);
        s_una_out <= rx && upd;
        s_dq <= (x_is_aout && ok) || send;
        s_jq <= send;
        s_ce <= (rx && upd && stt) || (rx && go) || (x_is_ctl && x_cop == 2'd1 && x_ok) ||
                scan_rto;
        s_ce_type <= x_is_rx ? {1'b0, gbn} : x_is_ctl ? 2'd3 : 2'd2;
        s_rd <= x_is_ctl && x_cop == 2'd0;
        s_yield <= wait_;
        c_held <= rx && gbn && held;
        c_gbn <= rx && go;
        c_ctl <= x_is_aout && ok;
        c_dberr <= x_is_db && !(ok && !err);
        c_data <= send;
        c_resent <= send && max_nxt != 32'd0;
        c_rto <= scan_rto;
    end

    // PICK's registers (loaded in every clock while no op runs) and TK's capture of the op's
    // inputs (enabled by tk and the registered choice only: a timer scan that gives way at TK
    // loads them too, harmlessly, as nothing reads them before the next op's TK)
    always @(posedge clk) begin
        if (!busy) begin
            pk_rx <= ch_rx; pk_aout <= ch_aout; pk_ctl <= ch_ctl; pk_db <= ch_db;
            pk_rate <= ch_rate; pk_send <= ch_send; pk_scan <= ch_scan;
            pk_idx <= pick_idx;
        end
        if (tk) begin
            x_idx <= pk_idx;
            x_now <= now_r[31:TICK_LOG2];
            x_now_h1 <= now_r[31:TICK_LOG2+DTW] - 1'b1;
            x_is_rx <= pk_rx; x_is_aout <= pk_aout; x_is_ctl <= pk_ctl; x_is_db <= pk_db;
            x_is_rate <= pk_rate; x_is_send <= pk_send; x_is_scan <= pk_scan;
            op <= pk_rx ? OP_RX : pk_aout ? OP_AOUT : pk_ctl ? OP_CTL : pk_db ? OP_DB :
                  pk_rate ? OP_RATE : pk_send ? OP_SEND : OP_SCAN;
            x_ok <= pk_rx ? idx_ok(sq_q[SQW-1 -: 16]) : pk_aout ? idx_ok(aq_q[AQW-1 -: 16]) :
                    pk_ctl ? idx_ok(ctl_ctx) : pk_db ? idx_ok(db_ctx) : 1'b1;
        end
        if (tk && pk_rx) {x_flags, x_a, x_s, x_b} <= sq_q[SQW-17:0];
        if (tk && pk_aout) {x_nack, x_a, x_b, x_s} <= aq_q[AQW-17:0];
        if (tk && pk_ctl) begin
            x_cop <= ctl_op; x_a <= ctl_cid; x_b <= ctl_peer_cid; x_c <= ctl_peer_ip;
            x_s <= ctl_peer_port; x_d <= ctl_snd_nxt; x_e <= ctl_rcv_nxt; x_t <= ctl_peer_window;
        end
        if (tk && pk_db) x_a <= db_end;
        if (tk && pk_rate) x_a <= rt_q[31:0];
    end

    reg in_ex;                          // the op is in EX (one clock)
    always @(posedge clk) begin
        if (rst) begin
            busy <= 1'b0; ph <= 4'd0; scan_idx <= 0;
            tk <= 1'b0; pace_yield <= 1'b0;
            clearing <= 1'b1; clear_idx <= 0; in_ex <= 1'b0;
            sq_pop <= 1'b0; aq_pop <= 1'b0; rq_pop <= 1'b0; rt_pop <= 1'b0;
        end else begin
            sq_pop <= 1'b0; aq_pop <= 1'b0; rq_pop <= 1'b0; rt_pop <= 1'b0;
            in_ex <= 1'b0;
            if (clearing) begin
                clear_idx <= clear_idx + 1'b1;
                if (clear_idx == LAST) clearing <= 1'b0;
            end else if (!busy) begin
                // PICK: register the choice and the table index (none while only the timer
                // scan could run and the controller's event queue is full)
                if (take_any) begin
                    busy <= 1'b1; ph <= 4'd0; tk <= 1'b1;
                end
            end else if (pk_scan && (w_rx || aq_v) && (tk || ph == PH_RD || ph == PH_RD2 ||
                                                     ph == PH_P1 || ph == PH_P2 ||
                                                     ph == PH_D)) begin
                // a timer scan step gives way, until its EX, to a packet with ACK or an
                // ACK/NACK request that arrived since its PICK (back to PICK; the scan index
                // advances only at a scan's EX)
                tk <= 1'b0; busy <= 1'b0; ph <= 4'd0;
            end else if (tk) begin
                // TK: the table reads pk_idx; the op's inputs are captured (below), its
                // queue popped
                tk <= 1'b0; ph <= PH_RD;
                // the queues' heads are taken now (their next entries show in 1 cycle,
                // before the next PICK)
                sq_pop <= pk_rx; aq_pop <= pk_aout; rq_pop <= pk_send; rt_pop <= pk_rate;
            end else if (ph == PH_WR) begin
                busy <= 1'b0; ph <= 4'd0;
            end else if (ph == PH_EX) begin
                ph <= PH_WR;
                if (pk_scan) scan_idx <= (scan_idx == LAST) ? {AW{1'b0}} : scan_idx + 1'b1;
                // a departure that found its head not eligible yet leaves the next slot to
                // another op
                pace_yield <= s_yield;
            end else begin
                // only a departure needs P3 (its length) and only a departure or a rate result
                // the pacing sum (P3): the other ops skip P3
                ph <= (ph == PH_P2 && !x_is_send && !x_is_rate) ? PH_D : ph + 4'd1;
                in_ex <= ph == PH_D;
            end
        end
    end

    // EX: the outputs and the record to write back, selected by D's registers. The data
    // registers are loaded every clock (their strobes, set in EX only, say when they count).
    always @(posedge clk) begin
        if (rst) begin
            rq_push <= 1'b0; dq_push <= 1'b0; jq_push <= 1'b0; ce_push <= 1'b0;
            ctl_rd_valid <= 1'b0; una_valid <= 1'b0;
            cnt_data <= 0; cnt_resent <= 0; cnt_ctl_pkts <= 0; cnt_gbn_nack <= 0;
            cnt_nack_held <= 0; cnt_rto <= 0; cnt_db_err <= 0; cnt_overrun <= 0;
        end else begin
            // queue overruns (the op rate keeps them empty; counted for the tests)
            if ((snd_valid && sq_full) || (ack_valid && aq_full) || (rq_push && rq_full) ||
                (ce_push && ce_full) || (cc_out_valid && rt_full))
                cnt_overrun <= cnt_overrun + 1;
            rq_push <= in_ex && d_rq;
            dq_push <= in_ex && s_dq;
            jq_push <= in_ex && s_jq;
            ce_push <= in_ex && s_ce;
            ctl_rd_valid <= in_ex && s_rd;
            una_valid <= in_ex && s_una_out;
            if (in_ex && c_held) cnt_nack_held <= cnt_nack_held + 1;
            if (in_ex && c_gbn) cnt_gbn_nack <= cnt_gbn_nack + 1;
            if (in_ex && c_ctl) cnt_ctl_pkts <= cnt_ctl_pkts + 1;
            if (in_ex && c_dberr) cnt_db_err <= cnt_db_err + 1;
            if (in_ex && c_data) cnt_data <= cnt_data + 1;
            if (in_ex && c_resent) cnt_resent <= cnt_resent + 1;
            if (in_ex && c_rto) cnt_rto <= cnt_rto + 1;
        end
    end
    // the next table write: an op's (EX), or a clearing step (clearing continues to LAST)
    always @(posedge clk) begin
        tbl_we <= rst || (in_ex && s_wr) || (clearing && clear_idx != LAST);
        tbl_wa <= rst ? {AW{1'b0}} : clearing ? clear_idx + 1'b1 : x_idx;
    end
    reg clr_r;                          // rst or clearing, one clock late (timing)
    always @(posedge clk) clr_r <= rst || clearing;
    always @(posedge clk) begin : exec
        reg [W-1:0] nr;
        reg [31:0] una_, nxt, max_, end_, wnd, rack, rtdl, nkack, nkt, stt, rate;
        reg [15:0] rce;
        reg [CRW-1:0] cred;
        una_ = s_i ? x_d : s_una ? x_a : f_una;
        nxt = s_nsent ? d_nxt_sent : s_nalt ? n_alt : f_nxt;
        max_ = s_i ? x_d : s_max ? d_nxt_sent : f_max;
        end_ = s_i ? x_d : s_end ? x_a : f_end;
        wnd = s_i ? {6'd0, x_t, 10'd0} : s_wnd ? x_wnd : f_wnd;
        rack = s_i ? x_e : s_ack ? x_a : f_rack;
        rce = s_i ? 16'd0 : s_ack ? x_s : f_rce;
        rtdl = s_rtnow ? now_rto : s_rtalt ? rt_alt : f_rtdl;
        nkack = s_i ? 32'd0 : s_nk ? x_a : f_nkack;
        nkt = s_i ? 32'd0 : s_nk ? now_r : f_nkt;
        stt = s_i ? 32'd0 : s_stt ? x_b : f_stt;
        rate = s_i ? cfg_rate_init : s_rate ? x_a : f_rate;
        // a new connection has a full bucket; an accrual is capped at the burst
        cred = s_i ? CAP : s_cacc ? (pc_over ? CAP : pc_acc[CRW-1:0]) :
               s_csent ? (pc_over ? pc_capsent : pc_sent) : f_cred;
        nr[R_VALID] = n_valid;
        nr[R_CID +: 32] = s_i ? x_a : rec[R_CID +: 32];
        nr[R_PCID +: 32] = s_i ? x_b : rec[R_PCID +: 32];
        nr[R_PIP +: 32] = s_i ? x_c : rec[R_PIP +: 32];
        nr[R_PPORT +: 16] = s_i ? x_s : rec[R_PPORT +: 16];
        nr[R_ISS +: 32] = s_i ? x_d : f_iss;
        nr[R_UNA +: 32] = una_; nr[R_NXT +: 32] = nxt; nr[R_MAX +: 32] = max_;
        nr[R_END +: 32] = end_; nr[R_WND +: 32] = wnd; nr[R_RACK +: 32] = rack;
        nr[R_RCE +: 16] = rce; nr[R_RTON] = n_rton; nr[R_RTDL +: 32] = rtdl;
        nr[R_RTSH +: 3] = n_rtsh; nr[R_NKON] = n_nkon; nr[R_NKACK +: 32] = nkack;
        nr[R_NKT +: 32] = nkt; nr[R_INQ] = n_inq; nr[R_STT +: 32] = stt;
        nr[R_RATE +: 32] = rate; nr[R_CRED +: CRW] = cred;
        nr[R_TL +: TLW] = s_tl ? x_now : f_tl;
        // zeros for the sweep after reset (a synchronous reset of these flip-flops: no
        // multiplexer between them and the block RAM, whose inputs are spread over the die)
        // (from a register of its own, `clr_r`: one clock late, so the first sweep cycle
        // takes rst too; the extra zero cycle after the sweep meets no write)
        wr_data_r <= (rst || clr_r) ? {W{1'b0}} : nr;
        // descriptor: an ACK/NACK (x_nack, x_a = ack, x_b = echo, x_s = ce_count) or DATA
        dq_in <= x_is_aout ?
                 {x_nack ? 8'h06 : 8'h02, 16'd0, rec[R_PCID +: 32], rec[R_CID +: 32], f_max,
                  x_a, x_b, rec[R_PIP +: 32], cfg_window, x_s, rec[R_PPORT +: 16]} :
                 {d_psh ? 8'h62 : 8'h22, slen, rec[R_PCID +: 32], rec[R_CID +: 32], f_nxt,
                  f_rack, 32'd0, rec[R_PIP +: 32], cfg_window, f_rce, rec[R_PPORT +: 16]};
        jq_in <= {x_idx, off[BUF_LOG2-1:3], slen[14:3] + {11'd0, slen[2:0] != 3'd0},
                  (slen[2:0] == 3'd0) ? 8'hff : ~(8'hff << slen[2:0])};
        ce_in <= {x_idx, s_ce_type, (s_ce_type == 2'd0) ? x_b : 32'd0};
        rq_in <= x_idx;
        una_ctx <= {{(16 - AW) {1'b0}}, x_idx};
        una <= x_a;
        ctl_rd_installed <= d_cid_eq;
        ctl_rd_una <= f_una; ctl_rd_nxt <= f_nxt; ctl_rd_end <= f_end;
    end
    wire unused = &{1'b0, oq_full, sq_fnx, aq_fnx, rq_fnx, rq2_fnx, ce_fnx, rt_fnx, oq_fnx,
                       pb_raddr, pb_waddr, pbx_rd_data, rv_d_next[LAT],
                       rv_tag_next[LAT*9+8 -: 9]};
endmodule

`default_nettype wire
