//! Reading files axe did not write (agent files, config.toml, skills,
//! context files, inputs) without trusting them: only regular files are
//! read (a FIFO would block, a device never end), the open itself never
//! blocks, and no more than a limit is ever read into memory, whatever the
//! file claims. A file in a directory an agent may write is read by name
//! beneath a [`Root`] that follows no link (the `_in` functions, design
//! §8.7); a path is read as it is only where no agent writes (config.toml
//! and the agent files, in the config directory).

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

use crate::sandbox::beneath::{Denied, Kind, Root};

/// How many leading bytes are checked for a NUL to call a file binary.
pub const BINARY_SNIFF: usize = 8 * 1024;

/// Why a file of axe's own was not opened (design §8.7).
pub const LINK_REFUSED: &str = "its path goes through a symbolic link, which axe does not follow \
     in a file of its own (an agent may have made it): name the file itself";

/// The largest agent file or config.toml axe reads.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why a file was not read.
#[derive(Debug)]
pub enum Unreadable {
    /// A FIFO, socket, device or directory.
    NotRegular,
    /// Larger than `limit`: its size, or `limit + 1` if it grew while read.
    TooLarge { size: u64, limit: u64 },
    /// Its path goes through a symbolic link, which is not followed.
    Link,
    /// It lies outside the directory it is read beneath.
    Outside,
    /// The file could not be opened or read.
    Io(io::Error),
}

impl From<Denied> for Unreadable {
    fn from(d: Denied) -> Unreadable {
        match d {
            Denied::Link => Unreadable::Link,
            Denied::Outside => Unreadable::Outside,
            Denied::NotAFile => Unreadable::NotRegular,
            Denied::NotFound => Unreadable::Io(io::Error::from_raw_os_error(libc::ENOENT)),
            Denied::NotADirectory => Unreadable::Io(io::Error::from_raw_os_error(libc::ENOTDIR)),
            Denied::Protected(what) => Unreadable::Io(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{what} is protected"),
            )),
            Denied::Other(e) => Unreadable::Io(e),
        }
    }
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotRegular => f.write_str("not a regular file"),
            Unreadable::TooLarge { size, .. } => write!(f, "{size} bytes"),
            Unreadable::Link => f.write_str(LINK_REFUSED),
            Unreadable::Outside => f.write_str("it lies outside the directory it is read from"),
            Unreadable::Io(e) => e.fmt(f),
        }
    }
}

/// The bytes of the regular file `path`, at most `limit` of them.
pub fn bytes(path: &Path, limit: u64) -> Result<Vec<u8>, Unreadable> {
    let (file, size) = open_regular(path)?;
    bytes_of(file, size, limit)
}

/// [`bytes`] of `name` beneath `root`, no link followed.
pub fn bytes_in(root: &Root, name: &str, limit: u64) -> Result<Vec<u8>, Unreadable> {
    let (file, size) = open_in(root, name)?;
    bytes_of(file, size, limit)
}

/// [`config_text`] of `name` beneath `root`, no link followed.
pub fn config_text_in(root: &Root, name: &str) -> Result<String, Unreadable> {
    config_from(bytes_in(root, name, MAX_CONFIG_BYTES))
}

/// Opens `name` beneath `root` for reading, without blocking and with no
/// link followed, and checks that it is a regular file: it and its size.
pub fn open_in(root: &Root, name: &str) -> Result<(File, u64), Unreadable> {
    // Looked at first, so that a device is never opened; what cannot be
    // looked at is left to the open to say.
    match root.stat(name).map(|s| s.kind) {
        Ok(Kind::Link) => return Err(Unreadable::Link),
        Ok(Kind::Dir | Kind::Other) => return Err(Unreadable::NotRegular),
        Ok(Kind::File) | Err(_) => {}
    }
    let file = root.open_with(name, libc::O_RDONLY, 0)?;
    let meta = file.metadata().map_err(Unreadable::Io)?;
    if !meta.is_file() {
        return Err(Unreadable::NotRegular);
    }
    Ok((file, meta.len()))
}

