//! A Bedrock `ConverseStream` answer assembled from its events (framed by
//! `stream/eventstream.rs`, each named by its `:event-type`):
//! `messageStart`; `contentBlockStart` (a tool use's id and name);
//! `contentBlockDelta`s (`text`, printed as it comes; `toolUse.input`, the
//! input's JSON text in pieces; `reasoningContent`'s text, signature or
//! redacted content, assembled into the block the whole answer has, never
//! printed); `contentBlockStop`; `messageStop` (the
//! stop reason); and `metadata` (the usage), the last. Events not listed
//! are let be; exceptions are the framing's (the provider's failure).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::Response;
use crate::provider::stream::{Assembly, Object, Piece, StreamError, json, parse_whole, text};

/// What the stream has said so far.
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// The content blocks by their index: found in a logarithmic time
    /// however many a hostile stream begins.
    blocks: BTreeMap<u64, Block>,
    stop_reason: Value,
    usage: Value,
    /// `messageStop` came.
    stopped: bool,
    /// `metadata` came: the stream is whole.
    metadata: bool,
}

/// A `contentBlockDelta` of text, the most of a stream: read without a
/// JSON tree, its text borrowed from the event. Any other delta fails to
/// read as this and is read whole.
#[derive(Deserialize)]
struct TextEvent<'a> {
    #[serde(rename = "contentBlockIndex")]
    index: u64,
    #[serde(borrow)]
    delta: Object<TextDelta<'a>>,
}

#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

/// One content block and its deltas so far.
#[derive(Debug, Default)]
struct Block {
    /// A tool use's id and name (`contentBlockStart`); none for text.
    tool: Option<(String, String)>,
    text: String,
    /// A tool use's input, its JSON text in pieces.
    json: String,
    /// A reasoning block's pieces: (text, signature, redacted content).
    reasoning: Option<(String, String, String)>,
}

impl Assembly for Stream {
    fn ended(&self) -> bool {
        self.metadata
    }

    fn event<'a>(&mut self, name: &str, data: &'a str) -> Result<Piece<'a>, StreamError> {
        if self.metadata {
            return Ok(Piece::default());
        }
        if name == "contentBlockDelta"
            && let Ok(Object(e)) = serde_json::from_str::<Object<TextEvent>>(data)
        {
            return Ok(self.text_delta(e.index, e.delta.0.text));
        }
        let event = json(data)?;
        let index = event["contentBlockIndex"].as_u64().unwrap_or(0);
        match name {
            "contentBlockStart" => {
                let tool = &event["start"]["toolUse"];
                if tool.is_object() {
                    let block = self.block(index);
                    block.tool = Some((
                        text(&tool["toolUseId"]).to_string(),
                        text(&tool["name"]).to_string(),
                    ));
                    // A tool call's name is its first token.
                    return Ok(Piece {
                        delta: true,
                        text: None,
                    });
                }
            }
            "contentBlockDelta" => return Ok(self.delta(index, &event["delta"])),
            "messageStop" => {
                self.stop_reason = event["stopReason"].clone();
                self.stopped = true;
            }
            "metadata" => {
                self.usage = event["usage"].clone();
                self.metadata = true;
            }
            _ => {}
        }
        Ok(Piece::default())
    }

    /// The answer, read as the same answer sent whole would be: a stream
    /// that ended before `messageStop`, or before the `metadata` that
    /// carries its usage (a budget counts it), is not whole.
    fn finish(self: Box<Self>) -> Result<Response, StreamError> {
        if !self.stopped {
            return Err(StreamError::Invalid(
                "the stream ended before messageStop".into(),
            ));
        }
        if !self.metadata {
            return Err(StreamError::Invalid(
                "the stream ended before its metadata (the usage)".into(),
            ));
        }
        let content: Vec<Value> = self.blocks.into_values().map(Block::whole).collect();
        let whole = json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": self.stop_reason,
            "usage": self.usage,
        });
        parse_whole(&whole, super::parse)
    }
}

impl Stream {
    /// The block at `index`, begun when no event began it (a text block
    /// has no `contentBlockStart`).
    fn block(&mut self, index: u64) -> &mut Block {
        self.blocks.entry(index).or_default()
    }

    fn delta(&mut self, index: u64, delta: &Value) -> Piece<'static> {
        if let Some(t) = delta["text"].as_str() {
            return self.text_delta(index, Cow::Owned(t.to_string()));
        }
        let part = if let Some(input) = delta["toolUse"]["input"].as_str() {
            self.block(index).json.push_str(input);
            input
        } else if let Some(r) = delta.get("reasoningContent") {
            // Reasoning: a first token, not printed, kept to go back.
            let (t, signature, redacted) = self.block(index).reasoning.get_or_insert_default();
            t.push_str(text(&r["text"]));
            signature.push_str(text(&r["signature"]));
            redacted.push_str(text(&r["redactedContent"]));
            text(&r["text"])
        } else {
            ""
        };
        Piece {
            delta: !part.is_empty(),
            text: None,
        }
    }

    fn text_delta<'a>(&mut self, index: u64, t: Cow<'a, str>) -> Piece<'a> {
        let block = self.block(index);
        if block.tool.is_some() {
            return Piece::default();
        }
        block.text.push_str(&t);
        Piece {
            delta: !t.is_empty(),
            text: Some(t),
        }
    }
}

impl Block {
    /// The block as `converse` carries it: a tool's input is the object its
    /// pieces make (kept as text when they make none: a call cut off at
    /// the output limit, which is not run, design §5.4).
    fn whole(self) -> Value {
        if let Some((t, signature, redacted)) = self.reasoning {
            return match redacted.is_empty() {
                true => {
                    json!({"reasoningContent": {"reasoningText": {"text": t, "signature": signature}}})
                }
                false => json!({"reasoningContent": {"redactedContent": redacted}}),
            };
        }
        match self.tool {
            Some((id, name)) => {
                let input = if self.json.trim().is_empty() {
                    json!({})
                } else {
                    serde_json::from_str(&self.json).unwrap_or(Value::String(self.json))
                };
                json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
            }
            None => json!({"text": self.text}),
        }
    }
}
