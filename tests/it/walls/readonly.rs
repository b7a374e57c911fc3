//! What protects the user stays read-only to commands under a writable
//! workdir (design §8.6, issue "The walls hold"), through the binary: a
//! command cannot set `core.fsmonitor` or plant a hook in `.git`, write an
//! agent file in `axe/agents`, or touch `.claude/` or `.codex/`, nor move
//! or remove them; a linked worktree's git directory is protected where it
//! lies; the rest of the workdir stays writable. `[sandbox] protect =
//! false` is the only way to let commands write there, and where the
//! kernel cannot give the protection the run is refused unless the file
//! says so.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::without_user_namespaces;
use crate::common::*;

/// Each attempt on its own line, `refused:` or `WROTE:`.
const ATTEMPTS: &[&str] = &[
    "git config core.fsmonitor 'touch /tmp/axe-pwned'",
    "echo '[core] fsmonitor = x' >> .git/config",
    "printf '#!/bin/sh\\ntouch /tmp/axe-pwned\\n' > .git/hooks/pre-commit",
    "echo 'name = \"x\"' > axe/agents/x.toml",
    "echo x > .claude/settings.json",
    "echo x > .codex/config.toml",
    "mv .git moved",
    "rm -rf .git",
    "mv axe elsewhere",
    "rm -rf .claude .codex",
];

/// A script that tries each of `attempts`, then writes `other.txt`.
fn script(attempts: &[&str]) -> String {
    let mut s = String::from(
        "try() { if sh -c \"$1\" 2>/dev/null; then echo \"WROTE: $1\"; else echo \"refused: $1\"; fi; }\n",
    );
    for a in attempts {
        s.push_str(&format!("try {}\n", quote(a)));
    }
    s.push_str("echo mine > other.txt && echo other written\n");
    s
}

/// `text` as one single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A workdir that is a git repository with `axe/agents/`, `.claude/` and
/// `.codex/` in it.
fn protected_workdir(work: &Path) {
    git(work, &["init", "-q"]);
    std::fs::create_dir_all(work.join("axe/agents")).unwrap();
    std::fs::create_dir_all(work.join(".claude")).unwrap();
    std::fs::create_dir_all(work.join(".codex")).unwrap();
    std::fs::write(work.join(".claude/keep"), "k").unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?} failed");
}

/// What the command's result said, and the files it left.
fn run_script(s: &ToolsSetup, script: &str) -> String {
    let (out, results, _) = s.run(
        P::OpenAi,
        &[("c1", "run_command", json!({"command": script}))],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    results.join("\n")
}

#[test]
fn a_command_cannot_write_git_agent_files_or_other_tools_directories() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    protected_workdir(&s.work);
    let config = std::fs::read_to_string(s.work.join(".git/config")).unwrap();
    let said = run_script(&s, &script(ATTEMPTS));
    assert!(!said.contains("WROTE"), "{said}");
    assert_eq!(said.matches("refused:").count(), ATTEMPTS.len(), "{said}");
    assert!(said.contains("other written"), "{said}");
    assert_eq!(
        std::fs::read_to_string(s.work.join(".git/config")).unwrap(),
        config
    );
    assert!(!s.work.join(".git/hooks/pre-commit").exists());
    assert!(!s.work.join("axe/agents/x.toml").exists());
    assert!(!s.work.join(".claude/settings.json").exists());
    assert!(!s.work.join(".codex/config.toml").exists());
    assert!(s.work.join(".claude/keep").exists());
    assert!(!s.work.join("moved").exists() && !s.work.join("elsewhere").exists());
    assert_eq!(
        std::fs::read_to_string(s.work.join("other.txt")).unwrap(),
        "mine\n"
    );
    // The read-only mounts were the command's own: none shows here.
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let work = s.work.display().to_string();
    assert!(!mounts.contains(&work), "{mounts}");
    std::fs::write(s.work.join(".git/description"), "still ours\n").unwrap();
}

#[test]
fn protect_false_lets_commands_write_there() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "[sandbox]\nprotect = false\n");
    protected_workdir(&s.work);
    let said = run_script(
        &s,
        &script(&["echo '# mine' >> .git/config", "echo x > axe/agents/x.toml"]),
    );
    assert_eq!(said.matches("WROTE").count(), 2, "{said}");
    assert!(
        std::fs::read_to_string(s.work.join(".git/config"))
            .unwrap()
            .ends_with("# mine\n")
    );
}

