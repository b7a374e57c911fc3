//! The streamed answer on stdout (design §4.11): the top-level agent's text
//! is queued as it comes and written by a thread of its own (`queue.rs`),
//! so that a stdout nobody reads never holds up the run or a stream being
//! read; a turn's text starts on a line of its own; and [`finish`] ends the
//! text with a newline, as an answer printed whole is (design §2.9), and
//! waits for it to be written, until the deadline.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::io::queue::{Dest, Piece, Queue};

static STDOUT: Queue = Queue::new(Dest::Stdout, "axe-stdout");

/// What has been queued so far.
struct Printed {
    /// Some text was.
    any: bool,
    /// The last text ended a line.
    newline: bool,
}

static PRINTED: Mutex<Printed> = Mutex::new(Printed {
    any: false,
    newline: false,
});

/// Queues `text` for stdout; `new_turn` (the first text of a turn) starts
/// on a line of its own when the last text did not end one.
pub fn text(text: &str, new_turn: bool) {
    if text.is_empty() {
        return;
    }
    let mut printed = PRINTED.lock().unwrap_or_else(PoisonError::into_inner);
    let mut piece = String::with_capacity(text.len() + 1);
    if new_turn && printed.any && !printed.newline {
        piece.push('\n');
    }
    piece.push_str(text);
    printed.any = true;
    printed.newline = text.ends_with('\n');
    STDOUT.push(Piece::Lines(piece), false);
}

/// At a signal, before the process exits: what was queued is written, a
/// second at most (a reader that already has part of the answer gets the
/// rest axe received; the exit status still says it was interrupted).
pub fn drain() {
    if printed() {
        STDOUT.flush(Duration::from_secs(1));
    }
}

/// Whether any text was queued for stdout.
pub fn printed() -> bool {
    PRINTED.lock().unwrap_or_else(PoisonError::into_inner).any
}

/// Ends what was printed with a newline if it needs one, and waits until
/// everything is written, or until stdout has taken nothing until
/// `deadline` (a second at least, for the text of a run that failed at its
/// deadline). A stdout that cannot be written is an error; one whose
/// reader went away is not (`axe ... | head -1`).
pub fn finish(deadline: Instant) -> Result<(), Error> {
    {
        let mut printed = PRINTED.lock().unwrap_or_else(PoisonError::into_inner);
        if !printed.any {
            return Ok(());
        }
        if !printed.newline {
            printed.newline = true;
            STDOUT.push(Piece::Lines("\n".into()), false);
        }
    }
    let patience = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let written = STDOUT.flush(patience);
    if let Some(e) = STDOUT.error() {
        return Err(Error::general(format!("cannot write to stdout: {e}")));
    }
    if !written && !STDOUT.failed() {
        return Err(Error::general(
            "cannot write to stdout: it took nothing before the deadline",
        ));
    }
    Ok(())
}
