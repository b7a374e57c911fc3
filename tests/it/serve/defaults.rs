//! `axe serve` as clients use it on their defaults (design §12.2, issue
//! 40): one run per request whatever the client retries, a stream's status
//! the run's, system messages taken after the agent's prompt, client tools
//! refused out loud, a model retrieved by id, a path without `/v1` and an
//! agent not served each said, and a request's `max_completion_tokens`
//! bounding the tokens the tree generates.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Raw, Server, chat_body, client, post, python, raw};
use crate::common::*;

/// A home with agents `helper` (plain) and `lead` (delegates to helper).
fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

/// The value of header `name` in an answer's head, if it has one.
fn header(r: &Raw, name: &str) -> Option<String> {
    r.head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

fn json_body(r: &Raw) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", r.body))
}

fn get(addr: &str, path: &str) -> Raw {
    let req = format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
    raw(addr, req.as_bytes())
}

#[test]
fn a_failing_agent_runs_once_whatever_the_openai_client_retries() {
    let Some(py) = python() else { return };
    let home = home();
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let server = Server::start(&home, &failing, &["--retries", "0"]);
    // The client on its defaults: two retries of a 5xx.
    let r = client(&py, &server, "any", "complete_retrying", "helper");
    assert_eq!(r["status"], 424, "{r}");
    assert_eq!(r["body"]["code"], "upstream_error", "{r}");
    assert_eq!(
        failing.requests().len(),
        1,
        "one run reached the provider, not one per retry: {}",
        server.log()
    );
}

#[test]
fn failures_a_retry_would_repeat_say_so_and_busy_does_not() {
    let home = home();
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom"}}"#);
    let server = Server::start(&home, &failing, &["--retries", "0"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    assert_eq!(r.status, 424, "{}", r.body);
    assert_eq!(
        header(&r, "x-should-retry").as_deref(),
        Some("false"),
        "{}",
        r.head
    );
    assert!(header(&r, "x-request-id").is_some(), "{}", r.head);
    // A bad request, an unknown agent: the same.
    let r = post(&server.addr, "/v1/chat/completions", "{\"model\":", "");
    assert_eq!(r.status, 400);
    assert_eq!(
        header(&r, "x-should-retry").as_deref(),
        Some("false"),
        "{}",
        r.head
    );
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("nobody", "hi"),
        "",
    );
    assert_eq!(r.status, 404);
    assert_eq!(
        header(&r, "x-should-retry").as_deref(),
        Some("false"),
        "{}",
        r.head
    );
    // The deadline: 424, not retried.
    let hang = FakeServer::start(vec![Reply::Hang, Reply::Hang]);
    let server = Server::start(&home, &hang, &["--timeout", "1", "--max-concurrent", "1"]);
    let addr = server.addr.clone();
    let first = std::thread::spawn(move || {
        post(
            &addr,
            "/v1/chat/completions",
            &chat_body("helper", "hi"),
            "",
        )
    });
    hang.wait_for_requests(1);
    // Busy meanwhile: 429, Retry-After, and a retry is right.
    let busy = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    assert_eq!(busy.status, 429, "{}", busy.body);
    assert_eq!(header(&busy, "retry-after").as_deref(), Some("1"));
    assert_eq!(header(&busy, "x-should-retry"), None, "{}", busy.head);
    let r = first.join().unwrap();
    assert_eq!(r.status, 424, "{}", r.body);
    assert_eq!(json_body(&r)["error"]["code"], "timeout", "{}", r.body);
    assert_eq!(
        header(&r, "x-should-retry").as_deref(),
        Some("false"),
        "{}",
        r.head
    );
}

/// A streamed request for `agent`.
fn stream_body(agent: &str) -> String {
    json!({"model": agent, "stream": true, "messages": [{"role": "user", "content": "hi"}]})
        .to_string()
}

#[test]
fn a_stream_that_fails_before_any_text_gets_the_runs_status_and_a_json_error() {
    let home = home();
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom"}}"#);
    let server = Server::start(&home, &failing, &["--retries", "0"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &stream_body("helper"),
        "",
    );
    assert_eq!(r.status, 424, "{}\n{}", r.head, r.body);
    assert!(r.head.contains("application/json"), "{}", r.head);
    let body = json_body(&r);
    assert_eq!(body["error"]["code"], "upstream_error", "{body}");
    assert_eq!(header(&r, "x-should-retry").as_deref(), Some("false"));
    // The access log says what failed, which 424 alone does not.
    assert!(
        server.wait_log("status=424", Duration::from_secs(10)),
        "{}",
        server.log()
    );
    let log = server.log();
    let line = log.lines().find(|l| l.contains("status=424")).unwrap();
    assert!(line.ends_with(" error=upstream_error"), "{line}");
    // A budget spent before any text: 400.
    let big = FakeServer::json(
        200,
        &openai_tool_calls(&[("c1", "call_agent", delegate("helper", "go"))], 50, 50),
    );
    let server = Server::start(&home, &big, &[]);
    let body = json!({"model": "lead", "stream": true, "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 400, "{}\n{}", r.head, r.body);
    assert_eq!(json_body(&r)["error"]["code"], "budget_exceeded");
}

#[test]
fn a_stream_that_fails_after_its_text_ends_with_an_error_event() {
    let home = home();
    let first = sse(&[(
        None,
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}]}),
    )]);
    let fake = FakeServer::start(vec![
        P::OpenAi.stream_steps(vec![Step::bytes(&first, 1024), Step::Cut]),
    ]);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &stream_body("helper"),
        "",
    );
    assert_eq!(r.status, 200, "{}", r.head);
    assert!(r.body.contains("\"Hel\""), "{}", r.body);
    assert!(r.body.contains("data: {\"error\""), "{}", r.body);
    assert!(!r.body.contains("[DONE]"), "{}", r.body);
}

