//! Answers with a shape (design D22): an agent's `[output]` schema asked of
//! each provider with its own mechanism, the answer checked by axe whatever
//! the server promised, repaired at most `max_repairs` times, then exit 5;
//! what stdout, `--json` and a parent get.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use crate::common::*;

/// The example: a severity and its reasons.
const TRIAGE: &str = "[output]\nschema = { type = \"object\", properties = { severity = { type = \"string\", enum = [\"low\", \"high\"] }, reasons = { type = \"array\", items = { type = \"string\" } } }, required = [\"severity\", \"reasons\"] }\n";

fn triage_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": ["low", "high"]},
            "reasons": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["severity", "reasons"]
    })
}

const GOOD: &str = "{\n  \"severity\": \"high\",\n  \"reasons\": [\"disk full\"]\n}";
const COMPACT: &str = "{\"reasons\":[\"disk full\"],\"severity\":\"high\"}";

fn home_with(name: &str, model: &str, extra: &str) -> Home {
    let home = Home::new();
    home.named_agent(name, model, extra);
    home
}

#[test]
fn openai_gets_response_format_and_stdout_is_the_compact_json() {
    let server = FakeServer::json(200, &openai_text(GOOD, 10, 5));
    let home = home_with("triage", "openai/gpt-4o", TRIAGE);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "triage", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{COMPACT}\n"));
    let body = server.requests()[0].json();
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": triage_schema()}})
    );
}

#[test]
fn json_output_has_the_text_in_content_and_the_value_in_output() {
    let server = FakeServer::json(200, &openai_text(GOOD, 10, 5));
    let home = home_with("triage", "openai/gpt-4o", TRIAGE);
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "triage", "--json", "-p", "x"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], COMPACT);
    assert_eq!(
        v["output"],
        json!({"severity": "high", "reasons": ["disk full"]})
    );
}

#[test]
fn ollama_gets_format_but_not_on_a_request_that_offers_tools() {
    let server = FakeServer::json(200, &ollama_text(GOOD, 10, 5));
    let home = home_with("triage", "ollama/qwen3", TRIAGE);
    let out = home.run_on(&[(P::Ollama, &server)], &["run", "triage", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{COMPACT}\n"));
    assert_eq!(server.requests()[0].json()["format"], triage_schema());

    // A lead with sub-agents: `format` would leave the model no way to call
    // a tool, so it is not sent; the answer is still checked.
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let server = FakeServer::route(move |req| {
        if req.who() == "helper" {
            return Reply::Json(200, ollama_text("found it", 1, 1));
        }
        match seen.fetch_add(1, Ordering::SeqCst) {
            0 => Reply::Json(
                200,
                ollama_tool_calls(&[("", "call_agent", delegate("helper", "look"))], 1, 1),
            ),
            _ => Reply::Json(200, ollama_text(GOOD, 1, 1)),
        }
    });
    let home = home_with(
        "lead",
        "ollama/qwen3",
        &format!("sub_agents = [\"helper\"]\n{TRIAGE}"),
    );
    home.named_agent("helper", "ollama/qwen3", "");
    let out = home.run_on(&[(P::Ollama, &server)], &["run", "lead", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{COMPACT}\n"));
    for r in server.requests().iter().filter(|r| r.who() == "lead") {
        assert!(r.json().get("format").is_none(), "{}", r.body);
        assert!(r.json().get("tools").is_some(), "{}", r.body);
    }
}

#[test]
fn an_agent_with_sub_agents_delegates_first_then_answers_in_shape() {
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("helper", "look"))], 1, 1),
        ),
        ("lead", true) => Reply::Json(200, openai_text(GOOD, 1, 1)),
        _ => Reply::Json(200, openai_text("disk full", 1, 1)),
    });
    let home = home_with(
        "lead",
        "openai/gpt-4o",
        &format!("sub_agents = [\"helper\"]\n{TRIAGE}"),
    );
    home.named_agent("helper", "openai/gpt-4o", "");
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{COMPACT}\n"));
    let requests = server.requests();
    let lead: Vec<_> = requests.iter().filter(|r| r.who() == "lead").collect();
    assert_eq!(lead.len(), 2);
    for r in &lead {
        let body = r.json();
        assert!(
            body.get("tools").is_some() && body.get("response_format").is_some(),
            "{}",
            r.body
        );
    }
    // The helper has no schema: nothing is asked of it.
    let helper = requests.iter().find(|r| r.who() == "helper").unwrap();
    assert!(helper.json().get("response_format").is_none());
}

