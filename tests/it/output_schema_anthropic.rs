//! What Anthropic's JSON outputs are sent for an agent's `[output]` schema
//! (design D22): objects closed, what the API does not take loosened into
//! `anyOf` or moved into descriptions, never a schema stricter than the
//! user's; a schema the API refuses is dropped once with a warning, and axe
//! checks and repairs the answer either way.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::common::*;

const MODEL: &str = "anthropic/claude-haiku-4-5";

/// A server that gives the `answers` in turn, the last one from then on.
fn answering(answers: &'static [&'static str]) -> FakeServer {
    let n = Arc::new(AtomicUsize::new(0));
    FakeServer::route(move |_| {
        let i = n.fetch_add(1, Ordering::SeqCst).min(answers.len() - 1);
        Reply::Json(200, anthropic_text(answers[i], 1, 1))
    })
}

fn shaped(schema: &str) -> Home {
    let home = Home::new();
    home.named_agent("shape", MODEL, &format!("[output]\nschema = {schema}\n"));
    home
}

fn schema_sent(server: &FakeServer, i: usize) -> Value {
    server.requests()[i].json()["output_config"]["format"]["schema"].clone()
}

#[test]
fn objects_are_sent_closed() {
    let server = answering(&["{\"severity\": \"high\"}"]);
    let home = shaped(
        "{ type = \"object\", properties = { severity = { type = \"string\", enum = [\"low\", \"high\"] } }, required = [\"severity\"] }",
    );
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"severity\":\"high\"}\n");
    assert_eq!(
        server.requests()[0].json()["output_config"],
        json!({"format": {"type": "json_schema", "schema": {
            "type": "object",
            "properties": {"severity": {"type": "string", "enum": ["low", "high"]}},
            "required": ["severity"],
            "additionalProperties": false
        }}})
    );
}

#[test]
fn a_map_shaped_schema_is_not_sent_closed_and_axe_checks_it_alone() {
    // Closed, this would allow only {}, which breaks minProperties: the
    // schema is left out, and the answer checked and repaired by axe.
    let server = answering(&["{}", "{\"disk\": 3}"]);
    let home = shaped(
        "{ type = \"object\", additionalProperties = { type = \"integer\" }, minProperties = 1 }",
    );
    let out = home.run_on(
        &[(P::Anthropic, &server)],
        &["run", "shape", "--verbose", "-p", "x"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"disk\":3}\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one repair");
    for r in &requests {
        assert!(r.json().get("output_config").is_none(), "{}", r.body);
    }
    assert!(
        stderr(&out).contains(
            "[output] The output schema is not sent to anthropic (the schema's root: additionalProperties allows keys it does not list); axe checks the answer and asks for repairs\n"
        ),
        "{}",
        stderr(&out)
    );

    // A map anywhere inside is the same; without --verbose nothing is said.
    let server = answering(&["{\"counts\": {\"disk\": 3}}"]);
    let home = shaped(
        "{ type = \"object\", properties = { counts = { type = \"object\", additionalProperties = { type = \"integer\" } } }, required = [\"counts\"] }",
    );
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert!(server.requests()[0].json().get("output_config").is_none());
}

#[test]
fn what_the_api_does_not_take_is_loosened_the_way_anthropics_sdk_does_it() {
    let server = answering(&["{\"kind\": \"b\", \"ip\": \"10.0.0.1\", \"zip\": \"75001\"}"]);
    let home = shaped(
        "{ title = \"Place\", type = \"object\", properties = { kind = { oneOf = [{ const = \"a\" }, { const = \"b\" }] }, ip = { type = \"string\", format = \"ipv4\" }, zip = { type = \"string\", format = \"postal-code\", default = \"00000\", description = \"Where\" } }, required = [\"kind\", \"ip\", \"zip\"] }",
    );
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        schema_sent(&server, 0),
        json!({
            "title": "Place",
            "type": "object",
            "properties": {
                "kind": {"anyOf": [{"const": "a"}, {"const": "b"}]},
                "ip": {"type": "string", "format": "ipv4"},
                "zip": {"type": "string", "description": "Where\n\n{default: 00000, format: postal-code}"}
            },
            "required": ["kind", "ip", "zip"],
            "additionalProperties": false
        })
    );
}

#[test]
fn bounds_the_api_refuses_go_into_the_description_and_axe_checks_them() {
    // The first answer breaks maxLength, which the API was told only in
    // words.
    let server = answering(&[
        "{\"name\": \"much too long\", \"n\": 2, \"tags\": []}",
        "{\"name\": \"ok\", \"n\": 2, \"tags\": []}",
    ]);
    let home = shaped(
        "{ type = \"object\", properties = { name = { type = \"string\", maxLength = 5 }, n = { type = \"integer\", minimum = 1 }, tags = { type = \"array\", items = { type = \"string\" }, maxItems = 3, minItems = 0 } }, required = [\"name\", \"n\", \"tags\"] }",
    );
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"n\":2,\"name\":\"ok\",\"tags\":[]}\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        schema_sent(&server, 0),
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "{maxLength: 5}"},
                "n": {"type": "integer", "description": "{minimum: 1}"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 0, "description": "{maxItems: 3}"}
            },
            "required": ["name", "n", "tags"],
            "additionalProperties": false
        })
    );
    let ask = requests[1].messages().last().unwrap()["content"].to_string();
    assert!(
        ask.contains("at /name: 13 characters, more than 5"),
        "{ask}"
    );
}

#[test]
fn a_schema_the_api_refuses_is_dropped_once_with_a_warning_and_the_answer_still_repaired() {
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    let server = FakeServer::route(move |req| {
        if req.json().get("output_config").is_some() {
            return Reply::Json(
                400,
                json!({"type": "error", "error": {"type": "invalid_request_error", "message": "output_config.format.schema: For 'array' type, 'minItems' values other than 0 or 1 are not supported (got: [2])"}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}).to_string(),
            );
        }
        let answer = match seen.fetch_add(1, Ordering::SeqCst) {
            0 => "{\"tags\": \"one\"}",
            _ => "{\"tags\": [\"one\", \"two\"]}",
        };
        Reply::Json(200, anthropic_text(answer, 1, 1))
    });
    let home = shaped(
        "{ type = \"object\", properties = { tags = { type = \"array\", items = { type = \"string\" } } }, required = [\"tags\"] }",
    );
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "{\"tags\":[\"one\",\"two\"]}\n");
    assert_eq!(
        stderr(&out),
        "axe: warning: anthropic: model \"claude-haiku-4-5\" refused the output schema (output_config.format.schema: For 'array' type, 'minItems' values other than 0 or 1 are not supported (got: [2])); it was sent without it, and axe checks the answer itself\n"
    );
    let sent: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.json().get("output_config").is_some())
        .collect();
    assert_eq!(
        sent,
        [true, false, false],
        "refused, sent without, then the repair turn without it at once"
    );
}

#[test]
fn a_bad_request_about_something_else_keeps_the_schema_and_fails() {
    let server = FakeServer::json(
        400,
        &json!({"type": "error", "error": {"type": "invalid_request_error", "message": "messages: text content blocks must be non-empty"}}).to_string(),
    );
    let home = shaped("{ type = \"string\" }");
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "shape", "-p", "x"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(server.requests().len(), 1);
}
