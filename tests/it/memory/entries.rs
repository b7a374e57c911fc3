//! The entries a run appends and the next run loads (design §10.1–§10.3):
//! the Go original's exact format, the last `last_n` at the end of the
//! system prompt (0: all), a file the Go original wrote read as is, stdin
//! never stored, nothing appended when a run fails, each sub-agent's own
//! memory, what `--dry-run`, `--verbose` and `agents show` say, and the
//! settings checked.

use std::process::Stdio;
use std::time::{Duration, SystemTime};

use super::{assert_ok, remembering, whole_entries};
use crate::common::*;
#[test]
fn a_successful_run_appends_one_entry_in_the_go_originals_exact_format() {
    let home = Home::new();
    remembering(&home, "reviewer", "");
    let server = FakeServer::json(200, &openai_text("Found 3 issues\nin auth.go", 3, 2));
    let before = SystemTime::now() - Duration::from_secs(1);
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "reviewer", "-p", "Review PR #42\nplease"],
    );
    assert_ok(&out);
    let after = SystemTime::now() + Duration::from_secs(1);
    let text = home.memory_text("reviewer");
    let ts = text
        .strip_prefix("## ")
        .and_then(|t| t.split_once('\n'))
        .map(|(ts, _)| ts.to_string())
        .unwrap_or_default();
    // Byte for byte: the task on one line, the answer's lines kept.
    assert_eq!(
        text,
        format!(
            "## {ts}\n**Task:** Review PR #42 please\n**Result:** Found 3 issues\nin auth.go\n\n"
        )
    );
    let at = humantime::parse_rfc3339(&ts).unwrap();
    assert!(before <= at && at <= after, "{ts}");

    // The next run sees it at the end of its system prompt, and appends.
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "reviewer", "-p", "again"]);
    assert_ok(&out);
    let second = &server.requests()[1];
    assert_eq!(
        second.system_prompt(),
        format!("You are reviewer.{MEMORY_SECTION}{text}")
    );
    let entries = whole_entries(&home.memory_text("reviewer"));
    let tasks: Vec<&str> = entries.iter().map(|e| e.1.as_str()).collect();
    assert_eq!(tasks, ["Review PR #42 please", "again"]);
    assert!(home.memory_text("reviewer").starts_with(&text));
}

#[test]
fn keys_never_reach_the_memory_file() {
    let home = Home::new();
    remembering(&home, "k", "");
    let server = FakeServer::json(200, &openai_text(&format!("echo {OPENAI_KEY}"), 3, 2));
    let prompt = format!("use {OPENAI_KEY}");
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "k", "-p", &prompt]);
    assert_ok(&out);
    // The answer on stdout is the model's own; the file is a record.
    assert_eq!(stdout(&out), format!("echo {OPENAI_KEY}\n"));
    let text = home.memory_text("k");
    assert!(!text.contains(OPENAI_KEY), "{text}");
    let entries = whole_entries(&text);
    assert_eq!(entries[0].1, "use [redacted]");
    assert_eq!(entries[0].2, "echo [redacted]");
}

#[test]
fn a_long_answer_is_stored_cut_at_1000_characters_and_an_empty_one_as_none() {
    let home = Home::new();
    remembering(&home, "w", "");
    let long = "é".repeat(1001);
    let server = FakeServer::start(vec![
        Reply::Json(200, openai_text(&long, 3, 2)),
        Reply::Json(200, openai_text("", 3, 2)),
    ]);
    assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", "w", "-p", "t"]));
    assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", "w"]));
    let entries = whole_entries(&home.memory_text("w"));
    assert_eq!(entries[0].2, format!("{}...", "é".repeat(1000)));
    // No prompt: the default message is the task, as the Go original stores it.
    assert_eq!(
        entries[1].1,
        "Execute the task described in your instructions."
    );
    assert_eq!(entries[1].2, "(none)");
}

#[test]
fn the_last_n_entries_end_the_system_prompt_and_0_loads_the_whole_file() {
    let home = Home::new();
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    let cases = [
        ("last_n = 2\n", go_entries_from(4, 5)),
        ("last_n = 1\n", go_entries_from(5, 5)),
        ("last_n = 50\n", go_entries(5)),
        (
            "last_n = 0\n",
            format!("notes kept by hand\n\n{}", go_entries(5)),
        ),
    ];
    for (i, (setting, loaded)) in cases.iter().enumerate() {
        let name = format!("a{i}");
        remembering(&home, &name, setting);
        home.memory(&name, &format!("notes kept by hand\n\n{}", go_entries(5)));
        assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", &name]));
        let sent = server.requests()[i].system_prompt();
        assert_eq!(
            sent,
            format!("You are {name}.{MEMORY_SECTION}{loaded}"),
            "{setting}"
        );
    }
    // last_n absent: the newest 10.
    remembering(&home, "d", "");
    home.memory("d", &go_entries(12));
    assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", "d"]));
    let sent = server.requests()[4].system_prompt();
    assert_eq!(
        sent,
        format!("You are d.{MEMORY_SECTION}{}", go_entries_from(3, 12))
    );
}

