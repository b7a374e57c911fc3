//! A Responses API stream assembled: `response.output_text.delta`'s text
//! printed as it comes, `response.function_call_arguments.delta` and a
//! new `function_call` item counted as the first token, and the whole
//! response that `response.completed` (or `response.incomplete`) carries,
//! the end, read by the wire's own parser. `response.failed` and `error`
//! events are the provider's failure; other events are let be.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::provider::stream::shape::Shape;
use crate::provider::stream::{Assembly, Object, Piece, StreamError, json, parse_whole};
use crate::provider::{ErrorDetail, Response, error_detail};

/// What the stream has said so far: the response it ended with.
#[derive(Debug, Default)]
pub(super) struct Stream {
    whole: Option<Value>,
    /// The last text delta read in full, whose like is read by its bytes
    /// (`stream/shape.rs`).
    shape: Option<Shape>,
}

/// A text delta, the most of a stream: read without a JSON tree, its text
/// borrowed from the event.
#[derive(Deserialize)]
struct TextDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    delta: Cow<'a, str>,
    /// Counts the events, and OpenAI's random characters: holes in the
    /// shape.
    #[serde(borrow)]
    sequence_number: Option<&'a RawValue>,
    #[serde(borrow)]
    obfuscation: Option<&'a RawValue>,
}

impl Assembly for Stream {
    fn ended(&self) -> bool {
        self.whole.is_some()
    }

    fn event<'a>(&mut self, _name: &str, data: &'a str) -> Result<Piece<'a>, StreamError> {
        if self.whole.is_some() {
            return Ok(Piece::default());
        }
        if let Some(t) = self.shape.as_ref().and_then(|s| s.text(data)) {
            return Ok(Piece {
                delta: !t.is_empty(),
                text: Some(t),
            });
        }
        if data.trim() == "[DONE]" {
            return Ok(Piece::default());
        }
        if let Ok(Object(e)) = serde_json::from_str::<Object<TextDelta>>(data)
            && e.kind == "response.output_text.delta"
        {
            if let Cow::Borrowed(t) = e.delta
                && let Some(shape) = Shape::learn(data, t, &[e.sequence_number, e.obfuscation])
            {
                self.shape = Some(shape);
            }
            return Ok(Piece {
                delta: !e.delta.is_empty(),
                text: Some(e.delta),
            });
        }
        let mut event = json(data)?;
        match event["type"].as_str().unwrap_or("") {
            "response.function_call_arguments.delta" => {
                return Ok(Piece {
                    delta: true,
                    text: None,
                });
            }
            "response.output_item.added" if event["item"]["type"] == "function_call" => {
                return Ok(Piece {
                    delta: true,
                    text: None,
                });
            }
            "response.completed" | "response.incomplete" => {
                self.whole = Some(event["response"].take());
            }
            "response.failed" => {
                return Err(StreamError::Failed(failure(&event["response"]["error"])));
            }
            "error" => return Err(StreamError::Failed(failure(&event))),
            _ => {}
        }
        Ok(Piece::default())
    }

    fn finish(self: Box<Self>) -> Result<Response, StreamError> {
        let Some(whole) = self.whole else {
            return Err(StreamError::Invalid(
                "the stream ended before response.completed".into(),
            ));
        };
        parse_whole(&whole, super::parse)
    }
}

/// An error object (`code`, `message`) as the provider's failure, its
/// code as the type the retry rules read.
fn failure(error: &Value) -> ErrorDetail {
    let mut detail = error_detail(&error.to_string());
    if let Some(code) = error["code"].as_str() {
        detail.error_type = Some(code.to_string());
    }
    detail
}