#[test]
fn a_linked_worktrees_git_directory_is_read_only_where_it_lies() {
    if !landlock() {
        return;
    }
    // The main repository is writable too ([sandbox] write); the workdir
    // is its linked worktree, whose `.git` file points into it.
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let main = s.home.dir.path().join("main");
    s.home.named_agent(
        "hands",
        P::OpenAi.model(),
        &format!(
            "workdir = {:?}\ntools = [\"run_command\"]\n[sandbox]\nwrite = [{:?}]\n",
            s.work.display().to_string(),
            main.display().to_string()
        ),
    );
    std::fs::create_dir_all(&main).unwrap();
    git(&main, &["init", "-q"]);
    let gitdir = main.join(".git/worktrees/work");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::write(gitdir.join("commondir"), "../..\n").unwrap();
    std::fs::write(gitdir.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
    std::fs::write(
        gitdir.join("gitdir"),
        format!("{}\n", s.work.join(".git").display()),
    )
    .unwrap();
    let pointer = format!("gitdir: {}\n", gitdir.display());
    std::fs::write(s.work.join(".git"), &pointer).unwrap();
    let config = std::fs::read_to_string(main.join(".git/config")).unwrap();
    let m = main.display().to_string();
    let g = gitdir.display().to_string();
    let attempts = [
        format!("echo x >> {m}/.git/config"),
        format!("echo x > {m}/.git/hooks/post-checkout"),
        format!("echo x > {g}/config.worktree"),
        format!("echo x >> {g}/HEAD"),
        "echo 'gitdir: /tmp' > .git".to_string(),
        format!("echo x > {m}/free.txt"),
    ];
    let refs: Vec<&str> = attempts.iter().map(String::as_str).collect();
    let said = run_script(&s, &script(&refs));
    assert_eq!(said.matches("refused:").count(), 5, "{said}");
    assert!(
        said.contains(&format!("WROTE: echo x > {m}/free.txt")),
        "{said}"
    );
    assert!(said.contains("other written"), "{said}");
    assert_eq!(
        std::fs::read_to_string(main.join(".git/config")).unwrap(),
        config
    );
    assert!(!main.join(".git/hooks/post-checkout").exists());
    assert!(!gitdir.join("config.worktree").exists());
    assert_eq!(
        std::fs::read_to_string(s.work.join(".git")).unwrap(),
        pointer
    );
}

#[test]
fn where_the_kernel_cannot_protect_them_commands_are_refused_unless_the_file_opts_out() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    protected_workdir(&s.work);
    let server = FakeServer::route(|_| Reply::Json(200, P::OpenAi.text("done")));
    let mut cmd = s.home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "hands", "-p", "go"]);
    let Some(mut cmd) = without_user_namespaces(cmd) else {
        return;
    };
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("cannot be kept from writing .git"), "{err}");
    assert!(err.contains("[sandbox] protect = false"), "{err}");
    assert!(server.requests().is_empty(), "nothing is sent");
    // The file's own word lets commands run, unprotected.
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "[sandbox]\nprotect = false\n");
    protected_workdir(&s.work);
    let first = P::OpenAi.tool_calls(&[(
        "c1",
        "run_command",
        json!({"command": "echo '# x' >> .git/config && echo wrote"}),
    )]);
    let done = P::OpenAi.text("done");
    let server = FakeServer::route(move |req| {
        Reply::Json(
            200,
            if req.has_tool_results() {
                done.clone()
            } else {
                first.clone()
            },
        )
    });
    let mut cmd = s.home.axe_on(&[(P::OpenAi, &server)]);
    cmd.args(["run", "hands", "-p", "go"]);
    let out = without_user_namespaces(cmd).unwrap().output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = server.requests();
    let said = r
        .iter()
        .find(|r| r.has_tool_results())
        .unwrap()
        .tool_result_texts();
    assert!(said[0].starts_with("wrote\n"), "{said:?}");
}

#[test]
fn a_protected_name_a_command_creates_is_moved_aside_when_it_returns() {
    if !landlock() {
        return;
    }
    // Nothing to mount over: the workdir has none of the names yet.
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let script = "git init -q && git config core.fsmonitor 'touch /tmp/axe-pwned' \
                  && mkdir -p axe/agents .claude && echo x > axe/agents/x.toml \
                  && echo x > .claude/settings.json && echo made";
    let (out, results, _) = s.run(
        P::OpenAi,
        &[("c1", "run_command", json!({"command": script}))],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = results.join("\n");
    assert!(said.contains("made"), "{said}");
    for name in [".git", "axe", ".claude"] {
        assert!(!s.work.join(name).exists(), "{name} is still there: {said}");
        let aside = s.work.join(format!("{name}.refused-by-axe"));
        assert!(aside.exists(), "{name} was not moved aside: {said}");
        assert!(
            said.contains(&format!("moved to {}", aside.display())),
            "{said}"
        );
        assert!(
            stderr(&out).contains(&format!(
                "axe: warning: the command created {}",
                s.work.join(name).display()
            )),
            "{}",
            stderr(&out)
        );
    }
}