#[test]
fn a_wrong_answer_is_sent_back_with_what_is_wrong_and_the_right_one_wins() {
    let n = Arc::new(AtomicUsize::new(0));
    let seen = n.clone();
    let server = FakeServer::route(move |_| match seen.fetch_add(1, Ordering::SeqCst) {
        0 => Reply::Json(200, openai_text("The severity is high.", 1, 1)),
        1 => Reply::Json(
            200,
            openai_text("{\"severity\": \"mid\", \"reasons\": []}", 1, 1),
        ),
        _ => Reply::Json(200, openai_text(GOOD, 1, 1)),
    });
    let home = home_with("triage", "openai/gpt-4o", TRIAGE);
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "triage", "--verbose", "-p", "x"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{COMPACT}\n"));
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Each repair turn: the wrong answer as the assistant's, then a user
    // turn saying what is wrong and giving the schema.
    let second = requests[1].messages();
    assert_eq!(second[second.len() - 2]["content"], "The severity is high.");
    let ask = second[second.len() - 1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(ask.contains("at /: not JSON: "), "{ask}");
    assert!(ask.contains(&triage_schema().to_string()), "{ask}");
    let third = requests[2].messages();
    let ask = third[third.len() - 1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        ask.contains("at /severity: \"mid\" is not one of \"low\", \"high\""),
        "{ask}"
    );
    let err = stderr(&out);
    assert!(
        err.contains("Answer does not match the output schema"),
        "{err}"
    );
    assert!(err.contains("(repair 2 of 2)"), "{err}");
}

#[test]
fn an_answer_that_never_matches_exits_5_after_one_plus_max_repairs_requests() {
    for (repairs, extra) in [(2, ""), (0, "max_repairs = 0\n"), (1, "max_repairs = 1\n")] {
        let server = FakeServer::json(200, &openai_text("{\"reasons\": []}", 1, 1));
        let home = home_with("triage", "openai/gpt-4o", &format!("{TRIAGE}{extra}"));
        let out = home.run_on(&[(P::OpenAi, &server)], &["run", "triage", "-p", "x"]);
        assert_eq!(code(&out), 5, "{}", stderr(&out));
        assert_eq!(stdout(&out), "");
        assert_eq!(
            stderr(&out),
            format!(
                "axe: output does not match the schema after {repairs} repairs: at /: missing property \"severity\"\n"
            )
        );
        assert_eq!(server.requests().len(), 1 + repairs);
    }
}

#[test]
fn repairs_count_against_the_turn_budget() {
    let server = FakeServer::json(200, &openai_text("no", 1, 1));
    let home = home_with("triage", "openai/gpt-4o", TRIAGE);
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "triage", "--max-turns", "2", "-p", "x"],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_sub_agents_shaped_answer_reaches_its_parent_and_its_failure_is_a_result() {
    for (helper_says, expected) in [
        (GOOD.to_string(), COMPACT.to_string()),
        (
            "not json".to_string(),
            "Error: sub-agent \"helper\" failed - output does not match the schema: at /: not JSON: ".to_string(),
        ),
    ] {
        let server = FakeServer::route(move |req| match (req.who().as_str(), req.has_tool_results()) {
            ("lead", false) => Reply::Json(
                200,
                openai_tool_calls(&[("c1", "call_agent", delegate("helper", "look"))], 1, 1),
            ),
            ("lead", true) => Reply::Json(200, openai_text(&req.tool_result_texts()[0], 1, 1)),
            _ => Reply::Json(200, openai_text(&helper_says, 1, 1)),
        });
        let home = home_with("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
        home.named_agent("helper", "openai/gpt-4o", &format!("{TRIAGE}max_repairs = 0\n"));
        let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "x"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let said = stdout(&out);
        assert!(said.starts_with(&expected), "{said}");
    }
}

#[test]
fn a_schema_axe_cannot_check_is_exit_2_before_anything_is_sent() {
    let server = FakeServer::json(200, &openai_text(GOOD, 1, 1));
    for (extra, says) in [
        (
            "[output]\nschema = { type = \"text\" }\n",
            "axe: output schema: /type: unknown type \"text\"\n",
        ),
        (
            "[output]\nschema = { type = \"string\" }\nschema_file = \"s.json\"\n",
            "axe: output: set schema or schema_file, not both\n",
        ),
        (
            "[output]\nmax_repairs = 1\n",
            "axe: output: schema or schema_file is required\n",
        ),
        (
            "[output]\nschema = { type = \"string\" }\nmax_repairs = -1\n",
            "axe: output.max_repairs must be between 0 and 10\n",
        ),
    ] {
        let home = home_with("triage", "openai/gpt-4o", extra);
        let out = home.run_on(&[(P::OpenAi, &server)], &["run", "triage", "-p", "x"]);
        assert_eq!(code(&out), 2, "{extra}: {}", stderr(&out));
        // Each names the file.
        let file = home.config_dir().join("agents/triage.toml");
        let says = format!("{} (in {})\n", says.trim_end(), file.display());
        assert_eq!(stderr(&out), says, "{extra}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn schema_file_is_relative_to_the_config_dir_and_output_schema_wins() {
    let server = FakeServer::json(200, &openai_text("\"low\"", 1, 1));
    let home = home_with(
        "triage",
        "openai/gpt-4o",
        "[output]\nschema_file = \"schemas/t.json\"\n",
    );
    std::fs::create_dir_all(home.config_dir().join("schemas")).unwrap();
    std::fs::write(
        home.config_dir().join("schemas/t.json"),
        "{\"enum\": [\"low\"]}",
    )
    .unwrap();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "triage", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "\"low\"\n");
    assert_eq!(
        server.requests()[0].json()["response_format"]["json_schema"]["schema"],
        json!({"enum": ["low"]})
    );

    // --output-schema, relative to the current directory (the test home).
    std::fs::write(
        home.dir.path().join("other.json"),
        "{\"type\": \"integer\"}",
    )
    .unwrap();
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "triage", "--output-schema", "other.json", "-p", "x"],
    );
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected integer, got string"),
        "{}",
        stderr(&out)
    );

    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &[
            "run",
            "triage",
            "--output-schema",
            "missing.json",
            "-p",
            "x",
        ],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: --output-schema "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_parents_tool_description_gives_the_shape_of_each_shaped_sub_agent() {
    let server = FakeServer::json(200, &openai_text("done", 1, 1));
    let home = home_with(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"triage\", \"plain\"]\n",
    );
    home.named_agent("triage", "openai/gpt-4o", TRIAGE);
    home.named_agent("plain", "openai/gpt-4o", "");
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.requests()[0].json();
    let description = body["tools"][0]["function"]["description"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        description,
        format!(
            "Delegate a task to a sub-agent. The sub-agent runs independently with its own \
             context and returns only its final result. Available agents: triage, plain\n\
             These agents return one JSON value matching the JSON Schema given:\n- triage: {}",
            triage_schema()
        )
    );
}

