//! Sub-agents through the real `axe` binary (design chapter 3): `call_agent` injection, the conversation
//! loop on each provider, delegation across providers, parallel fan-out
//! proven by a server-side barrier (flat and nested), sequential calls,
//! depth limits, timeouts, panics and errors that stay inside one call, and
//! the `--json` / `--verbose` reports.
//!
//! Every agent's system prompt is `You are <name>.`, so one fake server can
//! play several agents: its handler answers by who is asking and by whether
//! the request already carries tool results (a later turn).

use crate::common::*;

use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a barrier waits for its requests before giving up: long enough
/// for a loaded CI machine, short enough that a sequential implementation
/// fails instead of hanging.
const GATE_WAIT: Duration = Duration::from_secs(10);

const RETRY_HINT: &str = "You may retry or proceed without this result.";

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

#[track_caller]
fn assert_ok(out: &Output) {
    assert_eq!(code(out), 0, "stderr: {}", stderr(out));
}

/// The contents of every tool result in a request, in order, joined by
/// `sep`: OpenAI/Ollama `role: tool` messages or Anthropic `tool_result` blocks.
fn results_text(req: &Recorded, sep: &str) -> String {
    req.tool_result_texts().join(sep)
}

/// An OpenAI server playing a parent `lead` that delegates `calls` in its
/// first response and then answers `final` (echoing the tool results'
/// contents, joined by ` | `), and any other agent answering
/// `answer from <name>`.
fn openai_delegation(calls: Vec<(String, Value)>) -> FakeServer {
    openai_delegation_with(calls, Duration::ZERO)
}

/// [`openai_delegation`] with every sub-agent answer taking `delay`.
fn openai_delegation_with(calls: Vec<(String, Value)>, delay: Duration) -> FakeServer {
    FakeServer::route(move |req| {
        let name = req.who();
        if name == "lead" {
            if req.has_tool_results() {
                Reply::Json(200, openai_text(&results_text(req, " | "), 7, 3))
            } else {
                let calls: Vec<Call> = calls
                    .iter()
                    .map(|(id, args)| (id.as_str(), "call_agent", args.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 10, 5))
            }
        } else {
            std::thread::sleep(delay);
            Reply::Json(200, openai_text(&format!("answer from {name}"), 100, 50))
        }
    })
}

fn calls(list: &[(&str, Value)]) -> Vec<(String, Value)> {
    list.iter()
        .map(|(i, v)| (i.to_string(), v.clone()))
        .collect()
}

// ---------------------------------------------------------------------------
// Tool injection (design §3.2).
// ---------------------------------------------------------------------------

#[test]
fn run_with_sub_agents_injects_the_call_agent_tool_with_allowed_names() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"helper\", \"runner\"]\n",
    );
    let server = FakeServer::json(200, &openai_text("no help needed", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "no help needed\n");
    let body = server.only_request().json();
    let tools = body["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{body}");
    let f = &tools[0]["function"];
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(f["name"], "call_agent");
    assert!(
        f["description"]
            .as_str()
            .unwrap()
            .ends_with("Available agents: helper, runner")
    );
    assert_eq!(
        f["parameters"]["properties"]["agent"]["enum"],
        json!(["helper", "runner"])
    );
    assert_eq!(f["parameters"]["required"], json!(["agent", "task"]));
}

#[test]
fn run_without_sub_agents_sends_no_tools_key_and_one_request() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("done", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "done\n");
    let body = server.only_request().json();
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn run_with_sub_agents_config_but_no_sub_agents_sends_no_tools() {
    let home = Home::new();
    home.named_agent(
        "solo",
        "openai/gpt-4o",
        "[sub_agents_config]\nmax_depth = 2\nparallel = false\n",
    );
    let server = FakeServer::json(200, &openai_text("done", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_ok(&out);
    assert!(server.only_request().json().get("tools").is_none());
}

// ---------------------------------------------------------------------------
// The conversation loop on each provider (design §3.7, §4.2).
// ---------------------------------------------------------------------------

#[test]
fn run_openai_parent_delegates_to_two_sub_agents_and_prints_the_final_answer() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\", \"b\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    home.named_agent("b", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[
        ("call_a", delegate("a", "find the bug")),
        (
            "call_b",
            json!({"agent": "b", "task": "write the fix", "context": "it is in main.rs"}),
        ),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "fix it"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "answer from a | answer from b\n");

    // Each sub-agent got only its task (and context), under its own prompt.
    assert_eq!(
        server.sent_by("a")[0].first_user_text(),
        "Task: find the bug"
    );
    assert_eq!(
        server.sent_by("b")[0].first_user_text(),
        "Task: write the fix\n\nContext:\nit is in main.rs"
    );
    // The parent's second request: its history, then one tool message per result.
    let lead = server.sent_by("lead");
    assert_eq!(lead.len(), 2);
    let msgs = lead[1].messages();
    assert_eq!(msgs.len(), 5, "system, user, assistant, tool, tool");
    assert_eq!(msgs[1]["content"], "fix it");
    assert_eq!(msgs[2]["role"], "assistant");
    assert_eq!(
        msgs[2]["content"], "",
        "content is a string, not null (design D15)"
    );
    assert_eq!(msgs[2]["tool_calls"][0]["id"], "call_a");
    assert_eq!(msgs[2]["tool_calls"][1]["function"]["name"], "call_agent");
    let args: Value = serde_json::from_str(
        msgs[2]["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(args, delegate("a", "find the bug"));
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "answer from a"})
    );
    assert_eq!(
        msgs[4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "answer from b"})
    );
}

