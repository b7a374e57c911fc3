//! Streamed answers (design §4.11): a [`Decoder`] is fed the body of a
//! streamed response in whatever chunks the network gives, frames it as
//! its wire says (`Frames`: server-sent events, `sse.rs`; one JSON
//! object per line, here; or AWS's binary event-stream messages,
//! `eventstream.rs`), and hands each event to the wire's `Assembly`
//! (its folder's `stream.rs`), which gives back the piece of
//! answer text to print as it comes, and assembles the rest — tool calls
//! from their deltas, the stop reason, the usage that comes last — into
//! the very shape of a non-streamed answer, which that wire's own parser
//! then reads. So a streamed answer means what the same answer sent whole
//! would mean: refusals, cut-off answers and paused turns included (design
//! ch. 5).
//!
//! The stream is untrusted: one line or event over [`MAX_EVENT_BYTES`], or
//! a stream over [`MAX_BODY_BYTES`], is an error; so is a stream that ends
//! before its wire's last event, or in the middle of a binary message. An
//! error event (or an event-stream exception) is the provider's failure.

pub mod eventstream;
pub(crate) mod shape;
pub mod sse;

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor, value::MapAccessDeserializer};
use serde_json::Value;

use super::{ErrorDetail, MAX_BODY_BYTES, Response, Wire, error_detail};

/// The most bytes one line or one event of a stream may have.
pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

/// Why a stream gave no answer.
#[derive(Debug, PartialEq)]
pub enum StreamError {
    /// Not a stream of the wire's shape, or one that ended too soon: an
    /// invalid response (design §4.8).
    Invalid(String),
    /// The provider's own error event, in the middle of the stream.
    Failed(ErrorDetail),
}

/// How a wire cuts its streamed answer into events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frames {
    /// Server-sent events (`text/event-stream`).
    Sse,
    /// One JSON object per line (`application/x-ndjson`), each an event
    /// named `line`.
    Lines,
    /// AWS's binary event-stream messages
    /// (`application/vnd.amazon.eventstream`), each an event named by its
    /// `:event-type`, its payload the data.
    EventStream,
}

/// One wire's streamed answer being put together from its events (each
/// wire's `stream.rs`).
pub(crate) trait Assembly: fmt::Debug {
    /// One event, by its name and data: what it adds to the answer text,
    /// or the provider's failure, or a stream not of the wire's shape.
    fn event<'a>(&mut self, name: &str, data: &'a str) -> Result<Piece<'a>, StreamError>;

    /// Whether the wire's last event came: nothing more is to be waited for.
    fn ended(&self) -> bool;

    /// The answer, read as the same answer sent whole would be: an error
    /// when the stream ended before its wire's last event.
    fn finish(self: Box<Self>) -> Result<Response, StreamError>;
}

/// A stream being read: its framing and its wire's assembly.
#[derive(Debug)]
pub struct Decoder {
    framing: Framing,
    assembly: Box<dyn Assembly>,
    /// Bytes fed so far.
    read: u64,
}

#[derive(Debug)]
enum Framing {
    Sse(sse::Sse),
    /// Newline-delimited JSON: the line being read.
    Lines(Vec<u8>),
    EventStream(eventstream::EventStream),
}

/// A `T` read from a JSON object only. The text-only events' structs
/// (each wire's file) are read without a JSON tree, and serde reads a
/// struct from an array of its fields in order as well; but the tree the
/// full path reads such an event into has no fields in an array, so an
/// array must not read as text there either.
pub(crate) struct Object<T>(pub(crate) T);

/// What an assembly reads from one event or line: the text to print, and
/// whether a content or tool-call delta came (for the time to first token).
#[derive(Debug, Default)]
pub(crate) struct Piece<'a> {
    pub(crate) text: Option<Cow<'a, str>>,
    pub(crate) delta: bool,
}

impl Frames {
    /// The `accept` header of a request for a stream so framed.
    pub(crate) fn accept(self) -> &'static str {
        match self {
            Frames::Sse => "text/event-stream",
            Frames::Lines => "application/x-ndjson",
            Frames::EventStream => "application/vnd.amazon.eventstream",
        }
    }
}

impl Decoder {
    /// A decoder for `wire`'s streamed answer.
    pub fn new(wire: Wire) -> Decoder {
        let format = wire.format();
        let framing = match format.frames() {
            Frames::Sse => Framing::Sse(sse::Sse::new(MAX_EVENT_BYTES)),
            Frames::Lines => Framing::Lines(Vec::new()),
            Frames::EventStream => {
                Framing::EventStream(eventstream::EventStream::new(MAX_EVENT_BYTES))
            }
        };
        Decoder {
            framing,
            assembly: format.assembly(),
            read: 0,
        }
    }

