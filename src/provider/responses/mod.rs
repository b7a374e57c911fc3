//! OpenAI's Responses API (`POST /v1/responses`), the wire OpenCode's Zen
//! gateway serves its `gpt-*` models on (the `opencode` preset's route,
//! `presets.rs`, as the Go original routes them): its endpoint and
//! headers, the body (`instructions`, `input` items: messages,
//! `function_call`s and `function_call_output`s; flat function `tools`,
//! `max_output_tokens`, `text.format` for an output schema), the parsing of
//! a response (`output` items, `status`, `usage`); its stream's events in
//! `stream.rs`. No `kind` names it (design §4.12).

mod attach;
mod stream;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Cut, ErrorDetail, Message, Quirks, Request, Response, ToolCall, ToolChoice, adjust,
    arguments_from_wire, count, input_schema, invalid_json_detail, join_v1, number,
};

/// The Responses API, as the common code calls it.
pub(crate) struct Responses;

impl Format for Responses {
    fn default_base_url(&self) -> &'static str {
        "https://api.openai.com"
    }

    fn needs_key(&self) -> bool {
        true
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        join_v1(base_url, "responses")
    }

    fn auth(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        crate::provider::wire::bearer(key)
    }

    fn frames(&self) -> Frames {
        Frames::Sse
    }

    fn body(&self, req: &Request, quirks: Quirks) -> Value {
        body(req, quirks)
    }

    /// A `temperature` the reasoning models refuse.
    fn refused(
        &self,
        detail: &ErrorDetail,
        req: &Request,
        quirks: Quirks,
    ) -> Option<adjust::Change> {
        adjust::temperature_refused(detail, req, quirks)
    }

    fn parse(&self, body: &str) -> Result<Response, String> {
        parse(body)
    }

    fn assembly(&self) -> Box<dyn Assembly> {
        Box::<stream::Stream>::default()
    }
}

/// The request body for `req`: the system prompt as `instructions`, the
/// conversation as `input` items.
pub fn body(req: &Request, quirks: Quirks) -> Value {
    let mut input = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        push_items(&mut input, m);
    }
    let mut body = json!({"model": req.model, "input": input});
    if !req.system.is_empty() {
        body["instructions"] = json!(req.system);
    }
    if let Some(t) = req.temperature
        && !quirks.no_temperature
    {
        body["temperature"] = number(t);
    }
    if let Some(n) = req.max_tokens {
        body["max_output_tokens"] = json!(n);
    }
    if req.sends_tools(true) {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "name": t.name,
                    "description": t.description, "parameters": input_schema(t)})
            })
            .collect();
        body["tools"] = json!(tools);
        body["tool_choice"] = match req.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
        };
        if req.tool_choice == ToolChoice::Auto {
            body["parallel_tool_calls"] = json!(req.parallel_tool_calls);
        }
    }
    // As Chat Completions' `response_format` (`openai/mod.rs`), here under
    // `text.format`; not strict, axe checks the answer (design D22).
    if req.output_schema == Some(json!({"type": "object"})) {
        body["text"] = json!({"format": {"type": "json_object"}});
    } else if let Some(schema) = &req.output_schema {
        body["text"] =
            json!({"format": {"type": "json_schema", "name": "answer", "schema": schema}});
    }
    if req.stream {
        body["stream"] = json!(true);
    }
    body
}

fn push_items(out: &mut Vec<Value>, m: &Message) {
    match m {
        Message::User(text) => out.push(json!({"role": "user", "content": text})),
        Message::Attached {
            content,
            attachments,
        } => out.push(json!({"role": "user", "content": attach::items(content, attachments)})),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            if !content.is_empty() || tool_calls.is_empty() {
                out.push(json!({"role": "assistant", "content": content}));
            }
            for c in tool_calls {
                out.push(c.foreign.clone().unwrap_or_else(|| {
                    json!({"type": "function_call", "call_id": c.id,
                        "name": c.name, "arguments": c.arguments_text()})
                }));
            }
        }
        // Only the Anthropic wire pauses a turn.
        Message::Paused(_) => {}
        Message::ToolResults(results) => {
            for r in results {
                out.push(json!({"type": "function_call_output",
                    "call_id": r.call_id, "output": r.content}));
            }
        }
    }
}

#[derive(Deserialize)]
struct Wire {
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
/// `function_call` a [`ToolCall`], a `refusal` as declined; reasoning and
/// other items left out. A `failed` response is an error.
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
        cut: match wire.incomplete_details["reason"].as_str() {
            Some("max_output_tokens") => Some(Cut::OutputLimit),
            Some("content_filter") => Some(Cut::Filtered),
            _ => None,
        },
        ..Response::default()
    };
    for (i, item) in wire.output.into_iter().enumerate() {
        match item["type"].as_str().unwrap_or("") {
            "message" => read_message(&item, &mut resp),
            "function_call" => resp.tool_calls.push(function_call(i, item)),
            _ => {}
        }
    }
    resp.stop_reason = status;
    Ok(resp)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Wire;
    use crate::provider::stream::{Decoder, StreamError};

    #[test]
    fn an_incomplete_answer_is_cut_a_refusal_declined_a_failure_an_error() {
        let cut = r#"{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
            "output":[{"type":"message","content":[{"type":"output_text","text":"half"}]}]}"#;
        let r = parse(cut).unwrap();
        assert_eq!(
            (r.content.as_str(), r.cut),
            ("half", Some(Cut::OutputLimit))
        );
        let refused = r#"{"status":"completed","output":[{"type":"message",
            "content":[{"type":"refusal","refusal":"I can't help with that."}]}]}"#;
        let r = parse(refused).unwrap();
        assert_eq!(
            r.declined.as_deref(),
            Some("the model refused to answer: I can't help with that.")
        );
        let failed = r#"{"status":"failed","error":{"code":"server_error","message":"boom"}}"#;
        assert_eq!(parse(failed).unwrap_err(), "the response failed: boom");
    }

    /// The stream's error event and a failed response are the provider's
    /// failure, with its code as the type the retry rules read.
    #[test]
    fn an_error_event_or_a_failed_response_is_the_providers_failure() {
        for data in [
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down"}"#,
            r#"{"type":"response.failed","response":{"status":"failed",
                "error":{"code":"rate_limit_exceeded","message":"slow down"}}}"#,
        ] {
            let mut d = Decoder::new(Wire::Responses);
            let event = format!("data: {}\n\n", data.replace('\n', ""));
            match d.feed(event.as_bytes(), &mut |_| {}) {
                Err(StreamError::Failed(e)) => {
                    assert_eq!(e.message, "slow down");
                    assert_eq!(e.error_type.as_deref(), Some("rate_limit_exceeded"));
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
