//! `POST /v1/responses` through the binary (design §12.6): raw HTTP for
//! the wire itself (the `response` object, the events in order with their
//! sequence numbers, a stream's status when the run fails before and
//! after its text, what is refused), and the official `openai` Python
//! package's `responses.create`, `responses.stream` and `responses.parse`
//! (tests/it/serve/responses.py).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Server, post, python};
use crate::common::*;

/// The flags under which `instructions` (a system message) are taken: none,
/// they are by default.
const SYSTEM: &[&str] = &[];

fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

/// The provider's answer in two pieces a moment apart, so that they are
/// sent on as more than one delta.
fn two_pieces() -> FakeServer {
    let body = P::OpenAi.stream_text(&["Hel", "lo", " you"], 5, 2);
    let cut = body[..body.find("lo\"").unwrap()].rfind("data: ").unwrap();
    FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&body[..cut], 4096),
        Step::Sleep(Duration::from_millis(100)),
        Step::bytes(&body[cut..], 4096),
    ])])
}

/// The events of a raw (chunked) event stream: each `event:` name, and
/// its data.
fn events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut name = String::new();
    for line in body.lines() {
        if let Some(n) = line.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(d) = line.strip_prefix("data: ") {
            let v: Value = serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}"));
            out.push((std::mem::take(&mut name), v));
        }
    }
    out
}

#[test]
fn a_whole_response_is_the_agents_answer_with_its_usage() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, SYSTEM);
    let body = json!({"model": "helper", "input": "Say hello.", "instructions": "Be brief."});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let id = v["id"].as_str().unwrap();
    let run_id = id.strip_prefix("resp_").expect("resp_<run id>");
    assert!(
        r.head.contains(&format!("x-request-id: {run_id}")),
        "{}",
        r.head
    );
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["model"], "helper");
    assert_eq!(v["instructions"], "Be brief.");
    assert_eq!(
        v["output"],
        json!([{"id": format!("msg_{run_id}"), "type": "message", "status": "completed",
                "role": "assistant", "content": [{"type": "output_text", "text": "Hello there.",
                "annotations": [], "logprobs": []}]}])
    );
    assert_eq!(
        v["usage"],
        json!({"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
               "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
               "output_tokens_details": {"reasoning_tokens": 0}})
    );
    let sent = fake.only_request();
    assert_eq!(sent.first_user_text(), "Say hello.");
    let system = sent.system_prompt();
    assert!(
        system.starts_with("You are helper.") && system.contains("Be brief."),
        "the instructions come after the agent's prompt: {system}"
    );
    assert!(
        server.wait_log(
            "POST /v1/responses agent=helper status=200",
            Duration::from_secs(30)
        ),
        "{}",
        server.log()
    );
}

#[test]
fn a_streamed_response_is_the_responses_apis_events_in_order() {
    let home = home();
    let fake = two_pieces();
    let server = Server::start(&home, &fake, &[]);
    let body = json!({"model": "helper", "input": [{"role": "user", "content":
        [{"type": "input_text", "text": "Say hello."}]}], "stream": true});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.head.contains("content-type: text/event-stream"),
        "{}",
        r.head
    );
    let evs = events(&r.body);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    let deltas = names
        .iter()
        .filter(|n| **n == "response.output_text.delta")
        .count();
    assert!(deltas >= 2, "streamed in pieces: {names:?}");
    let mut want = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    want.extend(std::iter::repeat_n("response.output_text.delta", deltas));
    want.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names, want);
    for (i, (name, data)) in evs.iter().enumerate() {
        assert_eq!(data["type"], name.as_str());
        assert_eq!(data["sequence_number"], i, "{data}");
    }
    let text: String = evs
        .iter()
        .filter_map(|(_, d)| d["delta"].as_str())
        .collect();
    assert_eq!(text, "Hello you");
    assert_eq!(evs[0].1["response"]["status"], "in_progress");
    let done = &evs.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["output"][0]["content"][0]["text"], "Hello you");
    assert_eq!(done["usage"]["total_tokens"], 7, "{done}");
    assert_eq!(done["id"], evs[0].1["response"]["id"]);
}

