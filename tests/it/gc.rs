//! `axe gc` through the binary (design §10.5), against a fake provider: what
//! is sent (the Go original's request: its three sections, the memory as
//! the user message, temperature 0.3, 4096 tokens, no tools), what is
//! printed, what is kept (the last `last_n`, else `max_entries`), the
//! backup of what was removed, `--dry-run`, `--all`, and every way it can
//! fail leaving the file as it was.

use std::os::unix::fs::PermissionsExt;

use crate::common::*;

/// An agent `name` on Anthropic (as the Go original's gc tests have it)
/// with `[memory]` enabled and `memory` after it.
fn agent(home: &Home, name: &str, memory: &str) {
    home.agent(
        name,
        &format!(
            "name = \"{name}\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n[memory]\nenabled = true\n{memory}"
        ),
    );
}

fn report_server(report: &str) -> FakeServer {
    FakeServer::json(200, &anthropic_text(report, 10, 5))
}

fn backup(home: &Home, name: &str) -> std::path::PathBuf {
    let p = home.memory_path(name);
    p.with_file_name(format!("{name}.md.bak"))
}

#[track_caller]
fn assert_ok(out: &std::process::Output) {
    assert_eq!(code(out), 0, "stderr: {}", stderr(out));
}

#[test]
fn gc_sends_the_memory_prints_the_report_and_trims_to_last_n_keeping_a_backup() {
    let home = Home::new();
    agent(&home, "gc-trim", "last_n = 3\n");
    let file = home.memory("gc-trim", &go_entries(10));
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let server = report_server("## Patterns Found\nNo clear patterns detected.");
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "gc-trim"]);
    assert_ok(&out);

    let body = server.only_request().json();
    let system = body["system"].as_str().unwrap();
    for heading in [
        "## Patterns Found",
        "## Repeated Work",
        "## Recommendations",
    ] {
        assert!(system.contains(heading), "{system}");
    }
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(body["messages"][0]["content"], go_entries(10));
    assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["max_tokens"], 4096);
    assert!(body.get("tools").is_none(), "{body}");

    let text = stdout(&out);
    assert_eq!(
        text,
        format!(
            "Agent: gc-trim\nEntries: 10\n--- Analysis ---\n## Patterns Found\nNo clear patterns detected.\n\
             Trimmed: 7 entries removed, 3 entries kept.\nRemoved entries appended to {}\n",
            backup(&home, "gc-trim").display()
        )
    );
    assert!(!text.contains(ANTHROPIC_KEY) && !stderr(&out).contains(ANTHROPIC_KEY));
    // Kept: the last three, byte for byte; the rest in the backup.
    assert_eq!(home.memory_text("gc-trim"), go_entries_from(8, 10));
    let bak = backup(&home, "gc-trim");
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), go_entries(7));
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(&bak), 0o600);
    // No temporary file is left beside them.
    let names: Vec<String> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // A second gc appends what it removes to the same backup, oldest first.
    std::fs::write(&file, go_entries_from(8, 14)).unwrap();
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "gc-trim"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Trimmed: 4 entries removed, 3 entries kept.\n"));
    assert_eq!(home.memory_text("gc-trim"), go_entries_from(12, 14));
    assert_eq!(std::fs::read_to_string(&bak).unwrap(), go_entries(11));
}

#[test]
fn gc_keeps_max_entries_when_last_n_is_0_and_otherwise_trims_nothing() {
    let home = Home::new();
    let server = report_server("report");
    agent(&home, "fallback", "last_n = 0\nmax_entries = 5\n");
    home.memory("fallback", &go_entries(10));
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "fallback"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("Trimmed: 5 entries removed, 5 entries kept.\n"));
    assert_eq!(entry_headers(&home.memory_text("fallback")), 5);

    agent(&home, "notrim", "last_n = 0\nmax_entries = 0\n");
    home.memory("notrim", &go_entries(10));
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "notrim"]);
    assert_ok(&out);
    assert!(stdout(&out).contains("--- Analysis ---\nreport\n"));
    assert!(stdout(&out).contains("No trim target configured"));
    assert_eq!(home.memory_text("notrim"), go_entries(10));
    assert!(!backup(&home, "notrim").exists());

    agent(&home, "noop", "last_n = 10\n");
    home.memory("noop", &go_entries(3));
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "noop"]);
    assert_ok(&out);
    assert!(stdout(&out).ends_with("No trimming needed: 3 entries within limit (10).\n"));
    assert_eq!(home.memory_text("noop"), go_entries(3));
    assert!(!backup(&home, "noop").exists());
}

#[test]
fn gc_model_overrides_the_agents() {
    let home = Home::new();
    agent(&home, "over", "");
    home.memory("over", &go_entries(3));
    let server = FakeServer::json(200, &openai_text("from gpt", 10, 5));
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["gc", "over", "--model", "openai/gpt-4o-mini"],
    );
    assert_ok(&out);
    assert_eq!(server.only_request().json()["model"], "gpt-4o-mini");
    assert!(stdout(&out).contains("--- Analysis ---\nfrom gpt\n"));
}

