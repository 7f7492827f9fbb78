//! The receiving side: one file per connection, stored so that no remote sender can corrupt
//! or redirect it (see the module documentation of [`super`]).

use super::auth::{ReplayGuard, AUTH_BYTES};
use super::{
    name_ok, shown_name, transfer_error, within, write_status, Key, Seal, Status, CHUNK,
    CLOSE_WAIT, MAGIC, STALL_TIMEOUT, VERSION, VERSION_AUTH,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use stride::{Endpoint, EndpointConfig, Stream};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

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

/// Options of [`receive_file`]. Clones share one [`ReceiverState`]: give every connection of
/// a receiver a clone of the same options.
#[derive(Clone, Debug)]
pub struct ReceiveOptions {
    /// Replace an existing file of the same name.
    pub force: bool,
    /// Give up (and delete the temporary file) when the sender's bytes make no progress for
    /// this long; keepalives do not count. Default [`STALL_TIMEOUT`].
    pub stall_timeout: Duration,
    /// Accept only uploads authenticated with this key (None: anyone who reaches the port).
    pub key: Option<Key>,
    /// Accept only senders whose address is in one of these networks (empty: any address).
    pub allow: Vec<ipnet::IpNet>,
    /// What the connections of this receiver share (counters, recent headers).
    pub state: Arc<ReceiverState>,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        ReceiveOptions {
            force: false,
            stall_timeout: STALL_TIMEOUT,
            key: None,
            allow: Vec::new(),
            state: Arc::default(),
        }
    }
}

/// Counters of the uploads a receiver refused or dropped, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Not authenticated with the receiver's key (no key, another key, a bad tag, a replayed
    /// header or a clock too far off).
    pub unauthenticated: u64,
    /// From an address outside the allowed networks.
    pub not_allowed: u64,
}

/// The state the connections of one receiver share: its counters and the recent
/// authenticated headers (for replay detection).
#[derive(Debug, Default)]
pub struct ReceiverState {
    refusals: std::sync::Mutex<Refusals>,
    replay: std::sync::Mutex<ReplayGuard>,
}

impl std::fmt::Debug for ReplayGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReplayGuard")
    }
}

