//! The fault matrix (design §4.7, §4.8, §6.1): every way a provider can
//! misbehave, for each of Anthropic, OpenAI and Ollama, checked twice
//! through the real binary.
//!
//! - **Top level**: `axe run a` on the faulty server. The exit code is
//!   docs/reference/exit-codes.md's (3 for API errors, 1 for 400/404), stdout stays empty, and
//!   stderr is one line `axe: <provider>: <classification>`, no panic, no
//!   backtrace.
//! - **In a sub-agent**: a parent `lead` on a healthy server (OpenAI, or
//!   Anthropic when the faulty provider is OpenAI) delegates once to `s` on
//!   the faulty server, then echoes the tool result. The run exits 0, the
//!   parent's second request carries `Error: sub-agent "s" failed - <same
//!   classification>. You may retry or proceed without this result.`, and
//!   that echo is what stdout shows.
//!
//! The tool-call faults (bad arguments, missing ids, unknown tools, 1,000
//! calls) come from the model of the agent under test: at top level that is
//! `a`, in a sub-agent it is `s`, which then has a `helper` of its own.
//!
//! The six runs of a case go at once on threads, and a failure names every
//! cell (case × provider × level) that failed. Every run has a small
//! `--timeout`, so no fault can hang the suite. Retries are fast
//! (`[retry] initial_delay_ms = 1, max_delay_ms = 5`) and keep their default
//! count of 2.

use crate::common::*;

use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};

/// `--timeout` of every run that is not about timeouts.
pub(crate) const TIMEOUT: &str = "15";

/// A run still going after this has hung: every run has a `--timeout` of
/// at most 15 s, and retries are fast.
pub(crate) const FAULT_HUNG: Duration = Duration::from_secs(60);

/// The timeout of a cell that must run into it, seconds. Counted from
/// axe's start, so it must leave room to start and send the request on a
/// loaded machine: at 1 s an Ollama cell once timed out before its request
/// reached the fake (0 requests sent against 1).
pub(crate) const FAULT_TIMEOUT: u64 = 3;

/// A run whose deadline is [`FAULT_TIMEOUT`] must end well before this (it
/// would take 20 s or a minute if it waited for the slow or hanging
/// server); the margin is for a loaded machine starting every cell's axe at
/// once.
pub(crate) const TIMEOUT_BOUND: Duration = Duration::from_secs(12);

pub(crate) const FAILED: &str = "Error: sub-agent \"s\" failed - ";
pub(crate) const RETRY_HINT: &str = ". You may retry or proceed without this result.";

/// The id of the parent's one `call_agent` call.
pub(crate) const LEAD_CALL_ID: &str = "call_lead_1";

/// Requests one provider call makes when every attempt fails with a
/// retryable error: the first and the default 2 retries.
pub(crate) const ALL_ATTEMPTS: usize = 3;

// ---------------------------------------------------------------------------
// Providers.
// ---------------------------------------------------------------------------

/// The provider's own error body for `status` (as each API documents its
/// errors) and the message axe is to show from it.
pub(crate) fn api_error(p: P, status: u16) -> (String, &'static str) {
    match p {
        P::Anthropic => {
            let (kind, message) = match status {
                400 => (
                    "invalid_request_error",
                    "messages: text content blocks must be non-empty",
                ),
                401 => ("authentication_error", "invalid x-api-key"),
                403 => (
                    "permission_error",
                    "Your API key does not have permission to use the specified resource.",
                ),
                404 => ("not_found_error", "model: claude-nope-9"),
                429 => (
                    "rate_limit_error",
                    "Number of request tokens has exceeded your per-minute rate limit",
                ),
                529 => ("overloaded_error", "Overloaded"),
                _ => ("api_error", "Internal server error"),
            };
            (
                json!({"type": "error", "error": {"type": kind, "message": message}}).to_string(),
                message,
            )
        }
        P::OpenAi => {
            let (kind, code, message) = match status {
                400 => (
                    "invalid_request_error",
                    json!("invalid_value"),
                    "Invalid value for 'temperature': expected a number between 0 and 2.",
                ),
                401 => (
                    "invalid_request_error",
                    json!("invalid_api_key"),
                    "Incorrect API key provided: sk-wrong. You can find your API key at https://platform.openai.com/account/api-keys.",
                ),
                403 => (
                    "request_forbidden",
                    json!("unsupported_country_region_territory"),
                    "Country, region, or territory not supported",
                ),
                404 => (
                    "invalid_request_error",
                    json!("model_not_found"),
                    "The model `gpt-nope` does not exist or you do not have access to it.",
                ),
                429 => (
                    "tokens",
                    json!("rate_limit_exceeded"),
                    "Rate limit reached for gpt-4o in organization org-abc on tokens per min (TPM): Limit 30000, Used 30000, Requested 500. Please try again in 1s.",
                ),
                502 => ("cf_bad_gateway", json!(502), "Bad gateway."),
                503 | 529 => (
                    "server_error",
                    Value::Null,
                    "The engine is currently overloaded, please try again later.",
                ),
                _ => (
                    "server_error",
                    Value::Null,
                    "The server had an error while processing your request. Sorry about that!",
                ),
            };
            (
                json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
                    .to_string(),
                message,
            )
        }
        P::Ollama => {
            let message = match status {
                400 => {
                    "json: cannot unmarshal number into Go struct field ChatRequest.messages of type string"
                }
                401 => "unauthorized",
                403 => "access to this model is forbidden",
                404 => "model \"llama9\" not found, try pulling it first",
                429 => "you have reached your hourly usage limit",
                502 => "bad gateway",
                503 => "server busy, please try again. maximum pending requests exceeded",
                529 => "overloaded",
                _ => "llama runner process has terminated: exit status 2",
            };
            (json!({"error": message}).to_string(), message)
        }
        P::Responses => unreachable!("runs on PROVIDERS"),
    }
}

