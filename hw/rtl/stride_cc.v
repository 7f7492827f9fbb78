// STRIDE rate controller: Algorithm 1 of the STRIDE paper exactly as stride-proto's cc::Stride
// implements it (docs/spec.md section 8), bit for bit. Shifts, adds, subtracts, compares and a
// leading-one detector only: this file contains no multiply, divide or modulo operator (a test
// checks it).
//
// Interface
//   in_valid/in_ready : one event per clock; in_ready is always 1 (the pipeline never stalls).
//   in_event          : 0 = STT sample (in_stt), 1 = NACK, 2 = retransmission timeout,
//                       3 = ignored (no output).
//   out_valid         : pulses LATENCY cycles after the event was accepted, with the rate and the
//                       controller state after that event (for checking against vectors/cc/).
//   cfg_*             : runtime parameters (registers in a NIC); they must be stable while events
//                       are in flight. rst loads cfg_rate_init.
//   ALPHA_SHIFT, MD_SHIFT, NORM_SHIFT: synthesis-time shift amounts (wiring, no barrel shifter).
//
// Timing: LATENCY = 6 cycles, initiation interval = 1 update per clock, for any event sequence.
// Each recurrence closes inside one stage: stage B updates the gradient, the windowed minimum,
// the window count and the previous sample; stage F updates the rate. Stages C-E compute the
// queueing delay, the branch and the decrease shift from stage B's results, which do not depend
// on the rate, so no forwarding or stall is needed.
`timescale 1ns / 1ps
`default_nettype none

