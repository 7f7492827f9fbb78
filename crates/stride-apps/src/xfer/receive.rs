//! The receiving side: one file per connection, stored so that no remote sender can corrupt
//! or redirect it, and admitted so that no sender can lock the receiver (see the module
//! documentation of [`super`] and of [`super::guard`]).

use super::auth::{BodyCipher, AUTH_BYTES, CHUNK_TAG};
use super::disk::{admit, create_part, is_part_name, publish, sync_and_hash, sync_dir};
use super::guard::{Limits, Pace, ReceiverState, SlotGuard};
use super::{
    name_ok, shown_name, transfer_error, write_status, Key, Seal, Status, CHUNK, CLOSE_WAIT, MAGIC,
    STALL_TIMEOUT, VERSION, VERSION_SEALED,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
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
    /// Slots, minimum rate and disk admission.
    pub limits: Limits,
    /// What the connections of this receiver share (counters, slots, recent headers).
    pub state: Arc<ReceiverState>,
}

impl Default for ReceiveOptions {
    fn default() -> Self {
        ReceiveOptions {
            force: false,
            stall_timeout: STALL_TIMEOUT,
            key: None,
            allow: Vec::new(),
            limits: Limits::default(),
            state: Arc::default(),
        }
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
    /// The body is encrypted (version 3).
    sealed: bool,
}

/// The answer to a sender: status, message, how it is sealed, and whether to wait for the
/// sender's end of stream before leaving (after its whole upload was read).
struct Answer {
    status: Status,
    msg: String,
    seal: Seal,
    drain: bool,
}

fn answer(status: Status, msg: impl Into<String>, seal: &Seal) -> Option<Answer> {
    Some(Answer {
        status,
        msg: msg.into(),
        seal: seal.clone(),
        drain: false,
    })
}

/// Reads the header and checks its authentication against the receiver's key; a refusal
/// (counted) comes with the name the header gave. Err(None): the sender broke off or was too
/// slow (nothing to answer).
async fn read_header(
    s: &mut Stream,
    pace: &mut Pace,
    opts: &ReceiveOptions,
) -> Result<Header, (Option<Answer>, Vec<u8>)> {
    let mut head = [0u8; 7];
    pace.read_exact(s, &mut head)
        .await
        .map_err(|_| (None, Vec::new()))?;
    let version = head[4];
    if &head[..4] != MAGIC || !(VERSION..=VERSION_SEALED).contains(&version) {
        let msg = "bad header: not a STRIDE file transfer";
        return Err((answer(Status::Protocol, msg, &Seal::None), Vec::new()));
    }
    let nlen = usize::from(u16::from_be_bytes([head[5], head[6]]));
    let keyed = version != VERSION;
    let auth_len = if keyed { AUTH_BYTES } else { 0 };
    let mut all = head.to_vec();
    all.resize(7 + nlen + 8 + auth_len, 0);
    pace.read_exact(s, &mut all[7..])
        .await
        .map_err(|_| (None, Vec::new()))?;
    let name = all[7..7 + nlen].to_vec();
    let size = u64::from_be_bytes(all[7 + nlen..15 + nlen].try_into().expect("8 bytes"));
    let refuse = |msg: &str, seal: Seal| {
        opts.state.count(|c| c.unauthenticated += 1);
        Err((answer(Status::Unauthenticated, msg, &seal), name.clone()))
    };
    match (keyed, &opts.key) {
        (false, None) => Ok(Header {
            name,
            size,
            tag: None,
            sealed: false,
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
                    sealed: version == VERSION_SEALED,
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
    let mut out = Received::default();
    // Every hold of the upload (its slot, its name, its claim on the disk) ends inside
    // `upload`, before the answer: a failed upload frees its name at once.
    let Some(a) = upload(&mut s, dir, opts, &mut out).await else {
        return out;
    };
    if a.status != Status::Ok {
        out.error = Some(a.msg.clone());
        out.bytes = 0;
        out.checksum.clear();
    }
    write_status(&mut s, a.status, &a.msg, &a.seal).await;
    if a.drain {
        // Let the sender's end of stream arrive (and be acknowledged) before the stream goes.
        let mut sink = [0u8; 4096];
        let ended = tokio::time::timeout(opts.stall_timeout.min(CLOSE_WAIT), async {
            while matches!(s.read(&mut sink).await, Ok(n) if n > 0) {}
        })
        .await;
        if ended.is_err() {
            // The sender neither finished nor left: tell it we gave up.
            s.abort();
        }
    }
    out
}

/// The upload on `s` up to its answer (None: nothing to answer, `out.error` says why).
async fn upload(
    s: &mut Stream,
    dir: &Path,
    opts: &ReceiveOptions,
    out: &mut Received,
) -> Option<Answer> {
    let from = s.remote_addr();
    if !allowed(opts, from) {
        opts.state.count(|c| c.not_allowed += 1);
        // Before the header its version is unknown: a version-1 sender ignores the zero tag,
        // a version-2 one shows the message as unauthenticated.
        let msg = format!("{} is not an allowed address", from.ip());
        return answer(Status::Unauthenticated, msg, &Seal::Zero);
    }
    let slot = match SlotGuard::take(&opts.state, from.ip(), &opts.limits) {
        Ok(slot) => slot,
        Err(msg) => return answer(Status::Busy, msg, &Seal::Zero),
    };
    let mut pace = Pace::new(&slot, opts.stall_timeout, &opts.limits);
    let head = match read_header(s, &mut pace, opts).await {
        Ok(h) => h,
        Err((a, name)) => {
            out.name = shown_name(&String::from_utf8_lossy(&name));
            if a.is_none() {
                out.error = Some("bad header: the sender broke off or was too slow".into());
            }
            return a;
        }
    };
    let seal = match (&opts.key, head.tag) {
        (Some(k), Some(t)) => Seal::Tag(k.clone(), t),
        _ => Seal::None,
    };
    out.name = String::from_utf8_lossy(&head.name).into_owned();
    if std::str::from_utf8(&head.name).is_err() || !name_ok(&out.name) || is_part_name(&out.name) {
        out.name = shown_name(&out.name);
        out.refused_name = true;
        return answer(
            Status::RefusedName,
            format!("refused name {:?}", out.name),
            &seal,
        );
    }
    let fin = dir.join(&out.name);
    let Some(_claim) = Claim::take(&fin) else {
        let msg = format!("another upload of {:?} is in progress", out.name);
        return answer(Status::Busy, msg, &seal);
    };
    if !opts.force && std::fs::symlink_metadata(&fin).is_ok() {
        let msg = format!("{:?} already exists (receiver needs --force)", out.name);
        return answer(Status::Exists, msg, &seal);
    }
    let p = &slot.progress;
    if let Err(msg) = admit(dir, head.size, &p.reserved, &opts.state, &opts.limits) {
        return answer(Status::NoSpace, msg, &seal);
    }
    let (file, part) = match create_part(dir, &out.name) {
        Ok(v) => v,
        Err(e) => {
            return answer(
                Status::WriteFailed,
                format!("create: {}", io_msg(&e)),
                &seal,
            )
        }
    };
    let auth = match &seal {
        Seal::Tag(k, t) => Some((k, *t)),
        _ => None,
    };
    let target = Target {
        dir,
        part: &part,
        fin: &fin,
        force: opts.force,
        auth,
        cipher: auth.filter(|_| head.sealed).map(|(k, t)| k.body_cipher(&t)),
    };
    let (status, msg) = store(s, file, head.size, &mut pace, target, out).await;
    if status == Status::Unauthenticated {
        opts.state.count(|c| c.unauthenticated += 1);
    }
    if status != Status::Ok {
        let _ = tokio::fs::remove_file(&part).await;
    }
    Some(Answer {
        status,
        msg,
        seal,
        drain: true,
    })
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
    /// The cipher of an encrypted body.
    cipher: Option<BodyCipher>,
}

/// Copies the body from `s` into `file`, reads the sender's hash, flushes the file and hashes
/// what it holds, and on a match publishes it under its name: the status to answer with (and
/// its message). A stored file's size and hash go to `out`.
async fn store(
    s: &mut Stream,
    file: std::fs::File,
    size: u64,
    pace: &mut Pace,
    target: Target<'_>,
    out: &mut Received,
) -> (Status, String) {
    let (dir, part, fin, force) = (target.dir, target.part, target.fin, target.force);
    let file = tokio::fs::File::from_std(file);
    let result = recv_body(s, file, size, pace, target.cipher).await;
    match result {
        Err((st, msg)) => (st, msg),
        Ok(file) => {
            let mut theirs = [0u8; 64];
            let trailer = if target.auth.is_some() { 64 } else { 32 };
            match pace.read_exact(s, &mut theirs[..trailer]).await {
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

impl Claim {
    /// The hold on `path`, unless another upload has it.
    fn take(path: &Path) -> Option<Claim> {
        let mut busy = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        if busy.iter().any(|p| p == path) {
            return None;
        }
        busy.push(path.to_path_buf());
        Some(Claim(path.to_path_buf()))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut busy = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        busy.retain(|p| p != &self.0);
    }
}

/// Most uploads one process receives at a time by default: each holds a file descriptor (and,
/// while it is checked, a blocking thread), so half the descriptor limit that remains after 64
/// for everything else, and at most 4096.
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

/// Reads the next encrypted chunk of `want` bytes (and its tag) into `buf` and decrypts it.
async fn read_sealed(
    s: &mut Stream,
    pace: &mut Pace,
    cipher: &mut BodyCipher,
    buf: &mut [u8],
    want: usize,
) -> Result<usize, (Status, String)> {
    pace.read_exact(s, &mut buf[..want + CHUNK_TAG])
        .await
        .map_err(|e| (Status::Protocol, transfer_error(&e)))?;
    let (chunk, tag) = buf[..want + CHUNK_TAG].split_at_mut(want);
    let tag: [u8; CHUNK_TAG] = (&*tag).try_into().expect("tag bytes");
    if !cipher.open(chunk, &tag) {
        return Err((
            Status::Unauthenticated,
            "an encrypted chunk is not authenticated by the key".into(),
        ));
    }
    Ok(want)
}

/// Copies the `size` bytes of the body from `s` into `file` (decrypting them with `cipher`
/// for an encrypted upload), counting what is written in the upload's progress.
async fn recv_body(
    s: &mut Stream,
    mut file: tokio::fs::File,
    size: u64,
    pace: &mut Pace,
    mut cipher: Option<BodyCipher>,
) -> Result<tokio::fs::File, (Status, String)> {
    let mut buf = vec![0u8; CHUNK + CHUNK_TAG];
    let mut left = size;
    while left > 0 {
        let want = (left.min(CHUNK as u64)) as usize;
        let n = match cipher.as_mut() {
            Some(c) => read_sealed(s, pace, c, &mut buf, want).await?,
            None => pace
                .read(s, &mut buf[..want])
                .await
                .map_err(|e| (Status::Protocol, transfer_error(&e)))?,
        };
        if n == 0 {
            return Err((
                Status::Protocol,
                format!("peer ended the stream {left} bytes early"),
            ));
        }
        file.write_all(&buf[..n])
            .await
            .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
        pace.progress()
            .written
            .fetch_add(n as u64, Ordering::Relaxed);
        left -= n as u64;
    }
    file.flush()
        .await
        .map_err(|e| (Status::WriteFailed, format!("write: {}", io_msg(&e))))?;
    Ok(file)
}
