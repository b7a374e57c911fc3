//! Anthropic's Messages API (design §4.2–§4.4): the request axe sends, the
//! response it reads, and tool calls both ways.

use super::*;
use crate::common::*;

use axe::provider::{Message, Request, Wire};
use serde_json::json;

#[test]
fn anthropic_posts_json_to_v1_messages_with_key_and_version_headers() {
    let r = sent(Wire::Anthropic, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("authorization"), None, "the key goes in x-api-key");
}

#[test]
fn anthropic_trailing_slash_in_base_url_is_not_doubled() {
    let server = FakeServer::json(200, &ok_body(Wire::Anthropic));
    Provider::new(
        Wire::Anthropic,
        format!("{}/", server.url),
        Some(KEY.into()),
    )
    .send(&hello(), soon())
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.only_request().path, "/v1/messages");
}

#[test]
fn anthropic_sends_model_and_messages_in_order() {
    let req = Request {
        model: "claude-sonnet-4-5".into(),
        messages: vec![
            Message::user("first question"),
            Message::Assistant {
                content: "first answer".into(),
                tool_calls: vec![],
                reasoning: vec![],
            },
            Message::user("second question"),
        ],
        ..Request::default()
    };
    let body = sent_body(Wire::Anthropic, &req);
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question"}
        ])
    );
}

#[test]
fn anthropic_sends_system_prompt_as_top_level_system() {
    let req = Request {
        system: "You are terse.".into(),
        ..hello()
    };
    let body = sent_body(Wire::Anthropic, &req);
    assert_eq!(body["system"], "You are terse.");
    assert!(
        messages(&body).iter().all(|m| m["role"] != "system"),
        "no system role in Anthropic messages: {body}"
    );
}

#[test]
fn anthropic_omits_system_when_empty() {
    let body = sent_body(Wire::Anthropic, &hello());
    assert!(body.get("system").is_none(), "{body}");
}

#[test]
fn anthropic_sends_default_max_tokens_4096() {
    let body = sent_body(Wire::Anthropic, &hello());
    assert_eq!(body["max_tokens"], json!(4096));
}

#[test]
fn anthropic_sends_the_set_max_tokens() {
    let req = Request {
        max_tokens: Some(512),
        ..hello()
    };
    assert_eq!(sent_body(Wire::Anthropic, &req)["max_tokens"], json!(512));
}

