//! Providers by name through the binary (design §4.12): a preset reached
//! with its own key variable and `AXE_<NAME>_BASE_URL`, a
//! `[providers.<name>]` table with `kind` on each wire, extra headers, and
//! the errors that name the provider as the model string does; and the
//! agent file's `timeout`, the Go original's other key.

use super::*;
use serde_json::Value;

/// `axe run a -p hi` for an agent on `model`, with `env` set.
fn run_model(home: &Home, model: &str, env: &[(&str, &str)], extra: &[&str]) -> Output {
    home.plain_agent("a", model);
    let mut cmd = home.axe();
    cmd.args(["run", "a", "-p", "hi"]).args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn a_preset_is_reached_with_its_key_variable_and_its_base_url_variable() {
    let server = FakeServer::json(200, &openai_text("from groq", 3, 2));
    let home = Home::new();
    let trace = home.dir.path().join("t.jsonl");
    let out = run_model(
        &home,
        "groq/llama-3.3-70b",
        &[
            ("GROQ_API_KEY", "gsk-test-groq-key-0123456789"),
            ("AXE_GROQ_BASE_URL", &server.url),
        ],
        &["--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from groq\n");
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some("Bearer gsk-test-groq-key-0123456789")
    );
    assert_eq!(req.json()["model"], "llama-3.3-70b");
    let start: Value = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "run_start")
        .unwrap();
    assert_eq!(start["provider"], "groq");
}

