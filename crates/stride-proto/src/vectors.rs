//! Shared test vectors: the contract between `stride-proto` and the Verilog core.
//!
//! `vectors/cc/*.jsonl` hold one case per line: parameters and a sequence of events with the exact
//! controller state after each. `vectors/wire/*.jsonl` hold header field values and their bytes.
//! `stride vectors` regenerates them; `tests/vectors.rs` fails when the checked-in files differ.

mod compete;
pub use compete::compete_files;
#[cfg(test)]
pub(crate) use compete::params as compete_params;

use crate::cc::{Stride, StrideParams};
use crate::wire::{Flags, Header, HEADER_LEN};
use std::fmt::Write;

/// One controller event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CcEvent {
    /// An STT sample from an ACK.
    Sample(u32),
    /// A NACK.
    Nack,
    /// A retransmission timeout.
    Timeout,
}

pub use crate::rng::SplitMix;

pub(crate) fn params_json(p: &StrideParams) -> String {
    // `nack_gate` (the only per-event mechanism the RTL has) is written only when on, so the
    // lines of the paper's Algorithm 1 stay as they were.
    format!(
        "{{\"alpha_shift\":{},\"beta\":{},\"wbeta\":{},\"t_low\":{},\"t_high\":{},\"md_shift\":{},\"norm_shift\":{},\"rate_min\":{},\"rate_max\":{},\"rate_init\":{},\"min_window\":{}{}}}",
        p.alpha_shift, p.beta, p.wbeta, p.t_low, p.t_high, p.md_shift, p.norm_shift, p.rate_min,
        p.rate_max, p.rate_init, p.min_window,
        if p.nack_gate { ",\"nack_gate\":true" } else { "" }
    )
}

/// Runs `events` through a fresh controller and renders one JSONL line.
pub fn cc_case_line(name: &str, p: &StrideParams, events: &[CcEvent]) -> String {
    let mut c = Stride::new(*p);
    let mut s = format!(
        "{{\"name\":\"{name}\",\"params\":{},\"steps\":[",
        params_json(p)
    );
    for (i, ev) in events.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        match *ev {
            CcEvent::Sample(stt) => {
                c.on_sample(stt);
                let _ = write!(s, "{{\"event\":\"sample\",\"stt\":{stt},");
            }
            CcEvent::Nack => {
                c.nack();
                s.push_str("{\"event\":\"nack\",");
            }
            CcEvent::Timeout => {
                c.timeout();
                s.push_str("{\"event\":\"timeout\",");
            }
        }
        let _ = write!(
            s,
            "\"rate\":{},\"d\":{},\"stt_old\":{},\"min_cur\":{},\"min_prev\":{},\"count\":{},\"branch\":\"{}\"}}",
            c.algorithm_rate(),
            c.gradient(),
            c.stt_old(),
            c.min_cur(),
            c.min_prev(),
            c.count(),
            c.branch().name()
        );
    }
    s.push_str("]}\n");
    s
}

fn base_params() -> StrideParams {
    StrideParams::hand_checked()
}

/// Random events around a base STT, with occasional NACKs, timeouts and wild jumps.
pub fn random_events(rng: &mut SplitMix, n: usize, base: u32, spread: u32) -> Vec<CcEvent> {
    let mut out = Vec::with_capacity(n);
    let mut cur = base;
    for _ in 0..n {
        let r = rng.below(100);
        let ev = if r < 3 {
            CcEvent::Nack
        } else if r < 5 {
            CcEvent::Timeout
        } else if r < 8 {
            CcEvent::Sample(rng.next_u64() as u32)
        } else {
            let step = rng.below(u64::from(spread) + 1) as u32;
            cur = if rng.below(2) == 0 {
                cur.wrapping_add(step)
            } else {
                cur.wrapping_sub(step)
            };
            // drift back towards the base so the queue-delay bands are all visited
            if rng.below(8) == 0 {
                cur = base.wrapping_add(rng.below(u64::from(spread) * 4) as u32);
            }
            CcEvent::Sample(cur)
        };
        out.push(ev);
    }
    out
}

/// Random but valid parameters.
pub fn random_params(rng: &mut SplitMix) -> StrideParams {
    let t_low = rng.below(20_000) as u32;
    let t_high = t_low + rng.below(100_000) as u32;
    let rate_min = 1 + rng.below(100_000) as u32;
    let rate_max = rate_min + rng.below(u64::from(u32::MAX - rate_min)) as u32;
    let rate_init = rate_min + rng.below(u64::from(rate_max - rate_min) + 1) as u32;
    StrideParams {
        alpha_shift: rng.below(16) as u8,
        beta: rng.below(1 << 20) as u32,
        wbeta: rng.below(1 << 24) as u32,
        t_low,
        t_high,
        md_shift: 1 + rng.below(31) as u8,
        norm_shift: rng.below(32) as u8,
        rate_min,
        rate_max,
        rate_init,
        min_window: 1 + rng.below(64) as u16,
        ..StrideParams::hand_checked()
    }
}

