//! A text event's shape (design §4.11). Most events of a stream are the
//! same bytes but for their text, and for a field or two that changes with
//! each event and means nothing to axe (OpenAI's `obfuscation`, the
//! Responses API's `sequence_number`, Ollama's `created_at`). Once a wire
//! has read an event in full as one that only adds text, its bytes are
//! kept with holes where those values were: an event that is the same
//! bytes with other values of the same kinds in the holes (a JSON string,
//! or an integer) is the same JSON with other values, so it means what the
//! kept one meant with its own text, and is read by comparing bytes and
//! scanning the holes, with no JSON parse (which was most of a stream's
//! CPU: ~7,300 instructions an event against ~440 now). Anything else is
//! not this shape and is read in full.

use std::borrow::Cow;

use serde_json::value::RawValue;

/// A text-only event's bytes, with holes.
#[derive(Debug)]
pub(crate) struct Shape {
    bytes: Box<str>,
    /// Each hole's span in `bytes` (a value, a string's quotes included),
    /// in order, apart.
    holes: Vec<Hole>,
}

#[derive(Debug, Clone, Copy)]
struct Hole {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The event's text: a JSON string, handed out.
    Text,
    /// A JSON string, let be.
    String,
    /// An integer, let be.
    Integer,
}

impl Shape {
    /// The shape of `data`, an event read in full as adding `text` (a slice
    /// of `data`, the string's contents between its quotes) and nothing
    /// else; `others` are values in it that may change from event to event
    /// and mean nothing (slices of `data` too). None when `text` is not a
    /// slice of `data` (it had escapes, and was unescaped elsewhere):
    /// the next such event will do.
    pub(crate) fn learn(data: &str, text: &str, others: &[Option<&RawValue>]) -> Option<Shape> {
        let start = offset(data, text)?.checked_sub(1)?;
        let end = start + text.len() + 2;
        if data.as_bytes().get(start) != Some(&b'"') || data.as_bytes().get(end - 1) != Some(&b'"')
        {
            return None;
        }
        let mut holes = vec![Hole {
            start,
            end,
            kind: Kind::Text,
        }];
        for raw in others.iter().flatten() {
            let raw = raw.get();
            let kind = match raw.as_bytes().first() {
                Some(b'"') => Kind::String,
                Some(b'-' | b'0'..=b'9') if integer(raw.as_bytes()) == Some(raw.len()) => {
                    Kind::Integer
                }
                // Anything else stays as it is, bytes to compare.
                _ => continue,
            };
            let start = offset(data, raw)?;
            holes.push(Hole {
                start,
                end: start + raw.len(),
                kind,
            });
        }
        holes.sort_by_key(|h| h.start);
        if holes.windows(2).any(|w| w[0].end > w[1].start) {
            return None;
        }
        Some(Shape {
            bytes: data.into(),
            holes,
        })
    }

    /// The text of `data` when it is this shape: the kept bytes between the
    /// holes, and in each hole a value of its kind.
    pub(crate) fn text<'a>(&self, data: &'a str) -> Option<Cow<'a, str>> {
        let (kept, new) = (self.bytes.as_bytes(), data.as_bytes());
        let (mut at_kept, mut at) = (0, 0);
        let mut text = None;
        for hole in &self.holes {
            let same = &kept[at_kept..hole.start];
            if !new.get(at..)?.starts_with(same) {
                return None;
            }
            at += same.len();
            let rest = &new[at..];
            let len = match hole.kind {
                Kind::Integer => integer(rest)?,
                Kind::Text | Kind::String => string(rest)?,
            };
            if hole.kind == Kind::Text {
                text = Some(data.get(at..at + len)?);
            }
            at += len;
            at_kept = hole.end;
        }
        if new.get(at..)? != &kept[at_kept..] {
            return None;
        }
        let quoted = text?;
        let inner = quoted.get(1..quoted.len() - 1)?;
        if inner.contains('\\') {
            serde_json::from_str::<String>(quoted).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }
}

