//! SIGINT, SIGTERM and SIGHUP. An interrupted command ends the way a failed
//! one does, not in the middle of something: the progress view is erased,
//! the trace gets its `run_end` lines, every process the run started is
//! killed, temporary files being written are removed, one line `axe: interrupted` (`terminated`, `hung up`) is
//! printed, and the exit status is 130, 143 or 129 (`Code::Interrupted`,
//! `Terminated`, `HungUp`), as shells report them.
//!
//! The signals are blocked in every thread and taken by one thread that
//! waits for them (`sigwait`), so the cleanup runs as ordinary code, not in
//! a signal handler. A signal the process was started with ignored (a
//! background job's SIGINT, `nohup`) stays ignored.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

#[cfg(unix)]
use crate::error::Code;

/// What to do when a signal arrives, before the process exits: each
/// registered action gets the signal's description (`interrupted`).
type Action = Box<dyn Fn(&str) + Send + Sync>;

static ACTIONS: Mutex<Vec<(u64, Action)>> = Mutex::new(Vec::new());
/// `axe serve`'s: taken by the first signal instead of ending the process
/// (a second one ends it as usual).
static FIRST: Mutex<Option<Action>> = Mutex::new(None);
/// `axe serve`'s: taken by SIGHUP while the first signal has not come
/// (the agents read again, design §12.2), instead of ending the process.
static HANGUP: Mutex<Option<Action>> = Mutex::new(None);
static TEMP_FILES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());
/// What kills the processes the run started and what they left
/// (`sandbox::orphans::sweep_all`), handed in by the sandbox before it
/// starts the first one ([`sweep_on_end`]): `io` sits below the sandbox, so
/// it does not call it by name.
static SWEEP: OnceLock<fn()> = OnceLock::new();
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// Set once a signal is being handled: the process is ending with it.
static ENDING: AtomicBool = AtomicBool::new(false);
/// The exit status of the signal being handled, set before [`ENDING`].
static STATUS: AtomicU8 = AtomicU8::new(0);

/// The exit status the process is ending with, once a signal is being
/// handled (the run log records it, design §7.7).
pub fn ending_status() -> Option<u8> {
    ENDING
        .load(Ordering::SeqCst)
        .then(|| STATUS.load(Ordering::SeqCst))
}

/// When a signal is being handled, waits for its handler to end the process
/// (with the signal's exit status) instead of going on: an answer that
/// finished while the run was being stopped (a tool call failed by the
/// cleanup, say) is not printed, and the exit status stays the signal's.
pub fn wait_if_ending() {
    if ENDING.load(Ordering::SeqCst) {
        loop {
            std::thread::park();
        }
    }
}

/// Has `sweep` run when a signal ends the process, after the registered
/// actions and before the temporary files are removed; the first one
/// handed in is kept.
pub fn sweep_on_end(sweep: fn()) {
    let _ = SWEEP.set(sweep);
}

/// Removes its action when dropped.
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        ACTIONS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.0);
    }
}

/// Runs `action` if a signal ends the process while the returned guard lives.
pub fn on_signal(action: impl Fn(&str) + Send + Sync + 'static) -> Registered {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    ACTIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((id, Box::new(action)));
    Registered(id)
}

/// Runs `action` on the first signal instead of ending the process: a
/// server's graceful stop (design §12.3). A second signal ends the process
/// as any signal does.
pub fn on_first_signal(action: impl Fn(&str) + Send + Sync + 'static) {
    *FIRST.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(action));
}

/// Runs `action` on SIGHUP, and goes on, for as long as the first signal
/// has not come (see [`on_first_signal`]): a server's reload. Once it is
/// stopping, SIGHUP ends it as any second signal does.
pub fn on_hangup(action: impl Fn(&str) + Send + Sync + 'static) {
    *HANGUP.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(action));
}

/// Whether SIGHUP was taken by [`on_hangup`]'s action (which has run).
fn hung_up() -> bool {
    let serving = FIRST
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some();
    let hangup = HANGUP.lock().unwrap_or_else(PoisonError::into_inner);
    match hangup.as_ref() {
        Some(action) if serving => {
            action("hung up");
            true
        }
        _ => false,
    }
}

/// A temporary file that a signal must not leave behind, while it lives.
pub struct TempFile(PathBuf);

impl TempFile {
    pub fn new(path: &Path) -> TempFile {
        TEMP_FILES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(path.to_path_buf());
        TempFile(path.to_path_buf())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        TEMP_FILES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|p| *p != self.0);
    }
}

/// Takes SIGINT, SIGTERM and SIGHUP (those not ignored) from now on. Call before
/// any other thread is started: threads inherit the blocked signals, and
/// one that did not would be killed by the signal instead.
#[cfg(unix)]
pub fn install() {
    // SAFETY: plain libc calls on a local signal set; sigaction with a null
    // new action only reads the current one.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        let mut any = false;
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            libc::sigaddset(&mut set, sig);
            any = true;
        }
        if !any || libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiter = std::thread::Builder::new()
            .name("axe-signals".into())
            .spawn(move || {
                let mut sig: libc::c_int = 0;
                loop {
                    while libc::sigwait(&set, &mut sig) != 0 {}
                    if sig == libc::SIGHUP && hung_up() {
                        continue;
                    }
                    let first = FIRST.lock().unwrap_or_else(PoisonError::into_inner).take();
                    match first {
                        Some(action) => action(describe(sig).0),
                        None => end(sig),
                    }
                }
            });
        if waiter.is_err() {
            // No thread to take them: let the signals act as before.
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

#[cfg(not(unix))]
pub fn install() {}

/// What signal `sig` is said to do, and the status it ends the process with.
#[cfg(unix)]
fn describe(sig: libc::c_int) -> (&'static str, Code) {
    match sig {
        libc::SIGINT => ("interrupted", Code::Interrupted),
        libc::SIGHUP => ("hung up", Code::HungUp),
        _ => ("terminated", Code::Terminated),
    }
}

/// The cleanup and the exit, for signal `sig`.
#[cfg(unix)]
fn end(sig: libc::c_int) -> ! {
    let (why, code) = describe(sig);
    STATUS.store(code.status(), Ordering::SeqCst);
    ENDING.store(true, Ordering::SeqCst);
    // The progress view first: nothing below is drawn over it.
    crate::io::stderr::end_view();
    for (_, action) in ACTIONS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        action(why);
    }
    // What the run started goes with it: commands still running, what
    // they or an MCP server left (design §8.3).
    if let Some(sweep) = SWEEP.get() {
        sweep();
    }
    for path in TEMP_FILES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        let _ = std::fs::remove_file(path);
    }
    crate::io::stdout::drain();
    crate::io::stderr::error_line(format!("axe: {why}\n"));
    crate::io::stderr::flush(crate::io::stderr::PATIENCE);
    #[allow(clippy::exit, reason = "a signal ends the run (design §6.5)")]
    std::process::exit(i32::from(code.status()))
}
