//! The Anthropic Messages API wire format (`POST /v1/messages`): its
//! endpoint and headers, the request body, the parsing of an answer and
//! what its models refuse; its stream's events in `stream.rs`, the
//! prompt-cache marks a request carries in `cache.rs`, and the schema its
//! JSON outputs are sent in `schema.rs`.

pub mod cache;
pub mod schema;
mod stream;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::adjust::{self, Change};
use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Attachment, AttachmentKind, Cut, Effort, ErrorDetail, Message, Quirks, Request, Response,
    ToolCall, ToolChoice, arguments_from_json, count, input_schema, invalid_json_detail, join_v1,
    number, role_content, string,
};
use schema::for_anthropic;

/// Anthropic requires `max_tokens`; this is sent when the agent sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The thinking budget of an effort given without `thinking_budget`: the
/// budgets Gemini's OpenAI-compatible endpoint reads its efforts as
/// (design §4.15), `minimal` the API's least.
pub fn thinking_budget(effort: Effort) -> u32 {
    match effort {
        Effort::Minimal | Effort::Low => 1024,
        Effort::Medium => 8192,
        Effort::High => 24576,
    }
}

/// The `thinking` a request asks for, as (budget, max_tokens): the budget
/// is `thinking_budget`, else its effort's; `max_tokens` counts the
/// thinking too and must be above the budget, so one that is not (the
/// default's 4096 included) is sent as the budget plus itself, leaving the
/// answer what the agent gave it (design §4.15).
pub fn thinking(req: &Request) -> Option<(u32, u32)> {
    let r = req.reasoning?;
    let budget = r.budget_tokens.or(r.effort.map(thinking_budget))?;
    let max_tokens = req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let max_tokens = match max_tokens > budget {
        true => max_tokens,
        false => budget.saturating_add(max_tokens),
    };
    Some((budget, max_tokens))
}

/// The Messages API, as the common code calls it.
pub(crate) struct Messages;

impl Format for Messages {
    fn default_base_url(&self) -> &'static str {
        "https://api.anthropic.com"
    }

    fn marks_cache(&self) -> bool {
        true
    }

    fn needs_key(&self) -> bool {
        true
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        join_v1(base_url, "messages")
    }

    fn auth(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        vec![
            ("x-api-key", key.unwrap_or("").to_string()),
            ("anthropic-version", "2023-06-01".to_string()),
        ]
    }

    fn frames(&self) -> Frames {
        Frames::Sse
    }

    fn body(&self, req: &Request, quirks: Quirks) -> Value {
        body(req, quirks)
    }

    /// A `temperature` some models refuse, and an output schema the API
    /// cannot take (too large a grammar, a keyword axe did not expect it
    /// to refuse): a 400 about `output_config`.
    fn refused(&self, detail: &ErrorDetail, req: &Request, quirks: Quirks) -> Option<Change> {
        if let Some(change) = adjust::temperature_refused(detail, req, quirks) {
            return Some(change);
        }
        // The API names the schema's place (`output_config.format.schema:
        // ...`), except when the grammar built from it is too large.
        let message = detail.message.to_ascii_lowercase();
        let about_schema = ["output_config", "output_format", "compiled grammar"]
            .iter()
            .any(|w| message.contains(w));
        let sent_schema = !quirks.no_output_schema
            && req
                .output_schema
                .as_ref()
                .is_some_and(|s| for_anthropic(s).is_ok());
        (sent_schema && about_schema).then_some(Change::NoOutputSchema)
    }

    fn unsent_schema(&self, schema: &Value) -> Option<String> {
        for_anthropic(schema).err()
    }

    fn parse(&self, body: &str) -> Result<Response, String> {
        parse(body)
    }

    fn assembly(&self) -> Box<dyn Assembly> {
        Box::<stream::Stream>::default()
    }
}