#[test]
fn entries_that_do_not_fit_max_prompt_bytes_drop_the_oldest_first() {
    let home = Home::new();
    // "You are f." is 10 bytes, the section's heading 16, an entry 60:
    // 200 bytes hold the newest two.
    remembering(&home, "f", "last_n = 0\n");
    let file = home.config_dir().join("agents/f.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("max_prompt_bytes = 200\n{text}")).unwrap();
    home.memory("f", &go_entries(5));
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "f"]);
    assert_ok(&out);
    let sent = server.only_request().system_prompt();
    assert_eq!(
        sent,
        format!("You are f.{MEMORY_SECTION}{}", go_entries_from(4, 5))
    );
    assert!(
        stderr(&out).contains("2 of its 5 entries fit within max_prompt_bytes"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_file_the_go_original_wrote_is_read_as_is_and_appended_to() {
    let home = Home::new();
    let data = TempDir::new("xdg-data");
    remembering(&home, "pr-reviewer", "last_n = 3\n");
    // As the Go original writes them: RFC 3339 UTC headers, the task on one
    // line, a multi-line result, an empty task as (none), a result cut at
    // 1000 characters with "...", a blank line after each.
    let go = format!(
        "## 2026-02-27T03:15:00Z\n**Task:** Review PR #42\n**Result:** Found 3 issues: missing error handling in auth.go, unused import, test coverage gap in user_test.go\n\n\
         ## 2026-02-27T14:30:00Z\n**Task:** (none)\n**Result:** Clean.\nMinor style nit on line 82 of handler.go.\n\n\
         ## 2026-02-28T15:04:05Z\n**Task:** Execute the task described in your instructions.\n**Result:** {}...\n\n",
        "x".repeat(1000)
    );
    let file = data.path().join("axe/memory/pr-reviewer.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &go).unwrap();
    let server = FakeServer::json(200, &openai_text("LGTM", 3, 2));
    let out = home
        .axe_on(&[(P::OpenAi, &server)])
        .env("XDG_DATA_HOME", data.path())
        .args(["run", "pr-reviewer", "-p", "Review PR #45"])
        .output()
        .unwrap();
    assert_ok(&out);
    assert_eq!(
        server.only_request().system_prompt(),
        format!("You are pr-reviewer.{MEMORY_SECTION}{go}")
    );
    let now = std::fs::read_to_string(&file).unwrap();
    assert!(now.starts_with(&go), "the old entries changed");
    let entries = whole_entries(&now);
    assert_eq!(entries.len(), 4);
    assert_eq!(
        (entries[3].1.as_str(), entries[3].2.as_str()),
        ("Review PR #45", "LGTM")
    );
    // Nothing was written under $HOME.
    assert!(!home.memory_path("pr-reviewer").exists());
}

#[test]
fn stdin_is_not_stored_and_a_failed_or_dry_run_appends_nothing() {
    let home = Home::fast_retries();
    remembering(&home, "w", "");
    let server = FakeServer::json(200, &openai_text("done", 3, 2));
    let mut child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "w"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"diff --git a/secret.txt\n+hunter2\n")
        .unwrap();
    assert_ok(&child.wait_with_output().unwrap());
    let text = home.memory_text("w");
    assert!(!text.contains("hunter2"), "{text}");
    assert_eq!(whole_entries(&text)[0].1, "(stdin, 33 bytes, not stored)");

    let before = home.memory_text("w");
    let dry = home.run(&["run", "w", "--dry-run"]);
    assert_ok(&dry);
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let out = home.run_on(&[(P::OpenAi, &failing)], &["run", "w", "-p", "x"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(home.memory_text("w"), before);

    // A first run that fails creates no file at all.
    remembering(&home, "fresh", "");
    let out = home.run_on(&[(P::OpenAi, &failing)], &["run", "fresh"]);
    assert_eq!(code(&out), 3);
    assert!(!home.memory_path("fresh").exists());
}

#[test]
fn each_sub_agent_with_memory_keeps_its_own_task_and_result() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"helper\", \"plain\"]\n",
    );
    home.named_agent("helper", "openai/gpt-4o", "[memory]\nenabled = true\n");
    home.named_agent("plain", "openai/gpt-4o", "");
    home.memory("helper", &go_entries(2));
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" if !req.has_tool_results() => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    (
                        "c1",
                        "call_agent",
                        serde_json::json!({"agent": "helper", "task": "sum up", "context": "line a\nline b"}),
                    ),
                    ("c2", "call_agent", delegate("plain", "nothing")),
                ],
                3,
                2,
            ),
        ),
        "lead" => Reply::Json(200, openai_text("lead done", 3, 2)),
        who => Reply::Json(200, openai_text(&format!("{who} done"), 3, 2)),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-p", "go"]);
    assert_ok(&out);
    // The helper saw its own memory; the lead and plain saw none.
    for r in server.requests() {
        let has = r.system_prompt().contains(MEMORY_SECTION);
        assert_eq!(has, r.who() == "helper", "{}", r.system_prompt());
    }
    let text = home.memory_text("helper");
    let entries = whole_entries(&text);
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[2].1, "Task: sum up  Context: line a line b");
    assert_eq!(entries[2].2, "helper done");
    assert!(!home.memory_path("lead").exists());
    assert!(!home.memory_path("plain").exists());
}

