//! The namespaces a confined process runs in (design §8.3, §8.6): a user
//! namespace, so that no privilege is needed; a mount namespace, whose root
//! holds only what the process is granted (`view`), where what protects the
//! user (`protected`) is bound read-only and a fresh `/proc` shows only the
//! namespace's processes; and a PID namespace, so that
//! nothing the command starts outlives it (`init`: the process axe
//! spawns splits in three there). Where they may be had, and what a policy
//! gets where they may not.
//!
//! `enter` and `grant_proc` run between `fork` and `exec` in a copy of
//! a multi-threaded process: system calls only, no allocation, no lock;
//! every buffer is made before the fork ([`Plan`]).

use std::ffi::CString;
use std::io;
use std::path::PathBuf;
use std::sync::OnceLock;

use super::init::check;

/// `mount_setattr(2)`'s attribute (`struct mount_attr`).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `landlock_add_rule(2)`'s path rule (`struct landlock_path_beneath_attr`,
/// packed).
#[repr(C, packed)]
struct PathBeneath {
    allowed_access: u64,
    parent_fd: i32,
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const LANDLOCK_RULE_PATH_BENEATH: libc::c_int = 1;

/// Everything the child needs, made before the fork.
#[derive(Debug)]
pub struct Plan {
    /// `/proc/self/uid_map` and `gid_map`: axe's own ids, the same inside.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Bound read-only over themselves.
    read_only: Vec<CString>,
    /// The root the process sees; none: the machine's (`[sandbox] read`
    /// granting `/`).
    pub(super) view: Option<super::view::View>,
    /// Landlock's read rights for the fresh `/proc`, and the right to list
    /// a directory, when the command runs under Landlock (0: it does not).
    proc_rights: u64,
    list_rights: u64,
    /// A network namespace of its own too (the network off): no interface
    /// but a loopback that is down, no abstract socket and no `/proc/net`
    /// of the machine's, whatever the seccomp filter lets through.
    pub(super) own_network: bool,
}

impl Plan {
    /// A plan binding `read_only` read-only in `view`; `landlock_abi` 0
    /// when the command runs without Landlock.
    pub fn new(read_only: &[PathBuf], view: Option<super::view::View>, landlock_abi: i32) -> Plan {
        use std::os::unix::ffi::OsStrExt;
        // SAFETY: getters without arguments.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let (proc_rights, list_rights) = if landlock_abi > 0 {
            let read = landlock::AccessFs::from_read(landlock::ABI::from(landlock_abi));
            (
                read.bits(),
                landlock::BitFlags::from(landlock::AccessFs::ReadDir).bits(),
            )
        } else {
            (0, 0)
        };
        Plan {
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            read_only: read_only
                .iter()
                .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
                .collect(),
            view,
            proc_rights,
            list_rights,
            own_network: false,
        }
    }
}

/// The plan for a process confined by `policy`: under Landlock, namespaces
/// wherever the kernel allows them, with the protected paths beneath its
/// writable directories bound read-only unless the policy does not
/// protect. Where the kernel does not allow them, none (the orphan sweep is
/// then all there is, `orphans`), unless the policy protects: then an
/// error (design §8.6). With the sandbox off, none: such a command sees
/// and signals the machine's processes as the user does, and the sweep
/// alone ends what it leaves.
pub fn plan(policy: &super::Policy, tmp: &super::Opened) -> Result<Option<Plan>, String> {
    let super::Mode::Landlock(abi) = policy.mode else {
        return Ok(None);
    };
    if let Err(why) = available() {
        return if protects(policy) {
            Err(refusal(&why))
        } else {
            Ok(None)
        };
    }
    let read_only = if protects(policy) {
        let also: Vec<PathBuf> = crate::paths::config_dir().into_iter().collect();
        super::protected::paths(&writable(policy), &also)
    } else {
        Vec::new()
    };
    // `[sandbox] read` paths are bound read-only: a second wall beside
    // Landlock's (a write path beneath one is bound again, writable).
    let grant = |o: &super::Opened, read_only| {
        Some(super::view::Grant {
            path: o.real_path()?,
            id: o.id(),
            dir: o.is_dir(),
            read_only,
        })
    };
    // A command never starts outside its view: without the workdir in it,
    // it does not start.
    let workdir = grant(&policy.workdir, false).ok_or_else(|| {
        format!(
            "the workdir {}: where it lies now cannot be found (removed since, or no /proc)",
            policy.workdir.path().display()
        )
    })?;
    let mut grants = vec![workdir.clone()];
    grants.extend(grant(tmp, false));
    grants.extend(policy.write.iter().filter_map(|o| grant(o, false)));
    grants.extend(policy.read.iter().filter_map(|o| grant(o, true)));
    let view = super::view::plan(&grants, Some(&workdir))?;
    let mut plan = Plan::new(&read_only, view, abi);
    plan.own_network = !policy.network;
    Ok(Some(plan))
}

