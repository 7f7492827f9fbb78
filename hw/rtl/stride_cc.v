// STRIDE rate controller: Algorithm 1 of the STRIDE paper exactly as stride-proto's cc::Stride
// implements it (docs/spec.md section 8), bit for bit. Shifts, adds, subtracts, compares and a
// leading-one detector only: this file contains no multiply, divide or modulo operator (a test
// checks it).
//
// Contexts (C-slow interleaving)
//   The core holds CONTEXTS independent controllers (one per connection) and serves them in a
//   fixed rotation, one context per clock. Each of the two recurrences (stage B: gradient,
//   windowed minimum, window count, previous sample; stage F: the rate) spans CONTEXTS register
//   stages, and each context's state circulates through those registers. With CONTEXTS = 2 each
//   loop has two cycles for one update, so every loop stage holds one carry chain and a level or
//   two of LUTs; the core still accepts one event per clock, each context one event every
//   CONTEXTS clocks. CONTEXTS = 1 is the single-controller core (both loops close in one cycle,
//   lower Fmax). Other values stop elaboration.
//
// Interface
//   in_slot           : the context whose turn it is this cycle (counts 0, 1, 0, 1, ... from
//                       reset with CONTEXTS = 2; always 0 with CONTEXTS = 1).
//   in_valid/in_ready : in_ready = (in_ctx == in_slot). An event is accepted in a cycle where
//                       in_valid && in_ready; a driver either presents the event of context
//                       in_slot every cycle (one event per clock) or holds its event until its
//                       slot comes (at most CONTEXTS - 1 cycles). The pipeline never stalls.
//   in_ctx            : context of the event (1 bit: CONTEXTS is 1 or 2).
//   in_event          : 0 = STT sample (in_stt), 1 = NACK, 2 = retransmission timeout,
//                       3 = reset this context (a new connection: state as after rst, rate =
//                       cfg_rate_init, branch "none"); the other contexts are untouched.
//   out_valid/out_ctx : out_valid pulses LATENCY cycles after an event was accepted; out_ctx is
//                       the event's context, out_rate and out_* the controller state of that
//                       context after that event (for checking against vectors/cc/).
//   cfg_*             : runtime parameters (registers in a NIC), shared by all contexts (as
//                       stride-proto shares one StrideParams among an endpoint's connections);
//                       they must be stable from 2 cycles before the first event on.
//   rst               : synchronous, held for at least 3 cycles; puts every context in the
//                       initial state with rate = cfg_rate_init.
//   ALPHA_SHIFT, MD_SHIFT, NORM_SHIFT: synthesis-time shift amounts (ALPHA_SHIFT is wiring;
//                       MD_SHIFT and the gradient's shift are selected before the rate loop and
//                       feed its one barrel shifter).
//   TW, RW            : datapath widths, default 32 and 32 (the spec's arithmetic). TW bits for
//                       times (in_stt, the minima, the gradient, cfg_t_*; a multiple of 4 from
//                       8 to 32), RW bits for rates (the rate, cfg_beta/wbeta/rate_*; 8 to 32).
//                       Narrower, the STT difference is clamped to +-2^(TW-2) (the spec's
//                       +-2^30 at 32) and every value must fit its width; where they do, the
//                       results equal the 32-bit core's.
//   NACK_GATE         : 1 (default, as stride-proto's default profile): a NACK cuts only when
//                       the context's last sample showed a queueing delay of at least
//                       cfg_t_low (or no sample came yet); otherwise the rate is kept and the
//                       branch is "nack_held" (7). 0: every NACK cuts (the paper, §8.4).
//
// Timing: LATENCY = 6 + 2 * CONTEXTS cycles from the cycle an event is accepted to the cycle
// its out_valid is high (10 with CONTEXTS = 2, 8 with CONTEXTS = 1); initiation interval 1
// event per clock for the core, CONTEXTS clocks for one context, for any event sequence; no
// stall, no forwarding. Stages: A input registers; P the clamped STT difference (reads the
// context's previous sample where stage B1 has just left it); B1/B2 the state recurrences;
// C which window holds the minimum, leading one of each nibble of d; D queueing delay, leading
// one of d; E threshold compares and branch; G the operands of the rate update (everything
// that does not depend on the rate); F1/F2 the rate recurrence.
`timescale 1ns / 1ps
`default_nettype none

