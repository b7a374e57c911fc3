//! The fault matrix (design §4.7, §4.8, §6.1): every way a provider can
//! misbehave, for each of Anthropic, OpenAI and Ollama, checked twice
//! through the real binary.
//!
//! - **Top level**: `axe run a` on the faulty server. The exit code is the
//!   README's (3 for API errors, 1 for 400/404), stdout stays empty, and
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
const TIMEOUT: &str = "15";

/// A run still going after this has hung: every run has a `--timeout` of
/// at most 15 s, and retries are fast.
const FAULT_HUNG: Duration = Duration::from_secs(60);

/// A run whose deadline is 1 s must end well before this (it would take 5 s
/// or a minute if it waited for the slow or hanging server).
const ONE_SECOND_BOUND: Duration = Duration::from_secs(4);

const FAILED: &str = "Error: sub-agent \"s\" failed - ";
const RETRY_HINT: &str = ". You may retry or proceed without this result.";

/// The id of the parent's one `call_agent` call.
const LEAD_CALL_ID: &str = "call_lead_1";

/// Requests one provider call makes when every attempt fails with a
/// retryable error: the first and the default 2 retries.
const ALL_ATTEMPTS: usize = 3;

// ---------------------------------------------------------------------------
// Providers.
// ---------------------------------------------------------------------------

/// The provider's own error body for `status` (as each API documents its
/// errors) and the message axe is to show from it.
fn api_error(p: P, status: u16) -> (String, &'static str) {
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
    }
}

/// How axe names a failed status, as README's exit-code table groups them.
fn classification(status: u16) -> &'static str {
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
struct Res {
    /// `tool_call_id` / `tool_use_id`; `None` on Ollama, which has no ids.
    id: Option<String>,
    content: String,
    /// Anthropic's `is_error`; `None` on the wires without it.
    is_error: Option<bool>,
}

/// The tool results a request carries, in order, in `p`'s wire format.
fn results(p: P, req: &Recorded) -> Vec<Res> {
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
    }
}

