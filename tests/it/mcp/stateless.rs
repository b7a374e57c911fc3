//! The client in the stateless revision 2026-07-28 (design §9.7), through
//! the binary: against the official Python SDK 2.x's server refusing the
//! handshake (tests/it/mcp/stateless_server.py, installed by
//! scripts/mcp_servers.sh into target/mcp/venv2), over stdio and streamable
//! HTTP, its tools listed and called with the envelope on every request and
//! the routing headers on every POST; a result asking for input is an error
//! naming what was asked; and the probe costs a handshake-era server one
//! round trip, once a run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::root;
use crate::common::*;

const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
const CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The SDK 2.x's python and the server script, if installed.
fn sdk2() -> Option<(PathBuf, PathBuf)> {
    let python = root().join("venv2/bin/python");
    if !python.exists() {
        crate::common::missing(
            "the MCP tests against the Python SDK 2.x's stateless server",
            "mcp 2.x is not installed in target/mcp/venv2 (bash scripts/mcp_servers.sh)",
        );
        return None;
    }
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp/stateless_server.py");
    Some((python, script))
}

/// The lines the server recorded.
fn recorded(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The methods of the requests recorded, in order.
fn methods(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l["method"].as_str().map(str::to_string))
        .collect()
}

/// A run of agent `user` on `p`, its model calling `calls` then done; the
/// tool results it got back.
fn run(home: &Home, p: P, calls: &[Call]) -> (std::process::Output, Vec<String>) {
    let server = FakeServer::tool_loop(p.tool_calls(calls), p.text("done"));
    let key = match p {
        P::Anthropic => "ANTHROPIC_API_KEY",
        P::OpenAi | P::Responses => "OPENAI_API_KEY",
        P::Ollama => "OLLAMA_API_KEY",
    };
    let out = home
        .axe()
        .env(key, "sk-test-key-0123456789")
        .env(p.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go", "--timeout", "60", "--verbose"])
        .output()
        .unwrap();
    let results = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap_or_default();
    (out, results)
}

/// Every request recorded carries the envelope, and none is `initialize`.
fn assert_stateless(lines: &[Value]) {
    let ms = methods(lines);
    assert_eq!(ms[0], "server/discover", "{ms:?}");
    assert_eq!(ms.iter().filter(|m| *m == "server/discover").count(), 1);
    assert!(!ms.iter().any(|m| m == "initialize"), "{ms:?}");
    assert!(ms.iter().any(|m| m == "tools/list"), "{ms:?}");
    for l in lines.iter().filter(|l| l["method"].is_string()) {
        let meta = &l["meta"];
        assert_eq!(meta[VERSION_KEY], "2026-07-28", "{l}");
        assert_eq!(meta[CAPABILITIES_KEY], json!({}), "{l}");
        assert_eq!(
            meta["io.modelcontextprotocol/clientInfo"]["name"], "axe",
            "{l}"
        );
    }
}

fn stdio_home(p: P, python: &Path, script: &Path, record: &Path) -> Home {
    stdio_home_with(p, python, script, record, "", "")
}

/// [`stdio_home`] with `env` more pairs of its environment (each
/// `, KEY = "value"`) and `extra` keys in the server's table.
fn stdio_home_with(
    p: P,
    python: &Path,
    script: &Path,
    record: &Path,
    env: &str,
    extra: &str,
) -> Home {
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"st\"\ncommand = {:?}\nargs = [{:?}, \"stdio\"]\nenv = {{ AXE_TEST_RECORD = {:?}{env} }}\n{extra}\n",
        python.display().to_string(),
        script.display().to_string(),
        record.display().to_string()
    ));
    home.named_agent("user", p.model(), "mcp_servers = [\"st\"]\n");
    home
}

