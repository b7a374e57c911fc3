//! What a confined process sees of the filesystem (design §8.3): only
//! what it is granted. Landlock (before ABI 9) does not mediate `connect()`
//! on a socket file, and seccomp cannot see its address, so a command could
//! reach any Unix socket it could name: a D-Bus bus, `docker.sock`, an
//! `ssh-agent`, a tmux server that runs anything unconfined. So in the
//! command's mount namespace the root is a new, small tmpfs holding only
//! the system's directories (read-only), `/etc`, the files of `/etc`'s links
//! that lie elsewhere (`resolv.conf` into `/run`), a `/dev` of the granted
//! devices, a fresh `/proc` (mounted by the init), the workdir, the private
//! `TMPDIR` and the agent's `[sandbox]` paths, each bound at its own path;
//! the rest does not exist there. Landlock stays the second wall: its rules
//! are on the inodes, which the binds keep.
//!
//! [`View`] is made in axe before the fork; `build` and `finish` run
//! between `fork` and `exec` (system calls only, on its buffers). The new
//! root is entered with `pivot_root`, not `chroot`: a chroot leaves the old
//! root mounted in the namespace, and a process that gets out of a chroot
//! (a directory descriptor, `..` from a working directory outside it) is
//! back in it; after `pivot_root` and the old root's detach, there is no
//! path to the rest of the machine left in the namespace. The old root
//! stays mounted (at `OLD`) only until the init has mounted the fresh
//! `/proc`, which the kernel allows only where a full `/proc` is visible.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::init::check;
use super::landlock::{DEVICES, ETC, SYSTEM_READ};

/// Where the old root is while the view is made, in the new root.
const OLD: &std::ffi::CStr = c"/.axe-old-root";

/// A path granted, as the view binds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Where the kernel finds it (no link in it).
    pub path: PathBuf,
    /// Device and inode it must still have (none: not checked).
    pub id: Option<(u64, u64)>,
    pub dir: bool,
    /// Bound read-only (the system's directories); a grant's writes are
    /// Landlock's to decide.
    pub read_only: bool,
}

/// The view, ready for the child.
#[derive(Debug)]
pub struct View {
    /// Where the tmpfs is mounted before it becomes the root (a directory
    /// that exists: the temporary directory), and the old root's place in it.
    base: CString,
    old_in_base: CString,
    /// What is made in the tmpfs, in order.
    made: Vec<Made>,
    binds: Vec<Bind>,
    /// The working directory in the view, and its device and inode.
    cwd: Option<(CString, (u64, u64))>,
}

#[derive(Debug)]
enum Made {
    Dir(CString),
    File(CString),
    /// A symbolic link: its target, then where it is.
    Link(CString, CString),
}

#[derive(Debug)]
struct Bind {
    /// The path under the old root.
    from: CString,
    to: CString,
    id: Option<(u64, u64)>,
    dir: bool,
    read_only: bool,
}

/// The view holding `grants` (the workdir, the temporary directory, the
/// `[sandbox]` paths) beside the system's; `cwd` the working directory,
/// one of them. None when a grant is `/` itself: everything is granted.
pub fn plan(grants: &[Grant], cwd: Option<&Grant>) -> Result<Option<View>, String> {
    let mut all = system();
    all.extend(grants.iter().cloned());
    let Some(layout) = layout(all) else {
        return Ok(None);
    };
    let base = std::env::temp_dir()
        .canonicalize()
        .map_err(|e| format!("the temporary directory: {e}"))?;
    let old = base.join(OLD.to_str().unwrap_or_default().trim_start_matches('/'));
    let mut made = Vec::new();
    for p in &layout.dirs {
        made.push(Made::Dir(cstr(p)?));
    }
    for p in &layout.files {
        made.push(Made::File(cstr(p)?));
    }
    for (target, at) in links() {
        made.push(Made::Link(cstr(&target)?, cstr(&at)?));
    }
    let mut binds = Vec::new();
    for g in &layout.binds {
        let under_old = Path::new(OLD.to_str().unwrap_or_default())
            .join(g.path.strip_prefix("/").unwrap_or(&g.path));
        binds.push(Bind {
            from: cstr(&under_old)?,
            to: cstr(&g.path)?,
            id: g.id,
            dir: g.dir,
            read_only: g.read_only,
        });
    }
    let cwd = match cwd {
        Some(Grant {
            path, id: Some(id), ..
        }) => Some((cstr(path)?, *id)),
        _ => None,
    };
    Ok(Some(View {
        base: cstr(&base)?,
        old_in_base: cstr(&old)?,
        made,
        binds,
        cwd,
    }))
}

/// Where everything of a view goes.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    /// Directories made in the tmpfs, each after its parent.
    dirs: Vec<PathBuf>,
    /// Empty files made there, to bind a file over.
    files: Vec<PathBuf>,
    /// What is bound, each after what it lies in.
    binds: Vec<Grant>,
}

