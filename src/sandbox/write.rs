//! Writing files without ever losing one: create-only, atomic, with a mode.
//!
//! Contents go to a temporary file in the target's directory, which is then
//! hard-linked to the target name. A hard link never replaces an existing
//! file, so a file that appeared meanwhile is kept, and a reader never sees
//! a half-written file. Where hard links are not supported, an exclusive
//! create is used instead. The directory is synced after the link, so the
//! new name survives a crash. Modes are given to `open(2)`, so the user's
//! umask still applies (it can only take permissions away).
//!
//! A file of axe's own in a directory an agent may write (memory, its
//! backup, `--resume`'s output: design §8.7) is written by name in a
//! [`Root`] that follows no link: appended to as the inode opened
//! ([`open_append`]), or replaced whole by a temporary file renamed over
//! it in that directory ([`replace`]), so a link planted at the name is
//! refused or replaced, never written through.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::sandbox::beneath::{Denied, Kind, Root};

/// The temporary file a file tool's write fills beside `file` before
/// renaming it over it ([`Root::write`]): `.{file}.axe-{pid}-{n}`, `n` random
/// so that calls of one response writing the same file never share one.
pub(crate) fn temp_name(file: &str) -> String {
    format!(".{file}.axe-{}-{}", std::process::id(), fastrand::u32(..))
}

/// Whether `name` has [`temp_name`]'s exact shape (any process's): a
/// listing leaves it out, since the calls of one response run at once and
/// would see each other's (design §8.2). Only that shape: `.{file}.axe-`
/// then two numbers written as axe writes a `u32` (no sign, no leading
/// zero), so a user's `.notes.axe-draft` or `.a.axe-01-2` is listed.
pub(crate) fn is_temp_name(name: &str) -> bool {
    let Some((file, tail)) = name.strip_prefix('.').and_then(|r| r.rsplit_once(".axe-")) else {
        return false;
    };
    let Some((pid, n)) = tail.split_once('-') else {
        return false;
    };
    let written = |s: &str| s.parse::<u32>().is_ok_and(|v| v.to_string() == s);
    !file.is_empty() && written(pid) && written(n)
}

/// What [`create_new`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Created {
    Written,
    AlreadyExists,
}

/// Writes `contents` to `path` with permission bits `mode` (Unix), unless
/// `path` exists already.
pub fn create_new(path: &Path, contents: &[u8], mode: u32) -> io::Result<Created> {
    if path.symlink_metadata().is_ok() {
        return Ok(Created::AlreadyExists);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // A signal while it exists removes it (and ends the process).
    let _temp = crate::io::interrupt::TempFile::new(&tmp);
    let result = write_tmp(&tmp, contents, mode).and_then(|()| match fs::hard_link(&tmp, path) {
        Ok(()) => Ok(Created::Written),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Created::AlreadyExists),
        Err(_) => write_exclusive(path, contents, mode),
    });
    let _ = fs::remove_file(&tmp);
    if result.as_ref().is_ok_and(|c| *c == Created::Written) {
        // Best effort: a directory that cannot be opened or synced (some
        // network filesystems) does not undo a file that was written.
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    result
}

/// Opens `name` in `dir` to read and append, created with `mode` when
/// missing: a regular file only, never a link (refused by the kernel), and
/// never blocking. Writes go to the inode opened, whatever the name is by
/// then.
pub fn open_append(dir: &Root, name: &str, mode: u32) -> io::Result<File> {
    // Looked at first, so that a device or FIFO is never opened at all.
    match dir.stat(name).map(|s| s.kind) {
        Ok(Kind::File) => {}
        Ok(Kind::Link) => return Err(Denied::Link.into()),
        Ok(_) => return Err(io::Error::other(not_regular(name, dir))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let flags = libc::O_RDWR | libc::O_APPEND | libc::O_CREAT;
    let file = dir.open_with(name, flags, mode)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(not_regular(name, dir)));
    }
    Ok(file)
}

fn not_regular(name: &str, dir: &Root) -> String {
    format!("{} is not a regular file", dir.path().join(name).display())
}

/// Replaces `name` in `dir` with `bytes` (permission bits `mode`): a
/// temporary file beside it, synced, renamed over it, the directory synced.
/// Whatever fails, `name` is whole, old or new; a signal meanwhile removes
/// the temporary file.
pub fn replace(dir: &Root, name: &str, bytes: &[u8], mode: u32) -> io::Result<()> {
    let tmp = format!(".{name}.axe-{}.tmp", std::process::id());
    let _temp = crate::io::interrupt::TempFile::new(&dir.path().join(&tmp));
    let _ = dir.remove(&tmp);
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL;
    let written = (|| {
        let mut f = dir.open_with(&tmp, flags, 0o600)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(bytes)?;
        f.sync_all()?;
        dir.rename(&tmp, name)
    })();
    if let Err(e) = written {
        let _ = dir.remove(&tmp);
        return Err(e);
    }
    dir.sync();
    Ok(())
}

fn write_tmp(tmp: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let _ = fs::remove_file(tmp);
    let mut f = open_options(mode).open(tmp)?;
    f.write_all(contents)?;
    #[cfg(debug_assertions)]
    debug_delay();
    f.sync_all()
}

/// A test hook, compiled into debug builds only: `AXE_DEBUG_WRITE_DELAY_MS`
/// holds every temporary file this long, so that a test can interrupt a
/// write in the middle.
#[cfg(debug_assertions)]
fn debug_delay() {
    if let Some(ms) = std::env::var("AXE_DEBUG_WRITE_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

fn write_exclusive(path: &Path, contents: &[u8], mode: u32) -> io::Result<Created> {
    let mut f = match open_options(mode).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(Created::AlreadyExists),
        Err(e) => return Err(e),
    };
    if let Err(e) = f.write_all(contents).and_then(|()| f.sync_all()) {
        let _ = fs::remove_file(path);
        return Err(e);
    }
    Ok(Created::Written)
}

fn open_options(mode: u32) -> OpenOptions {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(mode);
    }
    #[cfg(not(unix))]
    let _ = mode;
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_new_writes_once_and_never_overwrites() {
        let dir = std::env::temp_dir().join(format!("axe-write-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.toml");
        let _ = fs::remove_file(&p);
        assert_eq!(create_new(&p, b"one", 0o600).unwrap(), Created::Written);
        assert_eq!(
            create_new(&p, b"two", 0o600).unwrap(),
            Created::AlreadyExists
        );
        assert_eq!(fs::read_to_string(&p).unwrap(), "one");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // No temporary file is left behind.
        let left: Vec<_> = fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_the_temporary_names_axe_makes_are_its_own() {
        assert!(is_temp_name(&temp_name("a.txt")));
        assert!(is_temp_name(".a.txt.axe-1234-0"));
        for user in [
            "a.txt.axe-1-2",
            ".a.txt.axe-draft",
            ".a.txt.axe-1",
            ".a.txt.axe-01-2",
            ".a.txt.axe-+1-2",
            ".a.txt.axe-1-2-3",
            ".a.txt.axe-1-99999999999",
            ".axe-1-2",
            "..axe-1-2",
            ".a.txt.axe-1-2.bak",
        ] {
            assert!(!is_temp_name(user), "{user}");
        }
    }
}
