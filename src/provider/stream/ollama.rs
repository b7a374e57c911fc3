//! An Ollama chat stream assembled: one JSON object per line, each with a
//! piece of the message's `content` (and, whole, any `tool_calls` it
//! makes), the last one `done: true` with `done_reason` and the counts
//! (`prompt_eval_count`, `eval_count`). A line with an `error` is the
//! server's failure.

use serde_json::{Value, json};

use super::{Piece, StreamError, failed, json, parse_whole};
use crate::provider::{Response, ollama};

/// What the stream has said so far.
#[derive(Debug, Default)]
pub(super) struct Assembly {
    content: String,
    tool_calls: Vec<Value>,
    /// The `done: true` object: the stream is whole.
    last: Option<Value>,
}

impl Assembly {
    /// The stream's last object (`done: true`) came.
    pub(super) fn ended(&self) -> bool {
        self.last.is_some()
    }

    /// One line (blank lines are let be).
    pub(super) fn line(&mut self, line: &str) -> Result<Piece, StreamError> {
        if line.is_empty() || self.last.is_some() {
            return Ok(Piece::default());
        }
        let object = json(line)?;
        if !object["error"].is_null() {
            return Err(failed(line));
        }
        let message = &object["message"];
        let mut piece = Piece::default();
        if let Some(t) = message["content"].as_str() {
            self.content.push_str(t);
            piece.delta = !t.is_empty();
            piece.text = Some(t.to_string());
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            self.tool_calls.extend(calls.iter().cloned());
            piece.delta |= !calls.is_empty();
        }
        if object["done"] == true {
            self.last = Some(object);
        }
        Ok(piece)
    }

    /// The answer, read as the same answer sent whole would be.
    pub(super) fn finish(self) -> Result<Response, StreamError> {
        let Some(last) = self.last else {
            return Err(StreamError::Invalid(
                "the stream ended before its done: true line".into(),
            ));
        };
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(self.tool_calls);
        }
        let whole = json!({
            "message": message,
            "done_reason": last["done_reason"],
            "prompt_eval_count": last["prompt_eval_count"],
            "eval_count": last["eval_count"],
        });
        parse_whole(&whole, ollama::parse)
    }
}