/// The request body for `req`, written for a model with `quirks`.
pub fn body(req: &Request, quirks: Quirks) -> Value {
    let thinking = thinking(req);
    let mut body = json!({
        "model": req.model,
        "max_tokens": thinking.map_or(req.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS), |t| t.1),
    });
    // Moved in, not copied through `json!` (design §3.15).
    body["messages"] = req.messages.iter().map(message).collect();
    if !req.system.is_empty() {
        body["system"] = json!(req.system);
    }
    if let Some((budget, _)) = thinking {
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
    }
    // The API refuses a temperature beside thinking.
    if let Some(t) = req.temperature
        && !quirks.no_temperature
        && thinking.is_none()
    {
        body["temperature"] = number(t);
    }
    if req.sends_tools(true) {
        body["tools"] = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": input_schema(t)}))
            .collect();
        // "auto" is the API's default and is not sent, unless the calls of
        // one response run one at a time: the model is told (design §4.2).
        if req.tool_choice == ToolChoice::None {
            body["tool_choice"] = json!({"type": "none"});
        } else if !req.parallel_tool_calls {
            body["tool_choice"] = json!({"type": "auto", "disable_parallel_tool_use": true});
        }
    }
    // JSON outputs (`output_config.format`), which leave tool use as it is:
    // the model may still call tools, and its final text is the JSON. A
    // schema the API cannot take as it is, or refused once, is not sent:
    // axe checks the answer either way (design D22).
    if let Some(schema) = &req.output_schema
        && !quirks.no_output_schema
        && let Ok(schema) = for_anthropic(schema)
    {
        body["output_config"] = json!({
            "format": {"type": "json_schema", "schema": schema},
        });
    }
    if req.stream {
        body["stream"] = json!(true);
    }
    if req.prompt_cache {
        cache::mark(&mut body, req);
    }
    body
}

fn message(m: &Message) -> Value {
    match m {
        Message::User(text) => json!({"role": "user", "content": text}),
        Message::Attached {
            content,
            attachments,
        } => role_content("user", attached(content, attachments)),
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } if tool_calls.is_empty() && reasoning.is_empty() => {
            json!({"role": "assistant", "content": content})
        }
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } => {
            // The turn's thinking blocks first, exactly as they came: the
            // API refuses a tool-use turn whose blocks were dropped or
            // changed (their signatures are checked).
            let mut blocks = reasoning.clone();
            // The API refuses text blocks without non-whitespace text, and
            // Claude often writes "\n\n" before a tool_use: leave them out.
            if !content.trim().is_empty() {
                blocks.push(json!({"type": "text", "text": content}));
            }
            for c in tool_calls {
                blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments_object()}));
            }
            role_content("assistant", blocks)
        }
        Message::Paused(blocks) => role_content("assistant", blocks.clone()),
        Message::ToolResults(results) => {
            let blocks: Vec<Value> = results
                .iter()
                .map(|r| json!({"type": "tool_result", "tool_use_id": r.call_id, "content": r.content, "is_error": r.is_error}))
                .collect();
            role_content("user", blocks)
        }
    }
}

/// A first message's blocks: each file as an `image` or `document`
/// block (base64; a text file as a document of plain text), then the
/// words, last, where the prompt cache's mark goes.
fn attached(content: &str, attachments: &[Attachment]) -> Vec<Value> {
    let mut blocks: Vec<Value> = attachments
        .iter()
        .map(|a| match a.kind {
            AttachmentKind::Pdf => json!({"type": "document", "title": a.file_name(),
                "source": {"type": "base64", "media_type": a.kind.media_type(), "data": a.base64()}}),
            AttachmentKind::Text => json!({"type": "document", "title": a.file_name(),
                "source": {"type": "text", "media_type": "text/plain", "data": a.text()}}),
            _ => json!({"type": "image",
                "source": {"type": "base64", "media_type": a.kind.media_type(), "data": a.base64()}}),
        })
        .collect();
    blocks.push(json!({"type": "text", "text": content}));
    blocks
}

