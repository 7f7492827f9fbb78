//! The sending side: one file per connection, confirmed by the receiver.

use super::{
    auth::{BodyCipher, CHUNK_TAG},
    connect_error, encode_header, encode_header_keyed, read_status, transfer_error, within, Key,
    Status, CHUNK, STALL_TIMEOUT, VERSION_AUTH, VERSION_SEALED,
};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};
use stride::{ConnStats, Endpoint, EndpointConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A file the receiver confirmed.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The name it was sent under.
    pub name: String,
    /// Its size.
    pub bytes: u64,
    /// Seconds from connecting to the receiver's confirmation.
    pub seconds: f64,
    /// BLAKE3 of its bytes.
    pub checksum: blake3::Hash,
    /// The connection's counters at the confirmation.
    pub stats: ConnStats,
}

/// Options of [`send_file`].
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// Give up connecting after this long. Default 15 s: above `stride send`'s SYN give-up
    /// (`max_retries` 14: 9.0 to 11.5 s of resends), so an overloaded receiver still gets the
    /// SYN; with the core's default 8 retries the core gives up first (3.7 to 4.8 s).
    pub connect_timeout: Duration,
    /// Give up (aborting the connection) when a write makes no progress for this long, or
    /// when the receiver's status has not come this long (plus one second per 100 MB for the
    /// receiver's check) after the last byte left. Default [`STALL_TIMEOUT`].
    pub stall_timeout: Duration,
    /// Authenticate the upload with this key (the receiver must hold the same), and believe
    /// only an answer authenticated by it.
    pub key: Option<Key>,
    /// Encrypt the file's bytes (ChaCha20-Poly1305 under a key derived from `key`, which it
    /// needs).
    pub encrypt: bool,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            connect_timeout: Duration::from_secs(15),
            stall_timeout: STALL_TIMEOUT,
            key: None,
            encrypt: false,
        }
    }
}

/// What goes out besides the file's bytes: the header (of `size` bytes), for an authenticated
/// upload the key and the header's tag, and for an encrypted one the body's cipher.
struct Outgoing<'a> {
    head: &'a [u8],
    size: u64,
    auth: Option<(&'a Key, &'a [u8; 32])>,
    cipher: Option<BodyCipher>,
}

/// The sender's side of one transfer on `wr`: the header of `up`, the bytes of `file` (at
/// `path`, encrypted if `up` has a cipher) and their hash (with its tag for an authenticated
/// upload), then the end of the direction; every write bounded by `stall`. Returns the hash,
/// or the message of what failed.
async fn write_file<W: AsyncWrite + Unpin>(
    wr: &mut W,
    file: &mut (dyn AsyncRead + Unpin + Send),
    path: &Path,
    up: Outgoing<'_>,
    stall: Duration,
) -> Result<blake3::Hash, String> {
    let Outgoing {
        head,
        size,
        auth,
        mut cipher,
    } = up;
    within(stall, wr.write_all(head))
        .await
        .map_err(|e| transfer_error(&e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buf = vec![0u8; CHUNK + CHUNK_TAG];
    let mut left = size;
    let shrank = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            format!("{}: file shrank while sending", path.display())
        }
        _ => format!("{}: {e}", path.display()),
    };
    while left > 0 {
        let want = left.min(CHUNK as u64) as usize;
        let (n, out) = match cipher.as_mut() {
            // Encrypted chunks have fixed sizes: read each whole, then seal it.
            Some(c) => {
                file.read_exact(&mut buf[..want]).await.map_err(shrank)?;
                hasher.update(&buf[..want]);
                let tag = c.seal(&mut buf[..want]);
                buf[want..want + CHUNK_TAG].copy_from_slice(&tag);
                (want, want + CHUNK_TAG)
            }
            None => {
                let n = file.read(&mut buf[..want]).await.map_err(shrank)?;
                hasher.update(&buf[..n]);
                (n, n)
            }
        };
        if n == 0 {
            return Err(format!("{}: file shrank while sending", path.display()));
        }
        within(stall, wr.write_all(&buf[..out]))
            .await
            .map_err(|e| transfer_error(&e))?;
        left -= n as u64;
    }
    let hash = hasher.finalize();
    let mut trailer = hash.as_bytes().to_vec();
    if let Some((key, head_tag)) = auth {
        trailer.extend_from_slice(key.body_tag(head_tag, &hash).as_bytes());
    }
    within(stall, wr.write_all(&trailer))
        .await
        .map_err(|e| transfer_error(&e))?;
    within(stall, wr.shutdown())
        .await
        .map_err(|e| transfer_error(&e))?;
    Ok(hash)
}

/// SYN resends of a sender ([`sender_options`]): 9.0 to 11.5 s with back-off (spec §6.6),
/// inside the default 15 s connect timeout ([`SendOptions::connect_timeout`]), for receivers
/// overloaded by hundreds of concurrent starts.
pub const SEND_SYN_RETRIES: u32 = 14;

