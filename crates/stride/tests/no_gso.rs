//! The send path without UDP GSO (the fallback taken when the kernel refuses it).

mod common;
use stride::Endpoint;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_without_gso() {
    stride::sys::disable_gso();
    assert!(!stride::sys::gso());
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let data: Vec<u8> = (0..2_000_003u32)
        .map(|i| (i * 7 + (i >> 11)) as u8)
        .collect();
    assert!(common::one_way(&server, &client, &data).await == data);
    let io = client.io_stats();
    // Without GSO every datagram is its own message: more than one per call on average
    // still means batching (sendmmsg) is in use.
    assert!(io.datagrams_out >= 1389, "{io:?}");
}
