//! The trace (`--trace`, `AXE_TRACE`; design §7.2), through the real
//! binary: one JSON line per event of the whole tree, accounting for every
//! request the server saw, whole lines from parallel sub-agents, retries
//! and failures recorded, bodies on request, never a key. The server is
//! [`crate::tree_fake`]'s.

use crate::common::*;
use crate::tree_fake::{billed, plan, three_levels, tree_server};

use std::time::Duration;

use serde_json::Value;

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// `2026-11-23T16:28:01.123Z`.
fn is_rfc3339_ms(ts: &str) -> bool {
    let b = ts.as_bytes();
    ts.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && ts
            .chars()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19, 23].contains(&i) || c.is_ascii_digit())
}

// ---------------------------------------------------------------------------
// Trace.
// ---------------------------------------------------------------------------

#[test]
fn trace_of_a_three_level_run_accounts_for_every_request_the_server_saw() {
    let home = Home::new();
    let server = three_levels(&home);
    let trace = home.dir.path().join("run.jsonl");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &[
            "run",
            "lead",
            "-p",
            "go",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead got: mid got: answer from leaf\n");
    let events = trace_events(&trace);

    // Every event carries the common fields.
    let run_id = events[0]["run_id"].as_str().unwrap().to_string();
    for e in &events {
        assert!(is_rfc3339_ms(e["ts"].as_str().unwrap_or("")), "{e}");
        assert_eq!(e["run_id"], run_id.as_str(), "{e}");
        for field in ["event", "agent", "path", "depth", "turn"] {
            assert!(e.get(field).is_some(), "{field} missing: {e}");
        }
    }
    // One request event per request the server saw, from the same agents.
    let requests = of_kind(&events, "request");
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(requests.len(), seen.len());
    let mut traced: Vec<String> = requests
        .iter()
        .map(|e| e["agent"].as_str().unwrap().to_string())
        .collect();
    let mut seen_sorted = seen.clone();
    traced.sort();
    seen_sorted.sort();
    assert_eq!(traced, seen_sorted);
    assert_eq!(of_kind(&events, "response").len(), seen.len());
    for r in of_kind(&events, "response") {
        let (input, output) = billed(r["agent"].as_str().unwrap());
        assert_eq!(r["input_tokens"], input, "{r}");
        assert_eq!(r["output_tokens"], output, "{r}");
        assert_eq!(r["provider"], "openai");
        assert_eq!(r["model"], "gpt-4o");
        assert!(r["duration_ms"].is_u64(), "{r}");
        assert!(r["stop_reason"].is_string(), "{r}");
    }

    // Paths and depths name each run in the tree.
    let starts: Vec<(String, u64)> = of_kind(&events, "run_start")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        starts,
        [
            ("lead".to_string(), 0),
            ("lead/mid#1".to_string(), 1),
            ("lead/mid#1/leaf#1".to_string(), 2)
        ]
    );
    assert_eq!(of_kind(&events, "run_end").len(), 3);
    // The tool events: made by lead and mid, each naming whom it called.
    let calls: Vec<(String, String, u64)> = of_kind(&events, "tool_call")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["agent_called"].as_str().unwrap().into(),
                e["turn"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("lead".into(), "mid".into(), 1),
            ("lead/mid#1".into(), "leaf".into(), 1)
        ]
    );
    for r in of_kind(&events, "tool_result") {
        assert_eq!(r["is_error"], false, "{r}");
        assert!(r["chars"].as_u64().unwrap() > 0, "{r}");
        assert!(r["call_id"].is_string(), "{r}");
    }
    // The last event is the top-level run's end, with the tree's totals.
    let last = events.last().unwrap();
    assert_eq!(last["event"], "run_end");
    assert_eq!(last["path"], "lead");
    let (input, output) = seen.iter().fold((0, 0), |(i, o), who| {
        let (bi, bo) = billed(who);
        (i + bi, o + bo)
    });
    assert_eq!(last["total_input_tokens"], input, "{last}");
    assert_eq!(last["total_output_tokens"], output, "{last}");
    // Bodies are off by default.
    assert!(events.iter().all(|e| e.get("body").is_none()));
}

