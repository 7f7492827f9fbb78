//! File transfer over STRIDE streams: the protocol behind `stride send` and `stride recv`.
//!
//! On one connection per file the sender writes a header (`STRF`, version 1, the name's length
//! as u16, the name in UTF-8, the size as u64, all big-endian), the file's bytes and their
//! 32-byte BLAKE3 hash, then ends its direction. The receiver answers with a status (one code
//! byte, a u16 length, a UTF-8 message) before ending its own direction.
//!
//! The receiver stores a file so that no remote sender can corrupt or redirect it:
//! - one upload per name at a time (per process): a second upload of a name still in progress
//!   is refused with [`Status::Busy`], as is any upload beyond [`upload_limit`] (derived from
//!   the descriptor limit) in progress at once;
//! - a connection whose sender makes no progress for [`ReceiveOptions::stall_timeout`] is
//!   dropped (keepalives do not count), so fake or stalled uploads cannot pile up;
//! - the bytes go to a fresh temporary file `PREFIX.RANDOM.part` in the target directory,
//!   created with `O_CREAT | O_EXCL | O_NOFOLLOW` (mode 0600): it never truncates, follows or
//!   reuses an existing file or symlink;
//! - after fsync the receiver hashes what the file holds (reading it back) and compares that
//!   with the sender's hash, so the confirmation is about the bytes on disk;
//! - it renames the temporary file to `NAME` with `RENAME_NOREPLACE` (an existing `NAME` is
//!   refused, never replaced) unless the receiver allows overwriting, then fsyncs the directory.
//!
//! A failed transfer leaves no `NAME` behind and removes its temporary file.
//!
//! [`send_file`] is the sending side, [`receive_file`] the receiving side of one connection;
//! [`encode_header`] and [`Status`] are the wire format for other implementations and tests.
//!
//! ```no_run
//! # async fn demo() -> stride::Result<()> {
//! let server = stride::Endpoint::bind("127.0.0.1:0".parse().unwrap())?;
//! let client = stride::Endpoint::client("127.0.0.1:0".parse().unwrap())?;
//! let to = server.local_addr();
//! let recv = tokio::spawn(async move {
//!     let s = server.accept().await.unwrap();
//!     let opts = stride_apps::xfer::ReceiveOptions::default();
//!     stride_apps::xfer::receive_file(s, std::path::Path::new("incoming"), &opts).await
//! });
//! let opts = stride_apps::xfer::SendOptions::default();
//! let sent = stride_apps::xfer::send_file(&client, to, "notes.txt".as_ref(), &opts).await;
//! println!("{sent:?} {:?}", recv.await.unwrap());
//! # Ok(()) }
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use stride::{ConnStats, Endpoint, Error, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// First four bytes of a transfer.
pub const MAGIC: &[u8; 4] = b"STRF";
/// Protocol version this module speaks.
pub const VERSION: u8 = 1;
/// Bytes moved per read and write.
pub const CHUNK: usize = 256 * 1024;

/// Status codes of the receiver's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    /// Stored under its name: size and hash matched.
    Ok = 0,
    /// The hash did not match the received bytes.
    ChecksumMismatch = 1,
    /// The name is not a plain file name.
    RefusedName = 2,
    /// A file of that name exists (and the receiver does not overwrite).
    Exists = 3,
    /// The receiver could not write the file.
    WriteFailed = 4,
    /// The byte stream broke the protocol.
    Protocol = 5,
    /// Another upload of the same name is in progress, or the receiver is at its limit of
    /// uploads in progress.
    Busy = 6,
}

impl Status {
    /// The status of a code byte (unknown codes read as [`Status::Protocol`]).
    pub fn from_u8(b: u8) -> Status {
        match b {
            0 => Status::Ok,
            1 => Status::ChecksumMismatch,
            2 => Status::RefusedName,
            3 => Status::Exists,
            4 => Status::WriteFailed,
            6 => Status::Busy,
            _ => Status::Protocol,
        }
    }
}

/// A name the receiver accepts: a plain file name of at most 255 bytes, without path
/// separators, `..`, or control characters (which could rewrite a terminal that shows it).
pub fn name_ok(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.chars().any(char::is_control)
        && !name.contains('/')
        && !name.contains('\\')
        && !name.contains('\0')
        && !name.contains("..")
        && name != "."
}

/// Longest part of a name shown in messages and reports.
pub const SHOWN_NAME_CHARS: usize = 64;

