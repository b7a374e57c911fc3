//! API keys never appear in any output (design D10, D18, §6.7): every
//! output mode of the binary is run with two recognisable keys (one from the
//! environment, one from config.toml) placed where they would leak — echoed
//! by a provider's error body, in a prompt, in a context file, in an agent
//! file — and stdout, stderr and the trace are searched for them. Each case
//! also checks that `[redacted]` stands where a key was, so that no case
//! passes merely because the key never came near the output.
//!
//! A key also never travels to another provider: a sub-agent's provider
//! error echoing its key reaches the parent's provider redacted.
//!
//! The usual outputs of a run (`--verbose`, `--json`, `--dry-run`, a 401
//! whose body echoes the key, from the environment or config.toml) are
//! checked with a third key, one at a time.
//!
//! What the model said is never redacted (placeholder_keys.rs shows
//! the same for keys too short to be secrets): a key it can only have from
//! the user is printed as it came, while axe's own lines stay redacted.

use crate::common::*;

use std::process::{Command, Output};

/// From the environment.
const ENV_KEY: &str = "sk-proj-LEAKCHECK-env-0123456789abcdef";
/// From config.toml.
const FILE_KEY: &str = "sk-ant-LEAKCHECK-file-fedcba9876543210";
const MARK: &str = "[redacted]";

fn home() -> Home {
    let home = Home::new();
    home.config(&format!(
        "[providers.anthropic]\napi_key = \"{FILE_KEY}\"\n\n[retry]\ninitial_delay_ms = 1\nmax_delay_ms = 2\n"
    ));
    home
}

/// `axe` with [`ENV_KEY`] in the environment ([`FILE_KEY`] is in
/// config.toml) and both base URLs.
fn keyed_axe(home: &Home, openai: &FakeServer, anthropic: &FakeServer) -> std::process::Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", ENV_KEY)
        .env("AXE_OPENAI_BASE_URL", &openai.url)
        .env("AXE_ANTHROPIC_BASE_URL", &anthropic.url);
    c
}

/// Neither key anywhere in the output, and the mark where one was.
#[track_caller]
fn assert_no_key(case: &str, out: &Output) {
    assert_no_key_in(case, &format!("{}{}", stdout(out), stderr(out)));
}

/// Neither key anywhere in `all`, and the mark where one was.
#[track_caller]
fn assert_no_key_in(case: &str, all: &str) {
    for key in [ENV_KEY, FILE_KEY] {
        assert!(!all.contains(key), "{case}: key printed:\n{all}");
        // Nor a long piece of one.
        assert!(
            !all.contains(&key[..20]),
            "{case}: part of a key printed:\n{all}"
        );
    }
    assert!(all.contains(MARK), "{case}: nothing was redacted:\n{all}");
}

fn echoing(text: &str) -> FakeServer {
    FakeServer::json(200, &openai_text(text, 1, 1))
}

