//! The Vercel AI SDK (`ai` and `@ai-sdk/openai`) against `axe serve`
//! (design §12.2), driven by client_ai.mjs on the SDK's defaults (two
//! retries of a 5xx): `generateText`, `streamText` and `generateObject` on
//! `provider.chat(model)`; a failing agent run once (answered 424, which
//! the SDK does not retry), a streamed failure's status, a system message
//! taken, tools refused; and the SDK's default `provider(model)`, which
//! posts to /v1/responses, whole and streamed.

use serde_json::json;

use super::Server;
use super::clients::*;
use crate::common::*;

const SCRIPT: &str = "client_ai.mjs";
const WHO: &str = "the Vercel AI SDK";

#[test]
fn ai_sdk_generates_text_with_its_usage() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "text", "helper");
    assert_eq!(r["text"], "Hello there.", "{r}");
    assert_eq!(r["finish"], "stop", "{r}");
    assert_eq!(r["usage"]["inputTokens"], 7, "{r}");
    assert_eq!(r["usage"]["outputTokens"], 3, "{r}");
    assert_eq!(r["usage"]["totalTokens"], 10, "{r}");
    assert_eq!(fake.only_request().first_user_text(), "Say hello.");
}

#[test]
fn ai_sdk_streams_text_in_chunks() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = paced(&["Hel", "lo", " you"], 5, 2);
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "stream", "helper");
    let pieces = r["pieces"].as_array().unwrap_or_else(|| panic!("{r}"));
    let text: String = pieces.iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(text, "Hello you", "{r}");
    assert!(pieces.len() >= 2, "streamed in pieces: {r}");
    assert_eq!(r["finish"], "stop", "{r}");
    assert_eq!(r["usage"]["totalTokens"], 7, "{r}");
}

#[test]
fn ai_sdk_generates_an_object() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("{\"n\": 3}", 4, 2));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "object", "helper");
    assert_eq!(r["object"], json!({"n": 3}), "{r}");
    let sent = fake.only_request().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["n"]),
        "zod's schema went to the provider: {sent}"
    );
}

// The AI SDK retries 408, 409, 429 and every 5xx whatever the answer's
// `x-should-retry` says (@ai-sdk/provider's APICallError.isRetryable), and
// a stream's error event before any text as a 500 (@ai-sdk/openai's
// getStatusCode): a failed run is 424, a status outside those, and the
// stream's head waits for its first text, so that the 424 is its status.
#[test]
fn ai_sdk_runs_a_failing_agent_once() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(500, BOOM);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let r = node(&m, SCRIPT, &server, "text", "helper");
    assert_eq!(r["status"], 424, "{r}");
    assert!(r["message"].as_str().unwrap().contains("boom"), "{r}");
    assert_ran_once(&fake, &r);
}

#[test]
fn ai_sdk_gets_a_streamed_failures_status_from_one_run() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(500, BOOM);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let r = node(&m, SCRIPT, &server, "stream", "helper");
    // Before any text: the run's own status (as the whole request's), not
    // a 200 and an error event.
    assert_eq!(r["status"], 424, "{r}");
    assert!(r["message"].as_str().unwrap().contains("boom"), "{r}");
    assert_ran_once(&fake, &r);
}

#[test]
fn ai_sdk_sends_a_system_message() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Bonjour.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "system", "helper");
    assert_eq!(r["text"], "Bonjour.", "{r}");
    assert_system_after_agents(&fake, FRENCH);
}

#[test]
fn ai_sdk_is_told_its_tools_are_refused() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("No tools used.", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "tools", "helper");
    assert_eq!(r["status"], 400, "{r}");
    assert!(r["message"].as_str().unwrap().contains("tools"), "{r}");
    assert!(fake.requests().is_empty(), "nothing ran");
}

#[test]
fn ai_sdk_default_provider_generates_text() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "responses", "helper");
    assert_eq!(r["text"], "Hello there.", "{r}");
    assert_eq!(r["finish"], "stop", "{r}");
    assert_eq!(r["usage"]["inputTokens"], 7, "{r}");
    assert_eq!(r["usage"]["outputTokens"], 3, "{r}");
    assert_eq!(fake.only_request().first_user_text(), "Say hello.");
    assert_system_after_agents(&fake, "Be brief.");
}

#[test]
fn ai_sdk_default_provider_streams_text() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = paced(&["Hel", "lo", " you"], 5, 2);
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "responses_stream", "helper");
    let pieces = r["pieces"].as_array().unwrap_or_else(|| panic!("{r}"));
    let text: String = pieces.iter().map(|p| p.as_str().unwrap()).collect();
    assert_eq!(text, "Hello you", "{r}");
    assert_eq!(r["usage"]["totalTokens"], 7, "{r}");
}
