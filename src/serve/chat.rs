//! A chat completion request as axe serve reads it (design §12.2): the
//! agent named by `model`, the conversation's messages made into the
//! agent's user message, and the options that map onto a run — `stream`,
//! `response_format`'s schema, `max_completion_tokens` (or `max_tokens`)
//! as the bound on the tokens the tree generates. Tools a client gives
//! are refused (the agents use their own) unless the server ignores them;
//! everything else OpenAI defines (temperature, n, ...) is the agent
//! file's to say, and ignored here.

use serde_json::Value;

use super::reply::ApiError;

/// The most messages one request may hold: a longer conversation is
/// refused before any of it is copied.
pub const MAX_MESSAGES: usize = 10_000;

/// What a request asks for.
#[derive(Debug, Default)]
pub struct Chat {
    /// `model`: the agent's name.
    pub agent: String,
    /// The agent's user message: the last user message, after the earlier
    /// turns as context when there are any.
    pub message: String,
    /// The last user message alone (what the agent's memory keeps).
    pub task: String,
    /// The system messages, joined, for the end of the system prompt.
    pub system: Option<String>,
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// `response_format`'s JSON Schema, over the agent's own.
    pub schema: Option<Value>,
    /// `max_completion_tokens`, else `max_tokens`: the most tokens the
    /// tree may generate (output tokens, as OpenAI's bound its answer's).
    pub max_tokens: Option<u64>,
    /// The user messages' image parts, in order: sent with the agent's
    /// message (`images.rs`).
    pub attachments: Vec<crate::provider::Attachment>,
}

/// Reads `body`; `system_allowed`: system messages are taken (else a
/// request with one is refused); `tools_ignored`: a request that gives
/// tools is taken, its tools ignored (else refused).
pub fn parse(body: &[u8], system_allowed: bool, tools_ignored: bool) -> Result<Chat, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}"), None))?;
    let Some(o) = v.as_object() else {
        return Err(ApiError::invalid("the body must be a JSON object", None));
    };
    let agent = match o.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        _ => {
            return Err(ApiError::invalid(
                "`model` (an agent's name) is required",
                "model",
            ));
        }
    };
    let Some(messages) = o.get("messages").and_then(Value::as_array) else {
        return Err(ApiError::invalid("`messages` must be an array", "messages"));
    };
    if messages.len() > MAX_MESSAGES {
        return Err(ApiError::invalid(
            format!("at most {MAX_MESSAGES} messages are taken"),
            "messages",
        ));
    }
    if !tools_ignored {
        refuse_client_tools(o)?;
    }
    let mut chat = conversation(messages, system_allowed)?;
    chat.agent = agent;
    chat.stream = o.get("stream").and_then(Value::as_bool).unwrap_or(false);
    chat.include_usage = o
        .get("stream_options")
        .and_then(|s| s.get("include_usage"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    chat.schema = schema(o.get("response_format"))?;
    chat.max_tokens = max_tokens(o)?;
    Ok(chat)
}

/// A request that gives tools for the model to call (`tools`,
/// `functions`), or that requires a call (`tool_choice` `required` or a
/// named function), is refused out loud: an agent calls its own tools, and
/// a client's would be ignored in silence — its framework would get plain
/// text, or nothing, where it expects a call (design §12.2).
pub fn refuse_client_tools(o: &serde_json::Map<String, Value>) -> Result<(), ApiError> {
    let given = |key| match o.get(key) {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(_) => true,
    };
    let required = match o.get("tool_choice") {
        None | Some(Value::Null) => false,
        Some(Value::String(c)) => c != "none" && c != "auto",
        Some(_) => true,
    };
    let param = if given("tools") {
        "tools"
    } else if given("functions") {
        "functions"
    } else if required {
        "tool_choice"
    } else {
        return Ok(());
    };
    Err(ApiError::invalid(
        format!(
            "axe's agents call their own tools: a request's `{param}` is not taken \
             (axe serve --ignore-client-tools takes the request and ignores them)"
        ),
        param,
    ))
}

/// The messages as the agent's input: the last must be the user's.
pub(super) fn conversation(messages: &[Value], system_allowed: bool) -> Result<Chat, ApiError> {
    let Some((last, earlier)) = messages.split_last() else {
        return Err(ApiError::invalid("`messages` is empty", "messages"));
    };
    if role(last)? != "user" {
        return Err(ApiError::invalid(
            "the last message must be the user's",
            "messages",
        ));
    }
    let mut images = Vec::new();
    let mut system = Vec::new();
    let mut context = String::new();
    for m in earlier {
        let role = role(m)?;
        let text = content(m, (role == "user").then_some(&mut images))?;
        match role {
            "system" | "developer" if !system_allowed => {
                return Err(ApiError::invalid(
                    "this server takes no system messages (axe serve --system-messages \
                     refuse): the agent's own prompt is used",
                    "messages",
                ));
            }
            "system" | "developer" => system.push(text),
            "user" | "assistant" | "tool" => {
                context.push_str(role);
                context.push_str(": ");
                context.push_str(&text);
                context.push_str("\n\n");
            }
            other => {
                return Err(ApiError::invalid(
                    format!("unknown message role {other:?}"),
                    "messages",
                ));
            }
        }
    }
    let task = content(last, Some(&mut images))?;
    let message = if context.is_empty() {
        task.clone()
    } else {
        format!("The conversation so far:\n\n{context}The user's new message:\n\n{task}")
    };
    Ok(Chat {
        message,
        task,
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        attachments: images,
        ..Chat::default()
    })
}

fn role(m: &Value) -> Result<&str, ApiError> {
    m.get("role")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid("every message needs a `role`", "messages"))
}

