//! The calls on a directory's descriptor that `beneath` and its own-files
//! half make by name inside it (`mkdirat`, `renameat`, `unlinkat`,
//! `fstatat`, `getdents64`): never a path from the root, so nothing can be
//! swapped between opening the directory and acting in it.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::{Entry, Kind};

/// Makes directory `name` in `dir`: true if this call made it, false if
/// it was there already (made meanwhile by someone else).
pub(super) fn mkdir_in(dir: &OwnedFd, name: &str) -> io::Result<bool> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: valid fd and C string.
    if unsafe { libc::mkdirat(dir.as_raw_fd(), c.as_ptr(), 0o755) } < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
        return Ok(false);
    }
    Ok(true)
}

pub(super) fn rename_in(dir: &OwnedFd, from: &str, to: &str) -> io::Result<()> {
    let (a, b) = (cstr(from.as_bytes())?, cstr(to.as_bytes())?);
    let fd = dir.as_raw_fd();
    // SAFETY: valid fds and C strings; names without `/` stay in `dir`.
    if unsafe { libc::renameat(fd, a.as_ptr(), fd, b.as_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Removes `name` from `dir`: a file, or with `AT_REMOVEDIR` an empty
/// directory.
pub(super) fn unlink_in(dir: &OwnedFd, name: &str, flags: i32) -> io::Result<()> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: valid fd and C string.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c.as_ptr(), flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The permission bits of a regular file `name` in `dir`, if there is one.
pub(super) fn existing_mode(dir: &OwnedFd, name: &str) -> Option<u32> {
    let c = cstr(name.as_bytes()).ok()?;
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid fd, C string and pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG).then_some(st.st_mode & 0o7777)
}

/// The entries of an open directory, read with `getdents64(2)` (no path,
/// so nothing can be swapped between opening and listing).
pub(super) fn read_entries(dir: &OwnedFd) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        // SAFETY: valid fd and buffer of the length passed.
        let n = unsafe {
            libc::syscall(
                libc::SYS_getdents64,
                dir.as_raw_fd(),
                buf.as_mut_ptr(),
                buf.len(),
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n == 0 {
            return Ok(out);
        }
        let mut at = 0usize;
        let end = n as usize;
        // struct linux_dirent64: ino u64, off i64, reclen u16, type u8, name.
        while at + 19 <= end {
            let reclen = u16::from_ne_bytes([buf[at + 16], buf[at + 17]]) as usize;
            if reclen == 0 || at + reclen > end {
                break;
            }
            let kind = match buf[at + 18] {
                libc::DT_REG => Kind::File,
                libc::DT_DIR => Kind::Dir,
                libc::DT_LNK => Kind::Link,
                _ => Kind::Other,
            };
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|b| *b == 0).unwrap_or(name.len())];
            if name != b"." && name != b".." {
                out.push(Entry {
                    name: String::from_utf8_lossy(name).into_owned(),
                    kind,
                });
            }
            at += reclen;
        }
    }
}

pub(super) fn cstr(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL in the path"))
}
