//! The memory file on disk (design §12.3, §12.5): opened without blocking
//! and only if regular, locked with `flock` for a bounded time, read from
//! its tail within a bound, appended to in one write that is undone if it
//! fails, and trimmed by writing a temporary file that replaces it.
//!
//! `axe gc` replaces the file by renaming another over it, so a process
//! that waited for the lock may hold the old one: after locking, the open
//! file is checked to still be the one at the path, and opened again if not.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::entries;

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

/// Reads at most `limit` bytes of the memory file `path` under a shared
/// lock: the whole file, or its last `limit` bytes from the first entry
/// that begins in them. A missing file is `Ok(None)`.
pub fn read_tail(path: &Path, limit: u64) -> io::Result<Option<Tail>> {
    let mut file = match open_locked(path, false, libc::LOCK_SH) {
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

/// Appends `entry` to the memory file `path` (created 0644, its directory
/// 0755, as the Go original makes them) under an exclusive lock, in one
/// write. A file whose last byte is not a newline (a crash cut its last
/// entry) gets one first, so the new entry's header starts a line. A write
/// that fails is undone: the file is cut back to its length before it.
pub fn append(path: &Path, entry: &str) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(dir)?;
    }
    let mut file = open_locked(path, true, libc::LOCK_EX)?;
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

/// Keeps the last `keep` entries of the memory file `path` (`keep` > 0).
/// Under its exclusive lock: what goes is appended to `<file>.bak` and
/// synced, then the rest is written to a temporary file in the same
/// directory (the file's mode), synced, and renamed over the file, and the
/// directory is synced. Whatever fails, the memory file is whole: the old
/// one or the new one. A symbolic link is followed, and its target trimmed.
pub fn trim(path: &Path, keep: usize) -> io::Result<Trimmed> {
    let path = fs::canonicalize(path)?;
    let mut file = open_locked(&path, false, libc::LOCK_EX)?;
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
    let backup = backup_path(&path);
    append_synced(&backup, &bytes[..cut], meta.permissions().mode() & 0o7777)?;
    replace(&path, &bytes[cut..], meta.permissions())?;
    Ok(Trimmed {
        removed: starts.len() - keep,
        kept: keep,
        backup: Some(backup),
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

/// Opens `path` (created when `create`) without blocking and locks it with
/// `how`, waiting at most [`LOCK_WAIT`]; then checks that the path still
/// names the file locked, and starts again if `axe gc` replaced it.
fn open_locked(path: &Path, create: bool, how: libc::c_int) -> io::Result<File> {
    for _ in 0..REOPENS {
        let file = open(path, create)?;
        lock(&file, how)?;
        let (ours, now) = (file.metadata()?, fs::metadata(path));
        match now {
            Ok(now) if now.dev() == ours.dev() && now.ino() == ours.ino() => return Ok(file),
            // Replaced (or removed) while we waited: the lock is on a file
            // nobody reads any more.
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound && create => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(
        "it kept being replaced while axe waited for it",
    ))
}

/// Opens `path` for reading, or for appending (created 0644) when
/// `create`, never blocking (a FIFO would), and only if it is a regular file.
fn open(path: &Path, create: bool) -> io::Result<File> {
    if let Ok(m) = fs::metadata(path)
        && !m.is_file()
    {
        return Err(io::Error::other("not a regular file"));
    }
    let mut options = OpenOptions::new();
    if create {
        options.append(true).create(true).read(true).mode(0o644);
    } else {
        options.read(true);
    }
    let file = options.custom_flags(libc::O_NONBLOCK).open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    Ok(file)
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

/// Appends `bytes` to `path` (created with `mode`), on a line of their
/// own, and syncs it.
fn append_synced(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    let mut file = OpenOptions::new()
        .append(true)
        .create(true)
        .read(true)
        .mode(mode)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
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

/// Replaces `path` with `bytes` (mode `perms`): a temporary file beside
/// it, synced, renamed over it, the directory synced.
fn replace(path: &Path, bytes: &[u8], perms: fs::Permissions) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.gc-{}.tmp", std::process::id()));
    // A signal while it exists removes it (design §6.5).
    let _temp = crate::interrupt::TempFile::new(&tmp);
    let _ = fs::remove_file(&tmp);
    let written = (|| {
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.set_permissions(perms)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Best effort, as for every file axe writes (design §6.6).
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}
