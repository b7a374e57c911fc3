//! OpenAI's Responses API (`POST /v1/responses`), for OpenAI and any
//! server that speaks it (a table's `api = "responses"`, OpenAI's models
//! that answer only there, OpenCode Zen's `gpt-*` route; design §4.14):
//! its endpoint and headers, the body (`instructions`, `input` items:
//! messages, the reasoning items sent back, `function_call`s and
//! `function_call_output`s; flat function `tools`, `max_output_tokens`,
//! `text.format` for an output schema, `reasoning.effort`, `store: false`
//! with the encrypted reasoning asked for); the parsing of a response in
//! `read.rs`, its stream's events in `stream.rs`.

mod attach;
mod read;
mod stream;

use serde_json::{Value, json};

use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Change, Effort, ErrorDetail, Message, Quirks, Request, Response, ToolChoice, adjust,
    input_schema, join_v1, number, role_content,
};

pub use read::parse;

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

    /// A `temperature` the reasoning models refuse, or the encrypted
    /// reasoning the others do ("Encrypted content is not supported with
    /// this model", its param `include`).
    fn refused(&self, detail: &ErrorDetail, req: &Request, quirks: Quirks) -> Option<Change> {
        let include = detail.param.as_deref() == Some("include")
            || detail
                .message
                .to_ascii_lowercase()
                .contains("encrypted content");
        if include && !quirks.has(Change::NoEncryptedReasoning) {
            return Some(Change::NoEncryptedReasoning);
        }
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
/// conversation as `input` items. Nothing is stored at the provider (axe
/// sends the whole conversation each turn), so the reasoning items come
/// back encrypted, to be sent back as they came (the API's stateless use).
pub fn body(req: &Request, quirks: Quirks) -> Value {
    let mut input = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        push_items(&mut input, m);
    }
    // Moved in, not copied through `json!` (design §3.15).
    let mut body = json!({"model": req.model, "store": false});
    body["input"] = Value::Array(input);
    if !quirks.no_encrypted_reasoning {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(effort) = req.reasoning.and_then(|r| r.effort) {
        body["reasoning"] = json!({"effort": effort_name(effort)});
    }
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
                // Not strict (the API's default is): strict mode takes only
                // a subset of JSON Schema and needs every property
                // required, which axe's optional parameters and an MCP
                // server's schema need not be; axe checks the arguments
                // itself, as on Chat Completions.
                json!({"type": "function", "name": t.name, "description": t.description,
                    "parameters": input_schema(t), "strict": false})
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
        } => out.push(role_content("user", attach::items(content, attachments))),
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } => {
            // Before the turn's message and calls, as they came: a call
            // sent back without the reasoning that led to it is refused.
            out.extend(reasoning.iter().cloned());
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

/// `reasoning.effort` as the API names it.
fn effort_name(effort: Effort) -> &'static str {
    match effort {
        Effort::Minimal => "minimal",
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::stream::{Decoder, StreamError};
    use crate::provider::{Cut, Wire};

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