/// The tool calls of the assistant turn a request sends back: their ids
/// (empty strings on Ollama), in order.
fn history_call_ids(p: P, req: &Recorded) -> Vec<String> {
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
    };
    calls
        .iter()
        .map(|c| c["id"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The contents of a request's tool results joined by ` | `: what the
/// agents here answer once they have them.
fn echo(p: P, req: &Recorded) -> String {
    results(p, req)
        .iter()
        .map(|r| r.content.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The healthy parent `lead` on `p`: its first answer delegates to `s`,
/// its second echoes the tool result.
fn lead_server(p: P) -> FakeServer {
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
fn lead_result(parent: P, lead: &FakeServer, out: &Output) -> Res {
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
fn assert_same_text(got: &str, want: &str, what: &str) {
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
fn assert_no_panic(err: &str) {
    for word in ["panicked", "backtrace", "RUST_BACKTRACE", "internal error"] {
        assert!(!err.contains(word), "{word:?} in stderr: {err}");
    }
}

// ---------------------------------------------------------------------------
// The matrix.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum Level {
    Top,
    Sub,
}

/// Runs `check` for every provider at both levels, all at once, and fails
/// naming every cell (case × provider × level) that failed.
#[track_caller]
fn matrix(case: &str, check: impl Fn(P, Level) + Sync) {
    let cells: Vec<(P, Level)> = PROVIDERS
        .iter()
        .flat_map(|&p| [(p, Level::Top), (p, Level::Sub)])
        .collect();
    each_cell(case, &cells, |(p, level)| check(p, level));
}

/// What a faulty server does to one provider call, and what must come of it.
struct Fault {
    /// The faulty server's answers, in order; the last repeats.
    replies: Vec<Reply>,
    /// The requests axe must send (retries included).
    requests: usize,
    expect: Expect,
}

enum Expect {
    /// The call succeeds (after retries) with this answer.
    Answer(&'static str),
    /// It fails with `code`; the text after `<provider>: ` is exactly `text`.
    Exact { code: i32, text: String },
    /// As `Exact`, when only the start of the text is axe's own wording
    /// (the rest is serde's or the HTTP library's).
    Prefix { code: i32, text: String },
    /// It runs into a 1 s deadline: `timeout after 1s`.
    Timeout,
}

/// A status with the provider's own error body, answered every time.
fn status_fault(p: P, status: u16) -> Fault {
    let (body, message) = api_error(p, status);
    let retried = matches!(status, 429 | 500 | 502 | 503 | 504 | 529);
    Fault {
        replies: vec![Reply::Json(status, body)],
        requests: if retried { ALL_ATTEMPTS } else { 1 },
        expect: Expect::Exact {
            code: if matches!(status, 400 | 404) { 1 } else { 3 },
            text: format!("{} (HTTP {status}): {message}", classification(status)),
        },
    }
}

/// A 2xx answer axe cannot use (design D13): not retried, exit 3.
fn invalid(reply: Reply, detail: &str, exact: bool) -> Fault {
    let text = format!("invalid response: {detail}");
    Fault {
        replies: vec![reply],
        requests: 1,
        expect: if exact {
            Expect::Exact { code: 3, text }
        } else {
            Expect::Prefix { code: 3, text }
        },
    }
}

/// Runs `fault(p)` for every provider at both levels.
fn fault_matrix(case: &str, fault: impl Fn(P) -> Fault + Sync) {
    matrix(case, |p, level| match level {
        Level::Top => at_top_level(p, &fault(p)),
        Level::Sub => in_a_sub_agent(p, &fault(p)),
    });
}

/// `axe run a` with `a` on `p`'s faulty server.
fn at_top_level(p: P, fault: &Fault) {
    let home = Home::fast_retries();
    home.named_agent("a", p.model(), "");
    let timeout = match fault.expect {
        Expect::Timeout => "1",
        _ => TIMEOUT,
    };
    let server = FakeServer::start(fault.replies.clone());
    let Bounded {
        output: out, took, ..
    } = home.run_bounded(
        &[(p, &server)],
        &["run", "a", "-p", "hi", "--timeout", timeout],
        FAULT_HUNG,
    );
    let err = stderr(&out);
    assert_eq!(
        server.requests().len(),
        fault.requests,
        "requests sent; stderr: {err}"
    );
    let (exit, text) = match &fault.expect {
        Expect::Answer(answer) => {
            assert_eq!(code(&out), 0, "stderr: {err}");
            assert_eq!(err, "");
            assert_eq!(stdout(&out), format!("{answer}\n"));
            // Again with --json: the retries are reported.
            let server = FakeServer::start(fault.replies.clone());
            let out = home
                .run_bounded(
                    &[(p, &server)],
                    &["run", "a", "-p", "hi", "--timeout", TIMEOUT, "--json"],
                    FAULT_HUNG,
                )
                .output;
            assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
            let v: Value = serde_json::from_str(&stdout(&out)).expect("--json prints JSON");
            assert_eq!(v["content"], *answer, "{v}");
            assert_eq!(v["retry_attempts"], fault.requests - 1, "{v}");
            return;
        }
        Expect::Exact { code, text } | Expect::Prefix { code, text } => (*code, text.clone()),
        Expect::Timeout => (3, "timeout after 1s".to_string()),
    };
    assert_eq!(code(&out), exit, "stderr: {err}");
    assert_eq!(stdout(&out), "", "stdout stays empty");
    assert_no_panic(&err);
    assert!(
        err.ends_with('\n') && err.lines().count() == 1,
        "one line on stderr: {err:?}"
    );
    let head = format!("axe: {}: ", p.name());
    assert!(err.starts_with(&head), "{err:?}");
    match fault.expect {
        Expect::Prefix { .. } => {
            assert!(err.starts_with(&format!("{head}{text}")), "{err:?}");
        }
        _ => assert_eq!(err, format!("{head}{text}\n")),
    }
    if let Expect::Timeout = fault.expect {
        assert!(took < ONE_SECOND_BOUND, "took {took:?}");
    }
}

/// `lead` on a healthy server delegates to `s` on `p`'s faulty server.
fn in_a_sub_agent(p: P, fault: &Fault) {
    let parent = p.other();
    let home = Home::fast_retries();
    let own_timeout = match fault.expect {
        Expect::Timeout => "[sub_agents_config]\ntimeout = 1\n",
        _ => "",
    };
    home.named_agent(
        "lead",
        parent.model(),
        &format!("sub_agents = [\"s\"]\n{own_timeout}"),
    );
    home.named_agent("s", p.model(), "");
    let lead = lead_server(parent);
    let faulty = FakeServer::start(fault.replies.clone());
    let Bounded {
        output: out, took, ..
    } = home.run_bounded(
        &[(parent, &lead), (p, &faulty)],
        &["run", "lead", "-p", "hi", "--timeout", TIMEOUT],
        FAULT_HUNG,
    );
    assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert_eq!(
        faulty.requests().len(),
        fault.requests,
        "the sub-agent's requests"
    );
    let result = lead_result(parent, &lead, &out);
    let content = &result.content;
    if let Expect::Answer(answer) = fault.expect {
        assert_eq!(content, answer);
        assert_ne!(result.is_error, Some(true), "{result:?}");
        return;
    }
    assert_ne!(result.is_error, Some(false), "an error result: {result:?}");
    assert!(
        content.starts_with(FAILED) && content.ends_with(RETRY_HINT),
        "{content:?}"
    );
    // The same classification as at top level, after `<provider>: `; a
    // full stop that ends it is not doubled before the hint.
    let name = p.name();
    match &fault.expect {
        Expect::Exact { text, .. } => assert_eq!(
            content,
            &format!("{FAILED}{name}: {}{RETRY_HINT}", text.trim_end_matches('.'))
        ),
        Expect::Prefix { text, .. } => {
            assert!(
                content.starts_with(&format!("{FAILED}{name}: {text}")),
                "{content:?}"
            );
        }
        Expect::Timeout => {
            assert_eq!(
                content,
                "Error: sub-agent \"s\" failed - timeout after 1s. You may retry or proceed without this result."
            );
            assert!(took < ONE_SECOND_BOUND, "took {took:?}");
        }
        Expect::Answer(_) => unreachable!(),
    }
}

// ---------------------------------------------------------------------------
// Tool-call faults: the model of the agent under test sends them.
// ---------------------------------------------------------------------------

/// A tool call as a wire carries it; `None` leaves the key out.
struct RawCall {
    id: Option<String>,
    name: &'static str,
    args: Option<Value>,
}

/// `p`'s answer carrying `calls` exactly as given (arguments as they are:
/// a wire-format string for OpenAI is the caller's to make).
fn raw_tool_calls(p: P, calls: &[RawCall]) -> String {
    let mut wire: Vec<Value> = Vec::new();
    for c in calls {
        let mut v = match p {
            P::Anthropic => json!({"type": "tool_use", "name": c.name}),
            P::OpenAi => json!({"type": "function", "function": {"name": c.name}}),
            P::Ollama => json!({"function": {"name": c.name}}),
        };
        if let (Some(id), true) = (&c.id, p.has_ids()) {
            v["id"] = json!(id);
        }
        if let Some(args) = &c.args {
            match p {
                P::Anthropic => v["input"] = args.clone(),
                P::OpenAi | P::Ollama => v["function"]["arguments"] = args.clone(),
            }
        }
        wire.push(v);
    }
    match p {
        P::Anthropic => json!({
            "id": "msg_01Aq9w938a90dw8q", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": wire, "stop_reason": "tool_use",
            "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 2}
        }),
        P::OpenAi => json!({
            "id": "chatcmpl-abc123", "object": "chat.completion", "created": 1_700_000_000,
            "model": "gpt-4o-2024-08-06",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": null, "message": {
                "role": "assistant", "content": null, "tool_calls": wire, "refusal": null
            }}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        }),
        P::Ollama => json!({
            "model": "llama3.1", "created_at": "2026-11-23T10:00:00.000000Z",
            "message": {"role": "assistant", "content": "", "tool_calls": wire},
            "done_reason": "stop", "done": true, "prompt_eval_count": 5, "eval_count": 2
        }),
    }
    .to_string()
}

/// One expected tool result: the call's id, the content, whether an error.
type Want = (String, String, bool);

/// A response full of tool calls and the results axe must send back.
struct ToolFault {
    /// The first answer of the agent under test.
    first: String,
    /// Its second request's tool results, in call order.
    want: Vec<Want>,
}

/// The server of the agent under test (`under`) and its `helper`, both on
/// `p`: `under` first answers `first`, then echoes its tool results;
/// `helper` answers `helper did <task>`.
fn tool_server(p: P, under: &'static str, first: String) -> FakeServer {
    FakeServer::route(move |req| match req.who().as_str() {
        who if who == under && req.has_tool_results() => Reply::Json(200, p.text(&echo(p, req))),
        who if who == under => Reply::Json(200, first.clone()),
        "helper" => {
            let message = req.first_user_text();
            let task = message.strip_prefix("Task: ").unwrap_or(&message);
            Reply::Json(200, p.text(&format!("helper did {task}")))
        }
        other => Reply::Json(500, format!("{{\"error\":\"unexpected agent {other}\"}}")),
    })
}

/// Checks the second request of the agent under test: one result per call,
/// in call order, with the ids the history carries.
#[track_caller]
fn assert_results(p: P, second: &Recorded, want: &[Want]) {
    let got = results(p, second);
    let want: Vec<Res> = want
        .iter()
        .map(|(id, content, error)| Res {
            id: p.has_ids().then(|| id.clone()),
            content: content.clone(),
            is_error: (p == P::Anthropic).then_some(*error),
        })
        .collect();
    assert_eq!(got.len(), want.len(), "number of tool results");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "tool result {i} of {}: got {:?}, want {:?}",
            got.len(),
            got[i],
            want[i]
        );
    }
    // Each result answers the call of the same id in the history sent back.
    let history = history_call_ids(p, second);
    assert_eq!(history.len(), want.len(), "calls in the history");
    if p.has_ids() {
        let ids: Vec<String> = want.iter().filter_map(|r| r.id.clone()).collect();
        assert_eq!(history, ids, "history ids");
    }
}

fn joined(want: &[Want]) -> String {
    want.iter()
        .map(|(_, c, _)| c.as_str())
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Runs `fault(p)` for every provider at both levels.
fn tool_matrix(case: &str, fault: impl Fn(P) -> ToolFault + Sync) {
    matrix(case, |p, level| {
        let fault = fault(p);
        let home = Home::fast_retries();
        home.named_agent("helper", p.model(), "");
        let under = match level {
            Level::Top => "a",
            Level::Sub => "s",
        };
        home.named_agent(under, p.model(), "sub_agents = [\"helper\"]\n");
        let server = tool_server(p, under, fault.first);
        let (out, lead) = match level {
            Level::Top => {
                let out = home
                    .run_bounded(
                        &[(p, &server)],
                        &["run", "a", "-p", "hi", "--timeout", TIMEOUT],
                        FAULT_HUNG,
                    )
                    .output;
                (out, None)
            }
            Level::Sub => {
                let parent = p.other();
                // The echo of 1,000 results is longer than the default
                // max_result_chars; this case is about the calls, not the cut.
                home.named_agent(
                    "lead",
                    parent.model(),
                    "sub_agents = [\"s\"]\n[sub_agents_config]\nmax_result_chars = 1000000\n",
                );
                let lead = lead_server(parent);
                let out = home
                    .run_bounded(
                        &[(parent, &lead), (p, &server)],
                        &["run", "lead", "-p", "hi", "--timeout", TIMEOUT],
                        FAULT_HUNG,
                    )
                    .output;
                (out, Some((parent, lead)))
            }
        };
        assert_eq!(code(&out), 0, "stderr: {}", stderr(&out));
        assert_eq!(stderr(&out), "");
        let sent = server.sent_by(under);
        assert_eq!(sent.len(), 2, "requests of {under}");
        assert_results(p, &sent[1], &fault.want);
        let answer = joined(&fault.want);
        if let Some((parent, lead)) = lead {
            // The sub-agent went on and answered; its answer is a plain result.
            let result = lead_result(parent, &lead, &out);
            assert_ne!(result.is_error, Some(true), "{result:?}");
            assert_same_text(&result.content, &answer, "the sub-agent's answer");
        } else {
            assert_same_text(&stdout(&out), &format!("{answer}\n"), "stdout: the echo");
        }
    });
}

const AGENT_REQUIRED: &str = "call_agent error: \"agent\" argument is required";

// ---------------------------------------------------------------------------
// Rate limits.
// ---------------------------------------------------------------------------

#[test]
fn fault_429_then_success_is_retried_once_and_answers_at_top_level_and_in_a_sub_agent() {
    fault_matrix("429 then success", |p| Fault {
        replies: vec![
            Reply::Json(429, api_error(p, 429).0),
            Reply::Json(200, p.text("recovered")),
        ],
        requests: 2,
        expect: Expect::Answer("recovered"),
    });
}

#[test]
fn fault_429_three_times_exits_3_at_top_level_and_is_an_error_result_in_a_sub_agent() {
    fault_matrix("429 x3", |p| status_fault(p, 429));
}

// ---------------------------------------------------------------------------
// Server errors and overload: retried, then exit 3.
// ---------------------------------------------------------------------------

#[test]
fn fault_500_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("500", |p| status_fault(p, 500));
}

#[test]
fn fault_502_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("502", |p| status_fault(p, 502));
}

#[test]
fn fault_503_is_a_server_error_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("503", |p| status_fault(p, 503));
}

#[test]
fn fault_529_is_overloaded_retried_twice_then_exit_3_or_an_error_result() {
    fault_matrix("529", |p| status_fault(p, 529));
}

// ---------------------------------------------------------------------------
// Client errors: never retried.
// ---------------------------------------------------------------------------

#[test]
fn fault_401_is_an_authentication_failure_sent_once_exit_3_or_an_error_result() {
    fault_matrix("401", |p| status_fault(p, 401));
}

#[test]
fn fault_403_is_an_authentication_failure_sent_once_exit_3_or_an_error_result() {
    fault_matrix("403", |p| status_fault(p, 403));
}

#[test]
fn fault_400_is_a_bad_request_with_the_providers_message_exit_1_or_an_error_result() {
    fault_matrix("400", |p| status_fault(p, 400));
}

#[test]
fn fault_404_model_not_found_exits_1_or_is_an_error_result() {
    fault_matrix("404", |p| status_fault(p, 404));
}

// ---------------------------------------------------------------------------
// Deadlines.
// ---------------------------------------------------------------------------

#[test]
fn fault_answer_slower_than_the_deadline_times_out_after_1s_exit_3_or_the_exact_timeout_result() {
    fault_matrix("slow answer", |p| Fault {
        replies: vec![Reply::Delay(
            Duration::from_secs(5),
            Box::new(Reply::Json(200, p.text("too late"))),
        )],
        requests: 1,
        expect: Expect::Timeout,
    });
}

#[test]
fn fault_server_that_never_answers_times_out_after_1s_exit_3_or_the_exact_timeout_result() {
    fault_matrix("hang", |_| Fault {
        replies: vec![Reply::Hang],
        requests: 1,
        expect: Expect::Timeout,
    });
}

// ---------------------------------------------------------------------------
// Broken or unusable bodies.
// ---------------------------------------------------------------------------

#[test]
fn fault_connection_closed_mid_body_is_a_network_error_not_retried_exit_3_or_an_error_result() {
    // README, Retries: only a connection closed *before any response* is
    // retried; this one closed after the head and half the body.
    fault_matrix("closed mid-body", |p| {
        let full = p.text("a complete answer that never arrives");
        Fault {
            replies: vec![Reply::CloseMidBody {
                status: 200,
                partial_body: full[..full.len() / 2].to_string(),
            }],
            requests: 1,
            expect: Expect::Prefix {
                code: 3,
                text: "network error: ".into(),
            },
        }
    });
}

/// The status line of a 5xx arrived; then its error body could not be read
/// (cut off here, too large below). README (Retries) and D12 retry 500,
/// 502, 503, 504 whatever their bodies say, and D13's `invalid response` is
/// for 2xx bodies. axe reads the body before it looks at the status
/// (`read_body(..).map_err(|e| Attempt::failed(..))?` in
/// `Provider::attempt`), so the status is lost: one request, and
/// `axe: <provider>: network error: io: Peer disconnected (<url>)`.
#[test]
fn fault_503_cut_off_mid_body_is_still_a_server_error_and_retried() {
    fault_matrix("503 closed mid-body", |p| {
        let (body, _) = api_error(p, 503);
        Fault {
            replies: vec![Reply::CloseMidBody {
                status: 503,
                partial_body: body[..body.len() / 2].to_string(),
            }],
            requests: ALL_ATTEMPTS,
            expect: Expect::Prefix {
                code: 3,
                text: "server error (HTTP 503)".into(),
            },
        }
    });
}

/// As above, for an error body over the 32 MiB limit: today
/// `invalid response: body larger than 32 MiB` (a 2xx's wording) and no
/// retry; the 500 should be retried, and the retry here succeeds.
#[test]
fn fault_500_with_a_body_over_32_mib_is_still_a_server_error_and_retried() {
    fault_matrix("500 with a body over 32 MiB", |p| {
        let (body, _) = api_error(p, 500);
        let padded = format!("{}{body}", " ".repeat(33 << 20));
        Fault {
            replies: vec![
                Reply::Json(500, padded),
                Reply::Json(200, p.text("recovered")),
            ],
            requests: 2,
            expect: Expect::Answer("recovered"),
        }
    });
}

#[test]
fn fault_malformed_json_200_is_an_invalid_response_exit_3_or_an_error_result() {
    // A Python repr where JSON was due.
    fault_matrix("malformed JSON 200", |_| {
        invalid(
            Reply::Json(200, "{'type': 'message', 'content': []}".into()),
            "key must be a string at line 1 column 2",
            true,
        )
    });
}

#[test]
fn fault_truncated_json_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("truncated JSON 200", |p| {
        let full = p.text("a complete answer");
        invalid(
            Reply::Json(200, full[..full.len() / 2].to_string()),
            "truncated JSON (EOF while parsing",
            false,
        )
    });
}

