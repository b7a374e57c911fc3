//! Processes a command leaves behind where it has no PID namespace of its
//! own (the kernel refused one: `namespace`), and the daemons of an MCP
//! server: axe makes itself their reaper (`PR_SET_CHILD_SUBREAPER`), so
//! they become its children instead of init's, and kills them whenever no
//! command is running, at the end of the run and on every signal
//! ([`sweep_all`]). A sweep goes round until no such child is left (a
//! killed process's own children come to axe in turn), bounded by time,
//! never by a count of rounds. A command's own group is killed when it
//! returns (`process`); this catches what escaped the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Commands running now, and the direct children axe keeps on purpose
/// (MCP servers, `crate::mcp`): one lock, so a sweep never sees a command's shell between
/// its spawn and its count.
struct State {
    running: usize,
    kept: Vec<i32>,
}

static STATE: Mutex<State> = Mutex::new(State {
    running: 0,
    kept: Vec::new(),
});

static REAPER: AtomicBool = AtomicBool::new(false);

/// The longest a sweep goes on killing: only a process tree that forks
/// faster than it is killed lasts that long.
const SWEEP_LIMIT: Duration = Duration::from_secs(5);

/// How long a sweep waits for a child it killed through its group to end
/// by itself: a command's keeper (`namespace`) ends once its namespace is
/// empty, and waiting for that, rather than killing the keeper at once,
/// means nothing of the namespace is left when the sweep returns.
const KEEPER_WAIT: Duration = Duration::from_millis(500);

/// One running command; the sweep runs when the last one ends.
pub struct Running(());

impl Running {
    pub fn start() -> Running {
        become_reaper();
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        s.running += 1;
        Running(())
    }
}

/// Makes axe the reaper of its descendants' orphans, once, and has a
/// signal that ends the process sweep them (before any is started).
fn become_reaper() {
    if !REAPER.swap(true, Ordering::Relaxed) {
        crate::io::interrupt::sweep_on_end(sweep_all);
        // SAFETY: flags on this process. Failing the first only means
        // orphans go to init as before. The second makes axe's own
        // `/proc` files (its environment, with the keys) readable only
        // with CAP_SYS_PTRACE, which a command never has.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        s.running = s.running.saturating_sub(1);
        if s.running == 0 {
            sweep_locked(&s.kept);
        }
    }
}

/// Starts a child that the sweep must leave alone (an MCP server): spawned
/// under the lock, so that no sweep sees it before it is kept. Its group is
/// the owner's to stop; [`release`] once it is reaped.
pub fn spawn_kept(
    spawn: impl FnOnce() -> std::io::Result<std::process::Child>,
) -> std::io::Result<std::process::Child> {
    become_reaper();
    let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    let child = spawn()?;
    if let Ok(pid) = i32::try_from(child.id()) {
        s.kept.push(pid);
    }
    Ok(child)
}

/// Forgets a kept child, once it has been reaped.
pub fn release(pid: i32) {
    let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    s.kept.retain(|p| *p != pid);
}

/// Kills every leftover descendant now, unless a command is running (its
/// own descendants are not orphans yet). For the end of a run.
pub fn sweep() {
    if !REAPER.load(Ordering::Relaxed) {
        return;
    }
    let s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    if s.running == 0 {
        sweep_locked(&s.kept);
    }
}

/// Kills every child of axe now, kept or not, commands running or not, and
/// whatever comes to axe as they die: for the end of the process (its
/// last line, and every signal that ends it, `crate::io::interrupt`). The MCP
/// servers' own stop comes first, where there is one. Then the commands'
/// private directories still alive are removed.
pub fn sweep_all() {
    if REAPER.load(Ordering::Relaxed) {
        let _held = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        sweep_locked(&[]);
    }
    // Nothing writes to a command's private directory any more.
    super::remove_temp_dirs();
}

/// Kills and reaps axe's children that are not kept; their own children
/// then come to axe too, so it goes round until none is left, for at most
/// [`SWEEP_LIMIT`].
fn sweep_locked(kept: &[i32]) {
    let until = Instant::now() + SWEEP_LIMIT;
    loop {
        let orphans: Vec<i32> = children()
            .into_iter()
            .filter(|p| !kept.contains(p))
            .collect();
        if orphans.is_empty() {
            return;
        }
        if Instant::now() >= until {
            crate::io::stderr::warn(&format!(
                "{} processes a command left were still being started after {} s of killing them",
                orphans.len(),
                SWEEP_LIMIT.as_secs()
            ));
            return;
        }
        kill_and_reap(&orphans);
    }
}

/// Kills each of `pids` (axe's own children) and its group, and reaps it.
/// The group first: a keeper's group is its namespace's init, and the
/// keeper then ends by itself once the namespace is empty.
fn kill_and_reap(pids: &[i32]) {
    for pid in pids {
        // SAFETY: signals to the group of our own unreaped child, or to
        // the child alone when it leads no group.
        unsafe {
            if libc::kill(-*pid, libc::SIGKILL) != 0 {
                libc::kill(*pid, libc::SIGKILL);
            }
        }
    }
    let patience = Instant::now() + KEEPER_WAIT;
    for pid in pids {
        let mut status = 0;
        loop {
            // SAFETY: a non-blocking wait for our own child.
            let r = unsafe { libc::waitpid(*pid, &mut status, libc::WNOHANG) };
            if r != 0 || Instant::now() >= patience {
                if r == 0 {
                    // SAFETY: a signal to our own unreaped child, then a
                    // wait for it.
                    unsafe {
                        libc::kill(*pid, libc::SIGKILL);
                        libc::waitpid(*pid, &mut status, 0);
                    }
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// The pids of this process's children, from `/proc/self/task/*/children`
/// (empty where `/proc` is missing).
fn children() -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for task in tasks.flatten() {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}
