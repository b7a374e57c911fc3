//! The official `openai` Python client against `axe serve` (design
//! §12.2): the agents as models, a plain, a streamed and a schema'd
//! completion, the usage of a whole tree, an unknown agent, a bad token,
//! a stream the client closes, and each failure's status.

use std::time::Duration;

use serde_json::json;

use super::{Server, chat_body, client, post, python};
use crate::common::*;

/// A key the client sends where no token is needed.
const ANY: &str = "unused-by-a-loopback-server";

/// A home with agents `helper` (plain) and `lead` (delegates to helper).
fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

#[test]
fn the_openai_client_lists_the_agents_as_models() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "models", "");
    assert_eq!(r["ids"], json!(["helper", "lead"]), "{r}");
    let only = Server::start(&home, &fake, &["--agent", "lead"]);
    let r = client(&py, &only, ANY, "models", "");
    assert_eq!(r["ids"], json!(["lead"]), "{r}");
    // An agent not on the list is not served, though its file is there.
    let r = client(&py, &only, ANY, "complete", "helper");
    assert_eq!(r["status"], 404, "{r}");
}

#[test]
fn a_plain_completion_is_the_agents_answer_with_its_usage_and_run_id() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "complete", "helper");
    assert_eq!(r["content"], "Hello there.", "{r}");
    assert_eq!(r["model"], "helper");
    assert_eq!(r["finish"], "stop");
    assert_eq!(r["usage"]["prompt_tokens"], 7);
    assert_eq!(r["usage"]["completion_tokens"], 3);
    assert_eq!(r["usage"]["total_tokens"], 10);
    let sent = fake.only_request();
    assert_eq!(sent.first_user_text(), "Say hello.");
    assert_eq!(sent.who(), "helper");
    // The completion's id is the run's: in the access log and the run log.
    let run_id = r["id"]
        .as_str()
        .unwrap()
        .strip_prefix("chatcmpl-")
        .unwrap()
        .to_string();
    assert!(server.wait_log(&format!("id={run_id}"), Duration::from_secs(30)));
    let line = server
        .access_lines()
        .into_iter()
        .find(|l| l.contains(&run_id))
        .unwrap();
    assert!(
        line.starts_with("axe: serve: POST /v1/chat/completions agent=helper status=200 ms=")
            && line.contains(" tokens=10 "),
        "{line}"
    );
    let records = home.run_log();
    assert!(
        records.iter().any(|rec| rec["run_id"] == run_id.as_str()
            && rec["agent"] == "helper"
            && rec["exit"] == 0),
        "{records:?}"
    );
    assert!(!server.log().contains(OPENAI_KEY), "the key never shows");
}

#[test]
fn the_usage_is_the_whole_trees() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::route(|r| {
        let body = match (r.who().as_str(), r.has_tool_results()) {
            ("lead", false) => {
                openai_tool_calls(&[("c1", "call_agent", delegate("helper", "say hi"))], 10, 5)
            }
            ("lead", true) => openai_text("The helper said hi.", 20, 6),
            _ => openai_text("hi", 3, 1),
        };
        Reply::Json(200, body)
    });
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "complete", "lead");
    assert_eq!(r["content"], "The helper said hi.", "{r}");
    assert_eq!(r["usage"]["prompt_tokens"], 33, "{r}");
    assert_eq!(r["usage"]["completion_tokens"], 12, "{r}");
}

#[test]
fn a_streamed_completion_comes_in_chunks_and_ends() {
    let Some(py) = python() else { return };
    let home = home();
    // The provider's tokens a moment apart, so that they are read (and
    // sent on) in more than one piece (design §4.11's pacing).
    let body = P::OpenAi.stream_text(&["Hel", "lo", " you"], 5, 2);
    let cut = body.find("lo\"").unwrap();
    let cut = body[..cut].rfind("data: ").unwrap();
    let fake = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&body[..cut], 4096),
        Step::Sleep(std::time::Duration::from_millis(100)),
        Step::bytes(&body[cut..], 4096),
    ])]);
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "stream", "helper");
    let pieces: Vec<&str> = r["pieces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(pieces.concat(), "Hello you", "{r}");
    assert!(pieces.len() >= 2, "streamed in pieces: {r}");
    assert_eq!(r["finish"], "stop");
    assert_eq!(r["usage"]["total_tokens"], 7, "{r}");
    assert!(
        fake.only_request().json()["stream"] == true,
        "the provider was asked to stream"
    );
}