/// A name as it may be shown: at most [`SHOWN_NAME_CHARS`] characters, then `…(N bytes)`.
/// Printing it with `{:?}` escapes control characters and ANSI escapes.
pub fn shown_name(name: &str) -> String {
    match name.char_indices().nth(SHOWN_NAME_CHARS) {
        None => name.to_string(),
        Some((cut, _)) => format!("{}…({} bytes)", &name[..cut], name.len()),
    }
}

/// The header that starts a transfer of `size` bytes named `name`.
pub fn encode_header(name: &str, size: u64) -> Vec<u8> {
    let mut head = Vec::with_capacity(15 + name.len());
    head.extend_from_slice(MAGIC);
    head.push(VERSION);
    head.extend_from_slice(&(name.len() as u16).to_be_bytes());
    head.extend_from_slice(name.as_bytes());
    head.extend_from_slice(&size.to_be_bytes());
    head
}

/// A readable message for an I/O error of a transfer stream.
pub fn transfer_error(e: &std::io::Error) -> String {
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

/// Default of [`ReceiveOptions::stall_timeout`] and [`SendOptions::stall_timeout`].
pub const STALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for the status to leave and for the peer's end of stream after it.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

/// Runs `f`, failing with `TimedOut` ("no progress for ...") when it takes longer than `limit`.
async fn within<T>(
    limit: Duration,
    f: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    match tokio::time::timeout(limit, f).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no progress for {:.1} s", limit.as_secs_f64()),
        )),
    }
}

