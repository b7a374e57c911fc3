//! How each provider's failures are classified (design §4.7, §4.8): every
//! status, every 2xx that cannot be used, and every transport failure, run
//! on the three wire formats at once ([`each_cell`]), each with the error
//! body its API documents; the error's kind, exit code and text, and
//! whether the request was retried.

use super::{KEY, hello, ok_body, provider, soon};
use crate::common::*;

use std::time::{Duration, Instant};

use axe::error::{Code, Error};
use axe::provider::{ErrorKind, Provider, ProviderError, Wire};

// ---------------------------------------------------------------------------
// Each API's own error bodies.
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

const OPENAI_401: &str = include_str!("../../../fixtures/responses/openai_error_401.json");
const OPENAI_403: &str = include_str!("../../../fixtures/responses/openai_error_403.json");
const OPENAI_429: &str = include_str!("../../../fixtures/responses/openai_error_429.json");
const OPENAI_500: &str = include_str!("../../../fixtures/responses/openai_error_500.json");
const OPENAI_400: &str = include_str!("../../../fixtures/responses/openai_error_400.json");
const OPENAI_404: &str = include_str!("../../../fixtures/responses/openai_error_404.json");

const OLLAMA_401: &str = r#"{"error":"unauthorized"}"#;
const OLLAMA_403: &str = r#"{"error":"access to this model is forbidden"}"#;
const OLLAMA_429: &str = r#"{"error":"you have reached your hourly usage limit"}"#;
const OLLAMA_500: &str = r#"{"error":"llama runner process has terminated: exit status 2"}"#;
const OLLAMA_400: &str = r#"{"error":"json: cannot unmarshal number into Go struct field ChatRequest.messages of type string"}"#;
const OLLAMA_404: &str = r#"{"error":"model \"llama9\" not found, try pulling it first"}"#;

/// `kind`'s error body for `status`, and the part of its message the error
/// must keep.
fn api_error(kind: Wire, status: u16) -> (&'static str, &'static str) {
    match (kind, status) {
        (Wire::Anthropic, 401) => (ANTHROPIC_401, "invalid x-api-key"),
        (Wire::Anthropic, 403) => (ANTHROPIC_403, "does not have permission"),
        (Wire::Anthropic, 429) => (ANTHROPIC_429, "per-minute rate limit"),
        (Wire::Anthropic, 529) => (ANTHROPIC_OVERLOADED, "Overloaded"),
        (Wire::Anthropic, 400) => (ANTHROPIC_400, "text content blocks must be non-empty"),
        (Wire::Anthropic, 404) => (ANTHROPIC_404, "model: claude-nope-9"),
        (Wire::Anthropic, _) => (ANTHROPIC_500, "Internal server error"),
        (Wire::OpenAi, 401) => (OPENAI_401, "Incorrect API key provided"),
        (Wire::OpenAi, 403) => (OPENAI_403, "Country, region, or territory not supported"),
        (Wire::OpenAi, 429) => (OPENAI_429, "Rate limit reached for gpt-4o"),
        (Wire::OpenAi, 529) => (OPENAI_500, "The server had an error"),
        (Wire::OpenAi, 400) => (OPENAI_400, "Invalid value for 'temperature'"),
        (Wire::OpenAi, 404) => (OPENAI_404, "The model `gpt-nope` does not exist"),
        (Wire::OpenAi, _) => (
            OPENAI_500,
            "The server had an error while processing your request",
        ),
        (Wire::Ollama, 401) => (OLLAMA_401, "unauthorized"),
        (Wire::Ollama, 403) => (OLLAMA_403, "access to this model is forbidden"),
        (Wire::Ollama, 429) => (OLLAMA_429, "hourly usage limit"),
        (Wire::Ollama, 400) => (OLLAMA_400, "cannot unmarshal number"),
        (Wire::Ollama, 404) => (OLLAMA_404, "model \"llama9\" not found"),
        (Wire::Ollama, _) => (OLLAMA_500, "llama runner process has terminated"),
        (Wire::Bedrock | Wire::Responses, _) => unreachable!("not in Wire::ALL"),
    }
}

/// A complete text answer in `kind`'s wire format, cut in half.
fn truncated(kind: Wire) -> String {
    let full = match kind {
        Wire::Anthropic => anthropic_text("a complete answer", 10, 4),
        Wire::OpenAi => openai_text("a complete answer", 10, 4),
        Wire::Ollama => ollama_text("a complete answer", 10, 4),
        Wire::Bedrock => bedrock_text("a complete answer", 10, 4),
        Wire::Responses => responses_text("a complete answer", 10, 4),
    };
    full[..full.len() / 2].to_string()
}

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

