mod common;
use common::*;

// The provider layer driven over real HTTP: `Provider::send` against a fake
// provider on 127.0.0.1, for the Anthropic, OpenAI and Ollama wire formats.
// Request shapes, response parsing, tool calling (design §4.1–§4.3) and
// error classification (§4.7).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use axe::error::{Code, Error};
use axe::provider::{
    ErrorKind, Kind, Message, Provider, ProviderError, Request, Response, Tool, ToolCall,
    ToolParameter, ToolResult,
};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

/// The key every provider here is built with. It is registered for redaction
/// (process-wide), so it must not occur in any text a test expects to see.
const KEY: &str = "sk-test-providers-5f3a9c";

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

fn provider(kind: Kind, server: &FakeServer) -> Provider {
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
fn ok_body(kind: Kind) -> String {
    match kind {
        Kind::Anthropic => anthropic_text("ok", 3, 1),
        Kind::OpenAi => openai_text("ok", 3, 1),
        Kind::Ollama => ollama_text("ok", 3, 1),
    }
}

/// Sends `req` to a server answering 200 with `body`; the parsed response.
#[track_caller]
fn answer(kind: Kind, body: &str, req: &Request) -> Response {
    let server = FakeServer::json(200, body);
    let resp = provider(kind, &server)
        .send(req, soon())
        .unwrap_or_else(|e| panic!("send failed: {e}"));
    assert_eq!(server.requests().len(), 1);
    resp
}

/// Sends `req` to a server answering with a valid text reply; what it received.
#[track_caller]
fn sent(kind: Kind, req: &Request) -> Recorded {
    let server = FakeServer::json(200, &ok_body(kind));
    provider(kind, &server)
        .send(req, soon())
        .unwrap_or_else(|e| panic!("send failed: {e}"));
    server.only_request()
}

#[track_caller]
fn sent_body(kind: Kind, req: &Request) -> Value {
    sent(kind, req).json()
}

/// Sends `hello()` to a server answering `reply`; the error (the send must fail).
#[track_caller]
fn failure(kind: Kind, reply: Reply) -> (ProviderError, FakeServer) {
    let server = FakeServer::start(vec![reply]);
    let err = match provider(kind, &server).send(&hello(), soon()) {
        Ok(resp) => panic!("expected an error, got {resp:?}"),
        Err(e) => e,
    };
    (err, server)
}

/// Checks an error's classification, exit code and text.
#[track_caller]
fn check(err: &ProviderError, provider: Kind, kind: ErrorKind, code: Code, text: &str) {
    let shown = err.to_string();
    assert_eq!(err.kind, kind, "{shown}");
    assert_eq!(err.provider, provider, "{shown}");
    assert_eq!(Error::Provider(err.clone()).exit_code(), code, "{shown}");
    assert!(
        shown.starts_with(&format!("{}: ", provider.name())),
        "error text should name the provider: {shown:?}"
    );
    assert!(
        shown.contains(text),
        "expected {text:?} in the error text {shown:?}"
    );
}

/// A non-2xx answer with `body` as JSON, classified as `kind`, keeping `text`.
#[track_caller]
fn status_error(
    provider: Kind,
    status: u16,
    body: &str,
    kind: ErrorKind,
    code: Code,
    text: &str,
) -> ProviderError {
    let (err, server) = failure(provider, Reply::Json(status, body.into()));
    check(&err, provider, kind, code, text);
    assert_eq!(err.status, Some(status), "{err}");
    let sent = server.requests().len();
    if matches!(status, 400 | 401 | 403 | 404 | 422) {
        // design D12: transport retries are allowed for 429/5xx, never for these.
        assert_eq!(sent, 1, "HTTP {status} must not be retried");
    } else {
        assert!(sent >= 1, "the request was sent");
    }
    err
}

/// A 2xx answer that cannot be used: an API error `invalid response: <detail>`.
#[track_caller]
fn invalid_response(provider: Kind, reply: Reply, detail: &str) {
    let (err, _server) = failure(provider, reply);
    check(
        &err,
        provider,
        ErrorKind::InvalidResponse,
        Code::Api,
        detail,
    );
    assert!(
        err.message.starts_with("invalid response"),
        "message should start with \"invalid response\": {:?}",
        err.message
    );
    assert!(
        err.to_string()
            .starts_with(&format!("{}: invalid response", provider.name())),
        "{err}"
    );
    assert_eq!(err.status, Some(200), "{err}");
}

/// A URL where nothing listens: a port that was just bound and released.
fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let port = listener.local_addr().expect("local address").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
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

// ---------------------------------------------------------------------------
// Zero values (design §4.1).
// ---------------------------------------------------------------------------

#[test]
fn types_zero_value_tool_is_empty() {
    let tool = Tool::default();
    assert_eq!(tool.name, "");
    assert_eq!(tool.description, "");
    assert!(tool.parameters.is_empty());
    let param = ToolParameter::default();
    assert_eq!(param.kind, "");
    assert_eq!(param.description, "");
    assert!(!param.required);
    assert!(param.allowed.is_empty());
}

#[test]
fn types_zero_value_tool_call_is_empty() {
    let c = ToolCall::default();
    assert_eq!(c.id, "");
    assert_eq!(c.name, "");
    assert!(c.arguments.is_empty());
}

#[test]
fn types_zero_value_tool_result_is_empty_and_not_an_error() {
    let r = ToolResult::default();
    assert_eq!(r.call_id, "");
    assert_eq!(r.content, "");
    assert!(!r.is_error);
}

#[test]
fn types_default_request_sends_no_tools_key_to_any_provider() {
    let req = Request::default();
    assert!(req.tools.is_empty());
    assert_eq!(req.temperature, None);
    assert_eq!(req.max_tokens, None);
    for kind in Kind::ALL {
        let body = sent_body(kind, &req);
        assert!(body.get("tools").is_none(), "{kind:?}: {body}");
    }
}

#[test]
fn types_default_response_has_no_tool_calls() {
    let resp = Response::default();
    assert_eq!(resp.tool_calls.len(), 0);
    assert_eq!(resp.content, "");
    assert_eq!(resp.stop_reason, "");
    assert_eq!((resp.input_tokens, resp.output_tokens), (0, 0));
}

#[test]
fn types_message_carries_tool_calls() {
    let m = Message::Assistant {
        content: String::new(),
        tool_calls: vec![call("toolu_1", "call_agent", &[("agent", "reviewer")])],
    };
    let Message::Assistant { tool_calls, .. } = &m else {
        panic!("{m:?}");
    };
    assert_eq!(tool_calls.len(), 1);
    assert_eq!(tool_calls[0].id, "toolu_1");
    assert_eq!(tool_calls[0].name, "call_agent");
    assert_eq!(tool_calls[0].arguments["agent"], "reviewer");
    assert_eq!(Message::user("hi"), Message::User("hi".into()));
}

#[test]
fn types_message_carries_tool_results() {
    let m = Message::ToolResults(vec![ToolResult {
        call_id: "toolu_1".into(),
        content: "done".into(),
        is_error: true,
        ..ToolResult::default()
    }]);
    let Message::ToolResults(results) = &m else {
        panic!("{m:?}");
    };
    assert_eq!(results[0].call_id, "toolu_1");
    assert_eq!(results[0].content, "done");
    assert!(results[0].is_error);
}

// ---------------------------------------------------------------------------
// Anthropic: request shape.
// ---------------------------------------------------------------------------

#[test]
fn anthropic_posts_json_to_v1_messages_with_key_and_version_headers() {
    let r = sent(Kind::Anthropic, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("authorization"), None, "the key goes in x-api-key");
}

#[test]
fn anthropic_trailing_slash_in_base_url_is_not_doubled() {
    let server = FakeServer::json(200, &ok_body(Kind::Anthropic));
    Provider::new(
        Kind::Anthropic,
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
            },
            Message::user("second question"),
        ],
        ..Request::default()
    };
    let body = sent_body(Kind::Anthropic, &req);
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
    let body = sent_body(Kind::Anthropic, &req);
    assert_eq!(body["system"], "You are terse.");
    assert!(
        messages(&body).iter().all(|m| m["role"] != "system"),
        "no system role in Anthropic messages: {body}"
    );
}

