//! Transport retries (design D12): which failures one provider call
//! retries, how long it waits (backoff, `Retry-After`, `x-should-retry`),
//! that no wait passes the deadline, and the settings that govern it
//! (`[retry]` in config.toml and agent files, `--retries`), with their
//! `--verbose` and `--json` reports. Real loopback servers throughout.

use crate::common::*;

use std::time::{Duration, Instant};

use axe::provider::{ErrorKind, Message, Provider, Request, RetryPolicy, Wire, http_date};

/// Fast retries: the default count, millisecond waits.
fn quick() -> RetryPolicy {
    RetryPolicy {
        max_retries: 2,
        initial_delay: Duration::from_millis(1),
        max_delay: Duration::from_millis(5),
        ..RetryPolicy::default()
    }
}

fn provider(kind: Wire, server: &FakeServer, retry: RetryPolicy) -> Provider {
    let mut p = Provider::new(kind, &server.url, Some(OPENAI_KEY.into()));
    p.retry = retry;
    p
}

fn hello() -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::user("hi")],
        ..Request::default()
    }
}

fn ok_body(kind: Wire) -> String {
    match kind {
        Wire::Anthropic => anthropic_text("fine", 1, 1),
        Wire::OpenAi => openai_text("fine", 1, 1),
        Wire::Ollama => ollama_text("fine", 1, 1),
        Wire::Bedrock => bedrock_text("fine", 1, 1),
        Wire::Responses => responses_text("fine", 1, 1),
    }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

fn status(code: u16, headers: &[(&str, &str)]) -> Reply {
    Reply::Raw {
        status: code,
        content_type: "application/json".into(),
        body: r#"{"error":{"message":"try later","type":"server_error"}}"#.into(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

// ---------------------------------------------------------------------------
// What is retried.
// ---------------------------------------------------------------------------

#[test]
fn retry_429_then_success_answers_after_one_retry_on_every_provider() {
    for kind in Wire::ALL {
        let server = FakeServer::start(vec![status(429, &[]), Reply::Json(200, ok_body(kind))]);
        let resp = provider(kind, &server, quick())
            .send(&hello(), soon())
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(resp.content, "fine", "{kind:?}");
        assert_eq!(resp.retries, 1, "{kind:?}");
        assert_eq!(server.requests().len(), 2, "{kind:?}");
    }
}

#[test]
fn retry_429_three_times_gives_the_last_error_after_two_retries() {
    for kind in Wire::ALL {
        let server = FakeServer::start(vec![status(429, &[])]);
        let err = provider(kind, &server, quick())
            .send(&hello(), soon())
            .unwrap_err();
        assert_eq!(err.kind, ErrorKind::RateLimit, "{kind:?}");
        assert_eq!(err.status, Some(429));
        assert_eq!(err.retries, 2);
        assert_eq!(server.requests().len(), 3, "{kind:?}");
    }
}

#[test]
fn retry_500_502_503_504_and_529_are_retried() {
    for code in [500, 502, 503, 504, 529] {
        let server = FakeServer::start(vec![
            status(code, &[]),
            Reply::Json(200, ok_body(Wire::Anthropic)),
        ]);
        let resp = provider(Wire::Anthropic, &server, quick())
            .send(&hello(), soon())
            .unwrap_or_else(|e| panic!("{code}: {e}"));
        assert_eq!(resp.retries, 1, "{code}");
    }
}

#[test]
fn retry_never_for_400_401_403_404_422() {
    for code in [400, 401, 403, 404, 422] {
        let server = FakeServer::start(vec![status(code, &[])]);
        let err = provider(Wire::OpenAi, &server, quick())
            .send(&hello(), soon())
            .unwrap_err();
        assert_eq!(err.retries, 0, "{code}");
        assert_eq!(server.requests().len(), 1, "{code}");
    }
}

#[test]
fn retry_anthropic_x_should_retry_overrides_the_status() {
    // false: a 500 is not retried.
    let server = FakeServer::start(vec![status(500, &[("x-should-retry", "false")])]);
    let err = provider(Wire::Anthropic, &server, quick())
        .send(&hello(), soon())
        .unwrap_err();
    assert_eq!(server.requests().len(), 1, "{err}");
    // true: a 409 is.
    let server = FakeServer::start(vec![
        status(409, &[("x-should-retry", "true")]),
        Reply::Json(200, ok_body(Wire::Anthropic)),
    ]);
    let resp = provider(Wire::Anthropic, &server, quick())
        .send(&hello(), soon())
        .unwrap();
    assert_eq!(resp.retries, 1);
}

#[test]
fn retry_refused_connection_is_retried_then_reported() {
    // A port nothing listens on.
    let url = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let mut p = Provider::new(Wire::Ollama, url, None);
    p.retry = quick();
    let err = p.send(&hello(), soon()).unwrap_err();
    assert_eq!(err.kind, ErrorKind::Network);
    assert_eq!(err.retries, 2);
    assert!(err.message.contains("is Ollama running?"), "{err}");
}

#[test]
fn retry_never_after_a_deadline_timeout() {
    let server = FakeServer::start(vec![Reply::Hang]);
    let started = Instant::now();
    let err = provider(Wire::OpenAi, &server, quick())
        .send(&hello(), Instant::now() + Duration::from_secs(1))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Timeout);
    assert_eq!(server.requests_settled(1).len(), 1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

// ---------------------------------------------------------------------------
// How long it waits.
// ---------------------------------------------------------------------------

#[test]
fn retry_after_seconds_is_honoured() {
    let server = FakeServer::start(vec![
        status(503, &[("retry-after", "1")]),
        Reply::Json(200, ok_body(Wire::OpenAi)),
    ]);
    let started = Instant::now();
    let resp = provider(Wire::OpenAi, &server, quick())
        .send(&hello(), soon())
        .unwrap();
    assert_eq!(resp.retries, 1);
    // The policy alone would wait at most 5 ms; the server asked for 1 s.
    assert!(started.elapsed() >= Duration::from_millis(950));
}

#[test]
fn retry_after_past_the_deadline_gives_up_at_once_with_the_last_error() {
    let server = FakeServer::start(vec![status(429, &[("retry-after", "600")])]);
    let started = Instant::now();
    let err = provider(Wire::OpenAi, &server, quick())
        .send(&hello(), Instant::now() + Duration::from_secs(30))
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::RateLimit);
    assert_eq!(err.retries, 0);
    assert_eq!(server.requests().len(), 1);
    // Not a sleep until the deadline (30 s): one request's time, with room
    // for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "no sleep started"
    );
}

#[test]
fn retry_http_dates_are_parsed() {
    let t = http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
    assert_eq!(
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
        784_111_777
    );
    let t = http_date("Mon, 23 Nov 2026 00:00:00 GMT").unwrap();
    assert_eq!(
        t.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(),
        1_795_392_000
    );
    // The obsolete forms RFC 9110 tells a recipient to accept.
    let imf = http_date("Sun, 06 Nov 1994 08:49:37 GMT");
    assert_eq!(http_date("Sunday, 06-Nov-94 08:49:37 GMT"), imf);
    assert_eq!(http_date("Sun Nov  6 08:49:37 1994"), imf);
    assert!(http_date("soon").is_none());
}

#[test]
fn retry_backoff_is_full_jitter_under_a_doubling_cap() {
    let p = RetryPolicy::default();
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..200 {
        let d = p.backoff(0);
        assert!(d <= Duration::from_millis(500), "{d:?}");
        seen.insert(d);
    }
    assert!(seen.len() > 150, "jitter: {} distinct of 200", seen.len());
    for _ in 0..50 {
        assert!(p.backoff(1) <= Duration::from_secs(1));
        assert!(p.backoff(40) <= Duration::from_secs(30));
    }
    assert_eq!(RetryPolicy::NONE.backoff(3), Duration::ZERO);
}

// ---------------------------------------------------------------------------
// Settings and reports, through the binary.
// ---------------------------------------------------------------------------

/// An agent on OpenAI at `server`, with `config` as config.toml.
fn run_with(
    server: &FakeServer,
    config: &str,
    agent_extra: &str,
    args: &[&str],
) -> std::process::Output {
    let home = Home::new();
    home.config(config);
    home.agent(
        "a",
        &format!("name = \"a\"\nmodel = \"openai/gpt-4o\"\n{agent_extra}"),
    );
    let mut c = home.axe_on(&[(P::OpenAi, server)]);
    c.args(["run", "a", "-p", "hi"]).args(args);
    c.output().expect("run axe")
}

#[test]
fn run_retries_twice_by_default_and_reports_each_retry_under_verbose() {
    let server = FakeServer::start(vec![
        status(429, &[]),
        status(503, &[]),
        Reply::Json(200, openai_text("at last", 1, 1)),
    ]);
    let out = run_with(&server, FAST_RETRIES, "", &["--verbose", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["content"], "at last");
    assert_eq!(v["retry_attempts"], 2);
    let err = stderr(&out);
    let retries: Vec<&str> = err.lines().filter(|l| l.starts_with("[retry]")).collect();
    assert_eq!(retries.len(), 2, "{err}");
    assert!(
        retries[0].starts_with("[retry] openai 429, attempt 2/3 in "),
        "{err}"
    );
    assert!(
        retries[1].starts_with("[retry] openai 503, attempt 3/3 in "),
        "{err}"
    );
    assert!(retries[1].ends_with('s'), "{err}");
}

#[test]
fn run_retry_settings_agent_over_config_and_flag_over_both() {
    let failing = || FakeServer::start(vec![status(500, &[])]);
    // config.toml: 1 retry.
    let s = failing();
    let out = run_with(&s, &format!("{FAST_RETRIES}max_retries = 1\n"), "", &[]);
    assert_eq!(code(&out), 3);
    assert_eq!(s.requests().len(), 2);
    // The agent's [retry] wins over config.toml.
    let s = failing();
    let out = run_with(
        &s,
        &format!("{FAST_RETRIES}max_retries = 1\n"),
        "[retry]\nmax_retries = 0\n",
        &[],
    );
    assert_eq!(code(&out), 3);
    assert_eq!(s.requests().len(), 1);
    // --retries wins over both.
    let s = failing();
    let out = run_with(
        &s,
        &format!("{FAST_RETRIES}max_retries = 1\n"),
        "[retry]\nmax_retries = 0\n",
        &["--retries", "3"],
    );
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(s.requests().len(), 4);
    assert_eq!(
        stderr(&out),
        "axe: openai: server error (HTTP 500): try later\n"
    );
}

#[test]
fn run_unknown_retry_key_is_warned_about() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let out = run_with(&server, "[retry]\nmax_retry = 1\n", "", &[]);
    assert_eq!(code(&out), 0);
    assert!(
        stderr(&out).contains("\"retry.max_retry\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn run_sub_agent_recovers_from_a_429_by_retrying() {
    let home = Home::new();
    home.config(FAST_RETRIES);
    home.agent(
        "lead",
        "name = \"lead\"\nmodel = \"anthropic/claude-sonnet-4-5\"\nsub_agents = [\"h\"]\n",
    );
    home.agent("h", "name = \"h\"\nmodel = \"openai/gpt-4o\"\n");
    let lead = FakeServer::start(vec![
        Reply::Json(
            200,
            anthropic_tool_use("", &[("t1", "call_agent", delegate("h", "go"))], 1, 1),
        ),
        Reply::Json(200, anthropic_text("lead done", 1, 1)),
    ]);
    let helper = FakeServer::start(vec![
        status(429, &[]),
        Reply::Json(200, openai_text("helper done", 1, 1)),
    ]);
    let out = home.run_on(
        &[(P::Anthropic, &lead), (P::OpenAi, &helper)],
        &["run", "lead"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead done\n");
    assert_eq!(helper.requests().len(), 2);
    let second = &lead.requests()[1];
    assert!(second.body.contains("helper done"), "{}", second.body);
}
