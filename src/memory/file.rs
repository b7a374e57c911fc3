//! The memory file on disk (design §10.3, §10.5): opened without blocking
//! and only if regular, locked with `flock` for a bounded time, read from
//! its tail within a bound, appended to in one write that is undone if it
//! fails, and trimmed by writing a temporary file that replaces it.
//!
//! The file may lie where an agent writes (`path` in its workdir), so it is
//! opened by name in its directory, which is resolved beneath the anchor
//! its path is written against with no link followed (design §8.7): a
//! link planted at the file or at a directory above it is refused, never
//! appended to, read or trimmed.
//!
//! `axe gc` replaces the file by renaming another over it, so a process
//! that waited for the lock may hold the old one: after locking, the open
//! file is checked to still be the one the name holds, and opened again if
//! not.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::entries;
use crate::sandbox::beneath::{Anchored, Root, still_named};
use crate::sandbox::write;

/// The longest a memory file's lock is waited for. Appends hold it for one
/// write and `axe gc` for one rewrite of the file: a lock held longer is a
/// process stopped while holding it, and waiting on would outlive the run.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

/// How often a held lock is tried again while waiting.
const LOCK_POLL: Duration = Duration::from_millis(5);

/// The most `axe gc` reads of a memory file to trim it.
pub const TRIM_READ_LIMIT: u64 = 64 << 20;

/// How many times a file replaced under us is opened again.
const REOPENS: u32 = 5;

/// What was read of a memory file: its bytes (the tail when it is larger
/// than the limit, starting at an entry) and its size on disk.
pub struct Tail {
    pub bytes: Vec<u8>,
    pub size: u64,
    /// Only the tail was read.
    pub cut: bool,
}

/// What a trim did.
#[derive(Debug, PartialEq, Eq)]
pub struct Trimmed {
    pub removed: usize,
    pub kept: usize,
    /// Where the removed entries were appended; None when none were.
    pub backup: Option<PathBuf>,
}