/// Sends `hello()` to a server answering `reply`; the error (the send must fail).
#[track_caller]
fn failure(kind: Wire, reply: Reply) -> (ProviderError, FakeServer) {
    let server = FakeServer::start(vec![reply]);
    let err = match provider(kind, &server).send(&hello(), soon()) {
        Ok(resp) => panic!("expected an error, got {resp:?}"),
        Err(e) => e,
    };
    (err, server)
}

/// Checks an error's classification, exit code and text.
#[track_caller]
fn check(err: &ProviderError, provider: Wire, kind: ErrorKind, code: Code, text: &str) {
    let shown = err.to_string();
    assert_eq!(err.kind, kind, "{shown}");
    assert_eq!(err.wire, provider, "{shown}");
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
    provider: Wire,
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
fn invalid_response(provider: Wire, reply: Reply, detail: &str) {
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

/// `status` from every provider, with its API's error body: classified as
/// `kind` with exit `code`, keeping the provider's message.
#[track_caller]
fn status_case(status: u16, kind: ErrorKind, code: Code) {
    each_cell(&format!("HTTP {status}"), &Wire::ALL, |provider| {
        let (body, text) = api_error(provider, status);
        status_error(provider, status, body, kind, code, text);
    });
}

// ---------------------------------------------------------------------------
// Statuses.
// ---------------------------------------------------------------------------

#[test]
fn a_401_is_an_auth_error_with_the_providers_message() {
    status_case(401, ErrorKind::Auth, Code::Api);
}

#[test]
fn a_403_is_an_auth_error() {
    status_case(403, ErrorKind::Auth, Code::Api);
}

#[test]
fn a_429_is_a_rate_limit_error() {
    status_case(429, ErrorKind::RateLimit, Code::Api);
}

#[test]
fn a_529_is_overloaded() {
    status_case(529, ErrorKind::Overloaded, Code::Api);
}

#[test]
fn anthropic_500_with_an_overloaded_error_body_is_overloaded() {
    status_error(
        Wire::Anthropic,
        500,
        ANTHROPIC_OVERLOADED,
        ErrorKind::Overloaded,
        Code::Api,
        "Overloaded",
    );
}

#[test]
fn a_500_502_503_are_server_errors() {
    for status in [500, 502, 503] {
        status_case(status, ErrorKind::Server, Code::Api);
    }
}

#[test]
fn a_400_is_a_bad_request_with_the_general_exit_code() {
    status_case(400, ErrorKind::BadRequest, Code::General);
}

#[test]
fn a_404_model_not_found_is_a_bad_request() {
    status_case(404, ErrorKind::BadRequest, Code::General);
}

// ---------------------------------------------------------------------------
// A 2xx that cannot be used, and pages that are not the API's.
// ---------------------------------------------------------------------------

#[test]
fn an_html_page_with_200_is_an_invalid_response() {
    each_cell("HTML with 200", &Wire::ALL, |kind| {
        invalid_response(kind, html(200, LOGIN_PAGE), "HTML");
    });
}

#[test]
fn an_html_page_with_502_is_a_server_error_naming_the_page() {
    each_cell("HTML with 502", &Wire::ALL, |kind| {
        let (err, _server) = failure(kind, html(502, NGINX_502));
        check(&err, kind, ErrorKind::Server, Code::Api, "502 Bad Gateway");
        assert!(!err.message.contains('\n'), "one line: {:?}", err.message);
    });
}

#[test]
fn an_empty_200_is_an_invalid_response() {
    each_cell("empty 200", &Wire::ALL, |kind| {
        invalid_response(kind, Reply::Json(200, String::new()), "empty");
    });
}

#[test]
fn a_truncated_json_200_is_an_invalid_response() {
    each_cell("truncated 200", &Wire::ALL, |kind| {
        invalid_response(kind, Reply::Json(200, truncated(kind)), "truncated");
    });
}

#[test]
fn a_200_without_the_answer_is_an_invalid_response_naming_the_missing_field() {
    each_cell("200 without the answer", &Wire::ALL, |kind| {
        let (body, field) = match kind {
            Wire::Anthropic => (
                include_str!("../../../fixtures/responses/anthropic_missing_content.json"),
                "content",
            ),
            Wire::OpenAi => (
                include_str!("../../../fixtures/responses/openai_missing_choices.json"),
                "choices",
            ),
            Wire::Ollama => (
                include_str!("../../../fixtures/responses/ollama_missing_message.json"),
                "message",
            ),
            Wire::Bedrock | Wire::Responses => unreachable!("not in Wire::ALL"),
        };
        invalid_response(kind, Reply::Json(200, body.into()), field);
    });
}

#[test]
fn openai_200_with_empty_choices_is_an_invalid_response() {
    let body = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1722101600,"model":"gpt-4o","choices":[]}"#;
    invalid_response(Wire::OpenAi, Reply::Json(200, body.into()), "choices");
}

// ---------------------------------------------------------------------------
// Deadlines, connections, redirects, keys.
// ---------------------------------------------------------------------------

#[test]
fn an_unanswered_request_times_out_at_the_deadline() {
    each_cell("unanswered", &Wire::ALL, assert_times_out);
}

#[test]
fn a_passed_deadline_times_out_without_sending() {
    each_cell(
        "deadline passed",
        &Wire::ALL,
        assert_passed_deadline_sends_nothing,
    );
}

#[test]
fn a_refused_connection_is_a_network_error_and_ollama_asks_whether_it_runs() {
    each_cell("connection refused", &Wire::ALL, |kind| {
        let url = refused_url();
        let key = (kind != Wire::Ollama).then(|| KEY.to_string());
        let err = Provider::new(kind, url.clone(), key)
            .send(&hello(), soon())
            .expect_err("nothing listens");
        if kind == Wire::Ollama {
            let expected = format!("connection refused: is Ollama running? (expected at {url})");
            check(&err, kind, ErrorKind::Network, Code::Api, &expected);
            assert_eq!(err.message, expected);
            assert_eq!(err.to_string(), format!("ollama: {expected}"));
        } else {
            check(&err, kind, ErrorKind::Network, Code::Api, "");
        }
        assert_eq!(err.status, None);
    });
}

#[test]
fn a_redirect_is_not_followed() {
    each_cell("redirect", &Wire::ALL, |kind| {
        let path = match kind {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
            Wire::Ollama => "/api/chat",
            Wire::Bedrock | Wire::Responses => unreachable!("not in Wire::ALL"),
        };
        assert_redirect_not_followed(kind, path);
    });
}

#[test]
fn an_error_body_echoing_the_key_is_redacted() {
    each_cell("key echoed", &Wire::ALL, |kind| {
        let (key, body, text) = match kind {
            Wire::Anthropic => {
                let key = "sk-ant-echoed-4d2e9b17";
                let body = format!(
                    r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key: {key}"}}}}"#
                );
                (key, body, "invalid x-api-key")
            }
            Wire::OpenAi => (
                "sk-echoed-8c1f2b7a9e", // as echoed in the fixture
                include_str!("../../../fixtures/responses/openai_error_echoes_key.json")
                    .to_string(),
                "Incorrect API key provided",
            ),
            Wire::Ollama => {
                let key = "ollama-echoed-77aa31c5";
                let body = format!(r#"{{"error":"invalid bearer token {key}"}}"#);
                (key, body, "invalid bearer token")
            }
            Wire::Bedrock | Wire::Responses => unreachable!("not in Wire::ALL"),
        };
        let server = FakeServer::json(401, &body);
        let err = Provider::new(kind, server.url.clone(), Some(key.into()))
            .send(&hello(), soon())
            .expect_err("401");
        assert_redacted(&err, kind, key, text);
    });
}

// ---------------------------------------------------------------------------
// Shared bodies of the transport tests.
// ---------------------------------------------------------------------------

/// A server that never answers: the call ends at its ~1s deadline.
#[track_caller]
fn assert_times_out(kind: Wire) {
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
fn assert_passed_deadline_sends_nothing(kind: Wire) {
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
fn assert_redirect_not_followed(kind: Wire, path: &str) {
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
fn assert_redacted(err: &ProviderError, kind: Wire, key: &str, text: &str) {
    check(err, kind, ErrorKind::Auth, Code::Api, text);
    let shown = err.to_string();
    assert!(!shown.contains(key), "the key leaked: {shown}");
    assert!(!format!("{err:?}").contains(key), "the key leaked: {err:?}");
    assert!(shown.contains("[redacted]"), "{shown}");
}
