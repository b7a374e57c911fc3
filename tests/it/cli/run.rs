//! `axe run` on each provider (design §2.4–§2.6, §2.9): the answer and
//! nothing else on stdout, the user message from `-p` or stdin, keys and
//! base URLs from the environment and config.toml, the command-line
//! overrides, and the `--json` and `--verbose` reports.

use super::*;
use crate::common::*;

// ---------------------------------------------------------------------------
// run: each provider
// ---------------------------------------------------------------------------

#[test]
fn run_prints_the_anthropic_answer_and_nothing_else() {
    let server = FakeServer::json(200, &anthropic_text("The answer is 42.", 20, 7));
    let home = Home::new();
    home.plain_agent("a", "anthropic/claude-sonnet-4-5");
    let out = home
        .axe_on(&[(P::Anthropic, &server)])
        .args(["run", "a", "-p", "What is the answer?"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "The answer is 42.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some(ANTHROPIC_KEY));
    let body = req.json();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["messages"][0]["role"], "user");
    let content = &body["messages"][0]["content"];
    let text = content
        .as_str()
        .map(str::to_string)
        .or_else(|| content[0]["text"].as_str().map(str::to_string));
    assert_eq!(text.as_deref(), Some("What is the answer?"), "{body}");
}

#[test]
fn run_prints_the_openai_answer_and_nothing_else() {
    let server = FakeServer::json(200, &openai_text("Hello from OpenAI.", 12, 3));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "--prompt", "Say hello."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hello from OpenAI.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(&*format!("Bearer {OPENAI_KEY}"))
    );
    assert_eq!(req.json()["model"], "gpt-4o");
    assert_eq!(openai_user_message(&req), "Say hello.");
}

#[test]
fn run_prints_the_ollama_answer_without_any_key() {
    let server = FakeServer::json(200, &ollama_text("Hi from llama.", 9, 4));
    let home = Home::new();
    home.plain_agent("l", "ollama/llama3.1");
    let out = home
        .axe()
        .env("AXE_OLLAMA_BASE_URL", &server.url)
        .args(["run", "l", "-p", "Greet me."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Hi from llama.\n");
    assert_eq!(stderr(&out), "");
    let req = server.only_request();
    assert_eq!(req.path, "/api/chat");
    let body = req.json();
    assert_eq!(body["model"], "llama3.1");
    assert_eq!(body["stream"], false);
    let last = body["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["content"], "Greet me.");
}

#[test]
fn run_prints_a_multiline_answer_verbatim() {
    let answer = "Line one.\n\n- item\n- item 2\n";
    let server = FakeServer::json(200, &openai_text(answer, 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "-p", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), answer);
}

// ---------------------------------------------------------------------------
// run: the user message
// ---------------------------------------------------------------------------

#[test]
fn run_sends_piped_stdin_as_the_user_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "o"]);
    let out = output_with_stdin(cmd, "Summarise this.\nSecond line.");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert_eq!(
        openai_user_message(&server.only_request()),
        "Summarise this.\nSecond line."
    );
}

#[test]
fn run_prompt_flag_beats_stdin() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "o", "--prompt", "from the flag"]);
    let out = output_with_stdin(cmd, "from stdin");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), "from the flag");
}

#[test]
fn run_with_whitespace_stdin_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "o"]);
    let out = output_with_stdin(cmd, "  \n\t\n");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), DEFAULT_MESSAGE);
}

#[test]
fn run_with_empty_stdin_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    // Home::axe() gives a null (empty, non-terminal) stdin.
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(openai_user_message(&server.only_request()), DEFAULT_MESSAGE);
}

// ---------------------------------------------------------------------------
// run: base URL and key from config.toml and the environment
// ---------------------------------------------------------------------------

