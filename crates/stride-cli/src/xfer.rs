//! `stride send` and `stride recv`: file transfer that loses nothing.
//!
//! On one connection per file the sender writes a header (`STRF`, version 1, the name's length
//! as u16, the name in UTF-8, the size as u64, all big-endian), the file's bytes and their
//! 32-byte BLAKE3 hash, then ends its direction. The receiver writes `NAME.part`, checks size and
//! hash, fsyncs, renames to `NAME` only on a match (and fsyncs the directory), and answers with a
//! status (one code byte, a u16 length, a UTF-8 message) before ending its own direction. A
//! failed transfer leaves no `NAME` behind (and removes `NAME.part`).

use crate::control::ControlArgs;
use crate::units::{fail, human, report, runtime};
use clap::Args;
use serde_json::json;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stride::{Endpoint, Error, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

const MAGIC: &[u8; 4] = b"STRF";
const VERSION: u8 = 1;
const CHUNK: usize = 256 * 1024;

/// Status codes of the receiver's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    ChecksumMismatch = 1,
    RefusedName = 2,
    Exists = 3,
    WriteFailed = 4,
    Protocol = 5,
}

impl Status {
    fn from_u8(b: u8) -> Status {
        match b {
            0 => Status::Ok,
            1 => Status::ChecksumMismatch,
            2 => Status::RefusedName,
            3 => Status::Exists,
            4 => Status::WriteFailed,
            _ => Status::Protocol,
        }
    }
}

/// Arguments of `stride recv`.
#[derive(Args, Debug)]
#[command(
    after_help = "Writes NAME.part, checks size and BLAKE3, fsyncs and renames to NAME only on a match; \
refuses names with path separators or '..' and never overwrites without --force.\n\n\
Example:\n  stride recv --listen 0.0.0.0:7000 --out ./incoming --json"
)]
pub struct RecvArgs {
    /// Address to listen on, e.g. 0.0.0.0:7000 or [::]:7000.
    #[arg(long, value_name = "ADDR")]
    pub listen: SocketAddr,
    /// Directory to write received files into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Receive one file, then exit (non-zero if it failed).
    #[arg(long)]
    pub once: bool,
    /// Overwrite existing files.
    #[arg(long)]
    pub force: bool,
    /// One JSON object per received file on stdout.
    #[arg(long)]
    pub json: bool,
    /// Give up on a connection (and delete its NAME.part) after this long without a datagram
    /// from the sender, e.g. when the sender died.
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout_ns, default_value = "30s")]
    pub idle_timeout: u64,
}

/// Arguments of `stride send`.
#[derive(Args, Debug)]
#[command(
    after_help = "Exit status 0 only when the receiver confirmed every file (size and BLAKE3 match); \
otherwise 1 with one line per failed file on stderr.\n\n\
Example:\n  stride send --to 10.0.0.2:7000 --json big.iso notes.txt"
)]
pub struct SendArgs {
    /// The receiver (`stride recv`) address.
    #[arg(long, value_name = "ADDR")]
    pub to: SocketAddr,
    /// One JSON object per file on stdout.
    #[arg(long)]
    pub json: bool,
    /// Give up connecting after this long (at least 1ms).
    #[arg(long, value_name = "D", value_parser = crate::units::parse_timeout, default_value = "3s")]
    pub connect_timeout: Duration,
    /// Local address to bind (default: the unspecified address of the receiver's family).
    #[arg(long, value_name = "ADDR")]
    pub bind: Option<SocketAddr>,
    /// Files to send (each on its own connection, one after the other).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub control: ControlArgs,
}

/// A name the receiver accepts: a plain file name.
pub fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.contains('/')
        && !name.contains('\\')
        && !name.contains('\0')
        && !name.contains("..")
        && name != "."
}

fn transfer_error(e: &std::io::Error) -> String {
    match Error::from_io_ref(e) {
        Some(Error::Reset) => "peer aborted the connection".into(),
        Some(Error::Unreachable) => "peer stopped answering (unreachable)".into(),
        Some(Error::IdleTimeout) => "connection idle timeout".into(),
        Some(other) => other.to_string(),
        None if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            "peer closed the connection early".into()
        }
        None => e.to_string(),
    }
}

