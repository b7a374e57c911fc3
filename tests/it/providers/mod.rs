//! The provider layer driven over real HTTP, in process: `Provider::send`
//! against a fake provider on 127.0.0.1. One file per wire format for
//! request shapes, response parsing and tool calling (design §4.1–§4.4),
//! [`types`] for the shared types' zero values, and [`errors`] for how
//! every failure is classified on all three (§4.7, §4.8). The helpers here
//! serve them all.

mod anthropic;
mod errors;
mod ollama;
mod openai;
mod responses;
mod types;

use crate::common::*;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use axe::provider::{
    Message, Provider, Request, Response, Tool, ToolCall, ToolParameter, ToolResult, Wire,
};
use serde_json::{Value, json};

/// The key every provider here is built with. It is registered for redaction
/// (process-wide), so it must not occur in any text a test expects to see.
const KEY: &str = "sk-test-providers-5f3a9c";

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

fn provider(kind: Wire, server: &FakeServer) -> Provider {
    Provider::new(kind, server.url.clone(), Some(KEY.into()))
}

fn hello() -> Request {
    Request {
        model: "test-model".into(),
        messages: vec![Message::user("hello")],
        ..Request::default()
    }
}

/// A successful text answer in `kind`'s wire format.
fn ok_body(kind: Wire) -> String {
    match kind {
        Wire::Anthropic => anthropic_text("ok", 3, 1),
        Wire::OpenAi => openai_text("ok", 3, 1),
        Wire::Ollama => ollama_text("ok", 3, 1),
        Wire::Bedrock => bedrock_text("ok", 3, 1),
        Wire::Responses => responses_text("ok", 3, 1),
    }
}

/// Sends `req` to a server answering 200 with `body`; the parsed response.
#[track_caller]
fn answer(kind: Wire, body: &str, req: &Request) -> Response {
    let server = FakeServer::json(200, body);
    let resp = provider(kind, &server)
        .send(req, soon())
        .unwrap_or_else(|e| panic!("send failed: {e}"));
    assert_eq!(server.requests().len(), 1);
    resp
}

/// Sends `req` to a server answering with a valid text reply; what it received.
#[track_caller]
fn sent(kind: Wire, req: &Request) -> Recorded {
    let server = FakeServer::json(200, &ok_body(kind));
    provider(kind, &server)
        .send(req, soon())
        .unwrap_or_else(|e| panic!("send failed: {e}"));
    server.only_request()
}

#[track_caller]
fn sent_body(kind: Wire, req: &Request) -> Value {
    sent(kind, req).json()
}

/// The `call_agent` tool as the runtime builds it: `agent` limited to the
/// allowed names (design D19), `task` required, `context` optional.
fn call_agent_tool() -> Tool {
    let mut parameters = BTreeMap::new();
    parameters.insert(
        "agent".to_string(),
        ToolParameter {
            kind: "string".into(),
            description: "Name of the sub-agent to call".into(),
            required: true,
            allowed: vec!["test-runner".into(), "reviewer".into()],
        },
    );
    parameters.insert(
        "task".to_string(),
        ToolParameter {
            kind: "string".into(),
            description: "What the sub-agent should do".into(),
            required: true,
            allowed: vec![],
        },
    );
    parameters.insert(
        "context".to_string(),
        ToolParameter {
            kind: "string".into(),
            description: "Optional background for the sub-agent".into(),
            required: false,
            allowed: vec![],
        },
    );
    Tool {
        name: "call_agent".into(),
        description: "Delegate a task to a sub-agent".into(),
        parameters,
        schema: None,
    }
}

fn with_tools() -> Request {
    Request {
        tools: vec![call_agent_tool()],
        ..hello()
    }
}

/// Checks a JSON Schema object built from [`call_agent_tool`].
#[track_caller]
fn assert_call_agent_schema(schema: &Value) {
    assert_eq!(schema["type"], "object", "{schema}");
    assert_eq!(
        schema["properties"],
        json!({
            "agent": {
                "type": "string",
                "description": "Name of the sub-agent to call",
                "enum": ["test-runner", "reviewer"]
            },
            "task": {"type": "string", "description": "What the sub-agent should do"},
            "context": {"type": "string", "description": "Optional background for the sub-agent"}
        }),
        "{schema}"
    );
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap_or_else(|| panic!("`required` should be an array: {schema}"))
        .iter()
        .map(|v| v.as_str().expect("required names are strings"))
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["agent", "task"], "{schema}");
}

fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The tool calls of a response as the tool reads them: id, name and
/// string arguments (the wire's own arguments are set aside).
fn parsed_calls(resp: &Response) -> Vec<ToolCall> {
    resp.tool_calls
        .iter()
        .map(|c| ToolCall {
            wire_arguments: serde_json::Value::Null,
            ..c.clone()
        })
        .collect()
}

fn call(id: &str, name: &str, pairs: &[(&str, &str)]) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args(pairs),
        ..ToolCall::default()
    }
}

/// A conversation after one round of tool calls: the user's task, the
/// assistant's two calls (with `assistant_text` beside them) and their
/// results, the second one an error.
fn tool_history(assistant_text: &str) -> Request {
    Request {
        model: "test-model".into(),
        messages: vec![
            Message::user("run the tests"),
            Message::Assistant {
                content: assistant_text.into(),
                tool_calls: vec![
                    call(
                        "call_1",
                        "call_agent",
                        &[("agent", "test-runner"), ("task", "run tests")],
                    ),
                    call(
                        "call_2",
                        "call_agent",
                        &[("agent", "reviewer"), ("task", "review the diff")],
                    ),
                ],
                reasoning: vec![],
            },
            Message::ToolResults(vec![
                ToolResult {
                    call_id: "call_1".into(),
                    tool_name: "call_agent".into(),
                    content: "all 12 tests passed".into(),
                    is_error: false,
                },
                ToolResult {
                    call_id: "call_2".into(),
                    tool_name: "call_agent".into(),
                    content: "agent \"reviewer\" failed: timed out".into(),
                    is_error: true,
                },
            ]),
        ],
        tools: vec![call_agent_tool()],
        ..Request::default()
    }
}

#[track_caller]
fn messages(body: &Value) -> &Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("`messages` should be an array: {body}"))
}
