// Per-connection context table: DEPTH records of WIDTH bits, one registered read port and one
// write port (simple dual port), written so that Yosys, Vivado and Quartus infer block RAM
// (DP16KD on ECP5, RAMB18/36 on 7-series, M10K on Arria V) instead of flip-flops.
// Read-during-write of the same address returns the old record with OLD_ON_COLLISION = 1 (the
// default; Yosys then adds a bypass after the block RAM on ECP5); with 0 the user promises never
// to read the address being written in the same cycle (stride_rx_engine's ops do not overlap) and
// the result of such a read is undefined (no_rw_check: no bypass logic).
// No initial contents (Yosys maps Arria V M10K only without them): the engine clears every
// record after reset.
`timescale 1ns / 1ps
`default_nettype none

module stride_ctx_ram #(
    parameter integer DEPTH = 64,
    parameter integer AW = 6,
    parameter integer WIDTH = 256,
    parameter integer OLD_ON_COLLISION = 1
) (
    input  wire             clk,
    input  wire [AW-1:0]    rd_addr,
    output reg  [WIDTH-1:0] rd_data,
    input  wire             wr_en,
    input  wire [AW-1:0]    wr_addr,
    input  wire [WIDTH-1:0] wr_data
);
    generate
        if (DEPTH < 1 || DEPTH > (1 << AW)) begin : bad_depth
            parameter_DEPTH_must_be_1_to_2powAW error_instance();
        end
    endgenerate

    generate
        if (OLD_ON_COLLISION != 0) begin : old_data
            reg [WIDTH-1:0] mem [0:DEPTH-1];
            always @(posedge clk) begin
                if (wr_en) mem[wr_addr] <= wr_data;
                rd_data <= mem[rd_addr];
            end
        end else begin : no_collision
            // the user never reads the address being written: no bypass logic after the RAM
            (* no_rw_check *)
            reg [WIDTH-1:0] mem [0:DEPTH-1];
            always @(posedge clk) begin
                if (wr_en) mem[wr_addr] <= wr_data;
                rd_data <= mem[rd_addr];
            end
        end
    endgenerate
endmodule

`default_nettype wire
