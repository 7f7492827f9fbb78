// Token-bucket pacer: turns a rate into per-packet send permission with no division.
//
// The rate is stride-proto's unit, 2^-20 bytes per ns. The clock period is 2^CLK_NS_LOG2 ns
// (default 4 ns, 250 MHz), so every clock adds rate << CLK_NS_LOG2 to a signed credit counted in
// 2^-20 bytes, capped at BURST_BYTES (the bucket depth). A packet request (req_valid, req_len
// bytes) is granted (req_ready) in any cycle where the credit is not negative; the grant then
// subtracts req_len << 20, which may drive the credit negative: the next packet waits until it
// is repaid. Latency 0 (req_ready is combinational from the credit register), one grant per
// clock at most. The rate is sampled into a register (rate << CLK_NS_LOG2 and CAP minus it), so
// a new rate takes effect one clock later. For timing (156.25 MHz on ECP5) each clock's update
// holds one carry chain: the two candidates (credit + add - charge, by a carry-save layer and one
// adder; CAP - charge) and the cap test (credit > CAP - add, i.e. credit + add > CAP) are computed
// side by side, charge = req_len << 20 on a grant and 0 otherwise, and a 2:1 mux picks.
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
    localparam [39:0] CAP1 = CAP + 40'd1;
    reg  signed [39:0] credit;
    wire        [39:0] add_in = {4'd0, rate, 4'd0} >> (4 - CLK_NS_LOG2);
    reg         [39:0] add;                                // rate << CLK_NS_LOG2, registered
    reg  signed [39:0] capm;                               // CAP - add, registered
    always @(posedge clk) begin
        add  <= add_in;
        capm <= $signed(CAP - add_in);
    end
    assign req_ready  = req_valid && !credit[39];
    assign credit_out = credit;
    // the charge of this clock: req_len << 20 on a grant, else 0; -c = ~c + 1 in both cases
    wire        [39:0] ncharge = ~(req_ready ? {4'd0, req_len, 20'd0} : 40'd0);
    // credit + add - charge: one carry-save layer, then one adder (the +1 in bit 0)
    wire        [39:0] csa_s = credit ^ add ^ ncharge;
    wire        [38:0] csa_c = (credit[38:0] & add[38:0]) | (credit[38:0] & ncharge[38:0]) |
                               (add[38:0] & ncharge[38:0]);
    wire signed [39:0] filled = $signed(csa_s + {csa_c, 1'b1});
    wire signed [39:0] capped = $signed(CAP1 + ncharge);   // CAP - charge
    wire               over   = credit > capm;                    // credit + add > CAP
    // (no constant on the data path but the reset value: the cap test stays off the flip-flops'
    // set/reset inputs, which are slower on ECP5)
    always @(posedge clk) begin
        if (rst) credit <= $signed(CAP);
        else     credit <= over ? capped : filled;
    end
endmodule

`default_nettype wire
