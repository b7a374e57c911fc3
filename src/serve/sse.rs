//! A streamed chat completion (design §12.2): server-sent events in
//! OpenAI's chunk format over HTTP/1.1 chunked transfer — the role first,
//! the top-level agent's text as it comes, the finish reason, the usage
//! when asked, then `data: [DONE]`. A failure after the head is one
//! `data: {"error": ...}` event instead of the end. A write that fails
//! (the client went away, or took nothing for the socket's send timeout)
//! cancels the run.

use std::io::Write;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use super::reply::{ApiError, usage_json};
use crate::deadline::Cancel;
use crate::trace::ledger::Totals;

/// The event stream of one request.
pub struct Sse {
    out: Mutex<Out>,
    /// `chatcmpl-<run id>`, the same in every chunk.
    id: String,
    created: u64,
    agent: String,
    cancel: Cancel,
}

/// The connection, and what has gone through it.
struct Out {
    writer: Box<dyn Write + Send>,
    /// A write failed: nothing more is written.
    failed: bool,
    /// The last text did not end a line.
    open_line: bool,
}

impl Sse {
    /// Writes the response's head (200, `text/event-stream`, `extra`
    /// headers) and the first chunk, with the assistant's role.
    pub fn start(
        writer: Box<dyn Write + Send>,
        id: String,
        created: u64,
        agent: &str,
        cancel: Cancel,
        extra: &[(&str, String)],
    ) -> Sse {
        let sse = Sse {
            out: Mutex::new(Out {
                writer,
                failed: false,
                open_line: false,
            }),
            id,
            created,
            agent: agent.to_string(),
            cancel,
        };
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
             transfer-encoding: chunked\r\n",
        );
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        sse.write(head.as_bytes(), false);
        sse.chunk(json!({"role": "assistant", "content": ""}), None, None);
        sse
    }

    /// A piece of the answer; the first of a new turn starts on a line of
    /// its own, as `axe run` prints it.
    pub fn text(&self, text: &str, new_turn: bool) {
        if text.is_empty() {
            return;
        }
        let mut piece = String::with_capacity(text.len() + 1);
        {
            let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
            if new_turn && out.open_line {
                piece.push('\n');
            }
            out.open_line = !text.ends_with('\n');
        }
        piece.push_str(text);
        self.chunk(json!({"content": piece}), None, None);
    }

    /// The end of an answer: its finish reason, the usage when `usage`,
    /// `[DONE]`, and the end of the body.
    pub fn finish(&self, finish_reason: &str, usage: Option<&Totals>) {
        self.chunk(json!({}), Some(finish_reason), None);
        if let Some(u) = usage {
            self.chunk(Value::Null, None, Some(usage_json(u)));
        }
        self.write(b"data: [DONE]\n\n", true);
        self.write(b"0\r\n\r\n", false);
    }

    /// The end of a stream whose run failed: one error event, no `[DONE]`.
    pub fn fail(&self, error: &ApiError) {
        let event = format!("data: {}\n\n", error.body());
        self.write(event.as_bytes(), true);
        self.write(b"0\r\n\r\n", false);
    }

    /// Whether a write failed (the client is gone).
    pub fn failed(&self) -> bool {
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .failed
    }

    /// One `chat.completion.chunk` event: `delta` in the one choice (none
    /// when it is null), or the usage alone.
    fn chunk(&self, delta: Value, finish: Option<&str>, usage: Option<Value>) {
        let choices = if delta.is_null() {
            json!([])
        } else {
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
        };
        let mut chunk = json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.agent,
            "choices": choices,
        });
        if let Some(u) = usage {
            chunk["usage"] = u;
        }
        self.write(format!("data: {chunk}\n\n").as_bytes(), true);
    }

    /// Writes `bytes`, as one HTTP chunk when `framed`, and flushes; a
    /// failure marks the stream failed and cancels the run.
    fn write(&self, bytes: &[u8], framed: bool) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if out.failed {
            return;
        }
        let w = &mut out.writer;
        let result = if framed {
            write!(w, "{:x}\r\n", bytes.len())
                .and_then(|()| w.write_all(bytes))
                .and_then(|()| w.write_all(b"\r\n"))
        } else {
            w.write_all(bytes)
        }
        .and_then(|()| w.flush());
        if result.is_err() {
            out.failed = true;
            self.cancel.cancel();
        }
    }
}
