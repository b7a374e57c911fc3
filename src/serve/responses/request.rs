//! A Responses API request (`POST /v1/responses`) as axe serve reads it
//! (design §12.6): made into the same [`Chat`] a chat completion is, so
//! that both run alike — `model` the agent, `input` (a string, or message
//! items of text parts) the conversation, `instructions` a system message
//! before them, `text.format` the output schema, `max_output_tokens` the
//! bound chat's `max_tokens` is. What names state axe does not keep
//! (`previous_response_id`, `conversation`, `background`, a stored
//! `prompt`) or tools of the client's is refused; sampling and the like
//! (`temperature`, `reasoning`, `store`, `include`, ...) are the agent
//! file's to say, and ignored.

use serde_json::{Map, Value, json};

use super::super::chat::{self, Chat};
use super::super::reply::ApiError;

/// What a request asks for: the run, and what its answer says back.
#[derive(Debug, Default)]
pub struct Ask {
    pub chat: Chat,
    /// `instructions` as sent (null when none), said back in the response.
    pub instructions: Value,
    /// `text` with its `format` as sent (`{"format": {"type": "text"}}`
    /// when none).
    pub text: Value,
    /// `metadata` as sent (`{}` when none).
    pub metadata: Value,
}

/// Reads `body`; `system_allowed` and `tools_ignored` as chat's
/// (instructions are a system message; the client's tools are refused as
/// chat refuses them, unless `--ignore-client-tools`).
pub fn parse(body: &[u8], system_allowed: bool, tools_ignored: bool) -> Result<Ask, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::invalid(format!("the body is not JSON: {e}"), None))?;
    let Some(o) = v.as_object() else {
        return Err(ApiError::invalid("the body must be a JSON object", None));
    };
    refuse_state(o)?;
    if !tools_ignored {
        chat::refuse_client_tools(o)?;
    }
    let agent = match o.get("model") {
        Some(Value::String(m)) if !m.is_empty() => m.clone(),
        _ => {
            return Err(ApiError::invalid(
                "`model` (an agent's name) is required",
                "model",
            ));
        }
    };
    let instructions = match o.get("instructions") {
        None | Some(Value::Null) => Value::Null,
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(_) => {
            return Err(ApiError::invalid(
                "`instructions` must be a string",
                "instructions",
            ));
        }
    };
    let messages = messages(o.get("input"), instructions.as_str())?;
    let mut c = chat::conversation(&messages, system_allowed).map_err(|mut e| {
        if e.param.as_deref() == Some("messages") {
            e.param = Some("input".into());
        }
        e
    })?;
    c.agent = agent;
    c.stream = o.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let (schema, text) = format(o.get("text"))?;
    c.schema = schema;
    c.max_tokens = max_output_tokens(o.get("max_output_tokens"))?;
    let metadata = o
        .get("metadata")
        .filter(|m| m.is_object())
        .cloned()
        .unwrap_or_else(|| json!({}));
    Ok(Ask {
        chat: c,
        instructions,
        text,
        metadata,
    })
}

/// What refers to state kept between requests: axe keeps none.
fn refuse_state(o: &Map<String, Value>) -> Result<(), ApiError> {
    let set = |k: &str| o.get(k).is_some_and(|v| !v.is_null() && *v != json!(false));
    for key in ["previous_response_id", "conversation"] {
        if set(key) {
            return Err(ApiError::invalid(
                format!(
                    "axe keeps no conversations (`{key}`): send the earlier turns as `input` items"
                ),
                key,
            ));
        }
    }
    if set("background") {
        return Err(ApiError::invalid(
            "axe keeps no responses to fetch later: `background` is not taken",
            "background",
        ));
    }
    if set("prompt") {
        return Err(ApiError::invalid(
            "stored prompts are OpenAI's: the agent file is the prompt",
            "prompt",
        ));
    }
    Ok(())
}

/// `input` (and `instructions` before it) as chat messages of text.
fn messages(input: Option<&Value>, instructions: Option<&str>) -> Result<Vec<Value>, ApiError> {
    let mut out = Vec::new();
    if let Some(i) = instructions.filter(|i| !i.is_empty()) {
        out.push(json!({"role": "system", "content": i}));
    }
    match input {
        Some(Value::String(s)) => out.push(json!({"role": "user", "content": s})),
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(ApiError::invalid("`input` is empty", "input"));
            }
            if items.len() > chat::MAX_MESSAGES {
                return Err(ApiError::invalid(
                    format!("at most {} input items are taken", chat::MAX_MESSAGES),
                    "input",
                ));
            }
            for item in items {
                out.push(message(item)?);
            }
        }
        _ => {
            return Err(ApiError::invalid(
                "`input` must be a string or an array of message items",
                "input",
            ));
        }
    }
    Ok(out)
}

