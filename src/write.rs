//! Writing files without ever losing one: create-only, atomic, with a mode.
//!
//! Contents go to a temporary file in the target's directory, which is then
//! hard-linked to the target name. A hard link never replaces an existing
//! file, so a file that appeared meanwhile is kept, and a reader never sees
//! a half-written file. Where hard links are not supported, an exclusive
//! create is used instead. The directory is synced after the link, so the
//! new name survives a crash. Modes are given to `open(2)`, so the user's
//! umask still applies (it can only take permissions away).

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

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
    let _temp = crate::interrupt::TempFile::new(&tmp);
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
}
