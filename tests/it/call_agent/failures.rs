//! What a failed call answers (design §3.4, §3.6, §3.12): an agent file
//! that does not load, a bad model, a missing key, each provider error,
//! and the deadlines of a call and of its parent (§3.11, D5).

use super::*;

// ---------------------------------------------------------------------------
// Loading and model errors (design §3.4, §3.6).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_agent_not_found() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &call_one(&ctx, &["ghost"], &call("n1", "ghost", "do it")),
        "n1",
        "call_agent error: failed to load agent \"ghost\": agent config not found: ghost",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_invalid_agent_file() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent(
        "bad",
        "model = \"openai/gpt-4o\"\nsystem_prompt = \"no name\"\n",
    );
    s.agent("broken", "name = \"broken\"\nmodel = \n");
    s.agent(
        "deep",
        "name = \"deep\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\n",
    );
    let ctx = s.ctx(0, 3, 30);
    let allowed = ["bad", "broken", "deep"];

    assert_error(
        &call_one(&ctx, &allowed, &call("v1", "bad", "do it")),
        "v1",
        &format!(
            "call_agent error: failed to load agent \"bad\": agent config missing required field: \
             name (in {})",
            s.dir().join("agents/bad.toml").display()
        ),
    );

    let r = call_one(&ctx, &allowed, &call("v2", "broken", "do it"));
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "v2");
    assert!(
        r.content.starts_with(
            "call_agent error: failed to load agent \"broken\": invalid agent config "
        ),
        "{}",
        r.content
    );
    assert!(r.content.contains("broken.toml"), "{}", r.content);

    assert_error(
        &call_one(&ctx, &allowed, &call("v3", "deep", "do it")),
        "v3",
        &format!(
            "call_agent error: failed to load agent \"deep\": sub_agents_config.max_depth cannot \
             exceed 5 (in {})",
            s.dir().join("agents/deep.toml").display()
        ),
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_invalid_model() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("m", "name = \"m\"\nmodel = \"nonsense\"\n");
    s.agent("f", "name = \"f\"\nmodel = \"foo/bar\"\n");
    let ctx = s.ctx(0, 3, 30);

    let r = call_one(&ctx, &["m", "f"], &call("m1", "m", "do it"));
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "m1");
    assert!(
        r.content
            .starts_with("call_agent error: invalid model for agent \"m\": "),
        "{}",
        r.content
    );
    assert!(r.content.contains("\"nonsense\""), "{}", r.content);

    let r = call_one(&ctx, &["m", "f"], &call("m2", "f", "do it"));
    assert!(r.is_error, "{r:?}");
    assert!(
        r.content
            .starts_with("call_agent error: invalid model for agent \"f\": "),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("unsupported provider \"foo\""),
        "{}",
        r.content
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_missing_api_key() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        crate::common::not_tested(
            "call_agent with the sub-agent's key missing",
            "ANTHROPIC_API_KEY is set in the environment the tests run in",
        );
        return;
    }
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("k", "name = \"k\"\nmodel = \"anthropic/claude-x\"\n");
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &call_one(&ctx, &["k"], &call("k1", "k", "do it")),
        "k1",
        "Error: sub-agent \"k\" failed - API key for provider \"anthropic\" is not configured \
         (set ANTHROPIC_API_KEY or add it to config.toml). You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}

// ---------------------------------------------------------------------------
// Provider errors (design §3.6, §3.12).
// ---------------------------------------------------------------------------

/// Runs agent "h" once against a server answering `status` with `body`.
fn api_error(status: u16, body: &str) -> (ToolResult, FakeServer) {
    let server = FakeServer::json(status, body);
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let r = call_one(&ctx, &["h"], &call("e1", "h", "do it"));
    (r, server)
}

#[track_caller]
fn assert_api_error(r: &ToolResult, head: &str, provider_message: &str) {
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "e1");
    assert!(r.content.starts_with(head), "{}", r.content);
    assert!(r.content.ends_with(TAIL), "{}", r.content);
    assert!(r.content.contains(provider_message), "{}", r.content);
    assert!(!r.content.contains(".."), "{}", r.content);
}