async fn write_status(s: &mut Stream, st: Status, msg: &str) {
    let m = msg.as_bytes();
    let m = &m[..m.len().min(1024)];
    let mut b = vec![st as u8];
    b.extend_from_slice(&(m.len() as u16).to_be_bytes());
    b.extend_from_slice(m);
    let _ = within(CLOSE_WAIT, s.write_all(&b)).await;
    let _ = tokio::time::timeout(CLOSE_WAIT, s.shutdown()).await;
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
#[derive(Debug, Clone, Default)]
pub struct Received {
    /// The name the sender gave (lossily decoded; shortened by [`shown_name`] when refused).
    pub name: String,
    /// The name was refused (not a plain file name).
    pub refused_name: bool,
    /// Bytes stored.
    pub bytes: u64,
    /// BLAKE3 of the stored bytes (read back from disk), hex.
    pub checksum: String,
    /// Why the transfer failed (None: stored).
    pub error: Option<String>,
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

/// Options of [`receive_file`].
#[derive(Clone, Copy, Debug)]
pub struct ReceiveOptions {
    /// Replace an existing file of the same name.
    pub force: bool,
    /// Give up (and delete the temporary file) when the sender's bytes make no progress for
    /// this long; keepalives do not count. Default [`STALL_TIMEOUT`].
    pub stall_timeout: Duration,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        ReceiveOptions {
            force: false,
            stall_timeout: STALL_TIMEOUT,
        }
    }
}

/// Receives one file from `s` into `dir`, answers the sender with the outcome and returns it.
pub async fn receive_file(mut s: Stream, dir: &Path, opts: &ReceiveOptions) -> Received {
    let (force, stall) = (opts.force, opts.stall_timeout);
    let mut out = Received::default();
    // Header.
    let mut head = [0u8; 7];
    if let Err(e) = within(stall, s.read_exact(&mut head)).await {
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
    let size = match within(stall, async {
        s.read_exact(&mut nb).await?;
        s.read_u64().await
    })
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
        out.name = shown_name(&out.name);
        out.refused_name = true;
        let msg = format!("refused name {:?}", out.name);
        write_status(&mut s, Status::RefusedName, &msg).await;
        out.error = Some(msg);
        return out;
    }
    let fin = dir.join(&out.name);
    let _claim = match Claim::take(&fin) {
        Ok(c) => c,
        Err(Refusal::Full(n)) => {
            let msg = format!("receiver busy: {n} uploads in progress (its limit)");
            write_status(&mut s, Status::Busy, &msg).await;
            out.error = Some(msg);
            return out;
        }
        Err(Refusal::NameBusy) => {
            let msg = format!("another upload of {:?} is in progress", out.name);
            write_status(&mut s, Status::Busy, &msg).await;
            out.error = Some(msg);
            return out;
        }
    };
    if !force && std::fs::symlink_metadata(&fin).is_ok() {
        let msg = format!("{:?} already exists (receiver needs --force)", out.name);
        write_status(&mut s, Status::Exists, &msg).await;
        out.error = Some(msg);
        return out;
    }
    let (file, part) = match create_part(dir, &out.name) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("create: {}", io_msg(&e));
            write_status(&mut s, Status::WriteFailed, &msg).await;
            out.error = Some(msg);
            return out;
        }
    };
    let result = recv_body(&mut s, tokio::fs::File::from_std(file), size, stall).await;
    let (st, msg) = match result {
        Err((st, msg)) => (st, msg),
        Ok(file) => {
            let mut theirs = [0u8; 32];
            match within(stall, s.read_exact(&mut theirs)).await {
                Err(e) => (
                    Status::Protocol,
                    format!("no checksum: {}", transfer_error(&e)),
                ),
                Ok(_) => match sync_and_hash(file).await {
                    Err(e) => (Status::WriteFailed, format!("fsync: {}", io_msg(&e))),
                    Ok((stored, hash)) if stored != size || blake3::Hash::from(theirs) != hash => {
                        (Status::ChecksumMismatch, "checksum mismatch".into())
                    }
                    Ok((_, hash)) => {
                        out.checksum = hash.to_hex().to_string();
                        out.bytes = size;
                        match publish(&part, &fin, force) {
                            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => (
                                Status::Exists,
                                format!("{:?} already exists (receiver needs --force)", out.name),
                            ),
                            Err(e) => (Status::WriteFailed, format!("rename: {}", io_msg(&e))),
                            Ok(()) => {
                                sync_dir(dir).await;
                                (Status::Ok, String::new())
                            }
                        }
                    }
                },
            }
        }
    };
    if st != Status::Ok {
        let _ = tokio::fs::remove_file(&part).await;
        out.error = Some(msg.clone());
        out.bytes = 0;
        out.checksum.clear();
    }
    write_status(&mut s, st, &msg).await;
    // Let the sender's end of stream arrive (and be acknowledged) before the stream goes.
    let mut sink = [0u8; 4096];
    let ended = tokio::time::timeout(stall.min(CLOSE_WAIT), async {
        while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
    if ended.is_err() {
        // The sender neither finished nor left: tell it we gave up.
        s.abort();
    }
    out
}

/// The names being received in this process (full target paths): one upload per name.
static IN_PROGRESS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// An upload's hold on its target path; released on drop.
struct Claim(PathBuf);

/// Why an upload may not start.
enum Refusal {
    /// The name is being received.
    NameBusy,
    /// This many uploads are in progress: the process's limit.
    Full(usize),
}

impl Claim {
    fn take(path: &Path) -> Result<Claim, Refusal> {
        let mut busy = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        if busy.iter().any(|p| p == path) {
            return Err(Refusal::NameBusy);
        }
        if busy.len() >= upload_limit() {
            return Err(Refusal::Full(busy.len()));
        }
        busy.push(path.to_path_buf());
        Ok(Claim(path.to_path_buf()))
    }
}

/// Most uploads one process receives at a time: each holds a file descriptor (and, while it
/// is checked, a blocking thread), so half the descriptor limit that remains after 64 for
/// everything else, and at most 4096.
pub fn upload_limit() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| {
        // SAFETY: getrlimit fills the struct we own.
        let mut r: libc::rlimit = unsafe { std::mem::zeroed() };
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0 {
            r.rlim_cur
        } else {
            1024
        };
        (soft.saturating_sub(64) / 2).clamp(1, 4096) as usize
    })
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut busy = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        busy.retain(|p| p != &self.0);
    }
}

/// 64 random bits in hex (from the kernel's random source).
fn random_hex() -> std::io::Result<String> {
    let mut b = [0u8; 8];
    getrandom::getrandom(&mut b).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(format!("{:016x}", u64::from_le_bytes(b)))
}

