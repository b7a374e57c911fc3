//! The OpenAI Chat Completions wire format (`POST /v1/chat/completions`),
//! spoken by OpenAI and every OpenAI-compatible server: its endpoint and
//! headers, the request body, the parsing of an answer and what its
//! models refuse; its stream's events in `stream.rs`.

mod stream;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::adjust::{self, Change};
use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Attachment, AttachmentKind, Cut, ErrorDetail, Message, Quirks, Request, Response, ToolCall,
    ToolChoice, arguments_from_wire, assistant_message, count, input_schema, invalid_json_detail,
    join_v1, number, role_content, string,
};

/// Chat Completions, as the common code calls it.
pub(crate) struct ChatCompletions;

impl Format for ChatCompletions {
    fn default_base_url(&self) -> &'static str {
        "https://api.openai.com"
    }

    fn needs_key(&self) -> bool {
        true
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        join_v1(base_url, "chat/completions")
    }

    fn auth(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        crate::provider::wire::bearer(key)
    }

    fn frames(&self) -> Frames {
        Frames::Sse
    }

    /// OpenAI's reasoning models take `max_completion_tokens` and refuse
    /// `max_tokens` (the API reference marks `max_tokens` deprecated, and
    /// not compatible with those models); compatible servers may know only
    /// `max_tokens`. So OpenAI's own API (`api.openai.com`) gets
    /// `max_completion_tokens` from the start, every other server
    /// `max_tokens`.
    fn quirks(&self, base_url: &str) -> Quirks {
        Quirks {
            max_completion_tokens: is_openai_itself(base_url),
            ..Quirks::default()
        }
    }

    fn body(&self, req: &Request, quirks: Quirks) -> Value {
        body(req, quirks)
    }

    /// `max_tokens` where a model takes only `max_completion_tokens`, and a
    /// `temperature` some models refuse.
    fn refused(&self, detail: &ErrorDetail, req: &Request, quirks: Quirks) -> Option<Change> {
        let sent_max_tokens = req.max_tokens.is_some() && !quirks.max_completion_tokens;
        let about_max_tokens = detail.param.as_deref() == Some("max_tokens")
            || detail
                .message
                .to_ascii_lowercase()
                .contains("max_completion_tokens");
        if sent_max_tokens && about_max_tokens {
            return Some(Change::MaxCompletionTokens);
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

/// Whether `base_url` is OpenAI's own API (not a compatible server).
fn is_openai_itself(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

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
    // Moved in, not through `json!`, which would copy the whole tree
    // (`to_value` of it) and drop the original (design §3.15).
    let mut body = json!({"model": req.model});
    body["messages"] = Value::Array(messages);
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
    // The effort alone: Chat Completions takes no thinking budget (Gemini's
    // compatible endpoint reads the same field, design §4.15).
    if let Some(effort) = req.reasoning.and_then(|r| r.effort) {
        body["reasoning_effort"] = json!(effort.name());
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
        // Said either way: OpenAI's default is true, but some compatible
        // servers default to false (llama.cpp's server before April 2026),
        // and a model told nothing plans for calls an agent with `parallel
        // = false` runs one at a time (design §4.2).
        if req.tool_choice == ToolChoice::Auto {
            body["parallel_tool_calls"] = json!(req.parallel_tool_calls);
        }
    }
    // "Any JSON object" (the Go original's `response_format =
    // "json_object"`, design D22) goes as OpenAI's JSON mode, as there.
    // Else Structured Outputs. Not strict: strict mode makes every property
    // required, which would change what the schema means; axe validates the
    // answer itself either way (design D22).
    if req.output_schema == Some(json!({"type": "object"})) {
        body["response_format"] = json!({"type": "json_object"});
    } else if let Some(schema) = &req.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {"name": "answer", "schema": schema},
        });
    }
    if req.stream {
        body["stream"] = json!(true);
        // The usage comes in one last chunk, which only this asks for.
        body["stream_options"] = json!({"include_usage": true});
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
        Message::Attached {
            content,
            attachments,
        } => out.push(role_content("user", parts(content, attachments))),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => out.push(assistant_message(content, tool_calls, |c| {
            match &c.foreign {
                Some(call) => call.clone(),
                None => json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_text()},
                }),
            }
        })),
        // Only the Anthropic wire pauses a turn.
        Message::Paused(_) => {}
        Message::ToolResults(results) => {
            for r in results {
                out.push(json!({"role": "tool", "tool_call_id": r.call_id, "content": r.content}));
            }
        }
    }
}