#[test]
fn trace_bodies_adds_the_wire_body_and_the_answers_and_never_the_key() {
    let home = Home::new();
    let server = three_levels(&home);
    let trace = home.dir.path().join("bodies.jsonl");
    // A key echoed in a message body still never reaches the trace.
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &[
            "run",
            "lead",
            "-p",
            &format!("my key is {OPENAI_KEY}"),
            "--trace",
            trace.to_str().unwrap(),
            "--trace-bodies",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains(OPENAI_KEY), "the key leaked into the trace");
    assert!(text.contains("[redacted]"));
    let events = trace_events(&trace);
    let first = of_kind(&events, "request")[0];
    assert_eq!(first["body"]["model"], "gpt-4o");
    assert!(first["body"]["messages"].is_array(), "{first}");
    let last = of_kind(&events, "response").into_iter().last().unwrap();
    assert_eq!(last["content"], "lead got: mid got: answer from leaf");
    let result = of_kind(&events, "tool_result")[0];
    assert!(result["content"].is_string(), "{result}");
}

#[test]
fn trace_lines_from_sixteen_parallel_sub_agents_never_interleave() {
    let home = Home::new();
    let workers: Vec<&'static str> = vec!["w"; 16];
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let server = tree_server(plan(&[("lead", &workers)]), Duration::from_millis(50));
    let trace = home.dir.path().join("parallel.jsonl");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // `events` panics on any line that is not one whole JSON object.
    let events = trace_events(&trace);
    assert_eq!(of_kind(&events, "request").len(), 18);
    let mut paths: Vec<String> = of_kind(&events, "run_start")
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    let mut want: Vec<String> = (1..=16).map(|i| format!("lead/w#{i}")).collect();
    want.push("lead".into());
    want.sort();
    assert_eq!(paths, want);
    // Numbered in call order: call `lead_<i>` went to `w#<i+1>`.
    for e in of_kind(&events, "tool_call") {
        let id = e["call_id"].as_str().unwrap();
        assert!(id.starts_with("lead_"), "{e}");
    }
}

#[test]
fn trace_records_each_retry_and_axe_trace_env_turns_it_on() {
    let home = Home::new();
    home.config("[retry]\ninitial_delay_ms = 1\nmax_delay_ms = 5\n");
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::start(vec![
        Reply::Json(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit"}}"#.into(),
        ),
        Reply::Json(200, openai_text("fine", 5, 2)),
    ]);
    let trace = home.dir.path().join("env.jsonl");
    let mut cmd = home.axe_on(&[(P::OpenAi, &server)]);
    cmd.env("AXE_TRACE", &trace);
    let out = cmd.args(["run", "solo"]).output().expect("run axe");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = trace_events(&trace);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["run_start", "request", "retry", "response", "run_end"]
    );
    let retry = &events[2];
    assert_eq!(retry["status"], 429);
    assert_eq!(retry["attempt"], 2);
    assert_eq!(retry["of"], 3);
    assert_eq!(retry["provider"], "openai");
    assert!(retry["delay_ms"].is_u64());
}

#[test]
fn trace_records_a_failed_request_as_an_error_event() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(401, r#"{"error":{"message":"bad key","type":"auth"}}"#);
    let trace = home.dir.path().join("err.jsonl");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "solo", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 3);
    let events = trace_events(&trace);
    let err = of_kind(&events, "error");
    assert_eq!(err.len(), 1, "{events:?}");
    assert_eq!(err[0]["status"], 401);
    let end = of_kind(&events, "run_end")[0];
    assert_eq!(end["ok"], false);
    assert!(end["error"].as_str().unwrap().contains("bad key"), "{end}");
}

#[test]
fn trace_file_that_cannot_be_opened_is_exit_2_before_any_request() {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("x", 1, 1));
    let missing = home.dir.path().join("no/such/dir/t.jsonl");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "solo", "--trace", missing.to_str().unwrap()],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("axe: cannot open trace file "));
    assert!(server.requests().is_empty());
}
