//! The trace's format (design §7.2): every event a run reports, one variant
//! of [`TraceEvent`] per kind, and the one place each becomes its JSON line.
//! docs/reference/output.md lists these fields; a change here is a change
//! to the trace, and `tests/golden/` holds its bytes.
//!
//! A line is the fields every event has ([`Line`]), then the event's own,
//! in key order. Every string is redacted but the model's own words
//! ([`MODEL_WORDS`], design §6.7). Where a line goes is `writer.rs`'s.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::cost::Cost;
use crate::deadline::millis;
use crate::error::Error;
use crate::provider::{Provider, Request, Response, Retry, ToolCall, ToolResult};
use crate::text::redact::redact_fields;
use crate::trace::ledger::{Place, Totals};
use crate::trace::outcome::Outcome;

/// The trace fields that carry what a model said — a response's `content`
/// and `calls`, a call's `arguments`, a sub-agent's result `content` — and
/// are written as they came; every other string is redacted (design §6.7).
const MODEL_WORDS: [&str; 3] = ["content", "calls", "arguments"];

/// One event of a run, as the trace reports it.
#[derive(Debug)]
pub enum TraceEvent<'a> {
    /// `run_start`: an agent run starts on `provider`'s `model` (the
    /// provider by the name its model string gives), offered `tools`.
    RunStart {
        provider: &'a str,
        model: &'a str,
        tools: usize,
    },
    /// `request`: `request` is about to be sent (with bodies, its wire body).
    Request {
        provider: &'a Provider,
        request: &'a Request,
    },
    /// `retry`: a request is sent again, after a failure or without a
    /// parameter the model refused.
    Retry {
        provider: &'a str,
        model: &'a str,
        resend: Resend<'a>,
    },
    /// `response`: `response` came back after `took` (with bodies, its text
    /// and calls).
    Response {
        provider: &'a str,
        model: &'a str,
        took: Duration,
        response: &'a Response,
        /// What it cost (design §7.8).
        cost: Cost,
    },
    /// `repair`: an answer that does not match the output schema goes back
    /// for repair number `repair` of `of`.
    Repair {
        repair: u32,
        of: u32,
        problems: &'a [String],
    },
    /// `tool_call`: a call starts (with bodies, its arguments).
    ToolCall {
        call: &'a ToolCall,
        agent_called: &'a str,
    },
    /// `tool_result`: a call ended with `result` after `took` (with bodies,
    /// its text).
    ToolResult {
        call: &'a ToolCall,
        agent_called: &'a str,
        result: &'a ToolResult,
        took: Duration,
    },
    /// `tool`: a built-in tool (design §8.1) or an MCP server's (§9.3) ran
    /// for `took`: its name, its arguments in one short line, the bytes it
    /// handled, a command's exit status, and its error when it failed.
    Tool {
        /// The call's id (its span's key, design §7.9; not in the trace).
        id: &'a str,
        name: &'a str,
        summary: &'a str,
        took: Duration,
        bytes: u64,
        exit: Option<i32>,
        error: Option<&'a str>,
    },
    /// `error`: the conversation ends with `error`; `request` when a
    /// request failed.
    Error {
        error: &'a Error,
        request: Option<FailedRequest<'a>>,
    },
    /// `mcp`: an MCP server of the run said something beside its answers
    /// (its stderr, a log message) or axe noticed something about it
    /// (design §9.4).
    Mcp { note: &'a crate::mcp::rpc::Note<'a> },
    /// `run_end`: the agent run ended after `took`; `totals` (the tree's
    /// tokens) for the top-level run.
    RunEnd {
        took: Duration,
        end: Ending<'a>,
        totals: Option<Totals>,
    },
}

/// Why a request is sent again.
#[derive(Debug)]
pub enum Resend<'a> {
    /// A failure likely to pass (design D12).
    Retry(&'a Retry),
    /// The model refused a parameter: `what` says which, and what is sent
    /// instead (design §4.5).
    Adjusted(&'a str),
}

/// The request whose failure ended a conversation.
#[derive(Debug, Clone, Copy)]
pub struct FailedRequest<'a> {
    pub provider: &'a str,
    pub model: &'a str,
    /// From sending to the failure, retries included.
    pub took: Duration,
}

