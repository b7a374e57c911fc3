//! An Anthropic Messages stream assembled: `message_start` (the message
//! with its first usage), each content block from `content_block_start`
//! and its `content_block_delta`s (`text_delta`, `input_json_delta`'s
//! partial JSON, `thinking_delta`, `signature_delta`, `citations_delta`),
//! `message_delta` (stop reason, stop details, the usage so far, which
//! replaces what came before), and `message_stop`, the end. `ping` and
//! event types not listed are let be; an `error` event is the provider's
//! failure.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::Response;
use crate::provider::stream::shape::Shape;
use crate::provider::stream::{
    Assembly, Object, Piece, StreamError, failed, json, parse_whole, text,
};

/// What the stream has said so far.
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// `message_start` came.
    started: bool,
    /// `message_start`'s message id and model (the chat span's, design
    /// §7.9).
    id: Value,
    model: Value,
    /// The content blocks, in the order they began.
    blocks: Vec<Block>,
    stop_reason: Value,
    stop_details: Value,
    /// The usage: `message_start`'s, each field replaced by what a
    /// `message_delta` says later.
    usage: serde_json::Map<String, Value>,
    /// `message_stop` came: the stream is whole.
    stopped: bool,
    /// The last text delta read in full, and its block's index: its like
    /// is read by its bytes (`stream/shape.rs`).
    shape: Option<(Shape, u64)>,
}

/// A `content_block_delta` with a `text_delta`, the most of a stream: read
/// without building a JSON tree, its text borrowed from the event (as the
/// OpenAI wire's text chunks are, `openai/stream.rs`). Any other event
/// fails to read as this and is read whole by [`Stream::event`].
#[derive(Deserialize)]
struct TextEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    index: u64,
    #[serde(borrow)]
    delta: Object<TextDelta<'a>>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// One content block: as it began, and its deltas so far.
#[derive(Debug)]
struct Block {
    index: u64,
    start: Value,
    /// `text_delta`s (for a text block) or `thinking_delta`s.
    text: String,
    /// `input_json_delta`s: the input's JSON text in pieces.
    json: String,
    signature: String,
    citations: Vec<Value>,
}

impl Assembly for Stream {
    /// The stream's last event (`message_stop`) came.
    fn ended(&self) -> bool {
        self.stopped
    }

    /// One event; the name on its `event:` line says what its data's `type`
    /// says, which is read.
    fn event<'a>(&mut self, name: &str, data: &'a str) -> Result<Piece<'a>, StreamError> {
        if self.stopped {
            return Ok(Piece::default());
        }
        if let Some((index, t)) = self
            .shape
            .as_ref()
            .and_then(|(shape, index)| Some((*index, shape.text(data)?)))
        {
            return Ok(self.text_delta(index, t));
        }
        if let Ok(Object(e)) = serde_json::from_str::<Object<TextEvent>>(data)
            && e.kind == "content_block_delta"
            && e.delta.0.kind == "text_delta"
        {
            if let Cow::Borrowed(t) = e.delta.0.text
                && let Some(shape) = Shape::learn(data, t, &[])
            {
                self.shape = Some((shape, e.index));
            }
            return Ok(self.text_delta(e.index, e.delta.0.text));
        }
        let event = json(data)?;
        let kind = event["type"].as_str().unwrap_or(name);
        match kind {
            "error" => return Err(failed(data)),
            "message_start" => {
                self.started = true;
                self.merge_usage(&event["message"]["usage"]);
                self.id = event["message"]["id"].clone();
                self.model = event["message"]["model"].clone();
            }
            "content_block_start" => return Ok(self.block_start(&event)),
            "content_block_delta" => return Ok(self.block_delta(&event)),
            "message_delta" => {
                let delta = &event["delta"];
                if !delta["stop_reason"].is_null() {
                    self.stop_reason = delta["stop_reason"].clone();
                }
                for details in [&delta["stop_details"], &event["stop_details"]] {
                    if !details.is_null() {
                        self.stop_details = details.clone();
                    }
                }
                self.merge_usage(&event["usage"]);
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(Piece::default())
    }

    /// The answer, read as the same answer sent whole would be.
    fn finish(mut self: Box<Self>) -> Result<Response, StreamError> {
        if !self.started || !self.stopped {
            return Err(StreamError::Invalid(
                "the stream ended before message_stop".into(),
            ));
        }
        self.blocks.sort_by_key(|b| b.index);
        let content: Vec<Value> = self.blocks.into_iter().map(Block::whole).collect();
        let whole = json!({
            "content": content,
            "stop_reason": self.stop_reason,
            "stop_details": self.stop_details,
            "usage": Value::Object(self.usage),
            "id": self.id,
            "model": self.model,
        });
        parse_whole(&whole, super::parse)
    }
}

