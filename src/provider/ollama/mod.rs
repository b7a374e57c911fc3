//! The Ollama chat wire format (`POST /api/chat`): its endpoint and
//! headers, the request body and the parsing of an answer; its stream's
//! lines in `stream.rs`; its tools' schemas in `tools.rs`. Its models refuse nothing axe sends: the body
//! takes no quirks.

mod stream;
mod tools;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::provider::format::Format;
use crate::provider::stream::{Assembly, Frames};
use crate::provider::{
    Attachment, AttachmentKind, Cut, Effort, Message, Quirks, Request, Response, ToolCall,
    arguments_from_wire, assistant_message, count, invalid_json_detail, number, string,
};

/// Ollama's chat API, as the common code calls it.
pub(crate) struct Chat;

impl Format for Chat {
    fn refuses_attachment(&self, kind: AttachmentKind) -> Option<&'static str> {
        (!kind.is_image() && kind != AttachmentKind::Text)
            .then_some("Ollama's chat takes images (and text), not documents")
    }

    fn default_base_url(&self) -> &'static str {
        "http://localhost:11434"
    }

    /// A local server: a key is sent only when one is set.
    fn needs_key(&self) -> bool {
        false
    }

    fn endpoint(&self, base_url: &str, _model: &str) -> String {
        format!("{base_url}/api/chat")
    }

    fn auth(&self, key: Option<&str>) -> Vec<(&'static str, String)> {
        crate::provider::wire::bearer(key)
    }

    fn frames(&self) -> Frames {
        Frames::Lines
    }

    fn body(&self, req: &Request, _quirks: Quirks) -> Value {
        body(req)
    }

    fn parse(&self, body: &str) -> Result<Response, String> {
        parse(body)
    }

    fn assembly(&self) -> Box<dyn Assembly> {
        Box::<stream::Stream>::default()
    }

    fn connection_refused(&self, base_url: &str, _url: &str) -> String {
        format!("connection refused: is Ollama running? (expected at {base_url})")
    }
}

/// The request body for `req`. The system prompt is the first message;
/// temperature and max tokens go in `options`.
pub fn body(req: &Request) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if !req.system.is_empty() {
        messages.push(json!({"role": "system", "content": req.system}));
    }
    for m in &req.messages {
        push_message(&mut messages, m);
    }
    // Moved in, not copied through `json!` (design §3.15).
    let mut body = json!({"model": req.model, "stream": req.stream});
    body["messages"] = Value::Array(messages);
    let mut options = serde_json::Map::new();
    if let Some(t) = req.temperature {
        options.insert("temperature".into(), number(t));
    }
    if let Some(n) = req.max_tokens {
        options.insert("num_predict".into(), json!(n));
    }
    if !options.is_empty() {
        body["options"] = Value::Object(options);
    }
    if let Some(think) = think(req) {
        body["think"] = think;
    }
    // Ollama cannot forbid tool calls: tools only go where they are offered.
    if req.sends_tools(false) {
        body["tools"] = tools::tools(req);
    } else if let Some(schema) = &req.output_schema {
        // `format` constrains every token the model writes to the schema,
        // which leaves no way to write a tool call: it goes only on requests
        // that offer no tool. With tools, the answer is validated and
        // repaired instead (design D22).
        body["format"] = schema.clone();
    }
    body
}

/// `think` for a request that asks for reasoning: a level for the models
/// that take one (gpt-oss: `low`, `medium`, `high`; `minimal` is `low`),
/// `true` for any other (a level there is not understood), and for a
/// budget alone, which Ollama has no field for (design §4.15).
fn think(req: &Request) -> Option<Value> {
    let r = req.reasoning?;
    let leveled = req.model.starts_with("gpt-oss");
    Some(match r.effort {
        Some(e) if leveled => json!(match e {
            Effort::Minimal | Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }),
        _ => json!(true),
    })
}

fn push_message(out: &mut Vec<Value>, m: &Message) {
    match m {
        Message::User(text) => out.push(json!({"role": "user", "content": text})),
        Message::Attached {
            content,
            attachments,
        } => out.push(attached(content, attachments)),
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => out.push(assistant_message(
            content,
            tool_calls,
            |c| json!({"function": {"name": c.name, "arguments": c.arguments_object()}}),
        )),
        // Only the Anthropic wire pauses a turn.
        Message::Paused(_) => {}
        // Ollama has no tool_call_id: one `tool` message per result, in
        // order, naming the tool that ran (`tool_name`).
        Message::ToolResults(results) => {
            for r in results {
                out.push(json!({"role": "tool", "content": r.content, "tool_name": r.tool_name}));
            }
        }
    }
}

/// A first message with files: the images in `images` (base64), a text
/// file's text after the words; no other kind gets here
/// ([`Chat`]'s `refuses_attachment`).
fn attached(content: &str, attachments: &[Attachment]) -> Value {
    let mut text = content.to_string();
    for a in attachments
        .iter()
        .filter(|a| a.kind == AttachmentKind::Text)
    {
        text.push_str("\n\n");
        text.push_str(&a.as_text_part());
    }
    let images: Vec<String> = attachments
        .iter()
        .filter(|a| a.kind.is_image())
        .map(Attachment::base64)
        .collect();
    json!({"role": "user", "content": text, "images": images})
}

#[derive(Deserialize)]
struct Wire {
    message: WireMessage,
    /// The model that answered (the chat span's, design §7.9); an answer
    /// has no id. Read leniently: anything but a string is none.
    #[serde(default)]
    model: Value,
    #[serde(default)]
    done_reason: Option<String>,
    /// Read leniently: see [`count`].
    #[serde(default)]
    prompt_eval_count: Value,
    #[serde(default)]
    eval_count: Value,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
    /// What a thinking model thought (with `think`), never the answer.
    #[serde(default)]
    thinking: Option<String>,
}

#[derive(Deserialize)]
struct WireToolCall {
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: String,
    /// An object per the API; a JSON string is accepted too.
    #[serde(default)]
    arguments: Value,
}

/// Parses a successful response body. Tool calls get ids `ollama_<index>`.
pub fn parse(body: &str) -> Result<Response, String> {
    let wire: Wire = serde_json::from_str(body).map_err(|e| invalid_json_detail(body, &e))?;
    let tool_calls = wire
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| ToolCall {
            id: format!("ollama_{i}"),
            name: c.function.name,
            arguments: arguments_from_wire(&c.function.arguments),
            wire_arguments: c.function.arguments,
            foreign: None,
        })
        .collect();
    let stop_reason = wire.done_reason.unwrap_or_default();
    Ok(Response {
        content: wire.message.content.unwrap_or_default(),
        thinking: wire.message.thinking.unwrap_or_default(),
        model: string(&wire.model),
        cut: (stop_reason == "length").then_some(Cut::OutputLimit),
        stop_reason,
        input_tokens: count(&wire.prompt_eval_count),
        output_tokens: count(&wire.eval_count),
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        tool_calls,
        retries: 0,
        declined: None,
        paused: None,
        ..Response::default()
    })
}
