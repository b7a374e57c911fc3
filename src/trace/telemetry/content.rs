//! What a model was sent and said, as span attributes — only when asked
//! (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`), in the
//! GenAI conventions' message shape (`role` and `parts`), and every string
//! redacted: keys axe knows never leave in a span (design §7.9).

use serde_json::{Value, json};

use super::otlp::{AttrValue, Span};
use crate::provider::{Message, Request, Response, ToolCall};
use crate::text::redact::redact;

/// A request's system prompt and messages.
pub fn request(span: &mut Span, request: &Request) {
    if !request.system.is_empty() {
        let system = json!([{"type": "text", "content": request.system}]);
        span.set("gen_ai.system_instructions", text(&system));
    }
    let messages: Vec<Value> = request.messages.iter().filter_map(message).collect();
    span.set("gen_ai.input.messages", text(&Value::Array(messages)));
}

/// A response's text and calls.
pub fn response(span: &mut Span, r: &Response) {
    let mut parts = Vec::new();
    if !r.content.is_empty() {
        parts.push(json!({"type": "text", "content": r.content}));
    }
    parts.extend(r.tool_calls.iter().map(call_part));
    let out = json!([{"role": "assistant", "parts": parts, "finish_reason": r.stop_reason}]);
    span.set("gen_ai.output.messages", text(&out));
}

/// A call's arguments, as the model wrote them, redacted.
pub fn arguments(call: &ToolCall) -> String {
    redact(&serde_json::to_string(&call.arguments).unwrap_or_default())
}

fn message(m: &Message) -> Option<Value> {
    Some(match m {
        Message::User(text) => {
            json!({"role": "user", "parts": [{"type": "text", "content": text}]})
        }
        // The files are named, not carried: a span is no place for their
        // bytes.
        Message::Attached {
            content,
            attachments,
        } => {
            let mut parts = vec![json!({"type": "text", "content": content})];
            parts.extend(attachments.iter().map(|a| {
                let modality = if a.kind.is_image() {
                    "image"
                } else {
                    "document"
                };
                json!({"type": "blob", "modality": modality, "mime_type": a.kind.media_type(),
                    "name": a.name, "size": a.bytes.len()})
            }));
            json!({"role": "user", "parts": parts})
        }
        Message::Assistant {
            content,
            tool_calls,
            ..
        } => {
            let mut parts = Vec::new();
            if !content.is_empty() {
                parts.push(json!({"type": "text", "content": content}));
            }
            parts.extend(tool_calls.iter().map(call_part));
            json!({"role": "assistant", "parts": parts})
        }
        Message::ToolResults(results) => {
            let parts: Vec<Value> = results
                .iter()
                .map(|r| json!({"type": "tool_call_response", "id": r.call_id, "response": r.content}))
                .collect();
            json!({"role": "tool", "parts": parts})
        }
        Message::Paused(_) => return None,
    })
}

fn call_part(c: &ToolCall) -> Value {
    json!({"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments})
}

/// `v` as one JSON string, redacted.
fn text(v: &Value) -> AttrValue {
    AttrValue::Str(redact(&v.to_string()).into())
}