fn bytes_of(mut file: File, size: u64, limit: u64) -> Result<Vec<u8>, Unreadable> {
    if size > limit {
        return Err(Unreadable::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    read_at_most(&mut file, limit, &mut bytes)?;
    Ok(bytes)
}

/// A text file beneath `root`, no link followed: `Ok(None)` when a NUL in
/// its first [`BINARY_SNIFF`] bytes says it is binary (the rest is then
/// not read), else its text, at most `limit` bytes of it (invalid UTF-8
/// replaced).
pub fn text_in(root: &Root, name: &str, limit: u64) -> Result<Option<String>, Unreadable> {
    let (file, size) = open_in(root, name)?;
    text_of(file, size, limit)
}

fn text_of(mut file: File, size: u64, limit: u64) -> Result<Option<String>, Unreadable> {
    if size > limit {
        return Err(Unreadable::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size.min(limit)).unwrap_or(0));
    let sniff = u64::try_from(BINARY_SNIFF).unwrap_or(u64::MAX).min(limit);
    (&mut file)
        .take(sniff)
        .read_to_end(&mut bytes)
        .map_err(Unreadable::Io)?;
    if bytes.contains(&0) {
        return Ok(None);
    }
    if bytes.len() as u64 == sniff {
        read_at_most(&mut file, limit - sniff, &mut bytes)?;
    }
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// An agent file or config.toml: at most [`MAX_CONFIG_BYTES`], as text.
pub fn config_text(path: &Path) -> Result<String, Unreadable> {
    config_from(bytes(path, MAX_CONFIG_BYTES))
}

fn config_from(read: Result<Vec<u8>, Unreadable>) -> Result<String, Unreadable> {
    match read {
        Ok(b) => String::from_utf8(b).map_err(|e| {
            Unreadable::Io(io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
        }),
        Err(Unreadable::TooLarge { .. }) => Err(Unreadable::Io(io::Error::other(format!(
            "larger than {} MiB",
            MAX_CONFIG_BYTES >> 20
        )))),
        Err(e) => Err(e),
    }
}

/// Opens `path` for reading without blocking (a FIFO would wait for a
/// writer) and checks, on the open file, that it is a regular file.
fn open_regular(path: &Path) -> Result<(File, u64), Unreadable> {
    // Looked at first, so that a socket or device is never opened at all;
    // checked again on the open file, which may not be the same one.
    if !std::fs::metadata(path).map_err(Unreadable::Io)?.is_file() {
        return Err(Unreadable::NotRegular);
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(Unreadable::Io)?;
    let meta = file.metadata().map_err(Unreadable::Io)?;
    if !meta.is_file() {
        return Err(Unreadable::NotRegular);
    }
    Ok((file, meta.len()))
}

/// Appends at most `limit` more bytes of `file` to `out`; a file that has
/// more (it grew after its size was read) is too large.
fn read_at_most(file: &mut File, limit: u64, out: &mut Vec<u8>) -> Result<(), Unreadable> {
    let before = out.len();
    file.take(limit.saturating_add(1))
        .read_to_end(out)
        .map_err(Unreadable::Io)?;
    let read = (out.len() - before) as u64;
    if read > limit {
        out.truncate(before);
        return Err(Unreadable::TooLarge { size: read, limit });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_up_to_the_limit_and_sniffs_for_binary() {
        use crate::sandbox::beneath::Follow;
        let dir = std::env::temp_dir().join(format!("axe-read-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let root = Root::own(&dir, Follow::Nothing).unwrap();
        let p = dir.join("f");
        std::fs::write(&p, "héllo").unwrap();
        assert_eq!(text_in(&root, "f", 100).unwrap().as_deref(), Some("héllo"));
        assert!(matches!(
            text_in(&root, "f", 3),
            Err(Unreadable::TooLarge { size: 6, limit: 3 })
        ));
        std::fs::write(&p, b"ab\0cd").unwrap();
        assert_eq!(text_in(&root, "f", 100).unwrap(), None);
        let big = "x".repeat(BINARY_SNIFF + 10);
        std::fs::write(&p, &big).unwrap();
        assert_eq!(
            text_in(&root, "f", 1 << 20).unwrap().unwrap().len(),
            big.len()
        );
        assert!(matches!(
            text_in(&root, "sub", 100),
            Err(Unreadable::NotRegular)
        ));
        assert_eq!(bytes(&p, 1 << 20).unwrap().len(), big.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_anywhere_beneath_the_root_is_not_followed() {
        use crate::sandbox::beneath::Follow;
        use std::os::unix::fs::symlink;
        let dir = std::env::temp_dir().join(format!("axe-read-links-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("work/real")).unwrap();
        std::fs::write(dir.join("work/real/f"), "inside").unwrap();
        std::fs::write(dir.join("key"), "outside").unwrap();
        symlink("real", dir.join("work/dir-link")).unwrap();
        symlink("real/f", dir.join("work/file-link")).unwrap();
        symlink("../key", dir.join("work/out-link")).unwrap();
        let root = Root::own(&dir.join("work"), Follow::Nothing).unwrap();
        assert_eq!(bytes_in(&root, "real/f", 100).unwrap(), b"inside");
        for name in ["dir-link/f", "file-link", "out-link"] {
            assert!(
                matches!(bytes_in(&root, name, 100), Err(Unreadable::Link)),
                "{name}"
            );
        }
        assert!(matches!(
            bytes_in(&root, "../key", 100),
            Err(Unreadable::Outside)
        ));
        // As written: `..` is the user's, a link still is not followed.
        let root = Root::own(&dir.join("work/real"), Follow::NothingAsWritten).unwrap();
        assert_eq!(bytes_in(&root, "../../key", 100).unwrap(), b"outside");
        assert!(matches!(
            bytes_in(&root, "../out-link", 100),
            Err(Unreadable::Link)
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
