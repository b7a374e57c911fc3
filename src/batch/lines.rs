//! A batch's output (design §11.4): one JSON object per input, each one
//! line written whole by one `write` under a lock, to stdout or appended to
//! the `--resume` file. A line's head says which input it is (`line`,
//! `id`, `input` or `path`) and how it ended (`ok`, `exit`, `skipped`); an
//! answered input's line goes on with `--json`'s object, a failed one's
//! with the error.

use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::inputs::{Body, Input};

/// Where the lines go.
pub struct Out {
    sink: Mutex<Sink>,
    /// Set when no line may be written any more: stdout's reader went away,
    /// a write failed, or a signal is ending the process.
    pub closed: AtomicBool,
    /// The first write that failed, for the batch's error.
    pub failed: Mutex<Option<String>>,
}

enum Sink {
    Stdout,
    /// The `--resume` file, appended to.
    File {
        file: File,
        shown: String,
    },
}

/// The head of a line: which input, and how it ended.
#[derive(Serialize)]
struct Head<'a> {
    line: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<InputField<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    path: Option<&'a str>,
    ok: bool,
    exit: u8,
    skipped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum InputField<'a> {
    Text(&'a str),
    Object(&'a serde_json::Map<String, Value>),
}

/// What a failed input spent before it failed.
#[derive(Serialize)]
pub struct Spent<'a> {
    pub duration_ms: u64,
    pub run_id: &'a str,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    /// What it cost (design §7.8).
    pub total_cost_usd: crate::cost::Cost,
}

impl Out {
    pub fn stdout() -> Out {
        Out::with(Sink::Stdout)
    }

    /// Appends to `file` (`shown` in messages).
    pub fn file(file: File, shown: &str) -> Out {
        Out::with(Sink::File {
            file,
            shown: shown.to_string(),
        })
    }

    fn with(sink: Sink) -> Out {
        Out {
            sink: Mutex::new(sink),
            closed: AtomicBool::new(false),
            failed: Mutex::new(None),
        }
    }

    /// Writes `line` and its newline in one piece. A file's write cut
    /// short (a full disk) is cut back to where the line started; a stdout
    /// nobody reads any more ends the batch quietly; any other failure ends
    /// it with an error.
    pub fn write(&self, line: &str) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut sink = self.sink.lock().unwrap_or_else(PoisonError::into_inner);
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        let result = match &mut *sink {
            Sink::Stdout => {
                #[allow(clippy::disallowed_methods, reason = "a batch's lines (§11.4)")]
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes).and_then(|()| out.flush())
            }
            Sink::File { file, shown } => {
                let at = file.metadata().map(|m| m.len());
                let r = file.write_all(&bytes);
                if r.is_err()
                    && let Ok(at) = at
                {
                    let _ = file.set_len(at);
                }
                r.map_err(|e| std::io::Error::new(e.kind(), format!("{shown}: {e}")))
            }
        };
        if let Err(e) = result {
            self.closed.store(true, Ordering::SeqCst);
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                *self.failed.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(format!("cannot write the batch's output: {e}"));
            }
        }
    }

    /// A signal is ending the process: no line is written after this
    /// returns, and none is left half written, unless a write has been stuck
    /// for `patience` (a reader that stopped reading).
    pub fn close(&self, patience: Duration) {
        self.closed.store(true, Ordering::SeqCst);
        let until = std::time::Instant::now() + patience;
        while std::time::Instant::now() < until {
            if let Ok(guard) = self.sink.try_lock() {
                // Held until the process exits.
                std::mem::forget(guard);
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// The line of an input that answered: the head, then `--json`'s object
/// (`json`, from `report::json`), in one object.
pub fn answered(input: &Input, json: &str) -> String {
    let head = head(input, true, 0, false, None);
    join(head, json)
}

/// The line of an input that failed with exit code `code` and `error` (one
/// line, redacted), or was not started (`skipped`), and what it had spent.
pub fn failed(
    input: &Input,
    code: u8,
    error: String,
    skipped: bool,
    spent: Option<&Spent>,
) -> String {
    let head = head(input, false, code, skipped, Some(error));
    match spent {
        Some(s) => join(head, &serde_json::to_string(s).unwrap_or_default()),
        None => head,
    }
}

fn head(input: &Input, ok: bool, exit: u8, skipped: bool, error: Option<String>) -> String {
    let id = match &input.body {
        Body::Json(o) => o.get("id"),
        _ => None,
    };
    let (text, path) = match &input.body {
        Body::Text(t) | Body::Bad { text: t, .. } => (Some(InputField::Text(t)), None),
        Body::Json(o) => (Some(InputField::Object(o)), None),
        Body::File { shown, .. } => (None, Some(shown.as_str())),
    };
    let head = Head {
        line: input.line,
        id,
        input: text,
        path,
        ok,
        exit,
        skipped,
        error,
    };
    // Strings, numbers and JSON values always serialize.
    serde_json::to_string(&head).unwrap_or_default()
}

/// Two JSON objects' text as one object: `{a...}` and `{b...}` become
/// `{a...,b...}` (their keys differ).
fn join(head: String, rest: &str) -> String {
    let (Some(a), Some(b)) = (head.strip_suffix('}'), rest.strip_prefix('{')) else {
        return head;
    };
    if b.trim() == "}" {
        return head;
    }
    let mut line = String::with_capacity(a.len() + b.len() + 1);
    line.push_str(a);
    line.push(',');
    line.push_str(b);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_objects_join_into_one() {
        assert_eq!(join("{\"a\":1}".into(), "{\"b\":2}"), "{\"a\":1,\"b\":2}");
        assert_eq!(join("{\"a\":1}".into(), "{}"), "{\"a\":1}");
        let input = Input {
            seq: 0,
            line: 3,
            body: Body::Text("hi".into()),
        };
        let v: Value = serde_json::from_str(&answered(&input, "{\"content\":\"x\"}")).unwrap();
        assert_eq!(v["line"], 3);
        assert_eq!(v["input"], "hi");
        assert_eq!(v["ok"], true);
        assert_eq!(v["content"], "x");
    }
}