#[test]
fn fault_html_page_with_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("HTML 200", |_| {
        invalid(
            html(200, LOGIN_PAGE),
            "got an HTML page instead of JSON",
            true,
        )
    });
}

#[test]
fn fault_html_page_with_502_is_a_server_error_naming_the_page_title_exit_3_or_an_error_result() {
    fault_matrix("HTML 502", |_| Fault {
        replies: vec![html(502, NGINX_502)],
        requests: ALL_ATTEMPTS,
        expect: Expect::Exact {
            code: 3,
            text: "server error (HTTP 502): HTML error page: 502 Bad Gateway".into(),
        },
    });
}

#[test]
fn fault_empty_200_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("empty 200", |_| {
        invalid(Reply::Json(200, String::new()), "empty body", true)
    });
}

#[test]
fn fault_200_missing_the_required_fields_is_an_invalid_response_exit_3_or_an_error_result() {
    fault_matrix("200 missing fields", |p| {
        let (body, field) = match p {
            P::Anthropic => (
                include_str!("../../fixtures/responses/anthropic_missing_content.json"),
                "content",
            ),
            P::OpenAi => (
                include_str!("../../fixtures/responses/openai_missing_choices.json"),
                "choices",
            ),
            P::Ollama => (
                include_str!("../../fixtures/responses/ollama_missing_message.json"),
                "message",
            ),
        };
        invalid(
            Reply::Json(200, body.into()),
            &format!("missing field `{field}`"),
            false,
        )
    });
}