/// How an agent run ended.
#[derive(Debug, Clone, Copy)]
pub enum Ending<'a> {
    /// With an answer.
    Finished(&'a Outcome),
    /// With an error.
    Failed(&'a Error),
    /// Cut short by a signal: `interrupted`, `terminated`, `hung up`.
    Interrupted(&'a str),
}

/// The fields every line has, in this order, then the event's own.
#[derive(Serialize)]
struct Line<'a> {
    ts: String,
    run_id: &'a str,
    event: &'a str,
    agent: &'a str,
    path: &'a str,
    depth: u32,
    turn: u32,
    #[serde(flatten)]
    fields: Map<String, Value>,
}

impl TraceEvent<'_> {
    /// The event's kind: its `event` field.
    pub fn name(&self) -> &'static str {
        match self {
            TraceEvent::RunStart { .. } => "run_start",
            TraceEvent::Request { .. } => "request",
            TraceEvent::Retry { .. } => "retry",
            TraceEvent::Response { .. } => "response",
            TraceEvent::Repair { .. } => "repair",
            TraceEvent::ToolCall { .. } => "tool_call",
            TraceEvent::ToolResult { .. } => "tool_result",
            TraceEvent::Tool { .. } => "tool",
            TraceEvent::Error { .. } => "error",
            TraceEvent::Mcp { .. } => "mcp",
            TraceEvent::RunEnd { .. } => "run_end",
        }
    }

    /// The event's trace line, ending in a newline: of the run `run_id`,
    /// at `place` on its turn `turn`, now; with `bodies`, the messages too.
    pub fn line(&self, run_id: &str, place: &Place, turn: u32, bodies: bool) -> String {
        let mut fields = self.fields(bodies);
        redact_fields(&mut fields, &MODEL_WORDS);
        let line = Line {
            ts: rfc3339(SystemTime::now()),
            run_id,
            event: self.name(),
            agent: &place.agent,
            path: &place.path,
            depth: place.depth,
            turn,
            fields,
        };
        // Serializing strings, numbers and JSON values cannot fail.
        let mut line = serde_json::to_string(&line).unwrap_or_default();
        line.push('\n');
        line
    }

    /// The event's own fields; with `bodies`, the messages too.
    fn fields(&self, bodies: bool) -> Map<String, Value> {
        let mut f = match self {
            TraceEvent::RunStart {
                provider,
                model,
                tools,
            } => json!({
                "provider": provider,
                "model": model,
                "tools": tools,
            }),
            TraceEvent::Request { provider, request } => {
                let mut f = json!({
                    "provider": provider.name,
                    "model": request.model,
                    "messages": request.messages.len(),
                });
                if bodies {
                    f["body"] = provider.body(request);
                }
                f
            }
            TraceEvent::Retry {
                provider,
                model,
                resend,
            } => retry(provider, model, resend),
            TraceEvent::Response {
                provider,
                model,
                took,
                response: r,
                cost,
            } => response(provider, model, *took, r, bodies, *cost),
            TraceEvent::Repair {
                repair,
                of,
                problems,
            } => json!({ "repair": repair, "of": of, "problems": problems }),
            TraceEvent::ToolCall { call, agent_called } => tool_call(call, agent_called, bodies),
            TraceEvent::ToolResult {
                call,
                agent_called,
                result,
                took,
            } => tool_result(call, agent_called, result, *took, bodies),
            TraceEvent::Tool {
                name,
                summary,
                took,
                bytes,
                exit,
                error,
                ..
            } => json!({
                "tool": name,
                "arguments": summary,
                "duration_ms": millis(*took),
                "bytes": bytes,
                "exit": exit,
                "error": error.map(|e| crate::text::one_line(e).chars().take(300).collect::<String>()),
            }),
            TraceEvent::Mcp { note } => json!({
                "server": note.server,
                "kind": note.kind,
                "text": note.text,
            }),
            TraceEvent::Error { error, request } => error_fields(error, request.as_ref()),
            TraceEvent::RunEnd { took, end, totals } => run_end(*took, end, totals.as_ref()),
        };
        match f.take() {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }
}