module stride_cc #(
    parameter integer ALPHA_SHIFT = 3,
    parameter integer MD_SHIFT    = 3,
    parameter integer NORM_SHIFT  = 13,
    // 1: out_d/out_stt_old/out_min_cur/out_min_prev/out_count carry the state after each event
    // (for the bit-exact tests); 0: they are tied to 0 and the pipeline carries only what the
    // rate needs (what a NIC would synthesize; the resource report uses 0).
    parameter integer STATE_OUT   = 1
) (
    input  wire        clk,
    input  wire        rst,
    // configuration
    input  wire [31:0] cfg_beta,
    input  wire [31:0] cfg_wbeta,
    input  wire [31:0] cfg_t_low,
    input  wire [31:0] cfg_t_high,
    input  wire [31:0] cfg_rate_min,
    input  wire [31:0] cfg_rate_max,
    input  wire [31:0] cfg_rate_init,
    input  wire [15:0] cfg_min_window,
    // events
    input  wire        in_valid,
    output wire        in_ready,
    input  wire [1:0]  in_event,
    input  wire [31:0] in_stt,
    // result
    output reg         out_valid,
    output wire [31:0] out_rate,
    output reg  [31:0] out_d,
    output reg  [31:0] out_stt_old,
    output reg  [31:0] out_min_cur,
    output reg  [31:0] out_min_prev,
    output reg  [15:0] out_count,
    output reg  [2:0]  out_branch
);
    // ---- elaboration-time parameter checks ------------------------------------------------
    generate
        if (ALPHA_SHIFT < 0 || ALPHA_SHIFT > 15) begin : bad_alpha_shift
            parameter_ALPHA_SHIFT_must_be_0_to_15 error_instance();
        end
        if (MD_SHIFT < 1 || MD_SHIFT > 31) begin : bad_md_shift
            parameter_MD_SHIFT_must_be_1_to_31 error_instance();
        end
        if (NORM_SHIFT < 0 || NORM_SHIFT > 31) begin : bad_norm_shift
            parameter_NORM_SHIFT_must_be_0_to_31 error_instance();
        end
        if (STATE_OUT != 0 && STATE_OUT != 1) begin : bad_state_out
            parameter_STATE_OUT_must_be_0_or_1 error_instance();
        end
    endgenerate

    localparam SO = (STATE_OUT != 0);
    localparam [1:0] EV_SAMPLE = 2'd0, EV_NACK = 2'd1, EV_TIMEOUT = 2'd2;
    localparam [2:0] BR_NONE = 3'd0, BR_LOW = 3'd1, BR_HIGH = 3'd2, BR_GRAD_INC = 3'd3,
                     BR_GRAD_DEC = 3'd4, BR_NACK = 3'd5, BR_TIMEOUT = 3'd6;

    assign in_ready = 1'b1;

    // ---- stage A: register the event --------------------------------------------------------
    reg        a_valid;
    reg [1:0]  a_event;
    reg [31:0] a_stt;
    always @(posedge clk) begin
        if (rst) begin
            a_valid <= 1'b0;
        end else begin
            a_valid <= in_valid;
        end
        a_event <= in_event;
        a_stt   <= in_stt;
    end

    // ---- stage B: gradient, windowed minimum, count (state recurrences) ---------------------
    reg        init;
    reg [31:0] stt_old, min_cur, min_prev, d;
    reg [15:0] count;

    wire        a_sample   = a_valid && (a_event == EV_SAMPLE);
    // Before the first sample (init = 0) the first sample stands in for stt_old and both
    // minima; d and count are still 0 from reset, since only samples change them.
    wire [31:0] raw_diff   = a_stt - stt_old;
    // clamp to [-2^30, 2^30-1] (in range exactly when bits 31 and 30 agree); 0 before init
    wire [31:0] diff       = !init ? 32'd0
                           : (raw_diff[31] == raw_diff[30]) ? raw_diff
                           : (raw_diff[31] ? 32'hC000_0000 : 32'h3FFF_FFFF);
    wire [31:0] e          = diff - d;
    wire [31:0] e_shr      = $signed(e) >>> ALPHA_SHIFT;
    wire [31:0] d_next     = d + e_shr;
    wire [31:0] below_cur  = a_stt - min_cur;
    wire [31:0] mcur1      = (below_cur[31] || !init) ? a_stt : min_cur;
    wire [15:0] count1     = count + 16'd1;
    wire        roll       = (count1 == cfg_min_window);
    wire [31:0] mprev_next = roll ? mcur1 : (init ? min_prev : a_stt);
    wire [31:0] mcur_next  = roll ? a_stt : mcur1;
    wire [15:0] count_next = roll ? 16'd0 : count1;

    // After each clock edge the state registers hold exactly the state after the event now in
    // stage B (NACK and timeout leave them unchanged), so stage C reads them directly.
    reg        b_valid;
    reg [1:0]  b_event;
    reg [31:0] b_stt;
    always @(posedge clk) begin
        if (rst) begin
            init     <= 1'b0;
            b_valid  <= 1'b0;
            stt_old  <= 32'd0;
            min_cur  <= 32'd0;
            min_prev <= 32'd0;
            d        <= 32'd0;
            count    <= 16'd0;
        end else begin
            b_valid <= a_valid;
            if (a_sample) begin
                init     <= 1'b1;
                stt_old  <= a_stt;
                min_cur  <= mcur_next;
                min_prev <= mprev_next;
                d        <= d_next;
                count    <= count_next;
            end
        end
        b_event    <= a_event;
        b_stt      <= a_stt;
    end

    // ---- stage C: which bucket holds the minimum --------------------------------------------
    wire [31:0] prev_minus_cur = min_prev - min_cur;
    reg        c_valid;
    reg [1:0]  c_event;
    reg [31:0] c_stt, c_m, c_d, c_stt_old, c_min_cur, c_min_prev;
    reg [15:0] c_count;
    always @(posedge clk) begin
        if (rst) c_valid <= 1'b0; else c_valid <= b_valid;
        c_event    <= b_event;
        c_stt      <= b_stt;
        c_m        <= prev_minus_cur[31] ? min_prev : min_cur;
        c_d        <= d;
        c_stt_old  <= SO ? stt_old  : 32'd0;
        c_min_cur  <= SO ? min_cur  : 32'd0;
        c_min_prev <= SO ? min_prev : 32'd0;
        c_count    <= SO ? count    : 16'd0;
    end

    // ---- stage D: queueing delay, leading one of the gradient -------------------------------
    wire [31:0] qd_raw = c_stt - c_m;
    wire [31:0] qd     = qd_raw[31] ? 32'd0 : qd_raw;
    // position of the highest set bit among bits 30..0 (the gradient is positive when used):
    // a binary-search leading-one detector, five levels of OR and 2:1 muxes
    function [4:0] lead_one;
        input [30:0] v;
        reg [15:0] x16;
        reg [7:0]  x8;
        reg [3:0]  x4;
        reg [1:0]  x2;
        begin
            lead_one[4] = |v[30:16];
            x16 = lead_one[4] ? {1'b0, v[30:16]} : v[15:0];
            lead_one[3] = |x16[15:8];
            x8 = lead_one[3] ? x16[15:8] : x16[7:0];
            lead_one[2] = |x8[7:4];
            x4 = lead_one[2] ? x8[7:4] : x8[3:0];
            lead_one[1] = |x4[3:2];
            x2 = lead_one[1] ? x4[3:2] : x4[1:0];
            lead_one[0] = x2[1];
        end
    endfunction
    wire [4:0]  lead = lead_one(c_d[30:0]);
    reg        d_valid;
    reg [1:0]  d_event;
    reg [31:0] d_qd, d_d, d_stt_old, d_min_cur, d_min_prev;
    reg [15:0] d_count;
    reg [4:0]  d_lead;
    always @(posedge clk) begin
        if (rst) d_valid <= 1'b0; else d_valid <= c_valid;
        d_event    <= c_event;
        d_qd       <= qd;
        d_lead     <= lead;
        d_d        <= c_d;
        d_stt_old  <= c_stt_old;
        d_min_cur  <= c_min_cur;
        d_min_prev <= c_min_prev;
        d_count    <= c_count;
    end

    // ---- stage E: branch and decrease shift -------------------------------------------------
    wire       lt_low  = d_qd < cfg_t_low;
    wire       ge_high = !(d_qd < cfg_t_high);
    wire       d_pos   = !d_d[31] && (d_d != 32'd0);
    localparam [4:0] NS5 = NORM_SHIFT;
    wire [4:0] grad_sh = (d_lead >= NS5) ? 5'd1 : (NS5 - d_lead);
    wire [2:0] sample_branch = lt_low ? BR_LOW : ge_high ? BR_HIGH
                             : d_pos ? BR_GRAD_DEC : BR_GRAD_INC;
    wire [2:0] branch = (d_event == EV_SAMPLE)  ? sample_branch
                      : (d_event == EV_NACK)    ? BR_NACK
                      : (d_event == EV_TIMEOUT) ? BR_TIMEOUT : BR_NONE;
    reg        e_valid;
    reg [2:0]  e_branch;
    reg [4:0]  e_sh;
    reg [31:0] e_d, e_stt_old, e_min_cur, e_min_prev;
    reg [15:0] e_count;
    always @(posedge clk) begin
        if (rst) e_valid <= 1'b0; else e_valid <= d_valid && (d_event != 2'd3);
        e_branch   <= branch;
        e_sh       <= grad_sh;
        e_d        <= SO ? d_d : 32'd0;
        e_stt_old  <= d_stt_old;
        e_min_cur  <= d_min_cur;
        e_min_prev <= d_min_prev;
        e_count    <= d_count;
    end

    // ---- stage F: the rate (recurrence) -------------------------------------------------------
    reg  [31:0] rate;
    assign out_rate = rate; // updated at the edge that raises out_valid
    // The stored rate always lies in [rate_min, rate_max], so an increase can only reach the
    // maximum and a decrease only the minimum: each path clamps on its own side. The decrease
    // clamp compares the cut with (rate - rate_min), computed beside the barrel shifter, so the
    // loop holds one carry chain after the shifter instead of two.
    wire        is_inc   = (e_branch == BR_LOW) || (e_branch == BR_GRAD_INC);
    wire [31:0] inc      = (e_branch == BR_LOW) ? cfg_beta : cfg_wbeta;
    wire [32:0] sum      = {1'b0, rate} + {1'b0, inc};
    wire        over     = sum[32] || (sum[31:0] > cfg_rate_max);
    wire [31:0] inc_rate = over ? cfg_rate_max : sum[31:0];
    wire [31:0] cut      = (e_branch == BR_GRAD_DEC) ? (rate >> e_sh)
                         : (e_branch == BR_TIMEOUT)  ? (rate >> 1)
                         : (rate >> MD_SHIFT);
    wire [31:0] headroom = rate - cfg_rate_min;
    wire        under    = cut > headroom;
    wire [31:0] dec_rate = under ? cfg_rate_min : (rate - cut);
    wire [31:0] clamped  = is_inc ? inc_rate : dec_rate;
    always @(posedge clk) begin
        if (rst) begin
            rate      <= cfg_rate_init;
            out_valid <= 1'b0;
        end else begin
            out_valid <= e_valid;
            if (e_valid) rate <= clamped;
        end
        out_d        <= e_d;
        out_stt_old  <= e_stt_old;
        out_min_cur  <= e_min_cur;
        out_min_prev <= e_min_prev;
        out_count    <= e_count;
        out_branch   <= e_branch;
    end
endmodule

`default_nettype wire
