//! Streams that go wrong, through the binary (design §4.11): an error event
//! or a cut connection before any text is printed (retried, nothing
//! printed twice) and after (no retry, the failure's exit code, one line
//! saying stdout is partial), a stream that ends without its last event,
//! one that goes quiet past the idle limit, one that never ends, and one
//! enormous event.

use crate::common::*;

use std::time::Duration;

/// A home with agent `solo` on `p` and `config` (fast retries first).
fn home_on(p: P, config: &str) -> Home {
    let home = Home::new();
    home.config(&format!("{FAST_RETRIES}{config}"));
    home.named_agent("solo", p.model(), "");
    home
}

fn run(home: &Home, p: P, server: &FakeServer, extra: &[&str]) -> Bounded {
    let mut args = vec!["run", "solo", "--stream", "-p", "hi"];
    args.extend_from_slice(extra);
    home.run_bounded(&[(p, server)], &args, HUNG)
}

/// The `axe:` lines of stderr.
fn axe_lines(b: &Bounded) -> Vec<String> {
    stderr(&b.output)
        .lines()
        .filter(|l| l.starts_with("axe:"))
        .map(str::to_string)
        .collect()
}

const PARTIAL: &str = "(the output on stdout is partial)";

#[test]
fn a_failure_before_any_text_is_printed_is_retried_and_nothing_is_printed_twice() {
    let p = P::Anthropic;
    let good = p.streamed(&p.stream_text(&["Once ", "only."], 5, 2));
    let overloaded = p.streamed(&anthropic_error_stream(
        &[],
        "overloaded_error",
        "Overloaded",
    ));
    let cut = p.stream_steps(vec![
        Step::bytes(&anthropic_error_stream(&[], "x", "y")[..60], 1),
        Step::Cut,
    ]);
    let server = FakeServer::start(vec![overloaded, cut, good]);
    let home = home_on(p, "");
    let b = run(&home, p, &server, &[]);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "Once only.\n");
    assert_eq!(
        server.requests().len(),
        3,
        "the error event and the cut were each retried"
    );
}

#[test]
fn an_error_event_after_text_was_printed_is_final_and_says_the_output_is_partial() {
    let openai_error = {
        let body = P::OpenAi.stream_text(&["Half an"], 5, 2);
        let stop = body.find("\"finish_reason\":\"stop\"").unwrap();
        let cut = body[..stop].rfind("data: ").unwrap();
        format!(
            "{}data: {{\"error\":{{\"message\":\"The server had an error processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}}}\n\n",
            &body[..cut]
        )
    };
    let cases = [
        (
            P::Anthropic,
            anthropic_error_stream(&["Half an"], "overloaded_error", "Overloaded"),
            "anthropic: overloaded (an error event in the stream): Overloaded",
        ),
        (
            P::OpenAi,
            openai_error,
            "openai: server error (an error event in the stream): The server had an error processing your request.",
        ),
    ];
    for (p, body, said) in cases {
        // The error comes a moment after the text, in a read of its own:
        // text that came in the same read as the error would not have been
        // printed, and the request would be retried.
        let error_at = body.rfind("data: ").unwrap();
        let error_at = body[..error_at].rfind("event: error").unwrap_or(error_at);
        let server = FakeServer::start(vec![
            p.stream_steps(vec![
                Step::bytes(&body[..error_at], 4096),
                Step::Sleep(Duration::from_millis(100)),
                Step::bytes(&body[error_at..], 4096),
            ]),
            p.streamed(&p.stream_text(&["never"], 5, 2)),
        ]);
        let home = home_on(p, "");
        let b = run(&home, p, &server, &[]);
        assert_eq!(code(&b.output), 3, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "Half an\n", "{p:?}");
        assert_eq!(
            axe_lines(&b),
            vec![format!("axe: {said} {PARTIAL}")],
            "{p:?}"
        );
        assert_eq!(
            server.requests().len(),
            1,
            "{p:?}: no retry once text was printed"
        );
    }
}

#[test]
fn a_stream_closed_without_its_last_event_is_a_failed_request() {
    for p in PROVIDERS {
        let whole = p.stream_text(&["Trunc", "ated"], 5, 2);
        let last = match p {
            P::OpenAi => whole.find("data: [DONE]").unwrap(),
            P::Anthropic => whole.find("event: message_stop").unwrap(),
            P::Ollama => whole.trim_end().rfind('\n').unwrap() + 1,
            P::Responses => unreachable!("runs on PROVIDERS"),
        };
        let end = match p {
            P::OpenAi => "[DONE]",
            P::Anthropic => "message_stop",
            P::Ollama => "its done: true line",
            P::Responses => unreachable!("runs on PROVIDERS"),
        };
        let server = FakeServer::start(vec![p.streamed(&whole[..last])]);
        let home = home_on(p, "");
        let b = run(&home, p, &server, &[]);
        assert_eq!(code(&b.output), 3, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "Truncated\n", "{p:?}");
        assert_eq!(
            axe_lines(&b),
            vec![format!(
                "axe: {}: invalid response: the stream ended before {end} {PARTIAL}",
                p.name()
            )],
            "{p:?}"
        );
        assert_eq!(server.requests().len(), 1, "{p:?}");
    }
}

