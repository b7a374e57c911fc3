//! OpenAI's Responses API as a wire, through the binary (issue 39, design
//! §4.14): named by a table's `api` (or `kind`), the default for OpenAI's
//! models that answer only there; the body (`store: false`, the encrypted
//! reasoning asked for, tools not strict), a tool loop with the reasoning
//! items sent back as they came, usage with cached and reasoning tokens
//! and its cost, the encrypted reasoning a model refuses dropped, a
//! schema repaired, a streamed tool loop, retries, sub-agents and
//! budgets. Refusals and cut answers are in `answers_not_whole`, MCP tools
//! in `mcp::run`, the SDK's types in `wires::conformance`.

mod loops;

use serde_json::{Value, json};

use crate::common::*;

/// `axe run a -p hi <extra>` with OpenAI's key and base URL at `server`.
fn run(home: &Home, server: &FakeServer, extra: &[&str]) -> std::process::Output {
    home.axe_on(&[(P::Responses, server)])
        .args(["run", "a", "-p", "hi"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_table_with_api_responses_names_a_provider_on_the_responses_wire() {
    for key in ["api", "kind"] {
        let server = FakeServer::json(200, &responses_text_of("from mine", 9, 4));
        let home = Home::new();
        home.config(&format!(
            "[providers.mine]\n{key} = \"responses\"\nbase_url = \"{}/v1\"\napi_key = \"sk-mine-0123456789\"\n",
            server.url
        ));
        home.named_agent("a", "mine/gpt-5", "");
        let out = home.run(&["run", "a", "-p", "hi"]);
        assert_eq!(code(&out), 0, "{key}: {}", stderr(&out));
        assert_eq!(stdout(&out), "from mine\n");
        let req = server.only_request();
        assert_eq!(req.path, "/v1/responses", "{key}");
        assert_eq!(
            req.header("authorization"),
            Some("Bearer sk-mine-0123456789")
        );
        let body = req.json();
        assert_eq!(body["model"], "gpt-5");
        assert_eq!(body["instructions"], "You are a.");
        assert_eq!(body["input"], json!([{"role": "user", "content": "hi"}]));
        assert_eq!(body["store"], false, "{body}");
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    }
    // Both keys, saying two things: which one wins is not guessed.
    let home = Home::new();
    home.config("[providers.mine]\napi = \"responses\"\nkind = \"openai\"\n");
    home.plain_agent("a", "mine/gpt-5");
    let out = home.run(&["run", "a", "-p", "hi", "--dry-run"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("providers.mine: api = \"responses\" and kind = \"openai\" disagree"),
        "{}",
        stderr(&out)
    );
    home.config("[providers.mine]\napi = \"grpc\"\n");
    let out = home.run(&["run", "a", "-p", "hi", "--dry-run"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "providers.mine.api must be \"openai\", \"anthropic\", \"ollama\" or \"responses\""
        ),
        "{}",
        stderr(&out)
    );
}

#[test]
fn openais_models_that_answer_only_on_responses_go_there_and_a_table_sends_any() {
    for (model, path) in [
        ("o3-pro", "/v1/responses"),
        ("gpt-5-pro-2025-10-06", "/v1/responses"),
        ("gpt-4o", "/v1/chat/completions"),
    ] {
        let reply = if path == "/v1/responses" {
            responses_text_of("ok", 3, 2)
        } else {
            openai_text("ok", 3, 2)
        };
        let server = FakeServer::json(200, &reply);
        let home = Home::new();
        home.plain_agent("a", &format!("openai/{model}"));
        let out = run(&home, &server, &[]);
        assert_eq!(code(&out), 0, "{model}: {}", stderr(&out));
        assert_eq!(server.only_request().path, path, "{model}");
    }
    let server = FakeServer::json(200, &responses_text_of("ok", 3, 2));
    let home = Home::new();
    home.config("[providers.openai]\napi = \"responses\"\n");
    home.plain_agent("a", "openai/gpt-4o");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(server.only_request().path, "/v1/responses");
}

#[test]
fn usage_counts_cached_tokens_and_is_priced() {
    let mut answer = responses_answer(
        json!([
            reasoning_item("rs_1", "Thinking."),
            output_message("priced")
        ]),
        1_000_000,
        500_000,
        400_000,
    );
    answer["usage"]["input_tokens_details"]["cached_tokens"] = json!(200_000);
    let server = FakeServer::json(200, &answer.to_string());
    let home = Home::new();
    let trace = home.dir.path().join("t.jsonl");
    home.plain_agent("a", "openai/o3-pro");
    let out = run(
        &home,
        &server,
        &["--json", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "priced", "{v}");
    assert_eq!(
        (v["input_tokens"].as_u64(), v["output_tokens"].as_u64()),
        (Some(1_000_000), Some(500_000)),
        "{v}"
    );
    let events = trace_events(&trace);
    let turn = events
        .iter()
        .find(|e| e["event"] == "response")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(turn["cache_read_input_tokens"], 200_000, "{turn}");
    // o3-pro: $20 a million in, $80 out (no cached rate), the reasoning
    // tokens among the output's (their count: `providers::responses`).
    let cost = turn["cost_usd"].as_f64().unwrap();
    assert!((cost - 60.0).abs() < 1e-6, "{turn}");
}

#[test]
fn encrypted_reasoning_a_model_refuses_is_dropped_and_the_request_sent_again() {
    let refused = json!({"error": {"message": "Encrypted content is not supported with this model.",
        "type": "invalid_request_error", "param": "include", "code": null}});
    let server = FakeServer::route(move |req| {
        if req.json().get("include").is_some() {
            Reply::Json(400, refused.to_string())
        } else {
            Reply::Json(200, responses_text_of("without it", 3, 2))
        }
    });
    let home = Home::new();
    home.config("[providers.openai]\napi = \"responses\"\n");
    home.plain_agent("a", "openai/gpt-4o");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "without it\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "sent again once");
    assert_eq!(reqs[1].json()["store"], false);
    assert!(
        stderr(&out).contains("keeps no encrypted reasoning"),
        "{}",
        stderr(&out)
    );
}