/// The layout of `all`: each path bound at its own place, once (writable
/// when either of two is), unless it lies in one bound already that is at
/// least as writable (it is seen there); what is bound outside every other
/// bind gets its place made, with the directories above it. Nothing under
/// `/proc`. None when `/` itself is among them.
fn layout(mut all: Vec<Grant>) -> Option<Layout> {
    if all.iter().any(|g| g.path == Path::new("/")) {
        return None;
    }
    // The fresh `/proc` goes over whatever would be bound there (`/etc/mtab`
    // leads to axe's own `/proc/<pid>/mounts`).
    all.retain(|g| !g.path.starts_with("/proc"));
    all.sort_by(|a, b| a.path.cmp(&b.path));
    all.dedup_by(|later, kept| {
        let same = later.path == kept.path;
        if same {
            kept.read_only &= later.read_only;
            kept.id = kept.id.or(later.id);
            kept.dir |= later.dir;
        }
        same
    });
    let mut binds: Vec<Grant> = Vec::new();
    let mut dirs: Vec<PathBuf> = vec!["/dev".into(), "/proc".into()];
    let mut files: Vec<PathBuf> = Vec::new();
    for g in all {
        // The innermost bind it lies in: sorted, it is the last.
        let outer = binds.iter().rev().find(|k| g.path.starts_with(&k.path));
        if outer.is_some_and(|k| !k.read_only || g.read_only) {
            continue;
        }
        if outer.is_none() {
            dirs.extend(g.path.ancestors().skip(1).map(Path::to_path_buf));
            if g.dir {
                dirs.push(g.path.clone());
            } else {
                files.push(g.path.clone());
            }
        }
        binds.push(g);
    }
    dirs.retain(|p| p != Path::new("/"));
    dirs.sort();
    dirs.dedup();
    Some(Layout { dirs, files, binds })
}

/// The system's part of every view: its directories (a link among them
/// kept as a link, what it leads to bound), what of `/etc`'s links lies
/// elsewhere, and the granted devices.
fn system() -> Vec<Grant> {
    let ro = |path: PathBuf, dir: bool| Grant {
        path,
        id: None,
        dir,
        read_only: true,
    };
    let mut out = Vec::new();
    for s in SYSTEM_READ.iter().map(Path::new) {
        if s == Path::new("/proc") {
            continue;
        }
        match std::fs::symlink_metadata(s) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Some(real) = s.canonicalize().ok().filter(|r| r.is_dir()) {
                    out.push(ro(real, true));
                }
            }
            Ok(m) if m.is_dir() => out.push(ro(s.to_path_buf(), true)),
            _ => {}
        }
    }
    for e in super::etc::readable().iter() {
        if !e.path.starts_with(ETC) {
            out.push(ro(e.path.clone(), e.dir));
        }
    }
    for d in DEVICES.iter().map(Path::new).filter(|d| d.exists()) {
        out.push(Grant {
            read_only: false,
            ..ro(d.to_path_buf(), false)
        });
    }
    out
}

/// The symbolic links of the view: the system's directories that are links
/// (`/bin -> usr/bin`), as they are, and `/dev`'s own.
fn links() -> Vec<(PathBuf, PathBuf)> {
    let mut out: Vec<(PathBuf, PathBuf)> = SYSTEM_READ
        .iter()
        .map(Path::new)
        .filter_map(|s| std::fs::read_link(s).ok().map(|t| (t, s.to_path_buf())))
        .collect();
    for (target, at) in [
        ("/proc/self/fd", "/dev/fd"),
        ("/proc/self/fd/0", "/dev/stdin"),
        ("/proc/self/fd/1", "/dev/stdout"),
        ("/proc/self/fd/2", "/dev/stderr"),
    ] {
        out.push((target.into(), at.into()));
    }
    out
}

fn cstr(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| format!("{}: a path with a NUL byte", p.display()))
}

/// `OPEN_TREE_CLONE` and the `AT_`/`MOVE_MOUNT_` flags the binds use.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// In the keeper, after its namespaces are made: a tmpfs as the new root,
/// the old one at `OLD`, and everything of the view made and bound in
/// it. Each bind's source is opened with no link followed and must still
/// be the inode the policy opened; its target too is reached with no
/// link (a grant nested in another lies in a directory a command writes).
///
/// # Safety
/// Only system calls on the view's buffers: safe between fork and exec.
pub(super) unsafe fn build(v: &View) -> io::Result<()> {
    // SAFETY: system calls on NUL-terminated strings made before the fork.
    unsafe {
        check(libc::mount(
            c"tmpfs".as_ptr(),
            v.base.as_ptr(),
            c"tmpfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            c"mode=0755".as_ptr().cast(),
        ))?;
        check(libc::mkdir(v.old_in_base.as_ptr(), 0o700))?;
        check(libc::syscall(
            libc::SYS_pivot_root,
            v.base.as_ptr(),
            v.old_in_base.as_ptr(),
        ) as i32)?;
        check(libc::chdir(c"/".as_ptr()))?;
        for m in &v.made {
            match m {
                Made::Dir(p) => {
                    if libc::mkdir(p.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                        return Err(io::Error::last_os_error());
                    }
                }
                Made::File(p) => {
                    let flags = libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC;
                    let fd = libc::open(p.as_ptr(), flags, 0o644);
                    check(fd)?;
                    libc::close(fd);
                }
                Made::Link(target, at) => check(libc::symlink(target.as_ptr(), at.as_ptr()))?,
            }
        }
        for b in &v.binds {
            bind(b)?;
        }
    }
    Ok(())
}