#[test]
fn dry_run_verbose_and_agents_show_show_the_memory() {
    let home = Home::new();
    remembering(
        &home,
        "m",
        "path = \"notes/m-memory.md\"\nlast_n = 2\nmax_entries = 50\n",
    );
    let file = home.dir.path().join("notes/m-memory.md");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, go_entries(3)).unwrap();
    let out = home.run(&["run", "m", "--dry-run"]);
    assert_ok(&out);
    let text = stdout(&out);
    let section = format!(
        "\n--- Memory ---\n{}: 2 of 3 entries loaded (last_n = 2)\n{}\n\n--- Sub-Agents ---",
        file.display(),
        go_entries_from(2, 3).trim_end()
    );
    assert!(text.contains(&section), "{text}");
    assert!(text.contains(&format!(
        "You are m.{MEMORY_SECTION}{}",
        go_entries_from(2, 3)
    )));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), go_entries(3));

    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "m", "-v"]);
    assert!(
        stderr(&out).contains(&format!(
            "Memory:   2 entries loaded from {}",
            file.display()
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(entry_headers(&std::fs::read_to_string(&file).unwrap()), 4);

    let show = stdout(&home.run(&["agents", "show", "m"]));
    assert_eq!(row(&show, "Memory"), format!("on, {}", file.display()));
    assert_eq!(row(&show, "Memory Last N"), "2");
    assert_eq!(row(&show, "Memory Max Entries"), "50");
    remembering(&home, "d", "");
    let show = stdout(&home.run(&["agents", "show", "d"]));
    let default = home.memory_path("d");
    assert_eq!(row(&show, "Memory"), format!("on, {}", default.display()));
    assert_eq!(row(&show, "Memory Last N"), "10");
    assert_eq!(row(&show, "Memory Max Entries"), "");
    home.named_agent("off", "openai/gpt-4o", "[memory]\nenabled = false\n");
    assert_eq!(
        row(&stdout(&home.run(&["agents", "show", "off"])), "Memory"),
        "off"
    );
    home.named_agent("none", "openai/gpt-4o", "");
    assert_eq!(
        row(&stdout(&home.run(&["agents", "show", "none"])), "Memory"),
        ""
    );
}

/// The value of `agents show`'s row `label` ("" when there is none).
fn row(show: &str, label: &str) -> String {
    show.lines()
        .find_map(|l| l.strip_prefix(&format!("{label}:")))
        .map_or(String::new(), |v| v.trim().to_string())
}

#[test]
fn memory_settings_are_checked_like_the_go_originals() {
    let home = Home::new();
    for (key, message) in [
        ("last_n = -1", "memory.last_n must be non-negative"),
        (
            "max_entries = -1",
            "memory.max_entries must be non-negative",
        ),
    ] {
        remembering(&home, "bad", &format!("{key}\n"));
        let out = home.run(&["run", "bad", "--dry-run"]);
        assert_eq!(code(&out), 2);
        let file = home.config_dir().join("agents/bad.toml");
        assert_eq!(
            stderr(&out),
            format!("axe: {message} (in {})\n", file.display())
        );
    }
    home.named_agent(
        "typo",
        "openai/gpt-4o",
        "[memory]\nenabled = true\nlastn = 3\n",
    );
    let out = home.run(&["run", "typo", "--dry-run"]);
    assert_ok(&out);
    assert!(
        stderr(&out).contains("unknown key \"memory.lastn\" (did you mean \"memory.last_n\"?)"),
        "{}",
        stderr(&out)
    );
    // Memory off (or no [memory]): nothing is read or written.
    home.named_agent("off", "openai/gpt-4o", "[memory]\nenabled = false\n");
    let server = FakeServer::json(200, &openai_text("ok", 3, 2));
    assert_ok(&home.run_on(&[(P::OpenAi, &server)], &["run", "off"]));
    assert!(!home.memory_path("off").exists());
    assert!(!home.dir.path().join(".local").exists());
}
