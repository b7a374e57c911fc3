//! `axe mcp serve --listen` keeping at most 4,096 sessions of the
//! handshake era (design §9.6): the oldest one dropped for a new one takes
//! its running calls with it, cancelled as a DELETE's are, rather than
//! leaving them to run out their deadline where nobody can reach them.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::serve::{Server, post};

const INIT: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}"#;

/// A new session's id.
fn session(addr: &str) -> String {
    let r = post(addr, "/mcp", INIT, "");
    assert_eq!(r.status, 200, "{}", r.body);
    r.head
        .lines()
        .find_map(|l| {
            l.to_lowercase()
                .strip_prefix("mcp-session-id: ")
                .map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no session id: {}", r.head))
}

#[test]
fn an_evicted_sessions_running_call_is_cancelled() {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    // A piece of text, then keep-alives: a run only a cancel ends.
    let first = sse(&[(
        None,
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Wa"}, "finish_reason": null}]}),
    )]);
    let fake = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&first, 1024),
        Step::Forever(": keep-alive\n\n".into()),
    ])]);
    let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
    cmd.arg("mcp");
    let server = Server::start_with(cmd, &["--timeout", "300"]);
    let oldest = session(&server.addr);
    let headers = format!("mcp-session-id: {oldest}\r\nmcp-protocol-version: 2025-06-18\r\n");
    let addr = server.addr.clone();
    let call = std::thread::spawn(move || {
        use std::io::{Read, Write};
        let c = r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "helper", "arguments": {"task": "Wait."}}}"#;
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        // Longer than the test waits: only the server ends this call.
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let rq = format!(
            "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nconnection: close\r\n\
             content-length: {}\r\n{headers}\r\n{c}",
            c.len()
        );
        s.write_all(rq.as_bytes()).unwrap();
        let mut answer = Vec::new();
        let _ = s.read_to_end(&mut answer);
        Instant::now()
    });
    fake.wait_for_requests(1);
    for _ in 0..4096 {
        session(&server.addr);
    }
    let evicted = Instant::now();
    let until = evicted + Duration::from_secs(30);
    while !call.is_finished() {
        assert!(
            Instant::now() < until,
            "the evicted session's call still runs: {}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ended = call.join().unwrap();
    assert!(ended >= evicted, "the call ended before the eviction");
}
