//! What axe's file tools never write (design §8.2): `write_file` and
//! `edit_file` refuse a directory that protects the user, however the path
//! was spelled. The decision is made on the directory the file would be
//! created in, as the kernel opened it, and on every directory above it up
//! to `/`, each known by its device and inode (`fstat`, and `..` of the
//! descriptor, never of the path): `./.git/config`, `src/../.git/config`,
//! the absolute path, a symlink `g -> .git` and a directory symlink a
//! command made all open the same `.git`, and so are all refused.
//!
//! Protected are: a directory named `.git`, `axe`, `.claude` or `.codex`
//! beneath the workdir, at any depth (git, `axe run` and the other tools
//! read them from whatever directory they start in); a directory named
//! `.git`, `.claude` or `.codex` at or above the workdir (a workdir inside
//! a repository's `.git`); the directories a `.git` file points to; and
//! axe's own directories (`paths::own_dirs`: the config directory,
//! `./axe`, the agent directories searched), wherever the workdir is. An
//! entry with one of those names is never created, and neither is one of
//! axe's own directories that does not exist yet (the name it would have,
//! in the nearest directory above it that does).

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use super::beneath::{Denied, openat};
use super::protected::{self, NAMES};

/// The most directories walked up from a write's directory: deeper than
/// any path the kernel resolves (`PATH_MAX` is 4096 bytes, two a level).
const MAX_LEVELS: usize = 2048;

/// A file or directory as the kernel knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Id {
    dev: u64,
    ino: u64,
}

/// What a workdir's file tools may not write, found when the agent is
/// resolved.
#[derive(Debug, Default)]
pub struct Guard {
    /// Protected directories that exist, each with the path that names it.
    dirs: Vec<(Id, PathBuf)>,
    /// Protected directories that do not exist yet: the directory they
    /// would be made in (the nearest that exists), the name they would be
    /// made under, and the protected path.
    unborn: Vec<(Id, String, PathBuf)>,
}

impl Guard {
    /// The guard of `workdir`: the protected paths beneath it, and `own`
    /// (axe's own directories) wherever they are.
    pub fn new(workdir: &Path, own: &[PathBuf]) -> Guard {
        let mut guard = Guard::default();
        let found = protected::paths(&[workdir.to_path_buf()], &[]);
        for path in found.iter().chain(own) {
            match stat(path) {
                Some(id) => guard.dirs.push((id, path.clone())),
                None => guard.unborn.extend(unborn(path)),
            }
        }
        guard
    }

    /// Whether `name` may be created (or replaced) in `dir`, a directory
    /// opened beneath `root`: refused with [`Denied::Protected`] when
    /// `name` is a protected name, or `dir` or a directory above it is
    /// protected; [`Denied::Outside`] when `dir` is no longer beneath
    /// `root` (moved away since it was opened).
    pub fn check(&self, root: &OwnedFd, dir: &OwnedFd, name: &str) -> Result<(), Denied> {
        if NAMES.contains(&name) {
            return Err(Denied::Protected(name.to_string()));
        }
        let root_id = fstat(root)?;
        let mut here = fstat(dir)?;
        if let Some((_, _, path)) = self.unborn.iter().find(|(d, n, _)| *d == here && n == name) {
            return Err(Denied::Protected(path.display().to_string()));
        }
        let mut cur = openat(dir.as_raw_fd(), ".", DIR_FLAGS, 0).map_err(Denied::Other)?;
        let mut met_root = false;
        for _ in 0..MAX_LEVELS {
            // Strictly beneath the workdir every name counts; at and above
            // it `axe` does not (a checkout called axe is a workdir).
            let beneath = !met_root && here != root_id;
            met_root |= here == root_id;
            if let Some((_, path)) = self.dirs.iter().find(|(d, _)| *d == here) {
                return Err(Denied::Protected(path.display().to_string()));
            }
            let parent = openat(cur.as_raw_fd(), "..", DIR_FLAGS, 0).map_err(Denied::Other)?;
            let up = fstat(&parent)?;
            if up == here {
                // `/`: its `..` is itself.
                return if met_root {
                    Ok(())
                } else {
                    Err(Denied::Outside)
                };
            }
            for n in NAMES.iter().filter(|n| beneath || **n != "axe") {
                if stat_at(&parent, n) == Some(here) {
                    return Err(Denied::Protected((*n).to_string()));
                }
            }
            cur = parent;
            here = up;
        }
        Err(Denied::Outside)
    }
}

