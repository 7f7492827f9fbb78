// Per-connection context table: DEPTH records of WIDTH bits, one registered read port and one
// write port (simple dual port), written so that Yosys, Vivado and Quartus infer block RAM
// (DP16KD on ECP5, RAMB18/36 on 7-series, M10K on Arria V) instead of flip-flops.
// Read-during-write of the same address returns the old record with OLD_ON_COLLISION = 1 (the
// default; Yosys then adds a bypass after the block RAM on ECP5); with 0 the user promises never
// to read the address being written in the same cycle (stride_rx_engine's ops do not overlap) and
// the result of such a read is undefined (no_rw_check: no bypass logic).
// OUTREG = 1 adds a second register after the read (read latency 2: rd_data is the record of the
// address presented two clocks before, loaded every clock). Yosys 0.23 does not put such a
// register into the ECP5 block RAM's own output register, and a fabric register fed by a DP16KD
// is placed far from it (the block RAM's clock-to-out is slow and its pins are at the die's
// block RAM rows). With STRIDE_ECP5_PRIMS defined (hw/syn/synth.sh, ECP5 target only), a table
// deeper than 16 records and declared collision-free is therefore built from DP16KD instances
// with REGMODE "OUTREG", tiled over the width (the narrowest data width that holds DEPTH
// records in one block: 512 x 36 up to 16384 x 1, so no multiplexer follows the blocks);
// everywhere else (simulation, Xilinx, Arria V, small or colliding tables) the second register
// is behavioural, with the same cycle behaviour.
// No initial contents (Yosys maps Arria V M10K only without them): the engine clears every
// record after reset.
`timescale 1ns / 1ps
`default_nettype none

module stride_ctx_ram #(
    parameter integer DEPTH = 64,
    parameter integer AW = 6,
    parameter integer WIDTH = 256,
    parameter integer OLD_ON_COLLISION = 1,
    parameter integer OUTREG = 0
) (
    input  wire             clk,
    input  wire [AW-1:0]    rd_addr,
    output wire [WIDTH-1:0] rd_data,
    input  wire             wr_en,
    input  wire [AW-1:0]    wr_addr,
    input  wire [WIDTH-1:0] wr_data
);
    generate
        if (DEPTH < 1 || DEPTH > (1 << AW)) begin : bad_depth
            parameter_DEPTH_must_be_1_to_2powAW error_instance();
        end
        if (OUTREG != 0 && OUTREG != 1) begin : bad_outreg
            parameter_OUTREG_must_be_0_or_1 error_instance();
        end
    endgenerate

`ifdef STRIDE_ECP5_PRIMS
    localparam integer PRIMS = (OUTREG == 1 && OLD_ON_COLLISION == 0 && DEPTH > 16 &&
                                DEPTH <= 16384) ? 1 : 0;
`else
    localparam integer PRIMS = 0;
`endif

    generate
        if (PRIMS != 0) begin : ecp5_outreg
`ifdef STRIDE_ECP5_PRIMS
            // one block: 2^(14 - SH) records of BW bits; the record index sits in the address
            // bits above SH (DP16KD's address is in bits for every data width)
            localparam integer BW = DEPTH <= 512 ? 36 : DEPTH <= 1024 ? 18 : DEPTH <= 2048 ? 9 :
                                    DEPTH <= 4096 ? 4 : DEPTH <= 8192 ? 2 : 1;
            localparam integer SH = BW == 36 ? 5 : BW == 18 ? 4 : BW == 9 ? 3 : BW == 4 ? 2 :
                                    BW == 2 ? 1 : 0;
            localparam integer NB = (WIDTH + BW - 1) / BW;
            wire [13:0] ra0 = rd_addr, wa0 = wr_addr;        // zero-extended
            wire [13:0] ra = ra0 << SH, wa = wa0 << SH;
            wire [NB*BW-1:0] wd = wr_data;
            wire [NB*BW-1:0] q;
            genvar b;
            for (b = 0; b < NB; b = b + 1) begin : blk
                stride_ecp5_dp16kd_outreg #(.BW(BW)) ram (
                    .clk(clk), .rd_addr(ra), .wr_addr(wa), .wr_en(wr_en),
                    .wr_data(wd[b * BW +: BW]), .rd_data(q[b * BW +: BW]));
            end
            assign rd_data = q[WIDTH-1:0];