fn connect_error(e: &Error, to: SocketAddr) -> String {
    match e {
        Error::Unreachable | Error::ConnectTimeout(_) => {
            format!("peer unreachable: no STRIDE receiver answered at {to}")
        }
        Error::Reset => format!("connection refused by {to} (not accepting connections)"),
        other => format!("cannot connect to {to}: {other}"),
    }
}

async fn write_status(s: &mut Stream, st: Status, msg: &str) {
    let m = msg.as_bytes();
    let m = &m[..m.len().min(1024)];
    let mut b = vec![st as u8];
    b.extend_from_slice(&(m.len() as u16).to_be_bytes());
    b.extend_from_slice(m);
    let _ = s.write_all(&b).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), s.shutdown()).await;
}

async fn read_status<R: AsyncRead + Unpin>(r: &mut R) -> std::io::Result<(Status, String)> {
    let code = r.read_u8().await?;
    let len = r.read_u16().await?;
    let mut m = vec![0u8; usize::from(len)];
    r.read_exact(&mut m).await?;
    Ok((
        Status::from_u8(code),
        String::from_utf8_lossy(&m).into_owned(),
    ))
}

/// What the receiver reports per file.
#[derive(Debug)]
pub struct Received {
    name: String,
    bytes: u64,
    checksum: String,
    error: Option<String>,
}

fn io_msg(e: &std::io::Error) -> String {
    if e.raw_os_error() == Some(libc::ENOSPC) {
        "disk full".into()
    } else {
        e.to_string()
    }
}

async fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Receives one file from `s` into `dir`.
async fn recv_one(mut s: Stream, dir: &Path, force: bool) -> Received {
    let mut out = Received {
        name: String::new(),
        bytes: 0,
        checksum: String::new(),
        error: None,
    };
    // Header.
    let mut head = [0u8; 7];
    if let Err(e) = s.read_exact(&mut head).await {
        out.error = Some(format!("bad header: {}", transfer_error(&e)));
        return out;
    }
    if &head[..4] != MAGIC || head[4] != VERSION {
        out.error = Some("bad header: not a STRIDE file transfer".into());
        write_status(&mut s, Status::Protocol, "bad header").await;
        return out;
    }
    let nlen = usize::from(u16::from_be_bytes([head[5], head[6]]));
    let mut nb = vec![0u8; nlen];
    let size = match async {
        s.read_exact(&mut nb).await?;
        s.read_u64().await
    }
    .await
    {
        Ok(v) => v,
        Err(e) => {
            out.error = Some(format!("bad header: {}", transfer_error(&e)));
            return out;
        }
    };
    out.name = String::from_utf8_lossy(&nb).into_owned();
    if std::str::from_utf8(&nb).is_err() || !name_ok(&out.name) {
        let msg = format!("refused name {:?}", out.name);
        write_status(&mut s, Status::RefusedName, &msg).await;
        out.error = Some(msg);
        return out;
    }
    let fin = dir.join(&out.name);
    let part = dir.join(format!("{}.part", out.name));
    if fin.exists() && !force {
        let msg = format!("{:?} already exists (receiver needs --force)", out.name);
        write_status(&mut s, Status::Exists, &msg).await;
        out.error = Some(msg);
        return out;
    }
    let result = recv_body(&mut s, &part, size).await;
    let (st, msg) = match result {
        Err((st, msg)) => (st, msg),
        Ok((hash, file)) => {
            out.checksum = hash.to_hex().to_string();
            out.bytes = size;
            let mut theirs = [0u8; 32];
            match s.read_exact(&mut theirs).await {
                Err(e) => (
                    Status::Protocol,
                    format!("no checksum: {}", transfer_error(&e)),
                ),
                Ok(_) if blake3::Hash::from(theirs) != hash => {
                    (Status::ChecksumMismatch, "checksum mismatch".into())
                }
                Ok(_) => {
                    let synced = file.sync_all().await;
                    drop(file);
                    if let Err(e) = synced {
                        (Status::WriteFailed, format!("fsync: {}", io_msg(&e)))
                    } else if fin.exists() && !force {
                        (
                            Status::Exists,
                            format!("{:?} already exists (receiver needs --force)", out.name),
                        )
                    } else if let Err(e) = tokio::fs::rename(&part, &fin).await {
                        (Status::WriteFailed, format!("rename: {}", io_msg(&e)))
                    } else {
                        sync_dir(dir).await;
                        (Status::Ok, String::new())
                    }
                }
            }
        }
    };
    if st != Status::Ok {
        let _ = tokio::fs::remove_file(&part).await;
        out.error = Some(msg.clone());
    }
    write_status(&mut s, st, &msg).await;
    // Let the sender's end of stream arrive (and be acknowledged) before the stream goes.
    let mut sink = [0u8; 4096];
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    out
}

