//! The receive path with and without UDP GRO: runs of datagrams that arrive as one message are
//! split back into datagrams, and the stream is intact either way.

mod common;
use stride::{Endpoint, EndpointConfig};

const LEN: u32 = 3_000_017;

/// A server with GRO on or off receives LEN bytes; returns it with whether they arrived intact.
async fn transfer(gro: bool) -> (Endpoint, bool) {
    let opts = EndpointConfig {
        gro,
        ..EndpointConfig::default()
    };
    let server = Endpoint::bind_with("127.0.0.1:0".parse().unwrap(), opts).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let data: Vec<u8> = (0..LEN)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let intact = common::one_way(&server, &client, &data).await == data;
    (server, intact)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gro_messages_are_split_into_datagrams() {
    let (server, intact) = transfer(true).await;
    assert!(intact, "the stream differs");
    // Linux >= 5.0 grants UDP_GRO; the sender's GSO runs then arrive coalesced.
    assert!(server.socket_info().gro, "{:?}", server.socket_info());
    let io = server.io_stats();
    assert!(io.gro_messages > 0, "no coalesced message: {io:?}");
    assert!(io.datagrams_in >= u64::from(LEN / 1440), "{io:?}");
    assert!(io.rx_calls < io.datagrams_in, "{io:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_gro_every_message_is_one_datagram() {
    let (server, intact) = transfer(false).await;
    assert!(intact, "the stream differs");
    assert!(!server.socket_info().gro);
    let io = server.io_stats();
    assert_eq!(io.gro_messages, 0, "{io:?}");
    assert!(io.datagrams_in >= u64::from(LEN / 1440), "{io:?}");
}