`endif
        end else begin : behavioural
            reg [WIDTH-1:0] q1;
            if (OLD_ON_COLLISION != 0) begin : old_data
                reg [WIDTH-1:0] mem [0:DEPTH-1];
                always @(posedge clk) begin
                    if (wr_en) mem[wr_addr] <= wr_data;
                    q1 <= mem[rd_addr];
                end
            end else begin : no_collision
                // the user never reads the address being written: no bypass logic after the RAM
                (* no_rw_check *)
                reg [WIDTH-1:0] mem [0:DEPTH-1];
                always @(posedge clk) begin
                    if (wr_en) mem[wr_addr] <= wr_data;
                    q1 <= mem[rd_addr];
                end
            end
            if (OUTREG != 0) begin : out_reg
                reg [WIDTH-1:0] q2;
                always @(posedge clk) q2 <= q1;
                assign rd_data = q2;
            end else begin : no_out_reg
                assign rd_data = q1;
            end
        end
    endgenerate
endmodule

`ifdef STRIDE_ECP5_PRIMS
// One ECP5 DP16KD as a simple dual-port RAM (port A writes, port B reads) with the output
// register on (REGMODE "OUTREG": read latency 2), for BW = 36 (512 x 36, both ports' data pins
// form the word as in Yosys's own mapping, byte enables on ADA3..0), 18 (1024 x 18, byte enables
// on ADA1..0), 9, 4, 2 or 1. rd_addr/wr_addr are the block's 14-bit bit addresses (the record
// index shifted up by the data width's address bits); their low bits must be 0.
module stride_ecp5_dp16kd_outreg #(
    parameter integer BW = 36
) (
    input  wire          clk,
    input  wire [13:0]   rd_addr,
    input  wire [13:0]   wr_addr,
    input  wire          wr_en,
    input  wire [BW-1:0] wr_data,
    output wire [BW-1:0] rd_data
);
    wire [35:0] d = wr_data;                            // zero-extended
    wire [17:0] dia = d[17:0];
    wire [17:0] dib = BW == 36 ? d[35:18] : 18'd0;
    // byte enables in the low address bits of the write port at widths 36 and 18
    wire [13:0] ada = BW == 36 ? {wr_addr[13:4], {4{wr_en}}} :
                      BW == 18 ? {wr_addr[13:2], {2{wr_en}}} : wr_addr;
    wire [13:0] adb = rd_addr;
    wire        wea = BW == 36 ? 1'b1 : wr_en;
    wire [17:0] doa, dob;
    wire [35:0] q = BW == 36 ? {dob, doa} : {18'd0, dob};
    assign rd_data = q[BW-1:0];
    DP16KD #(
        .DATA_WIDTH_A(BW), .DATA_WIDTH_B(BW),
        .REGMODE_A("OUTREG"), .REGMODE_B("OUTREG"),
        .RESETMODE("SYNC"), .ASYNC_RESET_RELEASE("SYNC"),
        .CSDECODE_A("0b000"), .CSDECODE_B("0b000"),
        .WRITEMODE_A("NORMAL"), .WRITEMODE_B("NORMAL"),
        .CLKAMUX("CLKA"), .CLKBMUX("CLKB"), .GSR("DISABLED")
    ) ram (
        .CLKA(clk), .CEA(1'b1), .OCEA(1'b1), .WEA(wea), .RSTA(1'b0),
        .CSA2(1'b0), .CSA1(1'b0), .CSA0(1'b0),
        .ADA13(ada[13]), .ADA12(ada[12]), .ADA11(ada[11]), .ADA10(ada[10]), .ADA9(ada[9]),
        .ADA8(ada[8]), .ADA7(ada[7]), .ADA6(ada[6]), .ADA5(ada[5]), .ADA4(ada[4]),
        .ADA3(ada[3]), .ADA2(ada[2]), .ADA1(ada[1]), .ADA0(ada[0]),
        .DIA17(dia[17]), .DIA16(dia[16]), .DIA15(dia[15]), .DIA14(dia[14]), .DIA13(dia[13]),
        .DIA12(dia[12]), .DIA11(dia[11]), .DIA10(dia[10]), .DIA9(dia[9]), .DIA8(dia[8]),
        .DIA7(dia[7]), .DIA6(dia[6]), .DIA5(dia[5]), .DIA4(dia[4]), .DIA3(dia[3]),
        .DIA2(dia[2]), .DIA1(dia[1]), .DIA0(dia[0]),
        .DOA17(doa[17]), .DOA16(doa[16]), .DOA15(doa[15]), .DOA14(doa[14]), .DOA13(doa[13]),
        .DOA12(doa[12]), .DOA11(doa[11]), .DOA10(doa[10]), .DOA9(doa[9]), .DOA8(doa[8]),
        .DOA7(doa[7]), .DOA6(doa[6]), .DOA5(doa[5]), .DOA4(doa[4]), .DOA3(doa[3]),
        .DOA2(doa[2]), .DOA1(doa[1]), .DOA0(doa[0]),
        .CLKB(clk), .CEB(1'b1), .OCEB(1'b1), .WEB(1'b0), .RSTB(1'b0),
        .CSB2(1'b0), .CSB1(1'b0), .CSB0(1'b0),
        .ADB13(adb[13]), .ADB12(adb[12]), .ADB11(adb[11]), .ADB10(adb[10]), .ADB9(adb[9]),
        .ADB8(adb[8]), .ADB7(adb[7]), .ADB6(adb[6]), .ADB5(adb[5]), .ADB4(adb[4]),
        .ADB3(adb[3]), .ADB2(adb[2]), .ADB1(adb[1]), .ADB0(adb[0]),
        .DIB17(dib[17]), .DIB16(dib[16]), .DIB15(dib[15]), .DIB14(dib[14]), .DIB13(dib[13]),
        .DIB12(dib[12]), .DIB11(dib[11]), .DIB10(dib[10]), .DIB9(dib[9]), .DIB8(dib[8]),
        .DIB7(dib[7]), .DIB6(dib[6]), .DIB5(dib[5]), .DIB4(dib[4]), .DIB3(dib[3]),
        .DIB2(dib[2]), .DIB1(dib[1]), .DIB0(dib[0]),
        .DOB17(dob[17]), .DOB16(dob[16]), .DOB15(dob[15]), .DOB14(dob[14]), .DOB13(dob[13]),
        .DOB12(dob[12]), .DOB11(dob[11]), .DOB10(dob[10]), .DOB9(dob[9]), .DOB8(dob[8]),
        .DOB7(dob[7]), .DOB6(dob[6]), .DOB5(dob[5]), .DOB4(dob[4]), .DOB3(dob[3]),
        .DOB2(dob[2]), .DOB1(dob[1]), .DOB0(dob[0])
    );
endmodule
`endif

`default_nettype wire
