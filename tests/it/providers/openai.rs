//! OpenAI's Chat Completions API (design §4.2–§4.4): the request axe
//! sends, the response it reads, and tool calls both ways.

use super::*;
use crate::common::*;

use axe::provider::{Message, Request, Wire};
use serde_json::{Value, json};

#[test]
fn openai_posts_json_to_v1_chat_completions_with_bearer_key() {
    let r = sent(Wire::OpenAi, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-api-key"), None);
}

#[test]
fn openai_base_url_ending_in_v1_gets_no_second_v1() {
    let server = FakeServer::json(200, &ok_body(Wire::OpenAi));
    Provider::new(Wire::OpenAi, format!("{}/v1", server.url), Some(KEY.into()))
        .send(&hello(), soon())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.only_request().path, "/v1/chat/completions");
}

#[test]
fn openai_sends_model_and_messages_in_order() {
    let req = Request {
        model: "gpt-4o".into(),
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
    let body = sent_body(Wire::OpenAi, &req);
    assert_eq!(body["model"], "gpt-4o");
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
fn openai_sends_system_prompt_as_first_system_message() {
    let req = Request {
        system: "You are terse.".into(),
        ..hello()
    };
    let body = sent_body(Wire::OpenAi, &req);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hello"}
        ])
    );
    assert!(body.get("system").is_none(), "{body}");
}

#[test]
fn openai_omits_system_message_when_empty() {
    let body = sent_body(Wire::OpenAi, &hello());
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
}

#[test]
fn openai_omits_max_tokens_when_unset() {
    let body = sent_body(Wire::OpenAi, &hello());
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn openai_sends_max_tokens_when_set() {
    let req = Request {
        max_tokens: Some(300),
        ..hello()
    };
    assert_eq!(sent_body(Wire::OpenAi, &req)["max_tokens"], json!(300));
}

#[test]
fn openai_omits_temperature_when_unset() {
    let body = sent_body(Wire::OpenAi, &hello());
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn openai_sends_zero_temperature_as_exactly_0() {
    let req = Request {
        temperature: Some(0.0),
        ..hello()
    };
    let r = sent(Wire::OpenAi, &req);
    assert_eq!(r.json()["temperature"].to_string(), "0", "{}", r.body);
}

#[test]
fn openai_sends_temperature_0_7() {
    let req = Request {
        temperature: Some(0.7),
        ..hello()
    };
    let body = sent_body(Wire::OpenAi, &req);
    assert_eq!(body["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// OpenAI: responses.
// ---------------------------------------------------------------------------

#[test]
fn openai_parses_text_usage_and_finish_reason() {
    let resp = answer(
        Wire::OpenAi,
        &openai_text("Hello! How can I help?", 19, 10),
        &hello(),
    );
    assert_eq!(resp.content, "Hello! How can I help?");
    assert_eq!(resp.input_tokens, 19);
    assert_eq!(resp.output_tokens, 10);
    assert_eq!(resp.stop_reason, "stop");
    assert!(resp.tool_calls.is_empty());
}

#[test]
fn openai_empty_string_content_is_an_empty_answer_not_an_error() {
    let resp = answer(Wire::OpenAi, &openai_text("", 20, 0), &hello());
    assert_eq!(resp.content, "");
    assert!(resp.tool_calls.is_empty());
}

#[test]
fn openai_null_content_without_tool_calls_is_an_empty_answer() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_empty_content.json"),
        &hello(),
    );
    assert_eq!(resp.content, "");
    assert!(resp.tool_calls.is_empty());
    assert_eq!(resp.stop_reason, "stop");
    assert_eq!((resp.input_tokens, resp.output_tokens), (20, 0));
}

// ---------------------------------------------------------------------------
// OpenAI: tool calling (design §4.2).
// ---------------------------------------------------------------------------

#[test]
fn openai_without_tools_sends_no_tools_key() {
    let body = sent_body(Wire::OpenAi, &hello());
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[test]
fn openai_with_tools_sends_tool_choice_auto() {
    // OpenAI's default, sent explicitly: llama-cpp-python's server reads a
    // missing tool_choice as "none" and never calls a tool.
    let body = sent_body(Wire::OpenAi, &with_tools());
    assert_eq!(body["tool_choice"], "auto", "{body}");
}

#[test]
fn openai_sends_tools_as_functions_with_parameters() {
    let body = sent_body(Wire::OpenAi, &with_tools());
    let tools = body["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{body}");
    assert_eq!(tools[0]["type"], "function");
    let f = &tools[0]["function"];
    assert_eq!(f["name"], "call_agent");
    assert_eq!(f["description"], "Delegate a task to a sub-agent");
    assert_call_agent_schema(&f["parameters"]);
}

#[test]
fn openai_parses_tool_calls() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(
        parsed_calls(&resp),
        vec![
            call(
                "call_abc123",
                "call_agent",
                &[("agent", "test-runner"), ("task", "run tests")]
            ),
            call(
                "call_def456",
                "call_agent",
                &[
                    ("agent", "reviewer"),
                    ("task", "review the diff"),
                    ("attempts", "3"),
                    ("strict", "true"),
                    ("paths", r#"["src","tests"]"#),
                ]
            ),
        ]
    );
    assert_eq!((resp.input_tokens, resp.output_tokens), (82, 17));
}

#[test]
fn openai_tool_calls_with_null_content_give_empty_content() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(resp.content, "");
    assert_eq!(resp.tool_calls.len(), 2);
}

#[test]
fn openai_keeps_text_alongside_tool_calls() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_tool_calls_with_text.json"),
        &with_tools(),
    );
    assert_eq!(resp.content, "I'll ask the test runner.");
    assert_eq!(
        parsed_calls(&resp),
        vec![call(
            "call_ghi789",
            "call_agent",
            &[("agent", "test-runner"), ("task", "run tests")]
        )]
    );
}

#[test]
fn openai_invalid_tool_call_arguments_give_empty_arguments() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_invalid_tool_arguments.json"),
        &with_tools(),
    );
    assert_eq!(
        parsed_calls(&resp),
        vec![call("call_bad001", "call_agent", &[])]
    );
}