#[test]
fn a_stateless_only_sdk_server_over_stdio_is_listed_and_called_with_the_envelope() {
    let Some((python, script)) = sdk2() else {
        return;
    };
    let p = P::OpenAi;
    let dir = TempDir::new("stateless");
    let record = dir.path().join("record.jsonl");
    let home = stdio_home(p, &python, &script, &record);
    let (out, results) = run(&home, p, &[("c1", "st__echo", json!({"message": "hi"}))]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The SDK's tools return their structured content too.
    assert_eq!(results.len(), 1, "{}", stderr(&out));
    assert!(results[0].starts_with("Echo: hi\n"), "{results:?}");
    let lines = recorded(&record);
    assert_stateless(&lines);
    assert_eq!(
        methods(&lines),
        ["server/discover", "tools/list", "tools/call"],
        "{lines:?}"
    );
    assert!(
        stderr(&out).contains("[mcp] \"st\" ready"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_input_required_result_is_an_error_naming_what_the_server_wanted() {
    let Some((python, script)) = sdk2() else {
        return;
    };
    let p = P::Anthropic;
    let dir = TempDir::new("stateless");
    let record = dir.path().join("record.jsonl");
    let home = stdio_home(p, &python, &script, &record);
    let (out, results) = run(&home, p, &[("c1", "st__confirm", json!({"action": "rm"}))]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results.len(), 1, "{}", stderr(&out));
    let text = &results[0];
    assert!(text.starts_with("Error: MCP tool \"confirm\""), "{text}");
    assert!(text.contains("no user to ask"), "{text}");
    assert!(
        text.contains("elicitation/create \"Really delete the branch?\""),
        "{text}"
    );
    assert!(
        stderr(&out).contains("[tool] st__confirm"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_stateless_server_slow_to_start_is_probed_again_when_it_refuses_initialize() {
    // Its `timeout` of 1 s bounds the probe; it starts after 3 s, answers
    // the probe (too late: dropped), then refuses `initialize` with
    // -32022 as a server of the stateless era does.
    let Some((python, script)) = sdk2() else {
        return;
    };
    let p = P::OpenAi;
    let dir = TempDir::new("stateless");
    let record = dir.path().join("record.jsonl");
    let home = stdio_home_with(
        p,
        &python,
        &script,
        &record,
        ", AXE_TEST_SLOW_START = \"3\"",
        "timeout = 1",
    );
    let (out, results) = run(&home, p, &[("c1", "st__echo", json!({"message": "late"}))]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(results[0].starts_with("Echo: late\n"), "{results:?}");
    // The SDK refuses `initialize` on a connection the probe made
    // stateless before its middleware (the record) sees it.
    let ms = methods(&recorded(&record));
    assert_eq!(
        ms,
        [
            "server/discover",
            "server/discover",
            "tools/list",
            "tools/call"
        ]
    );
    let err = stderr(&out);
    assert!(
        err.contains("[mcp] \"st\" dropped: a response to no request waiting (id 1)"),
        "{err}"
    );
}

/// The SDK 2.x server over streamable HTTP on a free port; killed on drop.
struct Http {
    child: std::process::Child,
    url: String,
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http(python: &Path, script: &Path, record: &Path) -> Http {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(python)
        .arg(script)
        .args(["http", &port.to_string()])
        .env("AXE_TEST_RECORD", record)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < until, "the SDK 2.x server did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    Http {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

#[test]
fn a_stateless_sdk_server_over_http_gets_the_routing_headers_and_no_session() {
    let Some((python, script)) = sdk2() else {
        return;
    };
    let p = P::Ollama;
    let dir = TempDir::new("stateless");
    let record = dir.path().join("record.jsonl");
    let server = http(&python, &script, &record);
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"st\"\nurl = {:?}\n",
        server.url
    ));
    home.named_agent("user", p.model(), "mcp_servers = [\"st\"]\n");
    let (out, results) = run(
        &home,
        p,
        &[
            ("c1", "st__echo", json!({"message": "one"})),
            ("c2", "st__confirm", json!({"action": "two"})),
            ("c3", "st__strict", json!({"n": 3})),
            ("c4", "st__where", json!({"region": "Zürich"})),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(results[0].starts_with("Echo: one\n"), "{results:?}");
    assert!(results[1].contains("elicitation/create"), "{results:?}");
    // The 400 the server maps -32602 to, read for the error it carries.
    assert_eq!(
        results[2],
        "Error: MCP tool \"strict\" on server \"st\" failed - the server answered with error -32602: strict takes no such arguments"
    );
    let lines = recorded(&record);
    assert_stateless(&lines);
    let posts: Vec<&Value> = lines.iter().filter(|l| l["http"] == "POST").collect();
    // The argument its schema marks `x-mcp-header`, in its header: the
    // server checks the two agree.
    assert!(results[3].starts_with("in Zürich\n"), "{results:?}");
    let region: Vec<&Value> = posts
        .iter()
        .map(|h| &h["headers"]["mcp-param-region"])
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(region, [&json!("=?base64?WsO8cmljaA==?=")]);
    // One POST a request: the probe, the listing, the four calls; nothing
    // else (no notification, no session ended with a DELETE).
    assert_eq!(posts.len(), 6, "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l["http"].is_string()).count(), 6);
    for h in &posts {
        let h = &h["headers"];
        assert_eq!(h["mcp-protocol-version"], "2026-07-28", "{h}");
        assert!(h["mcp-session-id"].is_null(), "{h}");
    }
    assert_eq!(posts[0]["headers"]["mcp-method"], "server/discover");
    assert_eq!(posts[1]["headers"]["mcp-method"], "tools/list");
    let mut calls: Vec<(Value, Value)> = posts[2..]
        .iter()
        .map(|h| {
            (
                h["headers"]["mcp-method"].clone(),
                h["headers"]["mcp-name"].clone(),
            )
        })
        .collect();
    calls.sort_by_key(|c| c.1.to_string());
    assert_eq!(
        calls,
        [
            (json!("tools/call"), json!("confirm")),
            (json!("tools/call"), json!("echo")),
            (json!("tools/call"), json!("strict")),
            (json!("tools/call"), json!("where"))
        ]
    );
}

/// A server of the handshake era, in Python, that records each method it
/// is sent and answers `server/discover` as such a server does: method
/// not found.
const HANDSHAKE: &str = r#"
import json, sys
record = open(sys.argv[1], "a")
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    record.write(json.dumps({"method": m.get("method"), "meta": m.get("params", {}).get("_meta")}) + "\n"); record.flush()
    if "id" not in m: continue
    if m["method"] == "initialize":
        r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "old", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        r = {"content": [{"type": "text", "text": "old echo"}]}
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "Method not found"}})
        continue
    send({"jsonrpc": "2.0", "id": m["id"], "result": r})
"#;

#[test]
fn a_handshake_era_server_costs_one_probe_a_run_and_is_spoken_to_as_before() {
    let p = P::OpenAi;
    let dir = TempDir::new("stateless");
    let record = dir.path().join("record.jsonl");
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"old\"\ncommand = \"python3\"\nargs = [\"-c\", {HANDSHAKE:?}, {:?}]\n",
        record.display().to_string()
    ));
    home.named_agent("user", p.model(), "mcp_servers = [\"old\"]\n");
    let (out, results) = run(
        &home,
        p,
        &[
            ("c1", "old__echo", json!({})),
            ("c2", "old__echo", json!({})),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(results, ["old echo", "old echo"]);
    let lines = recorded(&record);
    let ms = methods(&lines);
    assert_eq!(
        ms,
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call",
            "tools/call"
        ],
        "{lines:?}"
    );
    // After the probe, the handshake era's requests as before: no envelope.
    for l in &lines[1..] {
        assert!(l["meta"].is_null(), "{l}");
    }
}
