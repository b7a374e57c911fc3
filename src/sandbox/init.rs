//! The keeper and the init (design §8.3): `Command::spawn` wants the
//! process it forked to `exec`, and `unshare(CLONE_NEWPID)` moves only the
//! caller's children, so the child axe spawns into its namespaces
//! (`namespace`) splits in three, all before any `exec`:
//!
//! - the *keeper*: the process axe spawned and waits for, outside the PID
//!   namespace. It forks the init, leaves the process group (so that a
//!   signal to the group reaches the init alone), closes every descriptor
//!   and waits; then it ends as the command ended (its exit status, or its
//!   signal), strictly after everything in the namespace is gone.
//! - the *init* (pid 1): mounts `/proc`, forks the command, forwards TERM,
//!   INT and HUP to the command's group (the kernel gives pid 1 no signal
//!   it has no handler for, KILL aside), reaps whatever is orphaned to it,
//!   and when the command ends, hands its status to the keeper and exits:
//!   the kernel then kills everything left in the namespace. It dies with
//!   the keeper (`PR_SET_PDEATHSIG`), as the keeper dies with axe.
//! - the command: returns from [`split`] and goes on to Landlock, the rest
//!   of its confinement and `exec` (`process::confine`).
//!
//! The keeper and the init are copies of axe that never `exec`: not
//! dumpable (`orphans`), so no command can read their memory. All of this
//! runs in a copy of a multi-threaded process: system calls only, no
//! allocation, no lock. The second and third processes are forked with a
//! raw `clone`, not libc's `fork`, which would run the `atfork` handlers
//! and take malloc's locks.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals the init passes on to the command: those axe sends (TERM at
/// the deadline and at a stop) and those a terminal would.
const FORWARDED: [libc::c_int; 3] = [libc::SIGTERM, libc::SIGINT, libc::SIGHUP];

/// In the keeper, after `namespace::enter`: forks the init, which forks
/// the command. Returns only in the command, saying whether `/proc` is the
/// namespace's own; the keeper and the init end with `_exit`. With a
/// `view` (`super::view`), the init finishes it once `/proc` is mounted,
/// and the command fails when either could not be done.
pub(super) fn split(view: bool) -> io::Result<bool> {
    // SAFETY: system calls only (see the module's comment).
    unsafe {
        block_forwarded(libc::SIG_BLOCK);
        let outer = libc::getpgrp();
        check(libc::setpgid(0, 0))?;
        let mut status = [0i32; 2];
        check(libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC))?;
        let init = fork();
        if init < 0 {
            return Err(io::Error::last_os_error());
        }
        if init > 0 {
            libc::close(status[1]);
            keep(init, status[0], outer)
        }
        libc::close(status[0]);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if reader_gone(status[1]) {
            // The keeper died before the line above: nobody is left to end us.
            libc::_exit(1);
        }
        let fresh_proc = libc::mount(
            c"proc".as_ptr(),
            c"/proc".as_ptr(),
            c"proc".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            std::ptr::null(),
        ) == 0;
        let finished = match (view, fresh_proc) {
            (false, _) => Ok(()),
            (true, true) => super::view::finish(),
            // No view without its own `/proc`: the system's shows the
            // machine's processes, and their roots.
            (true, false) => Err(io::Error::last_os_error()),
        };
        for sig in FORWARDED {
            handle(sig, forward as *const () as libc::sighandler_t);
        }
        let command = fork();
        if command < 0 {
            return Err(io::Error::last_os_error());
        }
        if command == 0 {
            for sig in FORWARDED {
                handle(sig, libc::SIG_DFL);
            }
            libc::close(status[1]);
            return finished.map(|()| fresh_proc);
        }
        be_init(command, status[1])
    }
}

/// The keeper's life after the fork: out of the group (a signal to it now
/// reaches the init alone), every descriptor closed but the status pipe,
/// then it waits for the init and ends as the command did.
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn keep(init: libc::pid_t, status: libc::c_int, outer: libc::pid_t) -> ! {
    // SAFETY: system calls on values and local buffers.
    unsafe {
        // Failing, the keeper stays in the group and dies with the init.
        libc::setpgid(0, outer);
        close_all_but(status);
        let mut how = 0;
        while libc::waitpid(init, &mut how, 0) < 0 {
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                libc::_exit(127);
            }
        }
        let mut command = 0i32;
        let n = libc::read(status, (&raw mut command).cast(), 4);
        end_as(if n == 4 { command } else { how })
    }
}

