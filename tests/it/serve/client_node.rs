//! The official `openai` package for Node against `axe serve` (design
//! §12.2), driven by client_node.mjs on the SDK's defaults (two retries of
//! a 5xx): the agents as models, a whole, a streamed and a parsed
//! completion, `models.retrieve`, a failing agent run once, a streamed
//! failure's status, a system message taken, tools refused,
//! and `responses.create`, whole and streamed (`POST /v1/responses`).

use serde_json::json;

use super::Server;
use super::clients::*;
use crate::common::*;

const SCRIPT: &str = "client_node.mjs";
const WHO: &str = "the openai package for Node";

#[test]
fn node_lists_the_agents_as_models() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "models", "");
    assert_eq!(r["ids"], json!(["helper", "lead"]), "{r}");
}

#[test]
fn node_gets_a_whole_completion_with_its_usage() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "complete", "helper");
    assert_eq!(r["content"], "Hello there.", "{r}");
    assert_eq!(r["model"], "helper");
    assert_eq!(r["finish"], "stop");
    assert!(r["id"].as_str().unwrap().starts_with("chatcmpl-"), "{r}");
    assert_eq!(r["usage"]["prompt_tokens"], 7);
    assert_eq!(r["usage"]["completion_tokens"], 3);
    assert_eq!(r["usage"]["total_tokens"], 10);
    assert_eq!(fake.only_request().first_user_text(), "Say hello.");
}

#[test]
fn node_gets_a_streamed_completion_in_chunks() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = paced(&["Hel", "lo", " you"], 5, 2);
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "stream", "helper");
    let pieces: Vec<&str> = r["pieces"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(pieces.concat(), "Hello you", "{r}");
    assert!(pieces.len() >= 2, "streamed in pieces: {r}");
    assert_eq!(r["finish"], "stop");
    assert_eq!(r["usage"]["total_tokens"], 7, "{r}");
}

#[test]
fn node_parses_a_structured_completion() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("{\"n\": 3}", 4, 2));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "parse", "helper");
    assert_eq!(r["parsed"], json!({"n": 3}), "{r}");
    let sent = fake.only_request().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["n"]),
        "zod's schema went to the provider: {sent}"
    );
}

#[test]
fn node_retrieves_a_model() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "retrieve", "helper");
    assert_eq!(r["id"], "helper", "{r}");
    assert_eq!(r["object"], "model", "{r}");
    let r = node(&m, SCRIPT, &server, "retrieve", "nobody");
    assert_eq!(r["status"], 404, "{r}");
    assert!(fake.requests().is_empty());
}

#[test]
fn node_runs_a_failing_agent_once() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(500, BOOM);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let r = node(&m, SCRIPT, &server, "complete", "helper");
    assert_eq!(r["status"], 424, "{r}");
    assert!(r["message"].as_str().unwrap().contains("boom"), "{r}");
    assert_ran_once(&fake, &r);
}

#[test]
fn node_gets_a_streamed_failures_status_from_one_run() {
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
fn node_sends_a_system_message() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Bonjour.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "system", "helper");
    assert_eq!(r["content"], "Bonjour.", "{r}");
    assert_system_after_agents(&fake, FRENCH);
}

#[test]
fn node_is_told_its_tools_are_refused() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("No tools used.", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "tools", "helper");
    assert_eq!(r["status"], 400, "{r}");
    assert_eq!(r["error"], "BadRequestError", "{r}");
    assert!(r["message"].as_str().unwrap().contains("tools"), "{r}");
    assert!(fake.requests().is_empty(), "nothing ran");
}

#[test]
fn node_creates_a_response() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "responses", "helper");
    assert_eq!(r["text"], "Hello there.", "{r}");
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["usage"]["input_tokens"], 7, "{r}");
    assert_eq!(r["usage"]["output_tokens"], 3, "{r}");
    assert_eq!(r["usage"]["total_tokens"], 10, "{r}");
    assert_eq!(fake.only_request().first_user_text(), "Say hello.");
    // The instructions are the client's, after the agent's own prompt.
    assert_system_after_agents(&fake, "Be brief.");
}

#[test]
fn node_streams_a_response() {
    let Some(m) = node_modules(WHO) else { return };
    let home = home();
    let fake = paced(&["Hel", "lo", " you"], 5, 2);
    let server = Server::start(&home, &fake, &[]);
    let r = node(&m, SCRIPT, &server, "responses_stream", "helper");
    let deltas: Vec<&str> = r["deltas"]
        .as_array()
        .unwrap_or_else(|| panic!("{r}"))
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(deltas.concat(), "Hello you", "{r}");
    assert_eq!(r["done"]["text"], "Hello you", "{r}");
    assert_eq!(r["done"]["usage"]["total_tokens"], 7, "{r}");
}