/// The directories `policy` lets a command write, its temporary one aside,
/// where the kernel finds what was opened now.
pub fn writable(policy: &super::Policy) -> Vec<PathBuf> {
    std::iter::once(&policy.workdir)
        .chain(&policy.write)
        .filter_map(super::Opened::real_path)
        .collect()
}

/// Whether `policy`'s commands run with what protects the user read-only.
pub fn protects(policy: &super::Policy) -> bool {
    matches!(policy.mode, super::Mode::Landlock(abi) if abi > 0) && policy.protect
}

/// Fails, saying why and what to do, when `policy` protects and the kernel
/// cannot: for a check before a run sends anything.
pub fn required(policy: &super::Policy) -> Result<(), String> {
    match available() {
        Err(why) if protects(policy) => Err(refusal(&why)),
        _ => Ok(()),
    }
}

fn refusal(why: &str) -> String {
    format!(
        "commands cannot be kept from writing .git, axe/, .claude/ and .codex/, nor held to a \
         view of the filesystem holding only what they are granted, here: {why}; to \
         run them without that protection, set [sandbox] protect = false in the agent file \
         (for a sandboxed MCP server, protect = false in its [mcp_servers.sandbox] table)"
    )
}

/// Whether the kernel lets axe make these namespaces here, asked once by
/// running `sh -c :` in them, in a view of the system's directories
/// (`view`) with a directory bound read-only; the reason
/// when it does not (no user namespaces, a limit of 0, a container's
/// policy).
pub fn available() -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    // The temporary directory in the view, bound read-only over itself.
    let tmp = std::env::temp_dir()
        .canonicalize()
        .map_err(|e| format!("the temporary directory: {e}"))?;
    let grant = super::view::Grant {
        path: tmp.clone(),
        id: None,
        dir: true,
        read_only: false,
    };
    let view = super::view::plan(&[grant], None)?;
    let plan = Plan::new(&[tmp], view, 0);
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.args(["-c", ":"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // SAFETY: the closure makes only system calls on buffers made before
    // the fork (see the module's comment).
    unsafe {
        cmd.pre_exec(move || {
            enter(&plan)?;
            super::init::split(plan.view.is_some()).map(|_| ())
        });
    }
    match cmd.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("a process in them ended with {s}")),
        Err(e) => Err(match e.raw_os_error() {
            Some(libc::ENOSPC) => {
                "user namespaces are turned off (user.max_user_namespaces)".into()
            }
            Some(libc::EPERM | libc::EACCES) => {
                format!("making a user namespace or mounting in it is not permitted ({e})")
            }
            _ => format!("cannot make a user namespace or mount in it ({e})"),
        }),
    }
}

