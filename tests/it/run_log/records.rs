//! The record each top-level `axe run` leaves: its fields for a tree that
//! answered, the exit status and the failure for every way a run fails, a
//! signal's status, what is kept of the answer, and the runs that leave
//! none.

use super::{only_record, solo};
use crate::common::*;
use crate::tree_fake::{billed, three_levels};

use std::process::Stdio;
use std::time::Duration;

#[test]
fn a_tree_that_answered_leaves_one_record_with_the_trees_tokens_calls_and_trace() {
    let home = Home::new();
    let server = three_levels(&home);
    let started = std::time::SystemTime::now();
    // A relative trace path: the record has it absolute.
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "-p", "go", "--trace", "t.jsonl"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = only_record(&home);
    let trace = home.dir.path().join("t.jsonl");
    let events = trace_events(&trace);
    assert_eq!(r["run_id"], events[0]["run_id"], "the ledger's id: {r}");
    assert_eq!(r["agent"], "lead");
    assert_eq!(r["exit"], 0);
    assert_eq!(r["error"], serde_json::Value::Null);
    assert_eq!(r["model"], "openai/gpt-4o");
    // The tree's tokens: what the server billed each of the three agents,
    // each answering twice but the leaf.
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(seen.len(), 5);
    let input: u64 = seen.iter().map(|w| billed(w).0).sum();
    let output: u64 = seen.iter().map(|w| billed(w).1).sum();
    assert_eq!(r["input_tokens"], input, "{r}");
    assert_eq!(r["output_tokens"], output, "{r}");
    assert_eq!(r["cache_read_input_tokens"], 0);
    // lead called mid, mid called leaf.
    assert_eq!(r["tool_calls"], 2, "{r}");
    assert_eq!(r["answer"], "lead got: mid got: answer from leaf");
    assert_eq!(r["first_line"], "lead got: mid got: answer from leaf");
    assert_eq!(r["trace"], trace.to_str().unwrap());
    assert_eq!(r["cwd"], home.dir.path().to_str().unwrap());
    let start = humantime::parse_rfc3339(r["start"].as_str().unwrap()).unwrap();
    let skew = Duration::from_millis(5);
    assert!(start + skew >= started, "{r}");
    assert!(r["start"].as_str().unwrap().ends_with('Z'));
    assert_eq!(r["start"].as_str().unwrap().len(), 24, "{r}");
    assert!(r["duration_ms"].as_u64().unwrap() < 20_000, "{r}");
}

/// `status`'s own error body, as OpenAI sends it.
fn openai_error(status: u16) -> FakeServer {
    let body = format!(
        "{{\"error\":{{\"message\":\"refused with {status}\",\"type\":\"invalid_request_error\"}}}}"
    );
    FakeServer::json(status, &body)
}

#[test]
fn every_failure_leaves_a_record_with_the_exit_status_and_what_failed() {
    let schema = "[output]\nmax_repairs = 0\nschema = { type = \"object\", required = [\"a\"] }\n";
    // (what, agent file's extra, server, args, status)
    let cases: Vec<(&str, &str, FakeServer, Vec<&str>, i32)> = vec![
        ("bad request", "", openai_error(400), vec!["run", "solo"], 1),
        ("no agent", "", openai_error(400), vec!["run", "nobody"], 2),
        ("auth", "", openai_error(401), vec!["run", "solo"], 3),
        (
            "schema",
            schema,
            FakeServer::json(200, &openai_text("{\"b\": 1}", 1, 1)),
            vec!["run", "solo"],
            5,
        ),
    ];
    for (what, extra, server, args, status) in cases {
        let home = solo(extra);
        let out = home.run_on(&[(P::OpenAi, &server)], &args);
        assert_eq!(code(&out), status, "{what}: {}", stderr(&out));
        let r = only_record(&home);
        assert_eq!(r["exit"], status, "{what}: {r}");
        let said = stderr(&out);
        let said = said.trim_end().strip_prefix("axe: ").unwrap_or(&said);
        assert_eq!(r["error"], said, "{what}: {r}");
        assert_eq!(r["answer"], "", "{what}");
        assert_eq!(r["agent"], args[1], "{what}");
        assert_eq!(r["run_id"].as_str().unwrap().len(), 16, "{what}: {r}");
    }
    // Exit 4: the tree's budget spent before the second request.
    let home = Home::new();
    let server = three_levels(&home);
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--max-turns", "1"],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let r = only_record(&home);
    assert_eq!(r["exit"], 4, "{r}");
    assert_eq!(r["error"], "turn budget exceeded (used 1 of 1)", "{r}");
    assert_eq!(r["input_tokens"], billed("lead").0, "{r}");
}

