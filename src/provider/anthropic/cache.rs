//! Where an Anthropic request marks its prompt-cache breakpoints (design
//! §4.10): `cache_control: {"type": "ephemeral"}` on the last tool, on the
//! system prompt, and on the last block of the newest message and of the
//! message that ended the previous request, so that each turn of a tool
//! loop reads the previous turn's prefix from the cache and writes its own.
//!
//! The API renders tools, then system, then messages, and caches the whole
//! prefix up to a marked block; it takes at most four marks a request, and
//! a prefix shorter than the model's minimum is simply not cached (no
//! error), so the marks are sent whatever the length.

use serde_json::{Value, json};

use crate::provider::{Message, Request};

/// The most `cache_control` marks the API takes in one request.
pub const MAX_BREAKPOINTS: usize = 4;

/// Marks `body`, the Anthropic body written for `req`, where its prompt
/// cache breakpoints go. Its `messages` are `req.messages`, one for one.
pub fn mark(body: &mut Value, req: &Request) {
    // `get_mut`, not indexing, which would add a `null` for a missing key.
    if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|t| t.last_mut())
    {
        set(last);
    }
    // The system prompt as a string has no place for the mark: it goes as
    // one text block.
    if let Some(text) = body["system"].as_str().filter(|s| !s.trim().is_empty()) {
        body["system"] = json!([{"type": "text", "text": text, "cache_control": ephemeral()}]);
    }
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        for i in message_marks(&req.messages) {
            if let Some(m) = messages.get_mut(i) {
                mark_last_block(m);
            }
        }
    }
}

/// The value of every mark: the API's default 5-minute cache.
fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

fn set(block: &mut Value) {
    if let Some(o) = block.as_object_mut() {
        o.insert("cache_control".into(), ephemeral());
    }
}

/// The messages whose last block is marked, at most two: the newest, and
/// the one that ended the previous request (the last user-side message
/// before the newest model turn), where the previous turn put its own mark.
/// Marking that one again makes the read certain however many blocks the
/// newest turn added (the API looks back only so far from a mark for an
/// earlier entry). A paused turn's blocks go back exactly as they came and
/// are never marked.
fn message_marks(messages: &[Message]) -> Vec<usize> {
    let user_side = |m: &Message| {
        matches!(
            m,
            Message::User(_) | Message::Attached { .. } | Message::ToolResults(_)
        )
    };
    let mut marks = Vec::with_capacity(2);
    if let Some(last) = messages.len().checked_sub(1)
        && user_side(&messages[last])
    {
        marks.push(last);
    }
    let model_turn = messages.iter().rposition(|m| !user_side(m));
    if let Some(turn) = model_turn
        && let Some(prev) = messages[..turn].iter().rposition(user_side)
    {
        marks.push(prev);
    }
    marks
}

/// Marks a message's last content block; a string content becomes one
/// text block first. Blank text is left as it is: the API refuses an empty
/// text block.
fn mark_last_block(message: &mut Value) {
    let content = &mut message["content"];
    if let Some(text) = content.as_str() {
        if text.trim().is_empty() {
            return;
        }
        *content = json!([{"type": "text", "text": text}]);
    }
    if let Some(last) = content.as_array_mut().and_then(|b| b.last_mut()) {
        set(last);
    }
}

/// How many marks `body` carries, anywhere in it.
pub fn count(body: &Value) -> usize {
    match body {
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| usize::from(k == "cache_control") + count(v))
            .sum(),
        Value::Array(a) => a.iter().map(count).sum(),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{Quirks, Tool, ToolCall, ToolResult, anthropic};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "read_file".into(),
            ..ToolCall::default()
        }
    }

    fn results(id: &str) -> Message {
        Message::ToolResults(vec![ToolResult {
            call_id: id.into(),
            tool_name: "read_file".into(),
            content: "text".into(),
            is_error: false,
        }])
    }

    fn looping(turns: usize) -> Request {
        let mut messages = vec![Message::user("go")];
        for t in 0..turns {
            let id = format!("c{t}");
            messages.push(Message::Assistant {
                content: String::new(),
                tool_calls: vec![call(&id)],
                reasoning: Vec::new(),
            });
            messages.push(results(&id));
        }
        Request {
            model: "m".into(),
            system: "You are terse.".into(),
            messages,
            tools: vec![
                Tool {
                    name: "a".into(),
                    ..Tool::default()
                },
                Tool {
                    name: "b".into(),
                    ..Tool::default()
                },
            ],
            prompt_cache: true,
            ..Request::default()
        }
    }

    #[test]
    fn the_newest_message_and_the_previous_requests_end_are_marked() {
        assert_eq!(message_marks(&looping(0).messages), [0]);
        assert_eq!(message_marks(&looping(1).messages), [2, 0]);
        assert_eq!(message_marks(&looping(3).messages), [6, 4]);
        let paused = vec![Message::user("go"), Message::Paused(json!([]))];
        assert_eq!(message_marks(&paused), [0]);
    }

    #[test]
    fn never_more_than_four_marks_however_long_the_loop() {
        for turns in 0..60 {
            let body = anthropic::body(&looping(turns), Quirks::default());
            let n = count(&body);
            assert!(n <= MAX_BREAKPOINTS, "{turns} turns: {n} marks");
            assert_eq!(n, if turns == 0 { 3 } else { 4 }, "{turns} turns");
        }
    }

    #[test]
    fn a_request_without_tools_or_system_gets_no_such_keys() {
        let req = Request {
            messages: vec![Message::user("hi")],
            prompt_cache: true,
            ..Request::default()
        };
        let body = anthropic::body(&req, Quirks::default());
        assert!(body.get("tools").is_none(), "{body}");
        assert!(body.get("system").is_none(), "{body}");
        assert_eq!(count(&body), 1);
    }

    #[test]
    fn blank_text_is_not_marked() {
        let req = Request {
            messages: vec![Message::user("  ")],
            prompt_cache: true,
            ..Request::default()
        };
        let body = anthropic::body(&req, Quirks::default());
        assert_eq!(body["messages"][0]["content"], "  ");
        assert_eq!(count(&body), 0);
    }
}
