//! A streamed response (design §12.6): the Responses API's server-sent
//! events, each `event: <type>` and its JSON with a `sequence_number`,
//! over HTTP/1.1 chunked transfer. The head and the opening events
//! (`response.created`, `response.in_progress`,
//! `response.output_item.added`, `response.content_part.added`) wait for
//! the first text, or the end: a run that fails before any text is
//! answered with its real status and a JSON error, as a whole answer
//! would be. Then `response.output_text.delta`s, and at the end
//! `response.output_text.done`, `response.content_part.done`,
//! `response.output_item.done` and `response.completed` (or
//! `response.incomplete`); a failure after text is an `error` event and
//! `response.failed`. A write that fails cancels the run.

use std::io::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::{Value, json};

use super::object::{End, Meta, output_text};
use crate::deadline::Cancel;
use crate::serve::reply::ApiError;

/// The event stream of one request.
pub struct Events {
    state: Mutex<State>,
    meta: Meta,
    cancel: Cancel,
    /// Headers of the head, besides the stream's own.
    extra: Vec<(&'static str, String)>,
}

struct State {
    conn: Conn,
    seq: u64,
    /// The text sent so far.
    text: String,
}

enum Conn {
    /// Nothing written yet: the request, to answer whichever way the run
    /// ends.
    Waiting(tiny_http::Request),
    Open(Box<dyn Write + Send>),
    /// Taken back for a whole answer, or a write failed.
    Closed,
}

impl Events {
    pub fn new(
        rq: tiny_http::Request,
        meta: Meta,
        cancel: Cancel,
        extra: &[(&'static str, String)],
    ) -> Events {
        Events {
            state: Mutex::new(State {
                conn: Conn::Waiting(rq),
                seq: 0,
                text: String::new(),
            }),
            meta,
            cancel,
            extra: extra.to_vec(),
        }
    }

    /// A piece of the answer; the first of a new turn starts on a line of
    /// its own, as `axe run` prints it (chat's stream does the same).
    pub fn text(&self, text: &str, new_turn: bool) {
        if text.is_empty() {
            return;
        }
        let mut s = self.lock();
        self.open(&mut s);
        let mut delta = String::with_capacity(text.len() + 1);
        if new_turn && !s.text.is_empty() && !s.text.ends_with('\n') {
            delta.push('\n');
        }
        delta.push_str(text);
        s.text.push_str(&delta);
        let m = &self.meta;
        self.event(
            &mut s,
            "response.output_text.delta",
            json!({"item_id": m.item_id, "output_index": 0, "content_index": 0,
                   "delta": delta, "logprobs": []}),
        );
    }

    /// The end of an answer: `content` as its text when none was streamed,
    /// the closing events, the end of the body. False when the client is
    /// gone.
    pub fn finish(&self, content: &str, end: &End) -> bool {
        let mut s = self.lock();
        if s.text.is_empty() {
            drop(s);
            self.text(content, true);
            s = self.lock();
        }
        self.open(&mut s);
        let status = match end {
            End::Done(_, cut) => super::object::status(*cut),
            _ => "completed",
        };
        let text = s.text.clone();
        let m = &self.meta;
        let at = json!({"item_id": m.item_id, "output_index": 0, "content_index": 0});
        let mut done = at.clone();
        done["text"] = json!(text);
        done["logprobs"] = json!([]);
        self.event(&mut s, "response.output_text.done", done);
        let mut part = at;
        part["part"] = output_text(&text);
        self.event(&mut s, "response.content_part.done", part);
        let item = m.message(status, Some(&text));
        self.event(
            &mut s,
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        );
        let response = m.response(status, vec![item], end);
        let kind = if status == "completed" {
            "response.completed"
        } else {
            "response.incomplete"
        };
        self.event(&mut s, kind, json!({"response": response}));
        self.end(&mut s)
    }

    /// The request back when nothing was written yet, for a whole error.
    pub fn unstarted(&self) -> Option<tiny_http::Request> {
        let mut s = self.lock();
        match std::mem::replace(&mut s.conn, Conn::Closed) {
            Conn::Waiting(rq) => Some(rq),
            other => {
                s.conn = other;
                None
            }
        }
    }

    /// The end of a stream whose run failed after its text: an `error`
    /// event and `response.failed`. False when the client is gone.
    pub fn fail(&self, error: &ApiError, end: &End) -> bool {
        let mut s = self.lock();
        let body = error.body();
        let e = &body["error"];
        self.event(
            &mut s,
            "error",
            json!({"code": e["code"], "message": e["message"], "param": e["param"]}),
        );
        let item = self.meta.message("incomplete", Some(&s.text));
        let response = self.meta.response("failed", vec![item], end);
        self.event(&mut s, "response.failed", json!({"response": response}));
        self.end(&mut s)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the head and the opening events, when not yet written.
    fn open(&self, s: &mut State) {
        let Conn::Waiting(_) = s.conn else { return };
        let Conn::Waiting(rq) = std::mem::replace(&mut s.conn, Conn::Closed) else {
            return;
        };
        s.conn = Conn::Open(rq.into_writer());
        let mut head = String::from(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
             transfer-encoding: chunked\r\n",
        );
        for (name, value) in &self.extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        self.write(s, head.as_bytes(), false);
        let m = &self.meta;
        let response = m.response("in_progress", Vec::new(), &End::Running);
        self.event(s, "response.created", json!({"response": response.clone()}));
        self.event(s, "response.in_progress", json!({"response": response}));
        self.event(
            s,
            "response.output_item.added",
            json!({"output_index": 0, "item": m.message("in_progress", None)}),
        );
        self.event(
            s,
            "response.content_part.added",
            json!({"item_id": m.item_id, "output_index": 0, "content_index": 0,
                   "part": output_text("")}),
        );
    }

    /// One event of `kind`: `fields` with its type and sequence number.
    fn event(&self, s: &mut State, kind: &str, mut fields: Value) {
        fields["type"] = json!(kind);
        fields["sequence_number"] = json!(s.seq);
        s.seq += 1;
        let event = format!("event: {kind}\ndata: {fields}\n\n");
        self.write(s, event.as_bytes(), true);
    }

    /// The last chunk; whether every write went through.
    fn end(&self, s: &mut State) -> bool {
        self.write(s, b"0\r\n\r\n", false);
        let ok = matches!(s.conn, Conn::Open(_));
        s.conn = Conn::Closed;
        ok
    }

    /// Writes `bytes`, as one HTTP chunk when `framed`, and flushes; a
    /// failure closes the stream and cancels the run.
    fn write(&self, s: &mut State, bytes: &[u8], framed: bool) {
        let Conn::Open(w) = &mut s.conn else { return };
        let result = if framed {
            write!(w, "{:x}\r\n", bytes.len())
                .and_then(|()| w.write_all(bytes))
                .and_then(|()| w.write_all(b"\r\n"))
        } else {
            w.write_all(bytes)
        }
        .and_then(|()| w.flush());
        if result.is_err() {
            s.conn = Conn::Closed;
            self.cancel.cancel();
        }
    }
}