/// One input item as a chat message: only messages, of text.
fn message(item: &Value) -> Result<Value, ApiError> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("message");
    match kind {
        "message" => {}
        "function_call"
        | "function_call_output"
        | "custom_tool_call"
        | "custom_tool_call_output" => {
            return Err(ApiError::invalid(
                "axe's agents use their own tools (the agent file's): the input's \
                 tool calls and results are not taken",
                "input",
            ));
        }
        "item_reference" => {
            return Err(ApiError::invalid(
                "axe keeps no items to refer to: send the message itself (the AI SDK \
                 sends references to earlier answers unless `store` is false: \
                 providerOptions.openai.store = false)",
                "input",
            ));
        }
        other => {
            return Err(ApiError::invalid(
                format!("input items of type {other:?} are not taken: only messages"),
                "input",
            ));
        }
    }
    let Some(role) = item.get("role").and_then(Value::as_str) else {
        return Err(ApiError::invalid("every message needs a `role`", "input"));
    };
    let content = match item.get("content") {
        Some(Value::String(s)) => Value::String(s.clone()),
        Some(Value::Array(parts)) => {
            Value::Array(parts.iter().map(part).collect::<Result<_, _>>()?)
        }
        _ => {
            return Err(ApiError::invalid(
                "a message's `content` must be a string or an array of text parts",
                "input",
            ));
        }
    };
    Ok(json!({"role": role, "content": content}))
}

/// A content part as chat's: `input_text` (or an earlier answer's
/// `output_text` or `refusal`) a text part, `input_image` an `image_url`
/// part (chat takes its `data:` URL, `images.rs`); files and audio are
/// refused.
fn part(p: &Value) -> Result<Value, ApiError> {
    let field = match p.get("type").and_then(Value::as_str) {
        Some("input_text" | "output_text") => "text",
        Some("refusal") => "refusal",
        Some("input_image") => {
            let url = p.get("image_url").and_then(Value::as_str).unwrap_or("");
            return Ok(json!({"type": "image_url", "image_url": {"url": url}}));
        }
        Some(k @ ("input_file" | "input_audio")) => {
            return Err(ApiError::invalid(
                format!("axe serve takes text and images: `{k}` parts are not taken"),
                "input",
            ));
        }
        _ => {
            return Err(ApiError::invalid(
                "a content part must be `input_text`",
                "input",
            ));
        }
    };
    p.get(field)
        .and_then(Value::as_str)
        .map(|t| json!({"type": "text", "text": t}))
        .ok_or_else(|| ApiError::invalid(format!("a text part needs its `{field}`"), "input"))
}

/// `text.format`: `json_schema`'s schema, `json_object` as any object,
/// `text` (or none) as no schema; with the `text` said back.
fn format(text: Option<&Value>) -> Result<(Option<Value>, Value), ApiError> {
    let plain = json!({"format": {"type": "text"}});
    let Some(t) = text.filter(|t| !t.is_null()) else {
        return Ok((None, plain));
    };
    let Some(f) = t.get("format").filter(|f| !f.is_null()) else {
        return Ok((None, plain));
    };
    let schema = match f.get("type").and_then(Value::as_str) {
        Some("text") => None,
        Some("json_object") => Some(json!({"type": "object"})),
        Some("json_schema") => match f.get("schema") {
            Some(s) if s.is_object() => Some(s.clone()),
            _ => {
                return Err(ApiError::invalid(
                    "text.format.schema must be an object",
                    "text.format",
                ));
            }
        },
        _ => {
            return Err(ApiError::invalid(
                "text.format.type must be text, json_object or json_schema",
                "text.format",
            ));
        }
    };
    Ok((schema, t.clone()))
}

/// `max_output_tokens`: a whole number of at least 1.
fn max_output_tokens(v: Option<&Value>) -> Result<Option<u64>, ApiError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(ApiError::invalid(
                "`max_output_tokens` must be a whole number of at least 1",
                "max_output_tokens",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_become_the_conversation_and_instructions_a_system_message() {
        let body = br#"{"model":"a","instructions":"be brief","input":[
            {"role":"user","content":"hi"},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"hello","annotations":[]}]},
            {"type":"message","role":"user","content":[{"type":"input_text","text":"and now?"}]}]}"#;
        let a = parse(body, true, false).unwrap();
        assert_eq!(a.chat.task, "and now?");
        assert!(
            a.chat.message.contains("assistant: hello"),
            "{}",
            a.chat.message
        );
        assert_eq!(a.chat.system.as_deref(), Some("be brief"));
        assert_eq!(a.instructions, "be brief");
    }

    #[test]
    fn state_tools_and_images_are_refused_with_their_param() {
        for (body, param) in [
            (
                r#"{"model":"a","input":"q","previous_response_id":"resp_1"}"#,
                "previous_response_id",
            ),
            (
                r#"{"model":"a","input":"q","tools":[{"type":"function","name":"f"}]}"#,
                "tools",
            ),
            (
                r#"{"model":"a","input":"q","tool_choice":"required"}"#,
                "tool_choice",
            ),
            (
                r#"{"model":"a","input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]}"#,
                "input",
            ),
            (r#"{"model":"a","input":[]}"#, "input"),
            (
                r#"{"model":"a","input":"q","max_output_tokens":0}"#,
                "max_output_tokens",
            ),
            (
                r#"{"model":"a","input":"q","text":{"format":{"type":"json_schema","name":"x"}}}"#,
                "text.format",
            ),
        ] {
            let e = parse(body.as_bytes(), true, false).unwrap_err();
            assert_eq!((e.status, e.param.as_deref()), (400, Some(param)), "{body}");
        }
        let e = parse(br#"{"model":"a","input":[]}"#, true, false).unwrap_err();
        assert_eq!(e.message, "`input` is empty");
    }
}
