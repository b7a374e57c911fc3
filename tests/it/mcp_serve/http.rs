//! `axe mcp serve --listen` from raw HTTP requests (design §9.6): a token
//! required off loopback (401 without it), a web page's request refused
//! on loopback (its Origin), GET 405, sessions of the handshake era
//! (required, ended by DELETE), the stateless revision's routing headers
//! checked against the body (-32020), a version axe does not speak
//! (-32022), and a call with a progress token answered as an event
//! stream.

use serde_json::{Value, json};

use crate::common::*;
use crate::serve::{Server, post, raw};

const ENVELOPE: &str = r#""_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}"#;

fn start(home: &Home, fake: &FakeServer, args: &[&str]) -> Server {
    let mut cmd = home.axe_on(&[(P::OpenAi, fake)]);
    cmd.arg("mcp");
    Server::start_with(cmd, args)
}

fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "description = \"Says hello.\"\n");
    home
}

/// The stateless revision's headers for `method` (and `name`).
fn routing(method: &str, name: Option<&str>) -> String {
    let mut h = format!("mcp-protocol-version: 2026-07-28\r\nmcp-method: {method}\r\n");
    if let Some(n) = name {
        h.push_str(&format!("mcp-name: {n}\r\n"));
    }
    h
}

fn body(raw: &crate::serve::Raw) -> Value {
    serde_json::from_str(&raw.body).unwrap_or_else(|e| panic!("{e}: {}", raw.body))
}

/// A child killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn off_loopback_a_token_is_required() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("hi", 1, 1));
    let token = "a-token-of-at-least-16";
    let file = home.dir.path().join("token");
    std::fs::write(&file, token).unwrap();
    // Without a token, an address that is not loopback is refused.
    let out = home.run_on(
        &[(P::OpenAi, &fake)],
        &["mcp", "serve", "--listen", "0.0.0.0:0"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a bearer token is required"),
        "{}",
        stderr(&out)
    );
    // With one, on every address (reached here through loopback).
    let mut child = home
        .axe_on(&[(P::OpenAi, &fake)])
        .args(["mcp", "serve", "--listen", "0.0.0.0:0", "--token-file"])
        .arg(&file)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let _killed = Killed(child);
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    let port = line
        .split("serving on http://0.0.0.0:")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("not serving: {line}"));
    let addr = format!("127.0.0.1:{port}");
    let list = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {{{ENVELOPE}}}}}"#
    );
    let r = post(&addr, "/mcp", &list, &routing("tools/list", None));
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(
        r.head.to_lowercase().contains("www-authenticate: bearer"),
        "{}",
        r.head
    );
    let auth = format!(
        "authorization: Bearer {token}\r\n{}",
        routing("tools/list", None)
    );
    let r = post(&addr, "/mcp", &list, &auth);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body(&r)["result"]["tools"][0]["name"], "helper");
}

