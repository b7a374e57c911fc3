//! A server's tools as axe takes them (design §9.3, issue 31): each page of
//! `tools/list` read one tool at a time from the answer's text, never as a
//! whole tree, and kept only within the caps — 1,000 tools and 4 MiB of
//! names, descriptions and schemas per server. The tool that does not fit
//! and every one after it are refused, and no further page is asked for;
//! one warning says so. A name listed again is kept once, with a warning.

use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use super::McpTool;
use super::rpc::{shown, string};

/// The most tools taken from one server.
pub const MAX_TOOLS: usize = 1000;

/// The most bytes of names, descriptions and schemas taken from one server.
pub const MAX_BYTES: usize = 4 << 20;

/// What a schema's every `{`, `[`, `,` and `:` is charged beyond its byte:
/// each opens a value or an entry of the tree it is held as, which takes
/// tens of bytes whatever its text (a 4 MiB schema of `{"a":0}` would
/// otherwise take 360 MB).
const PER_VALUE: usize = 32;

/// The tools taken so far, and what was left out.
#[derive(Default)]
pub struct Listing {
    pub tools: Vec<McpTool>,
    bytes: usize,
    names: HashSet<String>,
    /// A tool did not fit: it and the rest were refused.
    pub full: bool,
    /// Names listed again, in order (a few), and how many in all.
    twice: Vec<String>,
    twice_count: usize,
}

/// One page of `tools/list`, its tools left as text.
#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "nextCursor")]
    next: Option<&'a RawValue>,
}

/// One listed tool, leniently: anything but an object is passed over.
#[derive(Deserialize)]
struct Entry<'a> {
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    description: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "inputSchema")]
    schema: Option<&'a RawValue>,
}

impl Listing {
    /// Takes the tools of one page's answer (`result`, as the server wrote
    /// it): the cursor of the next page when the listing goes on.
    pub fn page(&mut self, result: &RawValue) -> Result<Option<String>, String> {
        let page: Page = serde_json::from_str(result.get())
            .map_err(|_| "the answer is not an object".to_string())?;
        let Some(tools) = page.tools else {
            return Err("the answer has no tools array".into());
        };
        let mut de = serde_json::Deserializer::from_str(tools.get());
        de::Deserializer::deserialize_seq(&mut de, Take(self))
            .map_err(|_| "the answer's tools are not an array".to_string())?;
        Ok(string(page.next).filter(|c| !c.is_empty() && !self.full))
    }

    /// One listed tool: kept, passed over, or refused with the rest.
    fn take(&mut self, raw: &RawValue) {
        let Ok(entry) = serde_json::from_str::<Entry>(raw.get()) else {
            return;
        };
        let Some(name) = string(entry.name) else {
            return;
        };
        if self.names.contains(&name) {
            self.twice_count += 1;
            if self.twice.len() < 3 && !self.twice.contains(&name) {
                self.twice.push(name);
            }
            return;
        }
        let description = string(entry.description).unwrap_or_default();
        let schema = entry.schema.map_or("null", RawValue::get);
        let cost = name.len() + description.len() + weight(schema);
        if self.tools.len() == MAX_TOOLS || self.bytes + cost > MAX_BYTES {
            self.full = true;
            return;
        }
        self.bytes += cost;
        self.names.insert(name.clone());
        self.tools.push(McpTool {
            name,
            description,
            // Deeper than the parser goes: not an object schema, not offered.
            schema: serde_json::from_str(schema).unwrap_or(Value::Null),
        });
    }

    /// The warnings about what was left out, for the server `server`: one
    /// for the caps, one for the names listed twice.
    pub fn warnings(&self, server: &str) -> Vec<String> {
        let mut out = Vec::new();
        if self.full {
            out.push(format!(
                "MCP server \"{server}\" lists more than axe takes from one server \
                 ({MAX_TOOLS} tools, {} MiB of names, descriptions and schemas): the first {} \
                 are taken, the rest refused",
                MAX_BYTES >> 20,
                self.tools.len()
            ));
        }
        if let Some(first) = self.twice.first() {
            let more = match self.twice_count - 1 {
                0 => String::new(),
                n => format!(" (and {n} more names listed again)"),
            };
            out.push(format!(
                "MCP server \"{server}\" lists \"{}\" twice{more}: each name is offered once, \
                 as first listed",
                shown(first, 64)
            ));
        }
        out
    }
}

/// The visitor of a page's tools: each taken in turn until one does not
/// fit, the rest read past without being kept.
struct Take<'l>(&'l mut Listing);

impl<'de> Visitor<'de> for Take<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of tools")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while !self.0.full {
            match seq.next_element::<&RawValue>()? {
                Some(raw) => self.0.take(raw),
                None => return Ok(()),
            }
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// What a schema's JSON text costs to hold: its bytes, whitespace outside
/// strings left out, and [`PER_VALUE`] more for each value or entry.
fn weight(json: &str) -> usize {
    let (mut n, mut in_string, mut escaped) = (0, false, false);
    for b in json.bytes() {
        if in_string {
            n += 1;
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        n += match b {
            b'"' => {
                in_string = true;
                1
            }
            b'{' | b'[' | b',' | b':' => 1 + PER_VALUE,
            b' ' | b'\t' | b'\n' | b'\r' => 0,
            _ => 1,
        };
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: serde_json::Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).unwrap()
    }

    fn tool(name: &str, description: &str) -> serde_json::Value {
        serde_json::json!({"name": name, "description": description, "inputSchema": {"type": "object"}})
    }

    #[test]
    fn tools_past_the_count_are_refused_and_no_page_is_asked_for() {
        let mut l = Listing::default();
        let tools: Vec<_> = (0..MAX_TOOLS + 5)
            .map(|i| tool(&format!("t{i}"), ""))
            .collect();
        let next = l.page(&raw(serde_json::json!({"tools": tools, "nextCursor": "2"})));
        assert_eq!(next, Ok(None));
        assert_eq!(l.tools.len(), MAX_TOOLS);
        assert!(l.full);
        assert_eq!(l.warnings("s").len(), 1);
    }

    #[test]
    fn a_listing_within_the_caps_goes_on_to_the_next_page() {
        let mut l = Listing::default();
        let page = serde_json::json!({"tools": [tool("a", "x"), 5, {"name": 1}, tool("a", "y")], "nextCursor": "2"});
        assert_eq!(l.page(&raw(page)), Ok(Some("2".into())));
        assert_eq!(l.tools.len(), 1);
        assert_eq!(l.tools[0].description, "x");
        let w = l.warnings("s");
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("lists \"a\" twice"), "{w:?}");
    }

    #[test]
    fn bytes_past_the_cap_are_refused() {
        let mut l = Listing::default();
        let big = "d".repeat(MAX_BYTES / 3);
        let page = serde_json::json!({"tools": [tool("a", &big), tool("b", &big), tool("c", &big), tool("e", "")]});
        assert_eq!(l.page(&raw(page)), Ok(None));
        assert_eq!(l.tools.len(), 2);
        assert!(l.full);
    }

    #[test]
    fn a_schema_weighs_its_text_and_its_values() {
        assert_eq!(weight(r#"{"type": "object"}"#), 17 + 2 * PER_VALUE);
        assert_eq!(weight(r#""{[,:""#), 6);
        assert_eq!(weight(r#"["a\"", 1]"#), 9 + 2 * PER_VALUE);
    }
}
