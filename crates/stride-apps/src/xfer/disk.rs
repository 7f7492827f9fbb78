//! The receiver's files: temporary files and their publication, the space an upload may
//! claim, and the temporary files a dead receiver left.

use super::guard::{Limits, ReceiverState};
use super::CHUNK;
use std::path::{Path, PathBuf};

pub(super) async fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
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
pub(super) fn create_part(dir: &Path, name: &str) -> std::io::Result<(std::fs::File, PathBuf)> {
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
            Ok(f) => {
                // Held while the file is open: a starting receiver removes only unlocked
                // temporary files (those of a receiver that died).
                let _ = fs4::FileExt::try_lock(&f);
                return Ok((f, part));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 8 => tries += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Flushes `file` to disk, then reads it back from the start: (bytes stored, their BLAKE3).
pub(super) async fn sync_and_hash(file: tokio::fs::File) -> std::io::Result<(u64, blake3::Hash)> {
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
pub(super) fn publish(part: &Path, fin: &Path, force: bool) -> std::io::Result<()> {
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

/// Whether `name` is one this module gives temporary files: `PREFIX.HEX.part` with a
/// non-empty PREFIX and 16 lowercase hex digits.
pub fn is_part_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".part") else {
        return false;
    };
    match stem.rsplit_once('.') {
        Some((prefix, hex)) => {
            !prefix.is_empty()
                && hex.len() == 16
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        }
        None => false,
    }
}

/// Removes from `dir` the temporary files of receivers that died: regular files (never
/// symlinks or anything else) named as [`is_part_name`] says, owned by this user, of mode
/// 0600 and not locked (a live receiver holds a lock on each of its own). Returns the names
/// removed.
pub fn remove_orphans(dir: &Path) -> std::io::Result<Vec<String>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mut gone = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if !is_part_name(&name) {
            continue;
        }
        let path = e.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.file_type().is_file() || meta.uid() != me || meta.mode() & 0o777 != 0o600 {
            continue;
        }
        let Ok(f) = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        else {
            continue;
        };
        let Ok(now) = f.metadata() else { continue };
        if (now.dev(), now.ino()) != (meta.dev(), meta.ino()) || fs4::FileExt::try_lock(&f).is_err()
        {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            gone.push(name);
        }
    }
    Ok(gone)
}

/// Bytes held by the regular files directly in `dir` (their lengths).
fn dir_usage(dir: &Path) -> std::io::Result<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir(dir)? {
        if let Ok(m) = e?.metadata() {
            if m.is_file() {
                total = total.saturating_add(m.len());
            }
        }
    }
    Ok(total)
}

/// Admits an upload of `size` bytes into `dir` whose progress is `reserved` (set to `size`
/// when admitted): it must fit the free space less the reserve and less what the admitted
/// uploads still have to write, and the quota. Err: the message of the refusal (counted).
pub(super) fn admit(
    dir: &Path,
    size: u64,
    reserved: &std::sync::atomic::AtomicU64,
    state: &ReceiverState,
    lim: &Limits,
) -> Result<(), String> {
    let usage = match lim.quota {
        Some(_) => Some(dir_usage(dir).map_err(|e| format!("cannot measure the directory: {e}"))?),
        None => None,
    };
    let table = state.table();
    let free = fs4::available_space(dir).map_err(|e| format!("cannot measure free space: {e}"))?;
    let pending = table.outstanding();
    let room = free.saturating_sub(lim.reserve).saturating_sub(pending);
    let refuse = |msg: String| {
        state.count(|c| c.no_space += 1);
        Err(msg)
    };
    if size > room {
        return refuse(format!(
            "no room: {size} bytes declared, {room} bytes free on the receiver ({free} free, less its reserve of {} and {pending} claimed by uploads in progress)",
            lim.reserve
        ));
    }
    if let (Some(quota), Some(used)) = (lim.quota, usage) {
        let left = quota.saturating_sub(used).saturating_sub(pending);
        if size > left {
            return refuse(format!(
                "over quota: {size} bytes declared, {left} bytes left of the receiver's quota of {quota}"
            ));
        }
    }
    reserved.store(size, std::sync::atomic::Ordering::Relaxed);
    drop(table);
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn part_names() {
        assert!(super::is_part_name("a.bin.0123456789abcdef.part"));
        for bad in [
            "a.bin.part",
            ".0123456789abcdef.part",
            "a.0123456789ABCDEF.part",
            "a.0123456789abcde.part",
            "a.0123456789abcdef",
            "a.0123456789abcdefg.part",
        ] {
            assert!(!super::is_part_name(bad), "{bad}");
        }
    }
}
