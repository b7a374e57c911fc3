//! The official MCP Python SDK 2.3.0 as the client of `axe mcp serve`
//! (design §9.6), over stdio and over streamable HTTP (`--listen`), in
//! its automatic mode (it probes `server/discover` and so speaks the
//! stateless revision 2026-07-28) and forced to the handshake era
//! (`legacy`): the tools, a call, a schema'd agent's `structuredContent`,
//! a failed run's `isError`, progress as an event stream, and a call its
//! client abandons (over HTTP: leaves) that stops its run.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;
use crate::serve::Server;

const SCHEMA: &str = "[output]\nschema = { type = \"object\", properties = { n = { type = \"integer\" } }, required = [\"n\"] }\n";

/// The Python of target/mcp/venv2, with the `mcp` 2.x SDK; None (the skip
/// recorded, a failure of `make test`) when it is not installed.
fn python2() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp/venv2/bin/python");
    if p.is_file() {
        Some(p)
    } else {
        missing(
            "axe mcp serve with the MCP Python SDK 2.x",
            "mcp 2.3.0 is not installed in target/mcp/venv2 (bash scripts/mcp_servers.sh)",
        );
        None
    }
}

/// Agents `helper`, `counted` (an output schema) and `lead` (delegates).
fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "description = \"Says hello.\"\n");
    home.named_agent("counted", "openai/gpt-4o", SCHEMA);
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

/// `axe mcp serve --listen 127.0.0.1:0 <args>` in `home` against `fake`.
fn http(home: &Home, fake: &FakeServer, args: &[&str]) -> Server {
    let mut cmd = home.axe_on(&[(P::OpenAi, fake)]);
    cmd.arg("mcp");
    Server::start_with(cmd, args)
}