async fn recv_body(
    s: &mut Stream,
    part: &Path,
    size: u64,
) -> Result<(blake3::Hash, tokio::fs::File), (Status, String)> {
    let mut file = tokio::fs::File::create(part)
        .await
        .map_err(|e| (Status::WriteFailed, format!("create: {}", io_msg(&e))))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let want = (left.min(CHUNK as u64)) as usize;
        let n = s
            .read(&mut buf[..want])
            .await
            .map_err(|e| (Status::Protocol, transfer_error(&e)))?;
        if n == 0 {
            return Err((
                Status::Protocol,
                format!("peer ended the stream {left} bytes early"),
            ));
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .await
            .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
        left -= n as u64;
    }
    file.flush()
        .await
        .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
    Ok((hasher.finalize(), file))
}

fn print_received(r: &Received, json: bool) {
    if json {
        let mut o = json!({
            "name": r.name, "bytes": r.bytes, "checksum": r.checksum, "ok": r.error.is_none(),
        });
        if let Some(e) = &r.error {
            o["error"] = json!(e);
        }
        println!("{o}");
    } else if let Some(e) = &r.error {
        eprintln!("stride recv: {:?}: failed: {e}", r.name);
    } else {
        println!(
            "received {} ({} bytes, blake3 {})",
            r.name, r.bytes, r.checksum
        );
    }
}

/// `stride recv`.
pub fn run_recv(a: RecvArgs) -> anyhow::Result<()> {
    if let Err(e) = std::fs::create_dir_all(&a.out) {
        fail("recv", format!("cannot create {}: {e}", a.out.display()));
    }
    let rt = runtime()?;
    let code = rt.block_on(async move {
        let mut proto = stride::host_config(10_000_000_000);
        proto.idle_timeout_ns = a.idle_timeout;
        let opts = stride::EndpointConfig {
            proto,
            ..stride::EndpointConfig::default()
        };
        let ep = match Endpoint::bind_with(a.listen, opts) {
            Ok(ep) => ep,
            Err(e) => fail("recv", format!("cannot listen on {}: {e}", a.listen)),
        };
        eprintln!("listening on {}", ep.local_addr());
        let dir = std::sync::Arc::new(a.out.clone());
        loop {
            let s = match ep.accept().await {
                Ok(s) => s,
                Err(e) => fail("recv", e),
            };
            if a.once {
                let r = recv_one(s, &dir, a.force).await;
                print_received(&r, a.json);
                if r.error.is_some() {
                    if a.json {
                        eprintln!(
                            "stride recv: {:?}: {}",
                            r.name,
                            r.error.as_deref().unwrap_or("")
                        );
                    }
                    return 1;
                }
                return 0;
            }
            let dir = dir.clone();
            let (force, json) = (a.force, a.json);
            tokio::spawn(async move {
                let r = recv_one(s, &dir, force).await;
                print_received(&r, json);
            });
        }
    });
    drop(rt);
    std::process::exit(code)
}