#[test]
fn run_anthropic_parent_delegates_to_two_sub_agents_and_prints_the_final_answer() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "anthropic/claude-sonnet-4-5",
        "sub_agents = [\"a\", \"b\"]\n",
    );
    home.named_agent("a", "anthropic/claude-haiku-4-5", "");
    home.named_agent("b", "anthropic/claude-haiku-4-5", "");
    let server = FakeServer::route(|req| {
        let name = req.who();
        match name.as_str() {
            "lead" if req.has_tool_results() => {
                Reply::Json(200, anthropic_text(&results_text(req, " | "), 7, 3))
            }
            "lead" => Reply::Json(
                200,
                anthropic_tool_use(
                    "I'll delegate.",
                    &[
                        ("toolu_01", "call_agent", delegate("a", "part one")),
                        ("toolu_02", "call_agent", delegate("b", "part two")),
                    ],
                    10,
                    5,
                ),
            ),
            other => Reply::Json(200, anthropic_text(&format!("answer from {other}"), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "answer from a | answer from b\n");

    let lead = server.sent_by("lead");
    assert_eq!(lead.len(), 2);
    let msgs = lead[1].messages();
    assert_eq!(msgs.len(), 3, "user, assistant, user(tool_result)");
    assert_eq!(
        msgs[1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "I'll delegate."},
            {"type": "tool_use", "id": "toolu_01", "name": "call_agent", "input": {"agent": "a", "task": "part one"}},
            {"type": "tool_use", "id": "toolu_02", "name": "call_agent", "input": {"agent": "b", "task": "part two"}},
        ]})
    );
    assert_eq!(
        msgs[2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "answer from a", "is_error": false},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "answer from b", "is_error": false},
        ]})
    );
    assert!(
        lead[1].json()["tools"].is_array(),
        "tools sent on every turn"
    );
}

#[test]
fn run_ollama_parent_delegates_to_two_sub_agents_and_prints_the_final_answer() {
    let home = Home::new();
    home.named_agent("lead", "ollama/llama3.1", "sub_agents = [\"a\", \"b\"]\n");
    home.named_agent("a", "ollama/llama3.1", "");
    home.named_agent("b", "ollama/qwen3", "");
    let server = FakeServer::route(|req| {
        let name = req.who();
        match name.as_str() {
            "lead" if req.has_tool_results() => {
                Reply::Json(200, ollama_text(&results_text(req, " | "), 7, 3))
            }
            "lead" => Reply::Json(
                200,
                ollama_tool_calls(
                    &[
                        ("", "call_agent", delegate("a", "part one")),
                        ("", "call_agent", delegate("b", "part two")),
                    ],
                    10,
                    5,
                ),
            ),
            other => Reply::Json(200, ollama_text(&format!("answer from {other}"), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::Ollama, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "answer from a | answer from b\n");
    let lead = server.sent_by("lead");
    let msgs = lead[1].messages();
    assert_eq!(msgs.len(), 5, "system, user, assistant, tool, tool");
    assert_eq!(
        msgs[2]["tool_calls"][1],
        json!({"function": {"name": "call_agent", "arguments": {"agent": "b", "task": "part two"}}})
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "content": "answer from a", "tool_name": "call_agent"})
    );
    assert_eq!(
        msgs[4],
        json!({"role": "tool", "content": "answer from b", "tool_name": "call_agent"})
    );
}

#[test]
fn run_sub_agents_use_their_own_provider_not_the_parents() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "anthropic/claude-sonnet-4-5",
        "sub_agents = [\"gpt\", \"local\"]\n",
    );
    home.named_agent("gpt", "openai/gpt-4o-mini", "");
    home.named_agent("local", "ollama/llama3.1", "");
    let anthropic = FakeServer::route(|req| {
        if req.has_tool_results() {
            Reply::Json(200, anthropic_text(&results_text(req, " + "), 1, 1))
        } else {
            Reply::Json(
                200,
                anthropic_tool_use(
                    "",
                    &[
                        ("toolu_a", "call_agent", delegate("gpt", "one")),
                        ("toolu_b", "call_agent", delegate("local", "two")),
                    ],
                    1,
                    1,
                ),
            )
        }
    });
    let openai = FakeServer::json(200, &openai_text("from openai", 1, 1));
    let ollama = FakeServer::json(200, &ollama_text("from ollama", 1, 1));
    let out = home.run_on(
        &[
            (P::Anthropic, &anthropic),
            (P::OpenAi, &openai),
            (P::Ollama, &ollama),
        ],
        &["run", "lead"],
    );
    assert_ok(&out);
    assert_eq!(stdout(&out), "from openai + from ollama\n");
    let o = openai.only_request();
    assert_eq!(o.path, "/v1/chat/completions");
    assert_eq!(o.json()["model"], "gpt-4o-mini");
    assert_eq!(
        o.header("authorization"),
        Some(format!("Bearer {OPENAI_KEY}").as_str())
    );
    assert_eq!(o.first_user_text(), "Task: one");
    let l = ollama.only_request();
    assert_eq!(l.path, "/api/chat");
    assert_eq!(l.first_user_text(), "Task: two");
    assert_eq!(anthropic.requests().len(), 2);
}