#[test]
fn call_agent_api_error() {
    let msg = "The server had an error while processing your request. Sorry about that!";
    let (r, server) = api_error(500, &openai_error(msg, "server_error", Value::Null));
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: server error (HTTP 500)",
        msg,
    );
    // The HTTP request is retried twice inside the provider call (design D12);
    // the failed sub-agent itself is not run again (§3.12).
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn call_agent_api_auth_error() {
    let msg = "Incorrect API key provided: sk-wrong. You can find your API key at \
               https://platform.openai.com/account/api-keys";
    let (r, server) = api_error(
        401,
        &openai_error(
            &format!("{msg}."),
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
    );
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: authentication failed (HTTP 401)",
        msg,
    );
    // A 401 is never retried (design D12).
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn call_agent_api_rate_limited() {
    let msg = "Rate limit reached for gpt-4o in organization org-123 on requests per min (RPM): \
               Limit 3, Used 3, Requested 1. Please try again in 20s";
    let (r, server) = api_error(
        429,
        &openai_error(&format!("{msg}."), "requests", json!("rate_limit_exceeded")),
    );
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: rate limited (HTTP 429)",
        msg,
    );
    // Two transport retries (design D12), then the error; no sub-agent retry.
    assert_eq!(server.requests().len(), 3);
}

// ---------------------------------------------------------------------------
// Timeouts (design §3.11, D5).
// ---------------------------------------------------------------------------

/// Runs agent "slow" against a server that never answers, with the caller's
/// own `timeout_secs` and a context deadline `deadline_secs` away whose
/// message says `ctx_secs`. Returns the result and how long it took.
fn hang(timeout_secs: u64, deadline_secs: u64, ctx_secs: u64) -> (ToolResult, Duration) {
    let server = FakeServer::start(vec![Reply::Hang]);
    let s = Setup::openai(&server);
    s.agent("slow", &openai_agent("slow", "Slow."));
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now() + Duration::from_secs(deadline_secs),
            secs: ctx_secs,
        },
        ..s.ctx(0, 3, deadline_secs)
    };
    let started = Instant::now();
    let r = call_one_timed(&ctx, &["slow"], timeout_secs, &call("t1", "slow", "do it"));
    let took = started.elapsed();
    assert_eq!(server.requests_settled(1).len(), 1, "the request was sent");
    (r, took)
}

const TIMEOUT_1S: &str = "Error: sub-agent \"slow\" failed - timeout after 1s. You may retry or proceed without this result.";

#[test]
fn call_agent_timeout() {
    let (r, took) = hang(1, 30, 30);
    assert_error(&r, "t1", TIMEOUT_1S);
    // A bound that proves the own timeout applied, not a speed claim.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_timeout_inherits_the_parent_deadline() {
    let (r, took) = hang(0, 1, 1);
    assert_error(&r, "t1", TIMEOUT_1S);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_timeout_earlier_parent_deadline_wins() {
    let (r, took) = hang(20, 1, 1);
    assert_error(&r, "t1", TIMEOUT_1S);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_parent_deadline_already_passed() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("late", &openai_agent("late", "Late."));
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now(),
            secs: 7,
        },
        ..s.ctx(0, 3, 7)
    };
    let started = Instant::now();
    let r = call_one_timed(&ctx, &["late"], 0, &call("t2", "late", "do it"));
    assert_error(
        &r,
        "t2",
        "Error: sub-agent \"late\" failed - timeout after 7s. You may retry or proceed without this result.",
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_no_request(&server);
    // An own timeout does not extend a passed deadline (design D5).
    let r = call_one_timed(&ctx, &["late"], 30, &call("t3", "late", "do it"));
    assert_error(
        &r,
        "t3",
        "Error: sub-agent \"late\" failed - timeout after 7s. You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_deadline_passing_while_files_are_read_is_a_timeout() {
    // A `**` glob over a tree stops at the deadline, with D5's exact text,
    // and nothing is sent.
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    for i in 0..20 {
        let dir = s.dir().join(format!("tree/d{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.txt"), "x").unwrap();
    }
    s.agent(
        "reader",
        &format!(
            "{}files = [\"tree/**/*\"]\n",
            openai_agent("reader", "Reader.")
        ),
    );
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now(),
            secs: 4,
        },
        ..s.ctx(0, 3, 4)
    };
    let r = call_one_timed(&ctx, &["reader"], 0, &call("t4", "reader", "read"));
    assert_error(
        &r,
        "t4",
        "Error: sub-agent \"reader\" failed - timeout after 4s. You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}
