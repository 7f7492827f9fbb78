// STRIDE receive engine: arbitration of parsed packets, the per-connection context table of
// N connections (block RAM), and the receiver of docs/spec.md §6.3-6.4 and §8.1-8.2.
//
// Connection setup is host software's (AccelTCP's split; see hw/README.md): the host runs the
// handshake and its cookies, picks the local connection identifier so that its low AW bits are
// the context index (index < N), and installs the connection over the control port. The engine
// then owns the data path of that connection: every packet whose dst_cid selects an installed
// context with the same full cid and the peer's address and port is handled here; everything
// else (SYN, SYN-ACK, RST, unknown connections) goes to the host port.
//
// Inputs: the parser's header descriptor (stride_rx_parser hdr_*; hdr_valid pulses at most every
// 10 cycles) and `now`, the local clock in ns (mod 2^32), which timestamps reception (STT).
//
// Per event (one op every 6 cycles: pick and read the record, register it twice, compare,
// decide, select; the write-back lands in the next op's pick cycle; the outputs of a packet come
// 6 to 11 cycles after its hdr_valid):
//   DATA, in order (seq = rcv_nxt): deliver (dlv_accept), rcv_nxt += len, STT = now - tx_ts is
//        remembered (echo policy `last`), the gap state clears; bytes count towards the ACK.
//   DATA, old (seq < rcv_nxt): duplicate, not delivered; bytes count towards the ACK.
//   DATA, gap (seq > rcv_nxt): dropped; one NACK (ack = rcv_nxt, echo = last STT) if none is
//        outstanding, and the NACK timer starts; otherwise it is remembered that more
//        out-of-order packets came.
//   An ACK request (ack = rcv_nxt, echo = last STT) when the bytes since the last ACK reach
//   ACK_INTERVAL, on PSH, on an in-order or repeated FIN (rcv_nxt then counts the FIN), or when
//   the delayed-ACK timer (armed by the first unacknowledged byte) expires.
//   CE-marked DATA increments the connection's ce_count (wire v2), sent in every ACK.
//   Every matched packet with ACK set is also passed to the sender port (snd_*): ack, window,
//   echo, tx_ts, NACK and CN flags, ce_count.
// Timers: a scanner visits one context per free op slot (packets and control first) and acts on
// the NACK timer (repeat the NACK if rcv_nxt has not moved and out-of-order packets came since)
// and the delayed-ACK timer. With N contexts a timer fires up to about 6·N cycles late (39 us
// at N = 1024 and 156.25 MHz, against delayed_ack = 50 us and nack_retry = 500 us).
//
// Outputs are one-cycle pulses without back-pressure (at most one per op); a transmit path
// queues them.
`timescale 1ns / 1ps
`default_nettype none

