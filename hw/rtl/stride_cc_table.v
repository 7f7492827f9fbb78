// STRIDE rate controller for N connection contexts: Algorithm 1 (docs/spec.md section 8) bit for
// bit as rtl/stride_cc.v computes it, with each context's controller state in a table (block RAM
// where the tools infer it) and one update core that serves one event at a time.
// Shifts, adds, subtracts, compares and a leading-one detector only: no multiply, divide or
// modulo operator (a test checks).
//
// Why one event at a time: the controller sees one event per ACK (one per 64 KB), per NACK and
// per timeout, about 20 k events per second at 10 Gbit/s, so an 11-cycle read-modify-write per
// event leaves a factor of thousands at 156.25 MHz. No pipeline overlap means no forwarding
// between events of one context and no read of a record while it is written.
//
// Interface
//   in_valid/in_ready : an event is taken in a cycle where both are high. in_ready is low during
//                       rst, during the initialization sweep after rst (N cycles) and while an
//                       event is in the core (the 10 cycles after the one it is taken in; it
//                       is high again in the cycle its result appears).
//   in_ctx            : the event's context, 0..N-1 (CW = max(1, clog2(N)) bits). Events of any
//                       contexts come in any order, each applied in order; two events of one
//                       context may follow each other directly. With N not a power of two an
//                       in_ctx >= N is taken and dropped (no result).
//   in_event          : 0 = STT sample (in_stt), 1 = NACK, 2 = retransmission timeout,
//                       3 = reset this context (a new connection: state as after rst, rate =
//                       cfg_rate_init, branch "none"; the engine sends it on connection install).
//   out_valid         : one pulse per event, 11 cycles after the cycle it was taken; out_ctx is
//                       its context, out_rate the context's rate after it, out_branch the branch
//                       (0 none, 1 low, 2 high, 3 grad_inc, 4 grad_dec, 5 nack, 6 timeout,
//                       7 nack_held), as stride_cc's out_branch.
//   cfg_*             : as stride_cc: runtime parameters shared by all contexts, stable from
//                       2 cycles before the first event on.
//   rst               : synchronous, one cycle or more. After it the core writes a fresh record
//                       into every context (the init sweep, N cycles, in_ready low), so every
//                       context reads as freshly reset.
//
// Record per context (178 bits): live (0: fresh, the rate reads as cfg_rate_init, so neither the
// sweep nor a reset event needs the configuration), init (a sample came since the reset), stt_old,
// min_cur, min_prev, d, count, rate.
//
// Phases of one event (ph[k], one at a time; each holds at most one carry chain and a few LUT
// levels): 1 read the record; 2 register it; 3 STT difference (clamped), sample below the current
// minimum, count + 1, the stored or initial rate; 4 gradient error, new minima and count; 5 new
// gradient, the windowed minimum; 6 queueing delay, leading one of each nibble of the gradient;
// 7 threshold compares, leading one; 8 branch, increase, limit, shift; 9 sum and saturation,
// cut = rate >> sh, headroom; 10 the new rate -> out_*; 11 write the record back (in_ready is high
// again: the next event reads the table after this write).
`timescale 1ns / 1ps
`default_nettype none

