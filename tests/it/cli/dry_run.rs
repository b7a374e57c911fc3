//! `--dry-run` (design §2.7–§2.9): the system prompt assembled byte for
//! byte from the agent, its skill and context files, shown with everything
//! else that would be sent, and nothing sent.

use super::*;
use crate::common::*;

// ---------------------------------------------------------------------------
// --dry-run
// ---------------------------------------------------------------------------

const REVIEW_SKILL: &str = "# Review\n\nPoint out bugs first.";

/// The `reviewer` agent (fixtures/agents/dry_run_full.toml), its skill, and a
/// workdir with nested sources, a file without an extension, a binary file
/// and a symlink to a file outside the workdir. Returns (workdir, outside).
fn reviewer_setup(home: &Home) -> (TempDir, TempDir) {
    home.agent(
        "reviewer",
        include_str!("../../../fixtures/agents/dry_run_full.toml"),
    );
    write(
        &home.config_dir().join("skills/review/SKILL.md"),
        REVIEW_SKILL,
    );
    let wd = TempDir::new("workdir");
    let w = wd.path();
    write(&w.join("README.md"), "# Demo\nA demo project.\n");
    write(&w.join("src/main.rs"), "fn main() {}");
    write(&w.join("src/nested/deep/lib.rs"), "pub fn f() {}");
    write(&w.join("src/notes.txt"), "not matched by any glob");
    write(&w.join("docs/NOTES"), "plain notes");
    write(&w.join("docs/guide.md"), "# Guide");
    write(&w.join("docs/logo.png"), b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let outside = TempDir::new("outside");
    write(&outside.path().join("secret.md"), "OUTSIDE SECRET");
    std::os::unix::fs::symlink(outside.path().join("secret.md"), w.join("docs/secret.md")).unwrap();
    (wd, outside)
}

/// The system prompt the reviewer agent gets over its workdir, byte for byte.
fn reviewer_system_prompt() -> String {
    [
        "You review code.",
        "\n\n---\n\n## Skill\n\n",
        REVIEW_SKILL,
        "\n\n---\n\n## Context Files\n\n",
        "### README.md\n```md\n# Demo\nA demo project.\n\n```",
        "\n\n",
        "### docs/NOTES\n```\nplain notes\n```",
        "\n\n",
        "### docs/guide.md\n```md\n# Guide\n```",
        "\n\n",
        "### src/main.rs\n```rs\nfn main() {}\n```",
        "\n\n",
        "### src/nested/deep/lib.rs\n```rs\npub fn f() {}\n```",
    ]
    .concat()
}

#[test]
fn dry_run_prints_the_full_report_and_sends_nothing() {
    let server = FakeServer::json(200, &openai_text("must not be asked", 1, 1));
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    // No key at all: a dry run needs none.
    let out = home
        .axe()
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args([
            "run",
            "reviewer",
            "--dry-run",
            "--workdir",
            &wd_arg,
            "-p",
            "Review the error handling.",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let expected = format!(
        "=== Dry Run ===\n\
         \n\
         Model:    openai/gpt-4o\n\
         Workdir:  {wd_arg}\n\
         Timeout:  120s\n\
         Params:   temperature=0.2, max_tokens=default\n\
         \n\
         --- System Prompt ---\n\
         {sp}\n\
         \n\
         --- Skill ---\n\
         {REVIEW_SKILL}\n\
         \n\
         --- Files (5) ---\n\
         README.md\n\
         docs/NOTES\n\
         docs/guide.md\n\
         src/main.rs\n\
         src/nested/deep/lib.rs\n\
         \n\
         --- Stdin ---\n\
         Review the error handling.\n\
         \n\
         --- Sub-Agents ---\n\
         (none)\n",
        sp = reviewer_system_prompt()
    );
    assert_eq!(stdout(&out), expected);
    assert!(!stdout(&out).contains("OUTSIDE SECRET"));
    assert!(server.requests().is_empty(), "a dry run sent a request");
}

#[test]
fn dry_run_verbose_lists_skipped_files() {
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    let out = home.run(&[
        "run",
        "reviewer",
        "--dry-run",
        "--verbose",
        "--workdir",
        &wd_arg,
        "-p",
        "hi",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).starts_with("=== Dry Run ===\n"));
    let err = stderr(&out);
    let skipped: Vec<&str> = err.lines().filter(|l| l.starts_with("Skipped:")).collect();
    assert_eq!(skipped.len(), 2, "{err}");
    assert!(skipped[0].contains("docs/logo.png"), "{err}");
    assert!(skipped[1].contains("docs/secret.md"), "{err}");
}

#[test]
fn run_sends_the_assembled_system_prompt_and_verbose_lists_skipped_files() {
    let server = FakeServer::json(200, &openai_text("reviewed", 100, 5));
    let home = Home::new();
    let (wd, _outside) = reviewer_setup(&home);
    let wd_arg = wd.path().display().to_string();
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "reviewer", "-v", "--workdir", &wd_arg, "-p", "Go."])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "reviewed\n");
    let req = server.only_request();
    assert_eq!(openai_system_message(&req), reviewer_system_prompt());
    assert_eq!(req.json()["temperature"], 0.2);

    let err = stderr(&out);
    assert!(err.lines().any(|l| l == "Files:    5 file(s)"), "{err}");
    let skipped: Vec<&str> = err.lines().filter(|l| l.starts_with("Skipped:")).collect();
    assert_eq!(skipped.len(), 2, "{err}");
    assert!(skipped[0].contains("docs/logo.png"), "{err}");
    assert!(skipped[1].contains("docs/secret.md"), "{err}");
    assert!(!err.contains("OUTSIDE SECRET"));
}

