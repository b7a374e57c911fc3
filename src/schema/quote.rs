//! Values quoted in the schema check's problems: at most a few hundred
//! characters of any value, so that a huge answer that breaks a rule does
//! not become a huge repair request or error line.

use std::io::{self, Write};

use serde_json::Value;

/// The most bytes of one value a problem quotes.
const MAX_QUOTED: usize = 200;

/// The most bytes a list of allowed values takes in a problem.
const MAX_LISTED: usize = 300;

/// `v` as compact JSON, cut after [`MAX_QUOTED`] bytes with a marker.
pub fn value(v: &Value) -> String {
    let mut w = Capped {
        buf: Vec::new(),
        cut: false,
    };
    // The writer refuses past its cap, which ends serialising early.
    let _ = serde_json::to_writer(&mut w, v);
    finish(w)
}

/// A schema's own text (a pattern), quoted as a JSON string, cut likewise.
pub fn text(s: &str) -> String {
    value(&Value::String(s.to_string()))
}

/// A property name inside a message's quotes, cut likewise.
pub fn name(s: &str) -> String {
    if s.len() <= MAX_QUOTED {
        return s.to_string();
    }
    let mut end = MAX_QUOTED;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...[{} bytes in all]", &s[..end], s.len())
}

/// Allowed values (`enum`) joined by `, `, as many as fit in [`MAX_LISTED`].
pub fn list(values: &[Value]) -> String {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if out.len() > MAX_LISTED {
            out.push_str(&format!("... ({} values in all)", values.len()));
            break;
        }
        out.push_str(&value(v));
    }
    out
}

/// A writer that keeps the first [`MAX_QUOTED`] bytes and then refuses.
struct Capped {
    buf: Vec<u8>,
    cut: bool,
}

impl Write for Capped {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = MAX_QUOTED.saturating_sub(self.buf.len());
        if data.len() > room {
            self.buf.extend_from_slice(&data[..room]);
            self.cut = true;
            return Err(io::Error::other("quoted enough"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn finish(w: Capped) -> String {
    let mut s = match String::from_utf8(w.buf) {
        Ok(s) => s,
        // Cut inside a character: keep what is whole.
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    if w.cut {
        s.push_str("...[cut]");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_long_value_is_cut_with_a_marker() {
        let big = json!({"text": "é".repeat(100_000)});
        let q = value(&big);
        assert!(q.len() <= MAX_QUOTED + 10, "{}", q.len());
        assert!(q.ends_with("...[cut]"), "{q}");
        assert_eq!(value(&json!({"a": 1})), "{\"a\":1}");
    }

    #[test]
    fn a_long_list_says_how_many() {
        let values: Vec<Value> = (0..1000)
            .map(|i| json!(format!("value number {i}")))
            .collect();
        let l = list(&values);
        assert!(l.len() < MAX_LISTED + 250, "{}", l.len());
        assert!(l.ends_with("(1000 values in all)"), "{l}");
    }
}
