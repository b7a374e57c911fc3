//! Conversations that go on (design §7.7): each run's conversation kept
//! beside the log, `--continue` sending it back before the new prompt (on
//! each wire, after a tool loop, of a failed run, by id), the runs it
//! refuses to go on with, `--json-messages`, `axe runs show`, and the
//! files' privacy, redaction and trimming with the log's rotation.

use super::solo;
use crate::common::*;

use serde_json::Value;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;

/// What a request sent, message by message (the system prompt left out):
/// `user: text`, `assistant: text`, `call: name`, `result: text`, in
/// any of the three wire formats.
fn turns(req: &Recorded) -> Vec<String> {
    let mut out = Vec::new();
    for m in req.messages() {
        let role = m["role"].as_str().unwrap_or("?").to_string();
        if role == "system" {
            continue;
        }
        if role == "tool" {
            out.push(format!("result: {}", m["content"].as_str().unwrap_or("")));
            continue;
        }
        match &m["content"] {
            Value::String(s) if !s.is_empty() => out.push(format!("{role}: {s}")),
            Value::Array(blocks) => {
                for b in blocks {
                    match b["type"].as_str() {
                        Some("text") => {
                            out.push(format!("{role}: {}", b["text"].as_str().unwrap()))
                        }
                        Some("tool_use") => {
                            out.push(format!("call: {}", b["name"].as_str().unwrap()))
                        }
                        Some("tool_result") => {
                            out.push(format!("result: {}", b["content"].as_str().unwrap_or("")))
                        }
                        _ => out.push(format!("{role}: {b}")),
                    }
                }
            }
            _ => {}
        }
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            out.push(format!("call: {}", c["function"]["name"].as_str().unwrap()));
        }
    }
    out
}

/// Runs `axe <args>` on `p`'s server, expecting `status`.
#[track_caller]
fn run(home: &Home, p: P, server: &FakeServer, args: &[&str], status: i32) -> String {
    let out = home.run_on(&[(p, server)], args);
    assert_eq!(code(&out), status, "{args:?}: {}", stderr(&out));
    if status == 0 {
        assert_eq!(stderr(&out), "", "{args:?}");
    }
    stdout(&out)
}

