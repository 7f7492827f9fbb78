//! The servers of `stride perf server`: STRIDE (on one or more sharded endpoints), kernel TCP
//! and a UDP echo, on tokio or driven by blocking calls. Each serves every client with the
//! harness ([`serve`], [`serve_blocking`]) and reports every connection's outcome to the
//! caller; they return only when accepting fails.

use super::{serve, serve_blocking};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use stride::Endpoint;

/// What a perf server reports of one connection.
#[derive(Debug)]
pub enum Served {
    /// A bulk transfer ended: the bytes received and the seconds from the first byte to the
    /// confirmation. (A round-trip connection reports only a failure.)
    Bulk {
        /// Bytes received (the mode byte not counted).
        bytes: u64,
        /// Seconds from the first byte to the confirmation.
        seconds: f64,
    },
    /// The connection failed.
    Failed(io::Error),
}

/// Serves STRIDE perf clients arriving on any of `eps` (the shards of
/// [`Endpoint::bind_shards`]), each connection on its own task; `report` sees each one's
/// outcome with the client's address. Returns the error that stopped accepting.
pub async fn serve_stride<R>(eps: &[Endpoint], report: R) -> stride::Error
where
    R: Fn(SocketAddr, Served) + Clone + Send + Sync + 'static,
{
    loop {
        let mut s = match Endpoint::accept_any(eps).await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let report = report.clone();
        tokio::spawn(async move {
            let remote = s.remote_addr();
            let r = serve(&mut s, |bytes, seconds| {
                report(remote, Served::Bulk { bytes, seconds })
            })
            .await;
            if let Err(e) = r {
                report(remote, Served::Failed(e));
            }
        });
    }
}

/// [`serve_stride`] for kernel TCP (`TCP_NODELAY` set on every connection).
pub async fn serve_tcp<R>(l: tokio::net::TcpListener, report: R) -> io::Error
where
    R: Fn(SocketAddr, Served) + Clone + Send + Sync + 'static,
{
    loop {
        let (mut s, remote) = match l.accept().await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let _ = s.set_nodelay(true);
        let report = report.clone();
        tokio::spawn(async move {
            let r = serve(&mut s, |bytes, seconds| {
                report(remote, Served::Bulk { bytes, seconds })
            })
            .await;
            if let Err(e) = r {
                report(remote, Served::Failed(e));
            }
        });
    }
}

/// A UDP echo server on `sock` (the peer of [`super::udp_round_trips`]); returns the first
/// socket error.
pub async fn udp_echo(sock: &tokio::net::UdpSocket) -> io::Error {
    let mut buf = vec![0u8; 65_536];
    loop {
        match sock.recv_from(&mut buf).await {
            Ok((n, from)) => {
                let _ = sock.send_to(&buf[..n], from).await;
            }
            Err(e) => return e,
        }
    }
}

/// The blocking form of [`serve_tcp`]: each connection on its own thread, its sending
/// direction ended once served.
pub fn serve_tcp_blocking<R>(l: &std::net::TcpListener, report: R) -> io::Error
where
    R: Fn(SocketAddr, Served) + Clone + Send + Sync + 'static,
{
    loop {
        let (mut s, remote) = match l.accept() {
            Ok(s) => s,
            Err(e) => return e,
        };
        let _ = s.set_nodelay(true);
        let report = report.clone();
        std::thread::spawn(move || {
            let r = serve_blocking(&mut s, |bytes, seconds| {
                report(remote, Served::Bulk { bytes, seconds })
            })
            .and_then(|()| s.shutdown(std::net::Shutdown::Write));
            if let Err(e) = r {
                report(remote, Served::Failed(e));
            }
        });
    }
}

/// The blocking form of [`serve_stride`] on one [`stride::blocking::Endpoint`]: one client at
/// a time, on the calling thread; a served connection is closed (a failed one reset) before
/// the next is accepted. A client whose address the endpoint no longer knows is reported as
/// `listen`.
pub fn serve_stride_blocking(
    ep: &mut stride::blocking::Endpoint,
    listen: SocketAddr,
    report: impl Fn(SocketAddr, Served),
) -> stride::Error {
    loop {
        let c = match ep.accept(None) {
            Ok(Some(c)) => c,
            Ok(None) => continue,
            Err(e) => return e,
        };
        let remote = ep.remote(c).unwrap_or(listen);
        let r = serve_blocking(&mut ep.stream(c), |bytes, seconds| {
            report(remote, Served::Bulk { bytes, seconds })
        });
        match r {
            Ok(()) => {
                let _ = ep.close(c, Duration::from_secs(2));
            }
            Err(e) => {
                report(remote, Served::Failed(e));
                let _ = ep.abort(c);
            }
        }
    }
}
