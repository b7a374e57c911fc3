//! Files opened beneath one directory by the kernel's word, for the file
//! tools (design §8.2): every path a model names is resolved by
//! `openat2(2)` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` relative to the
//! agent's workdir, so `..`, absolute paths, symlinks that lead out,
//! `/proc/self/root` and a symlink swapped in during the call are refused by
//! the kernel, not by a check on the string. Where `openat2` is missing
//! (Linux before 5.6) a walk one component at a time refuses the same:
//! `..` above the root, absolute paths, and every symlink.
//!
//! axe's own files (memory, `--resume`, inputs, context files, skills:
//! design §8.7) are opened through the same resolver with no symlink
//! followed at all (`RESOLVE_NO_SYMLINKS`): `beneath_own.rs`.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, Ordering};

use super::guard::Guard;

/// Why a path could not be used.
#[derive(Debug)]
pub enum Denied {
    /// It leads outside the workdir (`..`, an absolute path, a symlink out).
    Outside,
    /// A symlink that cannot be followed safely (a magic link in `/proc`,
    /// or any symlink where `openat2` is missing).
    Link,
    NotFound,
    NotADirectory,
    NotAFile,
    /// A write into a directory that protects the user (`guard`): the
    /// protected name or path.
    Protected(String),
    Other(io::Error),
}

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Denied::Outside => f.write_str("the path leads outside the working directory"),
            Denied::Link => {
                f.write_str("the path goes through a symbolic link that is not followed")
            }
            Denied::NotFound => f.write_str("no such file or directory"),
            Denied::NotADirectory => f.write_str("not a directory"),
            Denied::NotAFile => f.write_str("not a regular file"),
            Denied::Protected(what) => write!(
                f,
                "refused: {what} is protected; the file tools never write in .git, axe, .claude \
                 or .codex directories, nor in axe's own config and agent directories"
            ),
            Denied::Other(e) => write!(f, "{e}"),
        }
    }
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Link,
    Other,
}

/// A directory that paths are resolved beneath: the agent's workdir, or a
/// directory axe's own files are opened in (`beneath_own.rs`).
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
    follow: Follow,
    /// What writes must not touch; none: anything beneath the root.
    guard: Option<Guard>,
}

/// Which symbolic links the kernel follows while resolving a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Those that stay beneath the root: the file tools' (§8.2).
    Inside,
    /// None, and nothing outside the root either: axe's own files found by
    /// a listing (context files, `--each-file` inputs).
    Nothing,
    /// None; `..` and an absolute name are taken as written: a path the
    /// user wrote, against the directory it is relative to.
    NothingAsWritten,
}

impl Follow {
    /// The `resolve` flags of `openat2(2)`.
    fn resolve(self) -> u64 {
        match self {
            Follow::Inside => libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
            Follow::Nothing => libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS,
            Follow::NothingAsWritten => libc::RESOLVE_NO_SYMLINKS,
        }
    }
}

/// `struct open_how` of `openat2(2)` (libc's is not constructible).
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// Whether `openat2` works here: 0 unknown, 1 yes, 2 no.
static OPENAT2: AtomicU8 = AtomicU8::new(0);