#[test]
fn a_stream_quiet_past_the_idle_limit_fails_retried_only_before_text_was_printed() {
    let p = P::OpenAi;
    // 2 s, not 1: beside four CPU hogs the fake once took over 1 s to send
    // the first piece, and the first try was retried before any text (2
    // requests against 1).
    let config = "[providers.openai]\nidle_timeout = 2\n";
    let body = p.stream_text(&["Wait", "ing"], 5, 2);
    let at = body.find("Wait").unwrap();
    let after = at + body[at..].find("\n\n").unwrap() + 2;
    let server = FakeServer::start(vec![p.stream_steps(vec![
        Step::bytes(&body[..after], 16),
        Step::Sleep(Duration::from_secs(30)),
        Step::bytes(&body[after..], 16),
    ])]);
    let home = home_on(p, config);
    let b = run(&home, p, &server, &[]);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    // Ended at the 2 s limit, not when the server went on after 30 s; the
    // margin is for a loaded machine.
    assert!(b.took < Duration::from_secs(10), "{:?}", b.took);
    assert_eq!(stdout(&b.output), "Wait\n");
    assert_eq!(
        axe_lines(&b),
        vec![format!(
            "axe: openai: the stream sent nothing for 2s (the idle limit) {PARTIAL}"
        )]
    );
    assert_eq!(server.requests().len(), 1);

    // Quiet from its head on: nothing printed, so it is tried again.
    let server = FakeServer::start(vec![
        p.stream_steps(vec![Step::Sleep(Duration::from_secs(30))]),
    ]);
    let b = run(&home, p, &server, &[]);
    assert_eq!(code(&b.output), 3, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "");
    assert_eq!(
        axe_lines(&b),
        vec!["axe: openai: the stream sent nothing for 2s (the idle limit)".to_string()]
    );
    assert_eq!(server.requests().len(), 3, "two retries");
    // Three tries of 2 s each, not one of 30 s (the harness kills at 20 s).
    assert!(b.took < Duration::from_secs(15), "{:?}", b.took);
}

#[test]
fn a_stream_that_never_ends_is_ended_by_the_deadline() {
    for p in PROVIDERS {
        let body = p.stream_text(&["Forever"], 5, 2);
        let at = body.find("Forever").unwrap();
        let end = if p == P::Ollama { "\n" } else { "\n\n" };
        let after = at + body[at..].find(end).unwrap() + end.len();
        // Ollama sends no comments: blank lines, then.
        let keep_alive = if p == P::Ollama {
            "\n"
        } else {
            ": keep-alive\n\n"
        };
        let server = FakeServer::start(vec![p.stream_steps(vec![
            Step::bytes(&body[..after], 32),
            Step::Forever(keep_alive.into()),
        ])]);
        let home = home_on(p, "");
        let b = run(&home, p, &server, &["--timeout", "2"]);
        assert_eq!(code(&b.output), 3, "{p:?}: {}", stderr(&b.output));
        // At the 2 s deadline, not the fake's minute of keep-alives.
        assert!(b.took < Duration::from_secs(15), "{p:?}: {:?}", b.took);
        assert_eq!(stdout(&b.output), "Forever\n", "{p:?}");
        assert_eq!(
            axe_lines(&b),
            vec![format!("axe: {}: timeout after 2s {PARTIAL}", p.name())],
            "{p:?}"
        );
    }
}

#[test]
fn one_enormous_event_is_refused_not_read_whole() {
    for p in PROVIDERS {
        let huge = "x".repeat(5 << 20);
        let body = match p {
            P::Ollama => format!(
                "{{\"message\":{{\"role\":\"assistant\",\"content\":\"{huge}\"}},\"done\":false}}\n"
            ),
            _ => format!(
                "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{huge}\"}}}}]}}\n\n"
            ),
        };
        let server = FakeServer::start(vec![p.stream_steps(vec![Step::bytes(&body, 64 * 1024)])]);
        let home = home_on(p, "");
        let b = run(&home, p, &server, &[]);
        assert_eq!(code(&b.output), 3, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "", "{p:?}");
        assert_eq!(
            axe_lines(&b),
            vec![format!(
                "axe: {}: invalid response: a stream event larger than 4 MiB",
                p.name()
            )],
            "{p:?}"
        );
    }
}

