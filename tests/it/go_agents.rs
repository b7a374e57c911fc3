//! A user's agent directory written for the Go original runs unchanged
//! (DECISIONS D26): agent files in its format, with every key its agent
//! struct has (tools with web_search, `[[mcp_servers]]` over sse and
//! streamable HTTP with headers, `[memory]`, `[retry]` with `backoff`,
//! `[budget] max_tokens = 0`, `[params]`, `[sub_agents_config]`), its
//! provider names, found in `./axe/agents` as it searches: listed, checked
//! and dry-run by axe with no warning.

use crate::common::*;

/// A repository with `axe/agents/` and `axe/skills/` as a Go user keeps
/// them.
fn repo(home: &Home) -> std::path::PathBuf {
    let repo = home.dir.path().join("project");
    let agents = repo.join("axe/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::create_dir_all(repo.join("axe/skills/review")).unwrap();
    std::fs::write(
        repo.join("axe/skills/review/SKILL.md"),
        "# Review\nLook for bugs.\n",
    )
    .unwrap();
    std::fs::write(repo.join("main.go"), "package main\n").unwrap();
    std::fs::write(
        agents.join("reviewer.toml"),
        r#"name = "reviewer"
description = "Reviews Go code"
model = "anthropic/claude-sonnet-4-5"
system_prompt = "You review code."
skill = "skills/review/SKILL.md"
files = ["*.go"]
tools = ["read_file", "list_directory", "web_search", "url_fetch"]
allowed_hosts = ["pkg.go.dev"]
sub_agents = ["summarizer"]

[sub_agents_config]
max_depth = 2
parallel = true
timeout = 60

[[mcp_servers]]
name = "tracker"
url = "https://mcp.example.com/sse"
transport = "sse"
headers = { Authorization = "Bearer ${TRACKER_TOKEN}" }

[[mcp_servers]]
name = "docs"
url = "https://docs.example.com/mcp"
transport = "streamable-http"

[memory]
enabled = true
last_n = 5
max_entries = 100

[params]
temperature = 0.3
max_tokens = 4096

[retry]
max_retries = 3
backoff = "linear"
initial_delay_ms = 500
max_delay_ms = 30000

[budget]
max_tokens = 0
"#,
    )
    .unwrap();
    std::fs::write(
        agents.join("summarizer.toml"),
        "name = \"summarizer\"\ndescription = \"Summarizes\"\nmodel = \"google/gemini-2.5-flash\"\n\
         system_prompt = \"You summarize.\"\n\n[params]\ntemperature = 0\nmax_tokens = 0\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("router.toml"),
        "name = \"router\"\nmodel = \"openrouter/anthropic/claude-haiku-4.5\"\n",
    )
    .unwrap();
    repo
}

#[test]
fn a_go_original_agent_directory_is_listed_checked_and_dry_run_without_a_warning() {
    let home = Home::new();
    let repo = repo(&home);
    let run = |args: &[&str]| {
        home.axe()
            .current_dir(&repo)
            .env("XDG_DATA_HOME", home.dir.path().join("data"))
            .env("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
            .env("GEMINI_API_KEY", "gem-test-0123456789abcdef")
            .env("OPENROUTER_API_KEY", "sk-or-test-0123456789abcdef")
            .env("TRACKER_TOKEN", "tok-test-0123456789abcdef")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "reviewer - Reviews Go code  (in ./axe/agents)\nrouter  (in ./axe/agents)\n\
         summarizer - Summarizes  (in ./axe/agents)\n"
    );
    assert_eq!(stderr(&out), "");
    let out = run(&["agents", "check"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    for agent in ["reviewer", "summarizer", "router"] {
        let out = run(&["run", agent, "--dry-run", "-p", "hi"]);
        assert_eq!(code(&out), 0, "{agent}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{agent}: no warning");
    }
    let out = run(&["run", "reviewer", "--dry-run", "-p", "hi"]);
    let text = stdout(&out);
    assert!(
        text.contains("Look for bugs."),
        "the skill beside the file: {text}"
    );
    assert!(text.contains("package main"), "the context file: {text}");
    assert!(
        text.contains("tracker: sse https://mcp.example.com/sse"),
        "{text}"
    );
}