/// The run ids of the log, oldest first.
fn ids(home: &Home) -> Vec<String> {
    home.run_log()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn continue_twice_in_a_row_sends_the_whole_conversation_each_time_on_every_wire() {
    for p in PROVIDERS {
        let home = Home::new();
        home.named_agent("solo", p.model(), "");
        let replies = ["one", "two", "three"].map(|t| Reply::Json(200, p.text(t)));
        let server = FakeServer::start(replies.to_vec());
        assert_eq!(
            run(&home, p, &server, &["run", "solo", "-p", "first"], 0),
            "one\n"
        );
        let two = run(
            &home,
            p,
            &server,
            &["run", "solo", "--continue", "-p", "second"],
            0,
        );
        assert_eq!(two, "two\n");
        // A bare --continue last of all, the prompt from stdin.
        let mut cmd = home.axe_on(&[(p, &server)]);
        cmd.args(["run", "solo", "--continue"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(b"third").unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out), "three\n");
        let sent = server.requests();
        assert_eq!(turns(&sent[0]), ["user: first"], "{p:?}");
        assert_eq!(
            turns(&sent[1]),
            ["user: first", "assistant: one", "user: second"],
            "{p:?}"
        );
        assert_eq!(
            turns(&sent[2]),
            [
                "user: first",
                "assistant: one",
                "user: second",
                "assistant: two",
                "user: third"
            ],
            "{p:?}"
        );
        // Each run is a run of its own, saying which it went on with.
        let log = home.run_log();
        let ids = ids(&home);
        assert_eq!(log[0].get("continues"), None, "{p:?}");
        assert_eq!(log[1]["continues"], ids[0].as_str());
        assert_eq!(log[2]["continues"], ids[1].as_str());
    }
}

/// An agent with `read_file` in a workdir holding `notes.txt`.
fn hands(home: &Home, p: P) {
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\nbeta\n").unwrap();
    home.named_agent(
        "hands",
        p.model(),
        &format!(
            "workdir = \"{}\"\ntools = [\"read_file\"]\n",
            work.display()
        ),
    );
}

#[test]
fn a_run_after_a_tool_loop_goes_on_with_the_calls_and_their_results() {
    for p in PROVIDERS {
        let home = Home::new();
        hands(&home, p);
        let call = [("c1", "read_file", serde_json::json!({"path": "notes.txt"}))];
        let server = FakeServer::start(vec![
            Reply::Json(200, p.tool_calls(&call)),
            Reply::Json(200, p.text("read it")),
            Reply::Json(200, p.text("it said alpha")),
        ]);
        run(&home, p, &server, &["run", "hands", "-p", "read notes"], 0);
        let again = ["run", "hands", "--continue", "-p", "what did it say?"];
        assert_eq!(run(&home, p, &server, &again, 0), "it said alpha\n");
        let sent = server.requests();
        let t = turns(&sent[2]);
        assert_eq!(t.len(), 5, "{p:?}: {t:?}");
        assert_eq!(t[0], "user: read notes");
        assert_eq!(t[1], "call: read_file");
        assert!(
            t[2].starts_with("result: ") && t[2].contains("alpha"),
            "{t:?}"
        );
        assert_eq!(t[3..], ["assistant: read it", "user: what did it say?"]);
        // The call goes back as it came, with its id where the wire has one.
        let body = sent[2].body.clone();
        assert_eq!(body.contains("\"c1\""), p.has_ids(), "{body}");
    }
}

#[test]
fn a_failed_run_is_continued_from_where_it_stopped() {
    let home = Home::fast_retries();
    hands(&home, P::OpenAi);
    let call = [("c1", "read_file", serde_json::json!({"path": "notes.txt"}))];
    let refused = r#"{"error":{"message":"no","type":"invalid_request_error"}}"#;
    let server = FakeServer::start(vec![
        Reply::Json(200, P::OpenAi.tool_calls(&call)),
        Reply::Json(400, refused.into()),
        Reply::Json(200, P::OpenAi.text("done now")),
    ]);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "hands", "-p", "read"]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    let failed = ids(&home)[0].clone();
    let again = ["run", "hands", "--continue", "-p", "try again"];
    assert_eq!(run(&home, P::OpenAi, &server, &again, 0), "done now\n");
    let t = turns(&server.requests()[2]);
    assert_eq!(t[..2], ["user: read", "call: read_file"], "{t:?}");
    assert!(t[2].contains("alpha"), "{t:?}");
    assert_eq!(t[3..], ["user: try again"]);
    assert_eq!(home.run_log()[1]["continues"], failed.as_str());
}

#[test]
fn a_run_a_signal_ends_keeps_the_turns_it_had_and_goes_on_from_them() {
    let home = Home::new();
    hands(&home, P::OpenAi);
    let call = [("c1", "read_file", serde_json::json!({"path": "notes.txt"}))];
    let server = FakeServer::start(vec![
        Reply::Json(200, P::OpenAi.tool_calls(&call)),
        Reply::Hang,
    ]);
    let child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "hands", "-p", "read"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The second request is in flight: the first turn is over.
    server.wait_for_requests(2);
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    let id = ids(&home)[0].clone();
    let kept = home.state_dir().join(format!("messages/{id}.json"));
    let kept: Value = serde_json::from_str(&std::fs::read_to_string(kept).unwrap()).unwrap();
    let roles: Vec<&str> = kept["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"], "{kept}");
    let server = FakeServer::json(200, &openai_text("went on", 1, 1));
    let again = ["run", "hands", "--continue", "-p", "go on"];
    assert_eq!(run(&home, P::OpenAi, &server, &again, 0), "went on\n");
    let t = turns(&server.only_request());
    assert_eq!(t[..2], ["user: read", "call: read_file"], "{t:?}");
    assert_eq!(t[3..], ["user: go on"], "{t:?}");
}

