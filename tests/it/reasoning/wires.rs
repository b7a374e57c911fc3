//! Each wire's own form of the reasoning parameters, in the bodies the
//! fakes receive (design §4.15): OpenAI's and Gemini's `reasoning_effort`,
//! Anthropic's `thinking` with its budget (and `max_tokens` above it, no
//! `temperature` beside it), Ollama's `think`; and nothing at all where an
//! agent asks for none.

use super::*;

use serde_json::{Value, json};

/// The body of the one request `home`'s `thinker` sent to a fake of `p`,
/// run with `args` more.
fn sent(home: &Home, p: P, args: &[&str]) -> Value {
    let server = FakeServer::json(200, &p.text("done"));
    let mut all = vec!["run", "thinker", "-p", "go"];
    all.extend_from_slice(args);
    let out = home.run_on(&[(p, &server)], &all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    server.only_request().json()
}

#[test]
fn openai_gets_reasoning_effort_from_the_file_or_the_flag_and_nothing_unasked() {
    let home = thinker(
        "openai/o4-mini",
        "reasoning_effort = \"high\"\nthinking_budget = 4096",
    );
    let body = sent(&home, P::OpenAi, &[]);
    assert_eq!(body["reasoning_effort"], "high", "{body}");
    // Chat Completions takes no budget.
    assert!(!body.to_string().contains("4096"), "{body}");
    let body = sent(&home, P::OpenAi, &["--reasoning-effort", "minimal"]);
    assert_eq!(body["reasoning_effort"], "minimal", "{body}");
    let plain = thinker("openai/gpt-4o", "");
    let body = sent(&plain, P::OpenAi, &[]);
    assert!(body.get("reasoning_effort").is_none(), "{body}");
    let body = sent(&plain, P::OpenAi, &["--reasoning-effort", "low"]);
    assert_eq!(body["reasoning_effort"], "low", "{body}");
}

#[test]
fn gemini_through_its_openai_compatible_endpoint_gets_reasoning_effort() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = thinker("gemini/gemini-2.5-flash", "reasoning_effort = \"medium\"");
    home.config(&format!(
        "[providers.gemini]\nbase_url = \"{}/v1beta/openai\"\n",
        server.url
    ));
    let out = home
        .axe()
        .env("GEMINI_API_KEY", "gm-test-0123456789abcdef")
        .args(["run", "thinker", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = server.only_request();
    assert_eq!(req.path, "/v1beta/openai/chat/completions");
    assert_eq!(req.json()["reasoning_effort"], "medium");
}

#[test]
fn anthropic_gets_thinking_with_its_budget_and_max_tokens_above_it() {
    let cases = [
        // (params, budget_tokens, max_tokens sent)
        ("thinking_budget = 2048", 2048, 4096),
        // The default's 4096 is not above the budget: the budget plus it.
        ("thinking_budget = 6000", 6000, 10096),
        ("thinking_budget = 2048\nmax_tokens = 30000", 2048, 30000),
        ("thinking_budget = 8000\nmax_tokens = 1000", 8000, 9000),
        // An effort alone: its documented budget.
        ("reasoning_effort = \"minimal\"", 1024, 4096),
        ("reasoning_effort = \"low\"", 1024, 4096),
        ("reasoning_effort = \"medium\"", 8192, 12288),
        ("reasoning_effort = \"high\"", 24576, 28672),
        // Both: the budget.
        (
            "reasoning_effort = \"high\"\nthinking_budget = 3000",
            3000,
            4096,
        ),
    ];
    for (params, budget, max_tokens) in cases {
        let home = thinker("anthropic/claude-sonnet-4-5", params);
        let body = sent(&home, P::Anthropic, &[]);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": budget}),
            "{params}: {body}"
        );
        assert_eq!(body["max_tokens"], max_tokens, "{params}: {body}");
    }
    let home = thinker("anthropic/claude-sonnet-4-5", "");
    let body = sent(&home, P::Anthropic, &["--reasoning-effort", "medium"]);
    assert_eq!(body["thinking"]["budget_tokens"], 8192, "{body}");
}

#[test]
fn anthropic_sends_no_temperature_beside_thinking_and_no_thinking_unasked() {
    let home = thinker(
        "anthropic/claude-sonnet-4-5",
        "temperature = 0.2\nthinking_budget = 2048",
    );
    let body = sent(&home, P::Anthropic, &[]);
    assert!(body.get("temperature").is_none(), "{body}");
    assert_eq!(body["thinking"]["type"], "enabled", "{body}");
    let plain = thinker("anthropic/claude-sonnet-4-5", "temperature = 0.2");
    let body = sent(&plain, P::Anthropic, &[]);
    assert_eq!(body["temperature"], 0.2, "{body}");
    assert!(body.get("thinking").is_none(), "{body}");
    assert_eq!(body["max_tokens"], 4096, "{body}");
}

#[test]
fn ollama_gets_think_a_level_where_the_model_takes_one_else_true() {
    let cases = [
        (
            "ollama/qwen3:8b",
            "reasoning_effort = \"high\"",
            json!(true),
        ),
        ("ollama/qwen3:8b", "thinking_budget = 2048", json!(true)),
        (
            "ollama/gpt-oss:20b",
            "reasoning_effort = \"high\"",
            json!("high"),
        ),
        (
            "ollama/gpt-oss:20b",
            "reasoning_effort = \"medium\"",
            json!("medium"),
        ),
        (
            "ollama/gpt-oss:20b",
            "reasoning_effort = \"minimal\"",
            json!("low"),
        ),
        ("ollama/gpt-oss:20b", "thinking_budget = 2048", json!(true)),
    ];
    for (model, params, think) in cases {
        let home = thinker(model, params);
        let body = sent(&home, P::Ollama, &[]);
        assert_eq!(body["think"], think, "{model} {params}: {body}");
    }
    let plain = thinker("ollama/qwen3:8b", "");
    let body = sent(&plain, P::Ollama, &[]);
    assert!(body.get("think").is_none(), "{body}");
}

#[test]
fn a_sub_agent_asks_with_its_own_files_params_not_its_callers_flag() {
    let server = FakeServer::route(|req| {
        let reply = match (req.who().as_str(), !req.has_tool_results()) {
            ("lead", true) => {
                openai_tool_calls(&[("c1", "call_agent", delegate("worker", "w"))], 5, 2)
            }
            ("lead", false) => openai_text("all done", 5, 2),
            _ => openai_text("worked", 5, 2),
        };
        Reply::Json(200, reply)
    });
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/o4-mini",
        "sub_agents = [\"worker\"]\n[params]\nreasoning_effort = \"low\"\n",
    );
    home.named_agent(
        "worker",
        "openai/o4-mini",
        "[params]\nreasoning_effort = \"high\"\n",
    );
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "-p", "go", "--reasoning-effort", "minimal"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "all done");
    for r in server.sent_by("lead") {
        assert_eq!(r.json()["reasoning_effort"], "minimal");
    }
    let worker = server.sent_by("worker");
    assert_eq!(worker.len(), 1);
    assert_eq!(worker[0].json()["reasoning_effort"], "high");
}
