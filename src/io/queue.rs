//! A bounded output queue written by a thread of its own: what stderr, a
//! streamed answer on stdout and a trace on a pipe or terminal go through,
//! so that an output nobody reads
//! (a full pipe, a stopped terminal) never blocks a run: a sub-agent keeps
//! its deadline however its output is doing (design §6.4, §7.2). Lines are
//! queued whole and written whole; those that do not fit are counted,
//! dropped, and said to be missing once the output moves again.
//!
//! The queue also keeps the screen state of the progress view (how many of
//! its lines are on screen, erased before any other line is written), since
//! that depends on what was written last. Only stderr draws one.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The most bytes waiting to be written; lines beyond it are dropped (a
/// line that comes to an empty queue is taken whatever its size).
const MAX_QUEUED_BYTES: usize = 1 << 20;

/// The most bytes of a piece written on the caller's thread rather than
/// queued: a terminal that polls writable has room for this many.
const DIRECT_BYTES: usize = 256;

/// What is waiting to be written.
pub enum Piece {
    /// Whole lines: the progress view is erased first.
    Lines(String),
    /// A new frame of the progress view, replacing the one on screen.
    Frame(String),
    /// The progress view goes away.
    Erase,
}

/// Where a queue writes.
pub enum Dest {
    Stderr,
    /// A streamed answer (design §4.11): queued whole, never dropped.
    Stdout,
    /// The trace, opened on a pipe, a terminal or another character device,
    /// and how to warn when lines are dropped or writing fails (stderr's
    /// warning, given by the trace: stderr is itself written by a queue).
    Trace(File, fn(&str)),
}

struct State {
    queue: VecDeque<Piece>,
    queued_bytes: usize,
    /// Lines dropped since the output last kept up.
    dropped: u64,
    /// The writer thread runs (or could not start: then writes are direct).
    started: bool,
    threadless: bool,
    /// The writer is inside a write.
    writing: bool,
    /// Writes completed, for [`Queue::flush`] to see that the output moves.
    written: u64,
    /// A write failed and the output was given up (the trace and stdout).
    failed: bool,
    /// Why stdout was given up, unless its reader went away.
    error: Option<String>,
    /// Callers inside [`Queue::flush`]: a completed write wakes them, and
    /// costs no system call when there are none (each token of a stream
    /// is such a write).
    flushing: usize,
    /// Lines of the progress view on screen.
    frame_lines: usize,
    /// The view was ended: frames that come later are not drawn.
    view_ended: bool,
}

/// One output and what is waiting for it.
pub struct Queue {
    state: Mutex<State>,
    /// Work was queued.
    work: Condvar,
    /// A write completed.
    progress: Condvar,
    dest: Dest,
    /// The writer thread's name.
    thread: &'static str,
}