/// In the keeper, first: its own user, mount and PID namespaces (the last
/// for its children), its ids mapped to themselves, then the view as its
/// root (`view`), then each protected path bound read-only in it (a path
/// gone since the plan was made is passed over), then into the workdir as
/// the view has it.
pub(super) fn enter(plan: &Plan) -> io::Result<()> {
    // SAFETY: system calls on buffers made before the fork.
    unsafe {
        let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID;
        // The network namespace is a wall beside the seccomp filter, not
        // the wall: a kernel that will not make one (built without it)
        // leaves the command with the filter alone.
        if !plan.own_network || libc::unshare(flags | libc::CLONE_NEWNET) != 0 {
            check(libc::unshare(flags))?;
        }
        // axe is not dumpable (`orphans`), so its `/proc/self` files
        // belong to root: this process may write its maps only while it
        // is. Not dumpable again at once: the init, forked from it, holds
        // a copy of axe's memory.
        libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
        let mapped = write_all(c"/proc/self/setgroups", b"deny")
            .and_then(|()| write_all(c"/proc/self/uid_map", &plan.uid_map))
            .and_then(|()| write_all(c"/proc/self/gid_map", &plan.gid_map));
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        mapped?;
        // No mount made here shows outside: the kernel copies shared mounts
        // into a mount namespace owned by a new user namespace as slaves,
        // so nothing needs remounting first.
        if let Some(view) = &plan.view {
            super::view::build(view)?;
        }
        for path in &plan.read_only {
            bind_read_only(path)?;
        }
        if let Some(view) = &plan.view {
            super::view::enter_cwd(view)?;
        }
    }
    Ok(())
}

/// Binds `path` over itself, with what is mounted beneath it, and makes
/// the new mount read-only (`mount_setattr`, Linux 5.12, which every kernel
/// with Landlock has).
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn bind_read_only(path: &CString) -> io::Result<()> {
    // SAFETY: mount(2) on a NUL-terminated path made before the fork.
    let bound = unsafe {
        libc::mount(
            path.as_ptr(),
            path.as_ptr(),
            std::ptr::null(),
            libc::MS_BIND | libc::MS_REC,
            std::ptr::null(),
        )
    };
    if bound != 0 {
        let err = io::Error::last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOENT) => Ok(()),
            _ => Err(err),
        };
    }
    // SAFETY: a path made before the fork.
    unsafe { read_only(libc::AT_FDCWD, path, AT_RECURSIVE) }
}

/// Makes the mount at `path` beneath `dir` read-only (`mount_setattr`,
/// Linux 5.12, which every kernel with Landlock has): with `flags`
/// `AT_RECURSIVE`, with what is mounted beneath it.
///
/// # Safety
/// Only system calls: safe between fork and exec.
pub(super) unsafe fn read_only(
    dir: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_uint,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: mount_setattr(2) with an attribute of the size passed.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dir,
            path.as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        ) as libc::c_int
    })
}

/// In the command, once its namespaces are made: lets Landlock's
/// `ruleset` (built outside, on the machine's inodes) read the fresh
/// `/proc` when there is one, and list the view's directories (its root is
/// a new file system: nothing else of it is granted, and what is bound in
/// it keeps its own rules).
pub(super) fn grant_fresh(plan: &Plan, ruleset: i32, fresh_proc: bool) -> io::Result<()> {
    if fresh_proc {
        add_rule(ruleset, c"/proc", plan.proc_rights)?;
    }
    if plan.view.is_some() {
        add_rule(ruleset, c"/", plan.list_rights)?;
    }
    Ok(())
}

/// Grants `rights` beneath `path` in `ruleset`.
fn add_rule(ruleset: i32, path: &std::ffi::CStr, rights: u64) -> io::Result<()> {
    // SAFETY: open, landlock_add_rule and close on values and a packed
    // attribute of the size the kernel expects.
    unsafe {
        let fd = libc::open(
            path.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        check(fd)?;
        let attr = PathBeneath {
            allowed_access: rights,
            parent_fd: fd,
        };
        let r = libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset,
            LANDLOCK_RULE_PATH_BENEATH,
            &raw const attr,
            0u32,
        );
        libc::close(fd);
        check(r as libc::c_int)
    }
}

/// Writes `data` to the file at `path` in one `write`, as the `/proc`
/// files of a user namespace want.
///
/// # Safety
/// Only system calls on buffers made before the fork.
unsafe fn write_all(path: &std::ffi::CStr, data: &[u8]) -> io::Result<()> {
    // SAFETY: open, write and close on a NUL-terminated path and a live
    // buffer of the length passed.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd)?;
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = io::Error::last_os_error();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}
