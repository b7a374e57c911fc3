//! The Go original's 1.8 keys, written as its docs show them: `[params]
//! response_format` (a string, or a `json_schema` table) asked of each
//! provider and checked as axe's output schema (design D22), and `--json`'s
//! `refused` (its heuristic over the answer's words).

use serde_json::{Value, json};

use crate::common::*;

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out)).unwrap()
}

#[test]
fn json_object_goes_to_openai_as_its_json_mode() {
    let server = FakeServer::json(200, &openai_text("{\"ok\": true}", 10, 5));
    let home = Home::new();
    home.named_agent(
        "j",
        "openai/gpt-4o",
        "[params]\nresponse_format = \"json_object\"\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "j", "--json", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.requests()[0].json();
    assert_eq!(body["response_format"], json!({"type": "json_object"}));
    assert_eq!(json_of(&out)["output"], json!({"ok": true}));
}

#[test]
fn json_object_is_checked_on_any_provider() {
    // Ollama is asked with `format`; an answer that is no object is
    // repaired, then the run fails as any schema's does (exit 5).
    let server = FakeServer::json(200, &ollama_text("not json", 10, 5));
    let home = Home::new();
    home.named_agent(
        "j",
        "ollama/llama3.1",
        "[params]\nresponse_format = \"json_object\"\n",
    );
    let out = home.run_on(&[(P::Ollama, &server)], &["run", "j", "-p", "x"]);
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert_eq!(
        server.requests()[0].json()["format"],
        json!({"type": "object"})
    );
}

#[test]
fn a_json_schema_table_is_the_output_schema_without_its_name() {
    let server = FakeServer::json(200, &openai_text("{\"n\": 3}", 10, 5));
    let home = Home::new();
    home.named_agent(
        "s",
        "openai/gpt-4o",
        "[params.response_format]\ntype = \"json_schema\"\n[params.response_format.schema]\n\
         name = \"count\"\ntype = \"object\"\nrequired = [\"n\"]\nproperties = { n = { type = \"integer\" } }\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "s", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let schema =
        json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
    assert_eq!(
        server.requests()[0].json()["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}})
    );
}

#[test]
fn text_sends_nothing_and_a_bad_format_is_exit_2() {
    let server = FakeServer::json(200, &openai_text("plain", 10, 5));
    let home = Home::new();
    home.named_agent(
        "t",
        "openai/gpt-4o",
        "[params]\nresponse_format = \"text\"\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "t", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(server.requests()[0].json().get("response_format"), None);
    for (extra, says) in [
        (
            "[params]\nresponse_format = \"yaml\"\n",
            "unknown type \"yaml\"",
        ),
        (
            "[params.response_format]\ntype = \"json_schema\"\n",
            "json_schema needs a [params.response_format.schema] table",
        ),
        (
            "[params]\nresponse_format = \"json_object\"\n[output]\nschema = { type = \"object\" }\n",
            "not both",
        ),
    ] {
        home.named_agent("b", "openai/gpt-4o", extra);
        let out = home.run_on(&[(P::OpenAi, &server)], &["run", "b", "-p", "x"]);
        assert_eq!(code(&out), 2, "{extra}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{extra}: {}", stderr(&out));
    }
    assert_eq!(server.requests().len(), 1, "a bad file sends nothing");
}

#[test]
fn refused_is_true_for_an_answer_that_declines_and_false_otherwise() {
    let home = Home::new();
    home.named_agent("a", "anthropic/claude-sonnet-4-5", "");
    for (answer, refused) in [
        ("I’m unable to help with that request.", true),
        ("As an AI, I cannot give legal advice.", true),
        ("Here is the summary.", false),
    ] {
        let server = FakeServer::json(200, &anthropic_text(answer, 10, 5));
        let out = home.run_on(
            &[(P::Anthropic, &server)],
            &["run", "a", "--json", "-p", "x"],
        );
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(json_of(&out)["refused"], json!(refused), "{answer}");
    }
}
