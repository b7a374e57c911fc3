//! What a command puts where a protected path is (design §8.6), noted
//! before it starts and moved aside when it returns: a name that did not
//! exist (nothing to mount over), a directory above a protected one
//! renamed and made again, a link replaced.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{NAMES, paths};

/// What stood, before a command, where a protected path beneath a
/// writable directory is: each directory from the outermost writable one
/// down to the path, with the inode each name led to then (`None`: nothing
/// was there; nothing below it is noted).
#[derive(Debug)]
struct Chain {
    root: PathBuf,
    steps: Vec<(OsString, Option<Id>)>,
}

/// What a name leads to, as far as a command could change it: the inode
/// (device and number), its type, and for a link where it points (a link
/// removed and made again, or a directory made in its place, may get the
/// very number it had).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Id {
    dev: u64,
    ino: u64,
    kind: u32,
    link: Option<Vec<u8>>,
}

impl Id {
    fn is_dir(&self) -> bool {
        self.kind == libc::S_IFDIR
    }
}

/// What a command could put where a protected path is, noted before it
/// starts ([`Watch::new`]) and undone when it returns
/// ([`Watch::set_aside`]). The read-only mounts cover what exists, but not
/// a name that does not exist yet (nothing to mount over), nor a directory
/// above a protected one that a command renames and makes again: a
/// command could `git init`, make the config directory axe has not made
/// yet, or move `cfg` away and write `cfg/axe/config.toml` afresh.
#[derive(Debug, Default)]
pub struct Watch(Vec<Chain>);

/// A name a command put where a protected path is: where it went, or why
/// it could not be moved.
pub type SetAside = (PathBuf, Result<PathBuf, String>);

impl Watch {
    /// Notes what stands now where each protected path beneath `writable`
    /// is: the [`NAMES`] at the top of each, whether they exist or not
    /// (a link there is watched as itself: replaced by a directory, it is
    /// no longer what the mount protects), what [`paths`] finds, and axe's
    /// own directories, made yet or not, as named and as resolved.
    pub fn new(writable: &[PathBuf]) -> Watch {
        let roots: Vec<PathBuf> = writable
            .iter()
            .filter_map(|r| r.canonicalize().ok())
            .collect();
        let mut targets = paths(writable, &[]);
        for root in &roots {
            targets.extend(NAMES.iter().map(|n| root.join(n)));
        }
        // axe's own directories both as named and as resolved: a link on
        // the way (`XDG_CONFIG_HOME` naming one) is watched as a link.
        for dir in crate::paths::own_dirs() {
            let plain = !dir
                .components()
                .any(|c| c == std::path::Component::ParentDir);
            if dir.is_absolute() && plain {
                targets.push(dir.clone());
            }
            targets.extend(resolved(&dir));
        }
        targets.sort();
        targets.dedup();
        let mut chains: Vec<Chain> = Vec::new();
        for target in targets {
            // From the outermost writable directory: a command may rename
            // anything below it, an inner writable directory included.
            let Some(root) = roots
                .iter()
                .filter(|r| target.starts_with(r) && target != **r)
                .min_by_key(|r| r.components().count())
            else {
                continue;
            };
            let Ok(rest) = target.strip_prefix(root) else {
                continue;
            };
            let mut steps = Vec::new();
            let mut at = root.clone();
            for part in rest.iter() {
                let name = part.to_os_string();
                at.push(&name);
                let id = lstat(&at);
                let gone = id.is_none();
                steps.push((name, id));
                if gone {
                    break;
                }
            }
            chains.push(Chain {
                root: root.clone(),
                steps,
            });
        }
        Watch(chains)
    }

