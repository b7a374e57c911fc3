//! A `tools/call` result as the text a tool result carries (design §9.3):
//! text parts as they are, structured content as compact JSON (unless a
//! text part already is that JSON), resources' text, a one-line placeholder
//! for images, audio and binary resources; cut at [`MAX_RESULT_BYTES`].
//! Read from the result's text one content item at a time (issue 31): what
//! is past the cut is counted, not kept.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::client::Outcome;
use super::rpc::string;

/// The longest tool result passed to the model; the rest is cut with a note.
pub const MAX_RESULT_BYTES: usize = 256 << 10;

/// The largest structured content, or text part, compared as JSON: a tree
/// of JSON takes many times its text.
const COMPARED: usize = 64 << 10;

/// What axe reads of a result, leniently.
#[derive(Deserialize)]
struct CallResult<'a> {
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "structuredContent")]
    structured: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "isError")]
    is_error: Option<&'a RawValue>,
}

/// One content item, leniently: a field of another type is left out.
#[derive(Deserialize)]
struct Item<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "mimeType")]
    mime: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    resource: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    uri: Option<&'a RawValue>,
}

/// The text so far, at most [`MAX_RESULT_BYTES`] of it kept, and the
/// structured content to look for among the text parts.
struct Text {
    kept: String,
    total: usize,
    parts: usize,
    structured: Option<Value>,
    /// A text part is the structured content.
    same: bool,
}

/// A `tools/call` result (as the server wrote it) as a tool result.
pub fn outcome(result: &RawValue) -> Outcome {
    let r: Option<CallResult> = serde_json::from_str(result.get()).ok();
    let Some(r) = r else {
        return Outcome {
            text: String::new(),
            is_error: false,
        };
    };
    let structured = r.structured.filter(|s| s.get() != "null");
    let mut text = Text {
        kept: String::new(),
        total: 0,
        parts: 0,
        structured: structured
            .filter(|s| s.get().len() <= COMPARED)
            .and_then(|s| serde_json::from_str(s.get()).ok()),
        same: false,
    };
    if let Some(content) = r.content {
        let mut de = serde_json::Deserializer::from_str(content.get());
        let _ = de::Deserializer::deserialize_seq(&mut de, Each(&mut text));
    }
    if let Some(s) = structured
        && !text.same
    {
        match text.structured.take() {
            Some(v) => text.push(&v.to_string(), false),
            None => text.push(s.get().trim(), false),
        }
    }
    Outcome {
        text: text.finish(),
        is_error: r
            .is_error
            .and_then(|e| serde_json::from_str(e.get()).ok())
            .unwrap_or(false),
    }
}

impl Text {
    /// Adds a part (after a line end); `compare` when it is a text part
    /// that may be the structured content.
    fn push(&mut self, part: &str, compare: bool) {
        if compare
            && !self.same
            && part.len() <= COMPARED
            && let Some(s) = &self.structured
        {
            self.same = serde_json::from_str::<Value>(part).is_ok_and(|v| &v == s);
        }
        let sep = usize::from(self.parts > 0);
        self.parts += 1;
        self.total += sep + part.len();
        if self.kept.len() <= MAX_RESULT_BYTES {
            if sep == 1 {
                self.kept.push('\n');
            }
            let room = MAX_RESULT_BYTES + 4 - self.kept.len().min(MAX_RESULT_BYTES + 4);
            let mut end = part.len().min(room);
            while !part.is_char_boundary(end) {
                end -= 1;
            }
            self.kept.push_str(&part[..end]);
        }
    }

    /// The text, cut with a note when it was longer than the limit.
    fn finish(mut self) -> String {
        if self.total > MAX_RESULT_BYTES {
            let mut cut = MAX_RESULT_BYTES.min(self.kept.len());
            while !self.kept.is_char_boundary(cut) {
                cut -= 1;
            }
            self.kept.truncate(cut);
            let note = format!("\n... [cut: the result was {} bytes]", self.total);
            self.kept.push_str(&note);
        }
        self.kept
    }
}

/// The visitor of the content array: each item's text added in turn.
struct Each<'t>(&'t mut Text);

impl<'de> Visitor<'de> for Each<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of content items")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(raw) = seq.next_element::<&RawValue>()? {
            match serde_json::from_str::<Item>(raw.get()) {
                Ok(item) => {
                    let is_text = string(item.kind).as_deref() == Some("text");
                    self.0.push(&content_text(&item), is_text);
                }
                Err(_) => self.0.push("[unknown content, not shown]", false),
            }
        }
        Ok(())
    }
}

/// One content item as text.
fn content_text(item: &Item) -> String {
    let kind = string(item.kind).unwrap_or_else(|| "unknown".into());
    let mime = || string(item.mime).unwrap_or_else(|| "unknown type".into());
    match kind.as_str() {
        "text" => string(item.text).unwrap_or_default(),
        "image" | "audio" => {
            // The size of base64 text, without decoding it.
            let size = item
                .data
                .map_or(0, |d| d.get().len().saturating_sub(2) / 4 * 3);
            format!("[{kind}: {}, about {size} bytes, not shown]", mime())
        }
        "resource" => {
            let r = item
                .resource
                .and_then(|r| serde_json::from_str::<Item>(r.get()).ok());
            let Some(r) = r else {
                return "[resource ?: unknown type, binary, not shown]".into();
            };
            match string(r.text) {
                Some(t) => t,
                None => format!(
                    "[resource {}: {}, binary, not shown]",
                    string(r.uri).unwrap_or_else(|| "?".into()),
                    string(r.mime).unwrap_or_else(|| "unknown type".into())
                ),
            }
        }
        "resource_link" => format!(
            "[resource link: {} {}]",
            string(item.name).unwrap_or_default(),
            string(item.uri).unwrap_or_else(|| "?".into())
        ),
        other => format!("[{other} content, not shown]"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Outcome {
        outcome(&RawValue::from_string(v.to_string()).unwrap())
    }

    #[test]
    fn every_kind_of_content_becomes_text() {
        let r = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "AA==", "mimeType": "x/y"}},
            ],
            "structuredContent": {"a": 1},
            "isError": true
        });
        let o = of(r);
        assert!(o.is_error);
        assert_eq!(
            o.text,
            "hello\n[image: image/png, about 3 bytes, not shown]\nbody\n[resource file:///b: x/y, binary, not shown]\n{\"a\":1}"
        );
    }

    #[test]
    fn structured_content_already_in_the_text_is_not_repeated() {
        let r = json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}});
        assert_eq!(of(r).text, "{\"a\": 1}");
    }

    #[test]
    fn a_long_result_is_cut_with_its_length() {
        // Two-byte characters, so that the cut falls inside one.
        let part = "é".repeat(MAX_RESULT_BYTES / 4 + 10);
        let r =
            json!({"content": [{"type": "text", "text": part}, {"type": "text", "text": part}]});
        let o = of(r);
        let total = 2 * part.len() + 1;
        let note = format!("\n... [cut: the result was {total} bytes]");
        let kept = o.text.strip_suffix(&note).expect("the note");
        assert!(kept.starts_with(&format!("{part}\n")));
        assert_eq!(kept.len(), MAX_RESULT_BYTES - 1);
    }
}