#[test]
fn a_response_format_schema_is_the_agents_output_schema() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("{\"n\": 3}", 4, 2));
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "schema", "helper");
    let content: serde_json::Value = serde_json::from_str(r["content"].as_str().unwrap()).unwrap();
    assert_eq!(content, json!({"n": 3}), "{r}");
    let sent = fake.only_request().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["n"]),
        "the schema went to the provider: {sent}"
    );
}

#[test]
fn an_unknown_agent_is_a_404_not_found() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let r = client(&py, &server, ANY, "complete", "nobody");
    assert_eq!(r["error"], "NotFoundError", "{r}");
    assert_eq!(r["status"], 404);
    assert_eq!(r["body"]["code"], "model_not_found");
    assert!(fake.requests().is_empty());
}

#[test]
fn a_bad_token_is_a_401_and_the_token_never_shows() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello.", 1, 1));
    let token = "serve-token-0123456789abcdef";
    let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
    cmd.env("AXE_SERVE_TOKEN", token);
    let server = Server::start_with(cmd, &[]);
    let r = client(
        &py,
        &server,
        "serve-token-0123456789abcdeX",
        "complete",
        "helper",
    );
    assert_eq!(r["error"], "AuthenticationError", "{r}");
    assert_eq!(r["status"], 401);
    let r = client(&py, &server, "serve-token-0123456789abcdeX", "models", "");
    assert_eq!(r["status"], 401, "{r}");
    assert!(fake.requests().is_empty(), "nothing ran");
    let r = client(&py, &server, token, "complete", "helper");
    assert_eq!(r["content"], "Hello.", "{r}");
    assert!(!server.log().contains(token));
}

#[test]
fn a_stream_the_client_closes_stops_its_run() {
    let Some(py) = python() else { return };
    let home = home();
    // One piece of text, then keep-alives for as long as anyone listens.
    let first = sse(&[(
        None,
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}]}),
    )]);
    let fake = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&first, 1024),
        Step::Forever(": keep-alive\n\n".into()),
    ])]);
    let server = Server::start(&home, &fake, &["--timeout", "60"]);
    let r = client(&py, &server, ANY, "cancel", "helper");
    assert_eq!(r["closed"], true, "{r}");
    // The run ends (its provider stream given up) long before its minute.
    assert!(
        server.wait_log("status=499", Duration::from_secs(30)),
        "the run went on after its client left: {}",
        server.log()
    );
}

#[test]
fn failures_get_their_status_in_openais_error_shape() {
    let home = home();
    // A provider that fails: 424, no 5xx a client would retry.
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let server = Server::start(&home, &failing, &["--retries", "0"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    assert_eq!(r.status, 424, "{}", r.body);
    let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["error"]["code"], "upstream_error");
    assert!(body["error"]["message"].as_str().unwrap().contains("boom"));
    assert!(!r.body.contains(OPENAI_KEY));
    // The deadline: 424 too, its code saying which.
    let hang = FakeServer::start(vec![Reply::Hang]);
    let server = Server::start(&home, &hang, &["--timeout", "1"]);
    let r = post(
        &server.addr,
        "/v1/chat/completions",
        &chat_body("helper", "hi"),
        "",
    );
    assert_eq!(r.status, 424, "{}", r.body);
    let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["error"]["code"], "timeout", "{body}");
    // A budget spent: 400, which OpenAI's clients do not retry.
    let big = FakeServer::json(
        200,
        &openai_tool_calls(&[("c1", "call_agent", delegate("helper", "go"))], 50, 50),
    );
    let server = Server::start(&home, &big, &[]);
    let body =
        json!({"model": "lead", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]});
    let r = post(&server.addr, "/v1/chat/completions", &body.to_string(), "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("budget_exceeded"), "{}", r.body);
    // Bad JSON: 400; an unknown route: 404; health: 200.
    let r = post(&server.addr, "/v1/chat/completions", "{\"model\":", "");
    assert_eq!(r.status, 400, "{}", r.body);
    let r = post(&server.addr, "/v2/nothing", "{}", "");
    assert_eq!(r.status, 404);
    let r = super::raw(
        &server.addr,
        b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 200);
}