    /// Once the command has returned: whatever now stands where one of
    /// the noted names stood, other than what stood there (something new
    /// where there was nothing, a directory made again in place of one
    /// renamed), is renamed to `<name>.refused-by-axe` beside it (`-2`...
    /// when taken, then a random suffix; never over anything, a link moved,
    /// not followed), so that neither git, axe nor another tool reads it.
    /// A directory the command made unwritable or unsearchable to its own
    /// user is given back the owner's access for the rename, then its mode.
    /// Each name moved, or the reason it could not be.
    pub fn set_aside(&self) -> Vec<SetAside> {
        let mut moved: Vec<SetAside> = Vec::new();
        for chain in &self.0 {
            if let Some(m) = chain.set_aside() {
                if !moved.iter().any(|(p, _)| *p == m.0) {
                    moved.push(m);
                }
            }
        }
        moved
    }
}

impl Chain {
    /// Walks the chain from its root, no link followed; the first name that
    /// leads elsewhere than it did is moved aside.
    fn set_aside(&self) -> Option<SetAside> {
        let mut dir = open_dir(libc::AT_FDCWD, self.root.as_os_str(), false).ok()?;
        let mut path = self.root.clone();
        for (i, (name, was)) in self.steps.iter().enumerate() {
            let now = match with_access(&dir, || stat_at(&dir, name)) {
                Ok(now) => now,
                Err(e) => return Some((path.join(name), Err(e.to_string()))),
            };
            path.push(name);
            let Some(id) = now else {
                // Nothing there: nothing to read.
                return None;
            };
            if was.as_ref() != Some(&id) {
                return Some((path.clone(), move_aside(&dir, name, &path)));
            }
            if i + 1 == self.steps.len() || !id.is_dir() {
                return None;
            }
            dir = match with_access(&dir, || open_dir(dir.as_raw_fd(), name, true)) {
                Ok(d) => d,
                Err(e) => return Some((path, Err(e.to_string()))),
            };
        }
        None
    }
}

/// `path` with the part of it that exists resolved (symlinks followed, as
/// axe will find it), the rest as written; none when the rest holds `..`.
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut base = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = base.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                if *part == ".." || *part == "." {
                    return None;
                }
                out.push(part);
            }
            return Some(out);
        }
        rest.push(base.file_name()?);
        base = base.parent()?;
    }
}

/// Renames `name` in `dir` to the first free `<name>.refused-by-axe`,
/// `-2`...`-9`, then random suffixes: names a command took in advance do
/// not keep it in place.
fn move_aside(dir: &OwnedFd, name: &OsStr, path: &Path) -> Result<PathBuf, String> {
    let suffixes = (1..10u64)
        .map(|n| {
            if n == 1 {
                String::new()
            } else {
                format!("-{n}")
            }
        })
        .chain((0..8).map(|_| format!("-{:016x}", fastrand::u64(..))));
    for suffix in suffixes {
        let mut to = name.to_os_string();
        to.push(format!(".refused-by-axe{suffix}"));
        match with_access(dir, || rename_no_replace(dir, name, &to)) {
            Ok(()) => return Ok(path.with_file_name(to)),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("no free name to move it to".into())
}

/// `op` in `dir`; where `dir` denies its own user (a command's `chmod`),
/// again with the owner's read, write and search given back, then the mode
/// the command left.
fn with_access<T>(dir: &OwnedFd, mut op: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    let first = op();
    let denied = |r: &io::Result<T>| matches!(r, Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EPERM)));
    if !denied(&first) {
        return first;
    }
    let Ok(mode) = mode_of(dir) else {
        return first;
    };
    if mode & 0o700 == 0o700 || chmod(dir, mode | 0o700).is_err() {
        return first;
    }
    let again = op();
    let _ = chmod(dir, mode);
    again
}

/// Opens directory `name` in `dir` (`O_PATH`, a link at `name` refused
/// when `no_follow`).
fn open_dir(dir: i32, name: &OsStr, no_follow: bool) -> io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
    if no_follow {
        flags |= libc::O_NOFOLLOW;
    }
    let c = cstr(name)?;
    // SAFETY: a valid descriptor (or AT_FDCWD) and C string; the result is
    // checked.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `name` as a C string: its bytes, whatever their encoding.
