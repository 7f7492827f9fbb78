//! Work done on the application's thread instead of the driver's: readers that receive from
//! the socket themselves (`EndpointConfig::inline_receive`) and small writes sent by the
//! writer (`IoStats::direct_sends`), which must still obey the core's pacing.
//!
//! These tests assert what holds whatever the machine's load: that each path is taken, that
//! ACKs ride on responses, that the counters agree. How often (inline receives, datagrams and
//! driver wake-ups per exchange) depends on how the threads are scheduled, so it is measured by
//! the `exchanges` benchmark (`cargo bench -p stride --bench exchanges`) on a quiet machine.

use std::time::Instant;
use stride::proto::cc::{rate_from_gbps, CcConfig};
use stride::{host_config, Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

/// A listening server endpoint and a client endpoint on loopback, inline receive as given.
fn endpoints(inline_receive: bool) -> (Endpoint, Endpoint) {
    let opts = EndpointConfig {
        inline_receive,
        ..EndpointConfig::default()
    };
    let server = Endpoint::bind_with("127.0.0.1:0".parse().unwrap(), opts.clone()).unwrap();
    let client = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            listen: false,
            ..opts
        },
    )
    .unwrap();
    (server, client)
}

/// 300 request/response exchanges of 64 bytes; returns the client's and server's I/O
/// counters and the server connection's counters.
async fn ping_pong(inline_receive: bool) -> (stride::IoStats, stride::IoStats, stride::ConnStats) {
    let (server, client) = endpoints(inline_receive);
    let (server_io, server_conn) = common::reverse_echo(server, &client, 300).await;
    (client.io_stats(), server_io, server_conn)
}

/// With inline receive on, a reader waiting for a response receives it on its own thread,
/// the server's responses leave from its application thread with the requests' ACKs riding
/// on them (spec §6.4), and every exchange is intact. (How many of the 300 exchanges go each
/// way depends on scheduling: the `exchanges` benchmark measures it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_receive_inline_and_exchanges_stay_intact() {
    let (c, s, conn) = ping_pong(true).await;
    assert!(c.inline_receives > 0, "client: {c:?}");
    assert!(s.inline_receives > 0, "server: {s:?}");
    assert!(c.inline_receives <= c.rx_calls, "{c:?}");
    assert!(s.inline_receives <= s.rx_calls, "{s:?}");
    assert!(s.direct_calls > 0, "server: {s:?}");
    assert!(conn.acks_ridden > 0, "no ACK rode on a response: {conn:?}");
    assert_eq!(c.send_errors + s.send_errors, 0);
}

/// An endpoint with nothing to do sleeps in long waits (`MAX_WAIT_NS`, 50 ms): its driver
/// thread neither spins nor wakes on short timers, and `IoStats::driver_sleeps` counts the
/// sleeps. A machine slower to wake only lowers the count, so the bound follows the time
/// that passed (at least 300 ms, and until the driver has slept once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_endpoint_sleeps_in_long_waits() {
    let start = Instant::now();
    let (server, _client) = endpoints(true);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    while server.io_stats().driver_sleeps == 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the driver never slept"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let io = server.io_stats();
    // 50 ms sleeps: 6 in 300 ms, with room for sleeps cut short by a signal.
    let most = start.elapsed().as_millis() as u64 / 50 + 14;
    assert!(io.driver_sleeps <= most, "at most {most}: {io:?}");
}