/// `n_cases` random cases of `steps` events each, from `seed` (for `stride vectors --random`).
pub fn cc_random(seed: u64, n_cases: usize, steps: usize) -> String {
    let mut rng = SplitMix::new(seed);
    let mut out = String::new();
    for i in 0..n_cases {
        let p = random_params(&mut rng);
        let base = rng.next_u64() as u32;
        let spread = 1 + rng.below(u64::from(p.t_high) + 1000) as u32;
        let ev = random_events(&mut rng, steps, base, spread);
        out.push_str(&cc_case_line(&format!("random-{seed}-{i}"), &p, &ev));
    }
    out
}

/// The checked-in controller vectors: (file name, contents).
pub fn cc_files() -> Vec<(&'static str, String)> {
    let p = base_params();
    vec![
        ("branches.jsonl", branch_cases(&p)),
        ("extremes.jsonl", extreme_cases(&p)),
        ("wrap.jsonl", wrap_cases(&p)),
        ("random.jsonl", random_cases()),
        ("nack_gate.jsonl", gate_cases()),
    ]
}

/// One hand-checked case per branch of Algorithm 1 and its threshold edges.
fn branch_cases(p: &StrideParams) -> String {
    use CcEvent::*;
    let p = *p;
    let mut branches = String::new();
    branches.push_str(&cc_case_line("first-sample-low", &p, &[Sample(50_000)]));
    branches.push_str(&cc_case_line(
        "high",
        &p,
        &[Sample(50_000), Sample(60_000), Sample(70_000)],
    ));
    branches.push_str(&cc_case_line(
        "grad-dec-halve",
        &p,
        &[Sample(50_000), Sample(55_000)],
    ));
    let mut p20 = p;
    p20.norm_shift = 20;
    branches.push_str(&cc_case_line(
        "grad-dec-small",
        &p20,
        &[Sample(50_000), Sample(52_000), Sample(53_000)],
    ));
    branches.push_str(&cc_case_line(
        "grad-inc-falling",
        &p,
        &[
            Sample(50_000),
            Sample(58_000),
            Sample(55_000),
            Sample(53_000),
            Sample(52_000),
            Sample(51_900),
        ],
    ));
    branches.push_str(&cc_case_line(
        "nack-timeout",
        &p,
        &[Nack, Timeout, Sample(1), Nack, Timeout, Timeout, Timeout],
    ));
    branches.push_str(&cc_case_line(
        "threshold-edges",
        &p,
        &[
            Sample(10_000),
            Sample(10_999), // qd = t_low - 1: low
            Sample(11_000), // qd = t_low: band
            Sample(19_999), // band
            Sample(20_000), // qd = t_high: high
            Sample(10_000), // back to the minimum
        ],
    ));
    branches
}

/// Saturation, floors and the largest and smallest shifts.
fn extreme_cases(p: &StrideParams) -> String {
    use CcEvent::*;
    let p = *p;
    let mut extremes = String::new();
    let mut pe = p;
    pe.alpha_shift = 0;
    extremes.push_str(&cc_case_line(
        "gradient-saturates",
        &pe,
        &[
            Sample(0),
            Sample(0x7fff_ffff),
            Sample(0),
            Sample(0x8000_0000),
        ],
    ));
    let mut pm = p;
    pm.beta = u32::MAX;
    pm.wbeta = u32::MAX;
    pm.rate_max = u32::MAX;
    extremes.push_str(&cc_case_line(
        "rate-saturates",
        &pm,
        &[Sample(5), Sample(5), Timeout, Sample(5)],
    ));
    let mut pn = p;
    pn.rate_min = 75_000;
    extremes.push_str(&cc_case_line(
        "rate-floor",
        &pn,
        &[Timeout, Timeout, Nack, Sample(100), Sample(100_000)],
    ));
    let mut p31 = p;
    p31.norm_shift = 31;
    p31.alpha_shift = 15;
    p31.md_shift = 31;
    extremes.push_str(&cc_case_line(
        "max-shifts",
        &p31,
        &[Sample(0), Sample(5_000), Sample(40_000), Nack],
    ));
    let mut p0 = p;
    p0.norm_shift = 0;
    p0.md_shift = 1;
    p0.t_low = 0;
    p0.t_high = 0;
    extremes.push_str(&cc_case_line(
        "zero-thresholds",
        &p0,
        &[Sample(7), Sample(8), Sample(9)],
    ));
    extremes
}