#[test]
fn anthropic_omits_system_when_empty() {
    let body = sent_body(Kind::Anthropic, &hello());
    assert!(body.get("system").is_none(), "{body}");
}

#[test]
fn anthropic_sends_default_max_tokens_4096() {
    let body = sent_body(Kind::Anthropic, &hello());
    assert_eq!(body["max_tokens"], json!(4096));
}

#[test]
fn anthropic_sends_the_set_max_tokens() {
    let req = Request {
        max_tokens: Some(512),
        ..hello()
    };
    assert_eq!(sent_body(Kind::Anthropic, &req)["max_tokens"], json!(512));
}

#[test]
fn anthropic_omits_temperature_when_unset() {
    let body = sent_body(Kind::Anthropic, &hello());
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn anthropic_sends_zero_temperature_as_exactly_0() {
    let req = Request {
        temperature: Some(0.0),
        ..hello()
    };
    let r = sent(Kind::Anthropic, &req);
    assert_eq!(r.json()["temperature"].to_string(), "0", "{}", r.body);
}

#[test]
fn anthropic_sends_temperature_0_7() {
    let req = Request {
        temperature: Some(0.7),
        ..hello()
    };
    let body = sent_body(Kind::Anthropic, &req);
    assert_eq!(body["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// Anthropic: responses.
// ---------------------------------------------------------------------------

#[test]
fn anthropic_parses_text_usage_and_stop_reason() {
    let resp = answer(
        Kind::Anthropic,
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
        Kind::Anthropic,
        include_str!("../fixtures/responses/anthropic_empty_content.json"),
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
    let body = sent_body(Kind::Anthropic, &hello());
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn anthropic_sends_tools_with_input_schema() {
    let body = sent_body(Kind::Anthropic, &with_tools());
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
        Kind::Anthropic,
        include_str!("../fixtures/responses/anthropic_tool_use_with_text.json"),
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
        Kind::Anthropic,
        include_str!("../fixtures/responses/anthropic_tool_use_with_text.json"),
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
        Kind::Anthropic,
        include_str!("../fixtures/responses/anthropic_tool_use_only.json"),
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
        Kind::Anthropic,
        include_str!("../fixtures/responses/anthropic_tool_use_only.json"),
        &with_tools(),
    );
    assert_eq!(resp.stop_reason, "tool_use");
}

#[test]
fn anthropic_sends_tool_results_as_user_message_with_tool_result_blocks() {
    let r = sent(Kind::Anthropic, &tool_history("Let me delegate."));
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
    let body = sent_body(Kind::Anthropic, &tool_history("Let me delegate."));
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
    let body = sent_body(Kind::Anthropic, &tool_history(""));
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
    let body = sent_body(Kind::Anthropic, &tool_history("\n\n"));
    let blocks = messages(&body)[1]["content"]
        .as_array()
        .expect("assistant content blocks")
        .clone();
    assert_eq!(blocks.len(), 2, "{body}");
    assert!(blocks.iter().all(|b| b["type"] == "tool_use"), "{body}");
}

// ---------------------------------------------------------------------------
// Anthropic: errors.
// ---------------------------------------------------------------------------

const ANTHROPIC_401: &str =
    r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
const ANTHROPIC_403: &str = r#"{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}"#;
const ANTHROPIC_429: &str = r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#;
const ANTHROPIC_OVERLOADED: &str =
    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
const ANTHROPIC_500: &str =
    r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#;
const ANTHROPIC_400: &str = r#"{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}"#;
const ANTHROPIC_404: &str =
    r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope-9"}}"#;

#[test]
fn anthropic_401_is_auth_error_with_the_providers_message() {
    status_error(
        Kind::Anthropic,
        401,
        ANTHROPIC_401,
        ErrorKind::Auth,
        Code::Api,
        "invalid x-api-key",
    );
}

#[test]
fn anthropic_403_is_auth_error() {
    status_error(
        Kind::Anthropic,
        403,
        ANTHROPIC_403,
        ErrorKind::Auth,
        Code::Api,
        "does not have permission",
    );
}

#[test]
fn anthropic_429_is_rate_limit_error() {
    status_error(
        Kind::Anthropic,
        429,
        ANTHROPIC_429,
        ErrorKind::RateLimit,
        Code::Api,
        "per-minute rate limit",
    );
}

#[test]
fn anthropic_529_is_overloaded() {
    status_error(
        Kind::Anthropic,
        529,
        ANTHROPIC_OVERLOADED,
        ErrorKind::Overloaded,
        Code::Api,
        "Overloaded",
    );
}

#[test]
fn anthropic_500_with_overloaded_error_body_is_overloaded() {
    status_error(
        Kind::Anthropic,
        500,
        ANTHROPIC_OVERLOADED,
        ErrorKind::Overloaded,
        Code::Api,
        "Overloaded",
    );
}

#[test]
fn anthropic_500_502_503_are_server_errors() {
    for status in [500, 502, 503] {
        status_error(
            Kind::Anthropic,
            status,
            ANTHROPIC_500,
            ErrorKind::Server,
            Code::Api,
            "Internal server error",
        );
    }
}

#[test]
fn anthropic_400_is_bad_request_with_general_exit_code() {
    status_error(
        Kind::Anthropic,
        400,
        ANTHROPIC_400,
        ErrorKind::BadRequest,
        Code::General,
        "text content blocks must be non-empty",
    );
}

#[test]
fn anthropic_404_model_not_found_is_bad_request() {
    status_error(
        Kind::Anthropic,
        404,
        ANTHROPIC_404,
        ErrorKind::BadRequest,
        Code::General,
        "model: claude-nope-9",
    );
}

#[test]
fn anthropic_html_page_with_200_is_invalid_response() {
    invalid_response(Kind::Anthropic, html(200, LOGIN_PAGE), "HTML");
}

#[test]
fn anthropic_html_page_with_502_is_server_error_naming_the_page() {
    let (err, _server) = failure(Kind::Anthropic, html(502, NGINX_502));
    check(
        &err,
        Kind::Anthropic,
        ErrorKind::Server,
        Code::Api,
        "502 Bad Gateway",
    );
    assert!(!err.message.contains('\n'), "one line: {:?}", err.message);
}

#[test]
fn anthropic_empty_200_is_invalid_response() {
    invalid_response(Kind::Anthropic, Reply::Json(200, String::new()), "empty");
}

#[test]
fn anthropic_truncated_json_200_is_invalid_response() {
    let full = anthropic_text("a complete answer", 10, 4);
    let cut = full[..full.len() / 2].to_string();
    invalid_response(Kind::Anthropic, Reply::Json(200, cut), "truncated");
}

#[test]
fn anthropic_200_without_content_is_invalid_response() {
    invalid_response(
        Kind::Anthropic,
        Reply::Json(
            200,
            include_str!("../fixtures/responses/anthropic_missing_content.json").into(),
        ),
        "content",
    );
}

#[test]
fn anthropic_unanswered_request_times_out_at_the_deadline() {
    assert_times_out(Kind::Anthropic);
}

#[test]
fn anthropic_passed_deadline_times_out_without_sending() {
    assert_passed_deadline_sends_nothing(Kind::Anthropic);
}

#[test]
fn anthropic_connection_refused_is_network_error() {
    let url = refused_url();
    let err = Provider::new(Kind::Anthropic, url.clone(), Some(KEY.into()))
        .send(&hello(), soon())
        .expect_err("nothing listens");
    check(&err, Kind::Anthropic, ErrorKind::Network, Code::Api, "");
    assert_eq!(err.status, None);
}

#[test]
fn anthropic_redirect_is_not_followed() {
    assert_redirect_not_followed(Kind::Anthropic, "/v1/messages");
}

#[test]
fn anthropic_error_body_echoing_the_key_is_redacted() {
    let key = "sk-ant-echoed-4d2e9b17";
    let server = FakeServer::json(
        401,
        &format!(
            r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {key}"}}}}"#
        ),
    );
    let err = Provider::new(Kind::Anthropic, server.url.clone(), Some(key.into()))
        .send(&hello(), soon())
        .expect_err("401");
    assert_redacted(&err, Kind::Anthropic, key, "invalid x-api-key");
}

// ---------------------------------------------------------------------------
// OpenAI: request shape.
// ---------------------------------------------------------------------------

#[test]
fn openai_posts_json_to_v1_chat_completions_with_bearer_key() {
    let r = sent(Kind::OpenAi, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-api-key"), None);
}

#[test]
fn openai_base_url_ending_in_v1_gets_no_second_v1() {
    let server = FakeServer::json(200, &ok_body(Kind::OpenAi));
    Provider::new(Kind::OpenAi, format!("{}/v1", server.url), Some(KEY.into()))
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
            },
            Message::user("second question"),
        ],
        ..Request::default()
    };
    let body = sent_body(Kind::OpenAi, &req);
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
    let body = sent_body(Kind::OpenAi, &req);
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
    let body = sent_body(Kind::OpenAi, &hello());
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
}

#[test]
fn openai_omits_max_tokens_when_unset() {
    let body = sent_body(Kind::OpenAi, &hello());
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn openai_sends_max_tokens_when_set() {
    let req = Request {
        max_tokens: Some(300),
        ..hello()
    };
    assert_eq!(sent_body(Kind::OpenAi, &req)["max_tokens"], json!(300));
}

#[test]
fn openai_omits_temperature_when_unset() {
    let body = sent_body(Kind::OpenAi, &hello());
    assert!(body.get("temperature").is_none(), "{body}");
}

#[test]
fn openai_sends_zero_temperature_as_exactly_0() {
    let req = Request {
        temperature: Some(0.0),
        ..hello()
    };
    let r = sent(Kind::OpenAi, &req);
    assert_eq!(r.json()["temperature"].to_string(), "0", "{}", r.body);
}

#[test]
fn openai_sends_temperature_0_7() {
    let req = Request {
        temperature: Some(0.7),
        ..hello()
    };
    let body = sent_body(Kind::OpenAi, &req);
    assert_eq!(body["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// OpenAI: responses.
// ---------------------------------------------------------------------------

#[test]
fn openai_parses_text_usage_and_finish_reason() {
    let resp = answer(
        Kind::OpenAi,
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
    let resp = answer(Kind::OpenAi, &openai_text("", 20, 0), &hello());
    assert_eq!(resp.content, "");
    assert!(resp.tool_calls.is_empty());
}

#[test]
fn openai_null_content_without_tool_calls_is_an_empty_answer() {
    let resp = answer(
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_empty_content.json"),
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
    let body = sent_body(Kind::OpenAi, &hello());
    assert!(body.get("tools").is_none(), "{body}");
    assert!(body.get("tool_choice").is_none(), "{body}");
}

#[test]
fn openai_with_tools_sends_tool_choice_auto() {
    // OpenAI's default, sent explicitly: llama-cpp-python's server reads a
    // missing tool_choice as "none" and never calls a tool.
    let body = sent_body(Kind::OpenAi, &with_tools());
    assert_eq!(body["tool_choice"], "auto", "{body}");
}

#[test]
fn openai_sends_tools_as_functions_with_parameters() {
    let body = sent_body(Kind::OpenAi, &with_tools());
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
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_tool_calls.json"),
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
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(resp.content, "");
    assert_eq!(resp.tool_calls.len(), 2);
}

#[test]
fn openai_keeps_text_alongside_tool_calls() {
    let resp = answer(
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_tool_calls_with_text.json"),
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
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_invalid_tool_arguments.json"),
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
        Kind::OpenAi,
        include_str!("../fixtures/responses/openai_tool_calls.json"),
        &with_tools(),
    );
    assert_eq!(resp.stop_reason, "tool_calls");
}

#[test]
fn openai_sends_one_tool_message_per_result() {
    let r = sent(Kind::OpenAi, &tool_history("Let me delegate."));
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
    let body = sent_body(Kind::OpenAi, &tool_history("Let me delegate."));
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
    let r = sent(Kind::OpenAi, &tool_history(""));
    let body = r.json();
    let m = &messages(&body)[1];
    assert!(m["tool_calls"].is_array(), "{m}");
    assert_eq!(
        m["content"],
        json!(""),
        "content must be \"\", never null (design D15): {m}"
    );
}

// ---------------------------------------------------------------------------
// OpenAI: errors.
// ---------------------------------------------------------------------------

#[test]
fn openai_401_is_auth_error_with_the_providers_message() {
    status_error(
        Kind::OpenAi,
        401,
        include_str!("../fixtures/responses/openai_error_401.json"),
        ErrorKind::Auth,
        Code::Api,
        "Incorrect API key provided",
    );
}

#[test]
fn openai_403_is_auth_error() {
    status_error(
        Kind::OpenAi,
        403,
        include_str!("../fixtures/responses/openai_error_403.json"),
        ErrorKind::Auth,
        Code::Api,
        "Country, region, or territory not supported",
    );
}

#[test]
fn openai_429_is_rate_limit_error() {
    status_error(
        Kind::OpenAi,
        429,
        include_str!("../fixtures/responses/openai_error_429.json"),
        ErrorKind::RateLimit,
        Code::Api,
        "Rate limit reached for gpt-4o",
    );
}

#[test]
fn openai_529_is_overloaded() {
    status_error(
        Kind::OpenAi,
        529,
        include_str!("../fixtures/responses/openai_error_500.json"),
        ErrorKind::Overloaded,
        Code::Api,
        "The server had an error",
    );
}

#[test]
fn openai_500_502_503_are_server_errors() {
    for status in [500, 502, 503] {
        status_error(
            Kind::OpenAi,
            status,
            include_str!("../fixtures/responses/openai_error_500.json"),
            ErrorKind::Server,
            Code::Api,
            "The server had an error while processing your request",
        );
    }
}

#[test]
fn openai_400_is_bad_request_with_general_exit_code() {
    status_error(
        Kind::OpenAi,
        400,
        include_str!("../fixtures/responses/openai_error_400.json"),
        ErrorKind::BadRequest,
        Code::General,
        "Invalid value for 'temperature'",
    );
}

#[test]
fn openai_404_model_not_found_is_bad_request() {
    status_error(
        Kind::OpenAi,
        404,
        include_str!("../fixtures/responses/openai_error_404.json"),
        ErrorKind::BadRequest,
        Code::General,
        "The model `gpt-nope` does not exist",
    );
}

#[test]
fn openai_html_page_with_200_is_invalid_response() {
    invalid_response(Kind::OpenAi, html(200, LOGIN_PAGE), "HTML");
}

#[test]
fn openai_html_page_with_502_is_server_error_naming_the_page() {
    let (err, _server) = failure(Kind::OpenAi, html(502, NGINX_502));
    check(
        &err,
        Kind::OpenAi,
        ErrorKind::Server,
        Code::Api,
        "502 Bad Gateway",
    );
    assert!(!err.message.contains('\n'), "one line: {:?}", err.message);
}

#[test]
fn openai_empty_200_is_invalid_response() {
    invalid_response(Kind::OpenAi, Reply::Json(200, String::new()), "empty");
}

#[test]
fn openai_truncated_json_200_is_invalid_response() {
    let full = openai_text("a complete answer", 10, 4);
    let cut = full[..full.len() / 2].to_string();
    invalid_response(Kind::OpenAi, Reply::Json(200, cut), "truncated");
}

#[test]
fn openai_200_without_choices_is_invalid_response() {
    invalid_response(
        Kind::OpenAi,
        Reply::Json(
            200,
            include_str!("../fixtures/responses/openai_missing_choices.json").into(),
        ),
        "choices",
    );
}

#[test]
fn openai_200_with_empty_choices_is_invalid_response() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1722101600,"model":"gpt-4o","choices":[]}"#;
    invalid_response(Kind::OpenAi, Reply::Json(200, body.into()), "choices");
}

#[test]
fn openai_unanswered_request_times_out_at_the_deadline() {
    assert_times_out(Kind::OpenAi);
}

#[test]
fn openai_passed_deadline_times_out_without_sending() {
    assert_passed_deadline_sends_nothing(Kind::OpenAi);
}

#[test]
fn openai_connection_refused_is_network_error() {
    let url = refused_url();
    let err = Provider::new(Kind::OpenAi, url.clone(), Some(KEY.into()))
        .send(&hello(), soon())
        .expect_err("nothing listens");
    check(&err, Kind::OpenAi, ErrorKind::Network, Code::Api, "");
    assert_eq!(err.status, None);
}

#[test]
fn openai_redirect_is_not_followed() {
    assert_redirect_not_followed(Kind::OpenAi, "/v1/chat/completions");
}

#[test]
fn openai_error_body_echoing_the_key_is_redacted() {
    let key = "sk-echoed-8c1f2b7a9e"; // as echoed in the fixture
    let server = FakeServer::json(
        401,
        include_str!("../fixtures/responses/openai_error_echoes_key.json"),
    );
    let err = Provider::new(Kind::OpenAi, server.url.clone(), Some(key.into()))
        .send(&hello(), soon())
        .expect_err("401");
    assert_redacted(&err, Kind::OpenAi, key, "Incorrect API key provided");
}

// ---------------------------------------------------------------------------
// Ollama: request shape.
// ---------------------------------------------------------------------------

#[test]
fn ollama_posts_json_to_api_chat_with_stream_false() {
    let r = sent(Kind::Ollama, &hello());
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/api/chat");
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["stream"], json!(false));
}

#[test]
fn ollama_sends_a_set_key_as_bearer() {
    let r = sent(Kind::Ollama, &hello());
    assert_eq!(r.header("authorization"), Some(&*format!("Bearer {KEY}")));
}

#[test]
fn ollama_without_key_sends_no_authorization_header() {
    let server = FakeServer::json(200, &ok_body(Kind::Ollama));
    Provider::new(Kind::Ollama, server.url.clone(), None)
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
            },
            Message::user("second question"),
        ],
        ..Request::default()
    };
    let body = sent_body(Kind::Ollama, &req);
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
    let body = sent_body(Kind::Ollama, &req);
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
    let body = sent_body(Kind::Ollama, &hello());
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
    let body = sent_body(Kind::Ollama, &req);
    assert_eq!(body["options"]["num_predict"], json!(256), "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
}

#[test]
fn ollama_omits_num_predict_and_temperature_when_unset() {
    let body = sent_body(Kind::Ollama, &hello());
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
    let r = sent(Kind::Ollama, &req);
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
    let body = sent_body(Kind::Ollama, &req);
    assert_eq!(body["options"]["temperature"].as_f64(), Some(0.7), "{body}");
}

// ---------------------------------------------------------------------------
// Ollama: responses.
// ---------------------------------------------------------------------------

#[test]
fn ollama_parses_text_eval_counts_and_done_reason() {
    let resp = answer(
        Kind::Ollama,
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
        Kind::Ollama,
        include_str!("../fixtures/responses/ollama_empty_content.json"),
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
    let body = sent_body(Kind::Ollama, &hello());
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn ollama_sends_tools_as_functions_with_parameters() {
    let body = sent_body(Kind::Ollama, &with_tools());
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
        Kind::Ollama,
        include_str!("../fixtures/responses/ollama_tool_calls.json"),
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
        Kind::Ollama,
        &ollama_text("I cannot call tools, but here is my answer.", 30, 12),
        &with_tools(),
    );
    assert!(resp.tool_calls.is_empty());
    assert_eq!(resp.content, "I cannot call tools, but here is my answer.");
}

#[test]
fn ollama_sends_one_tool_message_per_result() {
    let r = sent(Kind::Ollama, &tool_history(""));
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
    let body = sent_body(Kind::Ollama, &tool_history(""));
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

// ---------------------------------------------------------------------------
// Ollama: errors.
// ---------------------------------------------------------------------------

const OLLAMA_401: &str = r#"{"error":"unauthorized"}"#;
const OLLAMA_403: &str = r#"{"error":"access to this model is forbidden"}"#;
const OLLAMA_429: &str = r#"{"error":"you have reached your hourly usage limit"}"#;
const OLLAMA_500: &str = r#"{"error":"llama runner process has terminated: exit status 2"}"#;
const OLLAMA_400: &str = r#"{"error":"json: cannot unmarshal number into Go struct field ChatRequest.messages of type string"}"#;
const OLLAMA_404: &str = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;

#[test]
fn ollama_401_is_auth_error_with_the_providers_message() {
    status_error(
        Kind::Ollama,
        401,
        OLLAMA_401,
        ErrorKind::Auth,
        Code::Api,
        "unauthorized",
    );
}

#[test]
fn ollama_403_is_auth_error() {
    status_error(
        Kind::Ollama,
        403,
        OLLAMA_403,
        ErrorKind::Auth,
        Code::Api,
        "access to this model is forbidden",
    );
}

#[test]
fn ollama_429_is_rate_limit_error() {
    status_error(
        Kind::Ollama,
        429,
        OLLAMA_429,
        ErrorKind::RateLimit,
        Code::Api,
        "hourly usage limit",
    );
}

#[test]
fn ollama_529_is_overloaded() {
    status_error(
        Kind::Ollama,
        529,
        OLLAMA_500,
        ErrorKind::Overloaded,
        Code::Api,
        "llama runner process has terminated",
    );
}

#[test]
fn ollama_500_502_503_are_server_errors() {
    for status in [500, 502, 503] {
        status_error(
            Kind::Ollama,
            status,
            OLLAMA_500,
            ErrorKind::Server,
            Code::Api,
            "llama runner process has terminated",
        );
    }
}

#[test]
fn ollama_400_is_bad_request_with_general_exit_code() {
    status_error(
        Kind::Ollama,
        400,
        OLLAMA_400,
        ErrorKind::BadRequest,
        Code::General,
        "cannot unmarshal number",
    );
}

#[test]
fn ollama_404_model_not_found_is_bad_request() {
    status_error(
        Kind::Ollama,
        404,
        OLLAMA_404,
        ErrorKind::BadRequest,
        Code::General,
        "model \"llama9\" not found",
    );
}

#[test]
fn ollama_html_page_with_200_is_invalid_response() {
    invalid_response(Kind::Ollama, html(200, LOGIN_PAGE), "HTML");
}

#[test]
fn ollama_html_page_with_502_is_server_error_naming_the_page() {
    let (err, _server) = failure(Kind::Ollama, html(502, NGINX_502));
    check(
        &err,
        Kind::Ollama,
        ErrorKind::Server,
        Code::Api,
        "502 Bad Gateway",
    );
    assert!(!err.message.contains('\n'), "one line: {:?}", err.message);
}

#[test]
fn ollama_empty_200_is_invalid_response() {
    invalid_response(Kind::Ollama, Reply::Json(200, String::new()), "empty");
}

#[test]
fn ollama_truncated_json_200_is_invalid_response() {
    let full = ollama_text("a complete answer", 10, 4);
    let cut = full[..full.len() / 2].to_string();
    invalid_response(Kind::Ollama, Reply::Json(200, cut), "truncated");
}

#[test]
fn ollama_200_without_message_is_invalid_response() {
    invalid_response(
        Kind::Ollama,
        Reply::Json(
            200,
            include_str!("../fixtures/responses/ollama_missing_message.json").into(),
        ),
        "message",
    );
}

#[test]
fn ollama_unanswered_request_times_out_at_the_deadline() {
    assert_times_out(Kind::Ollama);
}

#[test]
fn ollama_passed_deadline_times_out_without_sending() {
    assert_passed_deadline_sends_nothing(Kind::Ollama);
}

#[test]
fn ollama_connection_refused_asks_whether_ollama_is_running() {
    let url = refused_url();
    let err = Provider::new(Kind::Ollama, url.clone(), None)
        .send(&hello(), soon())
        .expect_err("nothing listens");
    let expected = format!("connection refused: is Ollama running? (expected at {url})");
    check(&err, Kind::Ollama, ErrorKind::Network, Code::Api, &expected);
    assert_eq!(err.message, expected);
    assert_eq!(err.to_string(), format!("ollama: {expected}"));
    assert_eq!(err.status, None);
}

#[test]
fn ollama_redirect_is_not_followed() {
    assert_redirect_not_followed(Kind::Ollama, "/api/chat");
}

#[test]
fn ollama_error_body_echoing_the_key_is_redacted() {
    let key = "ollama-echoed-77aa31c5";
    let server = FakeServer::json(401, &format!(r#"{{"error":"invalid bearer token {key}"}}"#));
    let err = Provider::new(Kind::Ollama, server.url.clone(), Some(key.into()))
        .send(&hello(), soon())
        .expect_err("401");
    assert_redacted(&err, Kind::Ollama, key, "invalid bearer token");
}

// ---------------------------------------------------------------------------
// Shared bodies of the per-provider transport tests.
// ---------------------------------------------------------------------------

/// A server that never answers: the call ends at its ~1s deadline.
#[track_caller]
fn assert_times_out(kind: Kind) {
    let server = FakeServer::start(vec![Reply::Hang]);
    let started = Instant::now();
    let result = provider(kind, &server).send(&hello(), started + Duration::from_secs(1));
    let elapsed = started.elapsed();
    let err = result.expect_err("a server that never answers");
    check(&err, kind, ErrorKind::Timeout, Code::Api, "");
    assert_eq!(err.status, None);
    assert!(
        elapsed < Duration::from_secs(5),
        "send must return near its deadline, took {elapsed:?}"
    );
    assert!(
        elapsed >= Duration::from_millis(900),
        "send gave up before its deadline, after {elapsed:?}"
    );
    assert_eq!(server.requests().len(), 1, "the request was sent");
}

/// A deadline in the past: a timeout, and nothing is sent.
#[track_caller]
fn assert_passed_deadline_sends_nothing(kind: Kind) {
    let server = FakeServer::json(200, &ok_body(kind));
    let past = Instant::now()
        .checked_sub(Duration::from_millis(50))
        .unwrap_or_else(Instant::now);
    let err = provider(kind, &server)
        .send(&hello(), past)
        .expect_err("no time left");
    check(&err, kind, ErrorKind::Timeout, Code::Api, "");
    assert!(
        server.requests().is_empty(),
        "no request may reach the server: {:?}",
        server.requests()
    );
}

/// A 301 to another (working) server: not followed, and an error.
#[track_caller]
fn assert_redirect_not_followed(kind: Kind, path: &str) {
    let target = FakeServer::json(200, &ok_body(kind));
    let location = format!("{}{}", target.url, path);
    let server = FakeServer::start(vec![Reply::Raw {
        status: 301,
        content_type: "text/html".into(),
        body: "<html><head><title>301 Moved Permanently</title></head></html>".into(),
        headers: vec![("Location".into(), location.clone())],
    }]);
    let result = provider(kind, &server).send(&hello(), soon());
    assert_eq!(server.requests().len(), 1, "exactly one request");
    assert!(
        target.requests().is_empty(),
        "the redirect was followed: {:?}",
        target.requests()
    );
    let err = result.expect_err("a redirect is an error");
    check(&err, kind, ErrorKind::Network, Code::Api, &location);
    assert_eq!(err.status, Some(301));
}

/// The provider's error text is shown, with the key replaced.
#[track_caller]
fn assert_redacted(err: &ProviderError, kind: Kind, key: &str, text: &str) {
    check(err, kind, ErrorKind::Auth, Code::Api, text);
    let shown = err.to_string();
    assert!(!shown.contains(key), "the key leaked: {shown}");
    assert!(!format!("{err:?}").contains(key), "the key leaked: {err:?}");
    assert!(shown.contains("[redacted]"), "{shown}");
}
