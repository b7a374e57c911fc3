//! An Ollama chat stream assembled: one JSON object per line, each with a
//! piece of the message's `content` (and, whole, any `tool_calls` it
//! makes), the last one `done: true` with `done_reason` and the counts
//! (`prompt_eval_count`, `eval_count`). A line with an `error` is the
//! server's failure. A thinking model's `thinking` pieces are kept apart
//! from the answer.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::provider::Response;
use crate::provider::stream::shape::Shape;
use crate::provider::stream::{Assembly, Object, Piece, StreamError, failed, json, parse_whole};

/// A line that only adds answer text, the most of a stream: read without
/// building a JSON tree, its text borrowed from the line (as the OpenAI
/// wire's text chunks are, `openai/stream.rs`). Any other line fails to
/// read as this, or has a field this one must not have, and is read whole
/// by [`Stream::event`].
#[derive(Deserialize)]
struct TextLine<'a> {
    #[serde(borrow)]
    message: Object<TextMessage<'a>>,
    done: Option<bool>,
    error: Option<IgnoredAny>,
    /// The time of each line, a hole in the shape.
    #[serde(borrow)]
    created_at: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TextMessage<'a> {
    #[serde(borrow)]
    content: Cow<'a, str>,
    tool_calls: Option<IgnoredAny>,
    thinking: Option<IgnoredAny>,
}

/// What the stream has said so far.
#[derive(Debug, Default)]
pub(super) struct Stream {
    content: String,
    /// The `thinking` pieces, never the answer.
    thinking: String,
    tool_calls: Vec<Value>,
    /// The `done: true` object: the stream is whole.
    last: Option<Value>,
    /// The last text line read in full, whose like is read by its bytes
    /// (`stream/shape.rs`).
    shape: Option<Shape>,
}

impl Assembly for Stream {
    /// The stream's last object (`done: true`) came.
    fn ended(&self) -> bool {
        self.last.is_some()
    }

    /// One line, named `line` (blank lines are let be).
    fn event<'a>(&mut self, _name: &str, line: &'a str) -> Result<Piece<'a>, StreamError> {
        if line.is_empty() || self.last.is_some() {
            return Ok(Piece::default());
        }
        if let Some(t) = self.shape.as_ref().and_then(|s| s.text(line)) {
            return Ok(self.text(t));
        }
        if let Ok(Object(l)) = serde_json::from_str::<Object<TextLine>>(line)
            && l.error.is_none()
            && l.done != Some(true)
            && l.message.0.tool_calls.is_none()
            && l.message.0.thinking.is_none()
        {
            if let Cow::Borrowed(t) = l.message.0.content
                && let Some(shape) = Shape::learn(line, t, &[l.created_at])
            {
                self.shape = Some(shape);
            }
            return Ok(self.text(l.message.0.content));
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
            piece.text = Some(Cow::Owned(t.to_string()));
        }
        if let Some(t) = message["thinking"].as_str() {
            self.thinking.push_str(t);
            piece.delta |= !t.is_empty();
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
    fn finish(self: Box<Self>) -> Result<Response, StreamError> {
        let Some(last) = self.last else {
            return Err(StreamError::Invalid(
                "the stream ended before its done: true line".into(),
            ));
        };
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = Value::Array(self.tool_calls);
        }
        if !self.thinking.is_empty() {
            message["thinking"] = json!(self.thinking);
        }
        let whole = json!({
            "message": message,
            "done_reason": last["done_reason"],
            "prompt_eval_count": last["prompt_eval_count"],
            "eval_count": last["eval_count"],
            "model": last["model"],
        });
        parse_whole(&whole, super::parse)
    }
}

impl Stream {
    /// A text line's text, added to the answer.
    fn text<'a>(&mut self, t: Cow<'a, str>) -> Piece<'a> {
        self.content.push_str(&t);
        Piece {
            delta: !t.is_empty(),
            text: Some(t),
        }
    }
}
