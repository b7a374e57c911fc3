//! What fails, and how (design §2.3, §2.10): exit 1 for a model or a
//! request the provider refuses, 2 for configuration and agent files, 3
//! for keys, the provider's failures and the network; one `axe: ` line on
//! stderr and nothing on stdout.

use super::*;
use crate::common::*;

use std::time::{Duration, Instant};

// ---------------------------------------------------------------------------
// Exit code 1
// ---------------------------------------------------------------------------

#[test]
fn run_with_a_model_without_provider_exits_1() {
    let home = Home::new();
    home.plain_agent("m", "gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .args(["run", "m", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 1, &["gpt-4o"]);
}

#[test]
fn run_with_a_bad_model_override_exits_1() {
    let home = Home::new();
    home.plain_agent("m", "openai/gpt-4o");
    let out = home.run(&["run", "m", "--model", "nonsense", "--dry-run"]);
    assert_fails_with(&out, 1, &["nonsense"]);
}

#[test]
fn run_with_an_unsupported_provider_exits_1() {
    let home = Home::new();
    let path = home.plain_agent("x", "x/some-model");
    let out = home.run(&["run", "x", "-p", "hi"]);
    assert_fails(
        &out,
        1,
        &format!(
            "unsupported provider \"x\": supported providers are anthropic, openai, ollama, \
             bedrock, google, gemini, openrouter, groq, deepseek, mistral, together, xai, \
             opencode, atlascloud, requesty, edenai, minimax, or a [providers.x] table with kind in config.toml (in {})",
            path.display()
        ),
    );
}

#[test]
fn run_with_a_provider_400_exits_1_with_the_providers_message() {
    let server = FakeServer::json(
        400,
        r#"{"error":{"message":"Invalid value for 'temperature': must be at most 2.","type":"invalid_request_error","param":"temperature","code":"invalid_value"}}"#,
    );
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(
        &out,
        1,
        &["Invalid value for 'temperature': must be at most 2."],
    );
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
}

#[test]
fn run_with_a_provider_404_exits_1_with_the_providers_message() {
    let server = FakeServer::json(
        404,
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}"#,
    );
    let home = Home::new();
    home.plain_agent("a", "anthropic/claude-nope");
    let out = home
        .axe_on(&[(P::Anthropic, &server)])
        .args(["run", "a", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 1, &["model: claude-nope"]);
}

// ---------------------------------------------------------------------------
// Exit code 2
// ---------------------------------------------------------------------------

#[test]
fn run_unknown_agent_exits_2() {
    let home = Home::new();
    let out = home.run(&["run", "ghost", "-p", "hi"]);
    assert_not_found(&home, &out, "ghost");
}

#[test]
fn run_with_bad_toml_exits_2_naming_the_file_and_line() {
    let home = Home::new();
    let path = home.agent(
        "bad",
        "name = \"bad\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"unterminated\nfiles = []\n",
    );
    let out = home.run(&["run", "bad", "--dry-run"]);
    assert_fails_with(&out, 2, &[&path.display().to_string(), "line 3"]);
}

#[test]
fn run_validation_errors_come_in_order_and_exit_2() {
    let cases = [
        (
            "model = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 9\ntimeout = -1\n",
            "agent config missing required field: name",
        ),
        (
            "name = \"  \"\nmodel = \"openai/gpt-4o\"\n",
            "agent config missing required field: name",
        ),
        // A file without `model` is valid (a sub-agent inherits, design
        // D21), so the table's own error comes first.
        (
            "name = \"v\"\n[sub_agents_config]\nmax_depth = 9\ntimeout = -1\n",
            "sub_agents_config.max_depth cannot exceed 5",
        ),
        (
            "name = \"v\"\n",
            "agent config missing required field: model (at top level an agent needs its own model or --model; only a sub-agent inherits its caller's)",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\ntimeout = -1\n",
            "sub_agents_config.max_depth cannot exceed 5",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = -1\ntimeout = -1\n",
            "sub_agents_config.max_depth must be non-negative",
        ),
        (
            "name = \"v\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\ntimeout = -1\n",
            "sub_agents_config.timeout must be non-negative",
        ),
    ];
    for (toml, message) in cases {
        let home = Home::new();
        let path = home.agent("v", toml);
        let out = home.run(&["run", "v", "--dry-run"]);
        assert_fails(&out, 2, &format!("{message} (in {})", path.display()));
    }
}

#[test]
fn run_max_depth_5_is_valid() {
    let home = Home::new();
    home.agent(
        "v",
        "name = \"v\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"h\"]\n[sub_agents_config]\nmax_depth = 5\n",
    );
    let out = home.run(&["run", "v", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("Max Depth: 5\n"), "{}", stdout(&out));
}

#[test]
fn run_with_malformed_config_toml_exits_2() {
    let home = Home::new();
    home.config("[providers.openai\napi_key = \"sk-x-123456\"\n");
    home.plain_agent("o", "openai/gpt-4o");
    let config = home.config_dir().join("config.toml");
    let out = home.run(&["run", "o", "-p", "hi"]);
    assert_fails_with(&out, 2, &[&config.display().to_string()]);
}

#[test]
fn run_with_an_invalid_glob_exits_2() {
    let home = Home::new();
    home.agent(
        "g",
        "name = \"g\"\nmodel = \"openai/gpt-4o\"\nfiles = [\"src/[a\"]\n",
    );
    let out = home.run(&["run", "g", "--dry-run"]);
    assert_fails_with(&out, 2, &["src/[a"]);
}

#[test]
fn run_with_a_missing_workdir_exits_2() {
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let missing = home.dir.path().join("no-such-dir");
    let out = home.run(&[
        "run",
        "o",
        "--dry-run",
        "--workdir",
        &missing.display().to_string(),
    ]);
    assert_fails_with(&out, 2, &[&missing.display().to_string()]);
}

#[test]
fn run_with_a_missing_agent_workdir_exits_2() {
    let home = Home::new();
    let missing = home.dir.path().join("gone");
    home.agent(
        "o",
        &format!(
            "name = \"o\"\nmodel = \"openai/gpt-4o\"\nworkdir = \"{}\"\n",
            missing.display()
        ),
    );
    let out = home.run(&["run", "o", "--dry-run"]);
    assert_fails_with(&out, 2, &[&missing.display().to_string()]);
}

#[test]
fn run_with_a_missing_skill_override_exits_2() {
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "--dry-run", "--skill", "missing/SKILL.md"]);
    assert_fails_with(&out, 2, &["missing/SKILL.md"]);
}

