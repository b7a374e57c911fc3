//! axe's own files (design §8.7): memory, `--resume`, `--each` and
//! `--each-file` inputs, context files, skills and schema files may lie
//! where an agent writes, so none is opened by a path the kernel resolves
//! through links. The directory a path is written against (the current
//! directory, the workdir, `$HOME`, axe's data directory, an agent's config
//! directory, `/`) is opened once as a [`Root`] that follows no link
//! ([`Follow::Nothing`], [`Follow::NothingAsWritten`]), and everything
//! beneath it is opened, made, compared and renamed by descriptor: a link
//! planted below the anchor, before the run or during it, is refused
//! ([`Denied::Link`]), never followed.

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use super::*;

/// A path the user wrote, as axe opens it: the directory it is written
/// against, opened once, and the rest, which the kernel resolves with no
/// link followed (`..` taken as written).
#[derive(Debug, Clone)]
pub struct Anchored {
    root: Arc<Root>,
    rest: String,
    /// The path as messages show it.
    shown: PathBuf,
}

/// What a name in a directory is, a link not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: Kind,
    /// Device and inode.
    pub id: (u64, u64),
}

/// What a relative path is written against.
#[derive(Debug, Clone, Copy)]
pub enum Base<'a> {
    /// The current directory, shown as this path: opened as `.`, the
    /// directory axe runs in, whatever its name leads to by now.
    Cwd(&'a Path),
    /// A directory the user named (axe's data directory, an agent's config
    /// directory): opened by that name.
    Dir(&'a Path),
}

impl<'a> Base<'a> {
    /// The directory, as shown.
    pub fn path(self) -> &'a Path {
        match self {
            Base::Cwd(p) | Base::Dir(p) => p,
        }
    }
}

impl Anchored {
    /// `written` against `base`: `~/...` against `$HOME`, an absolute path
    /// against `/`, anything else against `base`. The anchor is opened now.
    pub fn new(base: Base, written: &str) -> io::Result<Anchored> {
        let shown = crate::paths::resolve_against(base.path(), written);
        let home = (written == "~" || written.starts_with("~/"))
            .then(|| crate::paths::expand_tilde("~"))
            .filter(|h| h.is_absolute());
        let follow = Follow::NothingAsWritten;
        let (root, rest) = if let Some(home) = home {
            (
                Root::own(&home, follow)?,
                written[1..].trim_start_matches('/'),
            )
        } else if let Some(rest) = written.strip_prefix('/') {
            (
                Root::own(Path::new("/"), follow)?,
                rest.trim_start_matches('/'),
            )
        } else {
            let root = match base {
                Base::Cwd(p) => Root::cwd(p, follow)?,
                Base::Dir(p) => Root::own(p, follow)?,
            };
            (root, written)
        };
        Ok(Anchored {
            root: Arc::new(root),
            rest: if rest.is_empty() { "." } else { rest }.to_string(),
            shown,
        })
    }

    /// The path as messages show it.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// The anchor, and the rest to resolve beneath it.
    pub fn parts(&self) -> (&Root, &str) {
        (&self.root, &self.rest)
    }

    /// The directory that holds the file, and the file's name in it: its
    /// parents made (0755) when missing and `create`.
    pub fn parent(&self, create: bool) -> Result<(Root, String), Denied> {
        let rest = self.rest.trim_end_matches('/');
        let (dir, name) = rest.rsplit_once('/').unwrap_or((".", rest));
        if matches!(name, "" | "." | "..") {
            return Err(Denied::NotAFile);
        }
        let dir = if dir.is_empty() { "." } else { dir };
        Ok((self.root.dir(dir, create)?, name.to_string()))
    }
}

impl Root {
    /// A directory axe's own files are opened in, following no link below
    /// it (`follow` is never [`Follow::Inside`]). Its own path is followed:
    /// the user named it.
    pub fn own(path: &Path, follow: Follow) -> io::Result<Root> {
        let mut root = Root::open(path)?;
        root.follow = follow;
        Ok(root)
    }

    /// A root on a copy of `fd` (a directory already opened, design §8.7's
    /// granted paths: `sandbox::opened`), shown in messages as `path`.
    pub fn from_fd(fd: BorrowedFd, path: &Path, follow: Follow) -> io::Result<Root> {
        Ok(Root {
            fd: crate::sandbox::opened::dup(fd)?,
            path: path.to_path_buf(),
            follow,
            guard: None,
        })
    }