impl Root {
    /// Opens `path` (a directory) as the root.
    pub fn open(path: &Path) -> io::Result<Root> {
        let c = cstr(path.as_os_str().as_encoded_bytes())?;
        let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
        // SAFETY: a valid C string and flags; the result is checked.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Root {
            fd,
            path: path.to_path_buf(),
            follow: Follow::Inside,
            guard: None,
        })
    }

    /// This root, its writes held to `guard` (the file tools' root).
    pub fn guarded(self, guard: Guard) -> Root {
        Root {
            guard: Some(guard),
            ..self
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the kernel resolves paths beneath the root itself
    /// (`openat2`); false means the component walk stands in.
    pub fn kernel_resolves() -> bool {
        probe_openat2()
    }

    /// `name` as a path relative to the root: an absolute path that starts
    /// with the root's own path is shortened (a convenience: the kernel
    /// still resolves what is left beneath the root); anything else is kept
    /// as written for the kernel to judge.
    pub fn relative<'a>(&self, name: &'a str) -> &'a str {
        let root = self.path.as_os_str().to_str().unwrap_or("");
        match name.strip_prefix(root) {
            Some(rest) if !root.is_empty() && (rest.is_empty() || rest.starts_with('/')) => {
                let rest = rest.trim_start_matches('/');
                if rest.is_empty() { "." } else { rest }
            }
            _ => name,
        }
    }

    /// Opens a regular file for reading.
    pub fn open_file(&self, name: &str) -> Result<File, Denied> {
        let flags = libc::O_RDONLY | libc::O_NOCTTY | libc::O_NONBLOCK;
        let fd = self.resolve(name, flags, 0)?;
        let file = File::from(fd);
        match file.metadata() {
            Ok(m) if m.is_file() => Ok(file),
            Ok(m) if m.is_dir() => Err(Denied::NotAFile),
            Ok(_) => Err(Denied::NotAFile),
            Err(e) => Err(Denied::Other(e)),
        }
    }

    /// Lists a directory: names sorted, `.` and `..` left out.
    pub fn list(&self, name: &str) -> Result<Vec<Entry>, Denied> {
        let fd = self.resolve(name, libc::O_RDONLY | libc::O_DIRECTORY, 0)?;
        let mut entries = read_entries(&fd).map_err(Denied::Other)?;
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    /// Writes `contents` to `name` atomically: a temporary file beside it,
    /// synced, then renamed over it (a reader sees the old file or the new
    /// one, never half of one). Missing parent directories are made, and
    /// removed again if the write is refused or fails. A symlink at `name`
    /// is replaced, not followed. The guard, if any, is asked before each
    /// directory is made and before the file is.
    pub fn write(&self, name: &str, contents: &[u8]) -> Result<(), Denied> {
        let (parent, file) = split(self.relative(name))?;
        let mut made = Made(Vec::new());
        let dir = self.make_dirs(parent, &mut made)?;
        self.check(&dir, &file)?;
        let mode = existing_mode(&dir, &file).unwrap_or(0o644);
        let tmp = super::write::temp_name(&file);
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW;
        let fd = resolve_in(&dir, &tmp, flags, mode, self.follow)?;
        let mut out = File::from(fd);
        let written = out.write_all(contents).and_then(|()| out.sync_all());
        drop(out);
        let renamed = written.and_then(|()| rename_in(&dir, &tmp, &file));
        if let Err(e) = renamed {
            let _ = unlink_in(&dir, &tmp, 0);
            return Err(Denied::Other(e));
        }
        made.0.clear();
        Ok(())
    }

    /// Opens `name` beneath the root with `flags` (close-on-exec added).
    fn resolve(&self, name: &str, flags: i32, mode: u32) -> Result<OwnedFd, Denied> {
        resolve_in(&self.fd, self.relative(name), flags, mode, self.follow)
    }

    /// The directory `parent` beneath the root, each missing component
    /// made in the one before it (as the kernel resolved it, `..` and
    /// symlinks included) once the guard allows it, and recorded in `made`.
    fn make_dirs(&self, parent: &str, made: &mut Made) -> Result<OwnedFd, Denied> {
        let flags = libc::O_PATH | libc::O_DIRECTORY;
        let whole = if parent.is_empty() { "." } else { parent };
        match resolve_in(&self.fd, whole, flags, 0, self.follow) {
            Err(Denied::NotFound) => {}
            there => return there,
        }
        let mut dir = resolve_in(&self.fd, ".", flags, 0, self.follow)?;
        let mut prefix = String::new();
        for part in parent.split('/').filter(|p| !p.is_empty() && *p != ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            dir = match resolve_in(&self.fd, &prefix, flags, 0, self.follow) {
                Err(Denied::NotFound) => {
                    self.check(&dir, part)?;
                    if mkdir_in(&dir, part).map_err(Denied::Other)? {
                        made.0
                            .push((dir.try_clone().map_err(Denied::Other)?, part.to_string()));
                    }
                    resolve_in(&dir, part, flags, 0, self.follow)?
                }
                other => other?,
            };
        }
        Ok(dir)
    }

    /// The guard's word on making `name` in `dir`; yes when unguarded.
    fn check(&self, dir: &OwnedFd, name: &str) -> Result<(), Denied> {
        match &self.guard {
            Some(guard) => guard.check(&self.fd, dir, name),
            None => Ok(()),
        }
    }
}

/// The directories one write made, each as its parent and its name:
/// removed, last made first, when dropped (a refused or failed write
/// leaves nothing behind); emptied once the write is done. A directory
/// something else put a file in since is not empty and stays.
struct Made(Vec<(OwnedFd, String)>);

impl Drop for Made {
    fn drop(&mut self) {
        for (parent, name) in self.0.iter().rev() {
            let _ = unlink_in(parent, name, libc::AT_REMOVEDIR);
        }
    }
}

/// Splits `name` into its directory and its last component, which must be
/// a name (not `.`, `..` or empty).
fn split(name: &str) -> Result<(&str, String), Denied> {
    let name = name.trim_end_matches('/');
    let (parent, file) = name.rsplit_once('/').unwrap_or(("", name));
    if file.is_empty() || file == "." || file == ".." {
        return Err(Denied::NotAFile);
    }
    if name.starts_with('/') && parent.is_empty() {
        return Err(Denied::Outside);
    }
    if parent.starts_with('/') {
        return Err(Denied::Outside);
    }
    Ok((parent, file.to_string()))
}