#[test]
fn run_model_that_never_calls_tools_is_a_single_turn() {
    let home = Home::new();
    home.named_agent("lead", "ollama/llama3.1", "sub_agents = [\"a\"]\n");
    let server = FakeServer::json(200, &ollama_text("I did it myself", 4, 2));
    let out = home.run_on(&[(P::Ollama, &server)], &["run", "lead", "--json"]);
    assert_ok(&out);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "I did it myself");
    assert_eq!(v["tool_calls"], 0);
    assert!(server.only_request().json()["tools"].is_array());
}

// ---------------------------------------------------------------------------
// Turns, errors, unknown tools (design §3.7, §3.8, §3.12).
// ---------------------------------------------------------------------------

#[test]
fn run_loop_stops_after_50_turns_with_exit_1() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("call_1", "call_agent", delegate("a", "x"))], 1, 1),
        ),
        _ => Reply::Json(200, openai_text("sure", 1, 1)),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 1, "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "axe: agent exceeded maximum conversation turns (50)\n"
    );
    assert_eq!(server.sent_by("lead").len(), 50);
    // The 50th response's call would never be answered: it is not run.
    assert_eq!(server.sent_by("a").len(), 49);
}

#[test]
fn run_sub_agent_error_comes_back_as_a_tool_result_and_the_parent_finishes() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"nonexistent\"]\n");
    let server = openai_delegation(calls(&[("call_1", delegate("nonexistent", "help"))]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    let expected = "call_agent error: failed to load agent \"nonexistent\": agent config not found: nonexistent";
    assert_eq!(stdout(&out), format!("{expected}\n"));
    let lead = server.sent_by("lead");
    assert_eq!(
        lead[1].tool_messages(),
        vec![json!({"role": "tool", "tool_call_id": "call_1", "content": expected})]
    );
}

#[test]
fn run_unknown_tool_is_answered_with_an_error_result() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "anthropic/claude-sonnet-4-5",
        "sub_agents = [\"a\"]\n",
    );
    let server = FakeServer::route(|req| {
        if req.has_tool_results() {
            Reply::Json(200, anthropic_text("ok", 1, 1))
        } else {
            Reply::Json(
                200,
                anthropic_tool_use(
                    "",
                    &[("toolu_x", "read_file", json!({"path": "/etc/passwd"}))],
                    1,
                    1,
                ),
            )
        }
    });
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "ok\n");
    let second = &server.requests()[1];
    assert_eq!(
        second.anthropic_tool_results(),
        vec![
            json!({"type": "tool_result", "tool_use_id": "toolu_x", "content": "Unknown tool: \"read_file\"", "is_error": true})
        ]
    );
}

#[test]
fn run_tool_call_with_unparsable_arguments_gets_the_agent_required_error() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    let bad = json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_bad", "type": "function",
                "function": {"name": "call_agent", "arguments": "{\"agent\": \"a\", \"task\""}}]
        }}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    })
    .to_string();
    let server = FakeServer::start(vec![
        Reply::Json(200, bad),
        Reply::Json(200, openai_text("gave up", 1, 1)),
    ]);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        server.requests()[1].tool_messages(),
        vec![
            json!({"role": "tool", "tool_call_id": "call_bad", "content": "call_agent error: \"agent\" argument is required"})
        ]
    );
}

