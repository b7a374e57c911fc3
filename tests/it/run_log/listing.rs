//! `axe runs` and `axe runs show`: the log read back, newest first, both
//! files, a line that is not a record skipped with a warning; one run found
//! by a prefix of its id.

use super::{record_line, solo, write_log};
use crate::common::*;

use serde_json::Value;

/// A log of three runs of two agents, written out of start order, one
/// corrupt line among them, and an older file with one more run.
fn three_runs(home: &Home) {
    write_log(
        home,
        &[
            record_line(
                "aaaa000000000001",
                "lead",
                "2026-01-02T10:00:00.000Z",
                0,
                "second\nmore",
            ),
            "{\"run_id\": \"torn".to_string(),
            record_line(
                "bbbb000000000002",
                "lead",
                "2026-01-03T10:00:00.000Z",
                0,
                "third",
            ),
            record_line(
                "aaab000000000003",
                "solo",
                "2026-01-02T11:00:00.000Z",
                3,
                "",
            ),
        ],
    );
    let old = record_line(
        "cccc000000000004",
        "solo",
        "2026-01-01T09:00:00.000Z",
        0,
        "first",
    );
    std::fs::write(home.state_dir().join("runs.jsonl.1"), format!("{old}\n")).unwrap();
}

#[test]
fn runs_lists_both_files_newest_first_in_aligned_columns() {
    let home = Home::new();
    three_runs(&home);
    let out = home.run(&["runs"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        format!(
            "axe: warning: skipped 1 line(s) of the run log in {} that are not run records\n",
            home.state_dir().display()
        )
    );
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with("ID "), "{text}");
    let ids: Vec<&str> = lines[1..].iter().map(|l| &l[..16]).collect();
    assert_eq!(
        ids,
        [
            "bbbb000000000002",
            "aaab000000000003",
            "aaaa000000000001",
            "cccc000000000004"
        ]
    );
    assert_eq!(
        lines[1],
        "bbbb000000000002  2026-01-03 10:00:00  lead      0  1.5s     120     -  third"
    );
    assert_eq!(
        lines[2],
        "aaab000000000003  2026-01-02 11:00:00  solo      3  1.5s     120     -  error: it failed"
    );
    // Every column starts where its header does.
    let answer_at = lines[0].find("ANSWER").unwrap();
    assert_eq!(&lines[1][answer_at..], "third");
    assert_eq!(&lines[3][answer_at..], "second");
}

#[test]
fn runs_filters_by_agent_counts_with_n_and_prints_json() {
    let home = Home::new();
    three_runs(&home);
    let out = home.run(&["runs", "solo"]);
    let text = stdout(&out);
    let ids: Vec<&str> = text.lines().skip(1).map(|l| &l[..16]).collect();
    assert_eq!(ids, ["aaab000000000003", "cccc000000000004"], "{text}");
    let out = home.run(&["runs", "-n", "1"]);
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
    assert!(stdout(&out).lines().nth(1).unwrap().starts_with("bbbb"));
    let out = home.run(&["runs", "lead", "--json", "-n", "0"]);
    assert_eq!(code(&out), 0);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let got: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(got, ["bbbb000000000002", "aaaa000000000001"]);
    assert_eq!(v[1]["answer"], "second\nmore");
    // No log at all: nothing, and no error.
    let empty = Home::new();
    let out = empty.run(&["runs"]);
    assert_eq!(
        (code(&out), stdout(&out), stderr(&out)),
        (0, String::new(), String::new())
    );
    let out = empty.run(&["runs", "--json"]);
    assert_eq!(stdout(&out), "[]\n");
}

#[test]
fn runs_show_finds_a_run_by_a_unique_prefix_and_prints_its_record_then_answer() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("line one\nline two", 7, 3));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = v["run_id"].as_str().unwrap();
    let out = home.run(&["runs", "show", &id[..6]]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let (head, answer) = text.split_once("\n\n").unwrap();
    // The run kept its conversation: it is shown, ending with the answer
    // (before issue 39, the answer alone).
    let user = "[user]\nExecute the task described in your instructions.\n";
    let conversation = format!("--- conversation (2 messages) ---\n{user}[assistant]\n");
    assert_eq!(answer, conversation + "line one\nline two\n");
    let fields: Vec<(&str, &str)> = head
        .lines()
        .map(|l| (l[..11].trim_end(), &l[12..]))
        .collect();
    let get = |k: &str| fields.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    assert_eq!(get("run"), Some(id));
    assert_eq!(get("agent"), Some("solo"));
    assert_eq!(get("exit"), Some("0"));
    assert_eq!(get("model"), Some("openai/gpt-4o"));
    assert_eq!(get("tokens"), Some("7 in (0 read from cache), 3 out"));
    assert_eq!(get("trace"), Some("-"));
    assert_eq!(get("error"), None);
}

#[test]
fn an_ambiguous_or_unknown_run_id_is_exit_2() {
    let home = Home::new();
    three_runs(&home);
    let out = home.run(&["runs", "show", "aaa"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).ends_with(
            "axe: run id \"aaa\" is ambiguous: 2 runs start with it (aaaa000000000001, \
             aaab000000000003); give more of it\n"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out), "");
    let out = home.run(&["runs", "show", "aaab"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("error       it failed\n"),
        "{}",
        stdout(&out)
    );
    let out = home.run(&["runs", "show", "dddd"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).ends_with("axe: no run \"dddd\" in the run log (axe runs lists them)\n"));
}

#[test]
fn control_characters_in_a_log_are_shown_escaped_not_sent_to_the_terminal() {
    // A log line is outside input: an escape sequence in it must not reach
    // the terminal `axe runs` prints on.
    let home = Home::new();
    write_log(
        &home,
        &[record_line(
            "dddd00000000\u{1b}[2J",
            "ev\u{1b}]0;pwned\u{7}il",
            "2026-01-02T10:00:00.000Z",
            0,
            "an \u{9b}31manswer",
        )],
    );
    for args in [&["runs"][..], &["runs", "show", "dddd"]] {
        let out = home.run(args);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        // `runs show` ends with the answer itself, as `axe run` printed it.
        let all = stdout(&out);
        let text = all.split("\n\n").next().unwrap_or_default();
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\u{9b}']),
            "{args:?}: {text:?}"
        );
        assert!(
            text.contains("ev\\u{1b}]0;pwned\\u{7}il"),
            "{args:?}: {text}"
        );
        assert!(text.contains("dddd00000000\\u{1b}[2J"), "{args:?}: {text}");
    }
}
