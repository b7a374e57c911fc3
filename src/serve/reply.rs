//! What axe serve answers, in OpenAI's shapes (design §12.2): a chat
//! completion, the model list, and every error as `{"error": {message,
//! type, param, code}}` with its HTTP status — which status each of a
//! run's failures gets, and which of them a client may retry.

use serde_json::{Value, json};

use crate::error::Error;
use crate::provider::{Cut, ErrorKind};
use crate::trace::ledger::Totals;

/// An error as OpenAI's API gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    /// OpenAI's `type`: `invalid_request_error`, `authentication_error`, ...
    pub kind: &'static str,
    pub code: Option<&'static str>,
    pub param: Option<String>,
}

impl ApiError {
    pub fn new(
        status: u16,
        kind: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            kind,
            code: Some(code),
            param: None,
        }
    }

    /// A request axe cannot take (400), about `param` when one is named.
    pub fn invalid<'a>(message: impl Into<String>, param: impl Into<Option<&'a str>>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            kind: "invalid_request_error",
            code: None,
            param: param.into().map(str::to_string),
        }
    }

    /// Whether a client's retry of the same request may fare better: the
    /// server busy (429), stopping (503, another instance may take it), or
    /// a body that came too slowly (408). Every other failure would only
    /// repeat — the run's own (its provider, its deadline, its budget, its
    /// schema) after running the whole tree again — so its answer carries
    /// `x-should-retry: false`, which OpenAI's SDKs obey over their
    /// default of retrying every 5xx twice; clients that do not read it
    /// (the AI SDK) are kept off by the run's status, 424 (design §12.2).
    pub fn retryable(&self) -> bool {
        matches!(self.status, 408 | 429 | 503)
    }

    /// The headers of this error's answer: `extra`, then
    /// `x-should-retry: false` unless a retry may help.
    pub fn headers<'a>(&self, extra: &[(&'a str, String)]) -> Vec<(&'a str, String)> {
        let mut headers = extra.to_vec();
        if !self.retryable() {
            headers.push(("x-should-retry", "false".into()));
        }
        headers
    }

    /// The error's JSON body. Its message is redacted: no key leaves axe.
    pub fn body(&self) -> Value {
        json!({"error": {
            "message": crate::text::redact::redact(&self.message),
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
    }
}

/// The answer to a run that failed with `e` (design §12.2): 404 for an
/// agent that is not there, 400 for a spent budget (the same request would
/// spend it again; OpenAI's clients retry a 429 by themselves), 424 Failed
/// Dependency for the run's own failure — its provider or model failing
/// after axe's own retries, its answer never matching the schema, its
/// deadline — and 500 for a server whose agent files or config are wrong.
/// Not 502 or 504: a retry would only run the whole tree again to the same
/// end, and the AI SDK retries every 5xx (and 408, 409, 429) whatever
/// `x-should-retry` says; the `code` still says which failure it was.
pub fn run_error(e: &Error) -> ApiError {
    let msg = e.one_line();
    match e {
        Error::Partial(inner) => run_error(inner),
        Error::AgentNotFound { name, .. } | Error::InvalidAgentName { name } => ApiError::new(
            404,
            "invalid_request_error",
            "model_not_found",
            format!("The model `{name}` does not exist: no such agent"),
        ),
        Error::Budget(_) => ApiError::new(400, "invalid_request_error", "budget_exceeded", msg),
        Error::TimedOut { .. } => ApiError::new(RUN_FAILED, "timeout", "timeout", msg),
        Error::Provider(p) if p.kind == ErrorKind::Timeout => {
            ApiError::new(RUN_FAILED, "timeout", "timeout", msg)
        }
        Error::Provider(_) | Error::Declined { .. } | Error::TooManyTurns(_) => {
            ApiError::new(RUN_FAILED, "api_error", "upstream_error", msg)
        }
        Error::Output { .. } => {
            ApiError::new(RUN_FAILED, "api_error", "output_schema_not_matched", msg)
        }
        _ => ApiError::new(500, "server_error", "agent_error", msg),
    }
}

/// 424 Failed Dependency: the status of a run that failed on its own
/// (its provider, its model, its deadline), which no client retries.
pub const RUN_FAILED: u16 = 424;

/// A chat completion: `id`, the agent as `model`, one choice, the tree's
/// usage.
pub fn completion(
    id: &str,
    created: u64,
    agent: &str,
    content: &str,
    finish: &str,
    usage: &Totals,
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": agent,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": finish,
        }],
        "usage": usage_json(usage),
    })
}

/// OpenAI's `usage` for the whole tree's totals.
pub fn usage_json(t: &Totals) -> Value {
    json!({
        "prompt_tokens": t.input_tokens,
        "completion_tokens": t.output_tokens,
        "total_tokens": t.input_tokens.saturating_add(t.output_tokens),
        "prompt_tokens_details": {"cached_tokens": t.cache_read_input_tokens},
    })
}

/// OpenAI's `finish_reason` for how an answer ended: `length` for one
/// cut off, `content_filter` for one the provider's filter stopped, else
/// `stop`.
pub fn finish_reason(cut: Option<Cut>) -> &'static str {
    match cut {
        None => "stop",
        Some(Cut::OutputLimit | Cut::ContextWindow) => "length",
        Some(Cut::Filtered) => "content_filter",
    }
}

/// `GET /v1/models`: each agent as a model owned by `axe`.
pub fn models(agents: &[String], created: u64) -> Value {
    let data: Vec<Value> = agents.iter().map(|a| model(a, created)).collect();
    json!({"object": "list", "data": data})
}

/// One agent as OpenAI's Model object (`GET /v1/models/{id}`).
pub fn model(agent: &str, created: u64) -> Value {
    json!({"id": agent, "object": "model", "created": created, "owned_by": "axe"})
}

/// Seconds since the epoch, for `created`.
/// `headers` and `x-axe-cost-usd`, the run's cost in USD, when it is known
/// (design §7.8): a whole answer's head is written after the run, so it
/// can say what the run cost.
pub fn with_cost(headers: &[(&'static str, String)], t: &Totals) -> Vec<(&'static str, String)> {
    let mut out = headers.to_vec();
    if let Some(usd) = t.cost.usd() {
        out.push(("x-axe-cost-usd", usd.to_string()));
    }
    out
}

pub fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
