//! Ollama's `/api/chat` (design §4.2–§4.4): the request axe sends, the
//! response it reads, and tool calls both ways.

use super::*;
use crate::common::*;

use axe::provider::{Message, Request, Wire};
use serde_json::json;

#[test]
fn ollama_posts_json_to_api_chat_with_stream_false() {
    let r = sent(Wire::Ollama, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/api/chat");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["stream"], json!(false));
}

#[test]
fn ollama_sends_a_set_key_as_bearer() {
    let r = sent(Wire::Ollama, &hello());
    assert_eq!(r.header("authorization"), Some(&*format!("Bearer {KEY}")));
}

#[test]
fn ollama_without_key_sends_no_authorization_header() {
    let server = FakeServer::json(200, &ok_body(Wire::Ollama));
    Provider::new(Wire::Ollama, server.url.clone(), None)
        .send(&hello(), soon())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(server.only_request().header("authorization"), None);
}

#[test]
fn ollama_sends_model_and_messages_in_order() {
    let req = Request {
        model: "llama3.1".into(),
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
    let body = sent_body(Wire::Ollama, &req);
    assert_eq!(body["model"], "llama3.1");
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
fn ollama_sends_system_prompt_as_first_system_message() {
    let req = Request {
        system: "You are terse.".into(),
        ..hello()
    };
    let body = sent_body(Wire::Ollama, &req);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hello"}
        ])
    );
}

#[test]
fn ollama_omits_system_message_when_empty() {
    let body = sent_body(Wire::Ollama, &hello());
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
}

#[test]
fn ollama_sends_max_tokens_as_options_num_predict() {
    let req = Request {
        max_tokens: Some(256),
        ..hello()
    };
    let body = sent_body(Wire::Ollama, &req);
    assert_eq!(body["options"]["num_predict"], json!(256), "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn ollama_omits_num_predict_and_temperature_when_unset() {
    let body = sent_body(Wire::Ollama, &hello());
    assert!(body.pointer("/options/num_predict").is_none(), "{body}");
    assert!(body.pointer("/options/temperature").is_none(), "{body}");
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn ollama_sends_zero_temperature_as_exactly_0_in_options() {
    let req = Request {
        temperature: Some(0.0),
        ..hello()
    };
    let r = sent(Wire::Ollama, &req);
    let body = r.json();
    assert_eq!(
        body["options"]["temperature"].to_string(),
        "0",
        "{}",
        r.body
    );
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn ollama_sends_temperature_0_7_in_options() {
    let req = Request {
        temperature: Some(0.7),
        ..hello()
    };
    let body = sent_body(Wire::Ollama, &req);
    assert_eq!(body["options"]["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// Ollama: responses.
// ---------------------------------------------------------------------------

#[test]
fn ollama_parses_text_eval_counts_and_done_reason() {
    let resp = answer(
        Wire::Ollama,
        &ollama_text("Hello! How can I help?", 26, 298),
        &hello(),
    );
    assert_eq!(resp.content, "Hello! How can I help?");
    assert_eq!(resp.input_tokens, 26);
    assert_eq!(resp.output_tokens, 298);
    assert_eq!(resp.stop_reason, "stop");
    assert!(resp.tool_calls.is_empty());
}

#[test]
fn ollama_empty_content_is_an_empty_answer_not_an_error() {
    let resp = answer(
        Wire::Ollama,
        include_str!("../../../fixtures/responses/ollama_empty_content.json"),
        &hello(),
    );
    assert_eq!(resp.content, "");
    assert!(resp.tool_calls.is_empty());
    assert_eq!((resp.input_tokens, resp.output_tokens), (20, 1));
}

// ---------------------------------------------------------------------------
// Ollama: tool calling (design §4.2).
// ---------------------------------------------------------------------------

#[test]
fn ollama_without_tools_sends_no_tools_key() {
    let body = sent_body(Wire::Ollama, &hello());
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn ollama_sends_tools_as_functions_with_parameters() {
    let body = sent_body(Wire::Ollama, &with_tools());
    let tools = body["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{body}");
    assert_eq!(tools[0]["type"], "function");
    let f = &tools[0]["function"];
    assert_eq!(f["name"], "call_agent");
    assert_eq!(f["description"], "Delegate a task to a sub-agent");
    assert_call_agent_schema(&f["parameters"]);
}

#[test]
fn ollama_parses_tool_calls_with_generated_ids() {
    let resp = answer(
        Wire::Ollama,
        include_str!("../../../fixtures/responses/ollama_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(
        parsed_calls(&resp),
        vec![
            call(
                "ollama_0",
                "call_agent",
                &[("agent", "test-runner"), ("task", "run tests")]
            ),
            call(
                "ollama_1",
                "call_agent",
                &[
                    ("agent", "reviewer"),
                    ("task", "review the diff"),
                    ("attempts", "3"),
                    ("strict", "true"),
                ]
            ),
        ]
    );
    assert_eq!(resp.content, "");
    assert_eq!((resp.input_tokens, resp.output_tokens), (215, 41));
}

#[test]
fn ollama_text_reply_to_a_request_with_tools_has_no_tool_calls() {
    let resp = answer(
        Wire::Ollama,
        &ollama_text("I cannot call tools, but here is my answer.", 30, 12),
        &with_tools(),
    );
    assert!(resp.tool_calls.is_empty());
    assert_eq!(resp.content, "I cannot call tools, but here is my answer.");
}

#[test]
fn ollama_sends_one_tool_message_per_result() {
    let r = sent(Wire::Ollama, &tool_history(""));
    let body = r.json();
    let msgs = messages(&body);
    assert_eq!(msgs.len(), 4, "user, assistant, two tool results: {body}");
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["content"], "all 12 tests passed");
    assert_eq!(msgs[3]["role"], "tool");
    assert_eq!(msgs[3]["content"], "agent \"reviewer\" failed: timed out");
    assert!(
        !r.body.contains("IGNORED-TOOL-MESSAGE-CONTENT"),
        "a tool message's own content is not sent: {}",
        r.body
    );
}

#[test]
fn ollama_sends_assistant_tool_calls_with_object_arguments() {
    let body = sent_body(Wire::Ollama, &tool_history(""));
    let m = &messages(&body)[1];
    assert_eq!(m["role"], "assistant");
    let calls = m["tool_calls"].as_array().expect("tool_calls array");
    assert_eq!(calls.len(), 2, "{m}");
    assert_eq!(calls[0]["function"]["name"], "call_agent");
    assert_eq!(
        calls[0]["function"]["arguments"],
        json!({"agent": "test-runner", "task": "run tests"})
    );
    assert_eq!(calls[1]["function"]["name"], "call_agent");
    assert_eq!(
        calls[1]["function"]["arguments"],
        json!({"agent": "reviewer", "task": "review the diff"})
    );
}