/// A `retry` event's fields: a retry's status, reason, attempt and wait;
/// for a refused parameter, status 400, what was left out and no wait.
fn retry(provider: &str, model: &str, resend: &Resend) -> Value {
    let mut f = match resend {
        Resend::Retry(r) => json!({
            "status": r.status,
            "reason": r.what,
            "attempt": r.attempt,
            "of": r.of,
            "delay_ms": millis(r.wait),
        }),
        Resend::Adjusted(what) => json!({ "status": 400, "reason": what, "delay_ms": 0 }),
    };
    f["provider"] = provider.into();
    f["model"] = model.into();
    f
}

/// A `response` event's fields.
fn response(
    provider: &str,
    model: &str,
    took: Duration,
    r: &Response,
    bodies: bool,
    cost: Cost,
) -> Value {
    let mut f = json!({
        "provider": provider,
        "model": model,
        "duration_ms": millis(took),
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "cache_read_input_tokens": r.cache_read_tokens,
        "cache_creation_input_tokens": r.cache_write_tokens,
        "stop_reason": r.stop_reason,
        "tool_calls": r.tool_calls.len(),
        "retries": r.retries,
        "cost_usd": cost,
    });
    // Only a streamed answer has one (design §4.11).
    if let Some(first) = r.first_token {
        f["first_token_ms"] = millis(first).into();
    }
    // Only where the model reasoned (design §4.15).
    if r.reasoning_tokens != 0 {
        f["reasoning_tokens"] = r.reasoning_tokens.into();
    }
    if bodies {
        if !r.thinking.is_empty() {
            f["thinking"] = r.thinking.clone().into();
        }
        f["content"] = r.content.clone().into();
        f["calls"] = r
            .tool_calls
            .iter()
            .map(|c| json!({ "id": c.id, "name": c.name, "arguments": c.arguments }))
            .collect();
    }
    f
}

/// A `tool_call` event's fields: `chars` counts the arguments' characters.
fn tool_call(call: &ToolCall, agent_called: &str, bodies: bool) -> Value {
    let chars: usize = call.arguments.values().map(|v| v.chars().count()).sum();
    let mut f = json!({
        "call_id": call.id,
        "tool": call.name,
        "agent_called": agent_called,
        "chars": chars,
    });
    if bodies {
        f["arguments"] = json!(call.arguments);
    }
    f
}

/// A `tool_result` event's fields: `chars` counts the result's characters.
fn tool_result(
    call: &ToolCall,
    agent_called: &str,
    result: &ToolResult,
    took: Duration,
    bodies: bool,
) -> Value {
    let mut f = json!({
        "call_id": call.id,
        "tool": call.name,
        "agent_called": agent_called,
        "is_error": result.is_error,
        "chars": result.content.chars().count(),
        "duration_ms": millis(took),
    });
    if bodies {
        f["content"] = result.content.clone().into();
    }
    f
}

/// An `error` event's fields: what went wrong and its kind, and for a
/// failed request, which it was, how long it took and its status.
fn error_fields(error: &Error, request: Option<&FailedRequest>) -> Value {
    let mut f = json!({ "error": error.to_string(), "kind": error_kind(error) });
    if let Some(r) = request {
        f["provider"] = r.provider.into();
        f["model"] = r.model.into();
        f["duration_ms"] = millis(r.took).into();
        f["status"] = match error {
            Error::Provider(e) => e.status.into(),
            _ => Value::Null,
        };
    }
    f
}

/// An `error` event's `kind`: a provider error's class (`Auth`,
/// `RateLimit`, `Timeout`, ...), else what ended the conversation.
pub(crate) fn error_kind(error: &Error) -> String {
    let kind = match error {
        Error::Provider(e) => return format!("{:?}", e.kind),
        Error::Budget(_) => "budget",
        Error::Declined { .. } => "refusal",
        Error::Output { .. } => "output",
        Error::TooManyTurns(_) => "turns",
        // A deadline that passed outside a request: checking the answer.
        Error::TimedOut { .. } => "Timeout",
        _ => "general",
    };
    kind.to_string()
}

