//! MCP servers as tools through the binary (design §9): the reference
//! servers' tools offered as `<server>__<tool>` with their own schemas and
//! called by a fake model on all three wires; a server that cannot start;
//! a call cut at its deadline (also over streamable HTTP by a server that
//! leaves axe's own POSTs unanswered); and no server process left behind,
//! after a run or a Ctrl-C.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::common::*;

/// A marker no other process has on its command line.
pub(super) fn marker() -> String {
    format!("--axe-test-{}-{}", std::process::id(), fastrand::u64(..))
}

/// The processes whose command line holds `marker`.
pub(super) fn with_marker(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline"))
            && String::from_utf8_lossy(&cmd).contains(marker)
            && alive(pid)
        {
            out.push(pid);
        }
    }
    out
}

/// A home whose config.toml declares server-everything as `ev` (with
/// `extra` keys) and whose agent `user` on `p` has `agent_extra`.
fn home(p: P, js: &Path, mark: &str, extra: &str, agent_extra: &str) -> Home {
    let home = Home::new();
    let table = format!(
        "[[mcp_servers]]\nname = \"ev\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\", {mark:?}]\n{extra}\n",
        js.display().to_string()
    );
    home.config(&table);
    home.named_agent("user", p.model(), agent_extra);
    home
}

fn key_var(p: P) -> &'static str {
    match p {
        P::Anthropic => "ANTHROPIC_API_KEY",
        P::OpenAi | P::Responses => "OPENAI_API_KEY",
        P::Ollama => "OLLAMA_API_KEY",
    }
}

/// A fake whose first answer makes `calls` and whose later ones end the run.
fn model(p: P, calls: &[Call]) -> FakeServer {
    let first = p.tool_calls(calls);
    let done = p.text("done");
    FakeServer::tool_loop(first, done)
}

fn axe(home: &Home, p: P, server: &FakeServer, extra: &[&str]) -> std::process::Command {
    let mut cmd = home.axe();
    cmd.env(key_var(p), "sk-test-key-0123456789")
        .env(p.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go", "--timeout", "60"])
        .args(extra);
    cmd
}

/// The names of the tools the first request offered.
fn offered(server: &FakeServer, p: P) -> Vec<(String, serde_json::Value)> {
    let body = server.requests()[0].json();
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| match p {
            P::Anthropic => (
                t["name"].as_str().unwrap().to_string(),
                t["input_schema"].clone(),
            ),
            P::Responses => (
                t["name"].as_str().unwrap().to_string(),
                t["parameters"].clone(),
            ),
            _ => (
                t["function"]["name"].as_str().unwrap().to_string(),
                t["function"]["parameters"].clone(),
            ),
        })
        .collect()
}