/// The mod-2^32 STT clock and the windowed minimum's rollover.
fn wrap_cases(p: &StrideParams) -> String {
    use CcEvent::*;
    let p = *p;
    let mut wrap = String::new();
    wrap.push_str(&cc_case_line(
        "stt-wrap",
        &p,
        &[
            Sample(u32::MAX - 100),
            Sample(200),
            Sample(u32::MAX - 200),
            Sample(5_000),
            Sample(10_000),
        ],
    ));
    let mut pw = p;
    pw.min_window = 1;
    wrap.push_str(&cc_case_line(
        "window-of-one",
        &pw,
        &[
            Sample(10_000),
            Sample(9_000),
            Sample(15_000),
            Sample(15_000),
        ],
    ));
    wrap.push_str(&cc_case_line(
        "window-rollover",
        &p,
        &[
            Sample(10_000),
            Sample(9_000),
            Sample(12_000),
            Sample(12_500),
            Sample(12_500),
            Sample(12_500),
            Sample(12_500),
            Sample(12_500),
            Sample(12_600),
        ],
    ));
    wrap
}

/// Random events on hand-checked and random parameters, and the paper's profile at 10 Gbit/s.
fn random_cases() -> String {
    let mut rng = SplitMix::new(0x5712_1de0);
    let mut random = String::new();
    for i in 0..16 {
        let p = if i < 4 {
            base_params()
        } else {
            random_params(&mut rng)
        };
        let base = rng.next_u64() as u32;
        let spread = 1 + rng.below(u64::from(p.t_high) + 1000) as u32;
        let ev = random_events(&mut rng, 256, base, spread);
        random.push_str(&cc_case_line(&format!("random-{i}"), &p, &ev));
    }
    // The paper's Algorithm 1 at the 10 Gbit/s defaults (the default profile's per-event
    // mechanisms are in `nack_gate.jsonl`).
    let d = crate::cc::StrideParams::paper(crate::cc::rate_from_gbps(10.0));
    let mut rng = SplitMix::new(7);
    let ev = random_events(&mut rng, 512, 3_000_000_000, 20_000);
    random.push_str(&cc_case_line("defaults-10g", &d, &ev));
    random
}

/// The NACK gate (spec §8.6): hand-checked and random cases with it on, and the default
/// profile at 10 Gbit/s (whatever its per-event switches are).
fn gate_cases() -> String {
    use CcEvent::*;
    // The NACK gate (spec §8.6): hand-checked and random cases with it on, and the default
    // profile at 10 Gbit/s (whatever its per-event switches are).
    let mut gate = String::new();
    let mut g = base_params();
    g.nack_gate = true;
    gate.push_str(&cc_case_line(
        "gate-nack-before-first-sample",
        &g,
        &[Nack, Sample(50_000), Nack],
    ));
    gate.push_str(&cc_case_line(
        "gate-held-below-t-low-cut-at-t-low",
        &g,
        &[
            Sample(50_000),
            Nack,
            Sample(50_999),
            Nack,
            Sample(51_000),
            Nack,
            Sample(70_000),
            Nack,
            Sample(50_000),
            Nack,
            Timeout,
        ],
    ));
    gate.push_str(&cc_case_line(
        "gate-below-minimum-wraps",
        &g,
        &[
            Sample(u32::MAX - 10),
            Sample(5),
            Nack,
            Sample(u32::MAX - 500),
            Nack,
        ],
    ));
    let mut rng = SplitMix::new(0x9a7e_0012);
    for i in 0..6 {
        let mut p = if i < 2 {
            base_params()
        } else {
            random_params(&mut rng)
        };
        p.nack_gate = true;
        let base = rng.next_u64() as u32;
        let spread = 1 + rng.below(u64::from(p.t_high) + 1000) as u32;
        let ev = random_events(&mut rng, 256, base, spread);
        gate.push_str(&cc_case_line(&format!("gate-random-{i}"), &p, &ev));
    }
    let d = crate::cc::StrideParams::for_line_rate(crate::cc::rate_from_gbps(10.0));
    let ev = random_events(&mut rng, 512, 3_000_000_000, 20_000);
    gate.push_str(&cc_case_line("defaults-10g", &d, &ev));
    gate
}