#[test]
fn fault_body_over_32_mib_is_refused_without_reading_it_whole_exit_3_or_an_error_result() {
    // 64 MiB whose end is a valid answer: read whole, it would be accepted.
    fault_matrix("body over 32 MiB", |p| {
        invalid(
            Reply::Huge {
                bytes: 64 << 20,
                tail: p.text("read all 64 MiB"),
            },
            "body larger than 32 MiB",
            true,
        )
    });
}

// ---------------------------------------------------------------------------
// Tool calls the model gets wrong.
// ---------------------------------------------------------------------------

#[test]
fn fault_tool_calls_with_non_object_or_non_json_arguments_get_the_agent_required_error() {
    tool_matrix("non-object / non-JSON arguments", |p| {
        // As each wire could carry them: OpenAI's arguments are a string
        // holding JSON, the others' an object.
        let mut shapes: Vec<Option<Value>> = match p {
            P::OpenAi => vec![
                json!("not json at all"),
                json!("{\"agent\": \"helper\", \"task\""),
                json!("[\"helper\", \"go\"]"),
                json!("\"{\\\"agent\\\": \\\"helper\\\", \\\"task\\\": \\\"go\\\"}\""),
                json!("42"),
                json!(""),
                json!(["helper", "go"]),
                json!(42),
                Value::Null,
            ],
            P::Anthropic => vec![
                json!("not json at all"),
                json!(["helper", "go"]),
                json!(42),
                json!(true),
                Value::Null,
            ],
            P::Ollama => vec![
                json!("not json at all"),
                json!("{\"agent\": \"helper\", \"task\""),
                json!("[\"helper\", \"go\"]"),
                json!(["helper", "go"]),
                json!(42),
                Value::Null,
            ],
        }
        .into_iter()
        .map(Some)
        .collect();
        shapes.push(None); // no arguments at all
        let calls: Vec<RawCall> = shapes
            .into_iter()
            .enumerate()
            .map(|(i, args)| RawCall {
                id: Some(format!("call_bad_{i}")),
                name: "call_agent",
                args,
            })
            .collect();
        ToolFault {
            first: raw_tool_calls(p, &calls),
            want: (0..calls.len())
                .map(|i| (format!("call_bad_{i}"), AGENT_REQUIRED.to_string(), true))
                .collect(),
        }
    });
}