#[test]
fn a_run_ended_by_a_signal_leaves_a_record_with_the_signals_status() {
    for (sig, status, why) in [
        (libc::SIGINT, 130, "interrupted"),
        (libc::SIGTERM, 143, "terminated"),
    ] {
        let home = solo("");
        let server = FakeServer::start(vec![Reply::Hang]);
        let trace = home.dir.path().join("t.jsonl");
        let child = home
            .axe_on(&[(P::OpenAi, &server)])
            .args(["run", "solo", "--trace", trace.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        server.wait_for_requests(1);
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), status, "{}", stderr(&out));
        assert_eq!(stderr(&out), format!("axe: {why}\n"));
        let r = only_record(&home);
        assert_eq!(r["exit"], status, "{r}");
        assert_eq!(r["error"], why, "{r}");
        assert_eq!(r["run_id"], trace_events(&trace)[0]["run_id"], "{r}");
    }
}

#[test]
fn the_answer_is_kept_redacted_and_cut_at_64_kib_with_its_first_line_clipped() {
    let home = solo("");
    let first = "x".repeat(300);
    let answer = format!(
        "\n  {first}\nthe key: {OPENAI_KEY}\n{}",
        "y".repeat(100_000)
    );
    let server = FakeServer::json(200, &openai_text(&answer, 1, 1));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let r = only_record(&home);
    let kept = r["answer"].as_str().unwrap();
    assert!(!kept.contains(OPENAI_KEY), "the key is in the record");
    assert!(kept.contains("the key: [redacted]"), "{}", &kept[..400]);
    assert!(kept.len() <= 64 * 1024 + 100, "{}", kept.len());
    assert!(kept.contains("\n[cut: "), "{}", &kept[kept.len() - 100..]);
    assert!(kept.starts_with("\n  xxx"));
    let line = r["first_line"].as_str().unwrap();
    assert_eq!(line, format!("{}…", "x".repeat(200)));
    // The log's bytes hold no key either.
    let text = std::fs::read_to_string(home.state_dir().join("runs.jsonl")).unwrap();
    assert!(!text.contains(OPENAI_KEY));
}

#[test]
fn dry_runs_and_no_log_runs_leave_no_record() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    for args in [
        &["run", "solo", "--dry-run"][..],
        &["run", "solo", "--no-log"],
    ] {
        let out = home.run_on(&[(P::OpenAi, &server)], args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    assert!(!home.state_dir().join("runs.jsonl").exists());
    // And a failure under --no-log leaves none either.
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "nobody", "--no-log"]);
    assert_eq!(code(&out), 2);
    assert!(home.run_log().is_empty());
    // The same run without the switch does.
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(only_record(&home)["answer"], "hello");
}

#[test]
fn the_config_switch_turns_the_log_off_and_its_keys_are_checked() {
    let home = solo("");
    home.config("[run_log]\nenabled = false\n");
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stderr(&out), "");
    assert!(home.run_log().is_empty());
    home.config("[run_log]\nenable = false\n");
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown key \"run_log.enable\" (did you mean \"run_log.enabled\"?)"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        home.run_log().len(),
        1,
        "a misspelt switch leaves the log on"
    );
}

#[test]
fn a_log_that_cannot_be_written_is_one_warning_and_changes_nothing_else() {
    let home = solo("");
    // The state directory is a file: nothing can be made under it.
    std::fs::write(home.dir.path().join("state"), "not a directory").unwrap();
    let server = FakeServer::json(200, &openai_text("hello", 1, 1));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n");
    let err = stderr(&out);
    assert!(
        err.starts_with("axe: warning: cannot write the run log: "),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    // A failing run keeps its own status.
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "nobody"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
