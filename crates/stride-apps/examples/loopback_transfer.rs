//! Sends a file to a receiver on loopback with `stride_apps::xfer`, then measures 10 MB of bulk
//! throughput with `stride_apps::perf`, both in one process.
//!
//! `cargo run --release -p stride-apps --example loopback_transfer [FILE]` (default: a generated
//! 4 MB file in a temporary directory).

use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let work = std::env::temp_dir().join(format!("stride-example-{}", std::process::id()));
    let incoming = work.join("incoming");
    std::fs::create_dir_all(&incoming)?;
    let file = match std::env::args_os().nth(1) {
        Some(f) => PathBuf::from(f),
        None => {
            let f = work.join("sample.bin");
            let data: Vec<u8> = (0..4_000_000u32)
                .map(|i| (i * 2_654_435_761) as u8)
                .collect();
            std::fs::write(&f, data)?;
            f
        }
    };

    let server = stride::Endpoint::bind("127.0.0.1:0".parse()?)?;
    let client = stride::Endpoint::client("127.0.0.1:0".parse()?)?;
    let to = server.local_addr();

    // File transfer: the receiver stores the file only if size and BLAKE3 match.
    let dir = incoming.clone();
    let srv = server.clone();
    let receiver = tokio::spawn(async move {
        let s = srv.accept().await?;
        Ok::<_, stride::Error>(stride_apps::xfer::receive_file(s, &dir, &Default::default()).await)
    });
    let sent = stride_apps::xfer::send_file(&client, to, &file, &Default::default()).await?;
    let got = receiver.await??;
    println!(
        "sent {} ({} bytes in {:.3} s, blake3 {}); receiver: {}",
        sent.name,
        sent.bytes,
        sent.seconds,
        sent.checksum.to_hex(),
        got.error.as_deref().unwrap_or("stored")
    );

    // Throughput: the perf harness on a new connection.
    tokio::spawn(async move {
        let mut s = server.accept().await.map_err(stride::Error::into_io)?;
        stride_apps::perf::serve(&mut s, |_, _| {}).await?;
        Ok::<_, std::io::Error>(())
    });
    let mut s = client.connect(to).await?;
    let b = stride_apps::perf::bulk(&mut s, Some(10_000_000), None, |_, _, _| {}).await?;
    println!(
        "bulk: {} bytes in {:.3} s = {:.3} Gbit/s",
        b.bytes,
        b.seconds,
        b.bytes as f64 * 8.0 / b.seconds / 1e9
    );
    std::fs::remove_dir_all(&work)?;
    Ok(())
}