async fn send_one(
    ep: &Endpoint,
    to: SocketAddr,
    path: &Path,
    connect_timeout: Duration,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a file name in UTF-8", path.display()))?
        .to_string();
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let size = file
        .metadata()
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    let start = Instant::now();
    let stream = ep
        .connect_timeout(to, connect_timeout)
        .await
        .map_err(|e| connect_error(&e, to))?;
    let (mut rd, mut wr) = tokio::io::split(stream);
    let (hash, st) = {
        let writer = async {
            let mut head = Vec::with_capacity(15 + name.len());
            head.extend_from_slice(MAGIC);
            head.push(VERSION);
            head.extend_from_slice(&(name.len() as u16).to_be_bytes());
            head.extend_from_slice(name.as_bytes());
            head.extend_from_slice(&size.to_be_bytes());
            wr.write_all(&head).await.map_err(|e| transfer_error(&e))?;
            let mut hasher = blake3::Hasher::new();
            let mut buf = vec![0u8; CHUNK];
            let mut left = size;
            while left > 0 {
                let want = left.min(CHUNK as u64) as usize;
                let n = file
                    .read(&mut buf[..want])
                    .await
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                if n == 0 {
                    return Err(format!("{}: file shrank while sending", path.display()));
                }
                hasher.update(&buf[..n]);
                wr.write_all(&buf[..n])
                    .await
                    .map_err(|e| transfer_error(&e))?;
                left -= n as u64;
            }
            let hash = hasher.finalize();
            wr.write_all(hash.as_bytes())
                .await
                .map_err(|e| transfer_error(&e))?;
            wr.shutdown().await.map_err(|e| transfer_error(&e))?;
            Ok::<_, String>(hash)
        };
        tokio::pin!(writer);
        let status = async { read_status(&mut rd).await };
        tokio::pin!(status);
        let (hash, st) = tokio::select! {
            w = &mut writer => {
                let w = match w {
                    Ok(h) => h,
                    Err(e) => {
                        // The receiver may have said why it stopped us.
                        if let Ok(Ok((st, msg))) = tokio::time::timeout(Duration::from_millis(500), &mut status).await {
                            if st != Status::Ok { return Err(format!("receiver: {msg}")); }
                        }
                        return Err(e);
                    }
                };
                (w, status.await)
            }
            st = &mut status => {
                match st {
                    // The confirmation can overtake our own notice that the last bytes were
                // acknowledged: the writer finishes right after.
                Ok((Status::Ok, m)) => match tokio::time::timeout(Duration::from_secs(5), &mut writer).await {
                    Ok(Ok(h)) => (h, Ok((Status::Ok, m))),
                    Ok(Err(e)) => return Err(e),
                    Err(_) => return Err("receiver confirmed before the data ended".into()),
                },
                    Ok((_, msg)) => return Err(format!("receiver: {msg}")),
                    Err(e) => return Err(transfer_error(&e)),
                }
            }
        };
        (hash, st)
    };
    match st {
        Ok((Status::Ok, _)) => {}
        Ok((_, msg)) => return Err(format!("receiver: {msg}")),
        Err(e) => {
            return Err(format!(
                "no confirmation from the receiver: {}",
                transfer_error(&e)
            ))
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let stream = rd.unsplit(wr);
    let cs = stream.stats().unwrap_or_default();
    let mut m = report(size, seconds, &cs);
    m.insert("file".into(), json!(name));
    m.insert("checksum".into(), json!(hash.to_hex().to_string()));
    // Wait (briefly) for the receiver's end of stream so its FIN is acknowledged.
    let mut stream = stream;
    let mut sink = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    Ok(m)
}

/// `stride send`.
pub fn run_send(a: SendArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    let code = rt.block_on(async move {
        let bind = a.bind.unwrap_or(if a.to.is_ipv6() {
            "[::]:0".parse().expect("addr")
        } else {
            "0.0.0.0:0".parse().expect("addr")
        });
        let proto = match a.control.config() {
            Ok(c) => c,
            Err(e) => fail("send", e),
        };
        let opts = stride::EndpointConfig {
            proto,
            listen: false,
            ..stride::EndpointConfig::default()
        };
        let ep = match Endpoint::bind_with(bind, opts) {
            Ok(ep) => ep,
            Err(e) => fail("send", format!("cannot bind {bind}: {e}")),
        };
        let limit = a.connect_timeout;
        let mut code = 0;
        for f in &a.files {
            match send_one(&ep, a.to, f, limit).await {
                Ok(m) => {
                    if a.json {
                        println!("{}", serde_json::Value::Object(m));
                    } else {
                        println!(
                            "sent {}: {} (blake3 {})",
                            f.display(),
                            human(&m),
                            m["checksum"].as_str().unwrap_or("")
                        );
                    }
                }
                Err(e) => {
                    eprintln!("stride send: {}: {e}", f.display());
                    code = 1;
                }
            }
        }
        code
    });
    drop(rt);
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::name_ok;

    #[test]
    fn names() {
        assert!(name_ok("a.bin"));
        assert!(name_ok(".hidden"));
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "a/b",
            "/etc/passwd",
            "a\\b",
            "x..y",
            "a\0b",
        ] {
            assert!(!name_ok(bad), "{bad:?}");
        }
    }
}
