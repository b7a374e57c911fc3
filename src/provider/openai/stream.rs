//! An OpenAI Chat Completions stream assembled: `chat.completion.chunk`
//! events whose first choice's `delta` carries content, refusal and tool
//! call fragments (each call by its `index`: id, type and name in its first
//! fragment, argument text in pieces, several calls interleaved), the
//! `finish_reason` near the end, the `usage` chunk (with no choices) that
//! `stream_options.include_usage` asks for, and `[DONE]`. An `error` object
//! in a chunk is the provider's failure. A compatible server's
//! `reasoning_content` deltas are the thinking, never the answer.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::provider::Response;
use crate::provider::stream::shape::Shape;
use crate::provider::stream::{
    Assembly, Object, Piece, StreamError, failed, json, parse_whole, text,
};

/// What the stream has said so far.
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// A chunk with a choice came.
    chose: bool,
    content: String,
    refusal: String,
    /// A compatible server's `reasoning_content` (or `reasoning`) deltas.
    thinking: String,
    /// Tool calls by their `index`, in the order they began.
    calls: Vec<Call>,
    finish_reason: Value,
    usage: Value,
    /// `[DONE]` came: the stream is whole.
    done: bool,
    /// The response's id and model, from the first chunk that names them
    /// (every chunk carries the same; the chat span's, design §7.9).
    id: String,
    model: String,
    /// The last text chunk read in full, whose like is read by its bytes
    /// (`stream/shape.rs`).
    shape: Option<Shape>,
}

/// A chunk that only adds answer text, the most of a stream: read without
/// building a JSON tree (a fifth of a stream's CPU went to that and to
/// freeing it again), its fields borrowed from the event, the rest skipped.
/// Any other chunk fails to read as this, or has a field this one must not
/// have, and is read whole by [`Stream::event`].
#[derive(Deserialize)]
struct TextChunk<'a> {
    #[serde(borrow)]
    choices: Vec<Object<TextChoice<'a>>>,
    error: Option<IgnoredAny>,
    usage: Option<IgnoredAny>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    /// Random characters that change with each chunk (OpenAI's, unless
    /// `stream_options.include_obfuscation` is false): a hole in the shape.
    #[serde(borrow)]
    obfuscation: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct TextChoice<'a> {
    #[serde(borrow)]
    delta: Object<TextDelta<'a>>,
    finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow)]
    content: Cow<'a, str>,
    refusal: Option<IgnoredAny>,
    tool_calls: Option<IgnoredAny>,
    reasoning_content: Option<IgnoredAny>,
    reasoning: Option<IgnoredAny>,
}

/// One tool call's fragments.
#[derive(Debug)]
struct Call {
    index: u64,
    id: String,
    /// `function`, or another type (kept whole as the wire sends it).
    kind: String,
    name: String,
    /// The argument text (a `custom` call's `input`), byte for byte.
    arguments: String,
}

impl Assembly for Stream {
    /// The stream's last event (`[DONE]`) came.
    fn ended(&self) -> bool {
        self.done
    }

    /// One event's data (its name says nothing the data does not).
    fn event<'a>(&mut self, _name: &str, data: &'a str) -> Result<Piece<'a>, StreamError> {
        if self.done {
            return Ok(Piece::default());
        }
        if let Some(t) = self.shape.as_ref().and_then(|s| s.text(data)) {
            return Ok(self.text(t));
        }
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Piece::default());
        }
        if let Some(chunk) = only_text(data) {
            self.named(chunk.id.as_deref(), chunk.model.as_deref());
            if let Cow::Borrowed(t) = chunk.text
                && let Some(shape) = Shape::learn(data, t, &[chunk.obfuscation])
            {
                self.shape = Some(shape);
            }
            return Ok(self.text(chunk.text));
        }
        let chunk = json(data)?;
        if !chunk["error"].is_null() {
            return Err(failed(data));
        }
        self.named(chunk["id"].as_str(), chunk["model"].as_str());
        if chunk["usage"].is_object() {
            self.usage = chunk["usage"].clone();
        }
        let Some(choice) = chunk["choices"].as_array().and_then(|c| c.first()) else {
            return Ok(Piece::default());
        };
        self.chose = true;
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish_reason = reason.clone();
        }
        let delta = &choice["delta"];
        let mut piece = Piece::default();
        if let Some(t) = delta["content"].as_str() {
            self.content.push_str(t);
            piece.text = Some(Cow::Owned(t.to_string()));
            piece.delta = !t.is_empty();
        }
        if let Some(t) = [&delta["reasoning_content"], &delta["reasoning"]]
            .into_iter()
            .find_map(Value::as_str)
        {
            self.thinking.push_str(t);
            piece.delta |= !t.is_empty();
        }
        if let Some(r) = delta["refusal"].as_str() {
            self.refusal.push_str(r);
            piece.delta |= !r.is_empty();
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (i, c) in calls.iter().enumerate() {
                self.call_delta(i, c);
                piece.delta = true;
            }
        }
        Ok(piece)
    }

    /// The answer, read as the same answer sent whole would be.
    fn finish(mut self: Box<Self>) -> Result<Response, StreamError> {
        if !self.done {
            return Err(StreamError::Invalid(
                "the stream ended before [DONE]".into(),
            ));
        }
        self.calls.sort_by_key(|c| c.index);
        let choices = if self.chose {
            let mut message = json!({"content": self.content});
            if !self.refusal.is_empty() {
                message["refusal"] = json!(self.refusal);
            }
            if !self.thinking.is_empty() {
                message["reasoning_content"] = json!(self.thinking);
            }
            if !self.calls.is_empty() {
                message["tool_calls"] = self.calls.iter().map(Call::whole).collect();
            }
            json!([{"message": message, "finish_reason": self.finish_reason}])
        } else {
            json!([])
        };
        parse_whole(
            &json!({"choices": choices, "usage": self.usage, "id": self.id, "model": self.model}),
            super::parse,
        )
    }
}

