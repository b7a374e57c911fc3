//! Streamed answers through the binary (design §4.11): what is asked for on
//! each wire, the text printed as it comes (a byte per write, with
//! keep-alives and unknown events among it), a tool loop streamed turn by
//! turn, what `--json` and an output schema print, what `--verbose`, the
//! trace, `--dry-run` and `agents show` say. The hostile streams are in
//! `hostile.rs`.

mod hostile;

use crate::common::*;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// A home with agent `solo` on `p`, whose file adds `extra`.
fn solo(p: P, extra: &str) -> Home {
    let home = Home::fast_retries();
    home.named_agent("solo", p.model(), extra);
    home
}

#[test]
fn streamed_text_is_printed_whole_on_every_wire_a_byte_per_write() {
    for p in PROVIDERS {
        let body = p.stream_text(&["Héllo, ", "wörld ✓"], 11, 7);
        let server = FakeServer::start(vec![p.streamed(&body)]);
        let home = solo(p, "");
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "solo", "--stream", "-p", "hi"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "Héllo, wörld ✓\n", "{p:?}");
        let sent = server.only_request().json();
        assert_eq!(sent["stream"], true, "{p:?}");
        if p == P::OpenAi {
            assert_eq!(
                sent["stream_options"],
                serde_json::json!({"include_usage": true})
            );
        }
    }
}

#[test]
fn the_first_words_reach_stdout_before_the_stream_ends() {
    for p in PROVIDERS {
        let dir = TempDir::new("stream-go");
        let go = dir.path().join("go");
        let body = p.stream_text(&["First words.", " The rest."], 5, 2);
        // The stream is held right after the event that carries the words.
        let end = if p == P::Ollama { "\n" } else { "\n\n" };
        let at = body.find("First words.").unwrap();
        let split = at + body[at..].find(end).unwrap() + end.len();
        let server = FakeServer::start(vec![p.stream_steps(vec![
            Step::bytes(&body[..split], 7),
            Step::WaitFor(go.clone()),
            Step::bytes(&body[split..], 7),
        ])]);
        let home = solo(p, "stream = true\n");
        let mut child = home
            .axe_on(&[(p, &server)])
            .args(["run", "solo", "-p", "hi"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut out = child.stdout.take().unwrap();
        let started = Instant::now();
        let mut seen = Vec::new();
        let mut buf = [0u8; 256];
        // Held by the server until `go` exists: the text must come first.
        while !String::from_utf8_lossy(&seen).contains("First words.") {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{p:?}: nothing printed yet"
            );
            let n = out.read(&mut buf).unwrap();
            assert!(n > 0, "{p:?}: stdout closed with {seen:?}");
            seen.extend_from_slice(&buf[..n]);
        }
        std::fs::write(&go, "").unwrap();
        out.read_to_end(&mut seen).unwrap();
        assert!(child.wait().unwrap().success(), "{p:?}");
        assert_eq!(
            String::from_utf8_lossy(&seen),
            "First words. The rest.\n",
            "{p:?}"
        );
    }
}

#[test]
fn a_stream_stdout_takes_at_once_starts_no_writer_thread() {
    let dir = TempDir::new("stream-threads");
    let go = dir.path().join("go");
    let body = P::OpenAi.stream_text(&["First words.", " The rest."], 5, 2);
    let at = body.find("First words.").unwrap();
    let split = at + body[at..].find("\n\n").unwrap() + 2;
    let server = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&body[..split], 7),
        Step::WaitFor(go.clone()),
        Step::bytes(&body[split..], 7),
    ])]);
    let home = solo(P::OpenAi, "stream = true\n");
    let mut child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo", "-p", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("First words.") {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "stdout closed with {seen:?}");
        seen.extend_from_slice(&buf[..n]);
    }
    // Text printed, the stream held: the process's threads by name, once a
    // thread started with the text has had the time to name itself.
    std::thread::sleep(Duration::from_millis(200));
    let tasks = std::fs::read_dir(format!("/proc/{}/task", child.id())).unwrap();
    let names: Vec<String> = tasks
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect();
    std::fs::write(&go, "").unwrap();
    out.read_to_end(&mut seen).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(String::from_utf8_lossy(&seen), "First words. The rest.\n");
    // A pipe with room took the text on the reading thread (design §4.11).
    assert!(!names.is_empty());
    assert!(
        !names.iter().any(|n| n == "axe-stdout"),
        "threads: {names:?}"
    );
}

/// The pace a stream's text is printed at (design §4.11): the most writes
/// to stdout over a stretch of time.
const PACE: Duration = Duration::from_millis(33);

