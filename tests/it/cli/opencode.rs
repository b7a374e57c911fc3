//! OpenCode's Zen gateway through the binary (design §4.12): each model
//! reached on the API Zen serves it on, as the Go original routes them:
//! `claude-*` on Anthropic's Messages (`/zen/v1/messages`), `gpt-*` on
//! OpenAI's Responses (`/zen/v1/responses`: a plain answer, a tool call's
//! round trip, a stream), any other on Chat Completions.

use super::*;
use serde_json::{Value, json};

const KEY: &str = "zen-test-key-0123456789abcdef";

/// `axe run a -p hi <extra>` with agent `a` on `opencode/<model>` and
/// Zen at the fake (its base URL's own `/zen` path kept).
fn run(home: &Home, server: &FakeServer, extra: &[&str]) -> Output {
    home.axe()
        .env("OPENCODE_API_KEY", KEY)
        .env("AXE_OPENCODE_BASE_URL", format!("{}/zen", server.url))
        .args(["run", "a", "-p", "hi"])
        .args(extra)
        .output()
        .unwrap()
}

/// A Responses API answer: `output` items and the usage.
fn responses_answer(output: Value, input: u64, out: u64) -> String {
    json!({
        "id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5",
        "output": output,
        "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": 2},
            "output_tokens": out, "total_tokens": input + out}
    })
    .to_string()
}

#[test]
fn a_claude_model_goes_to_zens_messages_endpoint() {
    let server = FakeServer::json(200, &anthropic_text("from claude on zen", 9, 4));
    let home = Home::new();
    home.plain_agent("a", "opencode/claude-sonnet-4-5");
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from claude on zen\n");
    let req = server.only_request();
    assert_eq!(req.path, "/zen/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(KEY));
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    let body = req.json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(body["max_tokens"].is_u64(), "{body}");
}

#[test]
fn a_gpt_model_goes_to_zens_responses_endpoint() {
    let server = FakeServer::json(200, &responses_text("from gpt on zen", 12, 5));
    let home = Home::new();
    home.named_agent("a", "opencode/gpt-5", "[params]\nmax_tokens = 200\n");
    let out = run(&home, &server, &["--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "from gpt on zen", "{v}");
    assert_eq!(
        (v["input_tokens"].as_u64(), v["output_tokens"].as_u64()),
        (Some(12), Some(5))
    );
    let req = server.only_request();
    assert_eq!(req.path, "/zen/v1/responses");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = req.json();
    assert_eq!(body["model"], "gpt-5");
    assert_eq!(body["instructions"], "You are a.");
    assert_eq!(body["input"], json!([{"role": "user", "content": "hi"}]));
    assert_eq!(body["max_output_tokens"], 200);
    assert!(body.get("messages").is_none(), "{body}");
}

#[test]
fn a_gpt_models_tool_call_goes_round_as_function_call_items() {
    let call = responses_answer(
        json!([{"type": "function_call", "id": "fc_1", "call_id": "call_zen1",
            "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}", "status": "completed"}]),
        20,
        8,
    );
    let server = FakeServer::start(vec![
        Reply::Json(200, call),
        Reply::Json(200, responses_text("the notes say hi", 30, 5)),
    ]);
    let home = Home::new();
    let work = home.dir.path().join("w");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("notes.txt"), "hi there\n").unwrap();
    home.named_agent(
        "a",
        "opencode/gpt-5",
        &format!(
            "tools = [\"read_file\"]\nworkdir = {:?}\n",
            work.to_str().unwrap()
        ),
    );
    let out = run(&home, &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "the notes say hi\n");
    let reqs = server.requests();
    let first = reqs[0].json();
    assert_eq!(first["tools"][0]["type"], "function");
    assert_eq!(first["tools"][0]["name"], "read_file");
    assert_eq!(first["tools"][0]["parameters"]["type"], "object", "{first}");
    assert_eq!(first["tool_choice"], "auto");
    let input = reqs[1].json()["input"].clone();
    assert_eq!(
        input[1],
        json!({"type": "function_call", "call_id": "call_zen1", "name": "read_file",
            "arguments": "{\"path\":\"notes.txt\"}"})
    );
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_zen1");
    assert!(
        input[2]["output"].as_str().unwrap().contains("hi there"),
        "{input}"
    );
}

#[test]
fn a_gpt_models_stream_is_printed_as_it_comes_from_responses_events() {
    let done = json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [{"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": "Héllo, wörld"}]}],
        "usage": {"input_tokens": 7, "output_tokens": 3}});
    let body = sse(&[
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"status": "in_progress"}}),
        ),
        (
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta",
            "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Héllo, "}),
        ),
        (
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta",
            "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "wörld"}),
        ),
        (
            Some("response.completed"),
            json!({"type": "response.completed", "response": done}),
        ),
    ]);
    let server = FakeServer::start(vec![Reply::Stream {
        content_type: "text/event-stream".into(),
        steps: vec![Step::bytes(&body, 3)],
    }]);
    let home = Home::new();
    home.plain_agent("a", "opencode/gpt-5");
    let out = run(&home, &server, &["--stream"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Héllo, wörld\n");
    let req = server.only_request();
    assert_eq!(req.path, "/zen/v1/responses");
    assert_eq!(req.json()["stream"], true);
    // A stream that ends before response.completed is not an answer.
    let cut = body[..body.find("event: response.completed").unwrap()].to_string();
    let server = FakeServer::start(vec![Reply::Stream {
        content_type: "text/event-stream".into(),
        steps: vec![Step::bytes(&cut, 64)],
    }]);
    let out = run(&home, &server, &["--stream"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("ended before response.completed"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn any_other_model_goes_to_zens_chat_completions_endpoint() {
    for model in ["kimi-k2", "qwen3-coder", "glm-4.6"] {
        let server = FakeServer::json(200, &openai_text("from chat", 3, 2));
        let home = Home::new();
        home.plain_agent("a", &format!("opencode/{model}"));
        let out = run(&home, &server, &[]);
        assert_eq!(code(&out), 0, "{model}: {}", stderr(&out));
        let req = server.only_request();
        assert_eq!(req.path, "/zen/v1/chat/completions", "{model}");
        assert_eq!(req.json()["model"], model);
    }
}