#[test]
fn run_with_a_missing_agent_skill_exits_2() {
    let home = Home::new();
    home.agent(
        "o",
        "name = \"o\"\nmodel = \"openai/gpt-4o\"\nskill = \"skills/none/SKILL.md\"\n",
    );
    let out = home.run(&["run", "o", "--dry-run"]);
    assert_fails_with(&out, 2, &["skills/none/SKILL.md"]);
}

#[test]
fn agent_names_with_path_separators_are_rejected_with_exit_2() {
    let home = Home::new();
    // `agents/../x.toml` is the config dir's x.toml: valid, and never to be read.
    fs::write(
        home.config_dir().join("x.toml"),
        "name = \"x\"\nmodel = \"openai/gpt-4o\"\n",
    )
    .unwrap();
    let tools = TempDir::new("editor");
    let editor = editor_script(tools.path(), "editor");
    for args in [
        &["run", "../x", "--dry-run"][..],
        &["agents", "show", "../x"],
        &["agents", "edit", "../x"],
        &["agents", "init", "../evil"],
        &["run", "..", "--dry-run"],
        &["run", "a/b", "--dry-run"],
    ] {
        let out = home
            .axe()
            .env("EDITOR", &editor)
            .args(args)
            .output()
            .unwrap();
        assert_fails_with(&out, 2, &[]);
    }
    assert!(!home.config_dir().join("evil.toml").exists());
    assert!(!tools.path().join("editor.args").exists());
}

#[test]
fn unknown_keys_warn_on_stderr_but_the_run_succeeds() {
    let server = FakeServer::json(200, &openai_text("fine", 1, 1));
    let home = Home::new();
    home.agent(
        "typo",
        include_str!("../../../fixtures/agents/unknown_key.toml"),
    );
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "typo", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "fine\n");
    let err = stderr(&out);
    assert!(
        err.contains("sub_agent"),
        "no warning naming the key: {err:?}"
    );
    assert_eq!(server.requests().len(), 1);
}

