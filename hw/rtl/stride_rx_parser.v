// STRIDE receive parser, 64-bit AXI-Stream: Ethernet II / IPv4 / UDP / STRIDE (wire version 2,
// docs/spec.md §2-3) header extraction, IPv4 and UDP checksum checks, malformed frames counted
// and dropped.
//
// Input: one Ethernet frame per packet (no preamble, no FCS, as a MAC such as verilog-ethernet's
// delivers it), byte 0 in tdata[7:0], tkeep contiguous from lane 0 and partial on the last beat
// only, s_axis_tuser on the last beat = the MAC saw a bad frame.
//
// The STRIDE header starts at frame byte 42 (14 + 20 + 8), two bytes into beat 5. The parser
// re-aligns the stream by two bytes ({this beat[15:0], previous beat[63:16]}), after which the
// 32-byte header is exactly four beats with every field on fixed wires (spec §3), and the payload
// leaves on m_axis_* already aligned to byte 0.
//
// Outputs, per frame:
//   - m_axis_*: the STRIDE payload (payload_len bytes, nothing for frames without payload, nothing
//     for frames dropped on a header check). m_axis_tuser on the last beat = drop it: the frame
//     failed a check known only at its end (UDP checksum, length against the bytes present, MAC
//     error). A consumer stages the payload and commits it on hdr_valid.
//   - done_valid: a one-cycle pulse 3 cycles after every frame's last beat; done_payload with it
//     says that a payload packet of this frame went out on m_axis (in frame order; it may still
//     be waiting behind m_axis_tready), so a consumer pairs packets with outcomes.
//   - hdr_valid: with done_valid, for good frames only,
//     with the header fields on hdr_*. The fields hold until the next frame's sixth beat (at
//     least 3 cycles): the consumer takes them on the pulse (no back-pressure; a frame is at
//     least 10 beats, so there is at most one pulse every 10 cycles).
//   - cnt_*: 32-bit wrapping counters, one per verdict; every frame lands in exactly one.
//
// Checks, in this order (the first that fails names the counter):
//   mac_err   s_axis_tuser on the last beat
//   truncated frame shorter than 42 bytes (no UDP header), or too short for the IPv4 total length,
//             or UDP length < 8 + 32 (spec §3.2 "truncated")
//   other     not for the engine: EtherType != IPv4, IP protocol != UDP, UDP destination port !=
//             cfg_udp_port (counted, dropped here; a NIC would pass them to the host)
//   bad_ip    IPv4 version/IHL != 4/5 (no options), fragment (MF or offset), header checksum
//             wrong, total length != UDP length + 20, frame longer than the total length
//   bad_csum  UDP checksum wrong, or 0 (spec §2: it MUST be enabled)
//   bad_version, bad_flags, bad_length   spec §3.2 (version 2; legal flag combinations of §3.1 with
//             ACK|CN; payload_len = UDP length - 40, DATA iff payload_len > 0)
//
// Throughput: one beat per clock in and out, no stall between back-to-back frames (a frame
// whose payload ends in the last 6 lanes of its last beat needs one more output beat, which
// leaves while the next frame's first beat is taken: beats 0-9 of a frame produce no output).
// s_axis_tready = m_axis_tready || !m_axis_tvalid (registered output stage).
`timescale 1ns / 1ps
`default_nettype none