/// Flags for a directory walked through, never read.
const DIR_FLAGS: i32 = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// For a protected `path` that does not exist: the nearest directory above
/// it that does, and the name of the next component down.
fn unborn(path: &Path) -> Option<(Id, String, PathBuf)> {
    let mut child = path;
    while let Some(parent) = child.parent() {
        if let Some(id) = stat(parent) {
            let name = child.file_name()?.to_str()?.to_string();
            return Some((id, name, path.to_path_buf()));
        }
        child = parent;
    }
    None
}

/// The identity of what `path` leads to (symlinks followed), if anything.
fn stat(path: &Path) -> Option<Id> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some(Id {
        dev: m.dev(),
        ino: m.ino(),
    })
}

/// The identity of an open descriptor.
fn fstat(fd: &OwnedFd) -> Result<Id, Denied> {
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(Denied::Other(std::io::Error::last_os_error()));
    }
    Ok(Id {
        dev: st.st_dev,
        ino: st.st_ino,
    })
}

/// The identity of what `name` in `dir` leads to (a symlink followed: a
/// `.git` that is a link to the repository still names it), if anything.
fn stat_at(dir: &OwnedFd, name: &str) -> Option<Id> {
    let c = CString::new(name).ok()?;
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, C string and pointer.
    let r = unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), &mut st, 0) };
    (r == 0).then_some(Id {
        dev: st.st_dev,
        ino: st.st_ino,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::Root;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("axe-guard-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    fn refused(root: &Root, name: &str) -> bool {
        matches!(root.write(name, b"x"), Err(Denied::Protected(_)))
    }

    #[test]
    fn a_workdir_inside_a_git_directory_writes_nothing() {
        let d = dir();
        std::fs::create_dir_all(d.join(".git/hooks")).unwrap();
        let root = Root::open(&d.join(".git/hooks"))
            .unwrap()
            .guarded(Guard::new(&d.join(".git/hooks"), &[]));
        assert!(refused(&root, "pre-commit"));
        assert!(!d.join(".git/hooks/pre-commit").exists());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_checkout_called_axe_is_a_workdir_like_any_other() {
        let d = dir();
        std::fs::create_dir_all(d.join("axe/src")).unwrap();
        let work = d.join("axe");
        let root = Root::open(&work).unwrap().guarded(Guard::new(&work, &[]));
        root.write("src/main.rs", b"fn main() {}\n").unwrap();
        // Beneath it, a directory called axe is protected.
        assert!(refused(&root, "src/axe/agents/x.toml"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn an_own_directory_that_does_not_exist_yet_is_not_made() {
        let d = dir();
        let own = d.join(".config/axe");
        std::fs::create_dir_all(d.join(".config")).unwrap();
        let root = Root::open(&d)
            .unwrap()
            .guarded(Guard::new(&d, std::slice::from_ref(&own)));
        assert!(refused(&root, ".config/axe/agents/x.toml"));
        assert!(!own.exists());
        root.write(".config/other/x.toml", b"x").unwrap();
        // Made since: protected by what it is.
        std::fs::create_dir_all(own.join("agents")).unwrap();
        let root = Root::open(&d)
            .unwrap()
            .guarded(Guard::new(&d, std::slice::from_ref(&own)));
        assert!(refused(&root, ".config/axe/agents/x.toml"));
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn the_directory_a_git_file_points_to_is_protected() {
        let d = dir();
        std::fs::create_dir_all(d.join("store/hooks")).unwrap();
        std::fs::write(d.join(".git"), "gitdir: store\n").unwrap();
        let root = Root::open(&d).unwrap().guarded(Guard::new(&d, &[]));
        assert!(refused(&root, "store/hooks/pre-commit"));
        assert!(refused(&root, ".git"));
        assert_eq!(
            std::fs::read_to_string(d.join(".git")).unwrap(),
            "gitdir: store\n"
        );
        std::fs::remove_dir_all(d).unwrap();
    }
}
