//! Benchmark: what a request/response exchange costs the endpoints on loopback, per exchange:
//! datagrams sent, receives made by the reader itself (inline), sends made by the application
//! thread, and eventfd writes that woke a sleeping driver.
//!
//! `cargo bench -p stride --bench exchanges` (on a quiet machine: every figure depends on how
//! the threads are scheduled). Each case runs 300 exchanges of 64 bytes and prints one line of
//! per-exchange figures; a figure past its bound (what the endpoint's design gives on a quiet
//! machine, with room; a regression shows as about twice it) is marked and makes the run exit
//! non-zero. The tests (`tests/inline.rs`, `tests/loopback.rs`) assert only what holds
//! whatever the load.

use stride::{Endpoint, EndpointConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[path = "../tests/common/mod.rs"]
mod common;

/// Exchanges per case.
const ROUNDS: u32 = 300;

/// A listening server endpoint and a client endpoint on loopback, inline receive on.
fn endpoints() -> (Endpoint, Endpoint) {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::bind_with(
        "127.0.0.1:0".parse().unwrap(),
        EndpointConfig {
            listen: false,
            ..EndpointConfig::default()
        },
    )
    .unwrap();
    (server, client)
}

/// The growth of `after` over `before` per exchange.
fn per(after: u64, before: u64, exchanges: u32) -> f64 {
    (after - before) as f64 / f64::from(exchanges)
}

/// One figure and its bound: `at_most` (the figure may not exceed it) or not.
struct Figure {
    name: &'static str,
    value: f64,
    bound: f64,
    at_most: bool,
}

impl Figure {
    fn max(name: &'static str, value: f64, bound: f64) -> Self {
        Figure {
            name,
            value,
            bound,
            at_most: true,
        }
    }

    fn min(name: &'static str, value: f64, bound: f64) -> Self {
        Figure {
            name,
            value,
            bound,
            at_most: false,
        }
    }

    fn ok(&self) -> bool {
        if self.at_most {
            self.value <= self.bound
        } else {
            self.value >= self.bound
        }
    }
}

/// Prints a case's figures; false when one is past its bound.
fn report(case: &str, figures: &[Figure]) -> bool {
    let mut line = format!("{case:<28}");
    for f in figures {
        let rel = if f.at_most { "<=" } else { ">=" };
        let mark = if f.ok() { "" } else { " (!)" };
        line += &format!("  {} {:.3} ({rel} {}){mark}", f.name, f.value, f.bound);
    }
    println!("{line}");
    figures.iter().all(Figure::ok)
}

/// One request/response connection: both sides' I/O per exchange. Without the ride every
/// exchange costs a request or response and a pure ACK (2.0 datagrams); before the hold's end
/// stopped waking a sleeping driver, the server wrote the eventfd 1.5 times per exchange.
async fn ping_pong() -> bool {
    let (server, client) = endpoints();
    let (s, conn) = common::reverse_echo(server, &client, ROUNDS).await;
    let c = client.io_stats();
    report(
        "request/response",
        &[
            Figure::max("client datagrams", per(c.datagrams_out, 0, ROUNDS), 1.5),
            Figure::max("server datagrams", per(s.datagrams_out, 0, ROUNDS), 1.5),
            Figure::min("client inline", per(c.inline_receives, 0, ROUNDS), 0.66),
            Figure::min("server inline", per(s.inline_receives, 0, ROUNDS), 0.66),
            Figure::min("server direct calls", per(s.direct_calls, 0, ROUNDS), 0.83),
            Figure::min("server ACKs ridden", per(conn.acks_ridden, 0, ROUNDS), 0.5),
            Figure::max("client kicks", per(c.driver_kicks, 0, ROUNDS), 0.5),
            Figure::max("server kicks", per(s.driver_kicks, 0, ROUNDS), 0.5),
        ],
    )
}

/// Request/response beside a connection that closed and lingers: the server's datagrams per
/// exchange (the hold was once refused whenever more than one connection existed).
async fn beside_a_lingering_connection() -> bool {
    let (server, client) = endpoints();
    let addr = server.local_addr();
    let srv_ep = server.clone();
    let srv = tokio::spawn(async move {
        for rounds in [5u32, ROUNDS] {
            let mut s = server.accept().await.unwrap();
            common::answer_reversed(&mut s, rounds).await;
        }
    });
    let exchange = |rounds: u32| {
        let client = client.clone();
        async move {
            let mut c = client.connect(addr).await.unwrap();
            common::ask_reversed(&mut c, rounds, 0).await;
            c.shutdown().await.unwrap();
            // the server's FIN: both directions closed, its connection now lingers
            let _ = c.read(&mut [0u8; 64]).await;
        }
    };
    exchange(5).await;
    let start = std::time::Instant::now();
    while srv_ep.connection_count() != 1
        || client.connection_count() != 1
        || start.elapsed() < std::time::Duration::from_millis(20)
    {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let before = srv_ep.io_stats();
    exchange(ROUNDS).await;
    srv.await.unwrap();
    let after = srv_ep.io_stats();
    report(
        "beside a lingering one",
        &[Figure::max(
            "server datagrams",
            per(after.datagrams_out, before.datagrams_out, ROUNDS),
            1.5,
        )],
    )
}

/// Two request/response connections to one server at once: its datagrams per exchange.
async fn two_at_once() -> bool {
    let (server, client) = endpoints();
    let addr = server.local_addr();
    let srv_ep = server.clone();
    let srv = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let mut s = server.accept().await.unwrap();
            tasks.push(tokio::spawn(async move {
                common::answer_reversed(&mut s, ROUNDS).await;
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
    let mut clients = Vec::new();
    for c in 0..2u32 {
        let client = client.clone();
        clients.push(tokio::spawn(async move {
            let mut s = client.connect(addr).await.unwrap();
            common::ask_reversed(&mut s, ROUNDS, c).await;
            s.shutdown().await.unwrap();
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    srv.await.unwrap();
    let io = srv_ep.io_stats();
    report(
        "two at once",
        &[Figure::max(
            "server datagrams",
            per(io.datagrams_out, 0, 2 * ROUNDS),
            1.5,
        )],
    )
}

/// Request/response beside an idle open connection: the core holds the ACKs per connection;
/// the server's eventfd writes and datagrams per exchange.
async fn beside_an_open_connection() -> bool {
    let (server, client) = endpoints();
    let addr = server.local_addr();
    let srv_ep = server.clone();
    let srv = tokio::spawn(async move {
        let idle = server.accept().await.unwrap();
        let mut s = server.accept().await.unwrap();
        common::answer_reversed(&mut s, ROUNDS).await;
        drop(idle);
    });
    let idle = client.connect(addr).await.unwrap();
    let mut c = client.connect(addr).await.unwrap();
    let before = srv_ep.io_stats();
    common::ask_reversed(&mut c, ROUNDS, 0).await;
    let after = srv_ep.io_stats();
    c.shutdown().await.unwrap();
    drop(idle);
    srv.await.unwrap();
    report(
        "beside an open one",
        &[
            Figure::max(
                "server kicks",
                per(after.driver_kicks, before.driver_kicks, ROUNDS),
                0.5,
            ),
            Figure::max(
                "server datagrams",
                per(after.datagrams_out, before.datagrams_out, ROUNDS),
                1.5,
            ),
        ],
    )
}

/// Small writes on the default endpoints: the share of requests and responses the writing
/// thread sent itself.
async fn direct_sends() -> bool {
    let server = Endpoint::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let (s, _) = common::reverse_echo(server, &client, ROUNDS).await;
    let c = client.io_stats();
    report(
        "small writes",
        &[
            Figure::min("client direct", per(c.direct_sends, 0, ROUNDS), 0.75),
            Figure::min("server direct", per(s.direct_sends, 0, ROUNDS), 0.75),
        ],
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ok = rt.block_on(async {
        let mut ok = ping_pong().await;
        ok &= beside_a_lingering_connection().await;
        ok &= two_at_once().await;
        ok &= beside_an_open_connection().await;
        ok &= direct_sends().await;
        ok
    });
    if !ok {
        eprintln!("exchanges: a figure is past its bound (marked (!))");
        std::process::exit(1);
    }
}
