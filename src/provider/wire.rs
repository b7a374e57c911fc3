//! Helpers the three wire formats share: the endpoint's path, the tool
//! schema, numbers, tool-call arguments in and out, and token counts.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Tool, ToolCall};

/// An assistant message as OpenAI and Ollama write it: role and content
/// (a string, `""` when empty, never null: design D15), and `tool_calls`,
/// each written by `call`, when there are any.
pub(crate) fn assistant_message(
    content: &str,
    tool_calls: &[ToolCall],
    call: impl Fn(&ToolCall) -> Value,
) -> Value {
    let mut message = json!({"role": "assistant", "content": content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = tool_calls.iter().map(call).collect();
    }
    message
}

/// A message of `role` with `content`, moved in: `json!` would copy the
/// content whole (its `to_value`) and drop the original, which in a
/// fan-out's parent request is most of its cost (design §3.15).
pub(crate) fn role_content(role: &str, content: impl Into<Value>) -> Value {
    let mut message = serde_json::Map::new();
    message.insert("role".into(), Value::String(role.into()));
    message.insert("content".into(), content.into());
    Value::Object(message)
}

/// The JSON Schema object for a tool's parameters: its own schema when it
/// has one.
pub(crate) fn input_schema(tool: &Tool) -> Value {
    if let Some(schema) = &tool.schema {
        return schema.clone();
    }
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, p) in &tool.parameters {
        let mut prop = json!({"type": p.kind, "description": p.description});
        if !p.allowed.is_empty() {
            prop["enum"] = json!(p.allowed);
        }
        properties.insert(name.clone(), prop);
        if p.required {
            required.push(name.clone());
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// A number as JSON, whole numbers without a fraction (`0`, not `0.0`: design D8).
pub(crate) fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Tool-call arguments from a JSON object: strings as they are, `null` as
/// empty, anything else as its JSON text (design D3). A non-object gives no arguments.
pub(crate) fn arguments_from_json(v: &Value) -> BTreeMap<String, String> {
    let Some(obj) = v.as_object() else {
        return BTreeMap::new();
    };
    obj.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (k.clone(), s)
        })
        .collect()
}

/// Arguments as a wire format sends them: a JSON object, or a string that
/// holds one. Invalid JSON gives no arguments (design §4.3).
pub(crate) fn arguments_from_wire(v: &Value) -> BTreeMap<String, String> {
    match v {
        Value::String(s) => json_value::from_str(s)
            .map(|v| arguments_from_json(&v))
            .unwrap_or_default(),
        other => arguments_from_json(other),
    }
}

/// A string field of an answer read leniently (a response's id, the model
/// that answered): anything but a string is empty.
pub(crate) fn string(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// A token count as a server reports it. Servers send null, leave counts
/// out, or send floats and negative numbers; none of that is a failed
/// answer. A non-negative integer is itself; a positive float is rounded
/// down and saturates at `u64::MAX`; anything else is unknown, 0.
pub(crate) fn count(v: &Value) -> u64 {
    if let Some(n) = v.as_u64() {
        return n;
    }
    match v.as_f64() {
        // `as` from a float saturates; NaN fails `x > 0.0`.
        Some(x) if x > 0.0 => x as u64,
        _ => 0,
    }
}

/// Text as one path segment of a URL: every byte but the unreserved ones
/// percent-encoded (a Bedrock model ID's `:` as `%3A`, as AWS's SDKs send
/// it; a provider's batch or file id), so it never adds a segment.
pub(crate) fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `authorization: Bearer` header of an OpenAI-style wire, when there
/// is a key.
pub(crate) fn bearer(key: Option<&str>) -> Vec<(&'static str, String)> {
    key.map(|key| ("authorization", format!("Bearer {key}")))
        .into_iter()
        .collect()
}

/// `{base}/v1/{path}`; a base whose path already has a version segment
/// (`/v1`, as many OpenAI-compatible servers are documented, or Gemini's
/// `/v1beta/openai`) is not given a second one.
pub(crate) fn join_v1(base: &str, path: &str) -> String {
    if versioned(base) {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
    }
}

/// Whether the path of `url` has a segment `v<digits>`, maybe followed by
/// letters (`v1`, `v1beta`, `v4`).
fn versioned(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let Some((_, path)) = rest.split_once('/') else {
        return false;
    };
    path.split('/').any(|seg| {
        seg.strip_prefix('v').is_some_and(|v| {
            let digits = v.bytes().take_while(u8::is_ascii_digit).count();
            digits > 0 && v.bytes().skip(digits).all(|b| b.is_ascii_alphabetic())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_sent_without_fraction() {
        assert_eq!(number(0.0).to_string(), "0");
        assert_eq!(number(0.7).to_string(), "0.7");
    }

    #[test]
    fn base_urls_ending_in_v1_get_no_second_v1() {
        assert_eq!(join_v1("http://h:1", "messages"), "http://h:1/v1/messages");
        assert_eq!(
            join_v1("http://h:1/v1", "chat/completions"),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            join_v1(
                "https://generativelanguage.googleapis.com/v1beta/openai",
                "chat/completions"
            ),
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
        );
        assert_eq!(
            join_v1("https://api.minimax.io/anthropic", "messages"),
            "https://api.minimax.io/anthropic/v1/messages"
        );
        assert_eq!(
            join_v1("http://vault:1/video", "messages"),
            "http://vault:1/video/v1/messages"
        );
    }
}
