// TIMELY-style rate controller (Mittal et al., SIGCOMM 2015, Algorithm 1) with real multiplies
// and divides: the comparison point of the STRIDE paper's "Lesson 1". Same event interface as
// stride_cc (in_event 0 = RTT sample in in_stt, 1 = NACK, 2 = timeout); one update per clock,
// combinational update into registers, so its cost shows directly in the synthesis report.
// Fixed point: Q16 for gains and the normalised gradient.
//   diff     = rtt - prev_rtt
//   rtt_diff = ((65536 - alpha) * rtt_diff + alpha * diff) >>> 16
//   g        = (rtt_diff << 16) / min_rtt                        (Q16)
//   rtt < t_low  : r = r + delta
//   rtt > t_high : r = r - r * beta * (1 - t_high / rtt)         (Q16 factors)
//   g <= 0       : r = r + n * delta
//   else         : r = r - r * min(1, beta * g)                  (Q16)
//   NACK/timeout : r = r / 2
`timescale 1ns / 1ps
`default_nettype none

module timely_cc (
    input  wire        clk,
    input  wire        rst,
    input  wire [16:0] cfg_alpha_q16,
    input  wire [16:0] cfg_beta_q16,
    input  wire [31:0] cfg_delta,
    input  wire [7:0]  cfg_n,
    input  wire [31:0] cfg_t_low,
    input  wire [31:0] cfg_t_high,
    input  wire [31:0] cfg_min_rtt,
    input  wire [31:0] cfg_rate_min,
    input  wire [31:0] cfg_rate_max,
    input  wire [31:0] cfg_rate_init,
    input  wire        in_valid,
    output wire        in_ready,
    input  wire [1:0]  in_event,
    input  wire [31:0] in_stt,
    output reg         out_valid,
    output reg  [31:0] out_rate
);
    assign in_ready = 1'b1;
    reg  [31:0] rate, prev_rtt;
    reg  signed [31:0] rtt_diff;
    reg         init;

    wire signed [32:0] diff     = $signed({1'b0, in_stt}) - $signed({1'b0, init ? prev_rtt : in_stt});
    wire signed [17:0] alpha    = $signed({1'b0, cfg_alpha_q16});
    wire signed [17:0] one_m_a  = $signed(18'd65536) - alpha;
    wire signed [63:0] ewma     = (one_m_a * rtt_diff + alpha * diff) >>> 16;
    wire signed [31:0] rd_next  = ewma[31:0];
    wire signed [47:0] g_q16    = ($signed({rd_next, 16'd0})) / $signed({1'b0, cfg_min_rtt});
    wire        [47:0] th_q16   = ({cfg_t_high, 16'd0}) / (in_stt | 32'd1);
    wire        [47:0] hi_fact  = (cfg_beta_q16 * (48'd65536 - (th_q16 > 48'd65536 ? 48'd65536 : th_q16))) >> 16;
    wire        [63:0] bg       = cfg_beta_q16 * g_q16[31:0];
    wire        [47:0] bg_q16   = (g_q16 > 48'sd65535) || (bg[63:16] > 64'd65536) ? 48'd65536 : bg[63:16];
    wire        [63:0] cut_hi   = (rate * hi_fact) >> 16;
    wire        [63:0] cut_g    = (rate * bg_q16) >> 16;
    wire        [39:0] add_n    = cfg_n * cfg_delta;

    reg [39:0] next;
    always @(*) begin
        if (in_event != 2'd0)               next = {8'd0, rate >> 1};
        else if (in_stt < cfg_t_low)        next = {8'd0, rate} + cfg_delta;
        else if (in_stt > cfg_t_high)       next = {8'd0, rate} - cut_hi[39:0];
        else if (rd_next <= 0)              next = {8'd0, rate} + add_n;
        else                                next = {8'd0, rate} - cut_g[39:0];
    end
    wire [31:0] clamped = (next < cfg_rate_min) ? cfg_rate_min
                        : (next > cfg_rate_max) ? cfg_rate_max : next[31:0];

    always @(posedge clk) begin
        if (rst) begin
            rate <= cfg_rate_init; prev_rtt <= 32'd0; rtt_diff <= 32'sd0; init <= 1'b0;
            out_valid <= 1'b0;
        end else begin
            out_valid <= in_valid;
            if (in_valid) begin
                rate <= clamped;
                if (in_event == 2'd0) begin
                    prev_rtt <= in_stt; rtt_diff <= rd_next; init <= 1'b1;
                end
            end
        end
        out_rate <= clamped;
    end
endmodule

`default_nettype wire
