//! The receive path with and without UDP GRO: runs of datagrams that arrive as one message are
//! split back into datagrams, and the stream is intact either way.

use stride::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn transfer(gro: bool) -> (Endpoint, Vec<u8>, Vec<u8>) {
    let server = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            gro,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let data: Vec<u8> = (0..3_000_017u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let addr = server.local_addr();
    let srv = server.clone();
    let rx = tokio::spawn(async move {
        let mut s = srv.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    let mut c = client.connect(addr).await.unwrap();
    c.write_all(&data).await.unwrap();
    c.shutdown().await.unwrap();
    let got = rx.await.unwrap();
    (server, data, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gro_messages_are_split_into_datagrams() {
    let (server, sent, got) = transfer(true).await;
    assert!(
        got == sent,
        "stream differs ({} of {} bytes)",
        got.len(),
        sent.len()
    );
    // Linux >= 5.0 grants UDP_GRO; the sender's GSO runs then arrive coalesced.
    assert!(server.socket_info().gro, "{:?}", server.socket_info());
    let io = server.io_stats();
    assert!(io.gro_messages > 0, "no coalesced message: {io:?}");
    assert!(io.datagrams_in >= 3_000_017 / 1440, "{io:?}");
    assert!(io.rx_calls < io.datagrams_in, "{io:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_gro_every_message_is_one_datagram() {
    let (server, sent, got) = transfer(false).await;
    assert!(
        got == sent,
        "stream differs ({} of {} bytes)",
        got.len(),
        sent.len()
    );
    assert!(!server.socket_info().gro);
    let io = server.io_stats();
    assert_eq!(io.gro_messages, 0, "{io:?}");
    assert!(io.datagrams_in >= 3_000_017 / 1440, "{io:?}");
}