module stride_cc #(
    parameter integer ALPHA_SHIFT = 3,
    parameter integer MD_SHIFT    = 3,
    parameter integer NORM_SHIFT  = 13,
    // 1: out_d/out_stt_old/out_min_cur/out_min_prev/out_count carry the state after each event
    // (for the bit-exact tests); 0: they are tied to 0 and the pipeline carries only what the
    // rate needs (what a NIC would synthesize; the resource report uses 0).
    parameter integer STATE_OUT   = 1,
    // connection contexts interleaved cycle by cycle (1 or 2), see the header
    parameter integer CONTEXTS    = 2,
    // the NACK gate of spec §8.6 (0 or 1), see the header
    parameter integer NACK_GATE   = 1,
    // datapath widths: TW bits for times (STT, minima, gradient, thresholds; a multiple of 4,
    // 8 to 32), RW bits for rates (rate, steps, bounds; 8 to 32); see the header
    parameter integer TW          = 32,
    parameter integer RW          = 32
) (
    input  wire        clk,
    input  wire        rst,
    // configuration
    input  wire [RW-1:0] cfg_beta,
    input  wire [RW-1:0] cfg_wbeta,
    input  wire [TW-1:0] cfg_t_low,
    input  wire [TW-1:0] cfg_t_high,
    input  wire [RW-1:0] cfg_rate_min,
    input  wire [RW-1:0] cfg_rate_max,
    input  wire [RW-1:0] cfg_rate_init,
    input  wire [15:0] cfg_min_window,
    // events
    output wire        in_slot,
    input  wire        in_valid,
    output wire        in_ready,
    input  wire        in_ctx,
    input  wire [1:0]  in_event,
    input  wire [TW-1:0] in_stt,
    // result
    output reg         out_valid,
    output reg         out_ctx,
    output wire [RW-1:0] out_rate,
    output reg  [TW-1:0] out_d,
    output reg  [TW-1:0] out_stt_old,
    output reg  [TW-1:0] out_min_cur,
    output reg  [TW-1:0] out_min_prev,
    output reg  [15:0] out_count,
    output reg  [2:0]  out_branch
);
    // ---- elaboration-time parameter checks ------------------------------------------------
    // An out-of-range parameter instantiates a module that does not exist, named after the
    // problem, so every tool stops with that name in its message.
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
        if (CONTEXTS != 1 && CONTEXTS != 2) begin : bad_contexts
            parameter_CONTEXTS_must_be_1_or_2 error_instance();
        end
        if (NACK_GATE != 0 && NACK_GATE != 1) begin : bad_nack_gate
            parameter_NACK_GATE_must_be_0_or_1 error_instance();
        end
        if (TW < 8 || TW > 32 || (TW & 3) != 0) begin : bad_tw
            parameter_TW_must_be_a_multiple_of_4_from_8_to_32 error_instance();
        end
        if (RW < 8 || RW > 32) begin : bad_rw
            parameter_RW_must_be_8_to_32 error_instance();
        end
    endgenerate

    localparam SO = (STATE_OUT != 0);
    localparam [1:0] EV_SAMPLE = 2'd0, EV_NACK = 2'd1, EV_TIMEOUT = 2'd2, EV_RESET = 2'd3;
    localparam [2:0] BR_NONE = 3'd0, BR_LOW = 3'd1, BR_HIGH = 3'd2, BR_GRAD_INC = 3'd3,
                     BR_GRAD_DEC = 3'd4, BR_NACK = 3'd5, BR_TIMEOUT = 3'd6,
                     BR_NACK_HELD = 3'd7;
    localparam       GATE = (NACK_GATE == 1);
    localparam integer NN = TW >> 2;  // nibbles of the gradient's leading-one detector

    // ---- the slot rotation ------------------------------------------------------------------
    reg slot;
    always @(posedge clk) begin
        if (rst || CONTEXTS == 1) slot <= 1'b0;
        else                      slot <= !slot;
    end
    assign in_slot  = slot;
    assign in_ready = (in_ctx == slot);

    // ---- configuration derived once (cfg_* are static while events are in flight) -----------
    // The window count rolls when count + 1 == min_window, i.e. count == min_window - 1
    // (mod 2^16).
    reg [15:0] wm1;
    always @(posedge clk) wm1 <= cfg_min_window - 16'd1;

    // ---- stage A: register the accepted event ---------------------------------------------
    reg        a_valid, a_ctx;
    reg [1:0]  a_event;
    reg [TW-1:0] a_stt;
    always @(posedge clk) begin
        if (rst) a_valid <= 1'b0; else a_valid <= in_valid && in_ready;
        a_event <= in_event;
        a_stt   <= in_stt;
        a_ctx   <= in_ctx;
    end

    // ---- state loop registers (declared here, stage P reads the middle ones) -----------------
    // r_*: the state of the context now in stage B1 (after its previous event).
    reg        r_init;
    reg [TW-1:0] r_stt_old, r_min_cur, r_min_prev, r_d;
    reg [15:0] r_count;
    // m_*: between B1 and B2 (registers with CONTEXTS = 2, wires with CONTEXTS = 1, see the end
    // of the module). m_init and m_stt_old are already final for the event in B2.
    wire        m_valid, m_ctx, m_init, m_roll, m_take;
    wire [1:0]  m_event;
    wire [TW-1:0] m_stt, m_stt_old, m_min_cur, m_mprev, m_d, m_e;
    wire [15:0] m_count;

    // ---- stage P: clamped STT difference ----------------------------------------------------
    // The event in stage A reaches B1 next cycle; the previous event of its context is in B2
    // now (CONTEXTS = 2) or in B1 now (CONTEXTS = 1), and either way m_init/m_stt_old hold that
    // context's state after it.
    wire        a_sample = a_valid && (a_event == EV_SAMPLE);
    wire        a_reset  = a_valid && (a_event == EV_RESET);
    wire [TW-1:0] raw_diff = a_stt - m_stt_old;
    // clamp to [-2^(TW-2), 2^(TW-2)-1] (in range exactly when the top two bits agree; with
    // TW = 32 the spec's +-2^30); 0 before init
    wire [TW-1:0] diff   = !m_init ? {TW{1'b0}}
                         : (raw_diff[TW-1] == raw_diff[TW-2]) ? raw_diff
                         : (raw_diff[TW-1] ? {2'b11, {(TW-2){1'b0}}} : {2'b00, {(TW-2){1'b1}}});
    reg        p_valid, p_ctx, p_sample, p_reset, p_first;
    reg [1:0]  p_event;
    reg [TW-1:0] p_stt, p_diff;
    always @(posedge clk) begin
        if (rst) begin
            p_valid  <= 1'b0;
            p_sample <= 1'b0;
            p_reset  <= 1'b0;
            p_first  <= 1'b0;
        end else begin
            p_valid  <= a_valid;
            p_sample <= a_sample;
            p_reset  <= a_reset;
            // the context's first sample since reset, or a context reset: the sample (0 on
            // reset) replaces stt_old and both minima
            p_first  <= a_reset || (a_sample && !m_init);
        end
        p_ctx    <= a_ctx;
        p_event  <= a_event;
        p_stt    <= a_reset ? {TW{1'b0}} : a_stt;
        p_diff   <= diff;
    end

    // ---- stage B1: first half of the state recurrences --------------------------------------
    // Before the first sample d and count are 0 (reset), since only samples change them.
    wire        p_touch  = p_sample || p_reset;
    wire [TW-1:0] e_raw  = p_diff - r_d;
    wire [TW-1:0] below  = p_stt - r_min_cur;
    wire [15:0] count1   = r_count + 16'd1;
    wire        n_init   = !p_reset && (r_init || p_sample);
    wire [TW-1:0] n_stt_old = p_touch ? p_stt : r_stt_old;
    // the sample replaces the current minimum (applied in B2, off the carry chain's path)
    wire        n_take   = p_touch && (below[TW-1] || p_first);
    wire [TW-1:0] n_mprev = p_first ? p_stt : r_min_prev;
    wire [TW-1:0] n_d    = p_reset ? {TW{1'b0}} : r_d;
    wire [TW-1:0] n_e    = p_sample ? e_raw : {TW{1'b0}};
    wire [15:0] n_count  = p_sample ? count1 : (p_reset ? 16'd0 : r_count);
    wire        n_roll   = p_sample && (r_count == wm1);

    // ---- stage B2: second half; writes the state back ---------------------------------------
    wire [TW-1:0] e_shr      = $signed(m_e) >>> ALPHA_SHIFT;
    wire [TW-1:0] d_next     = m_d + e_shr;
    wire [TW-1:0] m_mcur1    = m_take ? m_stt : m_min_cur;
    wire [TW-1:0] mcur_next  = m_roll ? m_stt : m_mcur1;
    wire [TW-1:0] mprev_next = m_roll ? m_mcur1 : m_mprev;
    wire [15:0] count_next = m_roll ? 16'd0 : m_count;

    // After each clock edge r_* hold the state after the event now in b_* (NACK and timeout
    // leave it unchanged), so stage C reads them directly.
    reg        b_valid, b_ctx;
    reg [1:0]  b_event;
    reg [TW-1:0] b_stt;
    always @(posedge clk) begin
        if (rst) begin
            b_valid    <= 1'b0;
            r_init     <= 1'b0;
            r_stt_old  <= {TW{1'b0}};
            r_min_cur  <= {TW{1'b0}};
            r_min_prev <= {TW{1'b0}};
            r_d        <= {TW{1'b0}};
            r_count    <= 16'd0;
        end else begin
            b_valid    <= m_valid;
            r_init     <= m_init;
            r_stt_old  <= m_stt_old;
            r_min_cur  <= mcur_next;
            r_min_prev <= mprev_next;
            r_d        <= d_next;
            r_count    <= count_next;
        end
        b_ctx   <= m_ctx;
        b_event <= m_event;
        b_stt   <= m_stt;
    end

    // ---- stage C: which bucket holds the minimum; leading one of each nibble of d -----------
    wire [TW-1:0] prev_minus_cur = r_min_prev - r_min_cur;
    wire [TW-1:0] d_mag = {1'b0, r_d[TW-2:0]};
    wire [7:0]  nib_nz;
    wire [15:0] nib_lead;
    genvar      k;
    generate
        for (k = 0; k < NN; k = k + 1) begin : nibble
            wire [3:0] n = d_mag[(k << 2) +: 4];
            assign nib_nz[k] = |n;
            assign nib_lead[(k << 1) +: 2] = n[3] ? 2'd3 : n[2] ? 2'd2 : n[1] ? 2'd1 : 2'd0;
        end
        for (k = NN; k < 8; k = k + 1) begin : no_nibble
            assign nib_nz[k] = 1'b0;
            assign nib_lead[(k << 1) +: 2] = 2'd0;
        end
    endgenerate
    reg  [7:0]  c_nib_nz;
    reg  [15:0] c_nib_pos;
    reg        c_valid, c_ctx, c_init;
    reg [1:0]  c_event;
    reg [TW-1:0] c_stt, c_m, c_d, c_stt_old, c_min_cur, c_min_prev;
    reg [15:0] c_count;
    always @(posedge clk) begin
        if (rst) c_valid <= 1'b0; else c_valid <= b_valid;
        c_ctx      <= b_ctx;
        c_event    <= b_event;
        // a gated NACK measures the queueing delay of the context's last sample (r_stt_old is
        // unchanged by the NACK itself)
        c_stt      <= (GATE && b_event == EV_NACK) ? r_stt_old : b_stt;
        c_init     <= r_init;
        c_m        <= prev_minus_cur[TW-1] ? r_min_prev : r_min_cur;
        c_d        <= r_d;
        c_nib_nz   <= nib_nz;
        c_nib_pos  <= nib_lead;
        c_stt_old  <= SO ? r_stt_old  : {TW{1'b0}};
        c_min_cur  <= SO ? r_min_cur  : {TW{1'b0}};
        c_min_prev <= SO ? r_min_prev : {TW{1'b0}};
        c_count    <= SO ? r_count    : 16'd0;
    end

    // ---- stage D: queueing delay, leading one of the gradient -------------------------------
    wire [TW-1:0] qd_raw = c_stt - c_m;
    wire [TW-1:0] qd     = qd_raw[TW-1] ? {TW{1'b0}} : qd_raw;
    // position of the highest set bit among bits 30..0 (the gradient is positive when used),
    // in two steps: stage C finds each nibble's leading one, stage D the highest non-zero nibble
    wire [4:0]  lead = {lead_nibble(c_nib_nz), nib_pos(c_nib_pos, lead_nibble(c_nib_nz))};
    function [2:0] lead_nibble;
        input [7:0] nz;
        integer j;
        begin
            lead_nibble = 3'd0;
            for (j = 1; j < 8; j = j + 1)
                if (nz[j]) lead_nibble = j[2:0];
        end
    endfunction
    function [1:0] nib_pos;
        input [15:0] pos;
        input [2:0]  j;
        begin
            nib_pos = pos[{j, 1'b0} +: 2];
        end
    endfunction
    reg        d_valid, d_ctx, d_sample, d_nack, d_tout, d_reset, d_pos, d_init;
    reg [TW-1:0] d_qd, d_d, d_stt_old, d_min_cur, d_min_prev;
    reg [15:0] d_count;
    reg [4:0]  d_lead;
    always @(posedge clk) begin
        if (rst) begin
            d_valid  <= 1'b0;
            d_sample <= 1'b0;
            d_nack   <= 1'b0;
            d_tout   <= 1'b0;
            d_reset  <= 1'b0;
        end else begin
            d_valid  <= c_valid;
            d_sample <= c_valid && (c_event == EV_SAMPLE);
            d_nack   <= c_valid && (c_event == EV_NACK);
            d_tout   <= c_valid && (c_event == EV_TIMEOUT);
            d_reset  <= c_valid && (c_event == EV_RESET);
        end
        d_ctx      <= c_ctx;
        d_init     <= c_init;
        d_qd       <= qd;
        d_lead     <= lead;
        d_pos      <= !c_d[TW-1] && (c_d != {TW{1'b0}});
        d_d        <= SO ? c_d : {TW{1'b0}};
        d_stt_old  <= c_stt_old;
        d_min_cur  <= c_min_cur;
        d_min_prev <= c_min_prev;
        d_count    <= c_count;
    end

    // ---- stage E: thresholds, the branch as one-hot flags ------------------------------------
    // each threshold compare is the borrow of one subtraction (one carry chain)
    wire [TW:0] qd_low  = {1'b0, d_qd} - {1'b0, cfg_t_low};
    wire [TW:0] qd_high = {1'b0, d_qd} - {1'b0, cfg_t_high};
    wire        lt_low  = qd_low[TW];
    wire        ge_high = !qd_high[TW];
    localparam [4:0] NS5 = NORM_SHIFT[4:0];
    // with NORM_SHIFT = 0 the compare is constant (true), which Verilator would flag
    /* verilator lint_off UNSIGNED */
    wire [4:0] grad_sh = (d_lead >= NS5) ? 5'd1 : (NS5 - d_lead);
    /* verilator lint_on UNSIGNED */
    reg        e_valid, e_ctx, e_low, e_high, e_ginc, e_gdec, e_nack, e_tout, e_reset, e_held;
    wire       hold    = GATE && d_init && lt_low;
    reg [4:0]  e_grad_sh;
    reg [TW-1:0] e_d, e_stt_old, e_min_cur, e_min_prev;
    reg [15:0] e_count;
    always @(posedge clk) begin
        if (rst) begin
            e_valid <= 1'b0;
            e_low   <= 1'b0;
            e_high  <= 1'b0;
            e_ginc  <= 1'b0;
            e_gdec  <= 1'b0;
            e_nack  <= 1'b0;
            e_held  <= 1'b0;
            e_tout  <= 1'b0;
            e_reset <= 1'b0;
        end else begin
            e_valid <= d_valid;
            e_low   <= d_sample && lt_low;
            e_high  <= d_sample && !lt_low && ge_high;
            e_ginc  <= d_sample && !lt_low && !ge_high && !d_pos;
            e_gdec  <= d_sample && !lt_low && !ge_high && d_pos;
            e_nack  <= d_nack && !hold;
            e_held  <= d_nack && hold;
            e_tout  <= d_tout;
            e_reset <= d_reset;
        end
        e_ctx      <= d_ctx;
        e_grad_sh  <= grad_sh;
        e_d        <= d_d;
        e_stt_old  <= d_stt_old;
        e_min_cur  <= d_min_cur;
        e_min_prev <= d_min_prev;
        e_count    <= d_count;
    end

    // ---- stage G: the operands of the rate update -------------------------------------------
    // The rate update is written as: A = (over || force) ? k : rate + inc, where over means
    // rate + inc > rate_max, i.e. inc > rate_max (the borrow of rate_max - inc, decided here
    // from rate_max - beta and rate_max - wbeta, which the static configuration gives a cycle
    // after it is set) or rate > rate_max - inc; F1 tests over || force as one compare (force
    // as its top bit); then rate = (!dec || under) ? A : rate - cut, where
    // cut = rate >> sh and under means cut > rate - rate_min. The stored rate always lies in
    // [rate_min, rate_max] (cfg_rate_init does), so an increase can only reach the maximum and
    // a decrease only the minimum, and an idle slot (inc = 0) keeps the rate. A context reset,
    // and every cycle of rst, forces k = rate_init, so the loop fills with rate_init (rst must be
    // held for 3 cycles to reach every slot of the loop; rst also clears the F1 register, only so
    // that simulation sees no unknown value in the compare).
    localparam [4:0] MD5 = MD_SHIFT[4:0];
    wire        e_dec = e_high || e_gdec || e_nack || e_tout;
    wire [RW-1:0] e_inc = e_low ? cfg_beta : e_ginc ? cfg_wbeta : {RW{1'b0}};
    // rate_max - inc for each possible increase, taken once from the static configuration
    // (like wm1), so stage E selects a limit instead of subtracting
    reg  [RW:0] lim_beta, lim_wbeta;
    always @(posedge clk) begin
        lim_beta  <= {1'b0, cfg_rate_max} - {1'b0, cfg_beta};
        lim_wbeta <= {1'b0, cfg_rate_max} - {1'b0, cfg_wbeta};
    end
    wire [RW:0] e_lim = e_low ? lim_beta : e_ginc ? lim_wbeta : {1'b0, cfg_rate_max};
    reg        g_valid, g_ctx, g_force, g_dec;
    reg [2:0]  g_branch;
    reg [4:0]  g_sh;
    reg [RW-1:0] g_inc, g_k, g_lim;
    reg [TW-1:0] g_d, g_stt_old, g_min_cur, g_min_prev;
    reg [15:0] g_count;
    always @(posedge clk) begin
        if (rst) begin
            g_valid <= 1'b0;
            g_force <= 1'b1;
            g_dec   <= 1'b0;
        end else begin
            g_valid <= e_valid;
            g_force <= e_dec || e_reset || e_lim[RW];
            g_dec   <= e_dec;
        end
        g_inc      <= e_inc;
        g_lim      <= e_lim[RW-1:0];
        g_ctx      <= e_ctx;
        g_branch   <= e_low ? BR_LOW : e_high ? BR_HIGH : e_ginc ? BR_GRAD_INC
                    : e_gdec ? BR_GRAD_DEC : e_nack ? BR_NACK : e_held ? BR_NACK_HELD
                    : e_tout ? BR_TIMEOUT : BR_NONE;
        g_k        <= (e_reset || rst) ? cfg_rate_init : e_dec ? cfg_rate_min : cfg_rate_max;
        g_sh       <= e_gdec ? e_grad_sh : e_tout ? 5'd1 : MD5;
        g_d        <= e_d;
        g_stt_old  <= e_stt_old;
        g_min_cur  <= e_min_cur;
        g_min_prev <= e_min_prev;
        g_count    <= e_count;
    end

    // ---- stage F1: rate recurrence, first half ----------------------------------------------
    reg  [RW-1:0] rate;     // the rate of the context now in F1
    assign out_rate = rate; // written at the edge that raises out_valid
    wire [RW-1:0] sum    = rate + g_inc;
    // over || g_force as one 33-bit compare: the carry out of one chain selects k directly
    // (with a separate OR, ECP5 put two mux levels after the chain, the critical path)
    wire        take_k   = {g_force, rate} > {1'b0, g_lim};
    wire [RW-1:0] n_a    = take_k ? g_k : sum;
    wire [RW-1:0] n_cut  = rate >> g_sh;
    wire [RW-1:0] n_head = rate - cfg_rate_min;
    // f_*: between F1 and F2 (registers with CONTEXTS = 2, wires with CONTEXTS = 1)
    wire        f_valid, f_ctx, f_keep_a;
    wire [2:0]  f_branch;
    wire [RW-1:0] f_rate, f_a, f_cut, f_head;
    wire [TW-1:0] f_d, f_stt_old, f_min_cur, f_min_prev;
    wire [15:0] f_count;

    // ---- stage F2: rate recurrence, second half ---------------------------------------------
    wire        under     = f_cut > f_head;
    wire [RW-1:0] rate_next = (f_keep_a || under) ? f_a : (f_rate - f_cut);
    always @(posedge clk) begin
        if (rst) out_valid <= 1'b0; else out_valid <= f_valid;
        // rst clears the rate (a known value for take_k's compare in simulation; the loop then
        // fills with cfg_rate_init as described at stage G)
        if (rst) rate <= {RW{1'b0}}; else rate <= rate_next;
        out_ctx      <= f_ctx;
        out_d        <= f_d;
        out_stt_old  <= f_stt_old;
        out_min_cur  <= f_min_cur;
        out_min_prev <= f_min_prev;
        out_count    <= f_count;
        out_branch   <= f_branch;
    end

    // ---- the middle of each loop: a register stage (C-slow) or a wire -----------------------
    // Each loop's middle signals travel as one bus. The state half of the B loop resets to the
    // initial state (every context starts from it, including the one in the middle of the
    // loop); the F loop's middle is filled by the rate_init operations rst injects (stage G).
    localparam MW = 1 + 1 + 1 + 1 + 1 + 2 + TW + TW + TW + TW + TW + TW + 16;
    localparam FW = 3 + 3 + RW + RW + RW + RW + TW + TW + TW + TW + 16;
    wire [MW-1:0] m_in  = {p_valid, n_init, n_roll, n_take, p_ctx, p_event, p_stt, n_stt_old,
                           r_min_cur, n_mprev, n_d, n_e, n_count};
    wire [FW-1:0] f_in  = {g_valid, g_ctx, !g_dec, g_branch, rate, n_a, n_cut, n_head, g_d,
                           g_stt_old, g_min_cur, g_min_prev, g_count};
    wire [MW-1:0] m_out;
    wire [FW-1:0] f_out;
    assign {m_valid, m_init, m_roll, m_take, m_ctx, m_event, m_stt, m_stt_old, m_min_cur, m_mprev,
            m_d, m_e, m_count} = m_out;
    assign {f_valid, f_ctx, f_keep_a, f_branch, f_rate, f_a, f_cut, f_head, f_d, f_stt_old,
            f_min_cur, f_min_prev, f_count} = f_out;
    generate
        if (CONTEXTS == 2) begin : cslow
            reg [MW-1:0] m_q;
            reg [FW-1:0] f_q;
            always @(posedge clk) begin
                if (rst) m_q <= {MW{1'b0}};
                else     m_q <= m_in;
                if (rst) f_q[FW-1] <= 1'b0; // f_valid
                else     f_q[FW-1] <= f_in[FW-1];
                f_q[FW-2:0] <= f_in[FW-2:0];
            end
            assign m_out = m_q;
            assign f_out = f_q;
        end else begin : single
            assign m_out = m_in;
            assign f_out = f_in;
        end
    endgenerate
endmodule

`default_nettype wire
