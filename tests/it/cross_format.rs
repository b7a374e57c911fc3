//! Agents of the three formats together (design §3.17): an axe agent
//! calling a Claude Code one and a Codex one, a Claude Code agent's `Task`
//! reaching a Codex one; Codex files from a public collection
//! (`fixtures/codex-agents/`) dry-run; `config init`'s config.toml with the
//! import's settings (`[aliases]`, `[import]`) to uncomment.

use std::fs;
use std::path::Path;

use crate::common::*;

/// Writes `text` at `<home>/rel`, its directories made.
fn write(home: &Home, rel: &str, text: &str) {
    let path = home.dir.path().join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, text).unwrap();
}

/// A fake OpenAI: `caller`'s first turn calls each of `callees` (at once),
/// its next answers with their results joined; any other agent answers
/// `from <name>`.
fn delegating(caller: &'static str, callees: &'static [&'static str]) -> FakeServer {
    FakeServer::route(move |req| {
        if req.who() == caller && !req.has_tool_results() {
            let ids: Vec<String> = (0..callees.len()).map(|i| format!("c{i}")).collect();
            let calls: Vec<Call> = callees
                .iter()
                .zip(&ids)
                .map(|(c, id)| (id.as_str(), "call_agent", delegate(c, "go")))
                .collect();
            Reply::Json(200, openai_tool_calls(&calls, 1, 1))
        } else if req.who() == caller {
            Reply::Json(200, openai_text(&req.tool_result_texts().join("+"), 1, 1))
        } else {
            Reply::Json(200, openai_text(&format!("from {}", req.who()), 1, 1))
        }
    })
}

#[test]
fn an_axe_agent_calls_a_claude_code_agent_and_a_codex_agent() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/lead-model",
        "sub_agents = [\"cl\", \"cx\"]\n",
    );
    write(
        &home,
        ".claude/agents/cl.md",
        "---\nname: cl\nmodel: inherit\n---\nYou are cl.\n",
    );
    write(
        &home,
        ".codex/agents/cx.toml",
        "developer_instructions = \"You are cx.\"\nsandbox_mode = \"read-only\"\n",
    );
    let server = delegating("lead", &["cl", "cx"]);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from cl+from cx\n");
    for who in ["cl", "cx"] {
        let sent = server.sent_by(who);
        assert_eq!(sent.len(), 1, "{who}");
        // Neither names a model: each runs on its caller's.
        assert_eq!(sent[0].json()["model"], "lead-model", "{who}");
    }
}

#[test]
fn a_claude_code_agents_task_reaches_a_codex_agent() {
    let home = Home::new();
    write(
        &home,
        ".claude/agents/boss.md",
        "---\nname: boss\ntools: Task\nmodel: openai/m\n---\nYou are boss.\n",
    );
    write(
        &home,
        ".codex/agents/cx.toml",
        "developer_instructions = \"You are cx.\"\nmodel = \"m2\"\n",
    );
    let server = delegating("boss", &["cx"]);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "boss", "-p", "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "from cx\n");
    let cx = server.sent_by("cx");
    assert_eq!(cx.len(), 1);
    // Its own model: a bare one is OpenAI's.
    assert_eq!(cx[0].json()["model"], "m2");
    let dry = home.run(&["run", "boss", "--dry-run", "-p", "x"]);
    assert!(
        stdout(&dry).contains("--- Sub-Agents ---\ncx"),
        "{}",
        stdout(&dry)
    );
}

#[test]
fn codex_files_from_a_public_collection_dry_run() {
    let home = Home::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/codex-agents");
    let agents = home.dir.path().join(".codex/agents");
    fs::create_dir_all(&agents).unwrap();
    for f in [
        "code-reviewer",
        "documentation-engineer",
        "browser-debugger",
    ] {
        let name = format!("{f}.toml");
        fs::copy(fixtures.join(&name), agents.join(&name)).unwrap();
    }
    let dry = |name: &str| {
        let out = home.run(&["run", name, "--dry-run", "-p", "x"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let (text, err) = dry("code-reviewer");
    assert!(text.contains("Model:    openai/gpt-5.4\n"), "{text}");
    assert!(
        text.contains("Own code quality review work as evidence-driven"),
        "{text}"
    );
    assert!(
        text.contains("--- Tools ---\nread_file, list_directory, search_files\n"),
        "{text}"
    );
    // Its model_reasoning_effort is axe's (design §4.15), no longer unused.
    assert!(text.contains(", reasoning_effort=high\n"), "{text}");
    assert!(!err.contains("keys axe does not use"), "{err}");
    let (text, _) = dry("documentation-engineer");
    assert!(
        text.contains("Model:    openai/gpt-5.3-codex-spark\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "--- Tools ---\nread_file, list_directory, search_files, write_file, edit_file, run_command\n"
        ),
        "{text}"
    );
    // Its MCP server is refused until config.toml allows imported servers.
    let refused = home.run(&["run", "browser-debugger", "--dry-run", "-p", "x"]);
    assert_eq!(code(&refused), 2, "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("`mcp_servers.chrome_devtools` is refused"),
        "{}",
        stderr(&refused)
    );
    home.config("[import]\nallow_mcp_servers = true\n");
    let (text, err) = dry("browser-debugger");
    assert!(
        text.contains("chrome_devtools: streamable-http http://localhost:3000/mcp"),
        "{text}"
    );
    assert!(
        err.contains("keys axe does not use: mcp_servers.chrome_devtools.startup_timeout_sec\n"),
        "{err}"
    );
    let list = home.run(&["agents", "list"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(
        stdout(&list).matches("(Codex, in ").count(),
        3,
        "{}",
        stdout(&list)
    );
}

#[test]
fn config_inits_template_has_the_imports_settings_to_uncomment() {
    let home = Home::new();
    let out = home.run(&["config", "init"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let path = home.config_dir().join("config.toml");
    let template = fs::read_to_string(&path).unwrap();
    // Uncommented, the two tables are read, and do what they say.
    let mut on = String::new();
    let mut inside = false;
    for line in template.lines() {
        if line.starts_with("# [") {
            inside = line == "# [aliases]" || line == "# [import]";
        } else if !line.starts_with("# ") || line.starts_with("#  ") {
            inside = false;
        }
        let uncommented = line.strip_prefix("# ").filter(|_| inside);
        on.push_str(uncommented.unwrap_or(line));
        on.push('\n');
    }
    assert!(
        on.contains("\n[import]\nallow_full_access = true\n"),
        "{on}"
    );
    assert!(on.contains("\n[aliases]\nsonnet = "), "{on}");
    fs::write(&path, &on).unwrap();
    write(
        &home,
        ".codex/agents/yolo.toml",
        "model = \"openai/m\"\nsandbox_mode = \"danger-full-access\"\n",
    );
    let out = home.run(&["run", "yolo", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("runs as \"workspace-write\""),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("unknown"), "{}", stderr(&out));
}

#[test]
fn disallowed_tools_take_tools_away_never_add_them() {
    let home = Home::new();
    write(
        &home,
        ".claude/agents/narrow.md",
        "---\nname: narrow\nmodel: openai/m\ntools: Read, Bash, Glob, Grep, Task(helper)\n\
         disallowedTools: [Bash, LS, Agent]\n---\nYou are narrow.\n",
    );
    let out = home.run(&["run", "narrow", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("--- Tools ---\nread_file, search_files\n"),
        "{text}"
    );
    assert!(text.contains("--- Sub-Agents ---\n(none)\n"), "{text}");
    // Read, and not named as a key axe does not use.
    assert_eq!(stderr(&out), "");
}