#[test]
fn a_run_that_failed_before_any_answer_goes_on_with_its_prompt_joined_to_the_new_one() {
    let home = Home::fast_retries();
    home.named_agent("solo", P::Anthropic.model(), "");
    let refused = r#"{"type":"error","error":{"type":"invalid_request_error","message":"no"}}"#;
    let server = FakeServer::start(vec![
        Reply::Json(400, refused.into()),
        Reply::Json(200, P::Anthropic.text("done")),
    ]);
    let out = home.run_on(&[(P::Anthropic, &server)], &["run", "solo", "-p", "first"]);
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    let again = ["run", "solo", "--continue", "-p", "second"];
    assert_eq!(run(&home, P::Anthropic, &server, &again, 0), "done\n");
    // One user turn: two in a row are refused by some wires (Bedrock's).
    assert_eq!(turns(&server.requests()[1]), ["user: first\n\nsecond"]);
}

#[test]
fn continue_by_id_goes_on_with_that_run_and_another_agents_is_exit_2() {
    let home = solo("");
    home.named_agent("other", "openai/gpt-4o", "");
    let replies = ["one", "two", "three", "four"].map(|t| Reply::Json(200, openai_text(t, 1, 1)));
    let server = FakeServer::start(replies.to_vec());
    let p = P::OpenAi;
    run(&home, p, &server, &["run", "solo", "-p", "first"], 0);
    run(&home, p, &server, &["run", "solo", "-p", "second"], 0);
    run(&home, p, &server, &["run", "other", "-p", "elsewhere"], 0);
    let ids = ids(&home);
    // A unique prefix is enough, as for axe runs show.
    let by_id = ["run", "solo", "--continue", &ids[0][..8], "-p", "back"];
    assert_eq!(run(&home, p, &server, &by_id, 0), "four\n");
    let t = turns(&server.requests()[3]);
    assert_eq!(t, ["user: first", "assistant: one", "user: back"]);
    assert_eq!(home.run_log()[3]["continues"], ids[0].as_str());
    // --dry-run says what it would go on with, and sends nothing.
    let dry = ["run", "solo", "--continue", &ids[0], "--dry-run", "-p", "x"];
    let text = run(&home, p, &server, &dry, 0);
    let section = format!(
        "\n--- Continues ---\nRun: {}\nMessages: 2 before the prompt\n",
        ids[0]
    );
    assert!(text.ends_with(&section), "{text}");
    // other's run, under solo's name: refused before any request.
    let wrong = home.run_on(
        &[(p, &server)],
        &["run", "solo", "--continue", &ids[2], "-p", "x"],
    );
    assert_eq!(code(&wrong), 2, "{}", stderr(&wrong));
    assert!(
        stderr(&wrong).contains("is a run of agent \"other\""),
        "{}",
        stderr(&wrong)
    );
    // An id the log never had.
    let none = home.run_on(
        &[(p, &server)],
        &["run", "solo", "--continue", "ffff", "-p", "x"],
    );
    assert_eq!(code(&none), 2, "{}", stderr(&none));
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn a_run_without_a_log_or_without_messages_cannot_be_continued_and_says_why() {
    let home = solo("");
    let server = FakeServer::json(200, &openai_text("hi", 1, 1));
    let p = P::OpenAi;
    run(
        &home,
        p,
        &server,
        &["run", "solo", "--no-log", "-p", "x"],
        0,
    );
    let out = home.run_on(&[(p, &server)], &["run", "solo", "--continue", "-p", "y"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("agent \"solo\" has no run in the run log to go on with"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("--no-log"), "{}", stderr(&out));
    // [run_log] messages = false: a record, no conversation.
    home.config("[run_log]\nmessages = false\n");
    run(&home, p, &server, &["run", "solo", "-p", "x"], 0);
    assert!(!home.state_dir().join("messages").exists());
    let out = home.run_on(&[(p, &server)], &["run", "solo", "--continue", "-p", "y"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("kept no conversation"),
        "{}",
        stderr(&out)
    );
    assert_eq!(server.requests().len(), 2);
    // --continue with --each is refused.
    let out = home.run_on(
        &[(p, &server)],
        &["run", "solo", "--continue", "--each", "-"],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn json_messages_prints_the_conversation_in_the_json_object() {
    let home = Home::new();
    hands(&home, P::Anthropic);
    let call = [("c1", "read_file", serde_json::json!({"path": "notes.txt"}))];
    let server = FakeServer::start(vec![
        Reply::Json(200, P::Anthropic.tool_calls(&call)),
        Reply::Json(200, P::Anthropic.text("read it")),
    ]);
    let args = ["run", "hands", "-p", "read", "--json-messages", "--no-log"];
    let out = run(&home, P::Anthropic, &server, &args, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["content"], "read it");
    let m = v["messages"].as_array().unwrap();
    let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"], "{v}");
    assert_eq!(m[0]["content"], "read");
    assert_eq!(m[1]["tool_calls"][0]["name"], "read_file");
    assert_eq!(m[1]["tool_calls"][0]["id"], "c1");
    assert_eq!(m[1]["tool_calls"][0]["arguments"]["path"], "notes.txt");
    assert_eq!(m[2]["results"][0]["call_id"], "c1");
    assert!(
        m[2]["results"][0]["content"]
            .as_str()
            .unwrap()
            .contains("alpha")
    );
    assert_eq!(m[3]["content"], "read it");
    // --no-log: nothing kept.
    assert!(!home.state_dir().join("messages").exists());
    // Plain --json has none.
    let server = FakeServer::json(200, &P::Anthropic.text("x"));
    home.named_agent("solo", P::Anthropic.model(), "");
    let out = run(&home, P::Anthropic, &server, &["run", "solo", "--json"], 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.get("messages"), None);
}

#[test]
fn runs_show_prints_the_conversation() {
    let home = Home::new();
    hands(&home, P::OpenAi);
    let call = [("c1", "read_file", serde_json::json!({"path": "notes.txt"}))];
    let server = FakeServer::start(vec![
        Reply::Json(200, P::OpenAi.tool_calls(&call)),
        Reply::Json(200, P::OpenAi.text("read it")),
        Reply::Json(200, P::OpenAi.text("it said alpha")),
    ]);
    run(
        &home,
        P::OpenAi,
        &server,
        &["run", "hands", "-p", "read notes"],
        0,
    );
    run(
        &home,
        P::OpenAi,
        &server,
        &["run", "hands", "--continue", "-p", "and?"],
        0,
    );
    let ids = ids(&home);
    let show = home.run(&["runs", "show", &ids[1]]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let text = stdout(&show);
    assert!(
        text.contains(&format!("continues   {}\n", ids[0])),
        "{text}"
    );
    let conversation = text
        .split_once("--- conversation (6 messages) ---\n")
        .unwrap()
        .1;
    let expected = "[user]\nread notes\n\
                    [assistant]\n-> read_file (c1): {\"path\":\"notes.txt\"}\n\
                    [tool read_file (c1)]\n";
    assert!(conversation.starts_with(expected), "{conversation}");
    assert!(
        conversation.ends_with("[assistant]\nread it\n[user]\nand?\n[assistant]\nit said alpha\n"),
        "{conversation}"
    );
}

#[test]
fn conversations_are_private_redacted_and_dropped_with_the_logs_rotation() {
    let home = solo("");
    home.config("[run_log]\nmax_bytes = 1\n");
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let p = P::OpenAi;
    let prompt = format!("my key is {OPENAI_KEY}");
    for _ in 0..3 {
        run(&home, p, &server, &["run", "solo", "-p", &prompt], 0);
    }
    // Every run rotates: the log holds the last two, and so do messages/.
    let dir = home.state_dir().join("messages");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let old = std::fs::read_to_string(home.state_dir().join("runs.jsonl.1")).unwrap();
    let old: Value = serde_json::from_str(old.trim()).unwrap();
    let mut kept = vec![
        format!("{}.json", old["run_id"].as_str().unwrap()),
        format!("{}.json", ids(&home)[0]),
    ];
    kept.sort();
    assert_eq!(files, kept);
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    let file = dir.join(&files[0]);
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(OPENAI_KEY), "{text}");
    assert!(text.contains("my key is [redacted]"), "{text}");
}
