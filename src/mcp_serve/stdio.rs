//! The stdio transport (design §9.6): one JSON-RPC message per line on
//! stdin, one per line on stdout, and nothing else on stdout (every other
//! byte goes to stderr). A line longer than [`MAX_LINE`] is skipped to
//! its end and answered -32700, never held. EOF on stdin ends the
//! session: the calls still running are cancelled, their threads waited
//! for, and the process exits. A signal cancels them too.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::protocol::Session;
use super::{Out, Shared};
use crate::error::Error;

/// The longest line taken, bytes.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// stdout, one whole message at a time.
struct Stdout {
    lock: Mutex<()>,
    /// The client closed it: nothing more is written.
    gone: AtomicBool,
}

impl Out for Stdout {
    #[allow(
        clippy::disallowed_methods,
        reason = "stdout carries the protocol, and only it"
    )]
    fn send(&self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        let _one_at_a_time = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        if self.gone.load(Ordering::SeqCst) {
            return;
        }
        let mut out = std::io::stdout().lock();
        if out
            .write_all(line.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            self.gone.store(true, Ordering::SeqCst);
        }
    }
}

/// What reading one line found.
enum Line {
    /// A line, without its end.
    Read,
    /// A line over [`MAX_LINE`], skipped.
    TooLong,
    End,
}

/// Serves `shared`'s tools to the client on stdin and stdout.
#[allow(clippy::disallowed_methods, reason = "stdin carries the protocol")]
pub fn serve(shared: &Arc<Shared>) -> Result<(), Error> {
    let out: Arc<dyn Out> = Arc::new(Stdout {
        lock: Mutex::new(()),
        gone: AtomicBool::new(false),
    });
    let _cancels_calls = {
        let shared = shared.clone();
        crate::io::interrupt::on_signal(move |_| shared.cancel_all())
    };
    let session = Session::new(shared.clone(), out.clone());
    let mut stdin = std::io::stdin().lock();
    let mut buf = Vec::new();
    let failed = loop {
        match read_line(&mut stdin, &mut buf) {
            Ok(Line::Read) => {
                let line = buf.trim_ascii();
                if !line.is_empty() {
                    session.handle(line);
                }
            }
            Ok(Line::TooLong) => out.send(&json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": {"code": -32700, "message": format!("Parse error: a line over {MAX_LINE} bytes")},
            })),
            Ok(Line::End) => break None,
            Err(e) => break Some(e),
        }
    };
    shared.cancel_all();
    session.wait();
    crate::io::stderr::flush(crate::io::stderr::PATIENCE);
    match failed {
        Some(e) => Err(Error::general(format!("cannot read stdin: {e}"))),
        None => Ok(()),
    }
}

/// Reads the next line into `buf` (cleared first), holding at most
/// [`MAX_LINE`] bytes of it.
fn read_line(r: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match (too_long, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::End,
                (false, false) => Line::Read,
            });
        }
        let (piece, ended) = match available.iter().position(|b| *b == b'\n') {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long && buf.len() + piece.len() <= MAX_LINE {
            buf.extend_from_slice(piece);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = ended.unwrap_or(available.len());
        r.consume(used);
        if ended.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8]) -> Vec<Result<String, &'static str>> {
        let mut r = std::io::BufReader::with_capacity(7, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            match read_line(&mut r, &mut buf).unwrap() {
                Line::Read => out.push(Ok(String::from_utf8(buf.clone()).unwrap())),
                Line::TooLong => out.push(Err("too long")),
                Line::End => return out,
            }
        }
    }

    #[test]
    fn lines_are_read_across_buffers_with_or_without_a_last_newline() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\n{\"b\":22222}\nlast"),
            [
                Ok("{\"a\":1}\r".to_string()),
                Ok(String::new()),
                Ok("{\"b\":22222}".to_string()),
                Ok("last".to_string()),
            ]
        );
        assert!(lines(b"").is_empty());
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_to_its_end_and_the_next_is_read() {
        let mut input = vec![b'x'; MAX_LINE + 1];
        input.extend_from_slice(b"\nnext\n");
        assert_eq!(lines(&input), [Err("too long"), Ok("next".to_string())]);
        assert_eq!(lines(&vec![b'y'; MAX_LINE + 5]), [Err("too long")]);
    }
}