#[test]
fn sigterm_lets_running_requests_finish_then_the_server_exits() {
    let home = home();
    let slow = FakeServer::start(vec![Reply::Delay(
        Duration::from_millis(1500),
        Box::new(Reply::Json(200, openai_text("Done slowly.", 2, 2))),
    )]);
    let mut server = Server::start(&home, &slow, &["--grace", "20"]);
    let addr = server.addr.clone();
    let running = std::thread::spawn(move || {
        post(
            &addr,
            "/v1/chat/completions",
            &chat_body("helper", "hi"),
            "",
        )
    });
    // The request is under way at the provider before the signal.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while slow.requests().is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    server.signal(libc::SIGTERM);
    assert!(
        server.wait_log("stopping", Duration::from_secs(30)),
        "{}",
        server.log()
    );
    let r = running.join().unwrap();
    assert_eq!(r.status, 200, "the running request finished: {}", r.body);
    assert!(r.body.contains("Done slowly."));
    let status = server
        .wait_exit(Duration::from_secs(30))
        .expect("the server exits");
    assert_eq!(status.code(), Some(0), "{}", server.log());
    assert!(
        std::net::TcpStream::connect(&server.addr).is_err(),
        "no longer listening"
    );
}

#[test]
fn a_client_that_hangs_up_before_a_whole_answer_stops_its_run_too() {
    hang_up_stops_the_run(false);
}

#[test]
fn a_hang_up_is_seen_on_a_descriptor_an_earlier_connection_left() {
    // The second connection takes the descriptor number the first one
    // closed: its socket is found among the numbers seen before (design
    // §12.3), and its hang-up still stops its run.
    hang_up_stops_the_run(true);
}

/// A client hangs up while its run waits on the provider; with `after_one`,
/// after one request on a connection of its own was answered.
fn hang_up_stops_the_run(after_one: bool) {
    // The client did not ask for a stream; axe streams from the provider
    // anyway, so the hang-up is seen at the provider's next keep-alive.
    let home = home();
    let first = sse(&[(
        None,
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}]}),
    )]);
    let hanging = P::OpenAi.stream_steps(vec![
        Step::bytes(&first, 1024),
        Step::Forever(": keep-alive\n\n".into()),
    ]);
    let replies = if after_one {
        vec![Reply::Json(200, openai_text("one", 1, 1)), hanging]
    } else {
        vec![hanging]
    };
    let fake = FakeServer::start(replies);
    let server = Server::start(&home, &fake, &["--timeout", "60"]);
    if after_one {
        let answered = post(
            &server.addr,
            "/v1/chat/completions",
            &chat_body("helper", "hi"),
            "",
        );
        assert_eq!(answered.status, 200, "{}", answered.body);
        fake.wait_for_requests(1);
    }
    let body =
        json!({"model": "helper", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let mut conn = std::net::TcpStream::connect(&server.addr).unwrap();
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut conn, req.as_bytes()).unwrap();
    // The run is under way at the provider before the client leaves (a
    // fixed 500 ms may not get it there on a loaded machine, and then no
    // request reaches the fake).
    fake.wait_for_requests(1 + usize::from(after_one));
    drop(conn);
    assert!(
        server.wait_log("status=499", Duration::from_secs(30)),
        "the run went on after its client left: {}",
        server.log()
    );
    let requests = fake.requests();
    assert_eq!(requests.len(), 1 + usize::from(after_one));
    assert!(requests.iter().all(|r| r.json()["stream"] == true));
}