/// Runs client2.py `mode` `action` against `target` (a URL, or the binary
/// over stdio with `extra`), in `home` against `fake`; what it printed.
fn client(
    py: &PathBuf,
    home: &Home,
    fake: &FakeServer,
    mode: &str,
    action: &str,
    target: Option<&str>,
    env: &[(&str, &str)],
) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_serve/client2.py");
    let mut cmd = home.command(py);
    cmd.env(P::OpenAi.base_url_var(), &fake.url)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .arg(&script)
        .args([mode, action])
        .arg(target.unwrap_or(env!("CARGO_BIN_EXE_axe")))
        .envs(env.iter().copied());
    let out = run_within(&mut cmd, Duration::from_secs(90)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v: Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "client2.py {mode} {action}: not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        v.get("error").is_none(),
        "client2.py {mode} {action} failed: {v}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

fn names(r: &Value) -> Vec<String> {
    r["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {r}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn over_stdio_the_sdk_speaks_the_stateless_revision_or_the_handshake() {
    let Some(py) = python2() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let r = client(&py, &home, &fake, mode, "list", None, &[]);
        assert_eq!(r["protocol"], protocol, "{mode}: {r}");
        assert_eq!(r["server"], "axe", "{r}");
        assert_eq!(names(&r), ["counted", "helper", "lead"], "{r}");
        let call = r#"call:helper:{"task": "Say hello."}"#;
        let r = client(&py, &home, &fake, mode, call, None, &[]);
        assert_eq!(r["protocol"], protocol, "{r}");
        assert_eq!(r["result"]["isError"], false, "{r}");
        assert_eq!(r["result"]["text"], json!(["Hello there."]), "{r}");
        assert_eq!(r["result"]["meta"]["axe/usage"]["input_tokens"], 7, "{r}");
    }
}

#[test]
fn over_http_both_eras_list_call_and_return_structured_content() {
    let Some(py) = python2() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text(r#"{"n": 3}"#, 2, 1));
    let server = http(&home, &fake, &[]);
    let url = format!("{}/mcp", server.url);
    for (mode, protocol) in [("auto", "2026-07-28"), ("legacy", "2025-11-25")] {
        let r = client(&py, &home, &fake, mode, "list", Some(&url), &[]);
        assert_eq!(r["protocol"], protocol, "{mode}: {r}");
        assert_eq!(names(&r), ["counted", "helper", "lead"], "{r}");
        let counted = r["tools"].as_array().unwrap()[0].clone();
        assert_eq!(counted["outputSchema"]["required"], json!(["n"]), "{r}");
        let call = r#"call:counted:{"task": "Count."}"#;
        let r = client(&py, &home, &fake, mode, call, Some(&url), &[]);
        assert_eq!(r["result"]["isError"], false, "{mode}: {r}");
        assert_eq!(r["result"]["structured"], json!({"n": 3}), "{r}");
        assert_eq!(r["result"]["meta"]["axe/usage"]["output_tokens"], 1, "{r}");
    }
}

#[test]
fn over_http_a_failed_run_is_an_error_result() {
    let Some(py) = python2() else { return };
    let home = home();
    let fake = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let server = http(&home, &fake, &["--retries", "0"]);
    let url = format!("{}/mcp", server.url);
    for mode in ["auto", "legacy"] {
        let call = r#"call:helper:{"task": "Hi."}"#;
        let r = client(&py, &home, &fake, mode, call, Some(&url), &[]);
        assert_eq!(r["result"]["isError"], true, "{mode}: {r}");
        let text = r["result"]["text"][0].as_str().unwrap();
        assert!(text.contains("boom") && !text.contains('\n'), "{text}");
    }
}

#[test]
fn over_http_progress_comes_as_an_event_stream_through_a_fan_out() {
    let Some(py) = python2() else { return };
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
    let server = http(&home, &fake, &[]);
    let url = format!("{}/mcp", server.url);
    for mode in ["auto", "legacy"] {
        let action = r#"progress:lead:{"task": "Fan out."}"#;
        let r = client(&py, &home, &fake, mode, action, Some(&url), &[]);
        assert_eq!(r["result"]["text"], json!(["all three"]), "{mode}: {r}");
        let messages: Vec<&str> = r["progress"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["message"].as_str().unwrap())
            .collect();
        assert_eq!(messages.first(), Some(&"lead started"), "{messages:?}");
        assert_eq!(messages.last(), Some(&"done"), "{messages:?}");
        for n in 1..=3 {
            let finished = format!("sub-agent lead/helper#{n} finished");
            assert!(
                messages.contains(&finished.as_str()),
                "{mode}: {messages:?}"
            );
        }
    }
}

/// A call to `hands` that runs `sleep` is abandoned by its client once the
/// command runs (over HTTP the client drops the request: the server sees
/// it leave); the command is killed, and the server serves on.
fn abandoned(target: Option<&str>, mode: &str, setup: &ToolsSetup, fake: &FakeServer, secs: u32) {
    let py = python2().expect("checked");
    let marker = secs.to_string();
    let r = client(
        &py,
        &setup.home,
        fake,
        mode,
        r#"cancel:hands:{"task": "Sleep."}"#,
        target,
        &[("AXE_TEST_SLEEP", &marker)],
    );
    assert_eq!(r["sleeping_before"], true, "the command never ran: {r}");
    assert_eq!(
        r["sleeping_after"], false,
        "the abandoned run's command still ran: {r}"
    );
    assert_eq!(r["answered"], false, "{r}");
    assert_eq!(r["tools_after"], 1, "{r}");
}

#[test]
fn a_call_whose_client_leaves_stops_its_run_over_http_and_over_stdio() {
    if python2().is_none() {
        return;
    }
    let setup = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    // A sleep no other process runs: its length is this test's own.
    let secs = 4_000_000 + std::process::id();
    let fake = FakeServer::tool_loop(
        openai_tool_calls(
            &[(
                "c1",
                "run_command",
                json!({"command": format!("exec sleep {secs}")}),
            )],
            1,
            1,
        ),
        openai_text("done", 1, 1),
    );
    let server = http(&setup.home, &fake, &[]);
    let url = format!("{}/mcp", server.url);
    abandoned(Some(&url), "auto", &setup, &fake, secs);
    abandoned(Some(&url), "legacy", &setup, &fake, secs);
    abandoned(None, "auto", &setup, &fake, secs);
    // Each run ended there: the model never got a command's result.
    assert!(fake.requests().iter().all(|r| !r.has_tool_results()));
}
