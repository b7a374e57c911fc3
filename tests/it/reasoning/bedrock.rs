//! A Claude model's thinking on Amazon Bedrock's Converse API (design
//! §4.15): `additionalModelRequestFields.thinking` with the budget, no
//! temperature beside it; the answer's `reasoningContent` blocks, whole or
//! streamed (text and signature deltas), sent back first in their turn to a
//! fake that refuses, as Bedrock does, a tool turn without them; and no
//! thinking asked of a model that is not Claude.

use super::*;

use crate::cli::bedrock_stream::{bytes, ending, event, streamed};
use serde_json::{Value, json};

const CLAUDE: &str = "anthropic.claude-sonnet-4-5-20250929-v1:0";

fn reasoning_block() -> Value {
    json!({"reasoningContent": {"reasoningText": {
        "text": "I should list the files. PRIVATE-THOUGHT",
        "signature": "EqoBCkgIARABGAIiQL2"
    }}})
}

fn call() -> Value {
    json!({"toolUse": {"toolUseId": "tooluse_1", "name": "list_directory", "input": {"path": "."}}})
}

/// The first answer streamed: the reasoning in two text deltas and a
/// signature delta, then the call.
fn first_streamed() -> Vec<u8> {
    let delta = |i: u64, d: Value| {
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": i, "delta": d}),
        )
    };
    let mut out = event("messageStart", json!({"role": "assistant"}));
    out.extend(delta(
        0,
        json!({"reasoningContent": {"text": "I should list the files. "}}),
    ));
    out.extend(delta(
        0,
        json!({"reasoningContent": {"text": "PRIVATE-THOUGHT"}}),
    ));
    out.extend(delta(
        0,
        json!({"reasoningContent": {"signature": "EqoBCkgIARABGAIiQL2"}}),
    ));
    out.extend(event("contentBlockStop", json!({"contentBlockIndex": 0})));
    out.extend(event(
        "contentBlockStart",
        json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "list_directory"}}}),
    ));
    out.extend(delta(1, json!({"toolUse": {"input": "{\"path\": \".\"}"}})));
    out.extend(event("contentBlockStop", json!({"contentBlockIndex": 1})));
    out.extend(ending("tool_use", 20, 30));
    out
}

/// A Converse fake: the first request gets the reasoning and a call, the
/// second (which must carry the reasoning block first, unchanged, and the
/// thinking, and no temperature) the answer.
fn fake() -> FakeServer {
    FakeServer::route(|req| {
        let body = req.json();
        let refuse = |why: &str| Reply::Json(400, json!({"message": why}).to_string());
        if body["additionalModelRequestFields"]["thinking"]
            != json!({"type": "enabled", "budget_tokens": 2048})
            || body["inferenceConfig"].get("temperature").is_some()
        {
            return refuse(&format!("thinking or temperature: {body}"));
        }
        let stream = req.path.ends_with("/converse-stream");
        if !req.body.contains("toolResult") {
            if stream {
                return streamed(vec![bytes(&first_streamed(), 7)]);
            }
            let answer = json!({
                "output": {"message": {"role": "assistant", "content": [reasoning_block(), call()]}},
                "stopReason": "tool_use",
                "usage": {"inputTokens": 20, "outputTokens": 30, "totalTokens": 50}
            });
            return Reply::Json(200, answer.to_string());
        }
        if body["messages"][1]["content"][0] != reasoning_block() {
            return refuse(&format!(
                "messages.1.content.0: the reasoning block is missing or changed: {}",
                body["messages"][1]
            ));
        }
        Reply::Json(200, bedrock_text("One file: notes.txt.", 30, 8))
    })
}

fn run(model: &str, server: &FakeServer, args: &[&str]) -> std::process::Output {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\n").unwrap();
    home.agent(
        "lister",
        &format!(
            "name = \"lister\"\nmodel = \"bedrock/{model}\"\nworkdir = \"{}\"\n\
             tools = [\"list_directory\"]\n\n[params]\ntemperature = 0.7\nthinking_budget = 2048\n",
            work.display()
        ),
    );
    let mut all = vec!["run", "lister", "-p", "what files?"];
    all.extend_from_slice(args);
    home.axe()
        .env("AWS_ACCESS_KEY_ID", "AKIDTESTREASON0001")
        .env("AWS_SECRET_ACCESS_KEY", "reason-secret-0123456789abcdef")
        .env("AWS_REGION", "us-west-2")
        .env("AXE_BEDROCK_BASE_URL", &server.url)
        .args(&all)
        .output()
        .unwrap()
}

#[test]
fn claudes_reasoning_on_bedrock_goes_back_unchanged_whole_or_streamed() {
    for args in [&["-v"][..], &["-v", "--stream"]] {
        let server = fake();
        let out = run(CLAUDE, &server, args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "One file: notes.txt.\n", "{args:?}");
        assert_eq!(server.requests().len(), 2, "{args:?}");
        assert!(
            stderr(&out).contains("Thinking: I should list the files. PRIVATE-THOUGHT"),
            "{args:?}: {}",
            stderr(&out)
        );
        let first = server.requests()[0].json();
        assert_eq!(
            first["inferenceConfig"],
            json!({"maxTokens": 4096}),
            "{first}"
        );
    }
}

#[test]
fn a_model_that_is_not_claude_is_asked_for_no_thinking_on_bedrock() {
    let server = FakeServer::json(200, &bedrock_text("ok", 1, 1));
    let out = run("amazon.nova-pro-v1:0", &server, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.only_request().json();
    assert!(body.get("additionalModelRequestFields").is_none(), "{body}");
    assert_eq!(body["inferenceConfig"]["temperature"], 0.7, "{body}");
}
