//! `axe mcp serve` driven by raw JSON lines (design §9.6): what no SDK
//! sends — a malformed line, an unknown method, a revision axe does not
//! speak, arguments that do not match — and busy, and stdin's end ending
//! the server with its calls cancelled. Every line axe writes to stdout
//! must be one JSON-RPC message.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// A running `axe mcp serve`, its stdout read line by line.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Raw {
    fn start(home: &Home, fake: &FakeServer, args: &[&str]) -> Raw {
        let mut child = home
            .axe_on(&[(P::OpenAi, fake)])
            .args(["mcp", "serve"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("axe mcp serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        Raw {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message on stdout, which must be JSON-RPC.
    fn recv(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a line from axe mcp serve");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        v
    }

    /// Sends a request and returns its answer.
    fn ask(&mut self, id: u64, method: &str, params: Value) -> Value {
        let m = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(&m.to_string());
        let v = self.recv();
        assert_eq!(v["id"], id, "{v}");
        v
    }

    fn initialize(&mut self, version: &str) -> Value {
        let params = json!({"protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}});
        let v = self.ask(1, "initialize", params);
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        v
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn helper_home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home
}

#[test]
fn a_malformed_line_is_a_parse_error_and_the_server_goes_on() {
    let home = helper_home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    let mut s = Raw::start(&home, &fake, &[]);
    s.send("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
    let v = s.recv();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert_eq!(v["id"], Value::Null);
    s.send("[1, 2]");
    assert_eq!(s.recv()["error"]["code"], -32600);
    s.send("\u{1b}[31m not json at all \u{0}");
    assert_eq!(s.recv()["error"]["code"], -32700);
    // A line over 16 MiB is skipped to its end, never held.
    s.send(&format!("{{\"task\": \"{}\"}}", "x".repeat(17 << 20)));
    let v = s.recv();
    assert_eq!(v["error"]["code"], -32700, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("over"));
    // Deep nesting is an answer, not a crash: JSON, but no message.
    s.send(&format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)));
    assert_eq!(s.recv()["error"]["code"], -32600);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    s.send(&format!(
        r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"helper","arguments":{{"task":{deep}}}}}}}"#
    ));
    let v = s.recv();
    assert_eq!(v["id"], 8, "{v}");
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert_eq!(s.ask(7, "ping", json!({}))["result"], json!({}));
}

#[test]
fn the_revision_is_negotiated_and_an_unknown_method_is_not_found() {
    let home = helper_home();
    let fake = FakeServer::json(200, &openai_text("x", 1, 1));
    for (asked, got) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let mut s = Raw::start(&home, &fake, &[]);
        let v = s.initialize(asked);
        assert_eq!(v["result"]["protocolVersion"], got, "{v}");
        assert_eq!(
            v["result"]["capabilities"]["tools"],
            json!({"listChanged": false})
        );
    }
    let mut s = Raw::start(&home, &fake, &[]);
    s.initialize("2025-06-18");
    let v = s.ask(2, "resources/list", json!({}));
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let v = s.ask(
        3,
        "tools/call",
        json!({"name": "nobody", "arguments": {"task": "x"}}),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("nobody"));
    // Up to 2025-06-18, arguments that do not match are -32602 ...
    let v = s.ask(4, "tools/call", json!({"name": "helper", "arguments": {}}));
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let v = s.ask(
        5,
        "tools/call",
        json!({"name": "helper", "arguments": "task"}),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    // ... from 2025-11-25 an error result the model can read (SEP-1303).
    let mut s = Raw::start(&home, &fake, &[]);
    s.initialize("2025-11-25");
    let v = s.ask(
        2,
        "tools/call",
        json!({"name": "helper", "arguments": {"task": 3}}),
    );
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("\"task\""), "{text}");
    assert!(fake.requests().is_empty(), "no run for a call refused");
}

#[test]
fn beyond_max_concurrent_a_call_is_told_busy_and_stdins_end_cancels_the_rest() {
    let home = helper_home();
    // One piece of text, then keep-alives for as long as anyone listens:
    // a run that only a cancel ends (seen at the stream's next piece).
    let first = sse(&[(
        None,
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Wa"}, "finish_reason": null}]}),
    )]);
    let fake = FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&first, 1024),
        Step::Forever(": keep-alive\n\n".into()),
    ])]);
    let mut s = Raw::start(&home, &fake, &["--max-concurrent", "1", "--timeout", "120"]);
    s.initialize("2025-11-25");
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "helper", "arguments": {"task": "Wait."}}})
        .to_string()
    };
    s.send(&call(2));
    fake.wait_for_requests(1);
    s.send(&call(3));
    let v = s.recv();
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("busy"), "{text}");
    // stdin ends: the running call is cancelled and the server exits,
    // long before the call's two minutes.
    let started = Instant::now();
    drop(s.stdin.take());
    let until = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break Some(st);
        }
        if Instant::now() > until {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("axe mcp serve did not end after stdin did");
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn a_call_of_a_million_arguments_is_refused_without_holding_them() {
    use std::fmt::Write as _;
    let home = helper_home();
    let mut call = String::from(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"helper","arguments":{"task":"t""#,
    );
    // 1.2 million keys: 14 MB, under the 16 MiB a line may be.
    for i in 0..1_200_000 {
        write!(call, r#","k{i}":0"#).unwrap();
    }
    call.push_str("}}}");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": "2025-06-18", "capabilities": {},
         "clientInfo": {"name": "raw", "version": "0"}}});
    let input = home.dir.path().join("input.jsonl");
    let lines = [
        init.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        call,
    ];
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let mut cmd = home.axe();
    cmd.args(["mcp", "serve"])
        .stdin(std::fs::File::open(&input).unwrap());
    let (out, peak) = with_peak_rss(&mut cmd);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let answer: Value = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["id"] == 2)
        .expect("an answer to the call");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 256 keys"),
        "{answer}"
    );
    // Every key kept took 193 MB for 1.6 million; the line itself is 14.
    // (ru_maxrss: KiB)
    eprintln!("peak RSS: {} MiB", peak >> 10);
    assert!(peak < 100 << 10, "peak RSS {} MiB", peak >> 10);
}