#[test]
fn openai_reports_tool_calls_stop_reason() {
    let resp = answer(
        Wire::OpenAi,
        include_str!("../../../fixtures/responses/openai_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(resp.stop_reason, "tool_calls");
}

#[test]
fn openai_sends_one_tool_message_per_result() {
    let r = sent(Wire::OpenAi, &tool_history("Let me delegate."));
    let body = r.json();
    let msgs = messages(&body);
    assert_eq!(msgs.len(), 4, "user, assistant, two tool results: {body}");
    assert_eq!(
        msgs[2],
        json!({"role": "tool", "tool_call_id": "call_1", "content": "all 12 tests passed"})
    );
    assert_eq!(
        msgs[3],
        json!({"role": "tool", "tool_call_id": "call_2", "content": "agent \"reviewer\" failed: timed out"})
    );
    assert!(
        !r.body.contains("IGNORED-TOOL-MESSAGE-CONTENT"),
        "a tool message's own content is not sent: {}",
        r.body
    );
}

#[test]
fn openai_sends_assistant_tool_calls_with_json_string_arguments() {
    let body = sent_body(Wire::OpenAi, &tool_history("Let me delegate."));
    let m = &messages(&body)[1];
    assert_eq!(m["role"], "assistant");
    assert_eq!(m["content"], "Let me delegate.");
    let calls = m["tool_calls"].as_array().expect("tool_calls array");
    assert_eq!(calls.len(), 2, "{m}");
    let expected = [
        (
            "call_1",
            json!({"agent": "test-runner", "task": "run tests"}),
        ),
        (
            "call_2",
            json!({"agent": "reviewer", "task": "review the diff"}),
        ),
    ];
    for (c, (id, arguments)) in calls.iter().zip(expected) {
        assert_eq!(c["id"], id, "{m}");
        assert_eq!(c["type"], "function", "{m}");
        assert_eq!(c["function"]["name"], "call_agent", "{m}");
        let text = c["function"]["arguments"]
            .as_str()
            .unwrap_or_else(|| panic!("arguments must be a JSON string: {m}"));
        let parsed: Value = serde_json::from_str(text).expect("arguments hold JSON");
        assert_eq!(parsed, arguments);
    }
}

#[test]
fn openai_sends_empty_assistant_content_as_empty_string_not_null() {
    let r = sent(Wire::OpenAi, &tool_history(""));
    let body = r.json();
    let m = &messages(&body)[1];
    assert!(m["tool_calls"].is_array(), "{m}");
    assert_eq!(
        m["content"],
        json!(""),
        "content must be \"\", never null (design D15): {m}"
    );
}
