//! File transfer over STRIDE streams: the protocol behind `stride send` and `stride recv`.
//!
//! On one connection per file the sender writes a header (`STRF`, version 1, the name's length
//! as u16, the name in UTF-8, the size as u64, all big-endian), the file's bytes and their
//! 32-byte BLAKE3 hash, then ends its direction. The receiver answers with a status (one code
//! byte, a u16 length, a UTF-8 message) before ending its own direction.
//!
//! An authenticated upload (version 2, [`encode_header_auth`], see [`auth`]) adds to the
//! header the sender's clock, 16 random bytes and a keyed BLAKE3 tag; after the hash, a tag
//! binding the hash to the header; and the receiver's status ends with a tag of its own. A
//! receiver with a key refuses version 1, one without refuses versions 2 and 3, both with
//! [`Status::Unauthenticated`] before any file is created. An encrypted upload (version 3,
//! [`VERSION_SEALED`]) also sends the body in ChaCha20-Poly1305 chunks ([`auth::BodyCipher`]).
//!
//! The receiver stores a file so that no remote sender can corrupt or redirect it:
//! - with a key ([`ReceiveOptions::key`]) only authenticated uploads are stored, and with
//!   [`ReceiveOptions::allow`] only those from allowed networks; others are refused before any
//!   file is created and counted ([`ReceiverState::refusals`]);
//! - one upload per name at a time (per process): a second upload of a name still in progress
//!   is refused with [`Status::Busy`]; uploads in progress are bounded overall and per source,
//!   shared fairly, held to a minimum rate and admitted to the disk only if their declared size
//!   fits ([`guard`]);
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
//! A failed transfer leaves no `NAME` behind, removes its temporary file and frees its name at
//! once; [`remove_orphans`] removes those of a receiver that died.
//!
//! [`send_file`] is the sending side, [`receive_file`] the receiving side of one connection;
//! [`encode_header`] and [`Status`] are the wire format for other implementations and tests.
//! [`receive_files`] serves every connection of a receiving endpoint; [`receiver_options`] and
//! [`sender_options`] are the endpoint options of `stride recv` and `stride send`.
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

pub mod auth;
mod disk;
pub mod guard;
mod receive;
mod send;

pub use auth::Key;

pub use disk::{is_part_name, remove_orphans};
pub use guard::{Limits, ReceiverState, Refusals};
pub use receive::{
    receive_file, receive_files, receiver_options, upload_limit, ReceiveOptions, Received,
};
pub use send::{send_file, sender_options, SendOptions, Sent, SEND_SYN_RETRIES};

use std::net::SocketAddr;
use std::time::Duration;
use stride::{Error, Stream};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// First four bytes of a transfer.
pub const MAGIC: &[u8; 4] = b"STRF";
/// Protocol version of an unauthenticated upload.
pub const VERSION: u8 = 1;
/// Protocol version of an authenticated upload (a header with an auth block, a body tag and a
/// tagged answer; see [`auth`]).
pub const VERSION_AUTH: u8 = 2;
/// Protocol version of an authenticated and encrypted upload (as [`VERSION_AUTH`], the body in
/// [`auth::BodyCipher`] chunks).
pub const VERSION_SEALED: u8 = 3;
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
    /// The upload is not authenticated as the receiver requires (no key, another key, a
    /// replayed header), or the source address is not allowed.
    Unauthenticated = 7,
    /// The declared size does not fit the receiver's free space (less its reserve) or quota.
    NoSpace = 8,
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
            7 => Status::Unauthenticated,
            8 => Status::NoSpace,
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

/// The header of an authenticated upload (version [`VERSION_AUTH`]): the fields of
/// [`encode_header`], then the auth block of [`Key::seal_header`]. Returns it with its tag.
pub fn encode_header_auth(
    name: &str,
    size: u64,
    key: &Key,
) -> std::io::Result<(Vec<u8>, [u8; 32])> {
    encode_header_keyed(name, size, key, VERSION_AUTH)
}

/// [`encode_header_auth`] with the version `version` ([`VERSION_AUTH`] or [`VERSION_SEALED`]).
pub fn encode_header_keyed(
    name: &str,
    size: u64,
    key: &Key,
    version: u8,
) -> std::io::Result<(Vec<u8>, [u8; 32])> {
    let mut head = encode_header(name, size);
    head[4] = version;
    let block = key.seal_header(&head)?;
    head.extend_from_slice(&block);
    let mut tag = [0u8; 32];
    tag.copy_from_slice(&block[auth::AUTH_BYTES - 32..]);
    Ok((head, tag))
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

/// How a receiver's answer ends: nothing (a version-1 upload), or a tag (version 2): all zero
/// from a receiver without a key, else [`Key::status_tag`] for the header's tag.
#[derive(Clone, Default)]
enum Seal {
    #[default]
    None,
    Zero,
    Tag(Key, [u8; 32]),
}

async fn write_status(s: &mut Stream, st: Status, msg: &str, seal: &Seal) {
    let m = msg.as_bytes();
    let m = &m[..m.len().min(1024)];
    let mut b = vec![st as u8];
    b.extend_from_slice(&(m.len() as u16).to_be_bytes());
    b.extend_from_slice(m);
    match seal {
        Seal::None => {}
        Seal::Zero => b.extend_from_slice(&[0u8; 32]),
        Seal::Tag(key, head) => b.extend_from_slice(key.status_tag(head, st as u8, m).as_bytes()),
    }
    let _ = within(CLOSE_WAIT, s.write_all(&b)).await;
    let _ = tokio::time::timeout(CLOSE_WAIT, s.shutdown()).await;
}

/// Reads the receiver's answer; with `auth` (the key and the header's tag) also its tag, and
/// an answer whose tag does not check reads as [`Status::Unauthenticated`] with a message
/// saying so.
async fn read_status<R: AsyncRead + Unpin>(
    r: &mut R,
    auth: Option<(&Key, &[u8; 32])>,
) -> std::io::Result<(Status, String)> {
    let code = r.read_u8().await?;
    let len = r.read_u16().await?;
    let mut m = vec![0u8; usize::from(len)];
    r.read_exact(&mut m).await?;
    let msg = String::from_utf8_lossy(&m).into_owned();
    if let Some((key, head)) = auth {
        let mut tag = [0u8; 32];
        r.read_exact(&mut tag).await?;
        if key.status_tag(head, code, &m) != blake3::Hash::from(tag) {
            let said = if msg.is_empty() { "stored".into() } else { msg };
            return Ok((
                Status::Unauthenticated,
                format!("its answer ({said:?}) is not authenticated by the key (a receiver without the key, or another key)"),
            ));
        }
    }
    Ok((Status::from_u8(code), msg))
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