/// A connection that has closed and lingers (it stays 2 s to re-acknowledge a lost FIN)
/// does not stop the next request/response connection's ACKs from riding on its responses.
/// (The hold was refused whenever the endpoint had more than one connection, lingering ones
/// included: a `perf --rr` run right after another measured 24–26 µs per round trip against
/// 21–23 µs on its own. Datagrams per exchange: the `exchanges` benchmark.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lingering_connection_does_not_stop_acks_riding() {
    let (server, client) = endpoints(true);
    let addr = server.local_addr();
    let srv_ep = server.clone();
    let srv = tokio::spawn(async move {
        let mut last = None;
        for rounds in [5u32, 300] {
            let mut s = server.accept().await.unwrap();
            common::answer_reversed(&mut s, rounds).await;
            last = s.stats();
        }
        last.unwrap_or_default()
    });
    let exchange = |rounds: u32| {
        let client = client.clone();
        async move {
            let mut c = client.connect(addr).await.unwrap();
            common::ask_reversed(&mut c, rounds, 0).await;
            c.shutdown().await.unwrap();
            // the server's FIN: both directions closed, its connection now lingers
            assert_eq!(c.read(&mut [0u8; 64]).await.unwrap(), 0);
        }
    };
    exchange(5).await;
    let start = Instant::now();
    while srv_ep.connection_count() != 1
        || client.connection_count() != 1
        || start.elapsed() < std::time::Duration::from_millis(20)
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1),
            "no lingering connection"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    exchange(300).await;
    let conn = srv.await.unwrap();
    assert!(
        conn.acks_ridden > 0,
        "no ACK rode on a response beside a lingering connection: {conn:?}"
    );
}

/// Two clients exchanging requests and responses with one server at once: the requests'
/// ACKs still ride on the responses of both connections (the core holds the due pure ACKs
/// alone; the driver-wide hold is only for an endpoint with one open connection). Before, the
/// server sent about two datagrams per exchange here (the `exchanges` benchmark measures it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_exchanges_keep_acks_riding() {
    let (server, client) = endpoints(true);
    let addr = server.local_addr();
    let srv = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let mut s = server.accept().await.unwrap();
            tasks.push(tokio::spawn(async move {
                common::answer_reversed(&mut s, 300).await;
                s.stats().unwrap_or_default()
            }));
        }
        let mut conns = Vec::new();
        for t in tasks {
            conns.push(t.await.unwrap());
        }
        conns
    });
    let mut clients = Vec::new();
    for c in 0..2u32 {
        let client = client.clone();
        clients.push(tokio::spawn(async move {
            let mut s = client.connect(addr).await.unwrap();
            common::ask_reversed(&mut s, 300, c).await;
            s.shutdown().await.unwrap();
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    for conn in srv.await.unwrap() {
        assert!(conn.acks_ridden > 0, "no ACK rode on a response: {conn:?}");
    }
}

/// With a second connection open beside a request/response one (idle here; a client that
/// left without closing leaves one too), the server holds each request's ACK in the core,
/// per connection, and the ACKs still ride on the responses. (That the hold's end does not
/// wake the sleeping driver, which it did for nearly every exchange before, 1.4 eventfd writes
/// per exchange on a `stride perf` server, is measured by the `exchanges` benchmark.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_ride_beside_a_second_open_connection() {
    let (server, client) = endpoints(true);
    let addr = server.local_addr();
    let srv = tokio::spawn(async move {
        let idle = server.accept().await.unwrap();
        let mut s = server.accept().await.unwrap();
        common::answer_reversed(&mut s, 300).await;
        drop(idle);
        s.stats().unwrap_or_default()
    });
    let idle = client.connect(addr).await.unwrap();
    let mut c = client.connect(addr).await.unwrap();
    common::ask_reversed(&mut c, 300, 0).await;
    c.shutdown().await.unwrap();
    drop(idle);
    let conn = srv.await.unwrap();
    assert!(conn.acks_ridden > 0, "no ACK rode on a response: {conn:?}");
}

/// A request the application never answers is still acknowledged: the hold ends and the
/// (sleeping) driver sends the ACK, so the client's write completes and its stream closes.
/// The client's retransmission timeout is a minute, so within the test only the held ACK can
/// acknowledge the request, however late the machine runs the threads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_request_is_acknowledged() {
    let (server, _) = endpoints(true);
    let mut proto = host_config(10_000_000_000);
    (proto.min_rto_ns, proto.max_rto_ns) = (60_000_000_000, 60_000_000_000);
    let client = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            listen: false,
            proto,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut buf = [0u8; 64];
        // Two request/response exchanges make the stream a request/response one (the reader
        // holds ACKs), then a request that is read and never answered.
        for _ in 0..3 {
            s.read_exact(&mut buf).await.unwrap();
            if buf[0] != 2 {
                s.write_all(&buf).await.unwrap();
            }
        }
        // Stay open, silent, until the client is done.
        let _ = done_rx.await;
        drop(s);
    });
    let mut c = client.connect(addr).await.unwrap();
    let mut resp = [0u8; 64];
    for i in 0..2u8 {
        c.write_all(&[i; 64]).await.unwrap();
        c.read_exact(&mut resp).await.unwrap();
        assert_eq!(resp, [i; 64]);
    }
    c.write_all(&[2; 64]).await.unwrap();
    // The last request's bytes are acknowledged although no response carries the ACK (and
    // before the client closes: a FIN would make the server answer anyway).
    let start = Instant::now();
    while c.unacked() > 0 {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "the unanswered request was never acknowledged"
        );
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    // By the held ACK itself (at most about 1 ms late on a quiet machine), not by a resend
    // after a retransmission timeout (seen with the host's 10 ms floor when the hold was
    // stretched to 1 s).
    let timeouts = c.stats().map_or(0, |s| s.timeouts);
    assert_eq!(
        timeouts, 0,
        "the ACK came only after a retransmission timeout"
    );
    let closed = tokio::time::timeout(std::time::Duration::from_secs(30), c.shutdown()).await;
    assert!(matches!(closed, Ok(Ok(()))), "shutdown: {closed:?}");
    let _ = done_tx.send(());
    srv.await.unwrap();
}