/// A message's text: a string, or the `text` of its text parts; null for
/// an assistant message that only called tools. A user message's image
/// parts go to `images` (none: they are refused).
fn content(
    m: &Value,
    mut images: Option<&mut Vec<crate::provider::Attachment>>,
) -> Result<String, ApiError> {
    match m.get("content") {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => out.push_str(t),
                    (Some("image_url"), _) if images.is_some() => {
                        if let Some(images) = images.as_deref_mut() {
                            super::images::take(p, images)?;
                        }
                    }
                    _ => {
                        return Err(ApiError::invalid(
                            "only text content parts are taken (and image parts in a \
                             user message)",
                            "messages",
                        ));
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(ApiError::invalid(
            "a message's `content` must be a string or an array of text parts",
            "messages",
        )),
    }
}

/// `response_format`: `json_schema`'s schema, `json_object` as any object,
/// `text` (or none) as no schema.
fn schema(format: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let Some(f) = format.filter(|f| !f.is_null()) else {
        return Ok(None);
    };
    match f.get("type").and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_object") => Ok(Some(serde_json::json!({"type": "object"}))),
        Some("json_schema") => match f.get("json_schema").and_then(|j| j.get("schema")) {
            Some(s) if s.is_object() => Ok(Some(s.clone())),
            _ => Err(ApiError::invalid(
                "response_format.json_schema.schema must be an object",
                "response_format",
            )),
        },
        _ => Err(ApiError::invalid(
            "response_format.type must be text, json_object or json_schema",
            "response_format",
        )),
    }
}

/// `max_completion_tokens`, else `max_tokens`: a whole number of at least 1.
fn max_tokens(o: &serde_json::Map<String, Value>) -> Result<Option<u64>, ApiError> {
    for key in ["max_completion_tokens", "max_tokens"] {
        match o.get(key) {
            None | Some(Value::Null) => continue,
            Some(v) => {
                return match v.as_u64() {
                    Some(n) if n >= 1 => Ok(Some(n)),
                    _ => Err(ApiError::invalid(
                        format!("`{key}` must be a whole number of at least 1"),
                        key,
                    )),
                };
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_turns_come_before_the_last_user_message() {
        let body = br#"{"model":"a","messages":[
            {"role":"user","content":"hi"},
            {"role":"assistant","content":"hello"},
            {"role":"user","content":[{"type":"text","text":"and now?"}]}]}"#;
        let c = parse(body, false, false).unwrap();
        assert_eq!(c.task, "and now?");
        assert_eq!(
            c.message,
            "The conversation so far:\n\nuser: hi\n\nassistant: hello\n\nThe user's new message:\n\nand now?"
        );
    }

    #[test]
    fn system_messages_only_when_allowed() {
        let body = br#"{"model":"a","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"q"}]}"#;
        assert_eq!(parse(body, false, false).unwrap_err().status, 400);
        let c = parse(body, true, false).unwrap();
        assert_eq!(c.system.as_deref(), Some("be brief"));
        assert_eq!(c.message, "q");
    }

    #[test]
    fn the_budget_and_schema_are_read() {
        let body = br#"{"model":"a","max_tokens":5,"max_completion_tokens":9,
            "response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"}}},
            "messages":[{"role":"user","content":"q"}]}"#;
        let c = parse(body, false, false).unwrap();
        assert_eq!(c.max_tokens, Some(9));
        assert_eq!(c.schema, Some(serde_json::json!({"type":"object"})));
        let bad = br#"{"model":"a","max_tokens":0,"messages":[{"role":"user","content":"q"}]}"#;
        assert_eq!(parse(bad, false, false).unwrap_err().status, 400);
    }
}