module stride_cc_table #(
    parameter integer N           = 64,
    parameter integer ALPHA_SHIFT = 3,
    parameter integer MD_SHIFT    = 3,
    parameter integer NORM_SHIFT  = 13,
    parameter integer NACK_GATE   = 1,
    // context index width (derived; do not set)
    parameter integer CW          = (N <= 2) ? 1 : $clog2(N)
) (
    input  wire          clk,
    input  wire          rst,
    // configuration
    input  wire [31:0]   cfg_beta,
    input  wire [31:0]   cfg_wbeta,
    input  wire [31:0]   cfg_t_low,
    input  wire [31:0]   cfg_t_high,
    input  wire [31:0]   cfg_rate_min,
    input  wire [31:0]   cfg_rate_max,
    input  wire [31:0]   cfg_rate_init,
    input  wire [15:0]   cfg_min_window,
    // events
    input  wire          in_valid,
    output wire          in_ready,
    input  wire [CW-1:0] in_ctx,
    input  wire [1:0]    in_event,
    input  wire [31:0]   in_stt,
    // results
    output reg           out_valid,
    output reg  [CW-1:0] out_ctx,
    output reg  [31:0]   out_rate,
    output reg  [2:0]    out_branch
);
    // ---- elaboration-time parameter checks (a missing module named after the problem) -------
    generate
        if (N < 1 || N > 1024) begin : bad_n
            parameter_N_must_be_1_to_1024 error_instance();
        end
        if (CW != ((N <= 2) ? 1 : $clog2(N))) begin : bad_cw
            parameter_CW_is_derived_from_N_do_not_set_it error_instance();
        end
        if (ALPHA_SHIFT < 0 || ALPHA_SHIFT > 15) begin : bad_alpha_shift
            parameter_ALPHA_SHIFT_must_be_0_to_15 error_instance();
        end
        if (MD_SHIFT < 1 || MD_SHIFT > 31) begin : bad_md_shift
            parameter_MD_SHIFT_must_be_1_to_31 error_instance();
        end
        if (NORM_SHIFT < 0 || NORM_SHIFT > 31) begin : bad_norm_shift
            parameter_NORM_SHIFT_must_be_0_to_31 error_instance();
        end
        if (NACK_GATE != 0 && NACK_GATE != 1) begin : bad_nack_gate
            parameter_NACK_GATE_must_be_0_or_1 error_instance();
        end
    endgenerate

    localparam [1:0] EV_SAMPLE = 2'd0, EV_NACK = 2'd1, EV_TIMEOUT = 2'd2, EV_RESET = 2'd3;
    localparam [2:0] BR_NONE = 3'd0, BR_LOW = 3'd1, BR_HIGH = 3'd2, BR_GRAD_INC = 3'd3,
                     BR_GRAD_DEC = 3'd4, BR_NACK = 3'd5, BR_TIMEOUT = 3'd6,
                     BR_NACK_HELD = 3'd7;
    localparam       GATE = (NACK_GATE == 1);
    localparam [4:0] NS5 = NORM_SHIFT[4:0];
    localparam [4:0] MD5 = MD_SHIFT[4:0];
    localparam integer RECW = 2 + 32 + 32 + 32 + 32 + 16 + 32; // 178

    // ---- configuration derived once (cfg_* are static while events are in flight) -----------
    reg [15:0] wm1;                     // the window rolls when count == min_window - 1
    reg [32:0] lim_beta, lim_wbeta;     // rate_max - increase, with its borrow
    always @(posedge clk) begin
        wm1       <= cfg_min_window - 16'd1;
        lim_beta  <= {1'b0, cfg_rate_max} - {1'b0, cfg_beta};
        lim_wbeta <= {1'b0, cfg_rate_max} - {1'b0, cfg_wbeta};
    end

    // ---- control: init sweep, phases ------------------------------------------------------
    reg          sweeping;
    reg [CW-1:0] sweep_ctx;
    reg [11:1]   ph;
    wire         busy = |ph[10:1];
    assign in_ready = !rst && !sweeping && !busy;
    wire         take = in_valid && in_ready;

    reg          q_ok;
    reg [CW-1:0] q_ctx;
    reg [1:0]    q_event;
    reg [31:0]   q_stt;
    /* verilator lint_off UNSIGNED */
    /* verilator lint_off CMPCONST */
    localparam [CW:0] NCTX = N[CW:0], LAST = N[CW:0] - 1'b1;
    wire         in_ok = ({1'b0, in_ctx} < NCTX); // constant true when N is a power of two
    /* verilator lint_on CMPCONST */
    /* verilator lint_on UNSIGNED */
    always @(posedge clk) begin
        if (rst) begin
            sweeping  <= 1'b1;
            sweep_ctx <= {CW{1'b0}};
            ph        <= 11'd0;
        end else begin
            if (sweeping) begin
                sweep_ctx <= sweep_ctx + 1'b1;
                if ({1'b0, sweep_ctx} == LAST) sweeping <= 1'b0;
            end
            ph <= {ph[10:1], take};
        end
        if (take) begin
            q_ok    <= in_ok;
            q_ctx   <= in_ctx;
            q_event <= in_event;
            q_stt   <= in_stt;
        end
    end
    wire q_sample = (q_event == EV_SAMPLE);
    wire q_nack   = (q_event == EV_NACK);
    wire q_tout   = (q_event == EV_TIMEOUT);
    wire q_reset  = (q_event == EV_RESET);

    // ---- the table ------------------------------------------------------------------------
    // Read in phase 1 (address q_ctx), written in phase 11 or by the sweep. A read never meets
    // the write of the same record in one cycle where its data is used (the next event reads
    // one cycle after the write), hence no collision logic (OLD_ON_COLLISION = 0).
    // A block RAM table (N > 16) has its own output register (stride_ctx_ram OUTREG, read
    // latency 2: on ECP5 the DP16KD's register, in place of a long route from the block RAM to
    // w_*): it is read one clock earlier, in the take cycle, from in_ctx (the address follows
    // in_ctx while no event runs, q_ctx while one does: one register selects), so that the
    // record still reaches w_* in phase 2. A take in phase 11 reads at the clock edge that
    // writes the previous event's record: for the same context that read returns nothing
    // defined, and w_* takes the record written instead (rec_out, or zero after a reset event:
    // n_* and out_rate change only from phase 4 of the new event on).
    wire [RECW-1:0] rd_data;
    wire [RECW-1:0] rec_out;
    // the write enable (sweeping || (ph[11] && q_ok)) and address (sweeping ? sweep_ctx : q_ctx)
    // as registers of their own, loaded with their next values (q_ok and q_ctx hold from the
    // take to phase 11; no take during the sweep): no LUT between a flip-flop and the table's
    // write port (cc's out_valid -> wr_en LUT -> fwd at N = 64, and ph[11] -> wr_en ->
    // the table's reset at N = 1, were critical)
    reg             wr_en;
    reg  [CW-1:0]   wr_addr;
    always @(posedge clk) begin
        wr_en <= rst || (sweeping && {1'b0, sweep_ctx} != LAST) || (ph[10] && q_ok);
        wr_addr <= rst ? {CW{1'b0}} : sweeping ? sweep_ctx + 1'b1 : q_ctx;
    end
    // zero write data (the sweep, a reset event) as a register of its own, loaded every clock
    // (timing: with one context the table is flip-flops and this decision their reset, so it
    // starts from one flip-flop, not from the decoder of q_event). Its value one clock late is
    // right wherever a write happens: q_event holds from the take to phase 11, and the sweep's
    // first cycle follows rst
    reg             wr_zero;
    always @(posedge clk) wr_zero <= rst || sweeping || q_reset;
    wire [RECW-1:0] wr_data = wr_zero ? {RECW{1'b0}} : rec_out;
    localparam integer BRAM = (N > 16) ? 1 : 0;
    wire [CW-1:0]   rd_addr;
    wire [RECW-1:0] rec_in;             // the record for w_*
    generate
        if (BRAM != 0) begin : early_read
            reg busy_r;                 // = busy, as a register (phases 1-10 of an event)
            reg fwd, fwd_zero;          // this event's read met the write of its record
            always @(posedge clk) begin
                busy_r <= !rst && (take || |ph[9:1]);
                if (take) begin
                    fwd <= wr_en && in_ctx == q_ctx;
                    fwd_zero <= wr_zero;
                end
            end
            assign rd_addr = busy_r ? q_ctx : in_ctx;
            assign rec_in = !fwd ? rd_data : fwd_zero ? {RECW{1'b0}} : rec_out;
        end else begin : late_read
            assign rd_addr = q_ctx;
            assign rec_in = rd_data;
        end
    endgenerate
`ifndef SYNTHESIS
    always @(posedge clk)
        if (!rst && (wr_en !== (sweeping || (ph[11] && q_ok)) ||
                     (wr_en && wr_addr !== (sweeping ? sweep_ctx : q_ctx)))) begin
            $display("stride_cc_table: the registered write port differs from its definition");
            $finish;
        end
`endif
    stride_ctx_ram #(.DEPTH(N), .AW(CW), .WIDTH(RECW), .OLD_ON_COLLISION(0),
                     .OUTREG(BRAM)) table_ram (
        .clk(clk), .rd_addr(rd_addr), .rd_data(rd_data),
        .wr_en(wr_en), .wr_addr(wr_addr), .wr_data(wr_data)
    );

    // ---- phase 2: the record, registered ---------------------------------------------------
    reg        w_live, w_init;
    reg [31:0] w_stt_old, w_min_cur, w_min_prev, w_d, w_rate;
    reg [15:0] w_count;
    always @(posedge clk) begin
        if (ph[2])
            {w_live, w_init, w_stt_old, w_min_cur, w_min_prev, w_d, w_count, w_rate} <= rec_in;
    end

    // ---- phase 3: STT difference, below the current minimum, count + 1, the rate ------------
    wire [31:0] raw_diff = q_stt - w_stt_old;
    wire [31:0] below    = q_stt - w_min_cur;
    reg  [31:0] r_diff, r_rate;
    reg  [15:0] r_count1;
    reg         r_take, r_roll;
    always @(posedge clk) begin
        if (ph[3]) begin
            // clamp to [-2^30, 2^30-1]; 0 before the first sample
            r_diff   <= !w_init ? 32'd0
                      : (raw_diff[31] == raw_diff[30]) ? raw_diff
                      : (raw_diff[31] ? 32'hC000_0000 : 32'h3FFF_FFFF);
            r_take   <= below[31] || !w_init;
            r_roll   <= (w_count == wm1);
            r_count1 <= w_count + 16'd1;
            r_rate   <= w_live ? w_rate : cfg_rate_init;
        end
    end

    // ---- phase 4: gradient error, new minima, count, previous sample --------------------------
    // NACK and timeout leave this state as it is; a reset event writes a fresh record instead.
    wire [31:0] mcur1 = r_take ? q_stt : w_min_cur;
    wire [31:0] mprv1 = !w_init ? q_stt : w_min_prev;
    reg  [31:0] n_e, n_mcur, n_mprev, n_stt_old;
    reg  [15:0] n_count;
    reg         n_init;
    always @(posedge clk) begin
        if (ph[4]) begin
            n_e       <= q_sample ? (r_diff - w_d) : 32'd0;
            n_mcur    <= !q_sample ? w_min_cur : r_roll ? q_stt : mcur1;
            n_mprev   <= !q_sample ? w_min_prev : r_roll ? mcur1 : mprv1;
            n_count   <= !q_sample ? w_count : r_roll ? 16'd0 : r_count1;
            n_stt_old <= q_sample ? q_stt : w_stt_old;
            n_init    <= w_init || q_sample;
        end
    end

    // ---- phase 5: new gradient, the windowed minimum ---------------------------------------
    wire [31:0] e_shr          = $signed(n_e) >>> ALPHA_SHIFT;
    wire [31:0] prev_minus_cur = n_mprev - n_mcur;
    reg  [31:0] n_d, r_m, r_stt;
    always @(posedge clk) begin
        if (ph[5]) begin
            n_d   <= w_d + e_shr;
            r_m   <= prev_minus_cur[31] ? n_mprev : n_mcur;
            // a gated NACK measures the queueing delay of the context's last sample
            r_stt <= (GATE && q_nack) ? w_stt_old : q_stt;
        end
    end

    // ---- phase 6: queueing delay; sign of d and leading one of each nibble -----------------
    wire [31:0] qd_raw = r_stt - r_m;
    wire [7:0]  nib_nz;
    wire [15:0] nib_lead;
    genvar      k;
    generate
        for (k = 0; k < 8; k = k + 1) begin : nibble
            wire [3:0] n = (k == 7) ? {1'b0, n_d[30:28]} : n_d[(k << 2) +: 4];
            assign nib_nz[k] = |n;
            assign nib_lead[(k << 1) +: 2] = n[3] ? 2'd3 : n[2] ? 2'd2 : n[1] ? 2'd1 : 2'd0;
        end
    endgenerate
    reg  [31:0] r_qd;
    reg  [7:0]  r_nib_nz;
    reg  [15:0] r_nib_pos;
    reg         r_pos;
    always @(posedge clk) begin
        if (ph[6]) begin
            r_qd      <= qd_raw[31] ? 32'd0 : qd_raw;
            r_nib_nz  <= nib_nz;
            r_nib_pos <= nib_lead;
            r_pos     <= !n_d[31] && (n_d != 32'd0);
        end
    end

    // ---- phase 7: threshold compares, leading one of d -------------------------------------
    function [2:0] lead_nibble;
        input [7:0] nz;
        integer j;
        begin
            lead_nibble = 3'd0;
            for (j = 1; j < 8; j = j + 1)
                if (nz[j]) lead_nibble = j[2:0];
        end
    endfunction
    wire [2:0]  lnib    = lead_nibble(r_nib_nz);
    wire [32:0] qd_low  = {1'b0, r_qd} - {1'b0, cfg_t_low};
    wire [32:0] qd_high = {1'b0, r_qd} - {1'b0, cfg_t_high};
    reg         r_lt_low, r_ge_high;
    reg  [4:0]  r_lead;
    always @(posedge clk) begin
        if (ph[7]) begin
            r_lt_low  <= qd_low[32];
            r_ge_high <= !qd_high[32];
            r_lead    <= {lnib, r_nib_pos[{lnib, 1'b0} +: 2]};
        end
    end

    // ---- phase 8: the branch and the operands of the rate update ---------------------------
    /* verilator lint_off UNSIGNED */
    wire [4:0]  grad_sh = (r_lead >= NS5) ? 5'd1 : (NS5 - r_lead);
    /* verilator lint_on UNSIGNED */
    wire        f_low   = q_sample && r_lt_low;
    wire        f_high  = q_sample && !r_lt_low && r_ge_high;
    wire        f_ginc  = q_sample && !r_lt_low && !r_ge_high && !r_pos;
    wire        f_gdec  = q_sample && !r_lt_low && !r_ge_high && r_pos;
    wire        f_held  = q_nack && GATE && n_init && r_lt_low;
    wire        f_cutn  = q_nack && !f_held;
    wire        f_dec   = f_high || f_gdec || f_cutn || q_tout;
    wire [32:0] f_lim   = f_low ? lim_beta : f_ginc ? lim_wbeta : {1'b0, cfg_rate_max};
    reg         g_force, g_dec;
    reg  [2:0]  g_branch;
    reg  [4:0]  g_sh;
    reg  [31:0] g_inc, g_lim, g_k;
    always @(posedge clk) begin
        if (ph[8]) begin
            g_inc    <= f_low ? cfg_beta : f_ginc ? cfg_wbeta : 32'd0;
            g_lim    <= f_lim[31:0];
            g_force  <= f_dec || f_lim[32];
            g_dec    <= f_dec;
            g_k      <= f_dec ? cfg_rate_min : cfg_rate_max;
            g_sh     <= f_gdec ? grad_sh : q_tout ? 5'd1 : MD5;
            g_branch <= q_reset ? BR_NONE : f_low ? BR_LOW : f_high ? BR_HIGH
                      : f_ginc ? BR_GRAD_INC : f_gdec ? BR_GRAD_DEC : f_cutn ? BR_NACK
                      : f_held ? BR_NACK_HELD : q_tout ? BR_TIMEOUT : BR_NONE;
        end
    end

    // ---- phase 9: sum and saturation, the cut, the headroom --------------------------------
    // A = (over || force) ? k : rate + inc, over meaning rate + inc > rate_max (one 33-bit
    // compare with force as its top bit); the rate then is (!dec || under) ? A : rate - cut.
    wire [31:0] sum    = r_rate + g_inc;
    wire        take_k = {g_force, r_rate} > {1'b0, g_lim};
    reg  [31:0] h_a, h_cut, h_head;
    always @(posedge clk) begin
        if (ph[9]) begin
            h_a    <= take_k ? g_k : sum;
            h_cut  <= r_rate >> g_sh;
            h_head <= r_rate - cfg_rate_min;
        end
    end

    // ---- phase 10: the new rate and the result ---------------------------------------------
    wire        under     = h_cut > h_head;
    wire [31:0] rate_next = (!g_dec || under) ? h_a : (r_rate - h_cut);
    always @(posedge clk) begin
        if (rst) out_valid <= 1'b0;
        else     out_valid <= ph[10] && q_ok;
        if (ph[10]) begin
            out_ctx    <= q_ctx;
            out_rate   <= q_reset ? cfg_rate_init : rate_next;
            out_branch <= g_branch;
        end
    end

    // ---- phase 11: the record written back (out_rate holds the new rate) --------------------
    assign rec_out = {1'b1, n_init, n_stt_old, n_mcur, n_mprev, n_d, n_count, out_rate};
endmodule

`default_nettype wire
