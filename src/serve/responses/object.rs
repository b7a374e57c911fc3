//! The Responses API's objects as axe serve gives them (design §12.6): the
//! `response` (id `resp_<run id>`), its one output message (id
//! `msg_<run id>`) with one `output_text` part, and the usage of the whole
//! tree. Whole, a stream's lifecycle events and its last event all carry
//! the same `response`, at the status it then has.

use serde_json::{Value, json};

use super::request::Ask;
use crate::provider::Cut;
use crate::trace::ledger::Totals;

/// What every `response` of one request says the same.
pub struct Meta {
    /// `resp_<run id>`.
    pub id: String,
    /// `msg_<run id>`.
    pub item_id: String,
    pub created_at: u64,
    pub agent: String,
    pub instructions: Value,
    pub max_output_tokens: Option<u64>,
    pub text: Value,
    pub metadata: Value,
}

impl Meta {
    pub fn new(ask: &Ask, run_id: &str, created_at: u64) -> Meta {
        Meta {
            id: format!("resp_{run_id}"),
            item_id: format!("msg_{run_id}"),
            created_at,
            agent: ask.chat.agent.clone(),
            instructions: ask.instructions.clone(),
            max_output_tokens: ask.chat.max_tokens,
            text: ask.text.clone(),
            metadata: ask.metadata.clone(),
        }
    }

    /// The `response` at `status`, with `output` so far, the usage when the
    /// run is over, and why it is incomplete or failed when it is.
    pub fn response(&self, status: &str, output: Vec<Value>, end: &End) -> Value {
        let (usage, incomplete, error) = match end {
            End::Running => (Value::Null, Value::Null, Value::Null),
            End::Done(u, cut) => (
                usage(u),
                incomplete(*cut).map_or(Value::Null, |r| json!({"reason": r})),
                Value::Null,
            ),
            End::Failed(u, message) => (
                usage(u),
                Value::Null,
                json!({"code": "server_error", "message": message}),
            ),
        };
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": error,
            "incomplete_details": incomplete,
            "instructions": self.instructions,
            "max_output_tokens": self.max_output_tokens,
            "model": self.agent,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": null,
            "store": false,
            "temperature": null,
            "text": self.text,
            "tool_choice": "auto",
            "tools": [],
            "top_p": null,
            "truncation": "disabled",
            "usage": usage,
            "metadata": self.metadata,
        })
    }

    /// The output message holding `text`, at `status`.
    pub fn message(&self, status: &str, text: Option<&str>) -> Value {
        let content = text.map_or_else(|| json!([]), |t| json!([output_text(t)]));
        json!({
            "id": self.item_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": content,
        })
    }
}

/// How far a run got, for its `response`.
pub enum End<'a> {
    Running,
    /// Answered: the usage, and how the answer was cut short if it was.
    Done(&'a Totals, Option<Cut>),
    /// Failed: the usage, and the error's message.
    Failed(&'a Totals, &'a str),
}

/// An `output_text` content part.
pub fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

/// The status of an answer ended by `cut`: `incomplete` when it was cut.
pub fn status(cut: Option<Cut>) -> &'static str {
    if incomplete(cut).is_some() {
        "incomplete"
    } else {
        "completed"
    }
}

/// `incomplete_details.reason` for an answer cut short.
fn incomplete(cut: Option<Cut>) -> Option<&'static str> {
    match cut? {
        Cut::OutputLimit | Cut::ContextWindow => Some("max_output_tokens"),
        Cut::Filtered => Some("content_filter"),
    }
}

/// The Responses API's `usage` for the whole tree's totals.
pub fn usage(t: &Totals) -> Value {
    json!({
        "input_tokens": t.input_tokens,
        "input_tokens_details": {
            "cached_tokens": t.cache_read_input_tokens,
            "cache_write_tokens": t.cache_creation_input_tokens,
        },
        "output_tokens": t.output_tokens,
        // axe counts no reasoning tokens apart from the output's.
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": t.input_tokens.saturating_add(t.output_tokens),
    })
}
