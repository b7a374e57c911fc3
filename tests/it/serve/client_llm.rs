//! simonw's `llm` against `axe serve` (design §12.2), set up as its docs
//! say: an `extra-openai-models.yaml` naming the agent with axe serve as
//! its `api_base`, then `llm -m helper`. A whole answer, a streamed one
//! (llm's default) with its usage (`-u`), one with a `--schema`, a
//! streamed failure shown from one run, a failing agent run once on the
//! openai client's default retries, `-s` taken, `--functions` refused out
//! loud; and a model with `responses: true`, on /v1/responses.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::json;

use super::Server;
use super::clients::*;
use crate::common::*;

/// `llm <args>` with its user directory in `home`, whose
/// extra-openai-models.yaml serves `helper` over chat completions and
/// `helper-responses` over the Responses API, both from `server`.
fn llm_run(llm: &Path, home: &Home, server: &Server, args: &[&str]) -> Output {
    let dir = home.dir.path().join("llm");
    std::fs::create_dir_all(&dir).unwrap();
    let yaml = format!(
        "- model_id: helper\n  model_name: helper\n  api_base: \"{base}/v1\"\n  \
         supports_schema: true\n  supports_tools: true\n\
         - model_id: helper-responses\n  model_name: helper\n  api_base: \"{base}/v1\"\n  \
         responses: true\n",
        base = server.url
    );
    std::fs::write(dir.join("extra-openai-models.yaml"), yaml).unwrap();
    let mut cmd = Command::new(llm);
    cmd.args(args)
        .env("LLM_USER_PATH", &dir)
        .env("HOME", home.dir.path());
    isolated(&mut cmd);
    run_within(&mut cmd, Duration::from_secs(60)).output
}

#[test]
fn llm_prints_a_whole_answer() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let out = llm_run(
        &llm,
        &home,
        &server,
        &["-m", "helper", "--no-stream", "-u", "Say hello."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello there.");
    assert!(
        stderr(&out).contains("7 input, 3 output"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fake.only_request().first_user_text(), "Say hello.");
}

#[test]
fn llm_streams_an_answer_by_default() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = paced(&["Hel", "lo", " you"], 5, 2);
    let server = Server::start(&home, &fake, &[]);
    let out = llm_run(&llm, &home, &server, &["-m", "helper", "-u", "Say hello."]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello you");
    assert!(
        stderr(&out).contains("5 input, 2 output"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn llm_schema_is_the_agents_output_schema() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("{\"n\": 3}", 4, 2));
    let server = Server::start(&home, &fake, &[]);
    let out = llm_run(
        &llm,
        &home,
        &server,
        &["-m", "helper", "--schema", "n int", "Count."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(printed, json!({"n": 3}));
    let sent = fake.only_request().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["n"]),
        "llm's schema went to the provider: {sent}"
    );
}

#[test]
fn llm_runs_a_failing_agent_once() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(500, BOOM);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let out = llm_run(
        &llm,
        &home,
        &server,
        &["-m", "helper", "--no-stream", "Say hello."],
    );
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("424") && err.contains("boom"), "{err}");
    assert_ran_once(&fake, &json!(stderr(&out)));
}

#[test]
fn llm_shows_a_streamed_failure_from_one_run() {
    // Streamed (llm's default): a run that fails before any text is
    // answered with its status (424), no longer a 200 and an error event;
    // still one run, and the error shown.
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(500, BOOM);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let out = llm_run(&llm, &home, &server, &["-m", "helper", "Say hello."]);
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("424") && err.contains("boom"), "{err}");
    assert_ran_once(&fake, &json!(stderr(&out)));
}

#[test]
fn llm_sends_a_system_prompt() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Bonjour.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let out = llm_run(
        &llm,
        &home,
        &server,
        &["-m", "helper", "-s", FRENCH, "Say hello."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Bonjour.");
    assert_system_after_agents(&fake, FRENCH);
}

#[test]
fn llm_is_told_its_functions_are_refused() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("No tools used.", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let functions = "def get_weather() -> str:\n    return 'sunny'\n";
    let args = ["-m", "helper", "--functions", functions, "Weather?"];
    let out = llm_run(&llm, &home, &server, &args);
    assert_ne!(code(&out), 0, "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("400") && err.contains("tools"), "{err}");
    assert!(fake.requests().is_empty(), "nothing ran");
}

#[test]
fn llm_on_the_responses_api() {
    let Some(llm) = llm() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let args = ["-m", "helper-responses", "--no-stream", "-u", "Say hello."];
    let out = llm_run(&llm, &home, &server, &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello there.");
    assert!(
        stderr(&out).contains("7 input, 3 output"),
        "{}",
        stderr(&out)
    );
    let out = llm_run(
        &llm,
        &home,
        &server,
        &["-m", "helper-responses", "Say hello."],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "Hello there.");
}