#[test]
fn secrets_never_appear_in_any_output_mode() {
    let home = home();
    let wd = TempDir::new("secrets-wd");
    std::fs::write(wd.path().join("notes.txt"), format!("key: {ENV_KEY}")).unwrap();
    home.agent(
        "a",
        &format!(
            "name = \"a\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Never say {FILE_KEY}.\"\nfiles = [\"*.txt\"]\n"
        ),
    );
    let wd_arg = wd.path().to_str().unwrap();
    let anthropic = FakeServer::json(200, &anthropic_text("unused", 1, 1));

    // The trace's request bodies carry the system prompt and the context
    // file; the model here says nothing of them.
    let quiet = echoing("Done.");
    let trace = home.dir.path().join("trace.jsonl");
    let out = keyed_axe(&home, &quiet, &anthropic)
        .args(["run", "a", "--workdir", wd_arg, "--trace-bodies", "--trace"])
        .arg(&trace)
        .args(["-p", &format!("use {ENV_KEY}")])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_key_in("trace", &std::fs::read_to_string(&trace).unwrap());

    // --dry-run shows the system prompt and the prompt.
    let out = keyed_axe(&home, &quiet, &anthropic)
        .args(["run", "a", "--dry-run", "--verbose", "--workdir", wd_arg])
        .args(["-p", &format!("use {FILE_KEY}")])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_key("--dry-run", &out);

    // An error body echoing the key, with and without retries shown.
    let echo_401 = FakeServer::json(
        401,
        &format!(
            r#"{{"error":{{"message":"Incorrect API key provided: {ENV_KEY}","type":"invalid_request_error"}}}}"#
        ),
    );
    let out = keyed_axe(&home, &echo_401, &anthropic)
        .args(["run", "a", "--verbose", "--workdir", wd_arg])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    assert_no_key("401 error", &out);
    let echo_429 = FakeServer::json(
        429,
        &format!(r#"{{"error":{{"message":"Slow down, {ENV_KEY}","type":"requests"}}}}"#),
    );
    let out = keyed_axe(&home, &echo_429, &anthropic)
        .args(["run", "a", "--verbose", "--json", "--workdir", wd_arg])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("[retry] openai 429"),
        "{}",
        stderr(&out)
    );
    assert_no_key("429 with retries", &out);

    // agents show prints the agent file.
    let out = home.axe().args(["agents", "show", "a"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_key("agents show", &out);
}

/// The model can know a key only from text the user sent it (axe sends
/// keys in headers alone): its answer is the user's, printed, put in
/// `--json` and traced as it came. What axe itself writes around it —
/// verbose lines, the trace's request bodies — stays redacted.
#[test]
fn an_answer_is_printed_as_the_model_gave_it_even_one_holding_a_key() {
    let home = home();
    let wd = TempDir::new("secrets-answer-wd");
    std::fs::write(wd.path().join("notes.txt"), format!("key: {ENV_KEY}")).unwrap();
    home.agent(
        "a",
        &format!(
            "name = \"a\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Never say {FILE_KEY}.\"\nfiles = [\"*.txt\"]\n"
        ),
    );
    let wd_arg = wd.path().to_str().unwrap();
    let anthropic = FakeServer::json(200, &anthropic_text("unused", 1, 1));
    let said = format!("Your keys are {ENV_KEY} and {FILE_KEY}.");
    let leaky = echoing(&said);

    let out = keyed_axe(&home, &leaky, &anthropic)
        .args(["run", "a", "--verbose", "--workdir", wd_arg])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), format!("{said}\n"));
    assert!(
        ![ENV_KEY, FILE_KEY].iter().any(|k| stderr(&out).contains(k)),
        "{}",
        stderr(&out)
    );

    let trace = home.dir.path().join("answer.jsonl");
    let out = keyed_axe(&home, &leaky, &anthropic)
        .args([
            "run",
            "a",
            "--json",
            "--workdir",
            wd_arg,
            "--trace-bodies",
            "--trace",
        ])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], said.as_str());
    let events = trace_events(&trace);
    let request = events.iter().find(|e| e["event"] == "request").unwrap();
    assert_no_key_in("trace request", &request.to_string());
    let response = events.iter().find(|e| e["event"] == "response").unwrap();
    assert_eq!(response["content"], said.as_str());
}

#[test]
fn secrets_do_not_travel_from_a_sub_agent_to_its_parents_provider() {
    let home = home();
    home.agent(
        "lead",
        "name = \"lead\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"You are lead.\"\nsub_agents = [\"claude\"]\n",
    );
    home.agent(
        "claude",
        "name = \"claude\"\nmodel = \"anthropic/claude-haiku-4-5\"\n",
    );
    // The sub-agent's provider echoes its key in a 401.
    let anthropic = FakeServer::json(
        401,
        &format!(
            r#"{{"type":"error","error":{{"type":"authentication_error","message":"invalid x-api-key {FILE_KEY}"}}}}"#
        ),
    );
    // The parent delegates, then repeats what it got back.
    let openai = FakeServer::route(|req| {
        if req.has_tool_results() {
            let got = req.tool_result_texts().concat();
            Reply::Json(200, openai_text(&got, 1, 1))
        } else {
            Reply::Json(
                200,
                openai_tool_calls(&[("c1", "call_agent", delegate("claude", "go"))], 1, 1),
            )
        }
    });
    let out = keyed_axe(&home, &openai, &anthropic)
        .args(["run", "lead", "--verbose"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_key("sub-agent error", &out);
    // What the parent's provider received.
    let second = &openai.requests()[1];
    assert!(!second.body.contains(FILE_KEY), "{}", second.body);
    assert!(
        second
            .body
            .contains("authentication failed (HTTP 401): invalid x-api-key [redacted]"),
        "{}",
        second.body
    );
}

/// A key as OpenAI issues them, echoed whole (OpenAI's own 401 shows only
/// its ends; a proxy or a local server may show all of it).
const REAL_KEY: &str = "sk-proj-Zq8vN3rT5wXy2KbL7mPd9sFh4GjC1aEu6oRi0tYn";

#[test]
fn a_real_key_echoed_in_a_401_or_400_body_is_redacted_on_stderr_and_in_the_trace() {
    let said = "Incorrect API key provided: {}. You can find your API key at https://platform.openai.com/account/api-keys.";
    for (status, exit, what) in [(401, 3, "authentication failed"), (400, 1, "bad request")] {
        let home = Home::new();
        home.named_agent("a", "openai/gpt-4o", "");
        let body = serde_json::json!({"error": {
            "message": said.replace("{}", REAL_KEY),
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_api_key",
        }});
        let server = FakeServer::json(status, &body.to_string());
        let trace = home.dir.path().join("error.jsonl");
        let out = home
            .axe()
            .env("OPENAI_API_KEY", REAL_KEY)
            .env("AXE_OPENAI_BASE_URL", &server.url)
            .args(["run", "a", "--json", "--verbose", "--trace"])
            .arg(&trace)
            .output()
            .unwrap();
        assert_eq!(code(&out), exit, "{}", stderr(&out));
        let shown = said.replace("{}", MARK);
        assert!(
            stderr(&out).ends_with(&format!("axe: openai: {what} (HTTP {status}): {shown}\n")),
            "{}",
            stderr(&out)
        );
        assert!(!stderr(&out).contains(&REAL_KEY[..12]), "{}", stderr(&out));
        assert_eq!(stdout(&out), "");
        let events = trace_events(&trace);
        let error = events.iter().find(|e| e["event"] == "error").unwrap();
        assert!(
            error["error"].as_str().unwrap().ends_with(&shown),
            "{error}"
        );
        let end = events.iter().find(|e| e["event"] == "run_end").unwrap();
        assert!(end["error"].as_str().unwrap().ends_with(&shown), "{end}");
        let text = std::fs::read_to_string(&trace).unwrap();
        assert!(!text.contains(&REAL_KEY[..12]), "{text}");
    }
}

#[test]
fn a_key_in_a_sub_agents_file_is_redacted_from_the_error_its_parent_gets() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"leaky\"]\n");
    // A key pasted into the model field ends up in the loading error.
    home.agent(
        "leaky",
        &format!("name = \"leaky\"\nmodel = \"{REAL_KEY}\"\n"),
    );
    let server = FakeServer::route(|req| {
        let body = if req.has_tool_results() {
            openai_text("noted", 1, 1)
        } else {
            openai_tool_calls(&[("c1", "call_agent", delegate("leaky", "go"))], 1, 1)
        };
        Reply::Json(200, body)
    });
    let trace = home.dir.path().join("leaky.jsonl");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", REAL_KEY)
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "lead", "--trace-bodies", "--trace"])
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let second = &server.requests()[1];
    let got = second.tool_result_texts().concat();
    assert!(
        got.starts_with(
            "call_agent error: invalid model for agent \"leaky\": invalid model \"[redacted]\""
        ),
        "{got}"
    );
    let events = trace_events(&trace);
    let result = events.iter().find(|e| e["event"] == "tool_result").unwrap();
    assert_eq!(result["content"], got.as_str());
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains(&REAL_KEY[..12]), "{text}");
}

