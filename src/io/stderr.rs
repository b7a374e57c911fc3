//! The one writer of stderr, and what writes through it: warnings (and
//! `--quiet`), the `--verbose` reporter, the live progress view's frames and
//! the final error line. All of it goes through one `Queue`, written by a
//! thread of its own, so that a stderr nobody reads (a full pipe, a stopped
//! terminal) never blocks a run: a sub-agent keeps its deadline however
//! stderr is doing. The queue is bounded; lines that do not fit are
//! counted, dropped, and said to be missing once stderr moves again.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::io::queue::{Dest, Piece, Queue};
use crate::text::redact::redact;

/// How long [`flush`] waits for a stderr that takes nothing at all.
pub const PATIENCE: Duration = Duration::from_secs(1);

static STDERR: Queue = Queue::new(Dest::Stderr, "axe-stderr");

/// Diagnostics on stderr, one whole line at a time (lines of parallel
/// sub-agents never interleave), when enabled.
#[derive(Debug, Clone, Default)]
pub struct Verbose {
    pub enabled: bool,
    /// Put before every line: empty for the top-level agent; for a
    /// sub-agent, two spaces per level and its name, e.g. `  helper: `.
    pub prefix: String,
}

impl Verbose {
    pub fn new(enabled: bool) -> Verbose {
        Verbose {
            enabled,
            prefix: String::new(),
        }
    }

    pub fn line(&self, text: &str) {
        if self.enabled {
            lines(format!("{}{}\n", self.prefix, redact(text)));
        }
    }

    /// The reporter for the sub-agent `name` running at `depth`.
    pub fn nested(&self, name: &str, depth: u32) -> Verbose {
        Verbose {
            enabled: self.enabled,
            prefix: format!("{}{name}: ", "  ".repeat(depth as usize)),
        }
    }
}

/// `--quiet`: no warnings (errors are still printed).
static QUIET: AtomicBool = AtomicBool::new(false);

pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Prints a warning on stderr (always, not only with `--verbose`).
pub fn warn(text: &str) {
    if QUIET.load(Ordering::Relaxed) {
        return;
    }
    lines(format!("axe: warning: {}\n", redact(text)));
}

/// Prints a warning once per process, however many times it comes up (a
/// sub-agent called sixteen times warns about its file once).
pub fn warn_once(text: &str) {
    static SEEN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    if seen.insert(text.to_string()) {
        warn(text);
    }
}

/// Queues whole lines (`text` ends in a newline) for stderr; dropped (and
/// counted) when the queue is full.
pub fn lines(text: String) {
    STDERR.push(Piece::Lines(text), true);
}

/// Queues the line that says why axe failed: never dropped.
pub fn error_line(text: String) {
    STDERR.push(Piece::Lines(text), false);
}

/// Queues a frame of the progress view (whole lines), replacing the last.
pub fn frame(block: String) {
    STDERR.push(Piece::Frame(block), false);
}

/// Erases the progress view for good: frames queued later are not drawn.
/// Waits (a while) until the erase is written.
pub fn end_view() {
    STDERR.end_view();
    flush(PATIENCE);
}

/// Waits until everything queued is written, or until stderr has taken
/// nothing for `patience` (nobody reads it: what is left is lost with the
/// process).
pub fn flush(patience: Duration) {
    STDERR.flush(patience);
}