    /// The root's descriptor (`O_PATH`).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The current directory (`.`, whatever its name leads to by now) as
    /// such a root, shown in messages as `shown`.
    pub fn cwd(shown: &Path, follow: Follow) -> io::Result<Root> {
        let mut root = Root::own(Path::new("."), follow)?;
        root.path = shown.to_path_buf();
        Ok(root)
    }

    /// Opens `name` with `flags` (`O_NONBLOCK`, `O_NOCTTY` and close-on-exec
    /// added: a FIFO never blocks the open), creating it with `mode` when
    /// `flags` say so. What it is (a regular file?) is the caller's to check.
    pub fn open_with(&self, name: &str, flags: i32, mode: u32) -> Result<File, Denied> {
        let flags = flags | libc::O_NONBLOCK | libc::O_NOCTTY;
        resolve_in(&self.fd, name, flags, mode, self.follow).map(File::from)
    }

    /// `name` as an `O_PATH` descriptor (a directory only when `dir`):
    /// what a policy grants (`sandbox::opened`).
    pub fn open_path(&self, name: &str, dir: bool) -> Result<OwnedFd, Denied> {
        let flags = libc::O_PATH | if dir { libc::O_DIRECTORY } else { 0 };
        resolve_in(&self.fd, name, flags, 0, self.follow)
    }

    /// The directory `name` beneath this one, as a root that follows what
    /// this one follows; made, with its parents, when missing and `create`.
    pub fn dir(&self, name: &str, create: bool) -> Result<Root, Denied> {
        let fd = if create {
            let mut made = Made(Vec::new());
            let fd = self.make_dirs(name, &mut made)?;
            // Kept: axe's own directories stay once made.
            made.0.clear();
            fd
        } else {
            let flags = libc::O_PATH | libc::O_DIRECTORY;
            resolve_in(&self.fd, name, flags, 0, self.follow)?
        };
        let path = if name == "." {
            self.path.clone()
        } else {
            self.path.join(name)
        };
        Ok(Root {
            fd,
            path,
            follow: self.follow,
            guard: None,
        })
    }

    /// What `name` (one name in this directory) is now, a link not
    /// followed: looked at before an open, so that a device or FIFO is
    /// never opened at all (the open checks again, on what it opened).
    pub fn stat(&self, name: &str) -> io::Result<Stat> {
        let c = cstr(name.as_bytes())?;
        // SAFETY: zeroed `stat` is a valid out-parameter.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let fd = self.fd.as_raw_fd();
        let flags = libc::AT_SYMLINK_NOFOLLOW;
        // SAFETY: valid fd, C string and pointer.
        if unsafe { libc::fstatat(fd, c.as_ptr(), &mut st, flags) } < 0 {
            return Err(io::Error::last_os_error());
        }
        let kind = match st.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File,
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        };
        Ok(Stat {
            kind,
            id: (st.st_dev, st.st_ino),
        })
    }

    /// Renames `from` to `to`, both names in this directory: a link at
    /// `to` is replaced, never followed.
    pub fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        rename_in(&self.fd, from, to)
    }

    /// Removes the file `name` in this directory (a link, not its target).
    pub fn remove(&self, name: &str) -> io::Result<()> {
        unlink_in(&self.fd, name, 0)
    }

    /// Syncs the directory, so that a name just made or renamed survives
    /// a crash. Best effort: some filesystems cannot.
    pub fn sync(&self) {
        let flags = libc::O_RDONLY | libc::O_DIRECTORY;
        if let Ok(fd) = resolve_in(&self.fd, ".", flags, 0, self.follow) {
            let _ = File::from(fd).sync_all();
        }
    }
}

impl From<Denied> for io::Error {
    fn from(d: Denied) -> io::Error {
        match d {
            Denied::NotFound => io::Error::from_raw_os_error(libc::ENOENT),
            Denied::Other(e) => e,
            Denied::Link => io::Error::other(crate::sandbox::read::LINK_REFUSED),
            other => io::Error::other(other.to_string()),
        }
    }
}

/// Whether the open `file` is still what `name` in `dir` names (a rename
/// may have replaced it since it was opened).
pub fn still_named(file: &File, dir: &Root, name: &str) -> io::Result<bool> {
    let meta = file.metadata()?;
    match dir.stat(name) {
        Ok(now) => Ok(now.id == (meta.dev(), meta.ino())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}