#[test]
fn gc_dry_run_shows_what_would_be_sent_and_sends_and_changes_nothing() {
    let home = Home::new();
    agent(&home, "dry", "last_n = 3\n");
    home.memory("dry", &go_entries(10));
    let server = report_server("never");
    // No key is needed: nothing is sent.
    let out = home
        .axe()
        .env("AXE_ANTHROPIC_BASE_URL", &server.url)
        .args(["gc", "dry", "--dry-run"])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(server.requests().is_empty());
    let text = stdout(&out);
    assert!(
        text.starts_with("Agent: dry\nEntries: 10\nModel: anthropic/claude-sonnet-4-5\n"),
        "{text}"
    );
    assert!(text.contains("## Repeated Work"), "{text}");
    assert!(
        text.contains(&format!(
            "--- Memory (10 entries, sent as the user message) ---\n{}\n",
            go_entries(10).trim_end()
        )),
        "{text}"
    );
    assert!(
        text.contains("Would trim: 7 entries removed (appended to "),
        "{text}"
    );
    assert!(
        text.ends_with("Dry run: nothing sent, no entries trimmed.\n"),
        "{text}"
    );
    assert_eq!(home.memory_text("dry"), go_entries(10));
    assert!(!backup(&home, "dry").exists());
}

#[test]
fn gc_all_does_every_agent_with_memory_and_goes_on_past_one_that_fails() {
    let home = Home::new();
    agent(&home, "agent-a", "last_n = 5\n");
    home.agent(
        "agent-b",
        "name = \"agent-b\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n[memory]\nenabled = false\n",
    );
    agent(&home, "agent-c", "last_n = 3\n");
    home.plain_agent("agent-d", "anthropic/claude-sonnet-4-5");
    home.memory("agent-a", &go_entries(10));
    home.memory("agent-b", &go_entries(10));
    home.memory("agent-c", &go_entries(5));
    let server = report_server("all agents analysis");
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "--all"]);
    assert_ok(&out);
    let text = stdout(&out);
    assert!(
        text.starts_with("=== GC: agent-a ===\nAgent: agent-a\n"),
        "{text}"
    );
    assert!(
        text.contains("=== GC: agent-c ===\nAgent: agent-c\n"),
        "{text}"
    );
    assert!(
        !text.contains("agent-b") && !text.contains("agent-d"),
        "{text}"
    );
    assert_eq!(server.requests().len(), 2);
    assert_eq!(home.memory_text("agent-a"), go_entries_from(6, 10));
    assert_eq!(home.memory_text("agent-b"), go_entries(10));
    assert_eq!(home.memory_text("agent-c"), go_entries_from(3, 5));

    // --all --dry-run changes nothing.
    home.memory("agent-a", &go_entries(10));
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "--all", "--dry-run"]);
    assert_ok(&out);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(home.memory_text("agent-a"), go_entries(10));

    // One agent's memory cannot be read: the others are still done, and
    // the command exits 1 naming it.
    std::fs::remove_file(home.memory_path("agent-c")).unwrap();
    std::fs::create_dir(home.memory_path("agent-c")).unwrap();
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "--all"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    assert!(
        err.contains("gc failed for agent \"agent-c\": cannot read memory file"),
        "{err}"
    );
    assert!(
        err.ends_with("axe: gc completed with errors: 1 of 2 agents failed\n"),
        "{err}"
    );
    assert_eq!(home.memory_text("agent-a"), go_entries_from(6, 10));

    // No agent has memory.
    let empty = Home::new();
    empty.plain_agent("x", "anthropic/claude-sonnet-4-5");
    let out = empty.run(&["gc", "--all"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "No agents with memory enabled.\n");
}

#[test]
fn gc_failures_leave_the_memory_file_as_it_was() {
    let home = Home::fast_retries();
    agent(&home, "err", "last_n = 3\n");
    home.memory("err", &go_entries(5));
    let failing = FakeServer::json(
        500,
        r#"{"type":"error","error":{"type":"api_error","message":"internal server error"}}"#,
    );
    let out = home.run_on(&[(P::Anthropic, &failing)], &["gc", "err"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("internal server error"),
        "{}",
        stderr(&out)
    );
    assert_eq!(failing.requests().len(), 3, "the run's retries apply");
    assert_eq!(home.memory_text("err"), go_entries(5));
    assert!(!backup(&home, "err").exists());

    // No key.
    let out = home.run(&["gc", "err"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(home.memory_text("err"), go_entries(5));

    // A read-only directory: the trim fails (exit 2), the file is whole.
    let server = report_server("report");
    let dir = home.memory_path("err").parent().unwrap().to_path_buf();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let writable = std::fs::write(dir.join("probe"), "").is_ok();
    let out = home.run_on(&[(P::Anthropic, &server)], &["gc", "err"]);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    if !writable {
        // (As root the directory stays writable and the trim succeeds.)
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with("axe: cannot trim "),
            "{}",
            stderr(&out)
        );
        assert_eq!(home.memory_text("err"), go_entries(5));
    }
}

#[test]
fn gc_arguments_agents_and_files_it_cannot_use() {
    let home = Home::new();
    for (args, message) in [
        (&["gc"][..], "axe: agent name is required (or use --all)\n"),
        (
            &["gc", "a", "--all"][..],
            "axe: cannot specify both --all and an agent name\n",
        ),
    ] {
        let out = home.run(args);
        assert_eq!(code(&out), 1);
        assert_eq!(stderr(&out), message);
    }
    let out = home.run(&["gc", "ghost"]);
    assert_eq!(code(&out), 2);
    let out = home.run(&["gc", "../x"]);
    assert_eq!(code(&out), 2);

    home.agent(
        "off",
        "name = \"off\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n[memory]\nenabled = false\n",
    );
    let out = home.run(&["gc", "off"]);
    assert_ok(&out);
    assert_eq!(
        stderr(&out),
        "axe: warning: agent \"off\" does not have memory enabled; skipping\n"
    );

    agent(&home, "nomem", "");
    let out = home.run(&["gc", "nomem"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "No memory entries for agent \"nomem\". Nothing to do.\n"
    );
    home.memory("nomem", "");
    let out = home.run(&["gc", "nomem"]);
    assert_ok(&out);
    assert!(stdout(&out).starts_with("No memory entries"));
}