#[test]
fn system_messages_are_taken_after_the_agents_own_prompt() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let body = json!({"model": "helper", "messages": [
        {"role": "system", "content": "Answer in French."},
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "hi"}]});
    let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let system = fake.only_request().system_prompt();
    let agent = system.find("You are helper.").expect("the agent's prompt");
    let client = system
        .find("come from the client")
        .expect("the client's line");
    let french = system.find("Answer in French.\n\nBe brief.").expect("both");
    assert!(agent == 0 && agent < client && client < french, "{system}");
    // A server that must not take them.
    let strict = Server::start(&home, &fake, &["--system-messages", "refuse"]);
    let r = post(&strict.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("--system-messages refuse"), "{}", r.body);
    assert_eq!(fake.requests().len(), 1, "nothing ran");
    // `append` is the default said out loud, and the old bare switch (it
    // opted in) still means it; anything else is an error.
    for args in [
        &["--system-messages", "append"][..],
        &["--system-messages"],
        &["--system-messages", "-q"],
    ] {
        let taking = Server::start(&home, &fake, args);
        let r = post(&taking.addr, "/v1/chat/completions", &body.to_string(), "");
        assert_eq!(r.status, 200, "{args:?}: {}", r.body);
    }
    let out = home
        .axe()
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--system-messages",
            "yes",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("append or refuse"));
}

#[test]
fn client_tools_are_refused_out_loud_unless_ignored() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let tool = json!({"type": "function", "function": {"name": "client_fn", "parameters": {"type": "object"}}});
    let with = |extra: Value| {
        let mut b = json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b.to_string()
    };
    for (extra, param) in [
        (json!({"tools": [tool]}), "tools"),
        (json!({"functions": [{"name": "client_fn"}]}), "functions"),
        (json!({"tool_choice": "required"}), "tool_choice"),
        (
            json!({"tool_choice": {"type": "function", "function": {"name": "client_fn"}}}),
            "tool_choice",
        ),
    ] {
        let r = post(
            &server.addr,
            "/v1/chat/completions",
            &with(extra.clone()),
            "",
        );
        assert_eq!(r.status, 400, "{extra}: {}", r.body);
        let e = json_body(&r);
        assert_eq!(e["error"]["param"], param, "{e}");
        let msg = e["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("their own tools") && msg.contains("--ignore-client-tools"),
            "{msg}"
        );
    }
    assert!(fake.requests().is_empty(), "nothing ran");
    // No tools, or a choice that requires none, is taken.
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &with(json!({"tools": [], "tool_choice": "auto"})),
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let lenient = Server::start(&home, &fake, &["--ignore-client-tools"]);
    let r = post(
        &lenient.addr,
        "/v1/chat/completions",
        &with(json!({"tools": [tool]})),
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = fake.requests().last().unwrap().json();
    assert!(
        !sent.to_string().contains("client_fn"),
        "the client's tools went nowhere: {sent}"
    );
}

