//! The OpenAI Chat Completions wire format (`POST /v1/chat/completions`),
//! spoken by OpenAI and every OpenAI-compatible server.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{
    Cut, Message, Quirks, Request, Response, ToolCall, ToolChoice, arguments_from_wire,
    arguments_text, assistant_message, count, input_schema, invalid_json_detail, number,
};

/// The request body for `req`, written for a model with `quirks`. The
/// system prompt is the first message.
pub fn body(req: &Request, quirks: Quirks) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        push_message(&mut messages, m);
    }
    let mut body = json!({"model": req.model, "messages": messages});
    if let Some(t) = req.temperature
        && !quirks.no_temperature
    {
        body["temperature"] = number(t);
    }
    if let Some(n) = req.max_tokens {
        let field = if quirks.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body[field] = json!(n);
    }
    if req.sends_tools(true) {
        body["tools"] = function_tools(req);
        // Sent even when "auto", OpenAI's own default with tools:
        // llama-cpp-python's server takes a missing `tool_choice` as "none"
        // and then never calls a tool (measured).
        body["tool_choice"] = match req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
        };
        // OpenAI's default is true, but some compatible servers default to
        // false (llama.cpp's server before April 2026): said when it holds.
        if req.tool_choice == ToolChoice::Auto && req.parallel_tool_calls {
            body["parallel_tool_calls"] = json!(true);
        }
    }
    // Structured Outputs. Not strict: strict mode makes every property
    // required, which would change what the schema means; axe validates the
    // answer itself either way (design D22).
    if let Some(schema) = &req.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        });
    }
    body
}

/// Tools in the `{"type": "function", "function": {...}}` shape (shared with Ollama).
pub(crate) fn function_tools(req: &Request) -> Value {
    req.tools
        .iter()
        .map(|t| {
            json!({"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": input_schema(t)
            }})
        })
        .collect()
}

fn push_message(out: &mut Vec<Value>, m: &Message) {
    match m {
        Message::User(text) => out.push(json!({"role": "user", "content": text})),
        Message::Assistant {
            content,
            tool_calls,
        } => out.push(assistant_message(content, tool_calls, |c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": arguments_text(c)},
            })
        })),
        Message::ToolResults(results) => {
            for r in results {
                out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": r.content}));
            }
        }
    }
}

#[derive(Deserialize)]
struct Wire {
    choices: Vec<Choice>,
    /// Read leniently: see [`count`].
    #[serde(default)]
    usage: Value,
}

#[derive(Deserialize)]
struct Choice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    /// A string, null, or (some compatible servers) an array of text parts.
    #[serde(default)]
    content: Value,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
    /// The model's refusal text when it declined (content is then null).
    #[serde(default)]
    refusal: Value,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: Option<String>,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    /// A JSON-encoded string per the API; some servers send an object.
    #[serde(default)]
    arguments: Value,
}

/// Parses a successful response body (the first choice).
pub fn parse(body: &str) -> Result<Response, String> {
    let wire: Wire = serde_json::from_str(body).map_err(|e| invalid_json_detail(body, &e))?;
    let Some(choice) = wire.choices.into_iter().next() else {
        return Err("no choices in the response".into());
    };
    let content = match &choice.message.content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
        _ => String::new(),
    };
    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: c
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{i}")),
            name: c.function.name,
            arguments: arguments_from_wire(&c.function.arguments),
            wire_arguments: c.function.arguments,
        })
        .collect();
    let stop_reason = choice.finish_reason.unwrap_or_default();
    let cut = match stop_reason.as_str() {
        "length" => Some(Cut::OutputLimit),
        "content_filter" => Some(Cut::Filtered),
        _ => None,
    };
    Ok(Response {
        content,
        stop_reason,
        input_tokens: count(&wire.usage["prompt_tokens"]),
        output_tokens: count(&wire.usage["completion_tokens"]),
        // Already part of `prompt_tokens`.
        cache_read_tokens: count(&wire.usage["prompt_tokens_details"]["cached_tokens"]),
        tool_calls,
        retries: 0,
        declined: choice
            .message
            .refusal
            .as_str()
            .filter(|r| !r.trim().is_empty())
            .map(|r| format!("the model refused to answer: {r}")),
        cut,
    })
}
