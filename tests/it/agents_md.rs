//! `agents_md = true` (design §2.7): the `AGENTS.md` files from the
//! repository's root down to the workdir in the system prompt, root's
//! first, none from above the repository, listed by `--dry-run`; off
//! unless the file asks, on for an imported Claude Code or Codex agent.

use std::fs;
use std::path::Path;

use crate::common::*;

/// Writes `text` at `path`, its directories made.
fn put(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// `outer/AGENTS.md` (above the repository), `outer/repo/.git`,
/// `repo/AGENTS.md`, nothing in `repo/pkg`, `repo/pkg/sub/AGENTS.md` and a
/// context file there. Returns the tree and the workdir `repo/pkg/sub`.
fn tree() -> (TempDir, std::path::PathBuf) {
    let outer = TempDir::new("agents-md");
    let o = outer.path();
    put(&o.join("AGENTS.md"), "OUTSIDE THE REPOSITORY");
    fs::create_dir_all(o.join("repo/.git")).unwrap();
    put(&o.join("repo/AGENTS.md"), "Root rules.");
    put(&o.join("repo/pkg/sub/AGENTS.md"), "Sub rules.");
    put(&o.join("repo/pkg/sub/notes.txt"), "notes");
    let wd = o.join("repo/pkg/sub");
    (outer, wd)
}

const ON: &str = "agents_md = true\nfiles = [\"*.txt\", \"AGENTS.md\"]\n";

/// The system prompt the `helper` agent with `extra` sends from `wd`.
fn sent_prompt(home: &Home, wd: &Path, extra: &str) -> String {
    home.named_agent("helper", "openai/gpt-test", extra);
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "helper", "-p", "go", "--workdir"])
        .arg(wd)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    server.only_request().system_prompt()
}

#[test]
fn both_depths_are_sent_root_first_and_none_from_above_the_repository() {
    let home = Home::new();
    let (_outer, wd) = tree();
    let sp = sent_prompt(&home, &wd, ON);
    assert_eq!(
        sp,
        "You are helper.\n\n---\n\n## Context Files\n\n\
         ### ../../AGENTS.md\n```md\nRoot rules.\n```\n\n\
         ### AGENTS.md\n```md\nSub rules.\n```\n\n\
         ### notes.txt\n```txt\nnotes\n```"
    );
}

#[test]
fn outside_a_repository_only_the_workdirs_is_read() {
    let home = Home::new();
    let (outer, wd) = tree();
    fs::remove_dir(outer.path().join("repo/.git")).unwrap();
    let sp = sent_prompt(&home, &wd, "agents_md = true\n");
    assert!(
        sp.ends_with("### AGENTS.md\n```md\nSub rules.\n```"),
        "{sp}"
    );
    assert!(
        !sp.contains("Root rules.") && !sp.contains("OUTSIDE"),
        "{sp}"
    );
}

#[test]
fn off_unless_the_agent_file_asks() {
    let home = Home::new();
    let (_outer, wd) = tree();
    assert_eq!(sent_prompt(&home, &wd, ""), "You are helper.");
}

#[test]
fn dry_run_lists_them_before_the_globbed_files() {
    let home = Home::new();
    let (_outer, wd) = tree();
    home.named_agent("helper", "openai/gpt-test", ON);
    let out = home
        .axe()
        .args(["run", "helper", "--dry-run", "--workdir"])
        .arg(&wd)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("--- Files (3) ---\n../../AGENTS.md\nAGENTS.md\nnotes.txt\n"),
        "{text}"
    );
}

#[test]
fn an_imported_claude_code_agent_reads_them() {
    let home = Home::new();
    let (_outer, wd) = tree();
    put(
        &wd.join(".claude/agents/tidy.md"),
        "---\nname: tidy\nmodel: openai/gpt-test\n---\nYou tidy.\n",
    );
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .current_dir(&wd)
        .args(["run", "tidy", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sp = server.only_request().system_prompt();
    assert!(
        sp.starts_with("You tidy.\n\n---\n\n## Context Files\n\n"),
        "{sp}"
    );
    assert!(
        sp.contains("### ../../AGENTS.md\n```md\nRoot rules.\n```"),
        "{sp}"
    );
    assert!(
        sp.ends_with("### AGENTS.md\n```md\nSub rules.\n```"),
        "{sp}"
    );
}

#[test]
fn a_linked_agents_md_is_skipped_not_followed() {
    let home = Home::new();
    let (outer, wd) = tree();
    let root_md = outer.path().join("repo/AGENTS.md");
    fs::remove_file(&root_md).unwrap();
    std::os::unix::fs::symlink(outer.path().join("AGENTS.md"), &root_md).unwrap();
    home.named_agent("helper", "openai/gpt-test", "agents_md = true\n");
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "helper", "-p", "go", "--verbose", "--workdir"])
        .arg(&wd)
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sp = server.only_request().system_prompt();
    assert!(!sp.contains("OUTSIDE"), "{sp}");
    assert!(
        sp.ends_with("### AGENTS.md\n```md\nSub rules.\n```"),
        "{sp}"
    );
    assert!(
        stderr(&out).contains("Skipped:  ../../AGENTS.md (its path goes through a symbolic link"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_imported_codex_agent_reads_them() {
    let home = Home::new();
    let (_outer, wd) = tree();
    put(
        &wd.join(".codex/agents/tidy.toml"),
        "name = \"tidy\"\nmodel = \"openai/gpt-test\"\ndeveloper_instructions = \"You tidy.\"\n",
    );
    let server = FakeServer::start(vec![Reply::Json(200, openai_text("ok", 3, 1))]);
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .current_dir(&wd)
        .args(["run", "tidy", "-p", "go"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sp = server.only_request().system_prompt();
    assert!(
        sp.starts_with("You tidy.\n\n---\n\n## Context Files\n\n"),
        "{sp}"
    );
    assert!(sp.contains("Root rules."), "{sp}");
    assert!(
        sp.ends_with("### AGENTS.md\n```md\nSub rules.\n```"),
        "{sp}"
    );
}