/// A first message's content parts: the words, then each file, an image
/// as an `image_url` part with a `data:` URL, a PDF as a `file` part
/// (`file_data`), a text file as a text part (Chat Completions takes no
/// other file).
fn parts(content: &str, attachments: &[Attachment]) -> Vec<Value> {
    let mut parts = vec![json!({"type": "text", "text": content})];
    parts.extend(attachments.iter().map(|a| match a.kind {
        AttachmentKind::Pdf => json!({"type": "file",
            "file": {"filename": a.file_name(), "file_data": a.data_url()}}),
        AttachmentKind::Text => json!({"type": "text", "text": a.as_text_part()}),
        _ => json!({"type": "image_url", "image_url": {"url": a.data_url()}}),
    }));
    parts
}

#[derive(Deserialize)]
struct Wire {
    choices: Vec<Choice>,
    /// The response's id and the model that answered (the chat span's,
    /// design §7.9): read leniently, anything but a string is none.
    #[serde(default)]
    id: Value,
    #[serde(default)]
    model: Value,
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
    /// Each read by [`tool_call`]: calls of other types than `function`
    /// must not make the whole response unreadable.
    #[serde(default)]
    tool_calls: Option<Vec<Value>>,
    /// The model's refusal text when it declined (content is then null).
    #[serde(default)]
    refusal: Value,
    /// The model's thinking as text, from the compatible servers that
    /// show it (DeepSeek's, llama.cpp's and vLLM's `reasoning_content`;
    /// `reasoning` on others); OpenAI's own shows none.
    #[serde(default)]
    reasoning_content: Value,
    #[serde(default)]
    reasoning: Value,
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
        .map(|(i, c)| tool_call(i, c))
        .collect::<Result<_, _>>()?;
    let stop_reason = choice.finish_reason.unwrap_or_default();
    let cut = match stop_reason.as_str() {
        "length" => Some(Cut::OutputLimit),
        "content_filter" => Some(Cut::Filtered),
        _ => None,
    };
    let thinking = [&choice.message.reasoning_content, &choice.message.reasoning]
        .into_iter()
        .find_map(Value::as_str)
        .unwrap_or_default()
        .to_string();
    Ok(Response {
        content,
        stop_reason,
        input_tokens: count(&wire.usage["prompt_tokens"]),
        output_tokens: output_tokens(&wire.usage),
        reasoning_tokens: count(&wire.usage["completion_tokens_details"]["reasoning_tokens"]),
        thinking,
        // Both already part of `prompt_tokens`; writes are reported by
        // the models that bill them (design §4.10), else absent: 0.
        cache_read_tokens: count(&wire.usage["prompt_tokens_details"]["cached_tokens"]),
        cache_write_tokens: count(&wire.usage["prompt_tokens_details"]["cache_write_tokens"]),
        tool_calls,
        retries: 0,
        declined: choice
            .message
            .refusal
            .as_str()
            .filter(|r| !r.trim().is_empty())
            .map(|r| format!("the model refused to answer: {r}")),
        cut,
        paused: None,
        cost_usd: wire.usage["cost"].as_f64(),
        id: string(&wire.id),
        model: string(&wire.model),
        ..Response::default()
    })
}

/// The output tokens of `usage`, reasoning included: OpenAI's
/// `completion_tokens` includes its `reasoning_tokens` (the API's usage
/// definition), but some compatible servers (Gemini's, some proxies) leave
/// them out while `total_tokens` has them; then they are added, so that
/// they are priced as output once (design §4.15).
fn output_tokens(usage: &Value) -> u64 {
    let completion = count(&usage["completion_tokens"]);
    let reasoning = count(&usage["completion_tokens_details"]["reasoning_tokens"]);
    let left_out = count(&usage["prompt_tokens"])
        .saturating_add(completion)
        .saturating_add(reasoning)
        == count(&usage["total_tokens"]);
    match reasoning > 0 && left_out {
        true => completion.saturating_add(reasoning),
        false => completion,
    }
}

/// The `i`-th entry of `message.tool_calls`. A function call (`type`
/// `function`, or none given, as some compatible servers send it) must
/// have its `function`; a call of any other type (`custom`, with its
/// free-form `input`, or one the API adds later) is kept whole, to be
/// answered with an error and written back as it came (design §4.2).
fn tool_call(i: usize, mut raw: Value) -> Result<ToolCall, String> {
    let id = raw["id"]
        .as_str()
        .filter(|id| !id.is_empty())
        .map_or_else(|| format!("call_{i}"), str::to_string);
    let kind = raw["type"].as_str().unwrap_or("function").to_string();
    if kind != "function" {
        let name = raw[&kind]["name"].as_str().unwrap_or(&kind).to_string();
        return Ok(ToolCall {
            id,
            name,
            foreign: Some(raw),
            ..ToolCall::default()
        });
    }
    let Some(function) = raw.get_mut("function").filter(|f| f.is_object()) else {
        return Err(format!("tool call {id} has no `function`"));
    };
    let name = function["name"].as_str().unwrap_or("").to_string();
    let arguments = function["arguments"].take();
    Ok(ToolCall {
        id,
        name,
        arguments: arguments_from_wire(&arguments),
        wire_arguments: arguments,
        foreign: None,
    })
}