#[test]
fn dry_run_shows_the_schema_in_its_own_section_and_sends_nothing() {
    let server = FakeServer::json(200, &openai_text(GOOD, 1, 1));
    let home = home_with(
        "triage",
        "openai/gpt-4o",
        &format!("{TRIAGE}max_repairs = 1\n"),
    );
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "triage", "--dry-run", "-p", "x"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let section = text
        .split("\n--- Output Schema ---\n")
        .nth(1)
        .expect("the section");
    let (schema, rest) = section.rsplit_once("\nMax Repairs: ").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(schema).unwrap(),
        triage_schema()
    );
    assert_eq!(rest, "1\n");
    assert!(server.requests().is_empty());
}

#[test]
fn agents_check_reports_a_schema_axe_cannot_check_or_read() {
    let home = home_with(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"odd\", \"lost\"]\n",
    );
    home.named_agent(
        "odd",
        "openai/gpt-4o",
        "[output]\nschema = { unevaluatedProperties = false }\n",
    );
    home.named_agent(
        "lost",
        "openai/gpt-4o",
        "[output]\nschema_file = \"nowhere.json\"\n",
    );
    let out = home
        .axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["agents", "check", "lead"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "lost: output.schema_file {}: No such file or directory (os error 2)",
            home.config_dir().join("nowhere.json").display()
        )
    );
    assert_eq!(
        lines[1],
        "odd: output schema: /unevaluatedProperties: keyword \"unevaluatedProperties\" is not one axe checks"
    );
    assert_eq!(lines[2], "3 agents checked, 2 problems");
}