/// Opens `name` beneath `dir`, by `openat2` or by the walk, following
/// the links `follow` lets it.
fn resolve_in(
    dir: &OwnedFd,
    name: &str,
    flags: i32,
    mode: u32,
    follow: Follow,
) -> Result<OwnedFd, Denied> {
    if name.is_empty() {
        return Err(Denied::NotFound);
    }
    let flags = flags | libc::O_CLOEXEC;
    if probe_openat2() {
        // openat2 can fail with EAGAIN when a rename races the lookup.
        for _ in 0..8 {
            match openat2(dir, name, flags, mode, follow.resolve()) {
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => continue,
                other => return other.map_err(denied),
            }
        }
        return Err(Denied::Other(io::Error::from_raw_os_error(libc::EAGAIN)));
    }
    match (follow, name.strip_prefix('/')) {
        // The walk starts at `/` for an absolute name the user wrote.
        (Follow::NothingAsWritten, Some(rest)) => {
            let root =
                openat(libc::AT_FDCWD, "/", libc::O_PATH | libc::O_CLOEXEC, 0).map_err(denied)?;
            walk(
                &root,
                if rest.is_empty() { "." } else { rest },
                flags,
                mode,
                false,
            )
        }
        _ => walk(dir, name, flags, mode, follow != Follow::NothingAsWritten),
    }
}

fn denied(e: io::Error) -> Denied {
    match e.raw_os_error() {
        Some(libc::EXDEV) => Denied::Outside,
        Some(libc::ELOOP) => Denied::Link,
        Some(libc::ENOENT) => Denied::NotFound,
        Some(libc::ENOTDIR) => Denied::NotADirectory,
        _ => Denied::Other(e),
    }
}

fn openat2(dir: &OwnedFd, name: &str, flags: i32, mode: u32, resolve: u64) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    let how = OpenHow {
        flags: flags as u64,
        mode: u64::from(if flags & libc::O_CREAT != 0 { mode } else { 0 }),
        resolve,
    };
    // SAFETY: valid fd, C string and `open_how` of the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether `openat2` is there (asked once).
fn probe_openat2() -> bool {
    match OPENAT2.load(Ordering::Relaxed) {
        1 => return true,
        2 => return false,
        _ => {}
    }
    let works = Root::open(Path::new("/")).is_ok_and(|root| {
        let resolve = Follow::Inside.resolve();
        !matches!(openat2(&root.fd, ".", libc::O_PATH | libc::O_CLOEXEC, 0, resolve),
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS))
    });
    OPENAT2.store(if works { 1 } else { 2 }, Ordering::Relaxed);
    works
}

/// The stand-in for `openat2`: one component at a time with `O_NOFOLLOW`,
/// refusing every symlink, and, `beneath`, absolute paths and `..` above
/// `dir` (else `..` goes on up, as the user wrote it).
fn walk(
    dir: &OwnedFd,
    name: &str,
    flags: i32,
    mode: u32,
    beneath: bool,
) -> Result<OwnedFd, Denied> {
    if name.starts_with('/') {
        return Err(Denied::Outside);
    }
    let parts: Vec<&str> = name
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut stack: Vec<OwnedFd> = Vec::new();
    // Where the walk stands when `..` took it above `dir`.
    let mut above: Option<OwnedFd> = None;
    let base = |above: &Option<OwnedFd>| above.as_ref().map_or(dir.as_raw_fd(), |f| f.as_raw_fd());
    let here = |stack: &Vec<OwnedFd>, above: &Option<OwnedFd>| {
        stack.last().map_or(base(above), |f| f.as_raw_fd())
    };
    for (i, part) in parts.iter().enumerate() {
        if *part == ".." {
            if stack.pop().is_none() {
                if beneath {
                    return Err(Denied::Outside);
                }
                let up = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
                above = Some(openat(base(&above), "..", up, 0).map_err(denied)?);
            }
            continue;
        }
        let last = i + 1 == parts.len();
        let f = if last {
            flags | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        let fd = openat(here(&stack, &above), part, f, mode).map_err(denied)?;
        let is_link = File::from(fd.try_clone().map_err(Denied::Other)?)
            .metadata()
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if is_link {
            return Err(Denied::Link);
        }
        stack.push(fd);
    }
    if parts.is_empty() || parts.last() == Some(&"..") {
        // A directory named by `.` or `..`: open it with the flags asked.
        return openat(here(&stack, &above), ".", flags, mode).map_err(denied);
    }
    stack.pop().ok_or(Denied::NotFound)
}

pub(super) fn openat(dir: i32, name: &str, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let c = cstr(name.as_bytes())?;
    // SAFETY: valid fd and C string; the result is checked.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags, mode) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

#[path = "beneath_at.rs"]
mod at;
use at::{cstr, existing_mode, mkdir_in, read_entries, rename_in, unlink_in};

#[path = "beneath_own.rs"]
mod own;
pub use own::{Anchored, Base, Stat, still_named};

#[cfg(test)]
#[path = "beneath_tests.rs"]
mod tests;
