//! Claude Code's agent files run by axe (design §3.17): `.claude/agents/*.md`
//! in the project and in the home directory, after axe's own directories;
//! each key of the header as axe reads it, seen in what is sent; `agents
//! list` saying where each came from; `--dry-run` saying what axe does
//! differently; and three files from a public collection
//! (`fixtures/claude-agents/`), dry-run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::json;

use crate::common::*;

/// Writes `<dir>/.claude/agents/<name>.md`.
fn claude_agent(dir: &Path, name: &str, text: &str) -> PathBuf {
    let agents = dir.join(".claude/agents");
    fs::create_dir_all(&agents).unwrap();
    let path = agents.join(format!("{name}.md"));
    fs::write(&path, text).unwrap();
    path
}

/// `axe <args>` run from `dir`.
fn run_in(home: &Home, dir: &Path, args: &[&str]) -> Output {
    home.axe().current_dir(dir).args(args).output().unwrap()
}

/// The names of the tools an OpenAI request offers.
fn offered(req: &Recorded) -> Vec<String> {
    let body = req.json();
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn each_key_of_the_header_reaches_the_request_under_axes_names() {
    let home = Home::new();
    // `haiku` through config.toml's [aliases], onto the fake.
    home.config("[aliases]\nhaiku = \"openai/small-model\"\n");
    claude_agent(
        home.dir.path(),
        "reviewer",
        "---\nname: reviewer\ndescription: Reviews code\n\
         tools: Read, Write, Edit, MultiEdit, Bash, Grep, Glob, LS, WebFetch, WebSearch, TodoWrite\n\
         model: haiku\ncolor: red\npermissionMode: plan\n---\n\nYou are reviewer. Be brief.\n",
    );
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "reviewer", "-p", "look"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "ok\n");
    let req = server.only_request();
    assert_eq!(req.json()["model"], "small-model");
    assert_eq!(req.system_prompt(), "You are reviewer. Be brief.");
    let mut tools = offered(&req);
    tools.sort();
    assert_eq!(
        tools,
        [
            "edit_file",
            "list_directory",
            "read_file",
            "run_command",
            "search_files",
            "url_fetch",
            "web_search",
            "write_file"
        ]
    );
    let err = stderr(&out);
    assert!(
        err.contains("tools axe does not have, not offered: TodoWrite"),
        "{err}"
    );
    assert!(
        err.contains("keys axe does not use: color, permissionMode"),
        "{err}"
    );
    assert_eq!(err.matches("keys axe does not use").count(), 1, "{err}");
}

