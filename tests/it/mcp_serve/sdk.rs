//! The official MCP Python SDK (1.26, the handshake era) as the client of
//! `axe mcp serve` over stdio (design §9.6): the tools and their schemas,
//! a call and its usage, a schema'd agent's `structuredContent`, a failed
//! run's `isError`, progress through a fan-out, a cancel that kills the
//! run's command, two calls at once.

use std::time::{Duration, Instant};

use serde_json::json;

use super::{python, sdk, sdk_with};
use crate::common::*;

const SCHEMA: &str = "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }\n";

/// Agents `helper` (plain), `tmpl` (a `{{lang}}` template), `counted`
/// (an output schema) and `lead` (delegates to helper).
fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "description = \"Says hello.\"\n");
    home.agent(
        "tmpl",
        "name = \"tmpl\"\nmodel = \"openai/gpt-4o\"\ndescription = \"Writes.\"\n\
         system_prompt = \"You are tmpl. Write in {{lang}}.\"\n",
    );
    home.named_agent("counted", "openai/gpt-4o", SCHEMA);
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

#[test]
fn the_sdk_lists_one_tool_per_agent_with_its_schemas() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let r = sdk(&py, &home, &fake, "list", &[]);
    assert_eq!(r["protocol"], "2025-11-25", "{r}");
    assert_eq!(r["server"], "axe");
    let tools = r["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["counted", "helper", "lead", "tmpl"], "{r}");
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap().clone();
    let helper = tool("helper");
    assert_eq!(helper["description"], "Says hello.");
    assert_eq!(helper["inputSchema"]["type"], "object");
    assert_eq!(helper["inputSchema"]["required"], json!(["task"]));
    assert_eq!(
        helper["inputSchema"]["properties"]["context"]["type"],
        "string"
    );
    assert!(helper.get("outputSchema").is_none(), "{helper}");
    let tmpl = tool("tmpl");
    assert_eq!(tmpl["inputSchema"]["required"], json!(["task", "lang"]));
    assert_eq!(tmpl["inputSchema"]["properties"]["lang"]["type"], "string");
    let counted = tool("counted");
    assert_eq!(
        counted["outputSchema"]["properties"]["n"]["type"],
        "integer"
    );
    assert_eq!(counted["outputSchema"]["required"], json!(["n"]));
    // --agent picks the tools.
    let r = sdk(&py, &home, &fake, "list", &["--agent", "tmpl"]);
    let names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tmpl"], "{r}");
}

#[test]
fn a_call_runs_the_agent_and_returns_its_answer_and_usage() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let args = r#"{"task": "Say hello.", "context": "We met before."}"#;
    let r = sdk(&py, &home, &fake, &format!("call:helper:{args}"), &[]);
    let res = &r["result"];
    assert_eq!(res["isError"], false, "{r}");
    assert_eq!(res["text"], json!(["Hello there."]));
    assert_eq!(res["meta"]["axe/usage"]["input_tokens"], 7, "{r}");
    assert_eq!(res["meta"]["axe/usage"]["output_tokens"], 3);
    let sent = fake.only_request();
    assert_eq!(sent.who(), "helper");
    assert_eq!(
        sent.first_user_text(),
        "Task: Say hello.\n\nContext:\nWe met before."
    );
    // The run is in the run log, under the id the result gives.
    let run_id = res["meta"]["axe/usage"]["run_id"].as_str().unwrap();
    let log = home.run_log();
    assert!(log.iter().any(|e| e["run_id"] == run_id), "{log:?}");
    // A template variable fills the prompt.
    let fake = FakeServer::json(200, &openai_text("Bonjour.", 1, 1));
    let args = r#"{"task": "Greet.", "lang": "French"}"#;
    let r = sdk(&py, &home, &fake, &format!("call:tmpl:{args}"), &[]);
    assert_eq!(r["result"]["text"], json!(["Bonjour."]), "{r}");
    let sent = fake.only_request();
    assert_eq!(sent.system_prompt(), "You are tmpl. Write in French.");
    assert_eq!(sent.first_user_text(), "Greet.");
}