#[test]
fn a_stream_that_fails_before_its_text_gets_the_runs_status() {
    let home = home();
    let failing = FakeServer::json(500, r#"{"error":{"message":"boom","type":"server_error"}}"#);
    let server = Server::start(&home, &failing, &["--retries", "0"]);
    let body = json!({"model": "helper", "input": "hi", "stream": true});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 424, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["error"]["code"], "upstream_error", "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("boom"));
}

#[test]
fn a_stream_that_fails_after_its_text_ends_with_response_failed() {
    let home = home();
    let body = P::OpenAi.stream_text(&["Hel", "lo"], 5, 2);
    let cut = body[..body.find("lo\"").unwrap()].rfind("data: ").unwrap();
    let fake = FakeServer::start(vec![
        P::OpenAi.stream_steps(vec![Step::bytes(&body[..cut], 4096), Step::Cut]),
    ]);
    let server = Server::start(&home, &fake, &["--retries", "0"]);
    let body = json!({"model": "helper", "input": "hi", "stream": true});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "the head went out with the text: {}", r.body);
    let evs = events(&r.body);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[names.len() - 3..],
        ["response.output_text.delta", "error", "response.failed"],
        "{names:?}"
    );
    let error = &evs[evs.len() - 2].1;
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()));
    let failed = &evs.last().unwrap().1["response"];
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["error"]["code"], "server_error");
    assert_eq!(failed["output"][0]["content"][0]["text"], "Hel");
}

#[test]
fn an_answer_cut_short_is_an_incomplete_response() {
    let home = home();
    let cut = P::OpenAi.text_stopped("The first half", "length");
    let fake = FakeServer::json(200, &cut);
    let server = Server::start(&home, &fake, &[]);
    let body = json!({"model": "helper", "input": "hi"});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["status"], "incomplete", "{v}");
    assert_eq!(v["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(v["output"][0]["status"], "incomplete");
    assert_eq!(v["output"][0]["content"][0]["text"], "The first half");
    let body = json!({"model": "helper", "input": "hi", "stream": true});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    let evs = events(&r.body);
    let (name, last) = evs.last().expect("events");
    assert_eq!(name, "response.incomplete", "{}", r.body);
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
}

#[test]
fn a_stream_the_client_leaves_stops_its_run() {
    let home = home();
    // One piece of text, then keep-alives for as long as anyone listens.
    let body = P::OpenAi.stream_text(&["Hel", "lo"], 5, 2);
    let cut = body[..body.find("lo\"").unwrap()].rfind("data: ").unwrap();
    let fake = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&body[..cut], 4096),
        Step::Forever(": keep-alive\n\n".into()),
    ])]);
    let server = Server::start(&home, &fake, &["--timeout", "60"]);
    let body = json!({"model": "helper", "input": "hi", "stream": true}).to_string();
    let mut conn = std::net::TcpStream::connect(&server.addr).unwrap();
    let req = format!(
        "POST /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    std::io::Write::write_all(&mut conn, req.as_bytes()).unwrap();
    // Read until the first delta has come, then leave.
    conn.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("response.output_text.delta") {
        let n = std::io::Read::read(&mut conn, &mut buf).expect("the stream");
        assert!(n > 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    drop(conn);
    assert!(
        server.wait_log("status=499", Duration::from_secs(30)),
        "the run went on after its client left: {}",
        server.log()
    );
}

#[test]
fn what_axe_does_not_keep_or_take_is_refused_with_a_400() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let server = Server::start(&home, &fake, &[]);
    let tool = json!({"type": "function", "name": "f", "parameters": {}});
    let image = json!([{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}]);
    for (extra, param, says) in [
        (json!({"tools": [tool]}), "tools", "their own tools"),
        (
            json!({"previous_response_id": "resp_1"}),
            "previous_response_id",
            "no conversations",
        ),
        (json!({"input": image}), "input", "fetches no URL"),
        (
            json!({"input": [{"type": "item_reference", "id": "msg_1"}]}),
            "input",
            "`store` is false",
        ),
    ] {
        let mut body = json!({"model": "helper", "input": "hi"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        let v: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(v["error"]["param"], param, "{v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{v}"
        );
    }
    let r = super::raw(
        &server.addr,
        b"GET /v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 405, "{}", r.body);
    assert!(fake.requests().is_empty(), "nothing ran");
}

#[test]
fn max_output_tokens_bounds_the_run_as_chats_max_tokens_does() {
    let home = home();
    let big = FakeServer::json(
        200,
        &openai_tool_calls(&[("c1", "call_agent", delegate("helper", "go"))], 50, 50),
    );
    let server = Server::start(&home, &big, &[]);
    let body = json!({"model": "lead", "input": "hi", "max_output_tokens": 10});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("budget_exceeded"), "{}", r.body);
}

/// Runs responses.py `action` for `agent` against `server`; its JSON.
fn sdk(py: &PathBuf, server: &Server, action: &str, agent: &str) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/serve/responses.py");
    let mut cmd = Command::new(py);
    cmd.arg(&script)
        .args([&server.url, action, agent])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .stdin(Stdio::null());
    let out = run_within(&mut cmd, Duration::from_secs(60)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "responses.py {action}: not JSON ({e}): {text}\nstderr: {}\nserver: {}",
            String::from_utf8_lossy(&out.stderr),
            server.log()
        )
    })
}

