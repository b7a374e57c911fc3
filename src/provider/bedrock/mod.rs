//! Amazon Bedrock's Converse API (`POST /model/<modelId>/converse`): its
//! endpoint, the body (`system`, `messages` of `text`, `toolUse` and
//! `toolResult` blocks, `inferenceConfig`, `toolConfig`), the parsing of an
//! answer, and its requests signed with SigV4 in `sigv4.rs` from the keys
//! of `keys.rs` (design §4.13); a Claude model's thinking as Anthropic's
//! (design §4.15). A request for a stream goes to
//! `converse-stream`, whose binary event-stream messages are framed by
//! `stream/eventstream.rs` and assembled in `stream.rs`.

mod keys;
pub mod sigv4;
mod stream;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Attachment, AttachmentKind, Cut, Message, Quirks, Request, Response, ToolCall, ToolChoice,
    arguments_from_json, count, input_schema, invalid_json_detail, number, path_segment,
    role_content,
};
pub use keys::{base_url, from_env, region, register_env_secrets};
pub use sigv4::AwsKeys;

/// The name Bedrock's requests are signed for.
const SERVICE: &str = "bedrock";

/// The Converse API, as the common code calls it.
pub(crate) struct Converse;

impl Format for Converse {
    /// A placeholder: Bedrock's URL is the region's, which the config
    /// writes (`keys::base_url`).
    fn default_base_url(&self) -> &'static str {
        "https://bedrock-runtime.us-east-1.amazonaws.com"
    }

    /// Its keys are AWS's, checked where they are read.
    fn needs_key(&self) -> bool {
        false
    }

    fn endpoint(&self, base_url: &str, model: &str) -> String {
        format!("{base_url}/model/{}/converse", path_segment(model))
    }

    fn stream_endpoint(&self, base_url: &str, model: &str) -> String {
        format!("{base_url}/model/{}/converse-stream", path_segment(model))
    }

    fn auth(&self, _key: Option<&str>) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn signed(&self, aws: Option<&AwsKeys>, url: &str, body: &[u8]) -> Vec<(&'static str, String)> {
        aws.map(|keys| sigv4::post_headers(keys, SERVICE, url, body, std::time::SystemTime::now()))
            .unwrap_or_default()
    }

    fn frames(&self) -> Frames {
        Frames::EventStream
    }

    fn body(&self, req: &Request, _quirks: Quirks) -> Value {
        body(req)
    }

    /// Converse's own structured output is not written yet: axe alone
    /// checks the answer (design D22).
    fn unsent_schema(&self, _schema: &Value) -> Option<String> {
        Some("Bedrock's Converse API is not sent an output schema by axe".into())
    }

    fn parse(&self, body: &str) -> Result<Response, String> {
        parse(body)
    }

    fn assembly(&self) -> Box<dyn Assembly> {
        Box::new(stream::Stream::default())
    }
}

/// The Converse request body for `req`.
pub fn body(req: &Request) -> Value {
    // Moved in, not copied through `json!` (design §3.15).
    let mut body = json!({});
    body["messages"] = req.messages.iter().map(message).collect();
    if !req.system.is_empty() {
        body["system"] = json!([{"text": req.system}]);
    }
    // A Claude model's thinking goes as Anthropic's own field, with the
    // same budget and output limit, and no temperature beside it.
    let thinking = match req.model.contains("anthropic.claude") {
        true => crate::provider::anthropic::thinking(req),
        false => None,
    };
    let mut inference = serde_json::Map::new();
    if let Some(n) = thinking.map(|t| t.1).or(req.max_tokens) {
        inference.insert("maxTokens".into(), json!(n));
    }
    if let Some(t) = req.temperature.filter(|_| thinking.is_none()) {
        inference.insert("temperature".into(), number(t));
    }
    if let Some((budget, _)) = thinking {
        body["additionalModelRequestFields"] =
            json!({"thinking": {"type": "enabled", "budget_tokens": budget}});
    }
    if !inference.is_empty() {
        body["inferenceConfig"] = Value::Object(inference);
    }
    // Converse cannot forbid tools: with `tool_choice` none they are not
    // offered at all.
    if req.sends_tools(false) {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({"toolSpec": {
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": {"json": input_schema(t)},
                }})
            })
            .collect();
        body["toolConfig"] = json!({});
        body["toolConfig"]["tools"] = Value::Array(tools);
        if req.tool_choice == ToolChoice::Auto {
            body["toolConfig"]["toolChoice"] = json!({"auto": {}});
        }
    }
    body
}

fn message(m: &Message) -> Value {
    match m {
        Message::User(text) => json!({"role": "user", "content": [{"text": text}]}),
        Message::Attached {
            content,
            attachments,
        } => role_content("user", attached(content, attachments)),
        Message::Assistant {
            content,
            tool_calls,
            reasoning,
        } => {
            // The turn's `reasoningContent` blocks first, as they came: a
            // Claude model refuses a tool turn without them.
            let mut blocks = reasoning.clone();
            // Blank text blocks are refused beside a tool call.
            if !content.trim().is_empty() || tool_calls.is_empty() {
                blocks.push(json!({"text": content}));
            }
            for c in tool_calls {
                blocks.push(json!({"toolUse": {
                    "toolUseId": c.id,
                    "name": c.name,
                    "input": c.arguments_object(),
                }}));
            }
            role_content("assistant", blocks)
        }
        Message::Paused(blocks) => role_content("assistant", blocks.clone()),
        Message::ToolResults(results) => {
            let blocks: Vec<Value> = results
                .iter()
                .map(|r| {
                    json!({"toolResult": {
                        "toolUseId": r.call_id,
                        "content": [{"text": r.content}],
                        "status": if r.is_error { "error" } else { "success" },
                    }})
                })
                .collect();
            role_content("user", blocks)
        }
    }
}