#[test]
fn run_reads_base_url_and_key_from_config_toml_when_env_is_unset() {
    let server = FakeServer::json(200, &openai_text("from the file's server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        server.url
    ));
    home.plain_agent("o", "openai/gpt-4o");
    let out = home.run(&["run", "o", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the file's server\n");
    assert_eq!(
        server.only_request().header("authorization"),
        Some("Bearer sk-file-key-4242")
    );
}

#[test]
fn run_env_beats_config_toml_for_base_url_and_key() {
    let file_server = FakeServer::json(200, &openai_text("wrong server", 1, 1));
    let env_server = FakeServer::json(200, &openai_text("env server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        file_server.url
    ));
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", "sk-env-key-7777")
        .env("AXE_OPENAI_BASE_URL", &env_server.url)
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "env server\n");
    assert_eq!(
        env_server.only_request().header("authorization"),
        Some("Bearer sk-env-key-7777")
    );
    assert!(file_server.requests().is_empty());
}

#[test]
fn run_treats_empty_env_vars_as_unset() {
    let server = FakeServer::json(200, &openai_text("from the file's server", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openai]\napi_key = \"sk-file-key-4242\"\nbase_url = \"{}\"\n",
        server.url
    ));
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe()
        .env("OPENAI_API_KEY", "")
        .env("AXE_OPENAI_BASE_URL", "")
        .args(["run", "o", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from the file's server\n");
    assert_eq!(
        server.only_request().header("authorization"),
        Some("Bearer sk-file-key-4242")
    );
}

// ---------------------------------------------------------------------------
// run: overrides
// ---------------------------------------------------------------------------

#[test]
fn run_model_override_splits_at_the_first_slash() {
    let server = FakeServer::json(200, &openai_text("from llama", 1, 1));
    let home = Home::new();
    // The agent's own provider has no key: only the override is used.
    home.plain_agent("a", "anthropic/claude-sonnet-4-5");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args([
            "run",
            "a",
            "--model",
            "openai/meta-llama/Llama-3.1-8B-Instruct",
            "-p",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from llama\n");
    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.json()["model"], "meta-llama/Llama-3.1-8B-Instruct");
}

#[test]
fn run_skill_override_replaces_the_agents_skill() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    write(
        &home.config_dir().join("skills/own/SKILL.md"),
        "OWN SKILL TEXT",
    );
    home.agent(
        "s",
        "name = \"s\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\nskill = \"skills/own/SKILL.md\"\n",
    );
    // --skill is relative to the current directory (the home dir here).
    write(&home.dir.path().join("other.md"), "OVERRIDE SKILL TEXT");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "s", "--skill", "other.md", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        openai_system_message(&server.only_request()),
        "Base.\n\n---\n\n## Skill\n\nOVERRIDE SKILL TEXT"
    );
}

#[test]
fn run_uses_the_agents_skill_relative_to_the_config_dir() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    write(
        &home.config_dir().join("skills/own/SKILL.md"),
        "OWN SKILL TEXT",
    );
    home.agent(
        "s",
        "name = \"s\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\nskill = \"skills/own/SKILL.md\"\n",
    );
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "s", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        openai_system_message(&server.only_request()),
        "Base.\n\n---\n\n## Skill\n\nOWN SKILL TEXT"
    );
}

