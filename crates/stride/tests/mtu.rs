//! Datagrams larger than the default 1440-byte payload (jumbo frames, loopback's MTU): a
//! sender configured for them fills them, and a receiver left at the default takes them
//! whole, with UDP GRO and without.

mod common;
use stride::{Endpoint, EndpointConfig};

const LEN: u32 = 2_000_003;

/// A client whose datagrams fit `mtu` sends LEN bytes to a default server with GRO on or off;
/// returns the server, whether the bytes arrived intact, and the client's I/O counters.
async fn transfer(mtu: u32, gro: bool) -> (Endpoint, bool, stride::IoStats) {
    let server = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            gro,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    let mut copts = EndpointConfig {
        listen: false,
        ..EndpointConfig::default()
    };
    copts.proto.max_payload = stride::max_payload_for_mtu(mtu, false).unwrap();
    let client = Endpoint::bind_with("127.0.0.1:0".parse().unwrap(), copts).unwrap();
    let data: Vec<u8> = (0..LEN)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let intact = common::one_way(&server, &client, &data).await == data;
    let io = client.io_stats();
    (server, intact, io)
}

async fn check(mtu: u32, gro: bool) {
    let (server, intact, cio) = transfer(mtu, gro).await;
    assert!(intact, "mtu {mtu}, gro {gro}: the stream differs");
    let sio = server.io_stats();
    assert_eq!(sio.truncated, 0, "{sio:?}");
    // The datagrams are full: far fewer than at the default 1440 bytes of payload would carry
    // the stream, resends on a loaded machine included (a bound on resends would measure the
    // load).
    let payload = u64::from(stride::max_payload_for_mtu(mtu, false).unwrap());
    let default = u64::from(stride::max_payload_for_mtu(1500, false).unwrap());
    assert!(
        cio.datagrams_out < u64::from(LEN) / default,
        "mtu {mtu}: {} datagrams for {LEN} bytes: {cio:?}",
        cio.datagrams_out
    );
    assert!(sio.datagrams_in >= u64::from(LEN) / payload, "{sio:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jumbo_datagrams_reach_a_default_receiver_with_gro() {
    check(9000, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jumbo_datagrams_reach_a_default_receiver_without_gro() {
    check(9000, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_mtu_datagrams_reach_a_default_receiver_without_gro() {
    check(65_536, false).await;
}