/// With it off, the driver receives everything (the same exchanges, no inline receive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_inline_receive_the_driver_receives() {
    let (c, s, _) = ping_pong(false).await;
    assert_eq!(c.inline_receives, 0, "client: {c:?}");
    assert_eq!(s.inline_receives, 0, "server: {s:?}");
    assert!(c.rx_calls >= 300 && s.rx_calls >= 300, "{c:?} {s:?}");
}

/// A writer sends small writes itself only as far as the core's pacing lets them leave: at a
/// pinned 10 Mbit/s (one 1000-byte write per 800 µs, an 8 KiB bucket) a burst of 40 writes
/// sends about the bucket directly and leaves the rest to the driver's paced sends, and
/// every byte arrives in order. Without the pacing check all 40 would leave at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_sends_obey_pacing() {
    const LINE_BPS: u64 = 10_000_000;
    let mut proto = host_config(LINE_BPS);
    proto.cc = CcConfig::by_name("fixed", rate_from_gbps(LINE_BPS as f64 / 1e9)).unwrap();
    let burst = proto.burst_bytes as u64;
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            listen: false,
            proto,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let srv = tokio::spawn(async move {
        let mut s = server.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    let mut c = client.connect(addr).await.unwrap();
    let before = client.io_stats().direct_sends;
    let start = Instant::now();
    let mut sent = Vec::new();
    for i in 0..40u32 {
        let w: Vec<u8> = (0..1000u32).map(|k| (i * 31 + k) as u8).collect();
        c.write_all(&w).await.unwrap();
        sent.extend_from_slice(&w);
    }
    let direct = client.io_stats().direct_sends - before;
    let elapsed_ns = start.elapsed().as_nanos() as u64;
    // The bucket, what the rate refilled meanwhile, and one datagram of rounding.
    let allowed = burst / 1000 + elapsed_ns * (LINE_BPS / 8) / 1_000_000_000 / 1000 + 2;
    assert!(
        direct <= allowed,
        "{direct} direct sends in {elapsed_ns} ns, pacing allows {allowed}"
    );
    c.shutdown().await.unwrap();
    let got = srv.await.unwrap();
    assert!(got == sent, "the paced stream differs");
}
