//! What the host of a top-level run gives it beside its settings: where the
//! top-level agent's streamed text goes ([`TextSink`]: stdout for `axe
//! run`, an HTTP client's event stream for `axe serve`), and the flag that
//! cancels the run before its deadline (`deadline::Cancel`, beside the
//! deadline it cuts short: set by `axe serve` when the client goes away or
//! the server stops; `axe run` never sets it, a signal ends that process
//! instead). Design §12.3 says what a cancel stops and how fast.

use std::fmt;
use std::sync::Arc;

/// A piece of streamed text, and whether it is the first of a new turn.
pub type TextFn = dyn Fn(&str, bool) + Send + Sync;

/// Where the printed agent's streamed text goes (design §4.11).
#[derive(Clone, Default)]
pub enum TextSink {
    /// The process's stdout, through its writer thread (`crate::io::stdout`).
    #[default]
    Stdout,
    /// A function of the host's: each piece, and whether it starts a turn.
    To(Arc<TextFn>),
}

impl TextSink {
    /// Hands `text` on; `new_turn` marks the first piece of a turn.
    pub fn text(&self, text: &str, new_turn: bool) {
        match self {
            TextSink::Stdout => crate::io::stdout::text(text, new_turn),
            TextSink::To(f) => f(text, new_turn),
        }
    }
}

impl fmt::Debug for TextSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TextSink::Stdout => "Stdout",
            TextSink::To(_) => "To(..)",
        })
    }
}
