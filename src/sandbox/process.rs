//! A command run as `sh -c` under the sandbox (design §8.3):
//! its namespaces (`namespace`), a new session and process group,
//! `no_new_privs`, no capabilities, no core dumps, killed with its parent,
//! the Landlock ruleset applied between `fork` and `exec`;
//! a reduced environment; stdout and stderr captured together into one
//! bounded buffer (its head and tail kept); the deadline stops the whole
//! group (TERM, then KILL after a grace); whatever the command left running
//! in its group is killed when it returns.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a command has between TERM and KILL at the deadline.
pub const GRACE: Duration = Duration::from_millis(500);

/// How often a command with a cancel flag has it checked: a cancelled
/// run's command gets its TERM at most this late (design §12.3).
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What to run.
#[derive(Debug)]
pub struct Spec<'a> {
    pub script: &'a str,
    /// The whole environment the command gets.
    pub env: Vec<(OsString, OsString)>,
    /// What confines it, and where it runs (the workdir).
    pub confinement: &'a super::Confinement,
    pub deadline: Instant,
    /// Stops the command as the deadline would, when set (checked at least
    /// every [`CANCEL_POLL`]).
    pub cancel: Option<&'a crate::deadline::Cancel>,
    /// Bytes of output kept: half from the start, half from the end.
    pub max_output: usize,
}

/// How it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    /// The deadline came first; the group was stopped.
    TimedOut,
}

#[derive(Debug)]
pub struct Finished {
    pub exit: Exit,
    /// stdout and stderr as they were interleaved, cut in the middle with a
    /// marker when longer than the limit.
    pub output: String,
    /// Every byte the command wrote, kept or not.
    pub bytes: u64,
    pub duration: Duration,
}

/// Runs `spec`. An error means it could not be started.
pub fn run(spec: &Spec) -> io::Result<Finished> {
    let started = Instant::now();
    let (read_end, write_end) = pipe()?;
    let err_end = write_end.try_clone()?;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(spec.script)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::from(err_end));
    spec.confinement.apply(&mut cmd);
    let mut child = cmd.spawn()?;
    // The write ends are the child's now: drop ours, or EOF never comes.
    drop(cmd);
    let group = i32::try_from(child.id()).unwrap_or(0);
    let mut out = Capture::new(spec.max_output);
    let exit = watch(&mut child, group, read_end, spec, &mut out);
    // Whatever the command left in its group goes with it.
    kill_group(group, libc::SIGKILL);
    let exit = match exit {
        Some(e) => e,
        None => status(child.wait()),
    };
    Ok(Finished {
        exit,
        bytes: out.total,
        output: out.text(),
        duration: started.elapsed(),
    })
}