#[test]
fn run_parent_api_failure_mid_conversation_exits_with_its_code() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| {
        match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("a", "x"))], 1, 1),
        ),
        ("lead", true) => Reply::Json(
            429,
            r#"{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}"#.into(),
        ),
        _ => Reply::Json(200, openai_text("fine", 1, 1)),
    }
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "axe: openai: rate limited (HTTP 429): Rate limit reached for gpt-4o\n"
    );
}

#[test]
fn run_one_failing_sub_agent_does_not_disturb_its_siblings() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"good\", \"bad\", \"nokey\"]\n",
    );
    home.named_agent("good", "openai/gpt-4o", "");
    home.named_agent("bad", "openai/gpt-4o", "");
    home.named_agent("nokey", "anthropic/claude-haiku-4-5", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("c1", "call_agent", delegate("bad", "x")),
                    ("c2", "call_agent", delegate("good", "y")),
                    ("c3", "call_agent", delegate("nokey", "z")),
                ],
                1,
                1,
            ),
        ),
        ("lead", true) => Reply::Json(200, openai_text("summary", 1, 1)),
        ("bad", _) => Reply::Json(
            500,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#.into(),
        ),
        _ => Reply::Json(200, openai_text("good result", 1, 1)),
    });
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.env_remove("ANTHROPIC_API_KEY");
    let out = cmd.args(["run", "lead"]).output().expect("run axe");
    assert_ok(&out);
    assert_eq!(stdout(&out), "summary\n");
    let results = server.sent_by("lead")[1].tool_messages();
    let contents: Vec<&str> = results
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            format!(
                "Error: sub-agent \"bad\" failed - openai: server error (HTTP 500): The server had an error. {RETRY_HINT}"
            )
            .as_str(),
            "good result",
            format!(
                "Error: sub-agent \"nokey\" failed - API key for provider \"anthropic\" is not configured (set ANTHROPIC_API_KEY or add it to config.toml). {RETRY_HINT}"
            )
            .as_str(),
        ]
    );
}

#[test]
fn run_panicking_sub_agent_becomes_its_error_result_and_siblings_finish() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n",
    );
    for n in ["a", "b", "c"] {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    let server = openai_delegation(calls(&[
        ("c1", delegate("a", "x")),
        ("c2", delegate("b", "y")),
        ("c3", delegate("c", "z")),
    ]));
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.env("AXE_DEBUG_PANIC_AGENT", "b");
    let out = cmd.args(["run", "lead"]).output().expect("run axe");
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!(
            "answer from a | Error: sub-agent \"b\" failed - internal error in axe: injected by AXE_DEBUG_PANIC_AGENT. {RETRY_HINT} | answer from c\n"
        )
    );
    assert_eq!(stderr(&out), "", "no panic message, no backtrace");
    assert!(server.sent_by("b").is_empty());
}

// ---------------------------------------------------------------------------
// Parallel and sequential execution (design §3.10, D4).
// ---------------------------------------------------------------------------