/// Where `part` begins in `whole`, when it is a slice of it.
fn offset(whole: &str, part: &str) -> Option<usize> {
    let at = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (at.checked_add(part.len())? <= whole.len()).then_some(at)
}

/// The length of the JSON string `bytes` begins with, quotes included:
/// its escapes valid, no control character in it.
fn string(bytes: &[u8]) -> Option<usize> {
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut i = 1;
    loop {
        match *bytes.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' => {
                i += match *bytes.get(i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
                    b'u' if bytes.get(i + 2..i + 6)?.iter().all(u8::is_ascii_hexdigit) => 6,
                    _ => return None,
                };
            }
            0..0x20 => return None,
            _ => i += 1,
        }
    }
}

/// The length of the JSON integer `bytes` begins with (`-`, then `0` or
/// digits not led by a 0). What follows is the kept bytes' to check: never
/// a digit, a `.` or an exponent after a value in the kept event.
fn integer(bytes: &[u8]) -> Option<usize> {
    let sign = usize::from(bytes.first() == Some(&b'-'));
    let digits = bytes[sign..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    let lead_zero = digits > 1 && bytes[sign] == b'0';
    (digits > 0 && !lead_zero).then_some(sign + digits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEPT: &str =
        r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#;

    /// The shape of [`KEPT`]: its text, its sequence number and its
    /// obfuscation the holes.
    fn kept() -> Shape {
        #[derive(serde::Deserialize)]
        struct Holes<'a> {
            #[serde(borrow)]
            seq: &'a RawValue,
            #[serde(borrow)]
            obfuscation: &'a RawValue,
        }
        let h: Holes = serde_json::from_str(KEPT).unwrap();
        let at = KEPT.find("Hi").unwrap();
        Shape::learn(KEPT, &KEPT[at..at + 2], &[Some(h.seq), Some(h.obfuscation)]).unwrap()
    }

    #[test]
    fn the_same_bytes_with_other_values_in_the_holes_give_their_text() {
        let s = kept();
        assert_eq!(s.text(KEPT).as_deref(), Some("Hi"));
        let other = r#"{"id":"c","seq":12345,"choices":[{"delta":{"content":"wörld ✓"}}],"obfuscation":"x\"y\u00e9"}"#;
        assert_eq!(s.text(other).as_deref(), Some("wörld ✓"));
        let empty = r#"{"id":"c","seq":-0,"choices":[{"delta":{"content":""}}],"obfuscation":""}"#;
        assert_eq!(s.text(empty).as_deref(), Some(""));
        // Escapes in the text are read as JSON reads them.
        let escaped = r#"{"id":"c","seq":8,"choices":[{"delta":{"content":"a\nb\u0021\\"}}],"obfuscation":"ab"}"#;
        assert!(matches!(s.text(escaped), Some(Cow::Owned(t)) if t == "a\nb!\\"));
        assert!(matches!(s.text(KEPT), Some(Cow::Borrowed("Hi"))));
    }

    #[test]
    fn anything_else_is_not_the_shape() {
        let s = kept();
        for other in [
            // Another id, another field, a field more or fewer, spaces.
            r#"{"id":"d","seq":7,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"refusal":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"},"finish_reason":"stop"}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"}}]}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"} "#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}}"#,
            // A value of another kind in a hole, or not JSON there.
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":null}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":"7","choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7.5,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7e3,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":07,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":-,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"H\x"}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"}}],"obfuscation":"\u12"}"#,
            "{\"id\":\"c\",\"seq\":7,\"choices\":[{\"delta\":{\"content\":\"H\ti\"}}],\"obfuscation\":\"ab\"}",
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi}}],"obfuscation":"ab"}"#,
            r#"{"id":"c","seq":7,"choices":[{"delta":{"content":"Hi"#,
            "",
        ] {
            assert_eq!(s.text(other), None, "{other}");
        }
    }

    #[test]
    fn a_text_with_escapes_is_no_shape_to_learn() {
        let data = r#"{"t":"a\nb"}"#;
        let unescaped = String::from("a\nb");
        assert!(Shape::learn(data, &unescaped, &[]).is_none());
    }
}