#[test]
fn minimax_speaks_the_anthropic_wire() {
    let server = FakeServer::json(200, &anthropic_text("from minimax", 3, 2));
    let home = Home::new();
    let out = run_model(
        &home,
        "minimax/MiniMax-M2",
        &[
            ("MINIMAX_API_KEY", "mm-test-key-0123456789abcdef"),
            ("AXE_MINIMAX_BASE_URL", &server.url),
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(
        req.header("x-api-key"),
        Some("mm-test-key-0123456789abcdef")
    );
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
}

#[test]
fn a_table_with_kind_names_a_provider_on_each_wire() {
    for (kind, reply, path) in [
        ("openai", openai_text("ok", 1, 1), "/v1/chat/completions"),
        ("anthropic", anthropic_text("ok", 1, 1), "/v1/messages"),
        ("ollama", ollama_text("ok", 1, 1), "/api/chat"),
    ] {
        let server = FakeServer::json(200, &reply);
        let home = Home::new();
        // A local server: no key at all.
        home.config(&format!(
            "[providers.local-llm]\nkind = \"{kind}\"\nbase_url = \"{}\"\n",
            server.url
        ));
        let out = run_model(&home, "local-llm/qwen", &[], &[]);
        assert_eq!(code(&out), 0, "{kind}: {}", stderr(&out));
        assert_eq!(stdout(&out), "ok\n", "{kind}");
        assert_eq!(server.requests()[0].path, path, "{kind}");
        assert_eq!(server.requests()[0].json()["model"], "qwen", "{kind}");
    }
}

#[test]
fn a_providers_headers_and_the_go_originals_openrouter_keys_are_sent() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let home = Home::new();
    home.config(&format!(
        "[providers.openrouter]\nbase_url = \"{}/api/v1\"\nreferer = \"https://example.org/app\"\n\
         title = \"axe tests\"\nheaders = {{ X-Team = \"${{TEAM_NAME}}\" }}\n",
        server.url
    ));
    let out = run_model(
        &home,
        "openrouter/anthropic/claude-x",
        &[
            ("OPENROUTER_API_KEY", "sk-or-test-0123456789abcdef"),
            ("TEAM_NAME", "platform"),
        ],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/api/v1/chat/completions");
    assert_eq!(req.json()["model"], "anthropic/claude-x");
    assert_eq!(req.header("http-referer"), Some("https://example.org/app"));
    assert_eq!(req.header("x-title"), Some("axe tests"));
    assert_eq!(req.header("x-team"), Some("platform"));
}

#[test]
fn a_missing_key_names_the_presets_variable() {
    let home = Home::new();
    let out = run_model(&home, "google/gemini-2.5-flash", &[], &[]);
    assert_fails(
        &out,
        3,
        "API key for provider \"google\" is not configured (set GEMINI_API_KEY or add it to \
         config.toml)",
    );
}

#[test]
fn a_providers_error_is_said_under_its_name() {
    let server = FakeServer::json(
        401,
        r#"{"error":{"message":"Invalid API Key","type":"invalid_request_error"}}"#,
    );
    let home = Home::new();
    let out = run_model(
        &home,
        "deepseek/deepseek-chat",
        &[
            ("DEEPSEEK_API_KEY", "sk-deepseek-test-0123456789"),
            ("AXE_DEEPSEEK_BASE_URL", &server.url),
        ],
        &[],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("axe: deepseek: "),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_bad_kind_or_a_name_with_no_base_url_is_exit_2() {
    let home = Home::new();
    home.config("[providers.x]\nkind = \"grpc\"\n");
    let out = run_model(&home, "openai/m", &[], &["--dry-run"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "providers.x.kind must be \"openai\", \"anthropic\", \"ollama\" or \"responses\""
        ),
        "{}",
        stderr(&out)
    );
    let home = Home::new();
    home.config("[providers.mine]\nkind = \"openai\"\n");
    let out = run_model(&home, "mine/m", &[], &[]);
    assert_fails(
        &out,
        2,
        "provider \"mine\" has no base_url: set it in config.toml's [providers.mine] or \
         AXE_MINE_BASE_URL",
    );
}

#[test]
fn the_agent_files_timeout_bounds_the_run_and_the_flag_wins_over_it() {
    let server = FakeServer::route(|_| Reply::Hang);
    let home = Home::new();
    home.named_agent("slow", "openai/m", "timeout = 1\n");
    let run = |extra: &[&str]| {
        home.axe()
            .env("OPENAI_API_KEY", "sk-test-timeout-0123456789")
            .env("AXE_OPENAI_BASE_URL", &server.url)
            .args(["run", "slow", "-p", "hi", "--retries", "0"])
            .args(extra)
            .output()
            .unwrap()
    };
    let out = run(&[]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("timeout after 1s"),
        "{}",
        stderr(&out)
    );
    let out = run(&["--timeout", "2"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("timeout after 2s"),
        "{}",
        stderr(&out)
    );
    let show = home.run(&["agents", "show", "slow"]);
    assert!(stdout(&show).contains("Timeout:"), "{}", stdout(&show));
}

#[test]
fn the_go_originals_other_openai_compatible_presets_are_reached_by_name() {
    // Each with its key variable, and its base URL's own path (as the
    // preset's default has it) under the override.
    for (name, key_var, base_path, path) in [
        (
            "opencode",
            "OPENCODE_API_KEY",
            "/zen",
            "/zen/v1/chat/completions",
        ),
        (
            "atlascloud",
            "ATLASCLOUD_API_KEY",
            "/v1",
            "/v1/chat/completions",
        ),
        (
            "requesty",
            "REQUESTY_API_KEY",
            "/v1",
            "/v1/chat/completions",
        ),
        ("edenai", "EDENAI_API_KEY", "/v3", "/v3/chat/completions"),
    ] {
        let server = FakeServer::json(200, &openai_text(&format!("from {name}"), 3, 2));
        let home = Home::new();
        let key = format!("{name}-test-key-0123456789");
        let base = format!("{}{base_path}", server.url);
        let base_var = format!("AXE_{}_BASE_URL", name.to_uppercase());
        let out = run_model(
            &home,
            &format!("{name}/some-model"),
            &[(key_var, &key), (&base_var, &base)],
            &[],
        );
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), format!("from {name}\n"));
        let req = &server.requests()[0];
        assert_eq!(req.path, path, "{name}");
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {key}").as_str())
        );
        assert_eq!(req.json()["model"], "some-model", "{name}");
    }
}