/// The init's life: it forwards signals to `command`'s group, reaps every
/// process orphaned to it, and when `command` ends writes its wait status
/// to the keeper and exits, which ends the namespace.
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn be_init(command: libc::pid_t, status: libc::c_int) -> ! {
    COMMAND.store(command, Ordering::SeqCst);
    // SAFETY: system calls on values and local buffers.
    unsafe {
        block_forwarded(libc::SIG_UNBLOCK);
        close_all_but(status);
        let mut how = 0;
        loop {
            let pid = libc::waitpid(-1, &mut how, 0);
            if pid == command {
                break;
            }
            if pid < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD) {
                how = 127 << 8;
                break;
            }
        }
        libc::write(status, (&raw const how).cast(), 4);
        libc::_exit(0)
    }
}

/// The command's pid, in the init.
static COMMAND: AtomicI32 = AtomicI32::new(0);

/// The init's handler: the signal goes on to the command's group, or to
/// the command alone while it has not made that group yet.
extern "C" fn forward(sig: libc::c_int) {
    let command = COMMAND.load(Ordering::SeqCst);
    if command > 0 {
        // SAFETY: kill(2) is async-signal-safe.
        unsafe {
            if libc::kill(-command, sig) != 0 {
                libc::kill(command, sig);
            }
        }
    }
}

/// Ends the keeper as `how` (a wait status) says: the same exit status, or
/// killed by the same signal.
///
/// # Safety
/// Only system calls: safe between fork and exec.
unsafe fn end_as(how: libc::c_int) -> ! {
    // SAFETY: system calls on values.
    unsafe {
        if libc::WIFEXITED(how) {
            libc::_exit(libc::WEXITSTATUS(how));
        }
        if libc::WIFSIGNALED(how) {
            let sig = libc::WTERMSIG(how);
            handle(sig, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(127)
    }
}

/// A fork by the raw system call: no `atfork` handlers, no locks taken.
///
/// # Safety
/// The child may make system calls only.
unsafe fn fork() -> libc::pid_t {
    // SAFETY: clone(2) with SIGCHLD and no other flag is fork(2); the null
    // stack makes the child go on from here on a copy of this one.
    unsafe {
        libc::syscall(
            libc::SYS_clone,
            libc::SIGCHLD as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        ) as libc::pid_t
    }
}

/// Whether the read end of a pipe whose write end is `fd` is closed
/// everywhere (poll says POLLERR).
///
/// # Safety
/// A system call on a value.
unsafe fn reader_gone(fd: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack, no waiting.
    unsafe { libc::poll(&mut p, 1, 0) == 1 && p.revents & libc::POLLERR != 0 }
}

/// Closes every descriptor but `keep` (`close_range`, Linux 5.9).
///
/// # Safety
/// Only system calls; `keep` must not be needed closed.
unsafe fn close_all_but(keep: libc::c_int) {
    let keep = keep.unsigned_abs();
    // SAFETY: close_range(2) on ranges of descriptor numbers.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, keep - 1, 0u32);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, u32::MAX, 0u32);
    }
}

/// Sets `sig`'s disposition to `action` (a handler, or SIG_DFL).
///
/// # Safety
/// A system call on a local value.
unsafe fn handle(sig: libc::c_int, action: libc::sighandler_t) {
    // SAFETY: sigaction(2) with a zeroed, then filled, local struct.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = action;
        act.sa_flags = libc::SA_RESTART;
        libc::sigaction(sig, &act, std::ptr::null_mut());
    }
}

/// Blocks or unblocks the forwarded signals in this thread.
///
/// # Safety
/// System calls on a local set.
unsafe fn block_forwarded(how: libc::c_int) {
    // SAFETY: a local sigset_t, filled by sigemptyset/sigaddset.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED {
            libc::sigaddset(&mut set, sig);
        }
        libc::sigprocmask(how, &set, std::ptr::null_mut());
    }
}

/// A system call's result as a `Result`.
pub(super) fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