/// Every sub-agent request waits at `gate` before it is answered; a request
/// that waited in vain is answered 500, so a run where the calls were not in
/// flight together cannot pass.
fn gated_answer(gate: &Gate, name: &str, reply: impl FnOnce() -> String) -> Reply {
    if gate.arrive(GATE_WAIT) {
        Reply::Json(200, reply())
    } else {
        Reply::Json(
            500,
            format!(r#"{{"error":{{"message":"{name} was alone at the barrier"}}}}"#),
        )
    }
}

#[test]
fn run_parallel_calls_are_all_in_flight_at_once() {
    const N: usize = 8;
    let home = Home::new();
    let names: Vec<String> = (0..N).map(|i| format!("w{i}")).collect();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        &format!("sub_agents = {names:?}\n"),
    );
    for n in &names {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    let gate = Arc::new(Gate::new(N));
    let g = gate.clone();
    let list: Vec<(String, Value)> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (format!("call_{i}"), delegate(n, "work")))
        .collect();
    let server = FakeServer::route(move |req| {
        let name = req.who();
        match (name.as_str(), req.has_tool_results()) {
            ("lead", false) => {
                let calls: Vec<Call> = list
                    .iter()
                    .map(|(id, a)| (id.as_str(), "call_agent", a.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 1, 1))
            }
            ("lead", true) => Reply::Json(200, openai_text(&results_text(req, ","), 1, 1)),
            _ => gated_answer(&g, &name, || openai_text(&format!("ok {name}"), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert!(!gate.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    let expected: Vec<String> = names.iter().map(|n| format!("ok {n}")).collect();
    assert_eq!(stdout(&out), format!("{}\n", expected.join(",")));
    assert_eq!(server.max_in_flight(), N);
}

#[test]
fn run_nested_fan_out_is_parallel_at_every_level() {
    // root -> 2 children at once -> 2 leaves each, all 4 leaves at once.
    let home = Home::new();
    home.named_agent(
        "root",
        "openai/gpt-4o",
        "sub_agents = [\"left\", \"right\"]\n",
    );
    for child in ["left", "right"] {
        home.named_agent(child, "openai/gpt-4o", "sub_agents = [\"leaf\"]\n");
    }
    home.named_agent("leaf", "openai/gpt-4o", "");
    let children = Arc::new(Gate::new(2));
    let leaves = Arc::new(Gate::new(4));
    let (c, l) = (children.clone(), leaves.clone());
    let server = FakeServer::route(move |req| {
        let name = req.who();
        let joined = || results_text(req, ",");
        match (name.as_str(), req.has_tool_results()) {
            ("root", false) => Reply::Json(
                200,
                openai_tool_calls(
                    &[
                        ("r1", "call_agent", delegate("left", "L")),
                        ("r2", "call_agent", delegate("right", "R")),
                    ],
                    1,
                    1,
                ),
            ),
            ("root", true) => Reply::Json(200, openai_text(&format!("[{}]", joined()), 1, 1)),
            ("leaf", _) => {
                let task = req.first_user_text();
                gated_answer(&l, "leaf", || {
                    openai_text(&task.replace("Task: ", ""), 1, 1)
                })
            }
            (child, false) => {
                let side = if child == "left" { "L" } else { "R" };
                let (t1, t2) = (format!("{side}1"), format!("{side}2"));
                gated_answer(&c, child, || {
                    openai_tool_calls(
                        &[
                            ("x1", "call_agent", delegate("leaf", &t1)),
                            ("x2", "call_agent", delegate("leaf", &t2)),
                        ],
                        1,
                        1,
                    )
                })
            }
            (child, true) => Reply::Json(200, openai_text(&format!("{child}({})", joined()), 1, 1)),
        }
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "root"]);
    assert_ok(&out);
    assert!(!children.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    assert!(!leaves.timed_out.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(stdout(&out), "[left(L1,L2),right(R1,R2)]\n");
    assert_eq!(leaves.arrived(), 4);
}

#[test]
fn run_sequential_calls_run_one_at_a_time_in_call_order() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nparallel = false\n",
    );
    for n in ["a", "b", "c"] {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    // Each sub-agent answer takes a moment, so overlapping calls would be
    // seen in flight together.
    let server = openai_delegation_with(
        calls(&[
            ("c1", delegate("c", "1")),
            ("c2", delegate("a", "2")),
            ("c3", delegate("b", "3")),
        ]),
        Duration::from_millis(150),
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "answer from c | answer from a | answer from b\n"
    );
    let order: Vec<String> = server
        .requests()
        .iter()
        .map(Recorded::who)
        .filter(|n| n != "lead")
        .collect();
    assert_eq!(order, ["c", "a", "b"]);
    assert_eq!(server.max_in_flight(), 1);
}

/// One HTTP client per provider serves the whole process, keeping its
/// connection alive (design §4.2): a parent and three sub-agents called one
/// after another send their five requests over one connection.
#[test]
fn sequential_calls_of_a_run_share_one_kept_alive_connection() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nparallel = false\n",
    );
    for n in ["a", "b", "c"] {
        home.named_agent(n, "openai/gpt-4o", "");
    }
    let server = openai_delegation(calls(&[
        ("c1", delegate("c", "1")),
        ("c2", delegate("a", "2")),
        ("c3", delegate("b", "3")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(server.requests().len(), 5);
    assert_eq!(server.connections(), 1);
}

#[test]
fn an_agent_whose_calls_run_in_parallel_says_so_on_the_openai_wire() {
    for (config, want) in [
        ("", Some(true)),
        ("[sub_agents_config]\nparallel = false\n", None),
    ] {
        let home = Home::new();
        home.named_agent(
            "lead",
            P::OpenAi.model(),
            &format!("sub_agents = [\"w\"]\n{config}"),
        );
        home.named_agent("w", P::OpenAi.model(), "");
        let server = FakeServer::json(200, &openai_text("no calls", 1, 1));
        let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "lead"], HUNG);
        assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
        let body = server.only_request().json();
        assert_eq!(
            body["parallel_tool_calls"].as_bool(),
            want,
            "{config}: {body}"
        );
    }
    // No tools, no such key; nor on the other wires.
    for p in PROVIDERS {
        let home = Home::new();
        home.named_agent("solo", p.model(), "");
        home.named_agent("lead", p.model(), "sub_agents = [\"solo\"]\n");
        let server = FakeServer::json(200, &p.text("fine"));
        for agent in ["solo", "lead"] {
            home.run_bounded(&[(p, &server)], &["run", agent], HUNG);
        }
        for req in server.requests() {
            let body = req.json();
            let sent = body.get("parallel_tool_calls").is_some();
            assert_eq!(sent, p == P::OpenAi && req.who() == "lead", "{p:?}: {body}");
        }
    }
}

// ---------------------------------------------------------------------------
// Depth (design §3.9, D6).
// ---------------------------------------------------------------------------

/// A server where every agent that was given tools delegates once to the
/// agent named in its own `sub_agents` list (the enum of its tool), then
/// answers `<name>(<result>)`; an agent without tools answers `<name>`.
fn chain_server() -> FakeServer {
    FakeServer::route(|req| {
        let name = req.who();
        let body = req.json();
        let next = body["tools"][0]["function"]["parameters"]["properties"]["agent"]["enum"][0]
            .as_str()
            .map(str::to_string);
        match next {
            None => Reply::Json(200, openai_text(&name, 1, 1)),
            Some(_) if req.has_tool_results() => {
                let inner = req.tool_messages()[0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                Reply::Json(200, openai_text(&format!("{name}({inner})"), 1, 1))
            }
            Some(next) => Reply::Json(
                200,
                openai_tool_calls(&[("d", "call_agent", delegate(&next, "go"))], 1, 1),
            ),
        }
    })
}

#[test]
fn run_default_max_depth_3_stops_injecting_tools_at_depth_3() {
    let home = Home::new();
    // a -> b -> c -> d -> e: d runs at depth 3 and gets no tools.
    for (n, next) in [("a", "b"), ("b", "c"), ("c", "d"), ("d", "e")] {
        home.named_agent(n, "openai/gpt-4o", &format!("sub_agents = [\"{next}\"]\n"));
    }
    home.named_agent("e", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b(c(d)))\n");
    for n in ["a", "b", "c"] {
        assert!(server.sent_by(n)[0].json()["tools"].is_array(), "{n}");
    }
    let d = server.sent_by("d");
    assert_eq!(d.len(), 1);
    assert!(d[0].json().get("tools").is_none(), "depth 3: no tools key");
    assert!(server.sent_by("e").is_empty());
}

#[test]
fn run_root_max_depth_bounds_the_whole_tree() {
    let home = Home::new();
    // The root says 1: its child runs single-shot even though the child's
    // own file allows 5 levels (design D6).
    home.named_agent(
        "a",
        "openai/gpt-4o",
        "sub_agents = [\"b\"]\n[sub_agents_config]\nmax_depth = 1\n",
    );
    home.named_agent(
        "b",
        "openai/gpt-4o",
        "sub_agents = [\"c\"]\n[sub_agents_config]\nmax_depth = 5\n",
    );
    home.named_agent("c", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b)\n");
    assert!(server.sent_by("b")[0].json().get("tools").is_none());
    assert!(server.sent_by("c").is_empty());
}

#[test]
fn run_max_depth_5_allows_five_levels_of_delegation() {
    let home = Home::new();
    let chain = ["a", "b", "c", "d", "e", "f", "g"];
    for w in chain.windows(2) {
        let extra = if w[0] == "a" {
            "[sub_agents_config]\nmax_depth = 5\n"
        } else {
            ""
        };
        home.named_agent(
            w[0],
            "openai/gpt-4o",
            &format!("sub_agents = [\"{}\"]\n{extra}", w[1]),
        );
    }
    home.named_agent("g", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "a(b(c(d(e(f)))))\n");
    assert!(server.sent_by("f")[0].json().get("tools").is_none());
}

// ---------------------------------------------------------------------------
// Timeouts (design §3.11, D5).
// ---------------------------------------------------------------------------

#[test]
fn run_sub_agent_timeout_gives_the_exact_error_and_the_parent_goes_on() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"slow\", \"quick\"]\n[sub_agents_config]\ntimeout = 1\n",
    );
    home.named_agent("slow", "openai/gpt-4o", "");
    home.named_agent("quick", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("c1", "call_agent", delegate("slow", "wait")),
                    ("c2", "call_agent", delegate("quick", "go")),
                ],
                1,
                1,
            ),
        ),
        ("lead", true) => Reply::Json(200, openai_text(&results_text(req, " | "), 1, 1)),
        ("slow", _) => Reply::Hang,
        _ => Reply::Json(200, openai_text("quick answer", 1, 1)),
    });
    let started = Instant::now();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--timeout", "60"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        format!(
            "Error: sub-agent \"slow\" failed - timeout after 1s. {RETRY_HINT} | quick answer\n"
        )
    );
    // Bounded by the sub-agent's 1 s, not the hanging server's minute.
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn run_parent_deadline_bounds_sub_agents_and_then_the_parent_times_out() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"slow\"]\n");
    home.named_agent("slow", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("slow", "wait"))], 1, 1),
        ),
        _ => Reply::Hang,
    });
    let started = Instant::now();
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--timeout", "2", "--verbose"],
    );
    assert_eq!(code(&out), 3, "stderr: {}", stderr(&out));
    assert_eq!(stdout(&out), "");
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l == "[sub-agent] \"slow\" failed: timeout after 2s"),
        "{err}"
    );
    assert!(err.ends_with("axe: openai: timeout after 2s\n"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(30));
    // The parent never sent its second turn: no time was left.
    assert_eq!(server.sent_by("lead").len(), 1);
}