module stride_rx_parser #(
    parameter integer DATA_WIDTH = 64,
    parameter integer VERSION = 2
) (
    input  wire                  clk,
    input  wire                  rst,
    input  wire [15:0]           cfg_udp_port,

    input  wire [DATA_WIDTH-1:0] s_axis_tdata,
    input  wire [7:0]            s_axis_tkeep,
    input  wire                  s_axis_tvalid,
    output wire                  s_axis_tready,
    input  wire                  s_axis_tlast,
    input  wire                  s_axis_tuser,

    output reg  [63:0]           m_axis_tdata,
    output reg  [7:0]            m_axis_tkeep,
    output reg                   m_axis_tvalid,
    input  wire                  m_axis_tready,
    output reg                   m_axis_tlast,
    output reg                   m_axis_tuser,

    output reg                   done_valid,
    output reg                   done_payload,
    output reg                   hdr_valid,
    output reg  [7:0]            hdr_flags,
    output reg  [15:0]           hdr_payload_len,
    output reg  [31:0]           hdr_dst_cid,
    output reg  [31:0]           hdr_src_cid,
    output reg  [31:0]           hdr_seq,
    output reg  [31:0]           hdr_ack,
    output reg  [31:0]           hdr_tx_ts,
    output reg  [31:0]           hdr_echo_stt,
    output reg  [15:0]           hdr_window,
    output reg  [15:0]           hdr_ce_count,
    output reg  [31:0]           hdr_ip_src,
    output reg  [15:0]           hdr_udp_sport,
    output reg                   hdr_ecn_ce,

    output reg  [31:0]           cnt_ok,
    output reg  [31:0]           cnt_mac_err,
    output reg  [31:0]           cnt_truncated,
    output reg  [31:0]           cnt_other,
    output reg  [31:0]           cnt_bad_ip,
    output reg  [31:0]           cnt_bad_csum,
    output reg  [31:0]           cnt_bad_version,
    output reg  [31:0]           cnt_bad_flags,
    output reg  [31:0]           cnt_bad_length
);
    generate
        if (DATA_WIDTH != 64) begin : bad_width
            parameter_DATA_WIDTH_must_be_64 error_instance();
        end
        if (VERSION < 1 || VERSION > 255) begin : bad_version_param
            parameter_VERSION_must_be_1_to_255 error_instance();
        end
    endgenerate

    // ---- byte helpers (lane i = bits 8i+7..8i; fields are big-endian)
    function [15:0] be16;
        input [63:0] d;
        input integer lane;
        be16 = {d[8*lane +: 8], d[8*(lane+1) +: 8]};
    endfunction
    function [31:0] be32;
        input [63:0] d;
        input integer lane;
        be32 = {d[8*lane +: 8], d[8*(lane+1) +: 8], d[8*(lane+2) +: 8], d[8*(lane+3) +: 8]};
    endfunction
    function [3:0] popcount8;
        input [7:0] k;
        integer i;
        begin
            popcount8 = 4'd0;
            for (i = 0; i < 8; i = i + 1) popcount8 = popcount8 + {3'd0, k[i]};
        end
    endfunction
    // the sum of a beat's four 16-bit words (bytes masked by m): two carry-save layers written
    // out bit by bit and one 18-bit adder (one carry chain; Yosys folds a four-operand + into
    // a chain, a LUT and mux level and a second chain: once N=1's critical path)
    function [17:0] wsum;
        input [63:0] d;
        input [7:0] m;
        reg [63:0] x;
        reg [17:0] a, b, c, e, s1, c1, s2, c2;
        integer i;
        begin
            for (i = 0; i < 8; i = i + 1) x[8*i +: 8] = m[i] ? d[8*i +: 8] : 8'd0;
            a = {2'd0, be16(x, 0)}; b = {2'd0, be16(x, 2)};
            c = {2'd0, be16(x, 4)}; e = {2'd0, be16(x, 6)};
            s1 = a ^ b ^ c;
            c1 = ((a & b) | (a & c) | (b & c)) << 1;
            s2 = s1 ^ c1 ^ e;
            c2 = ((s1 & c1) | (s1 & e) | (c1 & e)) << 1;
            wsum = s2 + c2;           // the sum is below 2^18: exact
        end
    endfunction
    function legal_flags;
        input [7:0] f;
        case (f)
            8'h01, 8'h03, 8'h02, 8'h22, 8'h62, 8'h06, 8'h0a, 8'h10, 8'h12, 8'h82: legal_flags = 1'b1;
            default: legal_flags = 1'b0;
        endcase
    endfunction

    // ---- input side
    wire out_free = !m_axis_tvalid || m_axis_tready;
    assign s_axis_tready = out_free;
    wire in_fire = s_axis_tvalid && out_free;

    reg  [3:0]  beat;        // beat index within the frame, saturates at 15
    reg  [15:0] nbytes;      // bytes before this beat
    reg  [63:0] prev;        // previous beat
    reg  [7:0]  prev_keep;
    reg         flush;       // one output beat of the previous frame is still owed

    wire [63:0] al      = {s_axis_tdata[15:0], prev[63:16]};      // re-aligned beat
    wire [7:0]  al_keep = {s_axis_tkeep[1:0], prev_keep[7:2]};
    // nbytes is a multiple of 8 and tkeep contiguous, so the frame's bytes up to this beat,
    // nbytes + popcount(tkeep), need no adder: nbytes with the count's low three bits, or
    // nbytes + 8 (kept in a register) for a full beat
    reg  [15:0] nbytes_p8;
    wire [3:0]  keep_n = popcount8(s_axis_tkeep);

    // per-frame facts gathered beat by beat
    reg  [15:0] ethertype;
    reg  [7:0]  ver_ihl, tos, proto;
    reg  [15:0] ip_total, frag, udp_dport, udp_len, udp_csum;
    reg  [31:0] ip_src;
    reg  [15:0] udp_sport;
    reg  [7:0]  version, flags;
    reg  [15:0] payload_len;
    // derived from the captured fields one cycle after them (every use is at least two beats
    // after the capture), so no check chains two carry chains in one cycle
    reg  [15:0] udp_len_p20, udp_len_m40, ip_total_p14;
    reg  [16:0] udp_len_p17;

    // checksum pipelines: masked beat sums, then accumulators
    // the masks of the beat about to come, registered (a function of the next beat index), so the
    // beat sums start from flip-flops: ip_m for the IPv4 header, udp_fc = beat 3 (UDP pseudo
    // header from the source address on), udp_keep = beat >= 4 (masked by tkeep)
    reg  [7:0] ip_m;
    reg        udp_fc, udp_keep;
    wire [7:0] ip_mask  = ip_m;
    wire [7:0] udp_mask = udp_fc ? 8'hfc : udp_keep ? s_axis_tkeep : 8'h00;
    wire [3:0] beat_nx  = s_axis_tlast ? 4'd0 : (beat == 4'd15) ? beat : beat + 4'd1;
    reg  [17:0] ip_bs, udp_bs;
    reg         bs_v, bs_last, bs_first;
    reg  [31:0] ip_acc, udp_acc;
    // ones' complement check without a carry chain: for a sum s < 2^32 whose high half is below
    // 2^16, fold(s) == 0xffff iff lo + hi is 0xffff (lo == ~hi) or 0x1fffe (both 0xffff)
    function csum_ok;
        input [31:0] s;
        csum_ok = (s[15:0] == ~s[31:16]) || (s == 32'hffffffff);
    endfunction
    wire        ip_csum_ok = csum_ok(ip_acc);

    // ---- verdict of everything but the UDP checksum, taken at the last beat (next frame's beats
    // overwrite the facts from the following cycle on)
    // the byte counts' compares with the constants and the IPv4 length, registered one clock
    // ahead for the beat about to come (from the next nbytes and nbytes + 8), so the last beat's
    // verdict starts from flip-flops and this beat's lane count (timing). They use the IPv4
    // length of the clock before and udp_len < 40 is registered: both are stable from beat 5
    // on, and a frame that ends before beat 9 is short (< 74 bytes) whatever they say
    reg  [15:0] nbytes_p16;
    wire [12:0] nb_n  = rst ? 13'd0 : !in_fire ? nbytes[15:3] : s_axis_tlast ? 13'd0 :
                        nbytes_p8[15:3];          // the next nbytes / 8
    wire [15:0] nb8_n = rst ? 16'd8 : !in_fire ? nbytes_p8 : s_axis_tlast ? 16'd8 : nbytes_p16;
    reg  q8_ge42, q8_lt74, q8_lt_ip, q8_eq_ip, qh_gt5, qh_eq5, qh_lt9, qh_eq9, qh_lt_ip, qh_eq_ip,
         q_ulen_lt40;
    always @(posedge clk) begin
        q8_ge42 <= nb8_n >= 16'd42;
        q8_lt74 <= nb8_n < 16'd74;
        q8_lt_ip <= nb8_n < ip_total_p14;
        q8_eq_ip <= nb8_n == ip_total_p14;
        qh_gt5 <= nb_n > 13'd5;
        qh_eq5 <= nb_n == 13'd5;
        qh_lt9 <= nb_n < 13'd9;
        qh_eq9 <= nb_n == 13'd9;
        qh_lt_ip <= nb_n < ip_total_p14[15:3];
        qh_eq_ip <= nb_n == ip_total_p14[15:3];
        q_ulen_lt40 <= udp_len < 16'd40;
    end
    // frame_bytes >= 42 and < 74 (42 = 5 x 8 + 2, 74 = 9 x 8 + 2)
    wire have_udp   = keep_n[3] ? q8_ge42 : (qh_gt5 || (qh_eq5 && keep_n[2:0] >= 3'd2));
    wire fb_lt74    = keep_n[3] ? q8_lt74 : (qh_lt9 || (qh_eq9 && keep_n[2:0] < 3'd2));
    // is_other_r: taken at beat 4 (a frame that ends at beat 5 is judged on it);
    // ip_hdr_bad_r: the header-only IPv4 checks, re-registered every cycle, valid from two
    // cycles after beat 4 (used from beat 8 on: frames shorter than that are truncated)
    reg  is_other_r, ip_hdr_bad_r;
    wire is_other   = is_other_r;
    // frame_bytes against the IPv4 length, with the carry chains on flip-flops only: the full-beat
    // case compares nbytes + 8, the partial case the beat count (high bits) and lane count apart
    wire fb_lt_ip = keep_n[3] ? q8_lt_ip :
                    qh_lt_ip || (qh_eq_ip && keep_n[2:0] < ip_total_p14[2:0]);
    wire fb_eq_ip = keep_n[3] ? q8_eq_ip : qh_eq_ip && keep_n[2:0] == ip_total_p14[2:0];
    wire too_short  = fb_lt74 || q_ulen_lt40 || fb_lt_ip;
    wire ip_bad     = ip_hdr_bad_r || !fb_eq_ip;
    wire len_bad    = payload_len != udp_len_m40 || (flags[5] != (payload_len != 16'd0));
    // early: known from the header beats, before any payload leaves (suppresses the payload)
    reg  early_drop;
    // beat >= 10 && !early_drop (a payload beat of a frame not dropped early), as a register of
    // its own, so that the output stage's load of m_axis_tdata starts one LUT closer to its
    // flip-flops (N = 1 seed 2: in_fire -> early_drop logic -> m_axis_tdata, 7.02 ns).
    // Set when beat goes from 9 to 10 (early_drop is final from beat 8 on), cleared at a frame's
    // last beat and at reset, held otherwise (beat saturates at 15)
    reg  pay_ok;

    localparam [3:0] V_OK = 0, V_MAC = 1, V_TRUNC = 2, V_OTHER = 3, V_IP = 4, V_CSUM = 5,
                     V_VER = 6, V_FLAGS = 7, V_LEN = 8;

    // the frame's facts, copied at its last beat (T) into p_*, at T+1 into f_* (the next frame's
    // beats overwrite the originals; a one-beat runt may follow at once), used at T+2
    reg  [3:0]  p_verdict;   // V_OK here means: the UDP checksum and STRIDE checks decide
    reg         f_load, f_csum_decides, f_after_ok, cnt_v;
    reg  [3:0]  f_fixed, cnt_verdict;
    reg         g_v, g_csum_decides, g_csum_ok;   // T+3: the outcome, registered for the counters
    reg  [3:0]  g_fixed;
    reg         p_zero;
    reg  [7:0]  p_version, p_flags, f_flags;
    reg         p_len_bad, p_ce, f_ce;
    reg  [15:0] p_payload, f_payload, p_sport, f_sport;
    reg  [31:0] p_ip_src, f_ip_src;
    reg  [31:0] fin_sum;
    reg         fin_v;
    reg         flush_user;
    reg         p_emit, f_emit;

    always @(posedge clk) begin
        if (rst) begin
            ip_m <= 8'h00; udp_fc <= 1'b0; udp_keep <= 1'b0;
            beat <= 0; nbytes <= 0; nbytes_p8 <= 16'd8; nbytes_p16 <= 16'd16; prev <= 0; prev_keep <= 0; flush <= 1'b0;
            m_axis_tvalid <= 1'b0; m_axis_tlast <= 1'b0; m_axis_tuser <= 1'b0;
            m_axis_tdata <= 0; m_axis_tkeep <= 0;
            bs_v <= 1'b0; bs_last <= 1'b0; bs_first <= 1'b0; ip_bs <= 0; udp_bs <= 0;
            ip_acc <= 0; udp_acc <= 0;
            udp_len_p20 <= 0; udp_len_m40 <= 0; ip_total_p14 <= 0; udp_len_p17 <= 0;
            f_load <= 1'b0; f_csum_decides <= 1'b0; f_after_ok <= 1'b0; cnt_v <= 1'b0;
            f_fixed <= V_OK; cnt_verdict <= V_OK;
            g_v <= 1'b0; g_csum_decides <= 1'b0; g_csum_ok <= 1'b0; g_fixed <= V_OK;
            is_other_r <= 1'b0; ip_hdr_bad_r <= 1'b0;
            p_verdict <= V_OK; p_zero <= 1'b0;
            fin_v <= 1'b0; fin_sum <= 0; flush_user <= 1'b0;
            hdr_valid <= 1'b0; early_drop <= 1'b0; pay_ok <= 1'b0; done_valid <= 1'b0;
            done_payload <= 1'b0;
            p_emit <= 1'b0; f_emit <= 1'b0;
            ethertype <= 0; ver_ihl <= 0; tos <= 0; proto <= 0; ip_total <= 0; frag <= 0;
            udp_dport <= 0; udp_len <= 0; udp_csum <= 0; ip_src <= 0; udp_sport <= 0;
            version <= 0; flags <= 0; payload_len <= 0;
            cnt_ok <= 0; cnt_mac_err <= 0; cnt_truncated <= 0; cnt_other <= 0; cnt_bad_ip <= 0;
            cnt_bad_csum <= 0; cnt_bad_version <= 0; cnt_bad_flags <= 0; cnt_bad_length <= 0;
        end else begin
            // ---- output stage
            if (out_free) begin
                m_axis_tvalid <= 1'b0;
                if (flush) begin
                    // the rest of the previous frame's last beat
                    m_axis_tvalid <= 1'b1;
                    m_axis_tdata  <= {16'd0, prev[63:16]};
                    m_axis_tkeep  <= {2'b00, prev_keep[7:2]};
                    m_axis_tlast  <= 1'b1;
                    m_axis_tuser  <= flush_user;
                    flush <= 1'b0;
                end
            end

            // ---- input beats
            if (in_fire) begin
                prev <= s_axis_tdata;
                prev_keep <= s_axis_tkeep;
                ip_m <= (beat_nx == 4'd1) ? 8'hc0 : (beat_nx == 4'd2 || beat_nx == 4'd3) ? 8'hff :
                        (beat_nx == 4'd4) ? 8'h03 : 8'h00;
                udp_fc <= beat_nx == 4'd3;
                udp_keep <= beat_nx >= 4'd4;
                case (beat)
                    4'd0: early_drop <= 1'b0;
                    4'd1: begin ethertype <= be16(s_axis_tdata, 4); ver_ihl <= s_axis_tdata[55:48];
                                tos <= s_axis_tdata[63:56]; end
                    4'd2: begin ip_total <= be16(s_axis_tdata, 0); frag <= be16(s_axis_tdata, 4);
                                proto <= s_axis_tdata[63:56]; end
                    4'd3: ip_src <= be32(s_axis_tdata, 2);
                    4'd4: begin udp_sport <= be16(s_axis_tdata, 2); udp_dport <= be16(s_axis_tdata, 4);
                                udp_len <= be16(s_axis_tdata, 6);
                                is_other_r <= ethertype != 16'h0800 || proto != 8'd17 ||
                                              be16(s_axis_tdata, 4) != cfg_udp_port; end
                    4'd5: udp_csum <= be16(s_axis_tdata, 0);
                    4'd6: begin
                        version <= al[7:0]; flags <= al[15:8]; payload_len <= be16(al, 2);
                        hdr_dst_cid <= be32(al, 4);
                        // the header checks, from beats 1-6 (the IP checksum fold is complete:
                        // its last beat was two cycles ago at least)
                        early_drop <= is_other || ver_ihl != 8'h45 || frag[13:0] != 14'd0 ||
                                      udp_len < 16'd40 || al[7:0] != VERSION[7:0] ||
                                      !legal_flags(al[15:8]) ||
                                      be16(al, 2) != udp_len_m40 ||
                                      (al[13] != (be16(al, 2) != 16'd0));
                    end
                    4'd7: begin hdr_src_cid <= be32(al, 0); hdr_seq <= be32(al, 4); end
                    4'd8: begin hdr_ack <= be32(al, 0); hdr_tx_ts <= be32(al, 4);
                                // the IPv4 header checks (checksum complete by now)
                                if (ip_hdr_bad_r) early_drop <= 1'b1;
                    end
                    4'd9: begin hdr_echo_stt <= be32(al, 0); hdr_window <= be16(al, 4);
                                hdr_ce_count <= be16(al, 6); end
                    default: ;
                endcase
                // payload beats: the re-aligned beat from beat 10 on
                if (pay_ok) begin
                    if (s_axis_tlast && s_axis_tkeep[7:2] != 6'd0) begin
                        m_axis_tvalid <= 1'b1; m_axis_tdata <= al; m_axis_tkeep <= 8'hff;
                        m_axis_tlast <= 1'b0; m_axis_tuser <= 1'b0;
                        flush <= 1'b1;
                    end else begin
                        m_axis_tvalid <= 1'b1; m_axis_tdata <= al; m_axis_tkeep <= al_keep;
                        m_axis_tlast <= s_axis_tlast; m_axis_tuser <= 1'b0;
                    end
                end else if (beat == 4'd9 && s_axis_tlast && s_axis_tkeep[7:2] != 6'd0 &&
                             !early_drop) begin
                    // a payload of 1-6 bytes, all of it in the flush beat
                    flush <= 1'b1;
                end
                if (s_axis_tlast) pay_ok <= 1'b0;
                else if (beat == 4'd9) pay_ok <= !early_drop;
                if (s_axis_tlast) begin
                    beat <= 0;
                    nbytes <= 0;
                    nbytes_p8 <= 16'd8;
                    nbytes_p16 <= 16'd16;
                end else begin
                    if (beat != 4'd15) beat <= beat + 4'd1;
                    nbytes <= nbytes_p8;
                    nbytes_p8 <= nbytes_p16;
                    nbytes_p16 <= nbytes_p16 + 16'd8;
                end
            end

            // ---- checksum pipeline: beat sums, then accumulation
            bs_v <= in_fire;
            bs_last <= in_fire && s_axis_tlast;
            bs_first <= in_fire && beat == 4'd0;
            ip_bs <= wsum(s_axis_tdata, ip_mask);
            udp_bs <= wsum(s_axis_tdata, udp_mask);
            if (bs_v) begin
                ip_acc <= (bs_first ? 32'd0 : ip_acc) + {14'd0, ip_bs};
                udp_acc <= bs_last ? 32'd0 : (bs_first ? 32'd0 : udp_acc) + {14'd0, udp_bs};
            end
            fin_v <= bs_v && bs_last;
            fin_sum <= (bs_first ? 32'd0 : udp_acc) + {14'd0, udp_bs} + {15'd0, udp_len_p17};
            udp_len_p20 <= udp_len + 16'd20;
            udp_len_m40 <= udp_len - 16'd40;
            udp_len_p17 <= {1'b0, udp_len} + 17'd17;
            ip_total_p14 <= ip_total + 16'd14;
            ip_hdr_bad_r <= ver_ihl != 8'h45 || frag[13:0] != 14'd0 || !ip_csum_ok ||
                            ip_total != udp_len_p20;
            f_load <= p_verdict == V_OK;
            f_csum_decides <= p_verdict == V_OK && !p_zero;
            f_after_ok <= p_verdict == V_OK && p_version == VERSION[7:0] && legal_flags(p_flags) &&
                          !p_len_bad;
            f_fixed <= (p_verdict == V_OK && p_zero) ? V_CSUM :
                       (p_verdict != V_OK) ? p_verdict :
                       (p_version != VERSION[7:0]) ? V_VER :
                       !legal_flags(p_flags) ? V_FLAGS : p_len_bad ? V_LEN : V_OK;
            f_flags <= p_flags;
            f_ce <= p_ce; f_payload <= p_payload; f_sport <= p_sport;
            f_ip_src <= p_ip_src; f_emit <= p_emit;

            // ---- verdict at the last beat (cycle T), checksum at T+2, outcome at T+3
            if (in_fire && s_axis_tlast) begin
                p_zero <= udp_csum == 16'd0;
                p_version <= version; p_flags <= flags; p_len_bad <= len_bad;
                p_payload <= payload_len; p_sport <= udp_sport; p_ip_src <= ip_src;
                p_ce <= tos[1:0] == 2'b11;
                if (s_axis_tuser)                          p_verdict <= V_MAC;
                else if (!have_udp)                        p_verdict <= V_TRUNC;
                else if (is_other)                         p_verdict <= V_OTHER;
                else if (too_short)                        p_verdict <= V_TRUNC;
                else if (ip_bad)                           p_verdict <= V_IP;
                else                                       p_verdict <= V_OK;
                // the payload's last beat learns now whether the frame was already condemned
                // (MAC error, length against the bytes present); the checksum comes too late
                // for it, so hdr_valid alone commits a frame
                flush_user <= s_axis_tuser || too_short || ip_bad;
                p_emit <= !early_drop && (beat >= 4'd10 || (beat == 4'd9 && s_axis_tkeep[7:2] != 6'd0));
                if (beat >= 4'd10 && !early_drop && (s_axis_tuser || too_short || ip_bad)) begin
                    m_axis_tuser <= 1'b1;
                end
            end
            hdr_valid <= 1'b0;
            done_valid <= fin_v;
            done_payload <= fin_v && f_emit;
            // outcome at T+2: the checksum compare decides hdr_valid; for the counters it is
            // registered first (with the verdicts it chooses between: f_* may be the next
            // frame's at T+3), the verdict follows at T+3, the counters at T+4 (T+5)
            g_v <= fin_v;
            g_csum_ok <= csum_ok(fin_sum);
            g_csum_decides <= f_csum_decides;
            g_fixed <= f_fixed;
            cnt_v <= g_v;
            cnt_verdict <= (g_csum_decides && !g_csum_ok) ? V_CSUM : g_fixed;
            if (fin_v && f_csum_decides && f_after_ok && csum_ok(fin_sum)) hdr_valid <= 1'b1;
            // fields load for every frame that passed the early checks (such a frame is at least
            // 10 beats long, so its own beats 6-9 already replaced the previous frame's fields)
            if (fin_v && f_load) begin
                hdr_flags <= f_flags;
                hdr_payload_len <= f_payload;
                hdr_ip_src <= f_ip_src;
                hdr_udp_sport <= f_sport;
                hdr_ecn_ce <= f_ce;
            end
            if (cnt_v) begin
                case (cnt_verdict)
                    V_OK:    cnt_ok <= cnt_ok + 1;
                    V_MAC:   cnt_mac_err <= cnt_mac_err + 1;
                    V_TRUNC: cnt_truncated <= cnt_truncated + 1;
                    V_OTHER: cnt_other <= cnt_other + 1;
                    V_IP:    cnt_bad_ip <= cnt_bad_ip + 1;
                    V_CSUM:  cnt_bad_csum <= cnt_bad_csum + 1;
                    V_VER:   cnt_bad_version <= cnt_bad_version + 1;
                    V_FLAGS: cnt_bad_flags <= cnt_bad_flags + 1;
                    default: cnt_bad_length <= cnt_bad_length + 1;
                endcase
            end
        end
    end

endmodule

`default_nettype wire