/// A `run_end` event's fields.
fn run_end(took: Duration, end: &Ending, totals: Option<&Totals>) -> Value {
    let mut f = json!({
        "duration_ms": millis(took),
        "ok": matches!(end, Ending::Finished(_)),
    });
    match end {
        Ending::Finished(o) => {
            f["turns"] = o.turns.into();
            f["input_tokens"] = o.input_tokens.into();
            f["output_tokens"] = o.output_tokens.into();
            if o.reasoning_tokens != 0 {
                f["reasoning_tokens"] = o.reasoning_tokens.into();
            }
            f["cache_read_input_tokens"] = o.cache_read_input_tokens.into();
            f["cache_creation_input_tokens"] = o.cache_creation_input_tokens.into();
            f["cost_usd"] = json!(o.cost);
            f["tool_calls"] = o.tool_calls.into();
            f["stop_reason"] = o.stop_reason.clone().into();
        }
        Ending::Failed(e) => f["error"] = e.to_string().into(),
        Ending::Interrupted(why) => f["error"] = (*why).into(),
    }
    if let Some(t) = totals {
        f["total_input_tokens"] = t.input_tokens.into();
        f["total_output_tokens"] = t.output_tokens.into();
        // A run cut short by a signal has always reported these two only.
        if !matches!(end, Ending::Interrupted(_)) {
            f["total_cache_read_input_tokens"] = t.cache_read_input_tokens.into();
            f["total_cache_creation_input_tokens"] = t.cache_creation_input_tokens.into();
            f["total_cost_usd"] = json!(t.cost);
            if t.reasoning_tokens != 0 {
                f["total_reasoning_tokens"] = t.reasoning_tokens.into();
            }
        }
    }
    f
}

/// `t` as RFC 3339 in UTC with milliseconds: `2026-11-23T16:28:01.123Z`.
/// A clock set before 1970 or past 9999 gives the nearest of those, not a
/// panic (humantime refuses both).
pub fn rfc3339(t: SystemTime) -> String {
    let last = UNIX_EPOCH + Duration::from_millis(253_402_300_799_999);
    humantime::format_rfc3339_millis(t.clamp(UNIX_EPOCH, last)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(951_782_400_007);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.007Z");
        // The HTTP-date parser is the inverse for whole seconds.
        let t = crate::provider::http_date("Mon, 23 Nov 2026 16:28:01 GMT").unwrap();
        assert_eq!(rfc3339(t), "2026-11-23T16:28:01.000Z");
        let t = crate::provider::http_date("Fri, 31 Dec 2100 23:59:59 GMT").unwrap();
        assert_eq!(rfc3339(t), "2100-12-31T23:59:59.000Z");
        // A clock out of range.
        let before = UNIX_EPOCH - Duration::from_secs(1);
        assert_eq!(rfc3339(before), "1970-01-01T00:00:00.000Z");
        let after = UNIX_EPOCH + Duration::from_secs(300_000_000_000);
        assert_eq!(rfc3339(after), "9999-12-31T23:59:59.999Z");
    }

    /// A signal's `run_end` for the top-level run: `ok: false`, the reason
    /// as its `error`, and the tree's input and output tokens.
    #[test]
    fn an_interrupted_run_end_has_its_reason_and_two_totals() {
        let event = TraceEvent::RunEnd {
            took: Duration::from_millis(1500),
            end: Ending::Interrupted("terminated"),
            totals: Some(Totals {
                input_tokens: 7,
                output_tokens: 3,
                reasoning_tokens: 1,
                cache_read_input_tokens: 2,
                cache_creation_input_tokens: 1,
                cost: crate::cost::Cost::default(),
            }),
        };
        let line = event.line("0123456789abcdef", &Place::root("lead"), 2, false);
        let (_, rest) = line.split_once(",\"run_id\"").unwrap();
        assert_eq!(
            rest,
            ":\"0123456789abcdef\",\"event\":\"run_end\",\"agent\":\"lead\",\"path\":\"lead\",\"depth\":0,\"turn\":2,\
             \"duration_ms\":1500,\"error\":\"terminated\",\"ok\":false,\"total_input_tokens\":7,\"total_output_tokens\":3}\n"
        );
    }
}
