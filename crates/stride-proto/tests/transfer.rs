//! End-to-end behaviour of two endpoints over the in-memory link model.
use proptest::prelude::*;
use stride_proto::testkit::{transfer, Link};
use stride_proto::{CloseReason, Config};

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 11) as u8)
        .collect()
}

fn cfg() -> Config {
    Config {
        min_rto_ns: 200_000,
        initial_rto_ns: 1_000_000,
        max_rto_ns: 100_000_000,
        linger_ns: 400_000_000,
        nack_retry_ns: 100_000,
        ..Config::default()
    }
}

fn check(link: Link, seed: u64, up: usize, down: usize) {
    let u = data(up, 1);
    let d = data(down, 2);
    let o = transfer(cfg(), link, seed, &u, &d, 120_000_000_000);
    assert!(
        o.at_server == u,
        "server got {} of {} bytes (seed {seed}, {link:?})",
        o.at_server.len(),
        u.len()
    );
    assert!(
        o.at_client == d,
        "client got {} of {} bytes (seed {seed}, {link:?})",
        o.at_client.len(),
        d.len()
    );
    assert_eq!(
        o.client_close,
        Some(CloseReason::Graceful),
        "client close; seed {seed} {link:?}"
    );
    assert_eq!(
        o.server_close,
        Some(CloseReason::Graceful),
        "server close; seed {seed} {link:?}"
    );
    assert_eq!(o.client_conns_left, 0, "client leaked state");
    assert_eq!(o.server_conns_left, 0, "server leaked state");
}

#[test]
fn clean_link_one_megabyte_each_way() {
    check(
        Link {
            delay_ns: 10_000,
            ..Default::default()
        },
        1,
        1 << 20,
        1 << 20,
    );
}

#[test]
fn empty_transfer_opens_and_closes() {
    check(
        Link {
            delay_ns: 5_000,
            ..Default::default()
        },
        2,
        0,
        0,
    );
}

#[test]
fn lossy_link_recovers_with_nack_and_timeouts() {
    let link = Link {
        delay_ns: 10_000,
        loss_ppm: 50_000,
        ..Default::default()
    };
    let u = data(300_000, 3);
    let o = transfer(cfg(), link, 7, &u, &[], 120_000_000_000);
    assert!(o.at_server == u);
    assert!(
        o.client_stats.nacks_received > 0,
        "a 5% lossy link must produce NACKs"
    );
    assert!(o.client_stats.retransmitted_packets > 0);
}

#[test]
fn clean_link_has_no_retransmissions_and_one_ack_per_64k() {
    let link = Link {
        delay_ns: 10_000,
        ..Default::default()
    };
    let u = data(4 << 20, 4);
    // At line rate from the start (see behaviour.rs: slower, the delayed-ACK timer acks less).
    let mut c = cfg();
    if let Some(p) = c.cc.params_mut::<stride_proto::cc::StrideParams>() {
        p.rate_init = p.rate_max;
    }
    let o = transfer(c, link, 9, &u, &[], 120_000_000_000);
    assert!(o.at_server == u);
    assert_eq!(o.client_stats.retransmitted_packets, 0);
    assert_eq!(o.client_stats.timeouts, 0);
    // 4 MiB at one ACK per 64 KiB: about 64 ACKs (plus handshake/teardown/window/tail).
    let acks = o.client_stats.acks_received;
    assert!((60..=80).contains(&acks), "ACKs received {acks}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64), ..ProptestConfig::default() })]

    #[test]
    fn delivers_exactly_under_impairments(
        seed in any::<u64>(),
        up in prop_oneof![0usize..3000, 0usize..200_000, Just(4_000_000usize)],
        down in prop_oneof![0usize..3000, 0usize..100_000],
        loss_ppm in 0u32..=200_000,
        reorder_ppm in 0u32..=100_000,
        dup_ppm in 0u32..=50_000,
        delay_ns in 1_000u64..50_000,
    ) {
        let link = Link { delay_ns, loss_ppm, reorder_ppm, reorder_ns: 30_000, dup_ppm };
        check(link, seed, up, down);
    }
}

/// 4 MB at 5 % loss each way (ACKs and NACKs lost too) with a 1 ms one-way delay: returns
/// (resent bytes / file bytes, timeouts) after checking delivery byte-exact.
fn lossy_4mb(recovery: stride_proto::Recovery, seed: u64) -> (f64, u64) {
    let size = 4_000_000;
    let u = data(size, 3);
    let link = Link {
        delay_ns: 1_000_000,
        loss_ppm: 50_000,
        ..Default::default()
    };
    let c = Config {
        recovery,
        ..Config::default()
    };
    let o = transfer(c, link, seed, &u, &[], 600_000_000_000);
    assert!(
        o.at_server == u,
        "delivered {} of {size} bytes",
        o.at_server.len()
    );
    let s = &o.client_stats;
    (
        s.retransmitted_packets as f64 * 1440.0 / size as f64,
        s.timeouts,
    )
}

#[test]
fn selective_recovery_resends_a_quarter_of_the_file_at_most_at_five_percent_loss() {
    for seed in [1, 2, 3] {
        let (sel, _) = lossy_4mb(stride_proto::Recovery::Selective, seed);
        let (gbn, _) = lossy_4mb(stride_proto::Recovery::GoBackN, seed);
        assert!(
            sel <= 0.25,
            "seed {seed}: selective resent {sel:.2}x the file"
        );
        assert!(
            gbn > 2.0 * sel,
            "seed {seed}: go-back-N {gbn:.2}x against {sel:.2}x"
        );
    }
}