/// Reads at most `limit` bytes of the memory file at `place` under a shared
/// lock: the whole file, or its last `limit` bytes from the first entry
/// that begins in them. A missing file is `Ok(None)`.
pub fn read_tail(place: &Anchored, limit: u64) -> io::Result<Option<Tail>> {
    let opened = place
        .parent(false)
        .map_err(io::Error::from)
        .and_then(|(dir, name)| open_locked(&dir, &name, false, libc::LOCK_SH));
    let mut file = match opened {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = file.metadata()?.len();
    let from = size.saturating_sub(limit);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(usize::try_from(size - from).unwrap_or(0));
    (&mut file).take(limit).read_to_end(&mut bytes)?;
    let cut = from > 0;
    if cut {
        // The first bytes are the end of an entry begun before them.
        let first = entries::starts(&bytes).first().copied();
        bytes.drain(..first.unwrap_or(bytes.len()));
    }
    Ok(Some(Tail { bytes, size, cut }))
}

/// Appends `entry` to the memory file at `place` (created 0644, its
/// directories 0755, as the Go original makes them) under an exclusive lock
/// on the inode opened, in one write. A file whose last byte is not a newline (a crash cut its last
/// entry) gets one first, so the new entry's header starts a line. A write
/// that fails is undone: the file is cut back to its length before it.
pub fn append(place: &Anchored, entry: &str) -> io::Result<()> {
    let (dir, name) = place.parent(true)?;
    let mut file = open_locked(&dir, &name, true, libc::LOCK_EX)?;
    let size = file.metadata()?.len();
    let mut text = String::with_capacity(entry.len() + 1);
    if size > 0 && last_byte(&mut file, size)? != b'\n' {
        text.push('\n');
    }
    text.push_str(entry);
    if let Err(e) = file.write_all(text.as_bytes()) {
        let _ = file.set_len(size);
        return Err(e);
    }
    Ok(())
}

/// Keeps the last `keep` entries of the memory file at `place` (`keep` >
/// 0). Under its exclusive lock: what goes is appended to `<file>.bak` and
/// synced, then the rest replaces the file (`write::replace`, the file's
/// mode). Whatever fails, the memory file is whole: the old one or the new
/// one. A symbolic link is refused, never followed (design §8.7).
pub fn trim(place: &Anchored, keep: usize) -> io::Result<Trimmed> {
    let (dir, name) = place.parent(false)?;
    let mut file = open_locked(&dir, &name, false, libc::LOCK_EX)?;
    #[cfg(debug_assertions)]
    debug_hold();
    let meta = file.metadata()?;
    if meta.len() > TRIM_READ_LIMIT {
        return Err(io::Error::other(format!(
            "it is {} bytes, over the {} MiB axe gc reads; trim it by hand",
            meta.len(),
            TRIM_READ_LIMIT >> 20
        )));
    }
    let mut bytes = Vec::new();
    (&mut file).take(TRIM_READ_LIMIT).read_to_end(&mut bytes)?;
    let starts = entries::starts(&bytes);
    if starts.len() <= keep {
        return Ok(Trimmed {
            removed: 0,
            kept: starts.len(),
            backup: None,
        });
    }
    let cut = starts[starts.len() - keep];
    let mode = meta.permissions().mode() & 0o7777;
    let backup = format!("{name}.bak");
    append_synced(&dir, &backup, &bytes[..cut], mode)?;
    write::replace(&dir, &name, &bytes[cut..], mode)?;
    Ok(Trimmed {
        removed: starts.len() - keep,
        kept: keep,
        backup: Some(backup_path(place.path())),
    })
}

/// A test hook, compiled into debug builds only: `AXE_DEBUG_TRIM_HOLD_MS`
/// holds the lock this long before trimming, so that a test can have runs
/// wait for it and find the file replaced.
#[cfg(debug_assertions)]
fn debug_hold() {
    if let Some(ms) = std::env::var("AXE_DEBUG_TRIM_HOLD_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// `<file>.bak`: where `axe gc` keeps what it removed, oldest first.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".bak");
    path.with_file_name(name)
}

/// Opens `name` in `dir` (created when `create`) without blocking and
/// locks it with `how`, waiting at most [`LOCK_WAIT`]; then checks that the
/// name still holds the file locked, and starts again if `axe gc` replaced
/// it.
fn open_locked(dir: &Root, name: &str, create: bool, how: libc::c_int) -> io::Result<File> {
    for _ in 0..REOPENS {
        let file = open(dir, name, create)?;
        lock(&file, how)?;
        // Replaced (or removed) while we waited: the lock is on a file
        // nobody reads any more.
        if still_named(&file, dir, name)? {
            return Ok(file);
        }
    }
    Err(io::Error::other(
        "it kept being replaced while axe waited for it",
    ))
}

/// Opens `name` in `dir` for reading, or for appending (created 0644) when
/// `create`, never blocking (a FIFO would), never through a link, and only
/// if it is a regular file.
fn open(dir: &Root, name: &str, create: bool) -> io::Result<File> {
    if create {
        return write::open_append(dir, name, 0o644);
    }
    crate::sandbox::read::open_in(dir, name)
        .map(|(file, _)| file)
        .map_err(|e| match e {
            crate::sandbox::read::Unreadable::Io(e) => e,
            other => io::Error::other(other.to_string()),
        })
}

/// `flock(how)`, tried again every [`LOCK_POLL`] for at most
/// [`LOCK_WAIT`]. A filesystem without locks (some network ones) goes on
/// unlocked: an append is still one write there.
fn lock(file: &File, how: libc::c_int) -> io::Result<()> {
    let until = Instant::now() + LOCK_WAIT;
    loop {
        // SAFETY: flock on a descriptor this function borrows, open for
        // the whole call.
        if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) | Some(libc::EINTR) if Instant::now() < until => {
                std::thread::sleep(LOCK_POLL);
            }
            Some(libc::EWOULDBLOCK) => {
                return Err(io::Error::other(format!(
                    "it stayed locked by another process for {}s",
                    LOCK_WAIT.as_secs()
                )));
            }
            Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) => return Ok(()),
            _ => return Err(e),
        }
    }
}

/// The last byte of `file`, `size` bytes long (`size` > 0).
fn last_byte(file: &mut File, size: u64) -> io::Result<u8> {
    let mut byte = [0u8; 1];
    file.seek(SeekFrom::Start(size - 1))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

/// Appends `bytes` to `name` in `dir` (created with `mode`), on a line of
/// their own, and syncs it.
fn append_synced(dir: &Root, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = write::open_append(dir, name, mode)?;
    let size = file.metadata()?.len();
    let mut text = Vec::with_capacity(bytes.len() + 1);
    if size > 0 && last_byte(&mut file, size)? != b'\n' {
        text.push(b'\n');
    }
    text.extend_from_slice(bytes);
    if let Err(e) = file.write_all(&text).and_then(|()| file.sync_all()) {
        let _ = file.set_len(size);
        return Err(e);
    }
    Ok(())
}
