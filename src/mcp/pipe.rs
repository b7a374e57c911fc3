//! A stdio server's input as axe writes it (design §9.2, issue 31): one
//! writer at a time, each waiting for its turn and for room in the pipe no
//! later than its own deadline. The lock is held only to take and give back
//! the turn, never across a write or a wait, so a server that stops reading
//! holds no caller past its deadline and never holds up its stop. What axe
//! sends unasked (a reply to the server's request, a cancel past the
//! deadline) is written at once, whole, or dropped: it never waits.

use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStdin;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use super::rpc::Failure;

/// The server's stdin (non-blocking) and whose turn it is to write.
pub(super) struct Pipe {
    state: Mutex<State>,
    free: Condvar,
}

struct State {
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    /// A writer has the turn (and may be using the descriptor).
    busy: bool,
    /// Closed while a writer had the turn: closed when it gives it back.
    closing: bool,
    /// Writers waiting for the turn: giving it back wakes one only when
    /// one waits (the condvar's notify is a system call even when none
    /// does, one per line written).
    queued: usize,
}

impl Pipe {
    /// `stdin`, made non-blocking.
    pub(super) fn new(stdin: ChildStdin) -> Pipe {
        // SAFETY: a flag on a descriptor this process owns.
        unsafe {
            let fd = stdin.as_raw_fd();
            let flags = libc::fcntl(fd, libc::F_GETFL);
            libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Pipe {
            state: Mutex::new(State {
                stdin: Some(stdin),
                busy: false,
                closing: false,
                queued: 0,
            }),
            free: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes `line` and a newline, waiting for the turn and for room until
    /// `deadline`. A line cut by the deadline leaves the stream unusable: it
    /// is closed.
    pub(super) fn send(&self, line: &str, deadline: Instant) -> Result<(), Failure> {
        let fd = {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut s = self.lock();
            if s.busy {
                s.queued += 1;
                s = self
                    .free
                    .wait_timeout_while(s, left, |s| s.busy)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
                s.queued -= 1;
            }
            if s.busy {
                return Err(Failure::Timeout);
            }
            let Some(fd) = s.stdin.as_ref().map(AsRawFd::as_raw_fd) else {
                return Err(Failure::Broken("the server's input is closed".into()));
            };
            s.busy = true;
            fd
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let (written, result) = write_until(fd, &bytes, deadline);
        let cut = written > 0 && written < bytes.len();
        self.give_back(cut || matches!(result, Err(Failure::Broken(_))));
        result
    }

    /// Writes `line` and a newline now, whole, or not at all: false when the
    /// pipe is closed, another writer has the turn, there is no room for it
    /// (the server is not reading), or it is longer than the kernel writes
    /// whole (`PIPE_BUF`). Never waits.
    pub(super) fn send_now(&self, line: &str) -> bool {
        if line.len() >= libc::PIPE_BUF {
            return false;
        }
        let fd = {
            let mut s = self.lock();
            let Some(fd) = s.stdin.as_ref().map(AsRawFd::as_raw_fd) else {
                return false;
            };
            if s.busy {
                return false;
            }
            s.busy = true;
            fd
        };
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        // SAFETY: writing a live buffer to the descriptor this turn holds.
        // At most PIPE_BUF bytes: the kernel writes them all or none.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        let whole = usize::try_from(n).is_ok_and(|n| n == bytes.len());
        self.give_back(false);
        whole
    }

    /// Ends the turn; the pipe closed when `close` or a stop asked for it.
    fn give_back(&self, close: bool) {
        let mut s = self.lock();
        s.busy = false;
        if close || s.closing {
            s.stdin = None;
        }
        let waiting = s.queued > 0;
        drop(s);
        if waiting {
            self.free.notify_one();
        }
    }

    /// Closes the pipe without waiting for anyone: at once when no writer
    /// has the turn, else when it gives the turn back. True when the server
    /// is not reading its input (what axe wrote is still in the pipe, or a
    /// writer waits for room), so that closing it tells the server nothing.
    pub(super) fn close(&self) -> bool {
        let mut s = self.lock();
        s.closing = true;
        let unread = s.busy || s.stdin.as_ref().is_some_and(|i| unread(i.as_raw_fd()) > 0);
        if !s.busy {
            s.stdin = None;
        }
        drop(s);
        self.free.notify_all();
        unread
    }
}

/// How many bytes written to the pipe `fd` are still unread.
fn unread(fd: RawFd) -> libc::c_int {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD stores one int; a pipe answers it on either end.
    let ok = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) } == 0;
    if ok { n } else { 0 }
}

/// Writes `bytes` to the non-blocking `fd`, waiting for room with `poll`
/// until `deadline`: how many were written, and how it ended.
fn write_until(fd: RawFd, bytes: &[u8], deadline: Instant) -> (usize, Result<(), Failure>) {
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        // SAFETY: writing a live buffer to a descriptor the caller's turn holds.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n > 0 {
            at += n.unsigned_abs();
            continue;
        }
        let err = std::io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EAGAIN) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return (at, Err(Failure::Timeout));
                }
                let mut pfd = libc::pollfd {
                    fd,
                    events: libc::POLLOUT,
                    revents: 0,
                };
                let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
                // SAFETY: one pollfd on the stack.
                unsafe { libc::poll(&mut pfd, 1, ms) };
            }
            _ => {
                let why = format!("cannot write to the server (it exited?): {err}");
                return (at, Err(Failure::Broken(why)));
            }
        }
    }
    (at, Ok(()))
}