/// A first message's blocks: each file as an `image` block (png, jpeg,
/// gif, webp) or a `document` block (pdf, txt), its bytes base64, then
/// the words (a document goes with a text block, as Converse requires).
fn attached(content: &str, attachments: &[Attachment]) -> Vec<Value> {
    let mut names: Vec<String> = Vec::new();
    let mut blocks: Vec<Value> = attachments
        .iter()
        .map(|a| {
            let source = json!({"bytes": a.base64()});
            let format = match a.kind {
                AttachmentKind::Pdf => "pdf",
                AttachmentKind::Text => "txt",
                k => return json!({"image": {"format": &k.media_type()[6..], "source": source}}),
            };
            let name = document_name(a.file_name(), &names);
            names.push(name.clone());
            json!({"document": {"format": format, "name": name, "source": source}})
        })
        .collect();
    blocks.push(json!({"text": content}));
    blocks
}

/// A document's name as Converse takes one: letters, digits, single
/// spaces, hyphens, parentheses and square brackets only (anything else a
/// hyphen), and unlike any name before it in the message.
fn document_name(file: &str, taken: &[String]) -> String {
    let mut name = String::new();
    for c in file.chars() {
        let c = match c {
            c if c.is_ascii_alphanumeric() || "-()[]".contains(c) => c,
            c if c.is_whitespace() => ' ',
            _ => '-',
        };
        if !(c == ' ' && (name.is_empty() || name.ends_with(' '))) {
            name.push(c);
        }
    }
    let name = match name.trim_end() {
        "" => "document".to_string(),
        n => n.to_string(),
    };
    let mut unique = name.clone();
    let mut n = 1;
    while taken.contains(&unique) {
        n += 1;
        unique = format!("{name} ({n})");
    }
    unique
}

#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    output: Value,
    #[serde(default, rename = "stopReason")]
    stop_reason: Option<String>,
    /// Read leniently: see [`count`].
    #[serde(default)]
    usage: Value,
}

/// Parses a Converse response: text blocks concatenated, each `toolUse` a
/// [`ToolCall`], each `reasoningContent` kept whole to be sent back (its
/// text the thinking), other blocks (images) left out.
pub fn parse(body: &str) -> Result<Response, String> {
    let wire: Wire = serde_json::from_str(body).map_err(|e| invalid_json_detail(body, &e))?;
    let content = &wire.output["message"]["content"];
    let Some(blocks) = content.as_array() else {
        return Err(format!("no output.message.content in {}", clip(body)));
    };
    let stop_reason = wire.stop_reason.unwrap_or_default();
    // `inputTokens` leaves out what was read from or written to the cache,
    // as Anthropic's own API does: all of it is input.
    let cache_read = count(&wire.usage["cacheReadInputTokens"]);
    let cache_write = count(&wire.usage["cacheWriteInputTokens"]);
    let mut resp = Response {
        input_tokens: count(&wire.usage["inputTokens"])
            .saturating_add(cache_read)
            .saturating_add(cache_write),
        output_tokens: count(&wire.usage["outputTokens"]),
        cache_read_tokens: cache_read,
        cache_write_tokens: cache_write,
        cut: match stop_reason.as_str() {
            "max_tokens" => Some(Cut::OutputLimit),
            "model_context_window_exceeded" => Some(Cut::ContextWindow),
            _ => None,
        },
        ..Response::default()
    };
    if matches!(
        stop_reason.as_str(),
        "guardrail_intervened" | "content_filtered"
    ) {
        resp.declined = Some(format!(
            "the model's answer was withheld (stopReason \"{stop_reason}\")"
        ));
    }
    for (i, block) in blocks.iter().enumerate() {
        if let Some(text) = block["text"].as_str() {
            resp.content.push_str(text);
        } else if let Some(r) = block.get("reasoningContent") {
            resp.thinking.push_str(text_of(&r["reasoningText"]["text"]));
            resp.reasoning.push(block.clone());
        } else if let Some(call) = block.get("toolUse") {
            let input = call["input"].clone();
            resp.tool_calls.push(ToolCall {
                id: call["toolUseId"]
                    .as_str()
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| format!("call_{i}"), str::to_string),
                name: call["name"].as_str().unwrap_or_default().to_string(),
                arguments: arguments_from_json(&input),
                wire_arguments: input,
                foreign: None,
            });
        }
    }
    resp.stop_reason = stop_reason;
    Ok(resp)
}

fn text_of(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn clip(body: &str) -> String {
    crate::text::clip(&crate::text::one_line(body), 200, "…")
}