/// How axe names a failed status, as docs/reference/exit-codes.md groups them.
pub(crate) fn classification(status: u16) -> &'static str {
    match status {
        400 => "bad request",
        401 | 403 => "authentication failed",
        404 => "not found",
        429 => "rate limited",
        529 => "overloaded",
        _ => "server error",
    }
}

// ---------------------------------------------------------------------------
// Runs.
// ---------------------------------------------------------------------------

/// One tool result as a request carries it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Res {
    /// `tool_call_id` / `tool_use_id`; `None` on Ollama, which has no ids.
    pub(crate) id: Option<String>,
    pub(crate) content: String,
    /// Anthropic's `is_error`; `None` on the wires without it.
    pub(crate) is_error: Option<bool>,
}

/// The tool results a request carries, in order, in `p`'s wire format.
pub(crate) fn results(p: P, req: &Recorded) -> Vec<Res> {
    let messages = req.messages();
    match p {
        P::Anthropic => messages
            .iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .map(|b| Res {
                id: b["tool_use_id"].as_str().map(str::to_string),
                content: b["content"].as_str().unwrap_or("<not a string>").into(),
                is_error: b["is_error"].as_bool(),
            })
            .collect(),
        P::OpenAi | P::Ollama => messages
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(|m| Res {
                id: m["tool_call_id"].as_str().map(str::to_string),
                content: m["content"].as_str().unwrap_or("<not a string>").into(),
                is_error: None,
            })
            .collect(),
        P::Responses => unreachable!("runs on PROVIDERS"),
    }
}

/// The tool calls of the assistant turn a request sends back: their ids
/// (empty strings on Ollama), in order.
pub(crate) fn history_call_ids(p: P, req: &Recorded) -> Vec<String> {
    let messages = req.messages();
    let Some(assistant) = messages.iter().find(|m| m["role"] == "assistant") else {
        return Vec::new();
    };
    let calls: Vec<Value> = match p {
        P::Anthropic => assistant["content"]
            .as_array()
            .map(|b| {
                b.iter()
                    .filter(|b| b["type"] == "tool_use")
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        P::OpenAi | P::Ollama => assistant["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        P::Responses => unreachable!("runs on PROVIDERS"),
    };
    calls
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The contents of a request's tool results joined by ` | `: what the
/// agents here answer once they have them.
pub(crate) fn echo(p: P, req: &Recorded) -> String {
    results(p, req)
        .iter()
        .map(|r| r.content.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The healthy parent `lead` on `p`: its first answer delegates to `s`,
/// its second echoes the tool result.
pub(crate) fn lead_server(p: P) -> FakeServer {
    FakeServer::route(move |req| {
        if req.has_tool_results() {
            Reply::Json(200, p.text(&echo(p, req)))
        } else {
            Reply::Json(
                200,
                p.tool_calls(&[(LEAD_CALL_ID, "call_agent", delegate("s", "do the thing"))]),
            )
        }
    })
}

/// Checks the parent's side of a delegation: two requests, the second
/// carrying exactly one result for its call, which stdout echoes. Returns
/// that result.
#[track_caller]
pub(crate) fn lead_result(parent: P, lead: &FakeServer, out: &Output) -> Res {
    let sent = lead.requests();
    assert_eq!(sent.len(), 2, "the parent's requests");
    let got = results(parent, &sent[1]);
    assert_eq!(got.len(), 1, "one tool result: {got:?}");
    let result = got[0].clone();
    assert_eq!(result.id.as_deref(), Some(LEAD_CALL_ID), "{result:?}");
    assert_same_text(
        &stdout(out),
        &format!("{}\n", result.content),
        "stdout is the parent's final answer",
    );
    result
}

/// `assert_eq!` for texts that may be long (1,000 results echoed): shows
/// where they part rather than both whole.
#[track_caller]
pub(crate) fn assert_same_text(got: &str, want: &str, what: &str) {
    if got == want {
        return;
    }
    let at = got
        .bytes()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(want.len()));
    let near = |s: &str| -> String {
        let from = (at.saturating_sub(80)..=at)
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        s.get(from..).unwrap_or("").chars().take(240).collect()
    };
    panic!(
        "{what}: the texts part at byte {at} (lengths {} and {})\n got: ...{:?}\nwant: ...{:?}",
        got.len(),
        want.len(),
        near(got),
        near(want)
    );
}

#[track_caller]
pub(crate) fn assert_no_panic(err: &str) {
    for word in ["panicked", "backtrace", "RUST_BACKTRACE", "internal error"] {
        assert!(!err.contains(word), "{word:?} in stderr: {err}");
    }
}

// ---------------------------------------------------------------------------
// The matrix.
// ---------------------------------------------------------------------------

mod bodies;
mod matrix;
mod statuses;
mod tool_calls;
mod tool_matrix;

pub(crate) use matrix::*;
pub(crate) use tool_matrix::*;
