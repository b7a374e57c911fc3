//! `axe agents show` and `axe agents export` across the three formats
//! (design §3.17): an imported agent shown with where it came from, any
//! agent written as Claude Code's, Codex's or axe's file with each key the
//! format cannot hold named on stderr, the file written whole and never
//! over another without `--force`, and the round trips axe -> Claude Code
//! -> axe and axe -> Codex -> axe keeping, field by field, what the
//! formats share.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::*;

/// `axe <args>` run from `dir`.
fn run_in(home: &Home, dir: &Path, args: &[&str]) -> Output {
    home.axe().current_dir(dir).args(args).output().unwrap()
}

/// A directory `<home>/<name>` that is a repository of its own (so another
/// tool's agents are looked for in it and in the home directory only).
fn project(home: &Home, name: &str) -> PathBuf {
    let dir = home.dir.path().join(name);
    fs::create_dir_all(dir.join(".git")).unwrap();
    dir
}

/// Writes `text` at `dir/rel`, its directories made.
fn write(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
    path
}

/// The stderr lines of an export that are its own (`dropped:`, `kept:`,
/// `widened:`), without the `axe: warning: ` prefix.
fn export_lines(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter_map(|l| l.strip_prefix("axe: warning: "))
        .filter(|l| {
            ["dropped: ", "kept: ", "widened: "]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect()
}

/// config.toml with the MCP server `git` the agents below name.
const CONFIG: &str = "[[mcp_servers]]\nname = \"git\"\ncommand = \"mcp-server-git\"\n\
                      args = [\"--repository\", \".\"]\n";

/// An axe agent with a value for every key of the agent file.
const EVERY_KEY: &str = r#"name = "rt"
description = "Round trip: keys, quotes \" and all"
model = "anthropic/claude-sonnet-4-5"
system_prompt = """
You are rt.

A second paragraph, and a line that would end a YAML header:
---
still the prompt.
"""
tools = ["read_file", "write_file", "edit_file", "run_command", "search_files", "list_directory", "url_fetch", "web_search"]
sub_agents = ["helper"]
agents_md = true
mcp_servers = ["git"]
mcp_tools = ["git__git_log"]
files = ["README.md"]
workdir = "."
timeout = 60
max_file_bytes = 1000
max_prompt_bytes = 100000
prompt_cache = false
stream = true
allowed_hosts = ["docs.rs"]

[sub_agents_config]
max_depth = 2

[params]
temperature = 0.2

[budget]
max_turns = 7
max_tokens = 1000

[sandbox]
network = true

[memory]
enabled = true

[retry]
max_retries = 1

[output]
schema = { type = "object" }
"#;

/// What Claude Code's format cannot hold of [`EVERY_KEY`], in the order
/// said.
const CLAUDE_DROPS: [&str; 14] = [
    "dropped: allowed_hosts (Claude Code's agent files have no list of hosts)",
    "dropped: budget.max_tokens (Claude Code bounds a sub-agent's turns only (maxTurns))",
    "dropped: files (Claude Code's agent files have no context files)",
    "dropped: max_file_bytes (Claude Code's agent files have no limits on what is read)",
    "dropped: max_prompt_bytes (Claude Code's agent files have no limits on what is read)",
    "dropped: memory (Claude Code's agent files have no memory of past runs)",
    "dropped: output (Claude Code's agent files have no output schema)",
    "dropped: params (Claude Code's agent files have no sampling parameters)",
    "dropped: prompt_cache (Claude Code's agent files have no prompt cache setting)",
    "dropped: retry (Claude Code's agent files have no retry settings)",
    "dropped: sandbox (Claude Code's agent files have no sandbox settings)",
    "dropped: stream (Claude Code's agent files have no streaming setting)",
    "dropped: sub_agents_config (Claude Code's agent files have no settings for calling sub-agents)",
    "dropped: timeout (Claude Code's agent files have no time limit)",
];

#[test]
fn export_to_claude_writes_the_imports_inverse_and_names_each_key_dropped() {
    let home = Home::new();
    home.config(CONFIG);
    let a = project(&home, "a");
    write(&a, "axe/agents/rt.toml", EVERY_KEY);
    let out = run_in(&home, &a, &["agents", "export", "rt", "--to", "claude"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "---\nname: rt\ndescription: \"Round trip: keys, quotes \\\" and all\"\n\
         tools: Read, Write, Edit, Bash, Grep, Glob, WebFetch, WebSearch, Agent(helper), \
         mcp__git__git_log\nmodel: sonnet\nmaxTurns: 7\n---\n\nYou are rt.\n\n\
         A second paragraph, and a line that would end a YAML header:\n---\nstill the prompt.\n"
    );
    let mut lines = CLAUDE_DROPS.to_vec();
    lines.push("dropped: workdir (Claude Code's agent files have no working directory)");
    assert_eq!(export_lines(&out), lines);
}

#[test]
fn axe_to_claude_to_axe_keeps_what_the_formats_share() {
    let home = Home::new();
    home.config(CONFIG);
    let (a, b) = (project(&home, "a"), project(&home, "b"));
    write(&a, "axe/agents/rt.toml", EVERY_KEY);
    let out = run_in(
        &home,
        &a,
        &[
            "agents",
            "export",
            "rt",
            "--to",
            "claude",
            "-o",
            "../b/.claude/agents/rt.md",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(export_lines(&out).len(), CLAUDE_DROPS.len() + 1);
    let back = run_in(&home, &b, &["agents", "export", "rt", "--to", "axe"]);
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    assert_eq!(stderr(&back), "");
    let before: toml::Table = EVERY_KEY.parse().unwrap();
    let after: toml::Table = stdout(&back).parse().unwrap();
    for key in [
        "name",
        "description",
        "model",
        "tools",
        "sub_agents",
        "agents_md",
        "mcp_servers",
        "mcp_tools",
    ] {
        assert_eq!(after.get(key), before.get(key), "{key}");
    }
    assert_eq!(
        after["system_prompt"].as_str(),
        before["system_prompt"].as_str().map(str::trim)
    );
    assert_eq!(after["budget"]["max_turns"].as_integer(), Some(7));
    assert_eq!(after["budget"].as_table().unwrap().len(), 1);
    let mut keys: Vec<&str> = after.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "agents_md",
            "budget",
            "description",
            "mcp_servers",
            "mcp_tools",
            "model",
            "name",
            "sub_agents",
            "system_prompt",
            "tools"
        ]
    );
    // And back to Claude Code's again: the same file.
    let again = run_in(&home, &b, &["agents", "export", "rt", "--to", "claude"]);
    assert_eq!(
        stdout(&again),
        fs::read_to_string(b.join(".claude/agents/rt.md")).unwrap()
    );
}

/// An axe agent on OpenAI's model with what Codex's format holds, and
/// some it does not.
const FOR_CODEX: &str = r#"name = "cx"
description = "Writes code"
model = "openai/gpt-5"
system_prompt = "You are cx."
tools = ["read_file", "list_directory", "search_files", "write_file", "edit_file", "run_command", "web_search"]
sub_agents = ["helper"]
mcp_servers = ["git"]
mcp_tools = ["git__git_log", "git__git_status"]

[budget]
max_turns = 3
"#;

#[test]
fn axe_to_codex_to_axe_keeps_what_the_formats_share() {
    let home = Home::new();
    // A Codex file's own servers are read only where config.toml allows
    // them (an imported file could start any command otherwise).
    home.config(&format!("{CONFIG}\n[import]\nallow_mcp_servers = true\n"));
    let (a, c) = (project(&home, "a"), project(&home, "c"));
    write(&a, "axe/agents/cx.toml", FOR_CODEX);
    let out = run_in(&home, &a, &["agents", "export", "cx", "--to", "codex"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = stdout(&out);
    assert_eq!(
        file,
        "name = \"cx\"\ndescription = \"Writes code\"\nmodel = \"gpt-5\"\n\
         sandbox_mode = \"workspace-write\"\ndeveloper_instructions = \"You are cx.\"\n\n\
         [mcp_servers.git]\ncommand = \"mcp-server-git\"\nargs = [\"--repository\", \".\"]\n\
         enabled_tools = [\"git_log\", \"git_status\"]\n"
    );
    assert_eq!(
        export_lines(&out),
        [
            "dropped: tools web_search (Codex's agent files choose tools only by sandbox_mode, \
             which has none of these)",
            "dropped: budget (Codex's agent files have no budget)",
            "dropped: sub_agents (Codex's agent files have no sub-agents)",
        ]
    );
    write(&c, ".codex/agents/cx.toml", &file);
    let back = run_in(&home, &c, &["agents", "export", "cx", "--to", "axe"]);
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    assert_eq!(stderr(&back), "");
    let before: toml::Table = FOR_CODEX.parse().unwrap();
    let after: toml::Table = stdout(&back).parse().unwrap();
    for key in ["name", "description", "model", "system_prompt", "mcp_tools"] {
        assert_eq!(after.get(key), before.get(key), "{key}");
    }
    // All but web_search, which Codex's format has no place for.
    assert_eq!(
        after["tools"].as_array().unwrap()[..],
        before["tools"].as_array().unwrap()[..6]
    );
    // config.toml's server, written out whole in the file, and back as an
    // imported server: sandboxed, whatever config.toml said.
    let mut server: toml::Table = CONFIG.parse().unwrap();
    if let Some(toml::Value::Table(t)) = server
        .get_mut("mcp_servers")
        .and_then(|s| s.as_array_mut())
        .and_then(|a| a.first_mut())
    {
        t.insert("sandbox".into(), toml::Value::Boolean(true));
    }
    assert_eq!(after["mcp_servers"], server["mcp_servers"]);
    assert_eq!(after["agents_md"].as_bool(), Some(true));
    assert!(after.get("sub_agents").is_none() && after.get("budget").is_none());
}

#[test]
fn what_codex_holds_differently_is_said() {
    let home = Home::new();
    home.agent(
        "reader",
        "name = \"reader\"\nmodel = \"ollama/llama3.1\"\ntools = [\"read_file\"]\nagents_md = false\n",
    );
    let out = home.run(&["agents", "export", "reader", "--to", "codex"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "name = \"reader\"\ndescription = \"\"\nmodel = \"ollama/llama3.1\"\nsandbox_mode = \"read-only\"\n\
         developer_instructions = \"\"\n"
    );
    assert_eq!(
        export_lines(&out),
        [
            "kept: model ollama/llama3.1 (not a bare OpenAI model: axe reads it back as it is)",
            "widened: sandbox_mode = \"read-only\" gives list_directory, search_files too",
            "dropped: agents_md = false (axe reads the project's AGENTS.md for every Codex agent file)",
        ]
    );
}

#[test]
fn an_agent_without_tools_is_written_with_none_for_claude_code() {
    let home = Home::new();
    home.agent("bare", "name = \"bare\"\n");
    let out = home.run(&["agents", "export", "bare", "--to", "claude"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // `tools: []`: without the key Claude Code would offer every tool.
    assert_eq!(
        stdout(&out),
        "---\nname: bare\ndescription: \"\"\ntools: []\nmodel: inherit\n---\n"
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn export_to_axe_of_axes_own_is_the_file_byte_for_byte() {
    let home = Home::new();
    let text = "# mine\nname = \"mine\"   # with comments\nmodel = \"openai/m\"\n";
    home.agent("mine", text);
    let out = home.run(&["agents", "export", "mine", "--to", "axe"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), text);
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_file_is_written_whole_and_never_over_another_without_force() {
    let home = Home::new();
    home.agent("w", "name = \"w\"\nmodel = \"openai/m\"\n");
    let file = home.dir.path().join("w.md");
    let export = |extra: &[&str]| {
        let mut args = vec!["agents", "export", "w", "--to", "claude", "-o", "w.md"];
        args.extend_from_slice(extra);
        home.run(&args)
    };
    let out = export(&[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written = fs::read_to_string(&file).unwrap();
    assert!(written.starts_with("---\nname: w\n"), "{written}");
    fs::write(&file, "mine").unwrap();
    let out = export(&[]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("w.md exists: --force replaces it"),
        "{}",
        stderr(&out)
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "mine");
    let out = export(&["--force"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&file).unwrap(), written);
    // No temporary file left beside it.
    let names: Vec<String> = fs::read_dir(home.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("w.md"))
        .collect();
    assert_eq!(names, ["w.md"]);
}

#[test]
fn a_bad_format_or_agent_is_a_clear_error() {
    let home = Home::new();
    home.agent("ok", "name = \"ok\"\n");
    let out = home.run(&["agents", "export", "ok", "--to", "gemini"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--to \"gemini\": expected claude, codex or axe"),
        "{}",
        stderr(&out)
    );
    let out = home.run(&["agents", "export", "ghost", "--to", "claude"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agent config not found: ghost"),
        "{}",
        stderr(&out)
    );
    home.agent("broken", "name = \"broken\"\ntimeout = -1\n");
    let out = home.run(&["agents", "export", "broken", "--to", "codex"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn agents_show_says_where_an_imported_agent_came_from() {
    let home = Home::new();
    write(
        home.dir.path(),
        ".claude/agents/rev.md",
        "---\nname: rev\ndescription: Reviews\ntools: Read, Grep, TodoWrite\nmodel: haiku\n\
         maxTurns: 4\n---\nYou review.\n",
    );
    let out = home.run(&["agents", "show", "rev"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = home.dir.path().join(".claude/agents/rev.md");
    assert_eq!(
        stdout(&out),
        format!(
            "Name:          rev\n\
             Description:   Reviews\n\
             Model:         anthropic/claude-haiku-4-5\n\
             System Prompt: You review.\n\
             Skill:         (none)\n\
             Files:         (none)\n\
             Workdir:       (none)\n\
             Sub-Agents:    (none)\n\
             AGENTS.md:     yes (the repository's root down to the workdir)\n\
             Tools:         read_file, search_files\n\
             Budget Turns:  4\n\
             Temperature:   default\n\
             Max Tokens:    default\n\
             File:          {}\n\
             Format:        Claude Code's, read as axe's\n\
             Notes:         model \"haiku\" is anthropic/claude-haiku-4-5, as config.toml's \
             [aliases] (or its default) says\n",
            file.display()
        )
    );
    assert!(
        stderr(&out).contains("not offered: TodoWrite"),
        "{}",
        stderr(&out)
    );
    write(
        home.dir.path(),
        ".codex/agents/cx.toml",
        "developer_instructions = \"Do it.\"\nmodel = \"gpt-5\"\nsandbox_mode = \"read-only\"\n",
    );
    let out = home.run(&["agents", "show", "cx"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    for row in [
        "Model:         openai/gpt-5\n",
        "Tools:         read_file, list_directory, search_files\n",
        "Format:        Codex's, read as axe's\n",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // axe's own: no Format row.
    home.agent("own", "name = \"own\"\n");
    let out = home.run(&["agents", "show", "own"]);
    assert!(!stdout(&out).contains("Format:"), "{}", stdout(&out));
}

#[test]
fn no_key_of_config_toml_is_written_out() {
    let home = Home::new();
    let key = "sk-export-secret-1234567890";
    home.config(&format!(
        "[providers.openai]\napi_key = \"{key}\"\n\n[[mcp_servers]]\nname = \"web\"\n\
         url = \"https://mcp.example.com/mcp\"\nheaders = {{ Authorization = \"Bearer {key}\" }}\n"
    ));
    home.agent(
        "k",
        "name = \"k\"\nmodel = \"openai/m\"\nmcp_servers = [\"web\"]\n",
    );
    let out = home.run(&["agents", "export", "k", "--to", "codex", "-o", "k.toml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let written = fs::read_to_string(home.dir.path().join("k.toml")).unwrap();
    assert!(!written.contains(key), "{written}");
    assert!(
        written.contains("http_headers = { Authorization = \"Bearer [redacted]\" }"),
        "{written}"
    );
}
