//! A streamed chat completion (design §12.2): server-sent events in
//! OpenAI's chunk format over HTTP/1.1 chunked transfer — the role first,
//! the top-level agent's text as it comes, the finish reason, the usage
//! when asked, then `data: [DONE]`. The head (200) is written with the
//! first text or the end, so that a run failing before any text is
//! answered with its own status and a JSON error; a failure after the head
//! is one `data: {"error": ...}` event instead of the end. A write that fails
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
    /// The headers of the answer, until its head is written.
    head: Option<Vec<(String, String)>>,
}

impl Sse {
    /// The stream of one request, to `writer`; nothing is written until
    /// the first text or the end (design §12.2), so that a run failing
    /// before any text is answered with its own status. `extra`: headers
    /// of every answer.
    pub fn new(
        writer: Box<dyn Write + Send>,
        id: String,
        created: u64,
        agent: &str,
        cancel: Cancel,
        extra: &[(&str, String)],
    ) -> Sse {
        Sse {
            out: Mutex::new(Out {
                writer,
                head: Some(
                    extra
                        .iter()
                        .map(|(n, v)| ((*n).to_string(), v.clone()))
                        .collect(),
                ),
                failed: false,
                open_line: false,
            }),
            id,
            created,
            agent: agent.to_string(),
            cancel,
        }
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

    /// The end of a stream whose run failed: before any text, the error's
    /// own status with its JSON body (and whether a retry may help); after,
    /// one error event, no `[DONE]`.
    pub fn fail(&self, error: &ApiError) {
        let head = self
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .head
            .take();
        if let Some(extra) = head {
            let body = error.body().to_string();
            let mut answer = format!(
                "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                error.status,
                tiny_http::StatusCode(error.status).default_reason_phrase(),
                body.len()
            );
            let extra: Vec<(&str, String)> =
                extra.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
            for (name, value) in error.headers(&extra) {
                answer.push_str(&format!("{name}: {value}\r\n"));
            }
            answer.push_str("\r\n");
            answer.push_str(&body);
            self.write(answer.as_bytes(), false);
            return;
        }
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
        self.write(self.event(delta, finish, usage).as_bytes(), true);
    }

    /// The event of [`Sse::chunk`].
    fn event(&self, delta: Value, finish: Option<&str>, usage: Option<Value>) -> String {
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
        format!("data: {chunk}\n\n")
    }

    /// Writes `bytes`, as one HTTP chunk when `framed` (the first such
    /// after the response's head — 200, `text/event-stream`, the headers
    /// given — and the assistant's role), and flushes; a failure marks the
    /// stream failed and cancels the run.
    fn write(&self, bytes: &[u8], framed: bool) {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if out.failed {
            return;
        }
        let mut first = Vec::new();
        if let Some(extra) = framed.then(|| out.head.take()).flatten() {
            first.extend_from_slice(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                  transfer-encoding: chunked\r\n",
            );
            for (name, value) in extra {
                first.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
            }
            first.extend_from_slice(b"\r\n");
            let role = self.event(json!({"role": "assistant", "content": ""}), None, None);
            frame(&mut first, role.as_bytes());
        }
        if framed {
            frame(&mut first, bytes);
        } else {
            first.extend_from_slice(bytes);
        }
        let w = &mut out.writer;
        if w.write_all(&first).and_then(|()| w.flush()).is_err() {
            out.failed = true;
            self.cancel.cancel();
        }
    }
}

/// `bytes` as one HTTP/1.1 chunk, onto `to`.
fn frame(to: &mut Vec<u8>, bytes: &[u8]) {
    to.extend_from_slice(format!("{:x}\r\n", bytes.len()).as_bytes());
    to.extend_from_slice(bytes);
    to.extend_from_slice(b"\r\n");
}
