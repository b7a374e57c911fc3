//! A Responses API answer read into what every wire gives: the text of
//! its messages, each `function_call` a [`ToolCall`], a refusal declined,
//! an incomplete answer cut, the usage with its cached and reasoning
//! tokens, and the reasoning items to send back with the turn.

use serde::Deserialize;
use serde_json::Value;

use crate::provider::{
    Cut, Response, ToolCall, arguments_from_wire, count, invalid_json_detail, string,
};

#[derive(Deserialize)]
struct Wire {
    /// The response's id and the model that answered (the chat span's,
    /// design §7.9): read leniently, anything but a string is none.
    #[serde(default)]
    id: Value,
    #[serde(default)]
    model: Value,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    output: Vec<Value>,
    #[serde(default)]
    incomplete_details: Value,
    #[serde(default)]
    error: Value,
    /// Read leniently: see [`count`].
    #[serde(default)]
    usage: Value,
}

/// Parses a response: the `output_text` of its messages, each
/// `function_call` a [`ToolCall`], a `refusal` as declined, each
/// `reasoning` item kept (as `reasoning` below says); other items left out. A
/// `failed` response is an error.
pub fn parse(body: &str) -> Result<Response, String> {
    let wire: Wire = serde_json::from_str(body).map_err(|e| invalid_json_detail(body, &e))?;
    let status = wire.status.unwrap_or_default();
    if status == "failed" {
        let message = wire.error["message"].as_str().unwrap_or("no message");
        return Err(format!("the response failed: {message}"));
    }
    let mut resp = Response {
        input_tokens: count(&wire.usage["input_tokens"]),
        output_tokens: count(&wire.usage["output_tokens"]),
        // Part of `input_tokens`, as Chat Completions' are.
        cache_read_tokens: count(&wire.usage["input_tokens_details"]["cached_tokens"]),
        // Part of `output_tokens`, and priced as they are.
        reasoning_tokens: count(&wire.usage["output_tokens_details"]["reasoning_tokens"]),
        cut: match wire.incomplete_details["reason"].as_str() {
            Some("max_output_tokens") => Some(Cut::OutputLimit),
            Some("content_filter") => Some(Cut::Filtered),
            _ => None,
        },
        id: string(&wire.id),
        model: string(&wire.model),
        ..Response::default()
    };
    for (i, item) in wire.output.into_iter().enumerate() {
        match item["type"].as_str().unwrap_or("") {
            "message" => read_message(&item, &mut resp),
            "function_call" => resp.tool_calls.push(function_call(i, item)),
            "reasoning" => reasoning(item, &mut resp),
            _ => {}
        }
    }
    // An incomplete answer's reason says more than its status.
    resp.stop_reason = match wire.incomplete_details["reason"].as_str() {
        Some(reason) => reason.to_string(),
        None => status,
    };
    Ok(resp)
}

/// A reasoning item: its summary's text (or the text of a server that
/// shows the reasoning itself, as llama.cpp's does) as the thinking, and
/// the item kept to send back when it carries its encrypted content. One
/// without cannot be: nothing is stored at the provider (`store: false`),
/// so an item sent back by its id alone is not found.
fn reasoning(item: Value, resp: &mut Response) {
    let parts = item["summary"].as_array().into_iter().flatten();
    let shown = item["content"].as_array().into_iter().flatten();
    for text in parts.chain(shown).filter_map(|p| p["text"].as_str()) {
        if !resp.thinking.is_empty() {
            resp.thinking.push_str("\n\n");
        }
        resp.thinking.push_str(text);
    }
    if item["encrypted_content"].is_string() {
        resp.reasoning.push(item);
    }
}

fn read_message(item: &Value, resp: &mut Response) {
    for part in item["content"].as_array().into_iter().flatten() {
        match part["type"].as_str().unwrap_or("") {
            "output_text" => resp.content.push_str(part["text"].as_str().unwrap_or("")),
            "refusal" => {
                let words = part["refusal"].as_str().unwrap_or("").trim();
                resp.declined = Some(format!("the model refused to answer: {words}"));
            }
            _ => {}
        }
    }
}

fn function_call(i: usize, mut item: Value) -> ToolCall {
    let id = item["call_id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("call_{i}"), str::to_string);
    let arguments = item["arguments"].take();
    ToolCall {
        id,
        name: item["name"].as_str().unwrap_or("").to_string(),
        arguments: arguments_from_wire(&arguments),
        wire_arguments: arguments,
        foreign: None,
    }
}
