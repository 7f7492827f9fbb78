//! `quic-perf`: the QUIC (quinn) twin of `stride perf`, for the loopback benchmark.
//!
//!   quic-perf server --listen ADDR --cert FILE
//!   quic-perf client --to ADDR --cert FILE --bytes N
//!
//! Same harness as `stride perf`: a 2-worker tokio runtime per process, the client writes N
//! bytes in 256 KiB chunks on one stream and stops the clock when the server confirms, after it
//! has read everything, with one byte. The server writes its self-signed certificate to FILE;
//! the client trusts exactly that certificate. Flow-control windows are raised to 16 MiB so
//! quinn is not limited by its conservative defaults on a ~10 µs loopback path.

use anyhow::{bail, Context, Result};
use quinn::crypto::rustls::QuicClientConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

const WINDOW: u32 = 16 << 20;

fn transport() -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.stream_receive_window(quinn::VarInt::from_u32(WINDOW));
    t.receive_window(quinn::VarInt::from_u32(2 * WINDOW));
    t.send_window(u64::from(2 * WINDOW));
    Arc::new(t)
}

fn arg(args: &[String], name: &str) -> Result<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .with_context(|| format!("missing {name}"))
}

async fn server(listen: SocketAddr, cert_path: &str) -> Result<()> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
    let der = CertificateDer::from(cert.cert);
    std::fs::write(cert_path, der.as_ref())?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der()));
    let mut sc = quinn::ServerConfig::with_single_cert(vec![der], key)?;
    sc.transport_config(transport());
    let ep = quinn::Endpoint::server(sc, listen)?;
    eprintln!("quic-perf server listening on {}", ep.local_addr()?);
    while let Some(inc) = ep.accept().await {
        tokio::spawn(async move {
            let r: Result<()> = async {
                let conn = inc.await?;
                let (mut tx, mut rx) = conn.accept_bi().await?;
                let mut buf = vec![0u8; 256 * 1024];
                let mut total = 0u64;
                let t = Instant::now();
                while let Some(n) = rx.read(&mut buf).await? {
                    total += n as u64;
                }
                tx.write_all(b"k").await?;
                tx.finish()?;
                let secs = t.elapsed().as_secs_f64();
                println!(
                    "{}",
                    serde_json::json!({"bytes": total, "seconds": secs,
                                       "goodput_gbps": total as f64 * 8.0 / secs / 1e9})
                );
                conn.closed().await;
                Ok(())
            }
            .await;
            if let Err(e) = r {
                eprintln!("quic-perf server: {e}");
            }
        });
    }
    Ok(())
}

async fn client(to: SocketAddr, cert_path: &str, bytes: u64) -> Result<()> {
    let der = CertificateDer::from(std::fs::read(cert_path)?);
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der)?;
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let mut cc = quinn::ClientConfig::new(Arc::new(QuicClientConfig::try_from(tls)?));
    cc.transport_config(transport());
    let bind: SocketAddr = if to.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" }.parse()?;
    let mut ep = quinn::Endpoint::client(bind)?;
    ep.set_default_client_config(cc);
    let conn = ep.connect(to, "localhost")?.await?;
    let (mut tx, mut rx) = conn.open_bi().await?;
    let chunk = vec![0u8; 256 * 1024];
    let start = Instant::now();
    let mut written = 0u64;
    while written < bytes {
        let n = (bytes - written).min(chunk.len() as u64) as usize;
        tx.write_all(&chunk[..n]).await?;
        written += n as u64;
    }
    tx.finish()?;
    let mut k = [0u8; 1];
    rx.read_exact(&mut k).await?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({"bytes": written, "seconds": secs,
                           "goodput_gbps": written as f64 * 8.0 / secs / 1e9, "transport": "quic"})
    );
    conn.close(0u32.into(), b"done");
    ep.wait_idle().await;
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match args.get(1).map(String::as_str) {
        Some("server") => rt.block_on(server(arg(&args, "--listen")?.parse()?, &arg(&args, "--cert")?)),
        Some("client") => rt.block_on(client(
            arg(&args, "--to")?.parse()?,
            &arg(&args, "--cert")?,
            arg(&args, "--bytes")?.parse()?,
        )),
        _ => bail!("usage: quic-perf server --listen ADDR --cert FILE | client --to ADDR --cert FILE --bytes N"),
    }
}