#[test]
fn dry_run_shows_sub_agents_with_their_settings() {
    let home = Home::new();
    home.agent(
        "lead",
        include_str!("../../../fixtures/agents/with_sub_agents.toml"),
    );
    let out = home.run(&["run", "lead", "--dry-run", "--timeout", "30"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let expected = format!(
        "=== Dry Run ===\n\
         \n\
         Model:    anthropic/claude-sonnet-4-5\n\
         Workdir:  {}\n\
         Timeout:  30s\n\
         Params:   temperature=default, max_tokens=default\n\
         \n\
         --- System Prompt ---\n\
         You delegate.\n\
         \n\
         --- Skill ---\n\
         (none)\n\
         \n\
         --- Files (0) ---\n\
         (none)\n\
         \n\
         --- Stdin ---\n\
         (none)\n\
         \n\
         --- Sub-Agents ---\n\
         helper, reviewer\n\
         Max Depth: 3\n\
         Parallel:  yes\n\
         Timeout:   45s\n\
         \n\
         --- Prompt Cache ---\n\
         On: cache_control {{\"type\":\"ephemeral\"}} on the last tool, the system prompt and \
         the newest message; from the second turn, on the previous request's last message too\n",
        home.dir.path().display()
    );
    assert_eq!(stdout(&out), expected);
}

#[test]
fn dry_run_without_sub_agents_prints_none_and_no_settings() {
    let home = Home::new();
    home.agent(
        "solo",
        "name = \"solo\"\nmodel = \"ollama/llama3.1\"\n[sub_agents_config]\nmax_depth = 2\n",
    );
    let out = home.run(&["run", "solo", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.ends_with("\n--- Sub-Agents ---\n(none)\n"), "{text}");
    assert!(!text.contains("Max Depth"), "{text}");
    assert!(!text.contains("Parallel:"), "{text}");
}

#[test]
fn dry_run_shows_piped_stdin() {
    let home = Home::new();
    home.plain_agent("o", "openai/gpt-4o");
    let mut cmd = home.axe();
    cmd.args(["run", "o", "--dry-run"]);
    let out = output_with_stdin(cmd, "text from a pipe");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("\n--- Stdin ---\ntext from a pipe\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn dry_run_shows_absolute_glob_matches_relative_to_the_workdir() {
    let home = Home::new();
    let wd = TempDir::new("absglob");
    std::fs::write(wd.path().join("x.md"), "X").unwrap();
    let pattern = format!("{}/*.md", wd.path().display());
    home.agent(
        "g",
        &format!("name = \"g\"\nmodel = \"openai/m\"\nfiles = [\"{pattern}\", \"*.md\"]\n"),
    );
    let wd_arg = wd.path().to_str().unwrap();
    let out = home.run(&["run", "g", "--dry-run", "--workdir", wd_arg, "-p", "hi"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let s = stdout(&out);
    assert!(s.contains("--- Files (1) ---\nx.md\n"), "{s}");
    assert!(s.contains("### x.md\n```md\nX\n```"), "{s}");
}
