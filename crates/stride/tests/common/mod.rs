//! Shared by the endpoint tests: one stream from a client endpoint to a server endpoint.

use stride::Endpoint;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends `data` from `client` to `server` on one connection, closes it, and returns what the
/// server read.
pub async fn one_way(server: &Endpoint, client: &Endpoint, data: &[u8]) -> Vec<u8> {
    let addr = server.local_addr();
    let srv = server.clone();
    let rx = tokio::spawn(async move {
        let mut s = srv.accept().await.unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    let mut c = client.connect(addr).await.unwrap();
    c.write_all(data).await.unwrap();
    c.shutdown().await.unwrap();
    rx.await.unwrap()
}