#[test]
fn the_openai_clients_responses_create_whole_and_streamed() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello there.", 7, 3));
    let server = Server::start(&home, &fake, SYSTEM);
    let r = sdk(&py, &server, "create", "helper");
    assert_eq!(r["text"], "Hello there.", "{r}");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["model"], "helper");
    assert_eq!(r["usage"]["input_tokens"], 7);
    assert_eq!(r["usage"]["output_tokens"], 3);
    assert_eq!(r["usage"]["total_tokens"], 10);
    assert!(fake.only_request().system_prompt().contains("Be brief."));

    let fake = two_pieces();
    let server = Server::start(&home, &fake, &[]);
    let r = sdk(&py, &server, "stream", "helper");
    let evs = r["events"].as_array().unwrap_or_else(|| panic!("{r}"));
    let text: String = evs.iter().filter_map(|e| e["delta"].as_str()).collect();
    assert_eq!(text, "Hello you", "{r}");
    assert_eq!(evs.last().unwrap()["type"], "response.completed", "{r}");

    let fake = two_pieces();
    let server = Server::start(&home, &fake, &[]);
    let r = sdk(&py, &server, "helper", "helper");
    assert_eq!(r["text"], "Hello you", "{r}");
    assert!(r["deltas"].as_array().unwrap().len() >= 2, "{r}");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["usage"]["total_tokens"], 7, "{r}");
}

#[test]
fn the_openai_clients_responses_parse_fills_a_pydantic_model() {
    let Some(py) = python() else { return };
    let home = home();
    let fake = FakeServer::json(200, &openai_text("{\"n\": 3}", 4, 2));
    let server = Server::start(&home, &fake, &[]);
    let r = sdk(&py, &server, "parse", "helper");
    assert_eq!(r["parsed"], json!({"n": 3}), "{r}");
    assert_eq!(r["type"], "Count");
    let sent = fake.only_request().json();
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!(["n"]),
        "the pydantic model's schema went to the provider: {sent}"
    );
    // A request with the client's tools: refused, and the client says why.
    let r = sdk(&py, &server, "tools", "helper");
    assert_eq!(r["error"], "BadRequestError", "{r}");
    assert!(
        r["body"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("their own tools")),
        "{r}"
    );
}

#[test]
fn max_output_tokens_bounds_what_the_tree_generates_not_what_it_reads() {
    let home = home();
    // lead calls helper (30 in, 5 out), helper answers (30 in, 5 out),
    // lead answers (40 in, 5 out): 100 read, 15 generated, under 20.
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
    let body = json!({"model": "lead", "input": "hi", "max_output_tokens": 20});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["usage"]["input_tokens"], 100, "{v}");
    assert_eq!(v["usage"]["output_tokens"], 15, "{v}");
}

#[test]
fn client_tools_are_taken_and_ignored_with_ignore_client_tools() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("plain", 1, 1));
    let server = Server::start(&home, &fake, &["--ignore-client-tools"]);
    let tool = json!({"type": "function", "name": "f", "parameters": {"type": "object"}});
    let body = json!({"model": "helper", "input": "hi", "tools": [tool]});
    let r = post(&server.addr, "/v1/responses", &body.to_string(), "");
    assert_eq!(r.status, 200, "{}", r.body);
    let sent = fake.requests()[0].json();
    assert!(sent.get("tools").is_none(), "{sent}");
}
