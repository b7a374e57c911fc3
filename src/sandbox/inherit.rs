//! What a process axe starts inherits from it (issue 31): nothing of axe's
//! own signal handling and no descriptor but stdin, stdout and stderr. axe
//! blocks SIGINT, SIGTERM and SIGHUP in every thread for its signal thread
//! (`crate::io::interrupt`) and the Rust runtime ignores SIGPIPE; a mask and
//! ignored signals survive `exec`, so a child would sit out a stop's TERM
//! until its KILL, and one left behind would ignore `kill`. A descriptor axe
//! was started with and that is not close-on-exec (a key file on fd 7)
//! would pass into the sandbox, where Landlock never sees it opened.
//!
//! The soft limit on open files is given back too where `axe serve` raised
//! it for its connections ([`raised_fd_limit`]): a program written for the
//! usual 1,024 (`select`'s `FD_SETSIZE`) misbehaves with descriptors above.
//!
//! Every process axe spawns gets `reset` between `fork` and `exec`:
//! commands and sandboxed MCP servers through `Confinement::apply`, others
//! (an MCP server outside the sandbox, the editor) through [`clean`].

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The soft limit on open files axe started with, once it has raised it;
/// 0 while it has not.
static STARTED_FD_LIMIT: AtomicU64 = AtomicU64::new(0);

/// Says that axe raised its soft limit on open files from `soft`, which
/// every process it starts from now on gets back.
pub fn raised_fd_limit(soft: u64) {
    STARTED_FD_LIMIT.store(soft, Ordering::Relaxed);
}

/// Makes `cmd` start with an empty signal mask, every signal at its
/// default action, and no descriptor but 0, 1 and 2.
pub fn clean(cmd: &mut Command) {
    // SAFETY: `reset` makes only async-signal-safe system calls on values
    // on its stack: no allocation, no lock.
    unsafe {
        cmd.pre_exec(reset);
    }
}

/// In the child: the mask emptied, each signal's action set to the
/// default (handlers would be at `exec`; ignored ones would not), and
/// every descriptor above 2 marked close-on-exec. Close-on-exec rather than
/// closed: the pipe on which std reports a failed `exec` must stay open
/// until then (it is close-on-exec already).
pub(super) fn reset() -> io::Result<()> {
    // SAFETY: sigemptyset and pthread_sigmask on a set on this stack.
    unsafe {
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        let r = libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
    }
    // The kernel's rt_sigaction itself: glibc's refuses 32 and 33, which it
    // keeps for its threads, and a parent may have left those ignored too.
    // All zeros is SIG_DFL, no flags, an empty mask, whatever the
    // architecture's layout of `struct sigaction`.
    let default = [0u64; 4];
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: the kernel reads the action from `default`, alive for the
        // call; the old one is not asked for; 8 is the kernel's sigset size.
        unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                default.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8usize,
            );
        }
    }
    close_from(3)?;
    // After `close_from`, whose fallback goes up to the limit in force.
    restore_fd_limit();
    Ok(())
}

/// In the child: the soft limit on open files axe started with, if it
/// raised it. An atomic load and two system calls: async-signal-safe.
fn restore_fd_limit() {
    let soft = STARTED_FD_LIMIT.load(Ordering::Relaxed);
    if soft == 0 {
        return;
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a struct on this stack.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            limit.rlim_cur = soft.min(limit.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        }
    }
}

/// Marks every descriptor from `first` up close-on-exec: `close_range(2)`
/// (Linux 5.11), else one `fcntl` per possible descriptor.
fn close_from(first: u32) -> io::Result<()> {
    // SAFETY: close_range with a flag; no memory is passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct on this stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let last = limit.rlim_cur.min(1 << 20) as i32;
    for fd in first as i32..last {
        // SAFETY: fcntl on a number; EBADF for one not open is fine.
        unsafe {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(())
}