#[test]
fn a_model_is_retrieved_by_its_id() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = get(&server.addr, "/v1/models/helper");
    assert_eq!(r.status, 200, "{}", r.body);
    let m = json_body(&r);
    assert_eq!(m["id"], "helper");
    assert_eq!(m["object"], "model");
    assert_eq!(m["owned_by"], "axe");
    assert!(m["created"].is_u64(), "{m}");
    let r = get(&server.addr, "/v1/models/nobody");
    assert_eq!(r.status, 404, "{}", r.body);
    let e = json_body(&r);
    assert_eq!(e["error"]["code"], "model_not_found", "{e}");
    assert_eq!(e["error"]["type"], "invalid_request_error", "{e}");
    // One left out by --agent is said to be not served.
    let only = Server::start(&home, &fake, &["--agent", "lead"]);
    let r = get(&only.addr, "/v1/models/helper");
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("not served"), "{}", r.body);
}

#[test]
fn an_agent_that_exists_but_is_not_served_says_so() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &["--agent", "lead"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    assert_eq!(r.status, 404, "{}", r.body);
    let e = json_body(&r);
    assert_eq!(e["error"]["code"], "model_not_found");
    let msg = e["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("not served") && msg.contains("--agent"),
        "{msg}"
    );
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("nobody", "hi"),
        "",
    );
    assert!(r.body.contains("does not exist"), "{}", r.body);
}

#[test]
fn a_path_without_v1_names_the_right_one() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("ok", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    for (path, right) in [
        ("/chat/completions", "/v1/chat/completions"),
        ("/models", "/v1/models"),
        ("/responses", "/v1/responses"),
    ] {
        let r = post(&server.addr, path, &chat_body("helper", "hi"), "");
        assert_eq!(r.status, 404, "{}", r.body);
        let msg = json_body(&r)["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(msg.contains(right), "{path}: {msg}");
    }
    let r = post(&server.addr, "/v2/nothing", "{}", "");
    assert!(!r.body.contains("/v1"), "{}", r.body);
}

#[test]
fn max_completion_tokens_bounds_what_the_tree_generates() {
    let home = home();
    // lead calls helper (30 in, 5 out), helper answers (30 in, 5 out),
    // lead answers (40 in, 5 out): 100 read, 15 generated.
    let fake = FakeServer::route(|r| {
        let body = match (r.who().as_str(), r.has_tool_results()) {
            ("lead", false) => {
                openai_tool_calls(&[("c1", "call_agent", delegate("helper", "say hi"))], 30, 5)
            }
            ("lead", true) => openai_text("The helper said hi.", 40, 5),
            _ => openai_text("hi", 30, 5),
        };
        Reply::Json(200, body)
    });
    let server = Server::start(&home, &fake, &[]);
    let body = json!({"model": "lead", "max_completion_tokens": 20,
        "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let c = json_body(&r);
    assert_eq!(c["choices"][0]["message"]["content"], "The helper said hi.");
    assert_eq!(c["usage"]["prompt_tokens"], 100, "{c}");
    // The top-level agent's answer is cut at the bound, as OpenAI's is.
    let lead = fake
        .requests()
        .into_iter()
        .find(|r| r.who() == "lead")
        .unwrap()
        .json();
    let sent = lead["max_completion_tokens"]
        .as_u64()
        .or_else(|| lead["max_tokens"].as_u64());
    assert_eq!(sent, Some(20), "{lead}");
    // The tree's output reaching the bound stops it: 10 generated before
    // lead's last turn, of at most 10.
    let body = json!({"model": "lead", "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 400, "{}", r.body);
    let e = json_body(&r);
    assert_eq!(e["error"]["code"], "budget_exceeded", "{e}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("output token budget exceeded"),
        "{e}"
    );
}