// ---------------------------------------------------------------------------
// Output (design §3.14).
// ---------------------------------------------------------------------------

#[test]
fn run_json_counts_tool_calls_and_sums_the_parents_tokens_only() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\", \"b\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    home.named_agent("b", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[
        ("c1", delegate("a", "x")),
        ("c2", delegate("b", "y")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
    assert_ok(&out);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["tool_calls"], 2);
    // Parent turns: 10+7 in, 5+3 out; the sub-agents' 100/50 each are not
    // the parent's (design D16).
    assert_eq!(v["input_tokens"], 17);
    assert_eq!(v["output_tokens"], 8);
    assert_eq!(v["content"], "answer from a | answer from b");
    assert_eq!(v["stop_reason"], "stop");
    assert_eq!(v["model"], "openai/gpt-4o");
}

#[test]
fn run_verbose_logs_turns_and_sub_agent_calls() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"nobody\"]\n",
    );
    home.named_agent("a", "openai/gpt-4o", "");
    let long_task = "t".repeat(100);
    let server = openai_delegation(calls(&[
        ("c1", delegate("a", &long_task)),
        ("c2", delegate("nobody", "x")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    for expected in [
        "[turn 1] Sending request (1 messages, 0 tool calls pending)".to_string(),
        "[turn 1] Received response: tool_calls (2 tool calls)".to_string(),
        format!(
            "[sub-agent] Calling \"a\" (depth 1) with task: {}...",
            "t".repeat(80)
        ),
        "[turn 2] Sending request (3 messages, 2 tool calls pending)".to_string(),
        "[turn 2] Received response: stop (0 tool calls)".to_string(),
        "Tokens:   17 input, 8 output".to_string(),
    ] {
        assert!(
            lines.contains(&expected.as_str()),
            "missing {expected:?} in:\n{err}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[sub-agent] \"a\" completed in ")
                && l.ends_with("ms (13 chars returned)")),
        "{err}"
    );
    assert!(
        lines.contains(&"[sub-agent] \"nobody\" failed: call_agent error: failed to load agent \"nobody\": agent config not found: nobody"),
        "{err}"
    );
    assert!(!err.contains(OPENAI_KEY));
}

#[test]
fn run_verbose_shows_nested_agents_turns_under_their_names() {
    let home = Home::new();
    home.named_agent("a", "openai/gpt-4o", "sub_agents = [\"b\"]\n");
    home.named_agent("b", "openai/gpt-4o", "sub_agents = [\"c\"]\n");
    home.named_agent("c", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    for expected in [
        "[sub-agent] Calling \"b\" (depth 1) with task: go",
        "  b: [turn 1] Sending request (1 messages, 0 tool calls pending)",
        "  b: [sub-agent] Calling \"c\" (depth 2) with task: go",
        "  b: [turn 2] Received response: stop (0 tool calls)",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in:\n{err}");
    }
    // c runs without tools: a single request, no turn lines.
    assert!(!err.contains("    c: [turn"), "{err}");
}

#[test]
fn run_sub_agent_unknown_key_is_warned_about_once_per_run() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"h\"]\n");
    // A typo a user would otherwise never hear about.
    home.named_agent("h", "openai/gpt-4o", "sub_agent = [\"x\"]\n");
    let server = openai_delegation(calls(&[
        ("c1", delegate("h", "one")),
        ("c2", delegate("h", "two")),
        ("c3", delegate("h", "three")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "answer from h | answer from h | answer from h\n"
    );
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("sub_agent")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].starts_with("axe: warning: "), "{err}");
    assert!(warnings[0].contains("h.toml"), "{err}");
}

#[test]
fn run_call_arriving_at_the_depth_limit_gets_the_depth_error() {
    // design D6: leaf runs at the limit without tools; its model calls anyway.
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[sub_agents_config]\nmax_depth = 1\n",
    );
    home.named_agent("leaf", "openai/gpt-4o", "sub_agents = [\"x\"]\n");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("leaf", "go"))], 1, 1),
        ),
        ("leaf", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c2", "call_agent", delegate("x", "deeper"))], 1, 1),
        ),
        (name, true) => Reply::Json(
            200,
            openai_text(&format!("{name} got: {}", results_text(req, ",")), 1, 1),
        ),
        _ => Reply::Json(500, "{}".into()),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "lead got: leaf got: call_agent error: maximum sub-agent depth (1) reached\n"
    );
    let leaf = server.sent_by("leaf");
    assert!(
        leaf[0].json().get("tools").is_none(),
        "no tool at the limit"
    );
    assert_eq!(leaf.len(), 2);
    assert!(server.sent_by("x").is_empty());
}

