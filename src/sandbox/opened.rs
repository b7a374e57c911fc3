//! The paths a policy grants (design §8.7): an agent's workdir, its
//! `[sandbox] read` and `write` paths, a sandboxed MCP server's `cwd` and
//! paths. Any of them may lie where another agent's commands write, and a
//! command can replace one (or a directory above it) with a symbolic link
//! to `~`: resolved by path when used, the next agent's file tools,
//! Landlock rules and commands would work there. So each is opened once,
//! beneath the directory it is written against (its anchor, as for axe's
//! own files: `beneath_own.rs`) with no link followed below the anchor,
//! and used from then on by descriptor: the file tools' root, the Landlock
//! rules, the command's view of the filesystem and its working directory
//! are all made from that descriptor.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::beneath::{Anchored, Base, Denied, Follow, Root};

/// What a message says of a path refused for a link below its anchor.
pub const LINK: &str = "goes through a symbolic link, which axe does not follow below the \
     directory it is written against (an agent may have made it): name the real path";

/// A granted path, opened (`O_PATH`), or a path that did not exist when
/// the agent was resolved (shown, granted nothing).
#[derive(Debug, Clone)]
pub struct Opened {
    /// As the user wrote it, against its anchor: what messages show.
    path: PathBuf,
    held: Option<Held>,
}

/// The descriptor and what it was when opened.
#[derive(Debug, Clone)]
struct Held {
    fd: Arc<OwnedFd>,
    dir: bool,
    /// Device and inode.
    id: (u64, u64),
}

impl PartialEq for Opened {
    fn eq(&self, other: &Opened) -> bool {
        self.path == other.path && self.id() == other.id()
    }
}

impl Eq for Opened {}

impl Opened {
    /// `written` against `base`: `~/...` against `$HOME`, an absolute path
    /// against `/`, anything else against `base`, with no link followed
    /// below that anchor. A directory when `dir`, else anything.
    pub fn open(base: Base, written: &str, dir: bool) -> Result<Opened, Denied> {
        let at = Anchored::new(base, written).map_err(denied)?;
        let (root, rest) = at.parts();
        Opened::beneath(root, rest, at.path(), dir)
    }

    /// `written` against `anchor`, an opened directory (a `[sandbox]` path
    /// against the workdir): a relative path is resolved beneath its
    /// descriptor, never by its name again.
    pub fn against(anchor: &Opened, written: &str, dir: bool) -> Result<Opened, Denied> {
        let absolute = written.starts_with('/') || written == "~" || written.starts_with("~/");
        let fd = match (&anchor.held, absolute) {
            (Some(held), false) if held.dir => held.fd.as_fd(),
            _ => return Opened::open(Base::Dir(&anchor.path), written, dir),
        };
        let root = Root::from_fd(fd, &anchor.path, Follow::NothingAsWritten).map_err(denied)?;
        let shown = crate::paths::resolve_against(&anchor.path, written);
        Opened::beneath(&root, written, &shown, dir)
    }

    /// A directory axe made itself (the private `TMPDIR`), opened by name.
    pub fn own(path: &Path) -> io::Result<Opened> {
        let root = Root::open(path)?;
        let fd = root.fd().try_clone_to_owned()?;
        Opened::held(path, fd, true)
    }

    /// A path that does not exist: shown, granted nothing.
    pub fn absent(path: PathBuf) -> Opened {
        Opened { path, held: None }
    }

    fn beneath(root: &Root, rest: &str, shown: &Path, dir: bool) -> Result<Opened, Denied> {
        let fd = root.open_path(rest, dir)?;
        Opened::held(shown, fd, dir).map_err(Denied::Other)
    }

    fn held(shown: &Path, fd: OwnedFd, dir: bool) -> io::Result<Opened> {
        let (id, is_dir) = stat(fd.as_fd())?;
        if dir && !is_dir {
            return Err(io::Error::from_raw_os_error(libc::ENOTDIR));
        }
        Ok(Opened {
            path: shown.to_path_buf(),
            held: Some(Held {
                fd: Arc::new(fd),
                dir: is_dir,
                id,
            }),
        })
    }

    /// The same, shown as `path` (the current directory by its name).
    pub fn shown_as(self, path: &Path) -> Opened {
        Opened {
            path: path.to_path_buf(),
            ..self
        }
    }

    /// The path as written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The descriptor; none for a path that did not exist.
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.held.as_ref().map(|h| h.fd.as_fd())
    }

    /// The descriptor, shared; none for a path that did not exist.
    pub fn shared(&self) -> Option<Arc<OwnedFd>> {
        self.held.as_ref().map(|h| h.fd.clone())
    }

    /// Whether it is a directory (false for an absent path).
    pub fn is_dir(&self) -> bool {
        self.held.as_ref().is_some_and(|h| h.dir)
    }

    /// Device and inode when opened.
    pub fn id(&self) -> Option<(u64, u64)> {
        self.held.as_ref().map(|h| h.id)
    }

    /// A root on this directory, following what `follow` lets it.
    pub fn root(&self, follow: Follow) -> io::Result<Root> {
        match &self.held {
            Some(h) if h.dir => Root::from_fd(h.fd.as_fd(), &self.path, follow),
            Some(_) => Err(io::Error::from_raw_os_error(libc::ENOTDIR)),
            None => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }

    /// Where the kernel finds it now, no link in it (`/proc/self/fd`); none
    /// for an absent path, or one removed since.
    pub fn real_path(&self) -> Option<PathBuf> {
        let fd = self.held.as_ref()?.fd.as_raw_fd();
        let link = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
        let shown = link.to_string_lossy();
        (link.is_absolute() && !shown.ends_with(" (deleted)")).then_some(link)
    }
}

/// A copy of `fd`, close-on-exec.
pub(super) fn dup(fd: BorrowedFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a live descriptor; the result is checked.
    let new = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

/// The device and inode of `fd`, and whether it is a directory.
fn stat(fd: BorrowedFd) -> io::Result<((u64, u64), bool)> {
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor and a valid pointer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let dir = st.st_mode & libc::S_IFMT == libc::S_IFDIR;
    Ok(((st.st_dev, st.st_ino), dir))
}

fn denied(e: io::Error) -> Denied {
    match e.raw_os_error() {
        Some(libc::ENOENT) => Denied::NotFound,
        Some(libc::ENOTDIR) => Denied::NotADirectory,
        Some(libc::ELOOP) => Denied::Link,
        _ => Denied::Other(e),
    }
}

/// The `[sandbox] <key>` paths `list`, each opened against `workdir`; one
/// that does not exist is granted nothing (as before it is made), one
/// through a link below its anchor is refused, naming it.
pub fn granted(workdir: &Opened, list: &[String], key: &str) -> Result<Vec<Opened>, String> {
    list.iter()
        .map(|written| {
            let path = || crate::paths::resolve_against(workdir.path(), written);
            match Opened::against(workdir, written, false) {
                Ok(opened) => Ok(opened),
                Err(Denied::NotFound) => Ok(Opened::absent(path())),
                Err(e) => Err(refusal(&format!("the [sandbox] {key} path"), &path(), &e)),
            }
        })
        .collect()
}

/// The message for `path` (`what`: "the workdir", ...) refused as
/// `denied` says.
pub fn refusal(what: &str, path: &Path, denied: &Denied) -> String {
    let path = path.display();
    match denied {
        Denied::Link => format!("{what} {path} {LINK}"),
        Denied::NotFound => format!("{what} {path} does not exist"),
        Denied::NotADirectory => format!("{what} {path} is not a directory"),
        other => format!("{what} {path}: {other}"),
    }
}