#[test]
fn fault_tool_call_without_an_id_is_given_one_and_still_answered() {
    // OpenAI and Anthropic: an absent id becomes `call_<index>`, and so does
    // an empty one; the history sent back carries the same ids. Ollama has
    // no ids at all: its results go back in call order.
    tool_matrix("missing tool-call id", |p| {
        let calls = [
            RawCall {
                id: None,
                name: "call_agent",
                args: Some(p.wire_args(delegate("helper", "first"))),
            },
            RawCall {
                id: Some(String::new()),
                name: "call_agent",
                args: Some(p.wire_args(delegate("helper", "second"))),
            },
        ];
        ToolFault {
            first: raw_tool_calls(p, &calls),
            want: vec![
                ("call_0".into(), "helper did first".into(), false),
                ("call_1".into(), "helper did second".into(), false),
            ],
        }
    });
}

#[test]
fn fault_unknown_tool_name_is_answered_unknown_tool_and_its_sibling_still_runs() {
    tool_matrix("unknown tool", |p| ToolFault {
        first: p.tool_calls(&[
            ("call_x", "x", delegate("helper", "sneaky")),
            ("call_ok", "call_agent", delegate("helper", "after")),
        ]),
        want: vec![
            ("call_x".into(), "Unknown tool: \"x\"".into(), true),
            ("call_ok".into(), "helper did after".into(), false),
        ],
    });
}

#[test]
fn fault_1000_tool_calls_in_one_response_are_all_answered_in_order_with_an_error_each() {
    const N: usize = 1000;
    const REFUSED: &str =
        "call_agent error: agent \"nobody\" is not in this agent's sub_agents list";
    tool_matrix("1,000 tool calls", |p| {
        let ids: Vec<String> = (0..N).map(|i| format!("call_{i:04}")).collect();
        let calls: Vec<Call> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                (
                    id.as_str(),
                    "call_agent",
                    delegate("nobody", &format!("job {i}")),
                )
            })
            .collect();
        ToolFault {
            first: p.tool_calls(&calls),
            want: ids
                .iter()
                .map(|id| (id.clone(), REFUSED.to_string(), true))
                .collect(),
        }
    });
}
