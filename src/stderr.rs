//! The one writer of stderr, and what writes through it: warnings (and
//! `--quiet`), the `--verbose` reporter, the live progress view's frames and
//! the final error line. All of it is queued here and written by a thread of
//! its own, so that a stderr nobody reads (a full pipe, a stopped terminal)
//! never blocks a run: a sub-agent keeps its deadline however stderr is
//! doing. The queue is bounded; lines that do not fit are counted, dropped,
//! and said to be missing once stderr moves again.
//!
//! The writer also owns the screen state of the progress view: how many of
//! its lines are on screen, erased before any other line is written.

use std::collections::{BTreeSet, VecDeque};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::redact::redact;

/// The most bytes waiting to be written; lines beyond it are dropped.
const MAX_QUEUED_BYTES: usize = 1 << 20;

/// How long [`flush`] waits for a stderr that takes nothing at all.
pub const PATIENCE: Duration = Duration::from_secs(1);

/// What is waiting to be written.
enum Piece {
    /// Whole lines: the progress view is erased first.
    Lines(String),
    /// A new frame of the progress view, replacing the one on screen.
    Frame(String),
    /// The progress view goes away.
    Erase,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Piece>,
    queued_bytes: usize,
    /// Lines dropped since stderr last kept up.
    dropped: u64,
    /// The writer thread runs (or could not start: then writes are direct).
    started: bool,
    threadless: bool,
    /// The writer is inside a write.
    writing: bool,
    /// Writes completed, for [`flush`] to see that stderr moves.
    written: u64,
    /// Lines of the progress view on screen.
    frame_lines: usize,
    /// The view was ended: frames that come later are not drawn.
    view_ended: bool,
}

struct Stderr {
    state: Mutex<State>,
    /// Work was queued.
    work: Condvar,
    /// A write completed.
    progress: Condvar,
}

static STDERR: Stderr = Stderr {
    state: Mutex::new(State {
        queue: VecDeque::new(),
        queued_bytes: 0,
        dropped: 0,
        started: false,
        threadless: false,
        writing: false,
        written: 0,
        frame_lines: 0,
        view_ended: false,
    }),
    work: Condvar::new(),
    progress: Condvar::new(),
};

fn lock() -> MutexGuard<'static, State> {
    STDERR.state.lock().unwrap_or_else(PoisonError::into_inner)
}

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
    push(Piece::Lines(text), true);
}

/// Queues the line that says why axe failed: never dropped.
pub fn error_line(text: String) {
    push(Piece::Lines(text), false);
}

/// Queues a frame of the progress view (whole lines), replacing the last.
pub fn frame(block: String) {
    push(Piece::Frame(block), false);
}

/// Erases the progress view for good: frames queued later are not drawn.
/// Waits (a while) until the erase is written.
pub fn end_view() {
    lock().view_ended = true;
    push(Piece::Erase, false);
    flush(PATIENCE);
}

/// Waits until everything queued is written, or until stderr has taken
/// nothing for `patience` (nobody reads it: what is left is lost with the
/// process).
pub fn flush(patience: Duration) {
    let mut state = lock();
    let mut seen = state.written;
    let mut since = Instant::now();
    while !state.queue.is_empty() || state.writing {
        let left = patience.saturating_sub(since.elapsed());
        if left.is_zero() {
            return;
        }
        state = STDERR
            .progress
            .wait_timeout(state, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        if state.written != seen {
            seen = state.written;
            since = Instant::now();
        }
    }
}

fn push(piece: Piece, droppable: bool) {
    let mut state = lock();
    if !state.started {
        state.started = true;
        let spawned = std::thread::Builder::new()
            .name("axe-stderr".into())
            .spawn(write_forever);
        state.threadless = spawned.is_err();
    }
    if state.threadless {
        // No thread: write here, as plain programs do.
        let bytes = render(&mut state, piece);
        drop(state);
        let _ = std::io::stderr().lock().write_all(&bytes);
        return;
    }
    if state.view_ended && matches!(piece, Piece::Frame(_)) {
        return;
    }
    let size = match &piece {
        Piece::Lines(t) | Piece::Frame(t) => t.len(),
        Piece::Erase => 0,
    };
    if droppable && state.queued_bytes.saturating_add(size) > MAX_QUEUED_BYTES {
        state.dropped = state.dropped.saturating_add(1);
        return;
    }
    // Only the newest frame matters.
    if matches!(piece, Piece::Frame(_))
        && let Some(Piece::Frame(old)) = state.queue.back()
    {
        let old = old.len();
        state.queue.pop_back();
        state.queued_bytes = state.queued_bytes.saturating_sub(old);
    }
    state.queued_bytes = state.queued_bytes.saturating_add(size);
    state.queue.push_back(piece);
    STDERR.work.notify_one();
}

/// The writer thread: takes everything queued, writes it in one write.
fn write_forever() {
    let mut state = lock();
    loop {
        while state.queue.is_empty() {
            state = STDERR
                .work
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let mut bytes = Vec::new();
        if state.dropped > 0 {
            let dropped = std::mem::take(&mut state.dropped);
            let note = format!(
                "axe: warning: {dropped} line(s) of diagnostics were dropped: stderr was not being read\n"
            );
            bytes.extend(render(&mut state, Piece::Lines(note)));
        }
        while let Some(piece) = state.queue.pop_front() {
            bytes.extend(render(&mut state, piece));
        }
        state.queued_bytes = 0;
        state.writing = true;
        drop(state);
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(&bytes).and_then(|()| err.flush());
        drop(err);
        state = lock();
        state.writing = false;
        state.written = state.written.wrapping_add(1);
        STDERR.progress.notify_all();
    }
}

/// The bytes that put `piece` on screen, given the view drawn there now.
fn render(state: &mut State, piece: Piece) -> Vec<u8> {
    let mut out = erase_lines(state.frame_lines);
    state.frame_lines = 0;
    match piece {
        Piece::Lines(text) => out.push_str(&text),
        Piece::Frame(_) if state.view_ended => {}
        Piece::Frame(block) => {
            state.frame_lines = block.lines().count();
            out.push_str(&block);
        }
        Piece::Erase => {}
    }
    out.into_bytes()
}

/// The escape sequence that erases the `n` lines above the cursor.
fn erase_lines(n: usize) -> String {
    if n == 0 {
        String::new()
    } else {
        format!("\r\x1b[{n}A\x1b[J")
    }
}
