// STRIDE transmit frame builder, 64-bit AXI-Stream: one packet descriptor (plus its payload for
// DATA) in, one Ethernet II / IPv4 / UDP / STRIDE v2 frame out (docs/spec.md §2-3), with the
// IPv4 header checksum and the UDP checksum (never 0: a computed 0 is sent as 0xffff).
//
// Descriptor (d_*): every STRIDE header field but version and tx_ts, plus the peer's IPv4
// address and UDP port. The local MAC, IP address and UDP port and the next hop's MAC are cfg_*
// inputs (stable while frames are in flight). tx_ts is `now` when the frame's first beat is
// presented on m_axis (the sender's clock at transmission, spec §8.1). IPv4: TOS = ECT(0)
// (spec §3.3), identification 0, DF, TTL 64.
// Payload (s_axis_*): d_len bytes for a descriptor with d_len > 0, byte 0 in tdata[7:0], tkeep
// contiguous and partial on the tlast beat only. A payload whose byte count differs from d_len
// is still sent with d_len in the headers (the frame is then malformed) and counted in
// cnt_len_err.
//
// The UDP checksum precedes the payload on the wire, so the builder is store-and-forward: two
// payload slots (MAX_PAYLOAD bytes each, block RAM). One slot fills (one payload beat per clock,
// summed on the way in, re-aligned by two bytes so that the payload's frame beats are slot words
// read as they are) while the other is sent. A frame of L payload bytes is 9 + ceil((L + 2) / 8)
// beats (74 header bytes); frames leave back to back, one beat per clock, while m_axis_tready
// is high and the next slot is full (a 1440-byte payload fills in 181 cycles and leaves in 190).
`timescale 1ns / 1ps
`default_nettype none