#[test]
fn the_default_aliases_and_full_ids_name_anthropic_models() {
    let home = Home::new();
    for (name, model, shown) in [
        ("a", "sonnet", "anthropic/claude-sonnet-4-5"),
        ("b", "opus", "anthropic/claude-opus-4-1"),
        (
            "c",
            "claude-3-5-haiku-20241022",
            "anthropic/claude-3-5-haiku-20241022",
        ),
        ("d", "ollama/llama3.1", "ollama/llama3.1"),
    ] {
        claude_agent(
            home.dir.path(),
            name,
            &format!("---\nname: {name}\nmodel: {model}\n---\nHi.\n"),
        );
        let out = home.run(&["run", name, "--dry-run", "-p", "x"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            stdout(&out).contains(&format!("Model:    {shown}\n")),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn inherit_runs_on_the_callers_model() {
    let home = Home::new();
    home.named_agent("lead", "openai/lead-model", "sub_agents = [\"worker\"]\n");
    claude_agent(
        home.dir.path(),
        "worker",
        "---\nname: worker\nmodel: inherit\n---\nYou are worker.\n",
    );
    let server = FakeServer::route(|req| {
        if req.who() == "lead" && !req.has_tool_results() {
            let calls = [("c0", "call_agent", delegate("worker", "go"))];
            Reply::Json(200, openai_tool_calls(&calls, 1, 1))
        } else {
            Reply::Json(200, openai_text(&req.who(), 1, 1))
        }
    });
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "lead", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let worker = server.sent_by("worker");
    assert_eq!(worker.len(), 1);
    assert_eq!(worker[0].json()["model"], "lead-model");
}

#[test]
fn max_turns_bounds_the_agents_run() {
    let home = Home::new();
    claude_agent(
        home.dir.path(),
        "looper",
        "---\nname: looper\ntools: LS\nmodel: openai/m\nmaxTurns: 2\n---\nYou are looper.\n",
    );
    let call = [("c", "list_directory", json!({}))];
    let server = FakeServer::route(move |_| Reply::Json(200, openai_tool_calls(&call, 1, 1)));
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "looper", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("turn budget exceeded (used 2 of 2)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_agent_with_task_delegates_to_the_other_claude_agents() {
    let home = Home::new();
    claude_agent(
        home.dir.path(),
        "lead",
        "---\nname: lead\ntools: Task\nmodel: openai/m\n---\nYou are lead.\n",
    );
    claude_agent(
        home.dir.path(),
        "helper",
        "---\nname: helper\ndescription: helps\n---\nYou are helper.\n",
    );
    let server = FakeServer::route(|req| {
        if req.who() == "lead" && !req.has_tool_results() {
            let calls = [("c0", "call_agent", delegate("helper", "help"))];
            Reply::Json(200, openai_tool_calls(&calls, 1, 1))
        } else if req.who() == "lead" {
            Reply::Json(200, openai_text(&req.tool_result_texts().join("+"), 1, 1))
        } else {
            Reply::Json(200, openai_text("helped", 1, 1))
        }
    });
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "lead", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("helped"), "{}", stdout(&out));
    let lead = server.sent_by("lead");
    assert_eq!(offered(&lead[0]), ["call_agent"]);
    let helper = server.sent_by("helper");
    assert_eq!(helper.len(), 1);
    // helper says no model: it runs on lead's.
    assert_eq!(helper[0].json()["model"], "m");
}

#[test]
fn task_with_no_other_agent_is_warned_of_and_not_offered() {
    let home = Home::new();
    claude_agent(
        home.dir.path(),
        "alone",
        "---\ntools: Read, Task\nmodel: openai/m\n---\nYou are alone.\n",
    );
    let out = home.run(&["run", "alone", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("--- Sub-Agents ---\n(none)\n"),
        "{}",
        stdout(&out)
    );
    assert!(
        stderr(&out).contains("not offered: Task (no other agent to call)"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn axes_own_agent_of_the_same_name_wins() {
    let home = Home::new();
    home.agent(
        "dup",
        "name = \"dup\"\nmodel = \"openai/m\"\nsystem_prompt = \"from axe\"\n",
    );
    claude_agent(home.dir.path(), "dup", "---\nname: dup\n---\nfrom claude\n");
    let out = home.run(&["run", "dup", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("from axe"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("from claude"));
    // Without it, Claude Code's is found.
    fs::remove_file(home.config_dir().join("agents/dup.toml")).unwrap();
    let out = home.run(&["run", "dup", "--dry-run", "-p", "x", "--model", "openai/m"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("from claude"), "{}", stdout(&out));
}

#[test]
fn the_project_is_searched_up_to_its_repository_root_then_home() {
    let home = Home::new();
    let outside = home.dir.path().join("outside");
    let repo = outside.join("repo");
    let deep = repo.join("src/deep");
    fs::create_dir_all(&deep).unwrap();
    fs::create_dir_all(repo.join(".git")).unwrap();
    claude_agent(&repo, "a", "---\nmodel: openai/m\n---\nrepo a\n");
    claude_agent(&deep, "b", "---\nmodel: openai/m\n---\ndeep b\n");
    // Above the repository's root: not read.
    claude_agent(&outside, "c", "---\nmodel: openai/m\n---\noutside c\n");
    // The home directory's: read from anywhere.
    claude_agent(home.dir.path(), "h", "---\nmodel: openai/m\n---\nhome h\n");
    claude_agent(home.dir.path(), "a", "---\nmodel: openai/m\n---\nhome a\n");
    let dry = |name: &str| run_in(&home, &deep, &["run", name, "--dry-run", "-p", "x"]);
    for (name, prompt) in [("a", "repo a"), ("b", "deep b"), ("h", "home h")] {
        let out = dry(name);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        assert!(stdout(&out).contains(prompt), "{name}: {}", stdout(&out));
    }
    let out = dry("c");
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("agent config not found: c"),
        "{}",
        stderr(&out)
    );
    let list = run_in(&home, &deep, &["agents", "list"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let home_dir = home.dir.path().join(".claude/agents");
    assert_eq!(
        stdout(&list),
        format!(
            "a  (Claude Code, in {})\nb  (Claude Code, in ./.claude/agents)\nh  (Claude Code, in {})\n",
            repo.join(".claude/agents").display(),
            home_dir.display()
        )
    );
}

#[test]
fn agents_list_says_where_each_came_from() {
    let home = Home::new();
    home.agent("mine", "name = \"mine\"\ndescription = \"axe's own\"\n");
    claude_agent(
        home.dir.path(),
        "theirs",
        "---\nname: theirs\ndescription: \"Claude's, on\n  two lines\"\n---\nx\n",
    );
    let out = home.run(&["agents", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "mine - axe's own\ntheirs - Claude's, on two lines  (Claude Code, in ./.claude/agents)\n"
    );
}

#[test]
fn dry_run_shows_the_prompt_and_that_no_tools_key_gives_no_tools() {
    let home = Home::new();
    claude_agent(
        home.dir.path(),
        "plain",
        "---\nname: plain\nmodel: openai/m\n---\n\nYou are plain.\n\nTwo paragraphs.\n",
    );
    let out = home.run(&["run", "plain", "--dry-run", "-p", "x"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("--- System Prompt ---\nYou are plain.\n\nTwo paragraphs.\n"),
        "{text}"
    );
    assert!(!text.contains("--- Tools ---"), "{text}");
    assert!(
        text.contains("--- Notes ---\nthe file names no `tools`: axe offers it none"),
        "{text}"
    );
    assert_eq!(stderr(&out), "");
}

#[test]
fn a_header_that_is_not_one_is_a_clear_error() {
    let home = Home::new();
    for (name, text, why) in [
        ("bare", "no header\n", "no YAML header"),
        ("open", "---\nname: open\n", "no closing `---`"),
        ("list", "---\n- a\n---\n", "not a mapping"),
        ("bomb", "---\na: &a [x, x]\nb: [*a, *a]\n---\n", "aliases"),
        (
            "many",
            "---\nmaxTurns: many\n---\n",
            "`maxTurns` must be a positive",
        ),
        (
            "zero",
            "---\nmaxTurns: 0\n---\n",
            "`maxTurns` must be a positive",
        ),
    ] {
        claude_agent(home.dir.path(), name, text);
        let out = home.run(&["run", name, "--dry-run", "-p", "x", "--model", "openai/m"]);
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("{name}.md")) && err.contains(why),
            "{name}: {err}"
        );
    }
}

#[test]
fn files_from_a_public_collection_dry_run() {
    let home = Home::new();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/claude-agents");
    let agents = home.dir.path().join(".claude/agents");
    fs::create_dir_all(&agents).unwrap();
    for f in [
        "code-reviewer",
        "documentation-engineer",
        "scientific-literature-researcher",
    ] {
        fs::copy(
            fixtures.join(format!("{f}.md")),
            agents.join(format!("{f}.md")),
        )
        .unwrap();
    }
    let dry = |name: &str, extra: &[&str]| {
        let mut args = vec!["run", name, "--dry-run", "-p", "x"];
        args.extend_from_slice(extra);
        let out = home.run(&args);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    // model: inherit, so a top-level run names one.
    let (text, err) = dry("code-reviewer", &["--model", "openai/m"]);
    assert!(text.contains("You are a senior code reviewer"), "{text}");
    assert!(
        text.contains("--- Tools ---\nread_file, write_file, edit_file, run_command, list_directory, search_files\n"),
        "{text}"
    );
    assert_eq!(err, "");
    let (text, err) = dry("documentation-engineer", &[]);
    assert!(
        text.contains("Model:    anthropic/claude-haiku-4-5\n"),
        "{text}"
    );
    assert!(text.contains("url_fetch, web_search"), "{text}");
    assert_eq!(err, "");
    let (text, err) = dry("scientific-literature-researcher", &[]);
    assert!(
        text.contains("Model:    anthropic/claude-sonnet-4-5\n"),
        "{text}"
    );
    assert!(
        text.contains("--- Tools ---\nread_file, url_fetch, web_search\n"),
        "{text}"
    );
    assert!(
        err.contains(
            "not offered: mcp__bgpt__search_papers (no MCP server \"bgpt\" in config.toml)"
        ),
        "{err}"
    );
    let list = home.run(&["agents", "list"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(stdout(&list).lines().count(), 3, "{}", stdout(&list));
}
