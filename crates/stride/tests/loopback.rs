//! The endpoint over real loopback sockets.

use std::time::Duration;
use stride::{Endpoint, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

use common::pattern;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_both_ways_and_close() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let up = pattern(3_000_000, 1);
    let down = pattern(100_001, 2);
    let addr = server.local_addr();
    let down2 = down.clone();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        s.write_all(&down2).await.unwrap();
        s.shutdown().await.unwrap();
        (got, server.stats())
    });
    let mut c = client.connect(addr).await.unwrap();
    c.write_all(&up).await.unwrap();
    c.shutdown().await.unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).await.unwrap();
    assert!(got == down, "down stream differs");
    let (at_server, _) = srv.await.unwrap();
    assert!(at_server == up, "up stream differs");
    let st = c.stats().unwrap();
    assert!(st.packets_sent > 2000);
    let info = client.socket_info();
    assert!(info.recv_buffer >= 4 << 20, "{info:?}");
}

/// Connecting to an address where nothing answers fails with `Unreachable` once the core has
/// given up resending its SYN (3.7 to 4.8 s of resends with the default 8 retries): an error,
/// not a hang. (The bound only catches a hang: the resends' schedule is the core's, and a
/// loaded machine runs the timers late.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_to_nobody_fails_fast() {
    // A bound but silent socket: datagrams vanish.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(60),
        client.connect(silent.local_addr().unwrap()),
    )
    .await
    .expect("connecting to nobody hung");
    assert!(matches!(r, Err(Error::Unreachable)), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_by_non_listener() {
    let other = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let r = client.connect(other.local_addr()).await;
    assert!(matches!(r, Err(Error::Reset)), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_connections_share_one_socket_each_side() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = server.local_addr();
    const N: usize = 16;
    let srv = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..N {
            let mut s = server.accept().await.unwrap();
            tasks.push(tokio::spawn(async move {
                // Echo the first 8 bytes (the stream's tag) back, then the length.
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                s.write_all(&got[..8]).await.unwrap();
                s.write_all(&(got.len() as u64).to_be_bytes())
                    .await
                    .unwrap();
                s.shutdown().await.unwrap();
                got
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.push(t.await.unwrap());
        }
        (all, server)
    });
    let mut jobs = Vec::new();
    for k in 0..N {
        let client = client.clone();
        jobs.push(tokio::spawn(async move {
            let mut data = (k as u64).to_be_bytes().to_vec();
            data.extend(pattern(100_000 + k * 12_345, k as u8));
            let mut s = client.connect(addr).await.unwrap();
            s.write_all(&data).await.unwrap();
            s.shutdown().await.unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).await.unwrap();
            assert_eq!(&back[..8], &data[..8]);
            assert_eq!(
                u64::from_be_bytes(back[8..16].try_into().unwrap()),
                data.len() as u64
            );
            data
        }));
    }
    let mut sent = Vec::new();
    for j in jobs {
        sent.push(j.await.unwrap());
    }
    let (mut got, server) = srv.await.unwrap();
    got.sort();
    sent.sort();
    assert!(got == sent, "some stream differs");
    assert_eq!(server.stats().accepted, N as u64);
}

/// Small writes leave from the writing thread (no driver wake-up on the request path), and a
/// ping-pong over them stays in order and intact. (A write that finds the driver holding an
/// unsent datagram, an ACK say, leaves it to the driver, so how many leave directly depends
/// on scheduling: the `exchanges` benchmark measures it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_writes_are_sent_directly_and_stay_in_order() {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let (server_io, _) = common::reverse_echo(server, &client, 200).await;
    let io = client.io_stats();
    assert!(io.direct_sends > 0, "client: {io:?}");
    assert!(server_io.direct_sends > 0, "server: {server_io:?}");
    assert!(io.direct_sends <= io.datagrams_out, "{io:?}");
    assert_eq!(io.send_errors, 0, "{io:?}");
}

/// Shards bound with SO_REUSEPORT share one address, each connection stays on the shard the
/// kernel hashed it to (its handshake and data complete there), and connections from many
/// source ports spread over more than one shard (so more than one driver thread works).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_endpoints_share_an_address_and_spread_connections() {
    let shards =
        Endpoint::bind_shards("127.0.0.1:0".parse().unwrap(), Default::default(), 2).unwrap();
    assert_eq!(shards.len(), 2);
    let addr = shards[0].local_addr();
    assert_eq!(shards[1].local_addr(), addr);
    const N: usize = 16;
    let srv = {
        let shards = shards.clone();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..N {
                let mut s = Endpoint::accept_any(&shards).await.unwrap();
                tasks.push(tokio::spawn(async move {
                    let mut got = Vec::new();
                    s.read_to_end(&mut got).await.unwrap();
                    s.write_all(&got[..8]).await.unwrap();
                    s.shutdown().await.unwrap();
                    got
                }));
            }
            let mut all = Vec::new();
            for t in tasks {
                all.push(t.await.unwrap());
            }
            all
        })
    };
    let mut clients = Vec::new();
    for i in 0..N {
        let c = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut s = c.connect(addr).await.unwrap();
        s.write_all(&pattern(50_000, i as u8)).await.unwrap();
        s.shutdown().await.unwrap();
        clients.push((c, s));
    }
    let accepted: Vec<u64> = shards.iter().map(|e| e.stats().accepted).collect();
    for (i, (_, s)) in clients.iter_mut().enumerate() {
        let mut back = Vec::new();
        s.read_to_end(&mut back).await.unwrap();
        assert_eq!(
            back,
            pattern(50_000, i as u8)[..8],
            "echo of connection {i}"
        );
    }
    let mut got = srv.await.unwrap();
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..N).map(|i| pattern(50_000, i as u8)).collect();
    want.sort();
    assert!(got == want, "a stream differs");
    assert_eq!(accepted.iter().sum::<u64>(), N as u64, "{accepted:?}");
    assert!(
        accepted.iter().all(|&a| a > 0),
        "one shard took every connection: {accepted:?}"
    );
}