module stride_tx_builder #(
    parameter integer DATA_WIDTH = 64,
    parameter integer VERSION = 2,
    parameter integer MAX_PAYLOAD = 1440
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire [31:0]           now,
    input  wire [47:0]           cfg_src_mac,
    input  wire [47:0]           cfg_dst_mac,
    input  wire [31:0]           cfg_ip,
    input  wire [15:0]           cfg_udp_port,

    input  wire                  d_valid,
    output wire                  d_ready,
    input  wire [7:0]            d_flags,
    input  wire [15:0]           d_len,
    input  wire [31:0]           d_dst_cid,
    input  wire [31:0]           d_src_cid,
    input  wire [31:0]           d_seq,
    input  wire [31:0]           d_ack,
    input  wire [31:0]           d_echo_stt,
    input  wire [15:0]           d_window,
    input  wire [15:0]           d_ce_count,
    input  wire [31:0]           d_peer_ip,
    input  wire [15:0]           d_peer_port,

    input  wire [DATA_WIDTH-1:0] s_axis_tdata,
    input  wire [7:0]            s_axis_tkeep,
    input  wire                  s_axis_tvalid,
    output wire                  s_axis_tready,
    input  wire                  s_axis_tlast,

    output wire [63:0]           m_axis_tdata,
    output wire [7:0]            m_axis_tkeep,
    output wire                  m_axis_tvalid,
    input  wire                  m_axis_tready,
    output wire                  m_axis_tlast,
    output wire                  m_axis_tuser,

    output reg  [31:0]           cnt_frames,
    output reg  [31:0]           cnt_len_err
);
    // slot words: payload + 2 bytes of re-alignment
    localparam integer SW_NEED = (MAX_PAYLOAD + 2 + 7) / 8;
    localparam integer SAW = (SW_NEED <= 2) ? 1 : $clog2(SW_NEED);
    generate
        if (DATA_WIDTH != 64) begin : bad_width
            parameter_DATA_WIDTH_must_be_64 error_instance();
        end
        if (VERSION < 1 || VERSION > 255) begin : bad_version_param
            parameter_VERSION_must_be_1_to_255 error_instance();
        end
        if (MAX_PAYLOAD < 8 || MAX_PAYLOAD > 8958) begin : bad_max_payload
            parameter_MAX_PAYLOAD_must_be_8_to_8958 error_instance();
        end
    endgenerate

    function [15:0] be16;
        input [63:0] d;
        input integer lane;
        be16 = {d[8*lane +: 8], d[8*(lane+1) +: 8]};
    endfunction
    function [16:0] wsum2;         // two big-endian 16-bit words (lanes l..l+3) of a beat
        input [63:0] x;
        input integer l;
        wsum2 = {1'b0, be16(x, l)} + {1'b0, be16(x, l + 2)};
    endfunction
    function [3:0] popcount8;
        input [7:0] k;
        integer i;
        begin
            popcount8 = 4'd0;
            for (i = 0; i < 8; i = i + 1) popcount8 = popcount8 + {3'd0, k[i]};
        end
    endfunction
    // byte-swap helpers: field f (big-endian) placed at lanes l.. of a little-endian beat
    function [63:0] bswap64;
        input [63:0] x;
        integer i;
        for (i = 0; i < 8; i = i + 1) bswap64[8*i +: 8] = x[8*(7-i) +: 8];
    endfunction

    // ---- payload slots (two, in one RAM: address {slot, word})
    reg  [63:0] slot_mem [0:(2 << SAW) - 1];
    reg         sm_we;
    reg  [SAW:0] sm_wa;
    reg  [63:0] sm_wd;
    reg  [63:0] sm_q;
    wire        sm_re;
    wire [SAW:0] sm_ra;
    always @(posedge clk) begin
        if (sm_we) slot_mem[sm_wa] <= sm_wd;
        if (sm_re) sm_q <= slot_mem[sm_ra];
    end

    // per-slot descriptors
    reg  [7:0]  sl_flags [0:1];
    reg  [15:0] sl_len [0:1], sl_window [0:1], sl_ce [0:1], sl_port [0:1];
    reg  [31:0] sl_dst [0:1], sl_src [0:1], sl_seq [0:1], sl_ack [0:1], sl_echo [0:1],
                sl_ip [0:1], sl_psum [0:1];
    reg  [1:0]  full;               // slot holds a complete frame not yet started
    reg  [1:0]  occ;                // slot in use: filling, full or being sent
    reg         fs;                 // slot being filled next
    reg         es;                 // slot sent next

    // ---- fill side
    reg         filling;
    reg         fflush;             // one more slot word owed (the last beat's lanes 6-7)
    reg  [SAW-1:0] fw;              // next slot word
    reg  [63:0] fprev;              // previous payload beat
    reg  [31:0] facc;               // payload sum
    reg  [17:0] ws;                 // the last beat's word sum
    reg  [16:0] wp0, wp1;           // its two halves (lanes 0-3, 4-7), one clock earlier
    reg         wv, wl, wsl, fl0, fl0_slot;
    reg  [15:0] lc_bytes, lc_len, lc_len2;  // the frame's byte count and the slot's length
    reg  [3:0]  kc;                 // the beat's byte count (popcount of tkeep), registered
    reg         lc_chk;
    reg         ws_v, ws_last, ws_slot, fill_late, fill_late_slot;
    reg  [15:0] fbytes;
    // d_ready (!filling && !fflush && !occ[fs]) as a register of its own, loaded with the next
    // values of those (rdy_n, below): the descriptor handshake starts from one flip-flop (
    // N = 64 seed 2: the queue's out_valid -> occ / filling logic -> the queue's load -> the
    // clock enables of sl_*, 6.59 ns)
    reg    rdy;
    assign d_ready = rdy;
    wire   d_fire = d_valid && rdy;
    assign s_axis_tready = filling;
    wire   s_fire = s_axis_tvalid && filling;
    wire [63:0] s_masked;
    genvar gi;
    generate
        for (gi = 0; gi < 8; gi = gi + 1) begin : mask
            assign s_masked[8*gi +: 8] = s_axis_tkeep[gi] ? s_axis_tdata[8*gi +: 8] : 8'd0;
        end
    endgenerate
    wire [15:0] fbytes_next = fbytes + {12'd0, kc};

    always @(posedge clk) begin
        sm_we <= 1'b0;
        if (rst) begin
            filling <= 1'b0; fflush <= 1'b0; fs <= 1'b0; fw <= 0; facc <= 0; fbytes <= 0;
            lc_chk <= 1'b0; ws_v <= 1'b0; ws_last <= 1'b0; fill_late <= 1'b0;
            wv <= 1'b0; wl <= 1'b0; fl0 <= 1'b0;
            fprev <= 0; cnt_len_err <= 0;
        end else begin
            if (d_fire) begin
                sl_flags[fs] <= d_flags; sl_len[fs] <= d_len; sl_dst[fs] <= d_dst_cid;
                sl_src[fs] <= d_src_cid; sl_seq[fs] <= d_seq; sl_ack[fs] <= d_ack;
                sl_echo[fs] <= d_echo_stt; sl_window[fs] <= d_window; sl_ce[fs] <= d_ce_count;
                sl_ip[fs] <= d_peer_ip; sl_port[fs] <= d_peer_port;
                fw <= 0; fprev <= 0;
                if (d_len != 16'd0) filling <= 1'b1;
                else fs <= !fs;         // no payload: the slot is complete (marked below)
            end
            if (s_fire) begin
                sm_we <= 1'b1; sm_wa <= {fs, fw}; sm_wd <= {s_masked[47:0], fprev[63:48]};
                fw <= fw + 1'b1;
                fprev <= s_masked;
                if (s_axis_tlast) begin
                    filling <= 1'b0;
                    if (s_axis_tkeep[7:6] != 2'b00) fflush <= 1'b1;
                    else fs <= !fs;
                end
            end
            if (fflush) begin
                fflush <= 1'b0;
                sm_we <= 1'b1; sm_wa <= {fs, fw}; sm_wd <= {48'd0, fprev[63:48]};
                fs <= !fs;
            end
            if (d_fire && d_len == 16'd0) sl_psum[fs] <= 32'd0;
            // the payload sum, pipelined (timing): each beat's two half sums are registered,
            // then the beat's word sum, then it is added; the slot's total is written two
            // clocks after its last beat
            wv <= s_fire; wl <= s_fire && s_axis_tlast; wsl <= fs;
            wp0 <= wsum2(s_masked, 0); wp1 <= wsum2(s_masked, 4);
            ws_v <= wv; ws_last <= wl; ws_slot <= wsl;
            ws <= {1'b0, wp0} + {1'b0, wp1};
            // the byte count, pipelined the same way: each beat's count is registered, then
            // added (the total restarts after a frame's last beat); the total is checked
            // against the slot's length one clock later
            kc <= popcount8(s_axis_tkeep);
            lc_len <= sl_len[fs];
            if (wv) fbytes <= wl ? 16'd0 : fbytes_next;
            lc_bytes <= fbytes_next; lc_len2 <= lc_len; lc_chk <= wl;
            if (lc_chk && lc_bytes != lc_len2) cnt_len_err <= cnt_len_err + 1;
            if (ws_v) facc <= ws_last ? 32'd0 : facc + {14'd0, ws};
            if (ws_last) sl_psum[ws_slot] <= facc + {14'd0, ws};
            // a payload slot is complete once its sum is written (two clocks after its last
            // word, or one after the flush word)
            fl0 <= s_fire && s_axis_tlast && s_axis_tkeep[7:6] == 2'b00; fl0_slot <= fs;
            fill_late <= fl0 || fflush;
            fill_late_slot <= fflush ? fs : fl0_slot;
        end
    end
    // a slot becomes full when its fill completes (fs toggles)
    wire fill_done = d_fire && d_len == 16'd0;

    // ---- send side
    reg         sending;
    reg  [SAW+4:0] b;               // beat index within the frame
    reg  [7:0]  lastkeep;
    reg  [7:0]  e_flags;
    reg  [15:0] e_len, e_window, e_ce, e_port;
    reg  [31:0] e_dst, e_src, e_seq, e_ack, e_echo, e_ts, e_ip, e_psum;
    reg  [15:0] ip_csum, udp_csum;
    wire [15:0] ip_total = e_len + 16'd60;
    wire [15:0] udp_len  = e_len + 16'd40;
    wire        m_fire = sending && m_axis_tready;
    // at_last (b == the frame's beats - 1) is a register, updated one beat ahead (b == the beats - 2, and never
    // at a frame's start: a frame has at least 10 beats), so the frame start and its enables of
    // the e_* registers need no compare of the beat counter
    reg         at_last;
    reg  [SAW+4:0] nbeats_m1;       // beats in the frame, minus 2
    wire        start = full[es] && (!sending || (m_fire && at_last));
    wire [15:0] n_len = sl_len[es];
    wire [2:0]  n_tot = n_len[2:0] + 3'd2;     // (len + 74) mod 8
    reg         es_cur;             // slot of the frame being sent
    // slot word w is read when beat 8 + w leaves, for beat 9 + w (one cycle of RAM latency)
    wire [SAW+4:0] rw = b - 8;
    assign sm_re = m_fire && b >= 8;
    assign sm_ra = {es_cur, rw[SAW-1:0]};
    wire [16:0] n_nb_m1 = ({1'b0, n_len} + 17'd65) >> 3; // ceil((len + 74) / 8) - 2

    always @(posedge clk) begin
        if (rst) begin
            sending <= 1'b0; es <= 1'b0; es_cur <= 1'b0; full <= 2'b00; occ <= 2'b00; b <= 0;
            cnt_frames <= 0; lastkeep <= 8'hff; at_last <= 1'b0; nbeats_m1 <= 0;
        end else begin
            if (m_fire) begin
                b <= b + 1'b1;
                at_last <= b == nbeats_m1;
            end
            if (m_fire && at_last) begin
                sending <= 1'b0;
                cnt_frames <= cnt_frames + 1;
            end
            if (start) begin
                sending <= 1'b1; b <= 0; es_cur <= es; es <= !es;
                nbeats_m1 <= n_nb_m1[SAW+4:0];
                at_last <= 1'b0;
                lastkeep <= (n_tot == 3'd0) ? 8'hff : ~(8'hff << n_tot);
                e_flags <= sl_flags[es]; e_len <= n_len; e_window <= sl_window[es];
                e_ce <= sl_ce[es]; e_port <= sl_port[es]; e_dst <= sl_dst[es];
                e_src <= sl_src[es]; e_seq <= sl_seq[es]; e_ack <= sl_ack[es];
                e_echo <= sl_echo[es]; e_ts <= now; e_ip <= sl_ip[es]; e_psum <= sl_psum[es];
            end
            // slot bookkeeping: fill_done fills slot fs (before its toggle), start frees es
            full <= (full | (fill_done ? (2'b01 << fs) : 2'b00) |
                     (fill_late ? (2'b01 << fill_late_slot) : 2'b00)) &
                    ~(start ? (2'b01 << es) : 2'b00);
            occ <= (occ | (d_fire ? (2'b01 << fs) : 2'b00)) &
                   ~((m_fire && at_last) ? (2'b01 << es_cur) : 2'b00);
        end
    end

    // the next values of filling, fflush, fs and occ (as the two blocks above set them: a
    // descriptor is taken only while not filling and not flushing, a payload beat only while
    // filling, so at most one of them moves fs), for rdy
    wire       fs_tog = (d_fire && d_len == 16'd0) || fflush ||
                        (s_fire && s_axis_tlast && s_axis_tkeep[7:6] == 2'b00);
    wire       filling_n = d_fire ? d_len != 16'd0 : (s_fire && s_axis_tlast) ? 1'b0 : filling;
    wire       fflush_n = !fflush && s_fire && s_axis_tlast && s_axis_tkeep[7:6] != 2'b00;
    wire       fs_n = fs_tog ? !fs : fs;
    wire [1:0] occ_n = (occ | (d_fire ? (2'b01 << fs) : 2'b00)) &
                       ~((m_fire && at_last) ? (2'b01 << es_cur) : 2'b00);
    always @(posedge clk) rdy <= rst || (!filling_n && !fflush_n && !occ_n[fs_n]);
`ifndef SYNTHESIS
    always @(posedge clk)
        if (!rst && rdy !== (!filling && !fflush && !occ[fs])) begin
            $display("stride_tx_builder %m: d_ready's register differs from its definition");
            $finish;
        end
`endif

    // checksums, a free-running pipeline on the frame's fields (stable from beat 0): the IP
    // header checksum is needed at beat 3, the UDP checksum at beat 5. For timing (156.25 MHz
    // on ECP5) each stage holds one carry-save layer or two of at most four operands and one
    // adder, or one fold step. The sums of the cfg_* inputs (stable while frames are in flight)
    // are registers of their own. Stage 1 (beat 0): the IP sum and six partial UDP sums; stage 2:
    // two UDP sums and the IP fold; stage 3: the IP checksum and the UDP sum; stage 4: the UDP
    // fold; stage 5: the UDP checksum. The payload sum enters unfolded (the total stays far below
    // 2^32 and is never 0, so its fold is the same).
    localparam [31:0] IP_CONST = 32'h4502 + 32'd60 + 32'h4000 + 32'h4011;
    localparam [31:0] UDP_CONST = 32'd17 + 32'd80 + {16'd0, VERSION[7:0], 8'd0};
    // the sums of four operands below 2^18 each (20-bit results, no overflow): two carry-save
    // layers (LUTs) and one 20-bit adder, instead of a chain of adders (timing: N=1's critical
    // path was e_ack -> a short adder -> a 32-bit adder -> u4)
    function [19:0] add4;
        input [19:0] p, q, r, t;
        reg [19:0] s1, c1, s2, c2;
        begin
            s1 = p ^ q ^ r;
            c1 = ((p & q) | (p & r) | (q & r)) << 1;
            s2 = s1 ^ c1 ^ t;
            c2 = ((s1 & c1) | (s1 & t) | (c1 & t)) << 1;
            add4 = s2 + c2;
        end
    endfunction
    reg  [19:0] ip_cfg, udp_cfg;
    reg  [31:0] ip_acc, u1, u2, u3, u4, u5, u6, v1, v2, udp_acc;
    reg  [16:0] ip_f1, udp_f1;
    always @(posedge clk) begin
        ip_cfg <= IP_CONST[19:0] + {4'd0, cfg_ip[31:16]} + {4'd0, cfg_ip[15:0]};
        udp_cfg <= UDP_CONST[19:0] + {4'd0, cfg_ip[31:16]} + {4'd0, cfg_ip[15:0]} +
                   {4'd0, cfg_udp_port};
        // stage 1
        // (ip_cfg and udp_cfg are below 2^18: a constant below 2^16 and three 16-bit terms)
        ip_acc <= {12'd0, add4(ip_cfg, {4'd0, e_len}, {4'd0, e_ip[31:16]},
                               {4'd0, e_ip[15:0]})};
        u1 <= {12'd0, add4(udp_cfg, {4'd0, e_ip[31:16]}, {4'd0, e_ip[15:0]},
                           {4'd0, e_port})};
        u2 <= {12'd0, add4({12'd0, e_flags}, {3'd0, e_len, 1'b0}, {4'd0, e_len},
                           {4'd0, e_dst[31:16]})};
        u3 <= {12'd0, add4({4'd0, e_dst[15:0]}, {4'd0, e_src[31:16]}, {4'd0, e_src[15:0]},
                           {4'd0, e_seq[31:16]})};
        u4 <= {12'd0, add4({4'd0, e_seq[15:0]}, {4'd0, e_ack[31:16]}, {4'd0, e_ack[15:0]},
                           {4'd0, e_ts[31:16]})};
        u5 <= {12'd0, add4({4'd0, e_ts[15:0]}, {4'd0, e_echo[31:16]}, {4'd0, e_echo[15:0]},
                           {4'd0, e_window})};
        u6 <= {16'd0, e_ce} + e_psum;
        // stage 2
        v1 <= u1 + u2 + u3;
        v2 <= u4 + u5 + u6;
        ip_f1 <= {1'b0, ip_acc[15:0]} + {1'b0, ip_acc[31:16]};
        // stage 3
        ip_csum <= ~(ip_f1[15:0] + {15'd0, ip_f1[16]});
        udp_acc <= v1 + v2;
        // stage 4
        udp_f1 <= {1'b0, udp_acc[15:0]} + {1'b0, udp_acc[31:16]};
        // stage 5
        udp_csum <= (udp_f1[15:0] + {15'd0, udp_f1[16]} == 16'hffff) ? 16'hffff :
                    ~(udp_f1[15:0] + {15'd0, udp_f1[16]});
    end

    // ---- the 74 header bytes, big-endian, as ten beats (bytes 0..79; 74..79 are payload)
    wire [639:0] hdr_be = {
        cfg_dst_mac, cfg_src_mac, 16'h0800,                              // Ethernet, 14
        8'h45, 8'h02, ip_total, 16'h0000, 16'h4000, 8'd64, 8'd17, ip_csum,   // IPv4, 20
        cfg_ip, e_ip,
        cfg_udp_port, e_port, udp_len, udp_csum,                        // UDP, 8
        VERSION[7:0], e_flags, e_len, e_dst, e_src, e_seq, e_ack, e_ts, e_echo, e_window, e_ce,
        48'd0};
    reg  [63:0] hchunk;
    always @(*) begin
        case (b[3:0])
            4'd0: hchunk = hdr_be[639:576];
            4'd1: hchunk = hdr_be[575:512];
            4'd2: hchunk = hdr_be[511:448];
            4'd3: hchunk = hdr_be[447:384];
            4'd4: hchunk = hdr_be[383:320];
            4'd5: hchunk = hdr_be[319:256];
            4'd6: hchunk = hdr_be[255:192];
            4'd7: hchunk = hdr_be[191:128];
            4'd8: hchunk = hdr_be[127:64];
            default: hchunk = hdr_be[63:0];
        endcase
    end
    wire [63:0] hbeat = bswap64(hchunk);
    wire        pay = b >= 9;
    assign m_axis_tvalid = sending;
    assign m_axis_tdata  = !pay ? hbeat : (b == 9) ? {sm_q[63:16], hbeat[15:0]} : sm_q;
    assign m_axis_tlast  = at_last;
    assign m_axis_tkeep  = at_last ? lastkeep : 8'hff;
    assign m_axis_tuser  = 1'b0;
    wire unused = &{1'b0, fprev[47:0], rw, n_nb_m1};
endmodule

`default_nettype wire