#[test]
fn run_workdir_override_beats_the_agents_workdir() {
    let home = Home::new();
    let from_toml = TempDir::new("wd-toml");
    let from_flag = TempDir::new("wd-flag");
    write(&from_toml.path().join("toml.txt"), "toml");
    write(&from_flag.path().join("flag.txt"), "flag");
    home.agent(
        "w",
        &format!(
            "name = \"w\"\nmodel = \"openai/gpt-4o\"\nworkdir = \"{}\"\nfiles = [\"*.txt\"]\n",
            from_toml.path().display()
        ),
    );

    let out = home.run(&["run", "w", "--dry-run", "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(&format!("Workdir:  {}\n", from_toml.path().display())),
        "{text}"
    );
    assert!(text.contains("--- Files (1) ---\ntoml.txt\n"), "{text}");

    let flag = from_flag.path().display().to_string();
    let out = home.run(&["run", "w", "--dry-run", "--workdir", &flag, "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("Workdir:  {flag}\n")), "{text}");
    assert!(text.contains("--- Files (1) ---\nflag.txt\n"), "{text}");
    assert!(text.contains("### flag.txt\n```txt\nflag\n```"), "{text}");
    assert!(!text.contains("toml.txt"), "{text}");
}

// ---------------------------------------------------------------------------
// --json and --verbose
// ---------------------------------------------------------------------------

#[test]
fn run_json_prints_one_object_with_exactly_the_documented_fields() {
    let server = FakeServer::json(200, &openai_text("The answer.", 12, 3));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "--json", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert_eq!(text.trim_end().lines().count(), 1, "one line: {text:?}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("stdout is one JSON value");
    let obj = v.as_object().expect("a JSON object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "agents",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "content",
            "cost_usd",
            "duration_ms",
            "input_tokens",
            "model",
            "output_tokens",
            "reasoning_tokens",
            "refused",
            "retry_attempts",
            "run_id",
            "stop_reason",
            "tool_call_details",
            "tool_calls",
            "total_cache_creation_input_tokens",
            "total_cache_read_input_tokens",
            "total_cost_usd",
            "total_input_tokens",
            "total_output_tokens",
            "total_reasoning_tokens",
        ]
    );
    // A single agent: the tree's totals are its own, in one agents entry.
    assert_eq!(obj["total_input_tokens"], 12);
    assert_eq!(obj["total_output_tokens"], 3);
    let agents = obj["agents"].as_array().expect("agents array");
    assert_eq!(agents.len(), 1, "{v}");
    assert_eq!(agents[0]["name"], "o");
    assert_eq!(agents[0]["calls"], 1);
    assert_eq!(agents[0]["turns"], 1);
    assert_eq!(agents[0]["input_tokens"], 12);
    assert_eq!(agents[0]["errors"], 0);
    assert_eq!(obj["run_id"].as_str().map(str::len), Some(16), "{v}");
    assert_eq!(obj["model"], "openai/gpt-4o");
    assert_eq!(obj["content"], "The answer.");
    assert_eq!(obj["input_tokens"], 12);
    assert_eq!(obj["output_tokens"], 3);
    assert_eq!(obj["stop_reason"], "stop");
    assert!(obj["duration_ms"].is_u64(), "{v}");
    assert_eq!(obj["tool_calls"], 0);
    assert_eq!(obj["retry_attempts"], 0);
}

#[test]
fn run_verbose_reports_on_stderr_and_keeps_stdout_the_answer() {
    let server = FakeServer::json(200, &openai_text("Just the answer.", 12, 3));
    let home = Home::new();
    home.agent(
        "o",
        "name = \"o\"\nmodel = \"openai/gpt-4o\"\n[params]\ntemperature = 0.7\nmax_tokens = 256\n",
    );
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "o", "--verbose", "--timeout", "30"]);
    let out = output_with_stdin(cmd, "piped question");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "Just the answer.\n");
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let has = |line: &str| lines.contains(&line);
    let starts = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    assert!(has("Model:    openai/gpt-4o"), "{err}");
    assert!(
        has(&format!("Workdir:  {}", home.dir.path().display())),
        "{err}"
    );
    assert!(starts("Skill:"), "{err}");
    assert!(has("Files:    0 file(s)"), "{err}");
    assert!(has("Stdin:    yes"), "{err}");
    assert!(has("Timeout:  30s"), "{err}");
    assert!(has("Params:   temperature=0.7, max_tokens=256"), "{err}");
    assert!(
        lines.iter().any(|l| l
            .strip_prefix("Duration: ")
            .and_then(|r| r.strip_suffix("ms"))
            .is_some_and(|n| n.parse::<u64>().is_ok())),
        "{err}"
    );
    assert!(has("Tokens:   12 input, 3 output"), "{err}");
    assert!(has("Stop:     stop"), "{err}");
    // The header comes before the call, the footer after it.
    let pos = |p: &str| lines.iter().position(|l| l.starts_with(p)).unwrap();
    assert!(pos("Params:") < pos("Duration:"), "{err}");
}

#[test]
fn run_verbose_says_stdin_no_with_a_prompt() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "o", "-v", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    assert!(stderr(&out).lines().any(|l| l == "Stdin:    no"));
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l == "Params:   temperature=default, max_tokens=default")
    );
}

#[test]
fn run_with_huge_timeout_does_not_overflow_the_clock() {
    let server = FakeServer::json(200, &openai_text("fine", 1, 1));
    let home = Home::new();
    home.agent("big", "name = \"big\"\nmodel = \"openai/gpt-4o\"\n");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args([
            "run",
            "big",
            "-p",
            "hi",
            "--timeout",
            "18446744073709551615",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "fine\n");
}

#[test]
fn run_with_blank_prompt_sends_the_default_message() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.agent("a", "name = \"a\"\nmodel = \"openai/m\"\n");
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "a", "-p", "  "])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = server.only_request().json();
    assert_eq!(
        body["messages"][0]["content"],
        "Execute the task described in your instructions."
    );
}

#[test]
fn ollama_host_without_scheme_gets_port_11434_and_keeps_its_path() {
    let home = Home::new();
    home.agent("o", "name = \"o\"\nmodel = \"ollama/m\"\n");
    // Nothing listens on port 1: the message shows the URL axe derived.
    let out = home
        .axe()
        .args(["run", "o", "-p", "hi"])
        .env("OLLAMA_HOST", "127.0.0.1:1/ollama")
        .output()
        .unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("expected at http://127.0.0.1:1/ollama)"),
        "{}",
        stderr(&out)
    );
}
