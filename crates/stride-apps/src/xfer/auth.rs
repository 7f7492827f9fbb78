//! Authenticated uploads: a pre-shared key, and the keyed BLAKE3 tags that prove a sender
//! (and a receiver's answer) hold it.
//!
//! The transport authenticates nothing (like RoCE, it trusts the datacenter network), so the
//! file transfer does it itself, with BLAKE3's key derivation and keyed-hash (MAC) modes:
//! - the key is `derive_key(KEY_CONTEXT, secret)`, the secret being the key file's bytes;
//! - a version-2 header ends with the sender's clock (ms since the Unix epoch), 16 random bytes
//!   and `tag = keyed_hash(key, "header" ‖ every header byte before the tag)`;
//! - after the body's BLAKE3 hash comes `keyed_hash(key, "body" ‖ header tag ‖ hash)`, binding
//!   the bytes to the authenticated header (an injected or replaced body fails it);
//! - the receiver's answer ends with `keyed_hash(key, "status" ‖ header tag ‖ code ‖ message)`,
//!   so a sender believes only a confirmation from a holder of the key.
//!
//! An encrypted upload (version 3: the same header, its version byte covered by the tag) sends
//! the body in ChaCha20-Poly1305 chunks of [`super::CHUNK`] bytes (the last one shorter), each
//! followed by its 16-byte tag, under the key `keyed_hash(key, "encrypt" ‖ header tag)` and the
//! nonce `0u32 ‖ chunk index (u64)`, all big-endian ([`BodyCipher`]).
//!
//! Replays are refused by [`ReplayGuard`]: a header whose clock is more than [`CLOCK_WINDOW`]
//! away from the receiver's, or whose random bytes were already seen within twice that, is
//! refused. Every comparison of tags is in constant time (`blake3::Hash`'s equality).

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// BLAKE3 key-derivation context of the upload key (fixed: changing it changes every key).
pub const KEY_CONTEXT: &str = "STRIDE file transfer 2025-01 pre-shared upload key";
/// Shortest accepted secret, in bytes.
pub const MIN_SECRET: usize = 16;
/// Largest accepted key file, in bytes.
pub const MAX_SECRET: usize = 4096;
/// Largest difference between the sender's clock and the receiver's that is accepted.
pub const CLOCK_WINDOW: Duration = Duration::from_secs(120);
/// Most headers remembered at once for replay detection (only headers with a valid tag are
/// remembered, so only holders of the key can fill it).
pub const REPLAY_MEMORY: usize = 1 << 16;
/// Bytes a version-2 header adds after the size: clock (8), nonce (16), tag (32).
pub const AUTH_BYTES: usize = 8 + 16 + 32;

/// A pre-shared upload key (cheap to clone).
#[derive(Clone)]
pub struct Key(Arc<[u8; 32]>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(..)")
    }
}

impl Key {
    /// The key of a secret of [`MIN_SECRET`] to [`MAX_SECRET`] bytes.
    pub fn from_secret(secret: &[u8]) -> Result<Key, String> {
        if secret.len() < MIN_SECRET {
            return Err(format!(
                "the key is {} bytes; at least {MIN_SECRET} are needed (e.g. `head -c 32 /dev/urandom > KEY`)",
                secret.len()
            ));
        }
        if secret.len() > MAX_SECRET {
            return Err(format!("the key is longer than {MAX_SECRET} bytes"));
        }
        Ok(Key(Arc::new(blake3::derive_key(KEY_CONTEXT, secret))))
    }