impl Stream {
    fn merge_usage(&mut self, usage: &Value) {
        if let Some(fields) = usage.as_object() {
            for (k, v) in fields {
                if !v.is_null() {
                    self.usage.insert(k.clone(), v.clone());
                }
            }
        }
    }

    fn block_start(&mut self, event: &Value) -> Piece<'static> {
        let start = event["content_block"].clone();
        let index = event["index"].as_u64().unwrap_or(u64::MAX);
        let first = text(&start["text"]).to_string();
        let is_text = start["type"] == "text";
        self.blocks.retain(|b| b.index != index);
        self.blocks.push(Block {
            index,
            start,
            text: String::new(),
            json: String::new(),
            signature: String::new(),
            citations: Vec::new(),
        });
        // A tool call's name is its first token; a text block's first is
        // its first text.
        Piece {
            delta: !is_text || !first.is_empty(),
            text: is_text.then_some(Cow::Owned(first)),
        }
    }

    fn block_delta(&mut self, event: &Value) -> Piece<'static> {
        let index = event["index"].as_u64().unwrap_or(u64::MAX);
        let Some(block) = self.blocks.iter_mut().find(|b| b.index == index) else {
            // A delta for a block that never began: nothing to add it to.
            return Piece::default();
        };
        let delta = &event["delta"];
        let mut piece = Piece::default();
        let part = match delta["type"].as_str().unwrap_or("") {
            "text_delta" => {
                let t = text(&delta["text"]).to_string();
                return self.text_delta(index, Cow::Owned(t));
            }
            "input_json_delta" => {
                let t = text(&delta["partial_json"]);
                block.json.push_str(t);
                t
            }
            "thinking_delta" => {
                let t = text(&delta["thinking"]);
                block.text.push_str(t);
                t
            }
            "signature_delta" => {
                block.signature.push_str(text(&delta["signature"]));
                ""
            }
            "citations_delta" => {
                block.citations.push(delta["citation"].clone());
                ""
            }
            _ => "",
        };
        piece.delta = !part.is_empty();
        piece
    }

    /// Text added to the block at `index`: printed when it is a text block
    /// (a thinking block's text is not).
    fn text_delta<'a>(&mut self, index: u64, t: Cow<'a, str>) -> Piece<'a> {
        let Some(block) = self.blocks.iter_mut().find(|b| b.index == index) else {
            return Piece::default();
        };
        block.text.push_str(&t);
        Piece {
            delta: !t.is_empty(),
            text: (block.start["type"] == "text").then_some(t),
        }
    }
}

impl Block {
    /// The block as a non-streamed answer carries it: a tool's input is the
    /// object its pieces make (kept as text when they make none: a call cut
    /// off at the output limit, which is not run, design §5.4).
    fn whole(self) -> Value {
        let mut block = self.start;
        if !block.is_object() {
            return block;
        }
        let kind = block["type"].as_str().unwrap_or("").to_string();
        match kind.as_str() {
            "text" => {
                let mut t = text(&block["text"]).to_string();
                t.push_str(&self.text);
                block["text"] = json!(t);
                if !self.citations.is_empty() {
                    block["citations"] = json!(self.citations);
                }
            }
            "thinking" => {
                let mut t = text(&block["thinking"]).to_string();
                t.push_str(&self.text);
                block["thinking"] = json!(t);
                if !self.signature.is_empty() {
                    block["signature"] = json!(self.signature);
                }
            }
            _ if !self.json.is_empty() => {
                block["input"] =
                    serde_json::from_str::<Value>(&self.json).unwrap_or(Value::String(self.json));
            }
            _ => {}
        }
        block
    }
}