#[test]
fn a_fast_stream_is_printed_at_most_once_a_pace_not_once_a_token() {
    // 300 tokens, one every 2 ms or so: at least 600 ms of stream.
    let tokens = vec!["x "; 300];
    let body = openai_stream(&tokens, &[], "stop", 5, 300);
    let mut steps = Vec::new();
    for event in body.split_inclusive("\n\n") {
        steps.push(Step::bytes(event, event.len()));
        steps.push(Step::Sleep(Duration::from_millis(2)));
    }
    let server = FakeServer::start(vec![P::OpenAi.stream_steps(steps)]);
    let home = solo(P::OpenAi, "");
    let mut child = home
        .axe_on(&[(P::OpenAi, &server)])
        .args(["run", "solo", "--stream", "-p", "hi"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let (mut seen, mut pieces) = (Vec::new(), 0u32);
    let mut buf = vec![0u8; 64 << 10];
    let mut first = None;
    loop {
        let n = out.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        pieces += 1;
        seen.extend_from_slice(&buf[..n]);
    }
    let took = first.expect("some text").elapsed();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        String::from_utf8_lossy(&seen),
        format!("{}\n", "x ".repeat(300))
    );
    // Each write follows a read that waited a pace after the last; a reader
    // late to read sees fewer pieces, never more. The newline at the end
    // may come as a piece of its own.
    let most = took.as_millis() / PACE.as_millis() + 3;
    assert!(
        u128::from(pieces) <= most,
        "{pieces} pieces in {took:?}: more than one a {PACE:?} ({most})"
    );
}

#[test]
fn a_stream_faster_than_a_read_a_pace_is_not_read_a_pace_behind() {
    // 1.5 MB of events sent at once: a read takes about 8 KiB of it, so a
    // pace between every two reads would take some 190 paces, over 6 s
    // (9 s seen).
    let token = "0123456789".repeat(10);
    let tokens = vec![token.as_str(); 6_000];
    let body = openai_stream(&tokens, &[], "stop", 5, 6_000);
    let server = FakeServer::start(vec![
        P::OpenAi.stream_steps(vec![Step::bytes(&body, 64 << 10)]),
    ]);
    let home = solo(P::OpenAi, "");
    let b = home.run_bounded(
        &[(P::OpenAi, &server)],
        &["run", "solo", "--stream", "-p", "hi"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), format!("{}\n", token.repeat(6_000)));
    // Reads that each brought all they could follow each other at once.
    assert!(
        b.took < Duration::from_secs(5),
        "{:?} for a stream that came at once",
        b.took
    );
}

/// A lead on `p` that streams "Let me ask.", calls helpers `a` and `b`
/// (interleaved on OpenAI), then streams its answer; the helpers answer
/// streamed too.
fn tool_loop(p: P) -> (Home, FakeServer) {
    let home = Home::fast_retries();
    home.named_agent("lead", p.model(), "sub_agents = [\"a\", \"b\"]\n");
    home.named_agent("a", p.model(), "");
    home.named_agent("b", p.model(), "");
    let server = FakeServer::route(move |r| match (r.who().as_str(), r.has_tool_results()) {
        ("lead", false) => p.streamed(&p.stream_calls(
            "Let me ask.",
            &[
                ("call_1", "call_agent", delegate("a", "one")),
                ("call_2", "call_agent", delegate("b", "two")),
            ],
        )),
        ("lead", true) => p.streamed(&p.stream_text(&["The answer ", "is 42."], 9, 4)),
        (who, _) => p.streamed(&p.stream_text(&[&format!("helper {who} says hi")], 3, 1)),
    });
    (home, server)
}

#[test]
fn a_streamed_tool_loop_prints_each_turn_of_the_top_level_agent_and_no_sub_agent() {
    for p in PROVIDERS {
        let (home, server) = tool_loop(p);
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "lead", "--stream", "-p", "go"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(
            stdout(&b.output),
            "Let me ask.\nThe answer is 42.\n",
            "{p:?}"
        );
        // Both calls were assembled and run; their results went back.
        let results = server.sent_by("lead")[1].tool_result_texts();
        assert_eq!(results.len(), 2, "{p:?}: {results:?}");
        assert!(
            results[0].contains("helper a says hi"),
            "{p:?}: {results:?}"
        );
        assert!(
            results[1].contains("helper b says hi"),
            "{p:?}: {results:?}"
        );
        // Sub-agents stream from the provider too.
        for who in ["a", "b"] {
            assert_eq!(server.sent_by(who)[0].json()["stream"], true, "{p:?} {who}");
        }
    }
}

#[test]
fn stream_with_json_streams_from_the_provider_and_prints_one_object_at_the_end() {
    for p in PROVIDERS {
        let server = FakeServer::start(vec![p.streamed(&p.stream_text(&["To", "gether"], 21, 8))]);
        let home = solo(p, "");
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "solo", "--stream", "--json", "-p", "hi"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        let out = stdout(&b.output);
        let v: serde_json::Value =
            serde_json::from_str(&out).expect("one JSON object, nothing else");
        assert_eq!(v["content"], "Together", "{p:?}");
        // The usage that came last.
        assert_eq!(
            (v["input_tokens"].as_u64(), v["output_tokens"].as_u64()),
            (Some(21), Some(8)),
            "{p:?}: {v}"
        );
        assert_eq!(server.only_request().json()["stream"], true);
    }
}

#[test]
fn stream_with_an_output_schema_prints_only_the_checked_answer() {
    let schema = "[output]\nschema = { type = \"object\", required = [\"n\"], properties = { n = { type = \"integer\" } } }\n";
    for p in PROVIDERS {
        let server = FakeServer::start(vec![
            p.streamed(&p.stream_text(&["{\"n\": \"", "seven\"}"], 5, 2)),
            p.streamed(&p.stream_text(&["{\"n\": ", "7}"], 5, 2)),
        ]);
        let home = solo(p, schema);
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "solo", "--stream", "-p", "hi"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "{\"n\":7}\n", "{p:?}");
        assert_eq!(server.requests().len(), 2, "{p:?}: one repair");
    }
}