// ---------------------------------------------------------------------------
// One key, the usual outputs of a run.
// ---------------------------------------------------------------------------

/// The OpenAI key of the runs below, given through the environment or
/// config.toml.
const SECRET: &str = "sk-proj-CANARY-7c1e4b9d2a5f";

#[track_caller]
fn assert_no_secret(out: &Output) {
    assert!(
        !stdout(out).contains(SECRET),
        "key on stdout: {}",
        stdout(out)
    );
    assert!(
        !stderr(out).contains(SECRET),
        "key on stderr: {}",
        stderr(out)
    );
}

fn secret_axe(home: &Home, server: &FakeServer) -> Command {
    let mut c = home.axe();
    c.env("OPENAI_API_KEY", SECRET)
        .env("AXE_OPENAI_BASE_URL", &server.url);
    c
}

#[test]
fn key_is_not_printed_with_verbose() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--verbose", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_secret(&out);
    // The key was really used.
    assert_eq!(
        server.only_request().header("authorization"),
        Some(&*format!("Bearer {SECRET}"))
    );
}

#[test]
fn key_is_not_printed_with_json() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--json", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_no_secret(&out);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn key_is_not_printed_with_dry_run() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "--dry-run", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("=== Dry Run ===\n"));
    assert_no_secret(&out);
}

#[test]
fn key_echoed_in_a_401_body_is_not_printed() {
    let body = serde_json::json!({
        "error": {
            "message": format!("Incorrect API key provided: {SECRET}. You can find your API key at https://platform.openai.com/account/api-keys."),
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_api_key"
        }
    })
    .to_string();
    let server = FakeServer::json(401, &body);
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = secret_axe(&home, &server)
        .args(["run", "o", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_no_secret(&out);
    // The rest of the provider's message is still shown.
    assert!(
        stderr(&out).contains("Incorrect API key provided"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn key_from_config_toml_echoed_in_an_error_is_not_printed() {
    let body = serde_json::json!({
        "error": {"message": format!("key {SECRET} is revoked"), "type": "invalid_request_error"}
    })
    .to_string();
    let server = FakeServer::json(403, &body);
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"{SECRET}\"\nbase_url = \"{}\"\n",
        server.url
    ));
    home.plain_agent("o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "--verbose", "-p", "hi"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_no_secret(&out);
    assert!(stderr(&out).contains("is revoked"), "{}", stderr(&out));
    assert_eq!(
        server.only_request().header("authorization"),
        Some(&*format!("Bearer {SECRET}"))
    );
}