/// In the child, in this order: into the workdir `cwd` (a descriptor: the
/// directory opened when the agent was resolved, whatever its name leads
/// to by now); no core dump and killed if axe dies; then the namespaces,
/// the view of the filesystem and the read-only mounts, when there are any
/// (they need the privileges the steps after take away; the child splits
/// there and only the command's process returns, `init`, in the workdir
/// as the view has it); then a session of its own,
/// no capability, no privileges to gain; then Landlock, which forbids any
/// later mount. What comes last of all, just before `exec`, goes at the
/// end of this function.
pub(super) fn confine(
    cwd: Option<i32>,
    ruleset: Option<i32>,
    ns: Option<&super::namespace::Plan>,
) -> io::Result<()> {
    // SAFETY: plain system calls on values, async-signal-safe.
    unsafe {
        if let Some(fd) = cwd
            && libc::fchdir(fd) != 0
        {
            return Err(io::Error::last_os_error());
        }
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
    let fresh_proc = match ns {
        Some(plan) => {
            super::namespace::enter(plan)?;
            super::init::split(plan.view.is_some())?
        }
        None => false,
    };
    // SAFETY: plain system calls on values, async-signal-safe.
    unsafe {
        if libc::setsid() < 0 {
            return Err(io::Error::last_os_error());
        }
        // Run as root, a command would keep every capability (ptrace, raw
        // sockets, mounts...): with the bounding set empty, `exec` leaves
        // it none. Without CAP_SETPCAP (not root, no user namespace) there
        // is nothing to drop.
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    if let Some(fd) = ruleset {
        if let Some(plan) = ns {
            super::namespace::grant_fresh(plan, fd, fresh_proc)?;
        }
        // SAFETY: a system call on a descriptor number.
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Reads output until the child exits or the deadline passes or the run is
/// cancelled (then TERM, a grace, KILL). `Some` when it decided the exit
/// itself.
fn watch(
    child: &mut std::process::Child,
    group: i32,
    read_end: OwnedFd,
    spec: &Spec,
    out: &mut Capture,
) -> Option<Exit> {
    let deadline = spec.deadline;
    let cancelled = || spec.cancel.is_some_and(crate::deadline::Cancel::is_set);
    let exited = pidfd(group);
    let mut pipe = Some(std::fs::File::from(read_end));
    let mut stop_at: Option<Instant> = None;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            if let Some(p) = pipe.as_mut() {
                drain(p, &mut buf, out);
            }
            return Some(if stop_at.is_some() {
                Exit::TimedOut
            } else {
                status(Ok(s))
            });
        }
        let now = Instant::now();
        match stop_at {
            None if now >= deadline || cancelled() => {
                kill_group(group, libc::SIGTERM);
                stop_at = Some(now + GRACE);
            }
            Some(kill) if now >= kill => {
                kill_group(group, libc::SIGKILL);
                let _ = child.wait();
                return Some(Exit::TimedOut);
            }
            _ => {}
        }
        let until = stop_at.unwrap_or(deadline);
        let most = match (exited.is_some(), spec.cancel.is_some()) {
            (false, _) => Duration::from_millis(10),
            (true, true) => CANCEL_POLL,
            (true, false) => Duration::from_millis(1000),
        };
        let wait = until.saturating_duration_since(now).min(most);
        let fds = [
            pipe.as_ref().map(AsRawFd::as_raw_fd),
            exited.as_ref().map(AsRawFd::as_raw_fd),
        ];
        if poll(&fds, wait)
            && let Some(p) = pipe.as_mut()
        {
            match p.read(&mut buf) {
                Ok(0) => pipe = None,
                Ok(n) => out.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => pipe = None,
            }
        }
    }
}

/// Reads what is already in the pipe, without waiting for more (a
/// grandchild may hold it open).
fn drain(p: &mut std::fs::File, buf: &mut [u8], out: &mut Capture) {
    loop {
        match p.read(buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => out.push(&buf[..n]),
        }
    }
}

fn status(s: io::Result<std::process::ExitStatus>) -> Exit {
    match s {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            _ => Exit::Code(-1),
        },
        Err(_) => Exit::Code(-1),
    }
}

fn kill_group(group: i32, signal: i32) {
    if group > 0 {
        // SAFETY: a signal to a process group; failure (gone) is fine.
        unsafe {
            libc::kill(-group, signal);
        }
    }
}

/// A descriptor that becomes readable when `pid` exits (Linux 5.3+).
fn pidfd(pid: i32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open with no flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) };
    // SAFETY: a new descriptor owned by nobody else.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Waits until one of `fds` is readable (or closed) or `wait` passes.
fn poll(fds: &[Option<i32>], wait: Duration) -> bool {
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .flatten()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = i32::try_from(wait.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: a valid array of pollfd of the length passed.
    let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, ms) };
    n > 0 && polled.first().is_some_and(|p| p.revents != 0)
}

/// A pipe: the read end non-blocking, both ends close-on-exec.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: a valid two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: two new descriptors owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a valid descriptor.
    unsafe {
        let flags = libc::fcntl(r.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(r.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
    Ok((r, w))
}

/// Output kept within a limit: the first half and the last half.
struct Capture {
    half: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    fn new(max: usize) -> Capture {
        Capture {
            half: max / 2,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.total = self.total.saturating_add(data.len() as u64);
        let room = self.half.saturating_sub(self.head.len());
        let (to_head, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(to_head);
        let keep = rest.len().min(self.half);
        let rest = &rest[rest.len() - keep..];
        let overflow = (self.tail.len() + rest.len()).saturating_sub(self.half);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(rest);
    }

    fn text(self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let mut bytes = self.head;
        if self.total > kept {
            let cut = self.total - kept;
            bytes.extend_from_slice(format!("\n[... {cut} bytes of output cut ...]\n").as_bytes());
        }
        bytes.extend(self.tail);
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capture_keeps_the_head_and_the_tail() {
        let mut c = Capture::new(10);
        c.push(b"0123456789");
        c.push(b"abcdefghij");
        assert_eq!(c.total, 20);
        assert_eq!(c.text(), "01234\n[... 10 bytes of output cut ...]\nfghij");
        let mut c = Capture::new(100);
        c.push(b"short");
        assert_eq!(c.text(), "short");
    }
}
