// First-word-fall-through FIFO: 2^DEPTH_LOG2 entries in an array written like a RAM (one
// registered read port, so Yosys may map it to block RAM for deep queues), plus an output
// register: `out_valid`/`out_data` show the head, `pop` takes it (only while out_valid).
// `push` while `full` is ignored and counted by the user (`full` is exact). Entries: 2^DEPTH_LOG2
// in the array + 1 in the output register. NO_FULL_CHECK = 1: the user never pushes while
// `full` (a credit count upstream, e.g. the sender's payload queue), so `push` is taken as is:
// no loop from `full` through the write enable back to the fill counter (on ECP5 the queue's
// two ends were placed 48 columns apart); simulation stops on a push while full.
// `full_next` is the value `full` takes at the next clock, for a user that keeps a copy of `full`
// in a register of its own (placed with that user's logic rather than with the queue).
`timescale 1ns / 1ps
`default_nettype none

module stride_fifo #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH_LOG2 = 2,
    parameter integer NO_FULL_CHECK = 0
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             push,
    input  wire [WIDTH-1:0] in_data,
    output wire             full,
    output wire             full_next,
    input  wire             pop,
    output reg              out_valid,
    output reg  [WIDTH-1:0] out_data
);
    generate
        if (WIDTH < 1) begin : bad_width
            parameter_WIDTH_must_be_positive error_instance();
        end
        if (DEPTH_LOG2 < 1 || DEPTH_LOG2 > 16) begin : bad_depth
            parameter_DEPTH_LOG2_must_be_1_to_16 error_instance();
        end
    endgenerate

    localparam integer D = 1 << DEPTH_LOG2;
    // the array never reads the entry being written: a read (load) needs an entry in the array,
    // a write (do_push) a free one, so both name the same entry only when the array is full,
    // and then nothing is written; no bypass logic after a block RAM
    (* no_rw_check *)
    reg [WIDTH-1:0] mem [0:D-1];
    reg [DEPTH_LOG2-1:0] wp, rp;       // wrap at D (the fill level is `used`)
    // the array's fill level as a counter, and its empty flag as a register of its own: `full`
    // (the counter's top bit, set only at D) and `load` start from flip-flops, not from a
    // subtraction of the pointers (users test `full` in their first logic level)
    reg [DEPTH_LOG2:0] used;
    reg mem_empty;
    assign full = used[DEPTH_LOG2];
    wire do_push = (NO_FULL_CHECK != 0) ? push : push && !full;
`ifndef SYNTHESIS
    always @(posedge clk)
        if (NO_FULL_CHECK != 0 && !rst && push && full) begin
            $display("stride_fifo %m: push while full (NO_FULL_CHECK = 1)");
            $finish;
        end
`endif
    wire load = !mem_empty && (!out_valid || pop);
    localparam integer D_LESS1_I = D - 1;
    localparam [DEPTH_LOG2:0] D_LESS1 = D_LESS1_I[DEPTH_LOG2:0];
    assign full_next = rst ? 1'b0 : (do_push && !load) ? used == D_LESS1 :
                       (load && !do_push) ? 1'b0 : full;

    always @(posedge clk) begin
        if (do_push) mem[wp] <= in_data;
        if (load) out_data <= mem[rp];
        if (rst) begin
            wp <= 0; rp <= 0; out_valid <= 1'b0; used <= 0; mem_empty <= 1'b1;
        end else begin
            if (do_push) wp <= wp + 1'b1;
            if (load) rp <= rp + 1'b1;
            if (do_push && !load) begin
                used <= used + 1'b1; mem_empty <= 1'b0;
            end else if (load && !do_push) begin
                used <= used - 1'b1;
                mem_empty <= used == {{DEPTH_LOG2{1'b0}}, 1'b1};
            end
            if (load) out_valid <= 1'b1;
            else if (pop) out_valid <= 1'b0;
        end
    end
endmodule

`default_nettype wire