#[test]
fn anthropic_omits_temperature_when_unset() {
    let body = sent_body(Wire::Anthropic, &hello());
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn anthropic_sends_zero_temperature_as_exactly_0() {
    let req = Request {
        temperature: Some(0.0),
        ..hello()
    };
    let r = sent(Wire::Anthropic, &req);
    assert_eq!(r.json()["temperature"].to_string(), "0", "{}", r.body);
}

#[test]
fn anthropic_sends_temperature_0_7() {
    let req = Request {
        temperature: Some(0.7),
        ..hello()
    };
    let body = sent_body(Wire::Anthropic, &req);
    assert_eq!(body["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// Anthropic: responses.
// ---------------------------------------------------------------------------

#[test]
fn anthropic_parses_text_usage_and_stop_reason() {
    let resp = answer(
        Wire::Anthropic,
        &anthropic_text("Hello! How can I help?", 25, 9),
        &hello(),
    );
    assert_eq!(resp.content, "Hello! How can I help?");
    assert_eq!(resp.input_tokens, 25);
    assert_eq!(resp.output_tokens, 9);
    assert_eq!(resp.stop_reason, "end_turn");
    assert!(resp.tool_calls.is_empty());
}

#[test]
fn anthropic_empty_content_is_an_empty_answer_not_an_error() {
    let resp = answer(
        Wire::Anthropic,
        include_str!("../../../fixtures/responses/anthropic_empty_content.json"),
        &hello(),
    );
    assert_eq!(resp.content, "");
    assert!(resp.tool_calls.is_empty());
    assert_eq!(resp.stop_reason, "end_turn");
    assert_eq!((resp.input_tokens, resp.output_tokens), (20, 0));
}

// ---------------------------------------------------------------------------
// Anthropic: tool calling (design §4.2).
// ---------------------------------------------------------------------------

#[test]
fn anthropic_without_tools_sends_no_tools_key() {
    let body = sent_body(Wire::Anthropic, &hello());
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn anthropic_sends_tools_with_input_schema() {
    let body = sent_body(Wire::Anthropic, &with_tools());
    let tools = body["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{body}");
    assert_eq!(tools[0]["name"], "call_agent");
    assert_eq!(tools[0]["description"], "Delegate a task to a sub-agent");
    assert_call_agent_schema(&tools[0]["input_schema"]);
    assert!(tools[0].get("parameters").is_none(), "{body}");
}

#[test]
fn anthropic_parses_tool_use_blocks_into_tool_calls() {
    let resp = answer(
        Wire::Anthropic,
        include_str!("../../../fixtures/responses/anthropic_tool_use_with_text.json"),
        &with_tools(),
    );
    assert_eq!(
        parsed_calls(&resp),
        vec![
            call(
                "toolu_01A09q90qw90lq917835lq9",
                "call_agent",
                &[("agent", "test-runner"), ("task", "run tests")]
            ),
            call(
                "toolu_01BcDxKTrYvVZ4uQzG3n8wPs",
                "call_agent",
                &[
                    ("agent", "reviewer"),
                    ("task", "review the diff"),
                    ("attempts", "3"),
                    ("strict", "true"),
                    ("paths", r#"["src","tests"]"#),
                    ("limits", r#"{"files":10}"#),
                ]
            ),
        ]
    );
    assert_eq!((resp.input_tokens, resp.output_tokens), (472, 89));
}

#[test]
fn anthropic_concatenates_text_blocks_alongside_tool_calls() {
    let resp = answer(
        Wire::Anthropic,
        include_str!("../../../fixtures/responses/anthropic_tool_use_with_text.json"),
        &with_tools(),
    );
    assert_eq!(
        resp.content,
        "I'll delegate this to the test runner. And ask the reviewer."
    );
    assert_eq!(resp.tool_calls.len(), 2);
}

#[test]
fn anthropic_tool_use_without_text_gives_empty_content() {
    let resp = answer(
        Wire::Anthropic,
        include_str!("../../../fixtures/responses/anthropic_tool_use_only.json"),
        &with_tools(),
    );
    assert_eq!(resp.content, "");
    assert_eq!(
        parsed_calls(&resp),
        vec![call(
            "toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            "call_agent",
            &[
                ("agent", "test-runner"),
                ("task", "run tests"),
                ("context", "cargo test")
            ]
        )]
    );
}

#[test]
fn anthropic_reports_tool_use_stop_reason() {
    let resp = answer(
        Wire::Anthropic,
        include_str!("../../../fixtures/responses/anthropic_tool_use_only.json"),
        &with_tools(),
    );
    assert_eq!(resp.stop_reason, "tool_use");
}

#[test]
fn anthropic_sends_tool_results_as_user_message_with_tool_result_blocks() {
    let r = sent(Wire::Anthropic, &tool_history("Let me delegate."));
    let body = r.json();
    let msgs = messages(&body);
    assert_eq!(msgs.len(), 3, "{body}");
    assert_eq!(
        msgs[2],
        json!({
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "all 12 tests passed", "is_error": false},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "agent \"reviewer\" failed: timed out", "is_error": true}
            ]
        })
    );
    assert!(
        !r.body.contains("IGNORED-TOOL-MESSAGE-CONTENT"),
        "a tool message's own content is not sent: {}",
        r.body
    );
}

#[test]
fn anthropic_sends_assistant_tool_calls_as_tool_use_blocks_after_text() {
    let body = sent_body(Wire::Anthropic, &tool_history("Let me delegate."));
    assert_eq!(
        messages(&body)[1],
        json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me delegate."},
                {"type": "tool_use", "id": "call_1", "name": "call_agent", "input": {"agent": "test-runner", "task": "run tests"}},
                {"type": "tool_use", "id": "call_2", "name": "call_agent", "input": {"agent": "reviewer", "task": "review the diff"}}
            ]
        })
    );
}

#[test]
fn anthropic_omits_text_block_when_assistant_tool_call_content_is_empty() {
    let body = sent_body(Wire::Anthropic, &tool_history(""));
    let blocks = messages(&body)[1]["content"]
        .as_array()
        .expect("assistant content blocks")
        .clone();
    assert_eq!(blocks.len(), 2, "{body}");
    assert!(blocks.iter().all(|b| b["type"] == "tool_use"), "{body}");
}

#[test]
fn anthropic_omits_whitespace_only_text_before_tool_calls() {
    // The API refuses text blocks with no non-whitespace text (HTTP 400).
    let body = sent_body(Wire::Anthropic, &tool_history("\n\n"));
    let blocks = messages(&body)[1]["content"]
        .as_array()
        .expect("assistant content blocks")
        .clone();
    assert_eq!(blocks.len(), 2, "{body}");
    assert!(blocks.iter().all(|b| b["type"] == "tool_use"), "{body}");
}
