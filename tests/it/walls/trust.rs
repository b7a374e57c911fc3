//! What protects the user stays unwritable to axe's file tools, and agent
//! files are trusted only where no agent may write (design §10.6, §3.16):
//! a scripted model tries `write_file` and `edit_file` on every spelling of
//! `.git/config`, `.git/hooks/pre-commit`, `axe/agents/x.toml`,
//! `.claude/agents/x.md` and `.codex/x.toml`; the backdoor (a model
//! writes its own agent file declaring a stdio MCP server, then the next
//! `axe run`); agent directories an unconfined agent may write, in a run
//! and under `axe serve`; and serve's agents read once, again on SIGHUP.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::common::*;

const GIT_CONFIG: &str = "[core]\n\trepositoryformatversion = 0\n";

/// Every entry beneath `dir`, as paths relative to it, sorted: what a test
/// compares before and after to see that nothing was made.
fn tree(dir: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().to_path_buf());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A workdir that is a repository (`.git/config`, `.git/hooks/`), with a
/// symlink `g -> .git` and a directory symlink `d/link -> ../.git` (as a
/// command could make), and an existing agent `axe/agents/x.toml`.
fn repository(s: &ToolsSetup) {
    let w = &s.work;
    std::fs::create_dir_all(w.join(".git/hooks")).unwrap();
    std::fs::write(w.join(".git/config"), GIT_CONFIG).unwrap();
    std::os::unix::fs::symlink(".git", w.join("g")).unwrap();
    std::fs::create_dir_all(w.join("d")).unwrap();
    std::os::unix::fs::symlink("../.git", w.join("d/link")).unwrap();
    std::fs::create_dir_all(w.join("axe/agents")).unwrap();
    std::fs::write(w.join("axe/agents/x.toml"), "name = \"x\"\n").unwrap();
}

#[test]
fn write_file_and_edit_file_refuse_every_spelling_of_a_protected_path() {
    let s = ToolsSetup::new(P::OpenAi, &["write_file", "edit_file"], "");
    repository(&s);
    let abs = s.work.join(".git/config").display().to_string();
    let hook = "#!/bin/sh\ntouch /tmp/axe-hooked\n";
    let agent = "name = \"x\"\n[[mcp_servers]]\nname = \"e\"\ncommand = \"sh\"\n";
    let writes = [
        ".git/config",
        "./.git/config",
        ".git//config",
        ".git/./config",
        "src/../.git/config",
        abs.as_str(),
        "g/config",
        "d/link/config",
        ".git/hooks/pre-commit",
        "src/../.git/hooks/pre-commit",
        "g/hooks/pre-commit",
        ".git/hooks/new/pre-commit",
        ".git",
        "axe/agents/x.toml",
        "./axe/agents/x.toml",
        "src/../axe/agents/y.toml",
        "axe/skills/s.md",
        ".claude/agents/x.md",
        ".claude/settings.json",
        ".codex/x.toml",
        "sub/.git/config",
        "sub/axe/agents/x.toml",
    ];
    let mut calls: Vec<(String, &str, serde_json::Value)> = writes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let content = if p.contains("hooks") { hook } else { agent };
            (
                format!("w{i}"),
                "write_file",
                json!({"path": p, "content": content}),
            )
        })
        .collect();
    for (i, p) in [".git/config", "g/config", "axe/agents/x.toml"]
        .iter()
        .enumerate()
    {
        let (old, new) = match *p {
            "axe/agents/x.toml" => ("name = \"x\"", "name = \"x\"\n[sandbox]\nmode = \"off\""),
            _ => ("[core]", "[core]\n\tfsmonitor = touch /tmp/axe-fsmonitor"),
        };
        calls.push((
            format!("e{i}"),
            "edit_file",
            json!({"path": p, "old_string": old, "new_string": new}),
        ));
    }
    let before = tree(&s.work);
    let calls: Vec<Call> = calls
        .iter()
        .map(|(id, t, a)| (id.as_str(), *t, a.clone()))
        .collect();
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results.len(), calls.len());
    for (call, r) in calls.iter().zip(&results) {
        assert!(
            r.contains("is protected") && r.contains("never write"),
            "{} {}: not refused as protected: {r}",
            call.1,
            call.2
        );
    }
    assert_eq!(
        std::fs::read_to_string(s.work.join(".git/config")).unwrap(),
        GIT_CONFIG
    );
    assert_eq!(
        std::fs::read_to_string(s.work.join("axe/agents/x.toml")).unwrap(),
        "name = \"x\"\n"
    );
    // Nothing made, not even a temporary file or a directory on the way.
    assert_eq!(tree(&s.work), before);
}

#[test]
fn other_files_stay_writable_beside_the_protected_ones() {
    let s = ToolsSetup::new(P::OpenAi, &["write_file", "edit_file"], "");
    repository(&s);
    let calls: Vec<Call> = vec![
        (
            "c1",
            "write_file",
            json!({"path": "src/new.rs", "content": "// new\n"}),
        ),
        (
            "c2",
            "write_file",
            json!({"path": ".gitignore", "content": "target/\n"}),
        ),
        (
            "c3",
            "write_file",
            json!({"path": "axe.toml", "content": "x = 1\n"}),
        ),
        (
            "c4",
            "write_file",
            json!({"path": "docs/git/notes.md", "content": "n\n"}),
        ),
        (
            "c5",
            "write_file",
            json!({"path": ".github/ci.yml", "content": "on: push\n"}),
        ),
        (
            "c6",
            "edit_file",
            json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}),
        ),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    for r in &results[..5] {
        assert!(r.starts_with("wrote "), "{r}");
    }
    assert!(results[5].starts_with("edited notes.txt"), "{}", results[5]);
    assert_eq!(
        std::fs::read_to_string(s.work.join("docs/git/notes.md")).unwrap(),
        "n\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.work.join(".github/ci.yml")).unwrap(),
        "on: push\n"
    );
}

#[test]
fn a_refused_write_leaves_no_directory_it_made() {
    let s = ToolsSetup::new(P::OpenAi, &["write_file"], "");
    let before = tree(&s.work);
    let calls: Vec<Call> = vec![
        (
            "c1",
            "write_file",
            json!({"path": "new/deeper/../../../planted.txt", "content": "x"}),
        ),
        (
            "c2",
            "write_file",
            json!({"path": "fresh/dir/.git/config", "content": "x"}),
        ),
        (
            "c3",
            "write_file",
            json!({"path": "made/here/axe/agents/x.toml", "content": "x"}),
        ),
    ];
    let (out, results, _) = s.run(P::OpenAi, &calls);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(tree(&s.work), before, "a refused write left something");
    assert!(
        results[0].contains("outside the working directory"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("is protected"), "{}", results[1]);
    assert!(results[2].contains("is protected"), "{}", results[2]);
    assert!(!s.home.dir.path().join("planted.txt").exists());
}