impl ReceiverState {
    /// The counters so far.
    pub fn refusals(&self) -> Refusals {
        *self.refusals.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn count(&self, f: impl FnOnce(&mut Refusals)) {
        f(&mut self.refusals.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// The endpoint options of a receiver (`stride recv`): the host profile with the connection
/// idle timeout `idle_timeout_ns`, the loss recovery `recovery` (None: the profile's), and a
/// read-delay slack of `read_delay_slack_ns` (0: off; see
/// [`stride::EndpointConfig::read_delay_slack_ns`]).
pub fn receiver_options(
    idle_timeout_ns: u64,
    recovery: Option<stride::proto::Recovery>,
    read_delay_slack_ns: u64,
) -> EndpointConfig {
    let mut proto = stride::host_config(10_000_000_000);
    proto.idle_timeout_ns = idle_timeout_ns;
    if let Some(r) = recovery {
        proto.recovery = r;
    }
    EndpointConfig {
        proto,
        read_delay_slack_ns: (read_delay_slack_ns > 0).then_some(read_delay_slack_ns),
        ..EndpointConfig::default()
    }
}

/// Receives a file from every connection `ep` accepts, each on its own task, into `dir`;
/// `report` sees each outcome. Returns the error that stopped accepting.
pub async fn receive_files<R>(
    ep: &Endpoint,
    dir: &Path,
    opts: &ReceiveOptions,
    report: R,
) -> stride::Error
where
    R: Fn(Received) + Clone + Send + 'static,
{
    let dir = std::sync::Arc::new(dir.to_path_buf());
    loop {
        let s = match ep.accept().await {
            Ok(s) => s,
            Err(e) => return e,
        };
        let (dir, opts, report) = (dir.clone(), opts.clone(), report.clone());
        tokio::spawn(async move {
            let r = receive_file(s, &dir, &opts).await;
            report(r);
        });
    }
}

/// A header as read: the name's bytes, the declared size and, for an authenticated upload, its
/// tag.
struct Header {
    name: Vec<u8>,
    size: u64,
    tag: Option<[u8; 32]>,
}

/// A refusal to answer with: status, message, how the answer is sealed, and the name the
/// header gave (empty if it was not read).
type Answer = (Status, String, Seal, Vec<u8>);

/// Reads the header (each read bounded by `stall`) and checks its authentication against
/// the receiver's `key`. Err(None): the sender broke off (nothing to answer).
async fn read_header(
    s: &mut Stream,
    stall: Duration,
    opts: &ReceiveOptions,
) -> Result<Header, Option<Answer>> {
    let mut head = [0u8; 7];
    within(stall, s.read_exact(&mut head))
        .await
        .map_err(|_| None)?;
    let version = head[4];
    if &head[..4] != MAGIC || (version != VERSION && version != VERSION_AUTH) {
        return Err(Some((
            Status::Protocol,
            "bad header: not a STRIDE file transfer".into(),
            Seal::None,
            Vec::new(),
        )));
    }
    let nlen = usize::from(u16::from_be_bytes([head[5], head[6]]));
    let rest = nlen
        + 8
        + if version == VERSION_AUTH {
            AUTH_BYTES
        } else {
            0
        };
    let mut all = head.to_vec();
    all.resize(7 + rest, 0);
    within(stall, s.read_exact(&mut all[7..]))
        .await
        .map_err(|_| None)?;
    let name = all[7..7 + nlen].to_vec();
    let size = u64::from_be_bytes(all[7 + nlen..15 + nlen].try_into().expect("8 bytes"));
    let refuse = |msg: &str, seal| {
        opts.state.count(|c| c.unauthenticated += 1);
        Err(Some((
            Status::Unauthenticated,
            msg.to_string(),
            seal,
            name.clone(),
        )))
    };
    match (version == VERSION_AUTH, &opts.key) {
        (false, None) => Ok(Header {
            name,
            size,
            tag: None,
        }),
        (false, Some(_)) => refuse(
            "this receiver accepts only authenticated uploads (send --key)",
            Seal::None,
        ),
        (true, None) => refuse("this receiver has no key (send without --key)", Seal::Zero),
        (true, Some(key)) => {
            let (signed, tag) = all.split_at(all.len() - 32);
            let tag: [u8; 32] = tag.try_into().expect("32 bytes");
            let seal = Seal::Tag(key.clone(), tag);
            if !key.header_ok(signed, &tag) {
                return refuse("not authenticated (another key?)", seal);
            }
            let block = &signed[signed.len() - 24..];
            let ts = u64::from_be_bytes(block[..8].try_into().expect("8 bytes"));
            let nonce: [u8; 16] = block[8..].try_into().expect("16 bytes");
            let admitted = opts
                .state
                .replay
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .admit_now(ts, nonce);
            match admitted {
                Ok(()) => Ok(Header {
                    name,
                    size,
                    tag: Some(tag),
                }),
                Err(why) => refuse(&format!("refused: {why}"), seal),
            }
        }
    }
}

/// Whether `opts` lets the sender at `from` upload (its address in an allowed network).
fn allowed(opts: &ReceiveOptions, from: std::net::SocketAddr) -> bool {
    let ip = from.ip().to_canonical();
    opts.allow.is_empty() || opts.allow.iter().any(|n| n.contains(&ip))
}

/// Receives one file from `s` into `dir`, answers the sender with the outcome and returns it.
pub async fn receive_file(mut s: Stream, dir: &Path, opts: &ReceiveOptions) -> Received {
    let (force, stall) = (opts.force, opts.stall_timeout);
    let mut out = Received::default();
    if !allowed(opts, s.remote_addr()) {
        opts.state.count(|c| c.not_allowed += 1);
        let msg = format!("{} is not an allowed address", s.remote_addr().ip());
        // Before the header: its version is unknown. A version-1 sender ignores the zero tag,
        // a version-2 one shows the message as unauthenticated.
        write_status(&mut s, Status::Unauthenticated, &msg, &Seal::Zero).await;
        out.error = Some(msg);
        return out;
    }
    let head = match read_header(&mut s, stall, opts).await {
        Ok(h) => h,
        Err(None) => {
            out.error = Some("bad header: the sender broke off".into());
            return out;
        }
        Err(Some((st, msg, seal, name))) => {
            out.name = shown_name(&String::from_utf8_lossy(&name));
            write_status(&mut s, st, &msg, &seal).await;
            out.error = Some(msg);
            return out;
        }
    };
    let seal = match (&opts.key, head.tag) {
        (Some(k), Some(t)) => Seal::Tag(k.clone(), t),
        _ => Seal::None,
    };
    let (nb, size) = (head.name, head.size);
    out.name = String::from_utf8_lossy(&nb).into_owned();
    if std::str::from_utf8(&nb).is_err() || !name_ok(&out.name) {
        out.name = shown_name(&out.name);
        out.refused_name = true;
        let msg = format!("refused name {:?}", out.name);
        write_status(&mut s, Status::RefusedName, &msg, &seal).await;
        out.error = Some(msg);
        return out;
    }
    let fin = dir.join(&out.name);
    let _claim = match Claim::take(&fin) {
        Ok(c) => c,
        Err(Refusal::Full(n)) => {
            let msg = format!("receiver busy: {n} uploads in progress (its limit)");
            write_status(&mut s, Status::Busy, &msg, &seal).await;
            out.error = Some(msg);
            return out;
        }
        Err(Refusal::NameBusy) => {
            let msg = format!("another upload of {:?} is in progress", out.name);
            write_status(&mut s, Status::Busy, &msg, &seal).await;
            out.error = Some(msg);
            return out;
        }
    };
    if !force && std::fs::symlink_metadata(&fin).is_ok() {
        let msg = format!("{:?} already exists (receiver needs --force)", out.name);
        write_status(&mut s, Status::Exists, &msg, &seal).await;
        out.error = Some(msg);
        return out;
    }
    let (file, part) = match create_part(dir, &out.name) {
        Ok(v) => v,
        Err(e) => {
            let msg = format!("create: {}", io_msg(&e));
            write_status(&mut s, Status::WriteFailed, &msg, &seal).await;
            out.error = Some(msg);
            return out;
        }
    };
    let target = Target {
        dir,
        part: &part,
        fin: &fin,
        force,
        auth: match &seal {
            Seal::Tag(k, t) => Some((k, *t)),
            _ => None,
        },
    };
    let (st, msg) = store(&mut s, file, size, stall, &target, &mut out).await;
    if st == Status::Unauthenticated {
        opts.state.count(|c| c.unauthenticated += 1);
    }
    if st != Status::Ok {
        let _ = tokio::fs::remove_file(&part).await;
        out.error = Some(msg.clone());
        out.bytes = 0;
        out.checksum.clear();
    }
    write_status(&mut s, st, &msg, &seal).await;
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

/// Where a received file goes: its temporary file `part` in `dir`, then its name `fin`
/// (replacing an existing one only when `force`).
struct Target<'a> {
    dir: &'a Path,
    part: &'a Path,
    fin: &'a Path,
    force: bool,
    /// The key and the header's tag of an authenticated upload: the body's hash must come
    /// with its tag.
    auth: Option<(&'a Key, [u8; 32])>,
}

/// Copies the body from `s` into `file`, reads the sender's hash, flushes the file and hashes
/// what it holds, and on a match publishes it under its name: the status to answer with (and
/// its message). A stored file's size and hash go to `out`.
async fn store(
    s: &mut Stream,
    file: std::fs::File,
    size: u64,
    stall: Duration,
    target: &Target<'_>,
    out: &mut Received,
) -> (Status, String) {
    let (dir, part, fin, force) = (target.dir, target.part, target.fin, target.force);
    let result = recv_body(s, tokio::fs::File::from_std(file), size, stall).await;
    match result {
        Err((st, msg)) => (st, msg),
        Ok(file) => {
            let mut theirs = [0u8; 64];
            let trailer = if target.auth.is_some() { 64 } else { 32 };
            match within(stall, s.read_exact(&mut theirs[..trailer])).await {
                Err(e) => (
                    Status::Protocol,
                    format!("no checksum: {}", transfer_error(&e)),
                ),
                Ok(_) if !trailer_ok(&theirs, target.auth) => (
                    Status::Unauthenticated,
                    "the body's checksum is not authenticated by the key".into(),
                ),
                Ok(_) => match sync_and_hash(file).await {
                    Err(e) => (Status::WriteFailed, format!("fsync: {}", io_msg(&e))),
                    Ok((stored, hash))
                        if stored != size || blake3::Hash::from(theirs_hash(&theirs)) != hash =>
                    {
                        (Status::ChecksumMismatch, "checksum mismatch".into())
                    }
                    Ok((_, hash)) => {
                        out.checksum = hash.to_hex().to_string();
                        out.bytes = size;
                        match publish(part, fin, force) {
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
    }
}

/// The sender's hash of the body (the first 32 bytes of its trailer).
fn theirs_hash(trailer: &[u8; 64]) -> [u8; 32] {
    trailer[..32].try_into().expect("32 bytes")
}

/// Whether the trailer's hash comes with a valid tag (always, for an unauthenticated upload).
fn trailer_ok(trailer: &[u8; 64], auth: Option<(&Key, [u8; 32])>) -> bool {
    let Some((key, head)) = auth else {
        return true;
    };
    let tag: [u8; 32] = trailer[32..].try_into().expect("32 bytes");
    key.body_tag(&head, &blake3::Hash::from(theirs_hash(trailer))) == blake3::Hash::from(tag)
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