fn header_json(h: &Header) -> String {
    format!(
        "{{\"version\":{},\"flags\":{},\"payload_len\":{},\"dst_cid\":{},\"src_cid\":{},\"seq\":{},\"ack\":{},\"tx_ts\":{},\"echo_stt\":{},\"window\":{},\"ce_count\":{}}}",
        h.version,
        h.flags.bits(),
        h.payload_len,
        h.dst_cid,
        h.src_cid,
        h.seq,
        h.ack,
        h.tx_ts,
        h.echo_stt,
        h.window,
        h.ce_count
    )
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// The checked-in wire vectors: (file name, contents).
pub fn wire_files() -> Vec<(&'static str, String)> {
    let mut hs = vec![
        Header::new(Flags::SYN, 0x0102_0304, 0, 0x1111_1111, 0, 0x0000_0001),
        Header::new(
            Flags::SYN | Flags::ACK,
            0xa0b0_c0d0,
            0x0102_0304,
            0xffff_ffff,
            0x1111_1112,
            7,
        ),
        Header::new(Flags::ACK, 0, 0, 0, 0, 0),
        Header::new(Flags::NACK | Flags::ACK, 1, 2, 3, 0x8000_0000, u32::MAX),
        Header::new(
            Flags::FIN | Flags::ACK,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
            u32::MAX,
        ),
        Header::new(Flags::RST, 0xdead_beef, 0xcafe_f00d, 0, 0, 0),
    ];
    let mut d = Header::new(
        Flags::DATA | Flags::ACK | Flags::PSH,
        5,
        6,
        1440,
        9,
        123_456_789,
    );
    d.payload_len = 1440;
    d.echo_stt = 4_000_000_000;
    d.window = 0xffff;
    hs.push(d);
    // Version 2: a congestion notification and an ACK carrying a CE count.
    let mut cn = Header::new(Flags::ACK | Flags::CN, 0x0a0b_0c0d, 3, 4, 5, 6);
    cn.ce_count = 0x8001;
    hs.push(cn);
    let mut ce = Header::new(Flags::ACK, 11, 12, 13, 14, 15);
    ce.ce_count = u16::MAX;
    ce.echo_stt = 16;
    hs.push(ce);
    let mut rng = SplitMix::new(0x3c3c);
    for _ in 0..24 {
        let v = [
            rng.next_u64(),
            rng.next_u64(),
            rng.next_u64(),
            rng.next_u64(),
        ];
        let mut h = Header::new(
            Flags::DATA | Flags::ACK,
            v[0] as u32,
            (v[0] >> 32) as u32,
            v[1] as u32,
            (v[1] >> 32) as u32,
            v[2] as u32,
        );
        h.payload_len = (v[3] as u16) % 9000;
        h.echo_stt = (v[2] >> 32) as u32;
        h.window = (v[3] >> 16) as u16;
        h.ce_count = (v[3] >> 32) as u16;
        hs.push(h);
    }
    // Selective recovery and start hints (spec 5.1, 3.1, 8.6): a SYN offering CAP_SELECTIVE in
    // echo_stt; a SYN-ACK with the SYN's STT in echo_stt and, in ce_count, the grant (present,
    // shift 3) and CAP_SELECTIVE in bits 8..14; a selective NACK announcing two 8-byte ranges.
    let mut syn = Header::new(Flags::SYN, 0, 0x0102_0304, 0x1111_1111, 0, 2);
    syn.echo_stt = crate::wire::CAP_SELECTIVE;
    syn.window = 4096;
    hs.push(syn);
    let mut sa = Header::new(
        Flags::SYN | Flags::ACK,
        0x0102_0304,
        0xa0b0_c0d0,
        0x2222_2222,
        0x1111_1112,
        3,
    );
    sa.echo_stt = 1_234;
    sa.ce_count =
        crate::endpoint::GRANT_PRESENT | crate::wire::syn_ack_caps(crate::wire::CAP_SELECTIVE) | 3;
    sa.window = 4096;
    hs.push(sa);
    let mut sn = Header::new(Flags::NACK | Flags::ACK, 1, 2, 3, 0x1000, 4);
    sn.payload_len = 2 * crate::wire::NACK_RANGE_LEN as u16;
    sn.echo_stt = 5;
    sn.window = 64;
    hs.push(sn);
    let mut s = String::new();
    for h in &hs {
        let mut buf = [0u8; HEADER_LEN];
        h.emit(&mut buf).expect("buffer is HEADER_LEN");
        let _ = writeln!(
            s,
            "{{\"fields\":{},\"bytes\":\"{}\"}}",
            header_json(h),
            hex(&buf)
        );
    }
    vec![("headers.jsonl", s)]
}
