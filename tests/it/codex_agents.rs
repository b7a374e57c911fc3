//! Codex's agent files run by axe (design §3.17): `.codex/agents/*.toml` in
//! the project and in the home directory, after Claude Code's; each key as
//! axe reads it, seen in what is sent; each `sandbox_mode` as the tools
//! offered, `danger-full-access` refused unless config.toml allows it;
//! `mcp_servers` as axe's; what axe does not use listed once.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::*;

/// Writes `<dir>/.codex/agents/<name>.toml`.
fn codex_agent(dir: &Path, name: &str, text: &str) -> PathBuf {
    let agents = dir.join(".codex/agents");
    fs::create_dir_all(&agents).unwrap();
    let path = agents.join(format!("{name}.toml"));
    fs::write(&path, text).unwrap();
    path
}

/// The names of the tools an OpenAI request offers, sorted.
fn offered(req: &Recorded) -> Vec<String> {
    let body = req.json();
    let mut names: Vec<String> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

const READING: [&str; 3] = ["list_directory", "read_file", "search_files"];
const WRITING: [&str; 6] = [
    "edit_file",
    "list_directory",
    "read_file",
    "run_command",
    "search_files",
    "write_file",
];

/// Runs agent `name` once on a fake OpenAI; the request it sent and stderr.
fn run_once(home: &Home, name: &str) -> (Recorded, String) {
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", name, "-p", "look"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    (server.only_request(), stderr(&out))
}

#[test]
fn each_key_reaches_the_request_and_unused_keys_are_listed_once() {
    let home = Home::new();
    codex_agent(
        home.dir.path(),
        "reviewer",
        "name = \"reviewer\"\ndescription = \"Reviews code\"\n\
         developer_instructions = \"\"\"\nYou are reviewer. Be brief.\n\"\"\"\n\
         model = \"small-model\"\nmodel_reasoning_effort = \"high\"\n\
         sandbox_mode = \"workspace-write\"\nnickname_candidates = [\"r\"]\n",
    );
    let (req, err) = run_once(&home, "reviewer");
    // A bare model is OpenAI's.
    assert_eq!(req.json()["model"], "small-model");
    // Its reasoning effort is axe's (design §4.15).
    assert_eq!(req.json()["reasoning_effort"], "high");
    assert_eq!(req.system_prompt(), "You are reviewer. Be brief.");
    assert_eq!(offered(&req), WRITING);
    assert!(
        err.contains("reviewer.toml: keys axe does not use: nickname_candidates\n"),
        "{err}"
    );
    assert_eq!(err.matches("keys axe does not use").count(), 1, "{err}");
}

#[test]
fn each_sandbox_mode_is_the_tools_offered() {
    let home = Home::new();
    let file = |mode: &str| format!("model = \"openai/m\"\n{mode}developer_instructions = \"x\"\n");
    codex_agent(
        home.dir.path(),
        "ro",
        &file("sandbox_mode = \"read-only\"\n"),
    );
    codex_agent(
        home.dir.path(),
        "ww",
        &file("sandbox_mode = \"workspace-write\"\n"),
    );
    codex_agent(home.dir.path(), "none", &file(""));
    assert_eq!(offered(&run_once(&home, "ro").0), READING);
    assert_eq!(offered(&run_once(&home, "ww").0), WRITING);
    assert_eq!(offered(&run_once(&home, "none").0), READING);
    let out = home.run(&["run", "none", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("--- Notes ---\nthe file has no `sandbox_mode`"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn danger_full_access_is_refused_unless_config_allows_it() {
    let home = Home::new();
    codex_agent(
        home.dir.path(),
        "yolo",
        "model = \"openai/m\"\nsandbox_mode = \"danger-full-access\"\n",
    );
    let out = home.run(&["run", "yolo", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("yolo.toml") && err.contains("\"danger-full-access\" is refused"),
        "{err}"
    );
    home.config("[import]\nallow_full_access = true\n");
    let (req, err) = run_once(&home, "yolo");
    assert_eq!(offered(&req), WRITING);
    assert!(
        err.contains("runs as \"workspace-write\": axe never runs a command outside its sandbox"),
        "{err}"
    );
    // Its commands are still confined: dry-run shows the sandbox.
    let out = home.run(&["run", "yolo", "--dry-run", "-p", "x"]);
    assert!(stdout(&out).contains("Sandbox:"), "{}", stdout(&out));
}

#[test]
fn dry_run_shows_the_reasoning_effort_and_mcp_servers_as_axes() {
    let home = Home::new();
    // An imported file's servers are refused without it (imports_hostile.rs).
    home.config("[import]\nallow_mcp_servers = true\n");
    codex_agent(
        home.dir.path(),
        "gitty",
        "model = \"openai/m\"\nmodel_reasoning_effort = \"low\"\n\
         [mcp_servers.git]\ncommand = \"git-mcp\"\nargs = [\"--repo\", \".\"]\n\
         enabled_tools = [\"log\"]\nstartup_timeout_sec = 5\n\
         [mcp_servers.off]\ncommand = \"off-mcp\"\nenabled = false\n\
         [mcp_servers.all]\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    let out = home.run(&["run", "gitty", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("git: stdio git-mcp --repo ."), "{text}");
    assert!(text.contains("Only tools: git__log"), "{text}");
    assert!(!text.contains("off-mcp"), "{text}");
    // `all` names no tools, and axe's mcp_tools is one list: warned of.
    assert!(
        stderr(&out).contains(
            "offer no tools, since another names its own (axe's mcp_tools is one list): all"
        ),
        "{}",
        stderr(&out)
    );
    assert!(text.contains(", reasoning_effort=low\n"), "{text}");
    assert!(
        stderr(&out).contains("keys axe does not use: mcp_servers.git.startup_timeout_sec\n"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn codex_dirs_come_after_claudes_up_to_the_repository_root() {
    let home = Home::new();
    let outside = home.dir.path().join("outside");
    let repo = outside.join("repo");
    let deep = repo.join("src");
    fs::create_dir_all(&deep).unwrap();
    fs::create_dir_all(repo.join(".git")).unwrap();
    codex_agent(
        &repo,
        "a",
        "model = \"openai/m\"\ndeveloper_instructions = \"repo a\"\n",
    );
    codex_agent(
        &outside,
        "c",
        "model = \"openai/m\"\ndeveloper_instructions = \"c\"\n",
    );
    codex_agent(
        home.dir.path(),
        "h",
        "model = \"m\"\ndescription = \"home h\"\n",
    );
    // Claude Code's file of the same name comes first.
    let claude = deep.join(".claude/agents");
    fs::create_dir_all(&claude).unwrap();
    fs::write(claude.join("h.md"), "---\nmodel: openai/m\n---\nclaude h\n").unwrap();
    let dry = |name: &str| {
        home.axe()
            .current_dir(&deep)
            .args(["run", name, "--dry-run", "-p", "x"])
            .output()
            .unwrap()
    };
    let out = dry("a");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("repo a"), "{}", stdout(&out));
    let out = dry("h");
    assert!(stdout(&out).contains("claude h"), "{}", stdout(&out));
    assert_eq!(code(&dry("c")), 2);
    let list = home
        .axe()
        .current_dir(&deep)
        .args(["agents", "list"])
        .output()
        .unwrap();
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(
        stdout(&list),
        format!(
            "a  (Codex, in {})\nh  (Claude Code, in ./.claude/agents)\n",
            repo.join(".codex/agents").display(),
        )
    );
}

#[test]
fn a_file_that_is_not_one_is_a_clear_error() {
    let home = Home::new();
    for (name, text, why) in [
        ("broken", "model = \n", "broken.toml"),
        (
            "mode",
            "sandbox_mode = \"yolo\"\n",
            "expected \"read-only\"",
        ),
        ("num", "developer_instructions = 3\n", "must be a string"),
    ] {
        codex_agent(home.dir.path(), name, text);
        let out = home.run(&["run", name, "--dry-run", "-p", "x", "--model", "openai/m"]);
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{name}.toml")) && err.contains(why),
            "{name}: {err}"
        );
    }
}