// ---------------------------------------------------------------------------
// Exit code 3
// ---------------------------------------------------------------------------

#[test]
fn run_with_missing_key_exits_3() {
    let server = FakeServer::json(200, &openai_text("must not be asked", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails(
        &out,
        3,
        "API key for provider \"openai\" is not configured (set OPENAI_API_KEY or add it to config.toml)",
    );
    assert!(server.requests().is_empty());
}

#[test]
fn run_with_missing_anthropic_key_names_its_variable() {
    let home = Home::new();
    home.plain_agent("a", "anthropic/claude-sonnet-4-5");
    let out = home.run(&["run", "a", "-p", "hi"]);
    assert_fails(
        &out,
        3,
        "API key for provider \"anthropic\" is not configured (set ANTHROPIC_API_KEY or add it to config.toml)",
    );
}

/// Runs agent `o` (openai) against a server answering every request with
/// `status` and `body`.
fn run_against_status(status: u16, body: &str) -> Output {
    let server = FakeServer::json(status, body);
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    home.axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap()
}

#[test]
fn run_with_a_provider_401_exits_3_with_the_providers_message() {
    let out = run_against_status(
        401,
        r#"{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}"#,
    );
    assert_fails_with(&out, 3, &["Incorrect API key provided."]);
}

#[test]
fn run_with_a_provider_429_exits_3_with_the_providers_message() {
    let out = run_against_status(
        429,
        r#"{"error":{"message":"Rate limit reached for gpt-4o in organization org-1.","type":"requests","code":"rate_limit_exceeded"}}"#,
    );
    assert_fails_with(
        &out,
        3,
        &["Rate limit reached for gpt-4o in organization org-1."],
    );
}

#[test]
fn run_with_a_provider_500_exits_3_with_the_providers_message() {
    let out = run_against_status(
        500,
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
    );
    assert_fails_with(
        &out,
        3,
        &["The server had an error while processing your request."],
    );
}

#[test]
fn run_with_connection_refused_exits_3() {
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("AXE_OPENAI_BASE_URL", refused_url())
        .args(["run", "o", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails_with(&out, 3, &["refused"]);
}

#[test]
fn run_with_ollama_not_running_says_so_and_exits_3() {
    let home = Home::new();
    home.plain_agent("l", "ollama/llama3.1");
    let url = refused_url();
    let out = home
        .axe()
        .env("AXE_OLLAMA_BASE_URL", &url)
        .args(["run", "l", "--timeout", "30", "-p", "hi"])
        .output()
        .unwrap();
    assert_fails(
        &out,
        3,
        &format!("ollama: connection refused: is Ollama running? (expected at {url})"),
    );
}

#[test]
fn run_against_a_hanging_server_times_out_with_exit_3() {
    let server = FakeServer::start(vec![Reply::Hang]);
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let started = Instant::now();
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        // 3 s, not 1: counted from axe's start, 1 s can run out on a loaded
        // machine before the request is sent.
        .args(["run", "o", "--timeout", "3", "-p", "hi"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    assert_fails_with(&out, 3, &["timeout"]);
    assert!(
        elapsed < Duration::from_secs(12),
        "--timeout 3 took {elapsed:?}"
    );
    assert!(
        !server.requests_settled(1).is_empty(),
        "the request was sent"
    );
}

#[test]
fn run_without_agent_names_the_missing_argument_on_one_line() {
    let home = Home::new();
    let out = home.run(&["run"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("axe: ") && err.contains("agent"), "{err}");
}

#[test]
fn run_with_a_base_url_without_scheme_is_a_config_error() {
    let home = Home::new();
    home.agent("a", "name = \"a\"\nmodel = \"ollama/m\"\n");
    let out = home
        .axe()
        .args(["run", "a", "-p", "hi"])
        .env("AXE_OLLAMA_BASE_URL", "127.0.0.1:1")
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: invalid base URL for provider \"ollama\""),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}

#[test]
fn a_closed_stderr_does_not_change_the_exit_code() {
    use std::process::Stdio;
    let home = Home::new();
    let mut child = home
        .axe()
        .args(["run", "missing"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2));
}
