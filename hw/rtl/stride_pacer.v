// Token-bucket pacer: turns a rate into per-packet send permission with no division.
//
// The rate is stride-proto's unit, 2^-20 bytes per ns. The clock period is 2^CLK_NS_LOG2 ns
// (default 4 ns, 250 MHz), so every clock adds rate << CLK_NS_LOG2 to a signed credit counted in
// 2^-20 bytes, capped at BURST_BYTES (the bucket depth). A packet request (req_valid, req_len
// bytes) is granted (req_ready) in any cycle where the credit is not negative; the grant then
// subtracts req_len << 20, which may drive the credit negative: the next packet waits until it
// is repaid. Per cycle: one add, one compare, one subtract; latency 0 (req_ready is
// combinational from the credit register), one grant per clock at most.
`timescale 1ns / 1ps
`default_nettype none

module stride_pacer #(
    parameter integer CLK_NS_LOG2 = 2,
    parameter integer BURST_BYTES = 16384
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [31:0] rate,
    input  wire        req_valid,
    input  wire [15:0] req_len,
    output wire        req_ready,
    output wire [39:0] credit_out
);
    generate
        if (CLK_NS_LOG2 < 0 || CLK_NS_LOG2 > 4) begin : bad_clk
            parameter_CLK_NS_LOG2_must_be_0_to_4 error_instance();
        end
        if (BURST_BYTES < 1 || BURST_BYTES > 1048575) begin : bad_burst
            parameter_BURST_BYTES_must_be_1_to_2pow20 error_instance();
        end
    endgenerate

    localparam [39:0] CAP = 40'd1048576 * BURST_BYTES;   // BURST_BYTES << 20, 40 bits wide
    reg  signed [39:0] credit;
    wire signed [39:0] add    = $signed({4'd0, rate, 4'd0} >> (4 - CLK_NS_LOG2));
    wire signed [39:0] filled = credit + add;
    wire signed [39:0] capped = (filled > $signed(CAP)) ? $signed(CAP) : filled;
    wire signed [39:0] cost   = $signed({4'd0, req_len, 20'd0});
    assign req_ready  = req_valid && !credit[39];
    assign credit_out = credit;
    always @(posedge clk) begin
        if (rst) credit <= $signed(CAP);
        else     credit <= req_ready ? capped - cost : capped;
    end
endmodule

`default_nettype wire