fn cstr(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// What `name` in `dir` is now, a link not followed; none when nothing is
/// there.
fn stat_at(dir: &OwnedFd, name: &OsStr) -> io::Result<Option<Id>> {
    let c = cstr(name)?;
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let flags = libc::AT_SYMLINK_NOFOLLOW;
    // SAFETY: a valid descriptor, C string and pointer.
    if unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, flags) } < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::NotFound {
            Ok(None)
        } else {
            Err(e)
        };
    }
    let kind = st.st_mode & libc::S_IFMT;
    let link = if kind == libc::S_IFLNK {
        let mut buf = vec![0u8; 4096];
        // SAFETY: a valid descriptor and C string; the kernel writes at
        // most `buf.len()` bytes into `buf`.
        let n = unsafe {
            libc::readlinkat(
                dir.as_raw_fd(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        buf.truncate(usize::try_from(n).unwrap_or(0));
        Some(buf)
    } else {
        None
    };
    Ok(Some(Id {
        dev: st.st_dev,
        ino: st.st_ino,
        kind,
        link,
    }))
}

/// What `path` names now, its last name not followed.
fn lstat(path: &Path) -> Option<Id> {
    let parent = open_dir(libc::AT_FDCWD, path.parent()?.as_os_str(), false).ok()?;
    stat_at(&parent, path.file_name()?).ok()?
}

/// The permission bits of the directory `dir` is open on.
fn mode_of(dir: &OwnedFd) -> io::Result<u32> {
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor (`O_PATH` ones may be `fstat`ed) and pointer.
    if unsafe { libc::fstat(dir.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode & 0o7777)
}

/// Sets the mode of the very directory `dir` is open on: through its
/// `/proc/self/fd` link (an `O_PATH` descriptor takes no `fchmod`), so
/// that a name swapped meanwhile changes nothing.
fn chmod(dir: &OwnedFd, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
    std::fs::set_permissions(link, std::fs::Permissions::from_mode(mode))
}

/// `renameat2(RENAME_NOREPLACE)` of `from` to `to`, both names in `dir`:
/// fails rather than replace `to`.
fn rename_no_replace(dir: &OwnedFd, from: &OsStr, to: &OsStr) -> io::Result<()> {
    let (from, to) = (cstr(from)?, cstr(to)?);
    let fd = dir.as_raw_fd();
    // SAFETY: renameat2(2) on a valid descriptor and two NUL-terminated
    // names (no `/`: both stay in `dir`) that outlive the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            fd,
            from.as_ptr(),
            fd,
            to.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("axe-watch-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    #[test]
    fn a_path_not_made_yet_is_resolved_as_far_as_it_exists() {
        let root = dir();
        std::fs::create_dir_all(root.join("real")).unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let got = resolved(&root.join("link/.config/axe"));
        assert_eq!(got, Some(root.join("real/.config/axe")));
        assert_eq!(resolved(&root.join("nope/../x")), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn what_a_command_put_in_place_is_moved_aside_and_the_rest_left() {
        let root = dir();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        let watch = Watch::new(std::slice::from_ref(&root));
        // Made where there was nothing; made again in place of one moved.
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::rename(root.join(".claude"), root.join("old")).unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        let moved = watch.set_aside();
        let paths: Vec<&PathBuf> = moved.iter().map(|(p, _)| p).collect();
        assert_eq!(paths, vec![&root.join(".claude"), &root.join(".git")]);
        assert!(moved.iter().all(|(_, to)| to.is_ok()), "{moved:?}");
        assert!(root.join(".git.refused-by-axe").is_dir());
        assert!(root.join(".claude.refused-by-axe").is_dir());
        assert!(root.join("src").is_dir() && root.join("old").is_dir());
        // Nothing changed since: nothing moved.
        assert!(
            Watch::new(std::slice::from_ref(&root))
                .set_aside()
                .is_empty()
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