#[test]
fn a_server_that_answers_a_stream_whole_is_read_and_printed_once() {
    for p in PROVIDERS {
        let server = FakeServer::json(200, &p.text("whole anyway"));
        let home = solo(p, "");
        let b = home.run_bounded(
            &[(p, &server)],
            &["run", "solo", "--stream", "-p", "hi"],
            HUNG,
        );
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "whole anyway\n", "{p:?}");
    }
}

#[test]
fn verbose_and_the_trace_give_the_time_to_the_first_token_of_streamed_requests_only() {
    let p = P::OpenAi;
    let body = p.stream_text(&["slow"], 5, 2);
    let at = body.find("slow").unwrap() - 30;
    let server = FakeServer::start(vec![p.stream_steps(vec![
        Step::bytes(&body[..at], 64),
        Step::Sleep(Duration::from_millis(300)),
        Step::bytes(&body[at..], 64),
    ])]);
    let home = solo(p, "");
    let trace = home.dir.path().join("trace.jsonl");
    let trace_arg = trace.to_str().unwrap();
    let b = home.run_bounded(
        &[(p, &server)],
        &[
            "run", "solo", "--stream", "-v", "--trace", trace_arg, "-p", "hi",
        ],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let err = stderr(&b.output);
    let line = err
        .lines()
        .find(|l| l.contains("First token after"))
        .unwrap_or_else(|| panic!("{err}"));
    let ms: u64 = line
        .split("after ")
        .nth(1)
        .unwrap()
        .trim_end_matches(" ms")
        .parse()
        .unwrap();
    assert!((250..5000).contains(&ms), "{line}");
    let response = trace_events(&trace)
        .into_iter()
        .find(|e| e["event"] == "response")
        .unwrap();
    assert!(
        response["first_token_ms"].as_u64().unwrap() >= 250,
        "{response}"
    );

    let server = FakeServer::json(200, &p.text("whole"));
    let trace = home.dir.path().join("plain.jsonl");
    let b = home.run_bounded(
        &[(p, &server)],
        &[
            "run",
            "solo",
            "-v",
            "--trace",
            trace.to_str().unwrap(),
            "-p",
            "hi",
        ],
        HUNG,
    );
    assert!(!stderr(&b.output).contains("First token"));
    let response = trace_events(&trace)
        .into_iter()
        .find(|e| e["event"] == "response")
        .unwrap();
    assert!(response.get("first_token_ms").is_none(), "{response}");
}

#[test]
fn dry_run_and_agents_show_say_an_agent_streams() {
    let home = solo(P::OpenAi, "stream = true\n");
    home.named_agent("plain", P::OpenAi.model(), "");
    let shown = stdout(&home.run(&["agents", "show", "solo"]));
    assert!(
        shown
            .lines()
            .any(|l| l.starts_with("Stream") && l.ends_with("yes")),
        "{shown}"
    );
    assert!(!stdout(&home.run(&["agents", "show", "plain"])).contains("Stream"));
    let dry = stdout(&home.run(&["run", "plain", "--stream", "--dry-run", "-p", "x"]));
    assert!(dry.contains("Stream:   yes\n"), "{dry}");
    let dry = stdout(&home.run(&["run", "plain", "--dry-run", "-p", "x"]));
    assert!(!dry.contains("Stream"), "{dry}");
}