#[test]
fn an_idle_limit_of_zero_is_a_config_error() {
    let p = P::Ollama;
    let server = FakeServer::start(vec![p.streamed(&p.stream_text(&["unused"], 5, 2))]);
    let home = home_on(p, "[providers.ollama]\nidle_timeout = 0\n");
    let b = run(&home, p, &server, &[]);
    assert_eq!(code(&b.output), 2, "{}", stderr(&b.output));
    assert_eq!(
        axe_lines(&b),
        vec!["axe: providers.ollama.idle_timeout must be at least 1 second".to_string()]
    );
    assert!(server.requests().is_empty());
}

#[test]
fn ctrl_c_during_a_stream_writes_out_the_text_already_received() {
    // 200 KB of text, more than a pipe holds, then a stream that never
    // ends; the test reads stdout, slowly, only once the signal is sent, so
    // most of the text is still queued in axe when it arrives.
    let p = P::OpenAi;
    let text = "x".repeat(200_000);
    let body = p.stream_text(&[&text], 5, 2);
    let at = body.find(&text).unwrap() + text.len();
    let after = at + body[at..].find("\n\n").unwrap() + 2;
    let server = FakeServer::start(vec![p.stream_steps(vec![
        Step::bytes(&body[..after], 65_536),
        Step::Forever(": keep-alive\n\n".into()),
    ])]);
    let home = home_on(p, "");
    let mut child = home
        .axe_on(&[(p, &server)])
        .args(["run", "solo", "--stream", "-p", "hi", "--timeout", "30"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The 200 KB are sent at once when the request comes: counted from
    // then, not from the spawn, a second is ample to take them in however
    // slowly axe started.
    server.wait_for_requests(1);
    std::thread::sleep(Duration::from_millis(1000));
    signal(&child, libc::SIGINT);
    // A slow reader: 8 KiB every 10 ms, 250 ms for the whole text.
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let stdout = child.stdout.as_mut().unwrap();
    loop {
        match std::io::Read::read(stdout, &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let out = String::from_utf8_lossy(&out);
    assert_eq!(out.trim_end().len(), text.len(), "text lost at the signal");
}

#[test]
fn text_that_comes_in_one_read_with_an_error_is_not_printed_and_the_request_is_retried() {
    // The text and the error event in one write: axe hands out a read's
    // text when the read is decoded, so nothing was printed yet.
    let p = P::Anthropic;
    let body = anthropic_error_stream(&["Half an"], "overloaded_error", "Overloaded");
    let server = FakeServer::start(vec![
        p.stream_steps(vec![Step::bytes(&body, body.len())]),
        p.streamed(&p.stream_text(&["Whole."], 5, 2)),
    ]);
    let home = home_on(p, "");
    let b = run(&home, p, &server, &[]);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "Whole.\n");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn an_event_shaped_as_an_array_adds_no_text_on_any_wire() {
    // Each wire's events are JSON objects; one that is an array (whole, or
    // at a place an object belongs) has no fields, and so no text: the
    // same event in the answer sent whole would say nothing.
    for p in PROVIDERS {
        let whole = p.stream_text(&["Real."], 5, 2);
        let (at, odd) = match p {
            P::OpenAi => (
                whole.find("data: [DONE]"),
                "data: [[[[\"Injected \",null,null],null]],null,null]\n\n\
                 data: {\"choices\":[[[\"Injected \",null,null],null]]}\n\n",
            ),
            P::Anthropic => (
                whole.find("event: content_block_stop"),
                "event: content_block_delta\n\
                 data: [\"content_block_delta\",0,[\"text_delta\",\"Injected \"]]\n\n\
                 event: content_block_delta\n\
                 data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":[\"text_delta\",\"Injected \"]}\n\n",
            ),
            P::Ollama => (
                whole.trim_end().rfind('\n').map(|i| i + 1),
                "[[\"Injected \",null],null,null]\n{\"message\":[\"Injected \",null]}\n",
            ),
            P::Responses => unreachable!("runs on PROVIDERS"),
        };
        let at = at.expect("the stream's end");
        let body = format!("{}{odd}{}", &whole[..at], &whole[at..]);
        let server = FakeServer::start(vec![p.streamed(&body)]);
        let home = home_on(p, "");
        let b = run(&home, p, &server, &[]);
        assert_eq!(code(&b.output), 0, "{p:?}: {}", stderr(&b.output));
        assert_eq!(stdout(&b.output), "Real.\n", "{p:?}");
    }
}