impl Queue {
    pub const fn new(dest: Dest, thread: &'static str) -> Queue {
        Queue {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                queued_bytes: 0,
                dropped: 0,
                flushing: 0,
                started: false,
                threadless: false,
                writing: false,
                written: 0,
                failed: false,
                error: None,
                frame_lines: 0,
                view_ended: false,
            }),
            work: Condvar::new(),
            progress: Condvar::new(),
            dest,
            thread,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `piece`; a `droppable` one is dropped (and counted) when the
    /// queue is full. The writer thread is started by the first piece
    /// queued.
    pub fn push(&'static self, piece: Piece, droppable: bool) {
        let mut state = self.lock();
        if state.failed {
            return;
        }
        if !state.threadless {
            if state.view_ended && matches!(piece, Piece::Frame(_)) {
                return;
            }
            if let Some(text) = self.writable_now(&state, &piece) {
                // Nothing waits and stdout takes a small piece at once:
                // written here, without waking the writer thread for each
                // token of a stream (design §4.11).
                let result = self.write_out(text.as_bytes());
                drop(self.after_write(state, result));
                return;
            }
        }
        if !state.started {
            // Started by the first piece that must wait: a stream whose
            // every piece stdout took at once never starts it (design
            // §4.11).
            state.started = true;
            let spawned = std::thread::Builder::new()
                .name(self.thread.into())
                .spawn(|| self.write_forever());
            state.threadless = spawned.is_err();
        }
        if state.threadless {
            // No thread: write here, as plain programs do.
            let bytes = render(&mut state, piece);
            let result = self.write_out(&bytes);
            drop(self.after_write(state, result));
            return;
        }
        let size = match &piece {
            Piece::Lines(t) | Piece::Frame(t) => t.len(),
            Piece::Erase => 0,
        };
        if droppable
            && !state.queue.is_empty()
            && state.queued_bytes.saturating_add(size) > MAX_QUEUED_BYTES
        {
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
        self.work.notify_one();
    }

    /// `piece`'s text when it may be written on the caller's thread now:
    /// stdout, nothing queued or being written, a piece of at most
    /// [`DIRECT_BYTES`], and stdout ready to take it without blocking (a
    /// pipe or terminal with room, a file).
    fn writable_now<'p>(&self, state: &State, piece: &'p Piece) -> Option<&'p str> {
        let (Dest::Stdout, Piece::Lines(text)) = (&self.dest, piece) else {
            return None;
        };
        if text.len() > DIRECT_BYTES || !state.queue.is_empty() || state.writing {
            return None;
        }
        let mut fd = libc::pollfd {
            fd: libc::STDOUT_FILENO,
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: one pollfd of ours, a zero timeout: it never blocks.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) };
        (ready == 1 && fd.revents & libc::POLLOUT != 0).then_some(text.as_str())
    }

    /// Erases the progress view for good: frames queued later are not drawn.
    pub fn end_view(&'static self) {
        self.lock().view_ended = true;
        self.push(Piece::Erase, false);
    }

    /// Waits until everything queued is written, or until the output has
    /// taken nothing for `patience` (nobody reads it: what is left is lost
    /// with the process). True when everything was written.
    pub fn flush(&self, patience: Duration) -> bool {
        let mut state = self.lock();
        let mut seen = state.written;
        let mut since = Instant::now();
        while !state.failed && (!state.queue.is_empty() || state.writing || state.dropped > 0) {
            let left = patience.saturating_sub(since.elapsed());
            if left.is_zero() {
                return false;
            }
            state.flushing = state.flushing.saturating_add(1);
            state = self
                .progress
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            state.flushing = state.flushing.saturating_sub(1);
            if state.written != seen {
                seen = state.written;
                since = Instant::now();
            }
        }
        !state.failed
    }

    /// Whether a write failed and the output was given up.
    pub fn failed(&self) -> bool {
        self.lock().failed
    }

    /// Why a write failed, when it did for another reason than a reader
    /// that went away (`axe ... | head -1` is not an error).
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    /// The writer thread: takes everything queued, writes it in one write.
    fn write_forever(&self) {
        let mut state = self.lock();
        loop {
            while state.queue.is_empty() && state.dropped == 0 {
                state = self
                    .work
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            let mut bytes = Vec::new();
            let dropped = std::mem::take(&mut state.dropped);
            if dropped > 0 {
                self.tell_dropped(&mut state, dropped, &mut bytes);
            }
            while let Some(piece) = state.queue.pop_front() {
                bytes.extend(render(&mut state, piece));
            }
            state.queued_bytes = 0;
            state.writing = true;
            drop(state);
            let result = self.write_out(&bytes);
            state = self.lock();
            state.writing = false;
            state = self.after_write(state, result);
            if state.failed {
                return;
            }
        }
    }

    /// Says that `dropped` lines are missing: on stderr itself, among what
    /// is written next; for the trace, as a warning on stderr (the trace is
    /// JSON Lines, for programs to read).
    fn tell_dropped(&self, state: &mut State, dropped: u64, bytes: &mut Vec<u8>) {
        match self.dest {
            Dest::Stderr => {
                let note = format!(
                    "axe: warning: {dropped} line(s) of diagnostics were dropped: stderr was not being read\n"
                );
                bytes.extend(render(state, Piece::Lines(note)));
            }
            Dest::Trace(_, warn) => warn(&format!(
                "{dropped} trace line(s) were dropped: the trace was not being read"
            )),
            // Nothing queued for stdout is droppable.
            Dest::Stdout => {}
        }
    }

    #[allow(clippy::disallowed_methods, reason = "the queue's one writer")]
    fn write_out(&self, bytes: &[u8]) -> std::io::Result<()> {
        match &self.dest {
            Dest::Stderr => {
                let mut err = std::io::stderr().lock();
                err.write_all(bytes).and_then(|()| err.flush())
            }
            Dest::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(bytes).and_then(|()| out.flush())
            }
            Dest::Trace(file, _) => {
                let mut file: &File = file;
                file.write_all(bytes)
            }
        }
    }

    /// Counts a write and wakes whoever flushes. A failed write to stderr
    /// is let be (there is nowhere to say so); a failed trace write stops
    /// the trace with one warning, and the run goes on; a failed stdout
    /// write stops stdout, and the error is kept for the end of the run.
    fn after_write<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
        result: std::io::Result<()>,
    ) -> MutexGuard<'a, State> {
        state.written = state.written.wrapping_add(1);
        if let (Err(e), Dest::Stdout) = (&result, &self.dest) {
            state.failed = true;
            state.queue.clear();
            state.queued_bytes = 0;
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                state.error = Some(e.to_string());
            }
        }
        if let (Err(e), Dest::Trace(_, warn)) = (result, &self.dest) {
            state.failed = true;
            state.queue.clear();
            state.queued_bytes = 0;
            state.dropped = 0;
            warn(&format!("cannot write the trace ({e}); tracing stopped"));
        }
        if state.flushing > 0 {
            self.progress.notify_all();
        }
        state
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