/// In the keeper, once every mount is made: into the working directory,
/// reached in the view with no link and checked to be what was opened; to
/// the view's root when there is none. Never left where it was: that is in
/// the old root, which a working directory would keep reachable.
///
/// # Safety
/// Only system calls: safe between fork and exec.
pub(super) unsafe fn enter_cwd(v: &View) -> io::Result<()> {
    let Some((path, id)) = &v.cwd else {
        // SAFETY: chdir(2) on a constant string.
        return check(unsafe { libc::chdir(c"/".as_ptr()) });
    };
    // SAFETY: system calls on a string made before the fork.
    unsafe {
        let fd = open_beneath(path, true)?;
        let same = same_inode(fd, *id);
        let entered = if same { libc::fchdir(fd) } else { -1 };
        libc::close(fd);
        match (same, entered) {
            (false, _) => Err(io::Error::from_raw_os_error(libc::ESTALE)),
            (true, 0) => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }
}

/// In the init, once the fresh `/proc` is mounted: the old root detached
/// and its place removed, the tmpfs made read-only.
///
/// # Safety
/// Only system calls: safe between fork and exec.
pub(super) unsafe fn finish() -> io::Result<()> {
    // SAFETY: system calls on constant strings and a local attribute.
    unsafe {
        check(libc::umount2(OLD.as_ptr(), libc::MNT_DETACH))?;
        check(libc::rmdir(OLD.as_ptr()))?;
        super::namespace::read_only(libc::AT_FDCWD, c"/", 0)
    }
}

/// Binds `b.from` at `b.to`, with what is mounted beneath it, read-only
/// when it says so.
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn bind(b: &Bind) -> io::Result<()> {
    // SAFETY: system calls on strings made before the fork and on
    // descriptors opened here, each closed before returning.
    unsafe {
        let from = open_beneath(&b.from, b.dir)?;
        if let Some(id) = b.id
            && !same_inode(from, id)
        {
            libc::close(from);
            return Err(io::Error::from_raw_os_error(libc::ESTALE));
        }
        let flags = OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | AT_RECURSIVE;
        let tree = libc::syscall(
            libc::SYS_open_tree,
            from,
            c"".as_ptr(),
            flags | libc::AT_EMPTY_PATH as libc::c_uint,
        ) as i32;
        libc::close(from);
        check(tree)?;
        let mut done = if b.read_only {
            super::namespace::read_only(
                tree,
                c"",
                libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
            )
        } else {
            Ok(())
        };
        if done.is_ok() {
            done = match open_beneath(&b.to, b.dir) {
                Ok(to) => {
                    let r = libc::syscall(
                        libc::SYS_move_mount,
                        tree,
                        c"".as_ptr(),
                        to,
                        c"".as_ptr(),
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
                    ) as i32;
                    let r = check(r);
                    libc::close(to);
                    r
                }
                Err(e) => Err(e),
            };
        }
        libc::close(tree);
        done
    }
}

/// `path` (absolute) opened `O_PATH` with no link followed (`openat2`,
/// `RESOLVE_NO_SYMLINKS`); a directory when `dir`.
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn open_beneath(path: &CString, dir: bool) -> io::Result<i32> {
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let directory = if dir { libc::O_DIRECTORY } else { 0 };
    let how = OpenHow {
        flags: (libc::O_PATH | libc::O_CLOEXEC | directory) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS,
    };
    // SAFETY: openat2(2) with a NUL-terminated path and an `open_how` of
    // the size passed.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &raw const how,
            std::mem::size_of::<OpenHow>(),
        ) as i32
    };
    check(fd)?;
    Ok(fd)
}

/// Whether `fd` is the inode `id` (device, inode).
///
/// # Safety
/// A system call on a descriptor.
unsafe fn same_inode(fd: i32, id: (u64, u64)) -> bool {
    // SAFETY: zeroed `stat` is a valid out-parameter; fstat on a live fd.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0 && (st.st_dev, st.st_ino) == id
    }
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