    /// The key in the file at `path`: its bytes, less surrounding ASCII whitespace (so a key
    /// written by `echo` and one written by `printf` agree). The file must be a regular file
    /// that neither its group nor others may read or write (`chmod 600`), as ssh asks of a
    /// private key.
    pub fn load(path: &Path) -> Result<Key, String> {
        use std::os::unix::fs::PermissionsExt;
        let shown = path.display();
        let meta = std::fs::metadata(path).map_err(|e| format!("key {shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("key {shown}: not a regular file"));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "key {shown}: readable or writable by others (mode {:o}); chmod 600 it",
                meta.permissions().mode() & 0o777
            ));
        }
        if meta.len() > MAX_SECRET as u64 {
            return Err(format!("key {shown}: longer than {MAX_SECRET} bytes"));
        }
        let bytes = std::fs::read(path).map_err(|e| format!("key {shown}: {e}"))?;
        Key::from_secret(bytes.trim_ascii()).map_err(|e| format!("key {shown}: {e}"))
    }

    fn mac(&self, label: &[u8], parts: &[&[u8]]) -> blake3::Hash {
        let mut h = blake3::Hasher::new_keyed(&self.0);
        h.update(label);
        for p in parts {
            h.update(p);
        }
        h.finalize()
    }

    /// The header's auth block (clock, nonce, tag) for the header bytes `head` so far.
    pub fn seal_header(&self, head: &[u8]) -> std::io::Result<[u8; AUTH_BYTES]> {
        let mut block = [0u8; AUTH_BYTES];
        block[..8].copy_from_slice(&unix_ms().to_be_bytes());
        getrandom::getrandom(&mut block[8..24])
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let tag = self.mac(b"header", &[head, &block[..24]]);
        block[24..].copy_from_slice(tag.as_bytes());
        Ok(block)
    }

    /// Whether `tag` authenticates the header bytes `signed` (everything before the tag).
    pub fn header_ok(&self, signed: &[u8], tag: &[u8; 32]) -> bool {
        self.mac(b"header", &[signed]) == blake3::Hash::from(*tag)
    }

    /// The tag binding a body's BLAKE3 `hash` to the header tag `head_tag`.
    pub fn body_tag(&self, head_tag: &[u8; 32], hash: &blake3::Hash) -> blake3::Hash {
        self.mac(b"body", &[head_tag, hash.as_bytes()])
    }

    /// The tag of a receiver's answer (`code`, `msg`) to the header tagged `head_tag`.
    pub fn status_tag(&self, head_tag: &[u8; 32], code: u8, msg: &[u8]) -> blake3::Hash {
        self.mac(b"status", &[head_tag, &[code], msg])
    }
}

impl Key {
    /// The cipher of an encrypted upload's body whose header has the tag `head_tag`.
    pub fn body_cipher(&self, head_tag: &[u8; 32]) -> BodyCipher {
        use chacha20poly1305::KeyInit;
        let k = self.mac(b"encrypt", &[head_tag]);
        BodyCipher {
            aead: chacha20poly1305::ChaCha20Poly1305::new(&(*k.as_bytes()).into()),
            next: 0,
        }
    }
}

/// Bytes of an encrypted chunk's tag.
pub const CHUNK_TAG: usize = 16;

/// ChaCha20-Poly1305 over the chunks of one upload's body, in order (chunk `i` has nonce `i`).
pub struct BodyCipher {
    aead: chacha20poly1305::ChaCha20Poly1305,
    next: u64,
}

impl BodyCipher {
    fn nonce(&mut self) -> chacha20poly1305::Nonce {
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&self.next.to_be_bytes());
        self.next += 1;
        n.into()
    }

    /// Encrypts the next chunk in place and returns its tag.
    pub fn seal(&mut self, chunk: &mut [u8]) -> [u8; CHUNK_TAG] {
        use chacha20poly1305::AeadInOut;
        let nonce = self.nonce();
        let tag = self
            .aead
            .encrypt_inout_detached(&nonce, b"", chunk.into())
            .expect("a chunk is far below ChaCha20-Poly1305's message limit");
        tag.into()
    }

    /// Decrypts the next chunk in place; false (the chunk is garbage) if its tag fails.
    pub fn open(&mut self, chunk: &mut [u8], tag: &[u8; CHUNK_TAG]) -> bool {
        use chacha20poly1305::AeadInOut;
        let nonce = self.nonce();
        self.aead
            .decrypt_inout_detached(&nonce, b"", chunk.into(), &(*tag).into())
            .is_ok()
    }
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Why an authenticated header is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replay {
    /// Its clock is too far from the receiver's (by this many ms, positive: ahead).
    Clock(i64),
    /// Its nonce was already used.
    Seen,
    /// Too many recent headers are remembered.
    Full,
}

impl std::fmt::Display for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Replay::Clock(d) => write!(
                f,
                "the sender's clock is {:.1} s {} the receiver's (at most {} s apart)",
                d.unsigned_abs() as f64 / 1e3,
                if *d > 0 { "ahead of" } else { "behind" },
                CLOCK_WINDOW.as_secs()
            ),
            Replay::Seen => f.write_str("a replayed header (its nonce was already used)"),
            Replay::Full => f.write_str("too many recent uploads to check for replays"),
        }
    }
}

/// The recently seen nonces of authenticated headers, each kept for twice [`CLOCK_WINDOW`]
/// (the span of clocks a header may carry), at most [`REPLAY_MEMORY`] of them.
#[derive(Default)]
pub struct ReplayGuard {
    seen: HashMap<[u8; 16], u64>,
    order: VecDeque<(u64, [u8; 16])>,
}