#[derive(Deserialize)]
struct Wire {
    content: Vec<Block>,
    /// The response's id and the model that answered (the chat span's,
    /// design §7.9): read leniently, anything but a string is none.
    #[serde(default)]
    id: Value,
    #[serde(default)]
    model: Value,
    #[serde(default)]
    stop_reason: Option<String>,
    /// Why the model stopped, beside `stop_reason` (a refusal's category
    /// and explanation).
    #[serde(default)]
    stop_details: Value,
    /// Read leniently: see [`count`].
    #[serde(default)]
    usage: Value,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Value,
    /// A `thinking` block's text.
    #[serde(default)]
    thinking: Option<String>,
}

/// Whether a block of `kind` is the model's reasoning, sent back whole.
fn is_reasoning(kind: &str) -> bool {
    matches!(kind, "thinking" | "redacted_thinking")
}

/// Parses a successful response body. Text blocks are concatenated; each
/// `tool_use` block becomes a [`ToolCall`]; other block types are ignored,
/// but a paused turn keeps them all to be sent back.
pub fn parse(body: &str) -> Result<Response, String> {
    let wire: Wire = serde_json::from_str(body).map_err(|e| invalid_json_detail(body, &e))?;
    let stop_reason = wire.stop_reason.unwrap_or_default();
    // `input_tokens` is the uncached remainder; cache writes and reads are
    // billed input too (the API's usage definition).
    let cache_read = count(&wire.usage["cache_read_input_tokens"]);
    let cache_write = count(&wire.usage["cache_creation_input_tokens"]);
    let input = count(&wire.usage["input_tokens"])
        .saturating_add(cache_write)
        .saturating_add(cache_read);
    let mut resp = Response {
        input_tokens: input,
        output_tokens: count(&wire.usage["output_tokens"]),
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        cut: match stop_reason.as_str() {
            "max_tokens" => Some(Cut::OutputLimit),
            "model_context_window_exceeded" => Some(Cut::ContextWindow),
            _ => None,
        },
        id: string(&wire.id),
        model: string(&wire.model),
        ..Response::default()
    };
    if stop_reason == "refusal" {
        // The API sends no refusal text; the partial answer before it is
        // not an answer. `stop_details` may say why.
        let why = wire.stop_details["explanation"]
            .as_str()
            .or_else(|| wire.stop_details["category"].as_str())
            .filter(|w| !w.trim().is_empty());
        let mut what = "the model refused to answer (stop_reason \"refusal\")".to_string();
        if let Some(why) = why {
            what.push_str(": ");
            what.push_str(why);
        }
        resp.declined = Some(what);
    }
    if stop_reason == "pause_turn" {
        // Sent back whole, every block as it came (server tool calls and
        // their results included), so the typed blocks below will not do.
        let mut raw: Value = serde_json::from_str(body).unwrap_or_default();
        resp.paused = Some(raw["content"].take());
    }
    resp.stop_reason = stop_reason;
    if wire.content.iter().any(|b| is_reasoning(&b.kind)) {
        // Kept whole, every field as it came (the signature, a redacted
        // block's data), so the typed blocks below will not do.
        let mut raw: Value = serde_json::from_str(body).unwrap_or_default();
        if let Value::Array(blocks) = raw["content"].take() {
            resp.reasoning = blocks
                .into_iter()
                .filter(|b| b["type"].as_str().is_some_and(is_reasoning))
                .collect();
        }
    }
    for (i, block) in wire.content.into_iter().enumerate() {
        match block.kind.as_str() {
            "text" => resp.content.push_str(block.text.as_deref().unwrap_or("")),
            "thinking" => resp
                .thinking
                .push_str(block.thinking.as_deref().unwrap_or("")),
            "tool_use" => resp.tool_calls.push(ToolCall {
                id: block
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name: block.name.unwrap_or_default(),
                arguments: arguments_from_json(&block.input),
                wire_arguments: block.input,
                foreign: None,
            }),
            _ => {}
        }
    }
    Ok(resp)
}