#[test]
fn run_sub_agents_own_parallel_false_governs_its_calls() {
    // The root fans out in parallel; mid says parallel = false for its own calls.
    let home = Home::new();
    home.named_agent("root", "openai/gpt-4o", "sub_agents = [\"mid\"]\n");
    home.named_agent(
        "mid",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[sub_agents_config]\nparallel = false\n",
    );
    home.named_agent("leaf", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("root", false) => Reply::Json(
            200,
            openai_tool_calls(&[("r", "call_agent", delegate("mid", "go"))], 1, 1),
        ),
        ("mid", false) => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("m1", "call_agent", delegate("leaf", "one")),
                    ("m2", "call_agent", delegate("leaf", "two")),
                    ("m3", "call_agent", delegate("leaf", "three")),
                ],
                1,
                1,
            ),
        ),
        ("leaf", _) => {
            std::thread::sleep(Duration::from_millis(100));
            Reply::Json(200, openai_text(&req.first_user_text(), 1, 1))
        }
        (_, true) => Reply::Json(200, openai_text(&results_text(req, ","), 1, 1)),
        _ => Reply::Json(500, "{}".into()),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "root"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "Task: one,Task: two,Task: three\n");
    let order: Vec<String> = server
        .sent_by("leaf")
        .iter()
        .map(Recorded::first_user_text)
        .collect();
    assert_eq!(order, ["Task: one", "Task: two", "Task: three"]);
    assert_eq!(server.max_in_flight(), 1);
}