impl Stream {
    /// A text chunk's text, added to the answer.
    fn text<'a>(&mut self, t: Cow<'a, str>) -> Piece<'a> {
        self.chose = true;
        self.content.push_str(&t);
        Piece {
            delta: !t.is_empty(),
            text: Some(t),
        }
    }

    /// The response's `id` and `model`, where the first chunk that has
    /// them says.
    fn named(&mut self, id: Option<&str>, model: Option<&str>) {
        for (mine, theirs) in [(&mut self.id, id), (&mut self.model, model)] {
            if let Some(v) = theirs.filter(|_| mine.is_empty()) {
                v.clone_into(mine);
            }
        }
    }

    /// A fragment of the call at its `index` (its position in the list
    /// when a server leaves the index out).
    fn call_delta(&mut self, position: usize, c: &Value) {
        let index = c["index"]
            .as_u64()
            .unwrap_or(u64::try_from(position).unwrap_or(u64::MAX));
        let at = match self.calls.iter().position(|call| call.index == index) {
            Some(at) => at,
            None => {
                self.calls.push(Call {
                    index,
                    id: String::new(),
                    kind: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[at];
        let first = |field: &mut String, v: &Value| {
            if field.is_empty() {
                field.push_str(text(v));
            }
        };
        first(&mut call.id, &c["id"]);
        first(&mut call.kind, &c["type"]);
        let kind = if call.kind.is_empty() {
            "function"
        } else {
            call.kind.as_str()
        };
        let (name, part) = if kind == "function" {
            (&c["function"]["name"], &c["function"]["arguments"])
        } else {
            (&c[kind]["name"], &c[kind]["input"])
        };
        let (name, part) = (text(name).to_string(), text(part).to_string());
        first(&mut call.name, &Value::String(name));
        call.arguments.push_str(&part);
    }
}

/// What a chunk that only adds text says: the text, the chunk's `id`,
/// `model` and `obfuscation`.
struct Text<'a> {
    text: Cow<'a, str>,
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    obfuscation: Option<&'a RawValue>,
}

/// The text of a chunk that does nothing but add some: one choice (the
/// first is the one read) whose delta has content and no refusal or tool
/// calls, with no finish reason, usage or error.
fn only_text(data: &str) -> Option<Text<'_>> {
    let Object(chunk) = serde_json::from_str::<Object<TextChunk>>(data).ok()?;
    if chunk.error.is_some() || chunk.usage.is_some() {
        return None;
    }
    let Object(choice) = chunk.choices.into_iter().next()?;
    let Object(delta) = choice.delta;
    let plain = choice.finish_reason.is_none()
        && delta.refusal.is_none()
        && delta.tool_calls.is_none()
        && delta.reasoning_content.is_none()
        && delta.reasoning.is_none();
    plain.then_some(Text {
        text: delta.content,
        id: chunk.id,
        model: chunk.model,
        obfuscation: chunk.obfuscation,
    })
}

impl Call {
    /// The call as a non-streamed answer carries it.
    fn whole(&self) -> Value {
        let mut call = json!({"id": self.id});
        match self.kind.as_str() {
            "" | "function" => {
                call["type"] = json!("function");
                call["function"] = json!({"name": self.name, "arguments": self.arguments});
            }
            kind => {
                call["type"] = json!(kind);
                call[kind] = json!({"name": self.name, "input": self.arguments});
            }
        }
        call
    }
}