    /// Reads the next `bytes` of the stream: each piece of answer text is
    /// handed to `on_text` as it completes. True when a content or
    /// tool-call delta was among them.
    pub fn feed(
        &mut self,
        bytes: &[u8],
        on_text: &mut dyn FnMut(&str),
    ) -> Result<bool, StreamError> {
        self.read = self
            .read
            .saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        if self.read > MAX_BODY_BYTES {
            return Err(StreamError::Invalid(format!(
                "stream larger than {} MiB",
                MAX_BODY_BYTES >> 20
            )));
        }
        let mut delta = false;
        let assembly = &mut self.assembly;
        let mut take = |event: &str, data: &str| -> Result<(), StreamError> {
            let piece = assembly.event(event, data)?;
            delta |= piece.delta;
            if let Some(text) = piece.text.filter(|t| !t.is_empty()) {
                on_text(&text);
            }
            Ok(())
        };
        let too_long = || {
            StreamError::Invalid(format!(
                "a stream event larger than {} MiB",
                MAX_EVENT_BYTES >> 20
            ))
        };
        match &mut self.framing {
            Framing::Sse(sse) => sse.feed(bytes, &mut |e| take(e.name, e.data), too_long)?,
            Framing::Lines(line) => {
                let mut rest = bytes;
                while !rest.is_empty() {
                    let end = sse::line_end(rest, false).map_or(rest.len(), |i| i + 1);
                    let (part, after) = rest.split_at(end);
                    rest = after;
                    if line.len().saturating_add(part.len()) > MAX_EVENT_BYTES {
                        return Err(too_long());
                    }
                    if !part.ends_with(b"\n") {
                        line.extend_from_slice(part);
                        break;
                    }
                    // A line whole in this chunk is read where it is, not
                    // copied (design §4.11).
                    let whole: &[u8] = if line.is_empty() {
                        part
                    } else {
                        line.extend_from_slice(part);
                        line
                    };
                    take("line", sse::utf8(whole).trim())?;
                    line.clear();
                }
            }
            Framing::EventStream(es) => es.feed(
                bytes,
                &mut |m| match m.message_type {
                    "exception" | "error" => Err(exception(&m)),
                    _ => take(m.kind, &sse::utf8(m.payload)),
                },
                StreamError::Invalid,
            )?,
        }
        Ok(delta)
    }

    /// Whether the wire's last event came: nothing more is to be waited for.
    pub fn ended(&self) -> bool {
        self.assembly.ended()
    }

    /// The answer, once the stream has ended: an error when it ended before
    /// its wire's last event.
    pub fn finish(mut self) -> Result<Response, StreamError> {
        // A last line without its newline is still a line.
        if let Framing::Lines(line) = &mut self.framing
            && !line.is_empty()
        {
            self.assembly.event("line", sse::utf8(line).trim())?;
        }
        if let Framing::EventStream(es) = &self.framing
            && es.cut()
        {
            return Err(StreamError::Invalid(
                "the stream ended in the middle of an event-stream message".into(),
            ));
        }
        self.assembly.finish()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Fields(PhantomData)).map(Object)
    }
}

/// `data` as JSON; anything else is an invalid stream.
pub(crate) fn json(data: &str) -> Result<Value, StreamError> {
    serde_json::from_str(data).map_err(|e| {
        StreamError::Invalid(format!(
            "a stream event is not JSON ({e}): {}",
            crate::text::clip(data, 80, "…")
        ))
    })
}

/// An event-stream exception (its `:exception-type`, its payload's
/// message) or error message (`:error-code`, `:error-message`) as the
/// provider's failure.
fn exception(m: &eventstream::Message<'_>) -> StreamError {
    let mut detail = if m.message_type == "error" {
        ErrorDetail {
            message: crate::text::clip(m.error_message, 300, "…"),
            ..ErrorDetail::default()
        }
    } else {
        error_detail(&String::from_utf8_lossy(m.payload))
    };
    detail.error_type = Some(m.kind.to_string()).filter(|k| !k.is_empty());
    StreamError::Failed(detail)
}

/// An error event (or line) as the provider's failure.
pub(crate) fn failed(data: &str) -> StreamError {
    StreamError::Failed(error_detail(data))
}

/// The assembled answer, read by the wire's own parser: the non-streamed
/// answer's meaning, whatever came in pieces.
pub(crate) fn parse_whole(
    whole: &Value,
    parse: fn(&str) -> Result<Response, String>,
) -> Result<Response, StreamError> {
    parse(&whole.to_string()).map_err(StreamError::Invalid)
}

/// A string field, empty when it is not a string.
pub(crate) fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

#[cfg(test)]
mod tests;