#[test]
fn run_verbose_redacts_a_key_the_model_puts_in_a_task() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[(
        "c1",
        delegate("a", &format!("use the key {OPENAI_KEY} please")),
    )]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--verbose"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l
                == "[sub-agent] Calling \"a\" (depth 1) with task: use the key [redacted] please"),
        "{err}"
    );
    assert!(!err.contains(OPENAI_KEY), "{err}");
}

#[test]
fn run_sub_agents_ignore_the_parents_command_line_overrides() {
    // design D7: --model, --workdir and --skill are the top-level agent's only.
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "files = [\"*.txt\"]\n");
    std::fs::write(home.dir.path().join("cwd.txt"), "from the cwd").unwrap();
    let wd = TempDir::new("override-wd");
    std::fs::write(wd.path().join("wd.txt"), "from --workdir").unwrap();
    let skill = wd.path().join("SKILL.md");
    std::fs::write(&skill, "PARENT SKILL").unwrap();
    let server = openai_delegation(calls(&[("c1", delegate("a", "read"))]));
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &[
            "run",
            "lead",
            "--model",
            "openai/gpt-4o-mini",
            "--workdir",
            wd.path().to_str().unwrap(),
            "--skill",
            skill.to_str().unwrap(),
        ],
    );
    assert_ok(&out);
    let lead = &server.sent_by("lead")[0];
    assert_eq!(lead.json()["model"], "gpt-4o-mini");
    assert!(lead.system_prompt().contains("PARENT SKILL"));
    let a = &server.sent_by("a")[0];
    assert_eq!(a.json()["model"], "gpt-4o");
    assert_eq!(
        a.system_prompt(),
        "You are a.\n\n---\n\n## Context Files\n\n### cwd.txt\n```txt\nfrom the cwd\n```"
    );
}