#[test]
fn on_loopback_a_web_pages_request_is_refused() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("hi", 1, 1));
    let server = start(&home, &fake, &[]);
    let list = format!(
        r#"{{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {{{ENVELOPE}}}}}"#
    );
    let from_page = format!(
        "origin: http://evil.example\r\n{}",
        routing("tools/list", None)
    );
    let r = post(&server.addr, "/mcp", &list, &from_page);
    assert_eq!(r.status, 403, "{}", r.body);
    let rebound = format!(
        "POST /mcp HTTP/1.1\r\nhost: evil.example\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n{}\r\n{list}",
        list.len(),
        routing("tools/list", None)
    );
    assert_eq!(raw(&server.addr, rebound.as_bytes()).status, 403);
    let r = post(&server.addr, "/mcp", &list, &routing("tools/list", None));
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn get_is_405_and_a_session_is_required_then_ended_by_delete() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("hi", 1, 1));
    let server = start(&home, &fake, &[]);
    let get = "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nconnection: close\r\n\r\n";
    let r = raw(&server.addr, get.as_bytes());
    assert_eq!(r.status, 405, "{}", r.body);
    assert!(
        r.head.to_lowercase().contains("allow: post, delete"),
        "{}",
        r.head
    );
    let list = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}"#;
    // The handshake era without a session: 400; with one axe never gave: 404.
    assert_eq!(post(&server.addr, "/mcp", list, "").status, 400);
    let r = post(&server.addr, "/mcp", list, "mcp-session-id: nope\r\n");
    assert_eq!(r.status, 404, "{}", r.body);
    let init = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}"#;
    let r = post(&server.addr, "/mcp", init, "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body(&r)["result"]["protocolVersion"], "2025-06-18");
    let sid = r
        .head
        .lines()
        .find_map(|l| {
            l.to_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no session id: {}", r.head));
    let in_session = format!("mcp-session-id: {sid}\r\nmcp-protocol-version: 2025-06-18\r\n");
    let note = r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#;
    assert_eq!(post(&server.addr, "/mcp", note, &in_session).status, 202);
    let r = post(&server.addr, "/mcp", list, &in_session);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(body(&r)["result"]["tools"][0]["name"], "helper");
    let delete = |sid: &str| {
        let d = format!(
            "DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nmcp-session-id: {sid}\r\nconnection: close\r\n\r\n"
        );
        raw(&server.addr, d.as_bytes()).status
    };
    assert_eq!(delete(&sid), 200);
    assert_eq!(delete(&sid), 404);
    assert_eq!(post(&server.addr, "/mcp", list, &in_session).status, 404);
}

#[test]
fn sigterm_stops_the_server() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("hi", 1, 1));
    let mut server = start(&home, &fake, &[]);
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(std::time::Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", server.log());
}

#[test]
fn the_routing_headers_must_match_the_body() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello.", 1, 1));
    let server = start(&home, &fake, &[]);
    let call = format!(
        r#"{{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {{"name": "helper", "arguments": {{"task": "Hi."}}, {ENVELOPE}}}}}"#
    );
    for (headers, says) in [
        (routing("tools/list", Some("helper")), "Mcp-Method"),
        (routing("tools/call", Some("other")), "Mcp-Name"),
        (routing("tools/call", None), "Mcp-Name"),
        (
            "mcp-method: tools/call\r\nmcp-name: helper\r\n".to_string(),
            "MCP-Protocol-Version",
        ),
    ] {
        let r = post(&server.addr, "/mcp", &call, &headers);
        assert_eq!(r.status, 400, "{headers}: {}", r.body);
        let b = body(&r);
        assert_eq!(b["id"], 5, "{b}");
        assert_eq!(b["error"]["code"], -32020, "{b}");
        assert!(
            b["error"]["message"].as_str().unwrap().contains(says),
            "{b}"
        );
    }
    // The run never started: the provider was not asked.
    assert!(fake.requests().is_empty());
    let r = post(
        &server.addr,
        "/mcp",
        &call,
        &routing("tools/call", Some("helper")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let b = body(&r);
    assert_eq!(b["result"]["content"][0]["text"], "Hello.", "{b}");
    assert_eq!(b["result"]["resultType"], "complete", "{b}");
    // A version axe does not speak: -32022 naming the one it does.
    let old = call.replace("2026-07-28", "2099-01-01");
    let headers = routing("tools/call", Some("helper")).replace("2026-07-28", "2099-01-01");
    let r = post(&server.addr, "/mcp", &old, &headers);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(body(&r)["error"]["code"], -32022);
    assert_eq!(
        body(&r)["error"]["data"]["supported"],
        json!(["2026-07-28"])
    );
}

#[test]
fn a_call_with_a_progress_token_is_answered_as_an_event_stream() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("Hello.", 1, 1));
    let server = start(&home, &fake, &[]);
    let meta = ENVELOPE.replace("{}}", r#"{}, "progressToken": "p1"}"#);
    let call = format!(
        r#"{{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {{"name": "helper", "arguments": {{"task": "Hi."}}, {meta}}}}}"#
    );
    let r = post(
        &server.addr,
        "/mcp",
        &call,
        &routing("tools/call", Some("helper")),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.head
            .to_lowercase()
            .contains("content-type: text/event-stream"),
        "{}",
        r.head
    );
    let events: Vec<Value> = r
        .body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert!(events.len() >= 2, "{}", r.body);
    assert_eq!(events[0]["method"], "notifications/progress", "{}", r.body);
    assert_eq!(events[0]["params"]["progressToken"], "p1");
    let last = events.last().unwrap();
    assert_eq!(last["id"], 6, "{}", r.body);
    assert_eq!(last["result"]["content"][0]["text"], "Hello.");
    // Without a token: one JSON answer.
    let plain = call.replace(r#", "progressToken": "p1""#, "");
    let r = post(
        &server.addr,
        "/mcp",
        &plain,
        &routing("tools/call", Some("helper")),
    );
    assert!(
        r.head
            .to_lowercase()
            .contains("content-type: application/json"),
        "{}",
        r.head
    );
    assert_eq!(body(&r)["result"]["content"][0]["text"], "Hello.");
}

#[test]
fn a_body_that_is_not_a_message_or_over_4_mib_is_400_or_413() {
    let home = home();
    let fake = FakeServer::json(200, &openai_text("hi", 1, 1));
    let server = start(&home, &fake, &[]);
    for (bad, code) in [
        ("{\"jsonrpc\": ", -32700),
        ("[1, 2]", -32600),
        (
            r#"{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}"#,
            -32600,
        ),
        // A request whose method is not one: not a notification's 202.
        (r#"{"jsonrpc": "2.0", "id": 3, "method": 7}"#, -32600),
        (r#"{"jsonrpc": "2.0", "id": 4}"#, -32600),
    ] {
        let r = post(&server.addr, "/mcp", bad, "");
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(body(&r)["error"]["code"], code, "{bad}: {}", r.body);
    }
    // A body announced over 4 MiB is refused before it is read.
    let big = "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: 4194305\r\n\r\n{\"a\":";
    assert_eq!(raw(&server.addr, big.as_bytes()).status, 413);
    // One sent without its length (chunked) is cut at 4 MiB and refused.
    let mut chunked = b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    let piece = vec![b' '; 1024 * 1024];
    for _ in 0..5 {
        chunked.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
        chunked.extend_from_slice(&piece);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    assert_eq!(raw(&server.addr, &chunked).status, 413);
    // The server still serves.
    let r = post(&server.addr, "/mcp", "{\"jsonrpc\": ", "");
    assert_eq!(r.status, 400);
}