/// Creates a fresh temporary file for `name` in `dir`: `PREFIX.RANDOM.part`, where PREFIX is
/// at most the first 200 bytes of the name, so the temporary name fits where the name fits.
fn create_part(dir: &Path, name: &str) -> std::io::Result<(std::fs::File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut cut = name.len().min(200);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut tries = 0;
    loop {
        let part = dir.join(format!("{}.{}.part", &name[..cut], random_hex()?));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&part)
        {
            Ok(f) => return Ok((f, part)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Flushes `file` to disk, then reads it back from the start: (bytes stored, their BLAKE3).
async fn sync_and_hash(file: tokio::fs::File) -> std::io::Result<(u64, blake3::Hash)> {
    let file = file.into_std().await;
    tokio::task::spawn_blocking(move || {
        use std::os::unix::fs::FileExt;
        file.sync_all()?;
        let mut hasher = blake3::Hasher::new();
        let mut buf = vec![0u8; CHUNK];
        let mut at = 0u64;
        loop {
            let n = file.read_at(&mut buf, at)?;
            if n == 0 {
                break;
            }
            hasher.update(&buf[..n]);
            at += n as u64;
        }
        Ok((at, hasher.finalize()))
    })
    .await
    .map_err(std::io::Error::other)?
}

/// Moves the finished temporary file to its name: never replacing an existing entry unless
/// `force` (`renameat2(RENAME_NOREPLACE)`, or `link` + `unlink` where the file system lacks it).
fn publish(part: &Path, fin: &Path, force: bool) -> std::io::Result<()> {
    if force {
        return std::fs::rename(part, fin);
    }
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let (from, to) = (c(part)?, c(fin)?);
    // SAFETY: two valid NUL-terminated paths; the call only reads them.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EINVAL) | Some(libc::ENOSYS) => {
            std::fs::hard_link(part, fin)?;
            std::fs::remove_file(part)
        }
        _ => Err(e),
    }
}

/// Copies the `size` bytes of the body from `s` into `file`.
async fn recv_body(
    s: &mut Stream,
    mut file: tokio::fs::File,
    size: u64,
    stall: Duration,
) -> Result<tokio::fs::File, (Status, String)> {
    let mut buf = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let want = (left.min(CHUNK as u64)) as usize;
        let n = within(stall, s.read(&mut buf[..want]))
            .await
            .map_err(|e| (Status::Protocol, transfer_error(&e)))?;
        if n == 0 {
            return Err((
                Status::Protocol,
                format!("peer ended the stream {left} bytes early"),
            ));
        }
        file.write_all(&buf[..n])
            .await
            .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
        left -= n as u64;
    }
    file.flush()
        .await
        .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
    Ok(file)
}

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
#[derive(Clone, Copy, Debug)]
pub struct SendOptions {
    /// Give up connecting after this long. Default 15 s: above `stride send`'s SYN give-up
    /// (`max_retries` 14: 9.0 to 11.5 s of resends), so an overloaded receiver still gets the
    /// SYN; with the core's default 8 retries the core gives up first (3.7 to 4.8 s).
    pub connect_timeout: Duration,
    /// Give up (aborting the connection) when a write makes no progress for this long, or
    /// when the receiver's status has not come this long (plus one second per 100 MB for the
    /// receiver's check) after the last byte left. Default [`STALL_TIMEOUT`].
    pub stall_timeout: Duration,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            connect_timeout: Duration::from_secs(15),
            stall_timeout: STALL_TIMEOUT,
        }
    }
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
    let mut file = tokio::fs::File::open(path)
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .await
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let size = meta.len();
    let stall = opts.stall_timeout;
    let check_time = stall + Duration::from_secs(size / 100_000_000);
    let start = Instant::now();
    let stream = ep
        .connect_timeout(to, opts.connect_timeout)
        .await
        .map_err(|e| connect_error(&e, to))?;
    let (mut rd, mut wr) = tokio::io::split(stream);
    let outcome = async {
        let writer = async {
            let head = encode_header(&name, size);
            within(stall, wr.write_all(&head))
                .await
                .map_err(|e| transfer_error(&e))?;
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
                within(stall, wr.write_all(&buf[..n]))
                    .await
                    .map_err(|e| transfer_error(&e))?;
                left -= n as u64;
            }
            let hash = hasher.finalize();
            within(stall, wr.write_all(hash.as_bytes()))
                .await
                .map_err(|e| transfer_error(&e))?;
            within(stall, wr.shutdown())
                .await
                .map_err(|e| transfer_error(&e))?;
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
            "\x1b[2Jevil",
            "bell\x07",
            "line\nbreak",
            "c1\u{9b}31m",
        ] {
            assert!(!name_ok(bad), "{bad:?}");
        }
        assert!(name_ok(&"n".repeat(255)));
        assert!(!name_ok(&"n".repeat(256)));
    }

    #[test]
    fn long_names_are_shortened_when_shown() {
        let long = "x".repeat(5000);
        let s = super::shown_name(&long);
        assert!(s.len() < 100, "{s}");
        assert!(s.ends_with("…(5000 bytes)"), "{s}");
        assert_eq!(super::shown_name("short.bin"), "short.bin");
        // Debug formatting escapes what a terminal would act on.
        assert_eq!(
            format!("{:?}", super::shown_name("\x1b[2J")),
            "\"\\u{1b}[2J\""
        );
    }
}
