//! When `call_agent` is offered (design §3.2), the conversation loop on
//! each provider and across providers (§3.7, §4.2), and what ends a turn:
//! the 50-turn limit, errors, unknown tools and panics, each kept inside
//! its call (§3.8, §3.12).

use super::*;

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
            // The newest block carries the prompt-cache mark (design §4.10).
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": "answer from b", "is_error": false,
             "cache_control": {"type": "ephemeral"}},
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
            json!({"type": "tool_result", "tool_use_id": "toolu_x", "content": "Unknown tool: \"read_file\"", "is_error": true,
                   "cache_control": {"type": "ephemeral"}})
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