#[test]
fn a_schemad_agent_returns_structured_content() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text(r#"{"n": 3}"#, 1, 1));
    let r = sdk(&py, &home, &fake, r#"call:counted:{"task": "Count."}"#, &[]);
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(r["result"]["structured"], json!({"n": 3}), "{r}");
    let text: serde_json::Value =
        serde_json::from_str(r["result"]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(text, json!({"n": 3}));
}

#[test]
fn a_failed_run_is_an_error_result_with_axes_one_line() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let r = sdk(
        &py,
        &home,
        &fake,
        r#"call:helper:{"task": "Hi."}"#,
        &["--retries", "0"],
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["text"][0].as_str().unwrap();
    assert!(text.contains("boom"), "{text}");
    assert!(!text.contains('\n'), "{text}");
    assert!(!text.contains(OPENAI_KEY));
}

#[test]
fn progress_comes_as_a_fan_out_of_three_moves() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::route(|req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, openai_text("all three", 5, 5)),
        "lead" => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("c1", "call_agent", delegate("helper", "one")),
                    ("c2", "call_agent", delegate("helper", "two")),
                    ("c3", "call_agent", delegate("helper", "three")),
                ],
                5,
                5,
            ),
        ),
        _ => Reply::Json(200, openai_text("part", 1, 1)),
    });
    let r = sdk(
        &py,
        &home,
        &fake,
        r#"progress:lead:{"task": "Fan out."}"#,
        &[],
    );
    assert_eq!(r["result"]["text"], json!(["all three"]), "{r}");
    let seen = r["progress"].as_array().unwrap();
    let messages: Vec<&str> = seen
        .iter()
        .map(|p| p["message"].as_str().unwrap())
        .collect();
    let counts: Vec<f64> = seen
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "{counts:?}");
    assert_eq!(messages.first(), Some(&"lead started"), "{messages:?}");
    assert_eq!(messages.last(), Some(&"done"), "{messages:?}");
    for n in 1..=3 {
        let started = format!("sub-agent lead/helper#{n} started");
        let finished = format!("sub-agent lead/helper#{n} finished");
        let at = |m: &str| messages.iter().position(|x| *x == m);
        assert!(at(&started).is_some(), "{started}: {messages:?}");
        assert!(at(&started) < at(&finished), "{finished}: {messages:?}");
    }
}

#[test]
fn a_cancelled_call_stops_its_run_and_kills_its_command() {
    let Some(py) = python() else { return };
    let setup = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    // A sleep no other process runs: its length is this test's own.
    let secs = 3_000_000 + std::process::id();
    let cmd = format!("exec sleep {secs}");
    let fake = FakeServer::tool_loop(
        openai_tool_calls(&[("c1", "run_command", json!({"command": cmd}))], 1, 1),
        openai_text("done", 1, 1),
    );
    let started = Instant::now();
    let marker = secs.to_string();
    let r = sdk_with(
        &py,
        &setup.home,
        &fake,
        r#"cancel:hands:{"task": "Sleep."}"#,
        &[],
        &[("AXE_TEST_SLEEP", &marker)],
    );
    assert_eq!(r["sleeping_before"], true, "the command never ran: {r}");
    assert_eq!(
        r["answered"], false,
        "a cancelled call is not answered: {r}"
    );
    assert_eq!(r["pinged"], true);
    assert_eq!(
        r["sleeping_after"], false,
        "the cancelled run's command still ran: {r}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
    // The run ended there: the model never got the command's result.
    assert_eq!(fake.requests().len(), 1);
}

#[test]
fn two_calls_at_once_run_side_by_side() {
    let Some(py) = python() else { return };
    let home = home();
    // The provider holds each request until both arrived.
    let gate = std::sync::Arc::new(Gate::new(2));
    let fake = FakeServer::route(move |_| {
        let both = gate.arrive(Duration::from_secs(20));
        let text = if both { "both arrived" } else { "alone" };
        Reply::Json(200, openai_text(text, 1, 1))
    });
    let r = sdk(&py, &home, &fake, r#"two:helper:{}"#, &[]);
    for res in r["results"].as_array().unwrap() {
        assert_eq!(res["text"], json!(["both arrived"]), "{r}");
    }
}