impl ReplayGuard {
    /// Admits a header with clock `ts_ms` and `nonce` (whose tag was verified) at the
    /// receiver's time `now_ms`, remembering it; or says why not.
    pub fn admit(&mut self, ts_ms: u64, nonce: [u8; 16], now_ms: u64) -> Result<(), Replay> {
        let window = CLOCK_WINDOW.as_millis() as u64;
        let skew = ts_ms as i128 - now_ms as i128;
        if skew.unsigned_abs() > u128::from(window) {
            return Err(Replay::Clock(
                skew.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
            ));
        }
        while let Some(&(at, n)) = self.order.front() {
            if at + 2 * window >= now_ms {
                break;
            }
            self.order.pop_front();
            self.seen.remove(&n);
        }
        if self.seen.contains_key(&nonce) {
            return Err(Replay::Seen);
        }
        if self.seen.len() >= REPLAY_MEMORY {
            return Err(Replay::Full);
        }
        self.seen.insert(nonce, now_ms);
        self.order.push_back((now_ms, nonce));
        Ok(())
    }

    /// [`ReplayGuard::admit`] at the current time.
    pub fn admit_now(&mut self, ts_ms: u64, nonce: [u8; 16]) -> Result<(), Replay> {
        self.admit(ts_ms, nonce, unix_ms())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> Key {
        Key::from_secret(&[b; 32]).unwrap()
    }

    #[test]
    fn header_tags_check_key_and_bytes() {
        let head = b"STRF\x02head";
        let block = key(1).seal_header(head).unwrap();
        let mut signed = head.to_vec();
        signed.extend_from_slice(&block[..24]);
        let tag: [u8; 32] = block[24..].try_into().unwrap();
        assert!(key(1).header_ok(&signed, &tag));
        assert!(!key(2).header_ok(&signed, &tag), "another key passed");
        signed[5] ^= 1;
        assert!(!key(1).header_ok(&signed, &tag), "a changed header passed");
    }

    #[test]
    fn body_and_status_tags_bind_their_header() {
        let h = blake3::hash(b"body");
        let (a, b) = ([1u8; 32], [2u8; 32]);
        assert_ne!(key(1).body_tag(&a, &h), key(1).body_tag(&b, &h));
        assert_ne!(key(1).body_tag(&a, &h), key(2).body_tag(&a, &h));
        assert_ne!(key(1).status_tag(&a, 0, b""), key(1).status_tag(&a, 1, b""));
        assert_ne!(key(1).status_tag(&a, 0, b""), key(1).status_tag(&b, 0, b""));
    }

    #[test]
    fn chunks_decrypt_in_order_only_with_their_key_and_header() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let mut tx = key(1).body_cipher(&a);
        let mut c0 = b"first chunk".to_vec();
        let t0 = tx.seal(&mut c0);
        let mut c1 = b"second chunk".to_vec();
        let t1 = tx.seal(&mut c1);
        assert_ne!(&c0[..], b"first chunk");
        // Out of order, another header or another key: refused.
        assert!(!key(1).body_cipher(&a).open(&mut c1.clone(), &t1));
        assert!(!key(1).body_cipher(&b).open(&mut c0.clone(), &t0));
        assert!(!key(2).body_cipher(&a).open(&mut c0.clone(), &t0));
        let mut rx = key(1).body_cipher(&a);
        assert!(rx.open(&mut c0, &t0) && rx.open(&mut c1, &t1));
        assert_eq!(
            (&c0[..], &c1[..]),
            (&b"first chunk"[..], &b"second chunk"[..])
        );
    }

    #[test]
    fn short_keys_are_refused() {
        assert!(Key::from_secret(b"short").is_err());
        assert!(Key::from_secret(&[0; MAX_SECRET + 1]).is_err());
    }

    #[test]
    fn replays_and_far_clocks_are_refused() {
        let mut g = ReplayGuard::default();
        let now = 1_000_000_000;
        assert_eq!(g.admit(now, [1; 16], now), Ok(()));
        assert_eq!(g.admit(now, [1; 16], now + 1), Err(Replay::Seen));
        assert_eq!(g.admit(now + 1, [2; 16], now + 1), Ok(()));
        let w = CLOCK_WINDOW.as_millis() as u64;
        assert!(matches!(g.admit(now - w - 1, [3; 16], now), Err(Replay::Clock(d)) if d < 0));
        assert!(matches!(g.admit(now + w + 1, [3; 16], now), Err(Replay::Clock(d)) if d > 0));
        // A nonce is forgotten only once its header's clock could no longer pass.
        assert_eq!(g.admit(now + w, [1; 16], now + w), Err(Replay::Seen));
        assert_eq!(g.admit(now + 2 * w + 1, [1; 16], now + 2 * w + 1), Ok(()));
    }
}