module stride_rx_engine #(
    parameter integer N = 64,
    parameter integer ACK_INTERVAL = 65536,
    parameter integer DELAYED_ACK_NS = 50000,
    parameter integer NACK_RETRY_NS = 500000
) (
    input  wire        clk,
    input  wire        rst,
    input  wire [31:0] now,

    // parsed packet (from stride_rx_parser)
    input  wire        hdr_valid,
    input  wire [7:0]  hdr_flags,
    input  wire [15:0] hdr_payload_len,
    input  wire [31:0] hdr_dst_cid,
    input  wire [31:0] hdr_seq,
    input  wire [31:0] hdr_ack,
    input  wire [31:0] hdr_tx_ts,
    input  wire [31:0] hdr_echo_stt,
    input  wire [15:0] hdr_window,
    input  wire [15:0] hdr_ce_count,
    input  wire [31:0] hdr_ip_src,
    input  wire [15:0] hdr_udp_sport,
    input  wire        hdr_ecn_ce,
    output wire        hdr_overrun,      // a header came while one was still waiting (never, by
                                         // the parser's 10-cycle spacing; counted for the tests)

    // control port (host software): op 1 = install, 2 = remove, 0 = read
    input  wire        ctl_valid,
    output wire        ctl_ready,
    input  wire [1:0]  ctl_op,
    input  wire [31:0] ctl_cid,          // local cid; its low AW bits are the context index
    input  wire [31:0] ctl_peer_ip,
    input  wire [15:0] ctl_peer_port,
    input  wire [31:0] ctl_rcv_nxt,      // peer's ISN + 1
    output reg         ctl_rd_valid,
    output reg  [31:0] ctl_rd_rcv_nxt,
    output reg         ctl_rd_installed,

    // payload verdict for the packet just parsed (DATA only): deliver to the connection's
    // stream at dlv_seq, or discard
    output reg         dlv_valid,
    output reg         dlv_accept,
    output reg  [15:0] dlv_ctx,
    output reg  [31:0] dlv_seq,
    output reg  [15:0] dlv_len,

    // ACK / NACK requests for the transmit path
    output reg         ack_valid,
    output reg         ack_nack,
    output reg  [15:0] ack_ctx,
    output reg  [31:0] ack_ack,
    output reg  [31:0] ack_echo_stt,
    output reg  [15:0] ack_ce_count,

    // to the sender: fields of every matched packet with ACK set
    output reg         snd_valid,
    output reg  [15:0] snd_ctx,
    output reg  [7:0]  snd_flags,
    output reg  [31:0] snd_ack,
    output reg  [15:0] snd_window,
    output reg  [31:0] snd_echo_stt,
    output reg  [31:0] snd_tx_ts,
    output reg  [15:0] snd_ce_count,

    // to host software: packets the engine does not own (handshake, RST, unknown connections)
    output reg         host_valid,
    output reg  [7:0]  host_flags,
    output reg  [31:0] host_dst_cid,

    output reg  [31:0] cnt_in_order,
    output reg  [31:0] cnt_dup,
    output reg  [31:0] cnt_gap,
    output reg  [31:0] cnt_to_host
);
    localparam integer AW = (N <= 2) ? 1 : $clog2(N);
    localparam integer LAST_I = N - 1;
    localparam [AW-1:0] LAST = LAST_I[AW-1:0];
    localparam [31:0] NACK_NS = NACK_RETRY_NS, DACK_NS = DELAYED_ACK_NS;
    localparam integer ACK_I = ACK_INTERVAL;
    localparam [16:0] ACK_BYTES = ACK_I[16:0];
    generate
        if (N < 1 || N > 1024) begin : bad_n
            parameter_N_must_be_1_to_1024 error_instance();
        end
        if (ACK_INTERVAL < 1 || ACK_INTERVAL > 65536) begin : bad_ack_interval
            parameter_ACK_INTERVAL_must_be_1_to_65536 error_instance();
        end
    endgenerate

    // ---- context record
    localparam integer R_VALID = 0, R_CID = 1, R_PIP = 33, R_PPORT = 65, R_RNXT = 81,
                       R_ACC = 113, R_STT = 130, R_NACK = 162, R_OOO = 163, R_NDL = 164,
                       R_DON = 196, R_DDL = 197, R_CE = 229, W = 245;

    // ---- serial compare: a < b on the circle mod 2^32 (spec §1)
    function lt32;
        input [31:0] a, b;
        reg [31:0] d;
        begin
            d = a - b;
            lt32 = d[31];
        end
    endfunction

    // ---- input holding registers (loaded on hdr_valid, with the sums the op needs precomputed)
    reg        hp;                 // a header waits to be taken
    reg        hbusy;              // its op is in flight (the fields must hold until it ends)
    reg [7:0]  h_flags;
    reg [15:0] h_len, h_window, h_ce_count, h_sport;
    reg [31:0] h_dst, h_seq, h_ack, h_tx_ts, h_echo, h_ip;
    reg        h_ce;
    reg [31:0] h_seq_end, h_seq_end_p1, h_seq_p1, h_stt, h_ndl, h_ddl;
    reg [17:0] h_ack_thr;          // ACK_BYTES - len (two's complement): acc + len >= ACK_BYTES
                                   // iff acc >= h_ack_thr
    assign hdr_overrun = hdr_valid && (hp || hbusy);

    // ---- op pipeline, one op per 6 cycles (phase ph):
    //   ph 0  pick an op (packet, control, else scanner), read address to the table; the
    //         previous op's record is written in this cycle too (same clock edge as the read)
    //   ph 1  a block RAM table registers its output in its own output register (read latency
    //         2); a LUT RAM table is read here from a registered address, after that write
    //   ph 2  ram_r -> rec_raw (a block RAM's output passes only the multiplexer that takes the
    //         record written at ph 0 when the read hit its index: the table is declared
    //         collision-free, such a read returns nothing defined)
    //   ph 3  C1: compares, sums and deadlines from the record, registered
    //   ph 4  D: decisions, registered (per-field selects, output strobes)
    //   ph 5  EX: outputs and the record to write back, selected by D, registered
    // A header is taken in the cycle its hdr_valid comes when that is a pick cycle (from the
    // parser's hdr_* directly), else at the next pick from h_*: at most 5 cycles of waiting, and
    // h_* is read up to EX, at most 10 cycles after its hdr_valid, in the cycle before the next
    // header (10 cycles later at the soonest) overwrites it.
    localparam [1:0] OP_PKT = 0, OP_CTL = 1, OP_SCAN = 2;
    reg  [2:0]  ph;
    reg  [1:0]  op;
    reg  [AW-1:0] scan_idx;
    // the packet's index: the waiting header's, else the one arriving now
    wire [31:0] pkt_dst    = hp ? h_dst : hdr_dst_cid;
    wire        pkt_idx_ok = {{(32 - AW) {1'b0}}, pkt_dst[AW-1:0]} < N;
    wire        ctl_idx_ok = {{(32 - AW) {1'b0}}, ctl_cid[AW-1:0]} < N;
    wire [AW-1:0] pkt_idx = pkt_dst[AW-1:0];
    wire [AW-1:0] ctl_idx = ctl_cid[AW-1:0];
    reg         clearing;          // after reset: every record is written with zeros
    reg  [AW-1:0] clear_idx;
    wire        pick     = !clearing && ph == 3'd0;
    wire        take_pkt = pick && (hp || hdr_valid);
    wire        take_ctl = pick && !hp && !hdr_valid && ctl_valid;
    assign ctl_ready = take_ctl;
    reg  [1:0]  c_op;
    reg  [31:0] c_cid, c_pip, c_rnxt;
    reg  [15:0] c_pport;
    reg  [AW-1:0] x_idx;
    reg         x_idx_ok;

    // the table's read address: only its value in a pick cycle (ph 0) reaches rec_raw (ph 2),
    // so it follows the pick's choice without the pick-cycle test (ph, clearing): one LUT
    // level less from the parser's hdr_valid to the block RAM's address pins
    wire [AW-1:0] rd_addr = (hp || hdr_valid) ? pkt_idx : ctl_valid ? ctl_idx : scan_idx;
    wire [W-1:0]  ram_q;
    reg           wr_en;
    reg  [AW-1:0] wr_addr;
    reg  [W-1:0]  wr_data;

    // the record reaches the op two clocks after the pick either way: a block RAM (N > 16) is
    // read with its own output register (stride_ctx_ram OUTREG, read latency 2: on ECP5 the
    // DP16KD's register, whose clock-to-out is fast, in place of a fabric register placed rows
    // away from the block RAM); a small table is LUT RAM (read without a clock), whose address,
    // fanned out to every cell of the 245-bit record, then comes from a register instead of the
    // pick's multiplexer
    reg           w_pend;          // ph 1: the previous op wrote its record at ph 0
    wire [AW-1:0] tbl_addr;
    wire [W-1:0]  ram_r;
    generate
        if (N <= 16) begin : lut_table
            reg [AW-1:0] addr_r;
            always @(posedge clk) addr_r <= rd_addr;
            assign tbl_addr = addr_r;
            assign ram_r = ram_q;
        end else begin : bram_table
            // ph 2: the block RAM's registered output, or the record written at ph 0 when this
            // op reads its index (the read then returns nothing defined): the hit is registered
            // at ph 1, and wr_data holds that record until the next EX, so the multiplexer
            // sits in front of rec_raw, after the block RAM's own register
            reg fwd_r;
            always @(posedge clk) fwd_r <= w_pend && x_idx == wr_addr;
            assign tbl_addr = rd_addr;
            assign ram_r = fwd_r ? wr_data : ram_q;
        end
    endgenerate

    stride_ctx_ram #(.DEPTH(1 << AW), .AW(AW), .WIDTH(W), .OLD_ON_COLLISION(0),
                     .OUTREG(N > 16 ? 1 : 0)) table_ (
        .clk(clk), .rd_addr(tbl_addr), .rd_data(ram_q),
        .wr_en(wr_en || clearing), .wr_addr(clearing ? clear_idx : wr_addr),
        .wr_data(wr_data)               // zero from reset to the end of the sweep
    );

    reg  [W-1:0]  rec_raw;
    wire [W-1:0]  rec = rec_raw;

    // ---- record fields of the op in C1 / C2
    wire        r_valid = rec[R_VALID];
    wire [31:0] r_cid   = rec[R_CID +: 32];
    wire [31:0] r_pip   = rec[R_PIP +: 32];
    wire [15:0] r_pport = rec[R_PPORT +: 16];
    wire [31:0] r_rnxt  = rec[R_RNXT +: 32];
    wire [16:0] r_acc   = rec[R_ACC +: 17];
    wire [31:0] r_stt   = rec[R_STT +: 32];
    wire        r_nack  = rec[R_NACK];
    wire        r_ooo   = rec[R_OOO];
    wire [31:0] r_ndl   = rec[R_NDL +: 32];
    wire        r_don   = rec[R_DON];
    wire [31:0] r_ddl   = rec[R_DDL +: 32];
    wire [15:0] r_ce    = rec[R_CE +: 16];

    wire is_data = h_flags[5];
    wire is_fin  = h_flags[3];
    wire is_psh  = h_flags[6];
    wire has_ack = h_flags[1];
    wire handshake_or_rst = h_flags[0] || h_flags[4];

    // C1 results
    reg         k_match, k_in_order, k_old, k_fin_rep, k_acc_hit, k_ndl_due, k_ddl_due;
    reg  [16:0] k_acc_sum;
    reg  [15:0] k_ce1;
    reg  [31:0] k_now_nack;
    // D results
    reg         d_host, d_dlv, d_snd, d_ackv, d_nack, d_in_order, d_dup, d_gap, d_rd,
                d_installed, d_wr, d_ctl, d_inst, n_nack, n_ooo, n_don;
    reg  [31:0] d_c_rnxt;
    reg  [1:0]  d_rn, d_acc, d_stt, d_ndl, d_ddl, d_ce;

    always @(posedge clk) begin
        if (rst) begin
            hp <= 1'b0; hbusy <= 1'b0; ph <= 3'd0; op <= OP_SCAN; scan_idx <= 0;
            wr_en <= 1'b0; wr_addr <= 0; w_pend <= 1'b0;
            ctl_rd_valid <= 1'b0; dlv_valid <= 1'b0; ack_valid <= 1'b0; snd_valid <= 1'b0;
            host_valid <= 1'b0;
            cnt_in_order <= 0; cnt_dup <= 0; cnt_gap <= 0; cnt_to_host <= 0;
            x_idx <= 0; x_idx_ok <= 1'b0; clearing <= 1'b1; clear_idx <= 0;
            wr_data <= {W{1'b0}};       // held through the sweep (no multiplexer before the RAM)
        end else if (clearing) begin
            clear_idx <= clear_idx + 1'b1;
            if (clear_idx == LAST) clearing <= 1'b0;
            if (hdr_valid) hp <= 1'b1;   // kept; handled once the table is clear
        end else begin
            ph <= (ph == 3'd5) ? 3'd0 : ph + 3'd1;
            wr_en <= 1'b0;
            if (ph == 3'd0) w_pend <= wr_en;
            ctl_rd_valid <= 1'b0; dlv_valid <= 1'b0; ack_valid <= 1'b0; snd_valid <= 1'b0;
            host_valid <= 1'b0;

            // ---- ph 0: pick an op; its read address goes to the table now
            if (ph == 3'd0) begin
                if (take_pkt) begin
                    op <= OP_PKT; x_idx <= pkt_idx; x_idx_ok <= pkt_idx_ok;
                    hp <= 1'b0; hbusy <= 1'b1;
                end else if (take_ctl) begin
                    op <= OP_CTL; x_idx <= ctl_idx; x_idx_ok <= ctl_idx_ok;
                    c_op <= ctl_op; c_cid <= ctl_cid; c_pip <= ctl_peer_ip;
                    c_pport <= ctl_peer_port; c_rnxt <= ctl_rcv_nxt;
                end else begin
                    op <= OP_SCAN; x_idx <= scan_idx; x_idx_ok <= 1'b1;
                    scan_idx <= (scan_idx == LAST) ? {AW{1'b0}} : scan_idx + 1'b1;
                end
            end

            // ---- ph 2: the record (ram_r: see the table above)
            if (ph == 3'd2) rec_raw <= ram_r;

            // ---- ph 3: C1
            if (ph == 3'd3) begin
                k_match <= x_idx_ok && r_valid && r_cid == h_dst && r_pip == h_ip &&
                           r_pport == h_sport;
                k_in_order <= h_seq == r_rnxt;
                k_old <= lt32(h_seq, r_rnxt);
                k_fin_rep <= h_seq_p1 == r_rnxt;
                k_acc_sum <= r_acc + {1'b0, h_len};
                k_acc_hit <= $signed({1'b0, r_acc}) >= $signed(h_ack_thr);
                k_ce1 <= r_ce + 16'd1;
                k_ndl_due <= !lt32(now, r_ndl);
                k_ddl_due <= !lt32(now, r_ddl);
                k_now_nack <= now + NACK_NS;
            end

            // ---- ph 4: D, the decisions from C1's flags, registered as per-field selects and
            // output strobes, so that EX only selects by them (one or two LUTs per bit; the
            // decisions feeding the record's write-back multiplexers were the critical path)
            if (ph == 3'd4) begin : decide
                reg pkt, ctl, ok, data, ino, old, gap, fin_in, fin_ack, scan, snk, sdk, sa, sn;
                pkt = op == OP_PKT;
                ctl = op == OP_CTL;
                // the header is free from here: a new one (hdr_valid at most every 10 cycles)
                // lands in h_* at the end of the next cycle, after EX has read this one
                if (pkt) hbusy <= 1'b0;
                scan = op == OP_SCAN && r_valid;
                ok = pkt && k_match && !handshake_or_rst;
                data = ok && is_data;
                ino = data && k_in_order;
                old = data && !k_in_order && k_old;
                gap = data && !k_in_order && !k_old;
                fin_in = ok && is_fin && k_in_order;
                fin_ack = ok && is_fin && (k_in_order || k_fin_rep);
                snk = scan && r_nack && k_ndl_due;          // the NACK timer is due
                sdk = scan && r_don && k_ddl_due;           // the delayed ACK is due
                // an ACK: bytes since the last ACK reach the interval, PSH, FIN, delayed ACK;
                // a NACK: a gap with no NACK outstanding, or the timer with news since
                sa = ((ino || old) && (k_acc_hit || is_psh)) || fin_ack || sdk;
                sn = (gap && !r_nack) || (snk && r_ooo);
                d_host <= pkt && !(k_match && !handshake_or_rst);
                d_dlv <= data;
                d_snd <= ok && has_ack;
                d_ackv <= sa || sn;
                d_nack <= sn && !sa;
                d_in_order <= ino; d_dup <= old; d_gap <= gap;
                d_rd <= ctl && c_op == 2'd0;
                d_installed <= r_valid && r_cid == c_cid;
                d_wr <= ctl ? (c_op != 2'd0 && x_idx_ok) : (ok || snk || sdk);
                d_ctl <= ctl;
                d_inst <= ctl && c_op == 2'd1;
                d_c_rnxt <= (c_op == 2'd1) ? c_rnxt : 32'd0;
                // rcv_nxt: an in-order FIN counts (seq (+ len) + 1), in-order DATA seq + len
                d_rn <= fin_in ? (is_data ? 2'd2 : 2'd3) : ino ? 2'd1 : 2'd0;
                d_acc <= (ctl || sa) ? 2'd2 : (ino || old) ? 2'd1 : 2'd0;
                d_stt <= ctl ? 2'd2 : ino ? 2'd1 : 2'd0;
                d_ndl <= ctl ? 2'd3 : (gap && !r_nack) ? 2'd1 : snk ? 2'd2 : 2'd0;
                d_ddl <= ctl ? 2'd2 : ((ino || old) && !(k_acc_hit || is_psh) && !r_don) ? 2'd1 :
                         2'd0;
                d_ce <= ctl ? 2'd2 : (data && h_ce) ? 2'd1 : 2'd0;
                n_nack <= ctl ? 1'b0 : ino ? 1'b0 : gap ? 1'b1 : r_nack;
                n_ooo <= ctl ? 1'b0 : ino ? 1'b0 : gap ? r_nack : snk ? 1'b0 : r_ooo;
                n_don <= ctl ? 1'b0 : sa ? 1'b0 : ((ino || old) && !r_don) ? 1'b1 : r_don;
            end

            // ---- ph 5: EX, the outputs and the record to write back, selected by D
            if (ph == 3'd5) begin : exec
                reg [W-1:0] nr;
                reg [31:0]  rnxt, stt, ndl, ddl;
                reg [16:0]  acc;
                reg [15:0]  ce;
                case (d_rn)
                    2'd0: rnxt = r_rnxt;
                    2'd1: rnxt = h_seq_end;
                    2'd2: rnxt = h_seq_end_p1;
                    default: rnxt = h_seq_p1;
                endcase
                if (d_ctl) rnxt = d_c_rnxt;
                acc = d_acc[1] ? 17'd0 : d_acc[0] ? k_acc_sum : r_acc;
                stt = d_stt[1] ? 32'd0 : d_stt[0] ? h_stt : r_stt;
                case (d_ndl)
                    2'd0: ndl = r_ndl;
                    2'd1: ndl = h_ndl;
                    2'd2: ndl = k_now_nack;
                    default: ndl = 32'd0;
                endcase
                ddl = d_ddl[1] ? 32'd0 : d_ddl[0] ? h_ddl : r_ddl;
                ce = d_ce[1] ? 16'd0 : d_ce[0] ? k_ce1 : r_ce;
                nr[R_VALID] = d_ctl ? d_inst : r_valid;
                nr[R_CID +: 32] = d_ctl ? (d_inst ? c_cid : 32'd0) : r_cid;
                nr[R_PIP +: 32] = d_ctl ? (d_inst ? c_pip : 32'd0) : r_pip;
                nr[R_PPORT +: 16] = d_ctl ? (d_inst ? c_pport : 16'd0) : r_pport;
                nr[R_RNXT +: 32] = rnxt; nr[R_ACC +: 17] = acc; nr[R_STT +: 32] = stt;
                nr[R_NACK] = n_nack; nr[R_OOO] = n_ooo; nr[R_NDL +: 32] = ndl;
                nr[R_DON] = n_don; nr[R_DDL +: 32] = ddl; nr[R_CE +: 16] = ce;
                ctl_rd_valid <= d_rd;
                ctl_rd_rcv_nxt <= r_rnxt;
                ctl_rd_installed <= d_installed;
                host_valid <= d_host;
                dlv_valid <= d_dlv;
                snd_valid <= d_snd;
                ack_valid <= d_ackv;
                if (d_host) cnt_to_host <= cnt_to_host + 1;
                if (d_in_order) cnt_in_order <= cnt_in_order + 1;
                if (d_dup) cnt_dup <= cnt_dup + 1;
                if (d_gap) cnt_gap <= cnt_gap + 1;
                // the fields of the ACK/NACK request, the ACK for the sender, the delivery verdict
                // and the host notice are loaded in every EX, whatever the decisions (they
                // matter only with their valid)
                ack_nack <= d_nack;
                ack_ctx <= {{(16 - AW) {1'b0}}, x_idx};
                ack_ack <= rnxt; ack_echo_stt <= stt; ack_ce_count <= ce;
                snd_ctx <= {{(16 - AW) {1'b0}}, x_idx};
                snd_flags <= h_flags; snd_ack <= h_ack; snd_window <= h_window;
                snd_echo_stt <= h_echo; snd_tx_ts <= h_tx_ts; snd_ce_count <= h_ce_count;
                dlv_ctx <= {{(16 - AW) {1'b0}}, x_idx}; dlv_seq <= h_seq; dlv_len <= h_len;
                dlv_accept <= d_in_order;
                host_flags <= h_flags; host_dst_cid <= h_dst;
                wr_en <= d_wr;
                wr_addr <= x_idx;
                wr_data <= nr;
            end

            // header intake: it waits unless the pick above took it at once
            if (hdr_valid && !(take_pkt && !hp)) hp <= 1'b1;
        end
    end

    always @(posedge clk) begin
        if (hdr_valid) begin
            h_flags <= hdr_flags; h_len <= hdr_payload_len; h_dst <= hdr_dst_cid;
            h_seq <= hdr_seq; h_ack <= hdr_ack; h_tx_ts <= hdr_tx_ts; h_echo <= hdr_echo_stt;
            h_window <= hdr_window; h_ce_count <= hdr_ce_count; h_ip <= hdr_ip_src;
            h_sport <= hdr_udp_sport; h_ce <= hdr_ecn_ce;
            h_seq_end <= hdr_seq + {16'd0, hdr_payload_len};
            h_seq_end_p1 <= hdr_seq + {16'd0, hdr_payload_len} + 32'd1;
            h_seq_p1 <= hdr_seq + 32'd1;
            h_stt <= now - hdr_tx_ts;
            h_ndl <= now + NACK_NS;
            h_ddl <= now + DACK_NS;
            h_ack_thr <= {1'b0, ACK_BYTES} - {2'b00, hdr_payload_len};
        end
    end

endmodule

`default_nettype wire