#[test]
fn mcp_tools_are_offered_with_their_schemas_and_called_on_all_three_wires() {
    let Some(js) = everything() else { return };
    for p in WIRES {
        let mark = marker();
        let home = home(
            p,
            &js,
            &mark,
            "",
            "mcp_servers = [\"ev\"]\nmcp_tools = [\"ev__echo\", \"ev__get-sum\"]\n",
        );
        let server = model(
            p,
            &[
                ("c1", "ev__echo", (json!({"message": "hi there"}))),
                ("c2", "ev__get-sum", (json!({"a": 2, "b": 40}))),
            ],
        );
        let out = axe(&home, p, &server, &["--verbose"]).output().unwrap();
        assert_eq!(code(&out), 0, "{p:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "done\n");
        let tools = offered(&server, p);
        let names: Vec<&str> = tools.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ev__echo", "ev__get-sum"], "{p:?}");
        assert_eq!(tools[0].1["type"], "object");
        assert!(
            tools[0].1["properties"]["message"].is_object(),
            "{p:?}: {}",
            tools[0].1
        );
        let results = server
            .requests()
            .iter()
            .find(|r| r.has_tool_results())
            .map(|r| r.tool_result_texts())
            .unwrap();
        assert_eq!(results[0], "Echo: hi there", "{p:?}");
        assert!(results[1].contains("42"), "{p:?}: {results:?}");
        let err = stderr(&out);
        assert!(
            err.contains("[tool] ev__echo: message \"hi there\" (ok,"),
            "{err}"
        );
        assert!(err.contains("[mcp] \"ev\" ready"), "{err}");
        assert!(with_marker(&mark).is_empty(), "the server outlived the run");
    }
}

#[test]
fn a_server_defined_in_the_agent_file_is_started_and_its_call_traced() {
    let Some(bin) = time_server() else { return };
    let p = P::OpenAi;
    let home = Home::new();
    home.named_agent(
        "user",
        p.model(),
        &format!(
            "[[mcp_servers]]\nname = \"time\"\ncommand = {:?}\n",
            bin.display().to_string()
        ),
    );
    let server = model(
        p,
        &[("c1", "time__get_current_time", (json!({"timezone": "UTC"})))],
    );
    let trace = home.dir.path().join("trace.jsonl");
    let out = axe(&home, p, &server, &["--trace", trace.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let results = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap();
    assert!(results[0].contains("\"timezone\": \"UTC\""), "{results:?}");
    let trace = std::fs::read_to_string(&trace).unwrap();
    let tool: serde_json::Value = trace
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "tool")
        .expect("a tool event");
    assert_eq!(tool["tool"], "time__get_current_time", "{tool}");
    assert!(tool["error"].is_null(), "{tool}");
}

#[test]
fn a_server_that_cannot_start_is_exit_2_before_any_request() {
    let p = P::Anthropic;
    let home = Home::new();
    home.config("[[mcp_servers]]\nname = \"gone\"\ncommand = \"/nonexistent/mcp-server\"\n");
    home.named_agent("user", p.model(), "mcp_servers = [\"gone\"]\n");
    let server = model(p, &[]);
    let out = axe(&home, p, &server, &[]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.starts_with("axe: MCP server \"gone\": cannot start"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(server.requests().is_empty());
}

#[test]
fn a_server_the_agent_names_but_nobody_declares_is_exit_2() {
    let p = P::Anthropic;
    let home = Home::new();
    home.named_agent("user", p.model(), "mcp_servers = [\"nowhere\"]\n");
    let server = model(p, &[]);
    let out = axe(&home, p, &server, &[]).output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no server named \"nowhere\""),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_call_past_the_servers_timeout_is_cancelled_and_the_run_goes_on() {
    let Some(js) = everything() else { return };
    let p = P::OpenAi;
    let mark = marker();
    let home = home(p, &js, &mark, "timeout = 1", "mcp_servers = [\"ev\"]\n");
    let server = model(
        p,
        &[(
            "c1",
            "ev__trigger-long-running-operation",
            (json!({"duration": 30, "steps": 3})),
        )],
    );
    let started = Instant::now();
    let out = axe(&home, p, &server, &[]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(started.elapsed() < Duration::from_secs(15));
    let results = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap();
    assert!(
        results[0].contains("did not answer before its deadline"),
        "{results:?}"
    );
    assert!(with_marker(&mark).is_empty(), "the server outlived the run");
}

#[test]
fn ctrl_c_in_the_middle_of_a_call_leaves_no_server_behind() {
    let Some(js) = everything() else { return };
    let p = P::Anthropic;
    let mark = marker();
    let home = home(p, &js, &mark, "", "mcp_servers = [\"ev\"]\n");
    let server = model(
        p,
        &[(
            "c1",
            "ev__trigger-long-running-operation",
            (json!({"duration": 30, "steps": 3})),
        )],
    );
    let child = axe(&home, p, &server, &[])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the model's call is running at the server.
    let until = Instant::now() + Duration::from_secs(30);
    while server.requests().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(800));
    assert!(!with_marker(&mark).is_empty(), "the server is not running");
    signal(&child, libc::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{} / {}", stderr(&out), stdout(&out));
    assert!(with_marker(&mark).is_empty(), "the server outlived Ctrl-C");
}

const STALLING: &str = r#"
import json, sys, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, ctype, body, length=True):
        self.send_response(200)
        self.send_header("content-type", ctype)
        if length: self.send_header("content-length", str(len(body)))
        self.end_headers(); self.wfile.write(body); self.wfile.flush()
    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        method = m.get("method")
        if method is None or method == "notifications/cancelled" or (method == "notifications/initialized" and "hang-init" in sys.argv):
            time.sleep(60)
        if "id" not in m:
            self.send_response(202); self.send_header("content-length", "0"); self.end_headers(); return
        if method == "server/discover":
            e = {"code": -32601, "message": "Method not found"}
            self.answer("application/json", json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": e}).encode())
            return
        if method == "initialize":
            r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
        elif method == "tools/list":
            r = {"tools": [{"name": "stall", "description": "d", "inputSchema": {"type": "object"}}]}
        else:
            ping = {"jsonrpc": "2.0", "id": "p1", "method": "ping"}
            self.answer("text/event-stream", ("data: " + json.dumps(ping) + "\n\n").encode(), False)
            time.sleep(60); return
        self.answer("application/json", json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}).encode())
s = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// [`STALLING`]; with `hang_init`, it also leaves
/// `notifications/initialized` unanswered.
fn stalling(hang_init: bool) -> PyServer {
    let hang = if hang_init { "hang-init" } else { "-" };
    PyServer::start(["-c", STALLING, hang])
}

#[test]
fn a_streamable_http_call_is_cut_at_its_deadline_whatever_the_server_leaves_unanswered() {
    // The ping's reply and the cancel are axe's own POSTs, on the caller's
    // thread: neither may hold the call past its deadline much.
    let mcp = stalling(false);
    let p = P::OpenAi;
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"h\"\nurl = \"http://127.0.0.1:{}/mcp\"\ntimeout = 1\n",
        mcp.port
    ));
    home.named_agent("user", p.model(), "mcp_servers = [\"h\"]\n");
    let server = model(p, &[("c1", "h__stall", json!({}))]);
    let started = Instant::now();
    let out = axe(&home, p, &server, &[]).output().unwrap();
    let took = started.elapsed();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let results = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts())
        .unwrap();
    assert!(
        results[0].contains("did not answer before its deadline"),
        "{results:?}"
    );
    // A 1 s deadline, and the cancel's second after it (as on stdio);
    // the ping's reply and the cancel given 5 s each took 11 s.
    assert!(took < Duration::from_secs(6), "{took:?}");
}

#[test]
fn a_server_start_ends_at_the_runs_deadline_when_initialized_is_left_unanswered() {
    // `notifications/initialized` is a POST of axe's own: it had 5 s of
    // its own whatever the deadline of the start.
    let mcp = stalling(true);
    let p = P::OpenAi;
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"h\"\nurl = \"http://127.0.0.1:{}/mcp\"\n",
        mcp.port
    ));
    home.named_agent("user", p.model(), "mcp_servers = [\"h\"]\n");
    let server = model(p, &[("c1", "h__stall", json!({}))]);
    let started = Instant::now();
    let out = home
        .axe()
        .env(key_var(p), "sk-test-key-0123456789")
        .env(p.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go", "--timeout", "2"])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_ne!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("\"h\""), "{}", stderr(&out));
    // The run's 2 s, and a little; the notification's own 5 s took 5 s
    // or more.
    assert!(
        took < Duration::from_millis(4500),
        "{took:?}: {}",
        stderr(&out)
    );
}
