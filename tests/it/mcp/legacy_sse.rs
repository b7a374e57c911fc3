//! The older HTTP+SSE transport, which the Go original's agent files name
//! (`transport = "sse"`, design §9.2), against server-everything serving
//! it: the endpoint taken from the stream, tools listed, calls answered on
//! the stream side by side, and an agent file written as the Go original's
//! are run through the binary.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::served;
use crate::common::*;
use axe::mcp::{Server, ServerFile};
use serde_json::json;

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

#[test]
fn an_sse_server_lists_its_tools_and_answers_calls_side_by_side() {
    let Some(sse) = served("sse", "/sse") else {
        return;
    };
    let config = ServerFile {
        name: "old".into(),
        url: Some(sse.url.clone()),
        transport: Some("sse".into()),
        ..ServerFile::default()
    }
    .validate("test")
    .unwrap();
    let log: axe::mcp::rpc::Log = Arc::new(|_: &axe::mcp::rpc::Note| {});
    let server = Arc::new(Server::start(&config, Path::new("."), log, soon()).expect("starts"));
    assert!(server.tools.iter().any(|t| t.name == "echo"));
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let server = server.clone();
            std::thread::spawn(move || {
                server.call("echo", json!({"message": format!("m{i}")}), soon())
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, format!("Echo: m{i}"));
    }
    server.stop();
    let out = server.call("echo", json!({"message": "x"}), soon());
    assert!(out.is_error && out.text.contains("stopped"), "{out:?}");
}

#[test]
fn a_go_original_agent_file_with_an_sse_server_runs() {
    let Some(sse) = served("sse", "/sse") else {
        return;
    };
    let home = Home::new();
    // As the Go original's agent files declare a server: name, url,
    // transport, headers (its ${VAR} read from the environment).
    home.named_agent(
        "user",
        P::OpenAi.model(),
        &format!(
            "[[mcp_servers]]\nname = \"ev\"\nurl = \"{}\"\ntransport = \"sse\"\n\
             headers = {{ X-Client = \"${{CLIENT_NAME}}\" }}\n",
            sse.url
        ),
    );
    let first = P::OpenAi.tool_calls(&[("c1", "ev__echo", json!({"message": "over sse"}))]);
    let done = P::OpenAi.text("done");
    let model = FakeServer::tool_loop(first, done);
    let out = home
        .axe_on(&[(P::OpenAi, &model)])
        .env("CLIENT_NAME", "axe-tests")
        .args(["run", "user", "-p", "go", "--timeout", "60"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "done\n");
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.has_tool_results())
        .flat_map(|r| r.tool_result_texts())
        .collect();
    assert_eq!(results, ["Echo: over sse"]);
}

const ODD: &str = r#"
import sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
endpoint, flood = sys.argv[1], sys.argv[2] == "flood"
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
    def do_GET(self):
        self.send_response(200); self.send_header("content-type", "text/event-stream"); self.end_headers()
        try:
            self.wfile.write(("event: endpoint\ndata: " + endpoint + "\n\n").encode()); self.wfile.flush()
            if flood:
                line = b"data: " + b"x" * 65536 + b"\n"
                for _ in range(1024): self.wfile.write(line)
                self.wfile.flush()
            time.sleep(30)
        except Exception: pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(202); self.send_header("content-length", "0"); self.end_headers()
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

fn odd(endpoint: &str, flood: bool) -> PyServer {
    PyServer::start(["-c", ODD, endpoint, if flood { "flood" } else { "-" }])
}

/// `axe run user` with server `old` at `port` (and `extra` keys): the
/// output and how long it took.
fn run_with(port: u16, extra: &str) -> (std::process::Output, Duration) {
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"old\"\nurl = \"http://127.0.0.1:{port}/sse\"\ntransport = \"sse\"\n{extra}"
    ));
    home.named_agent("user", "openai/gpt-4o", "mcp_servers = [\"old\"]\n");
    let model = FakeServer::json(200, &openai_text("done", 1, 1));
    let started = Instant::now();
    let out = home
        .axe_on(&[(P::OpenAi, &model)])
        .args(["run", "user", "-p", "go", "--timeout", "20"])
        .output()
        .unwrap();
    assert!(model.requests().is_empty(), "the run went on");
    (out, started.elapsed())
}

#[test]
fn an_event_that_never_ends_fails_the_server_at_the_line_cap_not_after_all_of_it() {
    let server = odd("/message", true);
    let (out, took) = run_with(server.port, "");
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sent an event over 16 MiB"),
        "{}",
        stderr(&out)
    );
    // Not held until the server closed its stream (30 s).
    assert!(took < Duration::from_secs(15), "{took:?}");
}

#[test]
fn an_endpoint_on_another_origin_is_refused_and_never_sent_the_headers() {
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = elsewhere.local_addr().unwrap().port();
    elsewhere.set_nonblocking(true).unwrap();
    let server = odd(&format!("http://127.0.0.1:{other}/message"), false);
    let (out, _) = run_with(
        server.port,
        "headers = { Authorization = \"Bearer sse-secret-value-3\" }\n",
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not on the origin of its event stream"),
        "{}",
        stderr(&out)
    );
    assert!(
        elsewhere.accept().is_err(),
        "a POST went to the other origin"
    );
}
