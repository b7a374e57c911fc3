//! Processes a sandboxed command leaves behind after leaving its process
//! group (`setsid`, a double fork): axe makes itself their reaper
//! (`PR_SET_CHILD_SUBREAPER`), so they become its children instead of
//! init's, and kills them whenever no command is running, and at the end of
//! the run. A command's own group is killed when it returns (`process`);
//! this catches what escaped the group.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

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

/// One running command; the sweep runs when the last one ends.
pub struct Running(());

impl Running {
    pub fn start() -> Running {
        if !REAPER.swap(true, Ordering::Relaxed) {
            // SAFETY: flags on this process. Failing the first only means
            // orphans go to init as before. The second makes axe's own
            // `/proc` files (its environment, with the keys) readable only
            // with CAP_SYS_PTRACE, which a command never has.
            unsafe {
                libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
                libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
            }
        }
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        s.running += 1;
        Running(())
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

/// Kills and reaps axe's children that are not kept; their own children
/// then come to axe too, so it goes round until none is left (bounded).
fn sweep_locked(kept: &[i32]) {
    for _ in 0..32 {
        let orphans: Vec<i32> = children()
            .into_iter()
            .filter(|p| !kept.contains(p))
            .collect();
        if orphans.is_empty() {
            return;
        }
        for pid in &orphans {
            // SAFETY: signals and a non-blocking wait on our own children.
            unsafe {
                libc::kill(-*pid, libc::SIGKILL);
                libc::kill(*pid, libc::SIGKILL);
            }
        }
        for pid in &orphans {
            let mut status = 0;
            // SAFETY: waiting for our own child, which was just killed.
            unsafe {
                libc::waitpid(*pid, &mut status, 0);
            }
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
