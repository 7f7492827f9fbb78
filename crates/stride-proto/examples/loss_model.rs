//! Loss recovery in the deterministic in-memory network (`testkit`): selective against
//! go-back-N at 5 % and 1 % loss and 5 % reordering, 1 ms one way, a 1 Gbit/s sender (no
//! bottleneck: the controller's rate is the only limit), 20 MB, three seeds, medians.
//! Impairments apply to both directions (ACKs and NACKs are lost too). Virtual time, so the
//! figures do not depend on the machine's load (docs/results.md, "Loss recovery and the NACK
//! gate").
//!
//!   cargo run --release -p stride-proto --example loss_model
//!
//! Variants: `go-back-n`, `selective`, and `selective md30` (the controller's multiplicative
//! cuts made negligible with `md_shift = 30`: what the NACK reaction costs under random loss),
//! and `selective gate off` / `selective gate on` (the `nack_gate` switch forced each way;
//! plain `selective` is the default configuration).

use stride_proto::cc::StrideParams;
use stride_proto::testkit::{transfer, Link};
use stride_proto::{Config, Recovery};

fn main() {
    let size = 20_000_000usize;
    let data: Vec<u8> = (0..size).map(|i| (i * 7 + i / 1000) as u8).collect();
    let cases = [
        ("loss 5 %", 50_000u32, 0u32, 0.05f64),
        ("loss 1 %", 10_000, 0, 0.01),
        ("reorder 5 %", 0, 50_000, 0.0),
    ];
    let variants = [
        ("go-back-n", Recovery::GoBackN, 3u8, None),
        ("selective", Recovery::Selective, 3, None),
        ("selective md30", Recovery::Selective, 30, None),
        ("selective gate off", Recovery::Selective, 3, Some(false)),
        ("selective gate on", Recovery::Selective, 3, Some(true)),
    ];
    println!("| case | recovery | goodput (Gbit/s) | goodput / ((1-loss) x 1 Gbit/s) | resent / file | timeouts |");
    println!("|---|---|---|---|---|---|");
    for (case, loss, reorder, p) in cases {
        for (name, recovery, md, gate) in variants {
            let mut runs = vec![];
            for seed in 1..=3u64 {
                let mut c = Config::for_line_rate_gbps(1.0);
                c.recovery = recovery;
                // The UDP host profile's RTO floor; a short linger so the end time is the
                // transfer's.
                c.min_rto_ns = 10_000_000;
                c.linger_ns = 1_000_000;
                if let Some(sp) = c.cc.params_mut::<StrideParams>() {
                    sp.md_shift = md;
                    if let Some(g) = gate {
                        sp.nack_gate = g;
                    }
                }
                let link = Link {
                    delay_ns: 1_000_000,
                    loss_ppm: loss,
                    reorder_ppm: reorder,
                    reorder_ns: 100_000,
                    ..Default::default()
                };
                let start = 1_000_000u64;
                let o = transfer(c, link, seed, &data, &[], 600_000_000_000);
                assert!(
                    o.at_server == data,
                    "{case} {name} seed {seed}: not byte-exact"
                );
                let s = &o.client_stats;
                let gbps = size as f64 * 8.0 / (o.end_ns - start) as f64;
                let resent = s.retransmitted_packets as f64 * 1440.0 / size as f64;
                runs.push((gbps, resent, s.timeouts));
            }
            let med = |f: &dyn Fn(&(f64, f64, u64)) -> f64| {
                let mut v: Vec<f64> = runs.iter().map(f).collect();
                v.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
                v[v.len() / 2]
            };
            let g = med(&|r| r.0);
            println!(
                "| {case} | {name} | {g:.3} | {:.2} | {:.3} | {} |",
                g / (1.0 - p),
                med(&|r| r.1),
                med(&|r| r.2 as f64)
            );
        }
    }
}