/// The endpoint options of a sender (`stride send`) with protocol configuration `proto`: not
/// listening, giving up on a peer after `give_up_ns` (at least 1 ns) of unacknowledged data,
/// and resending its SYN at least [`SEND_SYN_RETRIES`] times (a receiver overloaded by hundreds
/// of concurrent starts loses SYNs).
pub fn sender_options(mut proto: stride::Config, give_up_ns: u64) -> EndpointConfig {
    proto.give_up_ns = give_up_ns.max(1);
    proto.max_retries = proto.max_retries.max(SEND_SYN_RETRIES);
    EndpointConfig {
        proto,
        listen: false,
        ..EndpointConfig::default()
    }
}

/// Largest file sent whose size reads as 0 but that holds bytes (procfs and sysfs files): it
/// is read whole before sending, to know its size.
pub const SIZELESS_MAX: u64 = 64 << 20;

/// Opens the file to send and returns it with its size: never blocking on a FIFO without a
/// writer (opened non-blocking, then refused as not a regular file), giving up after `limit`
/// (a hung file system), and reading whole a file whose size reads as 0 but that holds bytes.
async fn open_input(
    path: &Path,
    limit: Duration,
) -> Result<(Box<dyn AsyncRead + Unpin + Send>, u64), String> {
    let shown = path.display();
    let mut how = tokio::fs::OpenOptions::new();
    how.read(true).custom_flags(libc::O_NONBLOCK);
    let open = how.open(path);
    let mut file = match tokio::time::timeout(limit, open).await {
        Ok(r) => r.map_err(|e| format!("{shown}: {e}"))?,
        Err(_) => {
            return Err(format!(
                "{shown}: opening it took longer than {:.1} s",
                limit.as_secs_f64()
            ))
        }
    };
    let meta = file.metadata().await.map_err(|e| format!("{shown}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{shown}: not a regular file"));
    }
    if meta.len() > 0 {
        return Ok((Box::new(file), meta.len()));
    }
    let mut bytes = Vec::new();
    let mut limited = (&mut file).take(SIZELESS_MAX + 1);
    let read = limited.read_to_end(&mut bytes);
    match tokio::time::timeout(limit, read).await {
        Ok(r) => r.map_err(|e| format!("{shown}: {e}"))?,
        Err(_) => return Err(format!("{shown}: reading it made no progress")),
    };
    if bytes.len() as u64 > SIZELESS_MAX {
        return Err(format!(
            "{shown}: its size reads as 0 but it holds more than {SIZELESS_MAX} bytes (a procfs-like file); copy it to a regular file first"
        ));
    }
    let n = bytes.len() as u64;
    Ok((Box::new(std::io::Cursor::new(bytes)), n))
}

/// Sends the file at `path` to the receiver at `to` on a new connection of `ep`; Ok only when
/// the receiver confirmed size and hash. Every wait is bounded (see [`SendOptions`]); on
/// failure the connection is aborted, so the receiver learns of it at once.
pub async fn send_file(
    ep: &Endpoint,
    to: SocketAddr,
    path: &Path,
    opts: &SendOptions,
) -> Result<Sent, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{}: not a file name in UTF-8", path.display()))?
        .to_string();
    let (mut file, size) = open_input(path, opts.stall_timeout).await?;
    let version = if opts.encrypt {
        VERSION_SEALED
    } else {
        VERSION_AUTH
    };
    let (head, head_tag) = match &opts.key {
        Some(k) => {
            let (h, t) = encode_header_keyed(&name, size, k, version).map_err(|e| e.to_string())?;
            (h, Some(t))
        }
        None if opts.encrypt => return Err("encrypting needs a key".into()),
        None => (encode_header(&name, size), None),
    };
    let auth = opts.key.as_ref().zip(head_tag.as_ref());
    let cipher = auth.filter(|_| opts.encrypt).map(|(k, t)| k.body_cipher(t));
    let stall = opts.stall_timeout;
    let check_time = stall + Duration::from_secs(size / 100_000_000);
    let start = Instant::now();
    let stream = ep
        .connect_timeout(to, opts.connect_timeout)
        .await
        .map_err(|e| connect_error(&e, to))?;
    let (mut rd, mut wr) = tokio::io::split(stream);
    let outcome = async {
        let up = Outgoing {
            head: &head,
            size,
            auth,
            cipher,
        };
        let writer = write_file(&mut wr, &mut *file, path, up, stall);
        tokio::pin!(writer);
        let status = async { read_status(&mut rd, auth).await };
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
                // Every byte is acknowledged: the receiver checks the file and answers.
                (w, within(check_time, &mut status).await)
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
        match st {
            Ok((Status::Ok, _)) => Ok(hash),
            Ok((_, msg)) => Err(format!("receiver: {msg}")),
            Err(e) => Err(format!(
                "no confirmation from the receiver: {}",
                transfer_error(&e)
            )),
        }
    }
    .await;
    let mut stream = rd.unsplit(wr);
    let hash = match outcome {
        Ok(h) => h,
        Err(e) => {
            stream.abort();
            return Err(e);
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let stats = stream.stats().unwrap_or_default();
    // Wait (briefly) for the receiver's end of stream so its FIN is acknowledged.
    let mut sink = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    Ok(Sent {
        name,
        bytes: size,
        seconds,
        checksum: hash,
        stats,
    })
}
