//! The MCP client against the protocol's own reference servers (design
//! §9.2): `@modelcontextprotocol/server-everything` and `mcp-server-time`
//! over stdio, and small scripted servers for what the reference servers
//! never do (pages of tools, garbage, a line over the cap).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Served, alive, everything, served, time_server};
use axe::mcp::{Server, ServerFile};
use serde_json::json;

fn start(name: &str, command: &str, args: &[&str], timeout: Option<i64>) -> Server {
    let config = ServerFile {
        name: name.into(),
        command: Some(command.into()),
        args: args.iter().map(|a| a.to_string()).collect(),
        timeout,
        ..ServerFile::default()
    }
    .validate("test")
    .expect("valid server");
    let log: axe::mcp::rpc::Log =
        Arc::new(|l: &axe::mcp::rpc::Note| eprintln!("{}", l.verbose_line()));
    let deadline = Instant::now() + Duration::from_secs(60);
    Server::start(&config, Path::new("."), log, deadline).expect("the server starts")
}

fn everything_server(timeout: Option<i64>) -> Option<Server> {
    let js = everything()?;
    let js = js.to_string_lossy().into_owned();
    Some(start("ev", "node", &[&js, "stdio"], timeout))
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

#[test]
fn server_everything_lists_its_tools_and_answers_echo_and_sum() {
    let Some(server) = everything_server(None) else {
        return;
    };
    assert!(["2025-11-25", "2025-06-18", "2025-03-26"].contains(&server.version.as_str()));
    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
    for want in ["echo", "get-sum", "trigger-long-running-operation"] {
        assert!(names.contains(&want), "{names:?}");
    }
    let echo = server.tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.schema["type"], "object");
    assert!(
        echo.schema["properties"]["message"].is_object(),
        "{}",
        echo.schema
    );

    let out = server.call("echo", json!({"message": "hello mcp"}), soon());
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.text, "Echo: hello mcp");
    let out = server.call("get-sum", json!({"a": 2, "b": 40}), soon());
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.contains("42"), "{out:?}");
}

#[test]
fn a_tool_error_from_the_server_is_an_error_result() {
    let Some(server) = everything_server(None) else {
        return;
    };
    let out = server.call("get-sum", json!({"a": "not a number"}), soon());
    assert!(out.is_error, "{out:?}");
    let out = server.call("no-such-tool", json!({}), soon());
    assert!(out.is_error, "{out:?}");
}

#[test]
fn structured_content_and_images_become_text() {
    let Some(server) = everything_server(None) else {
        return;
    };
    let out = server.call("get-tiny-image", json!({}), soon());
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.contains("[image: image/png, about"), "{out:?}");
    let out = server.call(
        "get-structured-content",
        json!({"location": "New York"}),
        soon(),
    );
    assert!(!out.is_error, "{out:?}");
    assert!(out.text.contains("temperature"), "{out:?}");
}

#[test]
fn a_long_running_tool_is_cut_at_its_deadline_and_the_server_goes_on() {
    let Some(server) = everything_server(Some(1)) else {
        return;
    };
    let started = Instant::now();
    let out = server.call(
        "trigger-long-running-operation",
        json!({"duration": 30, "steps": 3}),
        soon(),
    );
    let took = started.elapsed();
    assert!(out.is_error, "{out:?}");
    assert!(
        out.text.contains("did not answer before its deadline"),
        "{out:?}"
    );
    // Cut at its 1 s, not at the call's 30 s or the operation's; the margin
    // is for a loaded machine.
    assert!(took < Duration::from_secs(10), "{took:?}");
    // Cancelled, not broken: the next call is answered.
    let out = server.call("echo", json!({"message": "after"}), soon());
    assert_eq!(out.text, "Echo: after", "{out:?}");
}

#[test]
fn a_server_killed_in_the_middle_of_a_call_fails_that_call_at_once() {
    let Some(server) = everything_server(None) else {
        return;
    };
    let pid = server.pid().unwrap();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: a signal to the test's own server process.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let started = Instant::now();
    let out = server.call(
        "trigger-long-running-operation",
        json!({"duration": 20, "steps": 2}),
        soon(),
    );
    killer.join().unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(out.text.contains("exited (killed by signal 9)"), "{out:?}");
    // At once, not when the 20 s operation would have ended.
    assert!(started.elapsed() < Duration::from_secs(10));
    let out = server.call("echo", json!({"message": "x"}), soon());
    assert!(out.is_error && out.text.contains("exited"), "{out:?}");
}

#[test]
fn parallel_calls_to_the_reference_server_each_get_their_answer() {
    let Some(server) = everything_server(None) else {
        return;
    };
    let server = Arc::new(server);
    let started = Instant::now();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let server = server.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    server.call(
                        "trigger-long-running-operation",
                        json!({"duration": 1, "steps": 1}),
                        soon(),
                    )
                } else {
                    server.call("echo", json!({"message": format!("m{i}")}), soon())
                }
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert!(!out.is_error, "{out:?}");
        if i % 2 == 1 {
            assert_eq!(out.text, format!("Echo: m{i}"));
        }
    }
    // A guard against a hang only; that the calls overlap is the next
    // test's, by a barrier at the server.
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn parallel_calls_to_one_server_are_in_flight_together() {
    // Each call waits at the server until four are there at once (or 20 s
    // pass): calls sent one after another would each answer "alone".
    let server = Arc::new(scripted(
        r#"    import threading
    if "lock" not in globals():
        lock, met = threading.Lock(), threading.Barrier(4, timeout=20)
    def answer(m):
        try:
            met.wait()
            text = "together"
        except threading.BrokenBarrierError:
            text = "alone"
        with lock:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": text}]}})
    if m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "gate", "inputSchema": {"type": "object"}}]}})
    else:
        threading.Thread(target=answer, args=(m,)).start()"#,
    ));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let server = server.clone();
            std::thread::spawn(move || server.call("gate", json!({}), soon()))
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.text, "together", "{out:?}");
    }
}

#[test]
fn a_stopped_server_leaves_no_process() {
    let Some(server) = everything_server(None) else {
        return;
    };
    let pid = server.pid().unwrap();
    assert!(alive(pid));
    server.stop();
    assert!(!alive(pid), "the server {pid} outlived stop");
}

#[test]
fn the_python_time_server_answers() {
    let Some(bin) = time_server() else { return };
    let server = start("time", &bin.to_string_lossy(), &[], None);
    assert!(server.tools.iter().any(|t| t.name == "get_current_time"));
    let out = server.call("get_current_time", json!({"timezone": "UTC"}), soon());
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.text.contains("\"timezone\"") && out.text.contains("UTC"),
        "{out:?}"
    );
    let out = server.call("get_current_time", json!({"timezone": "Not/AZone"}), soon());
    assert!(out.is_error, "{out:?}");
}

/// A stdio server in Python reading `script` (its requests' handling).
fn scripted(script: &str) -> Server {
    let program = format!(
        r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    if m["method"] == "initialize":
        send({{"jsonrpc": "2.0", "id": m["id"], "result": {{"protocolVersion": "2025-06-18", "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "scripted", "version": "1"}}}}}})
        continue
    if m["method"] == "server/discover":
        send({{"jsonrpc": "2.0", "id": m["id"], "error": {{"code": -32601, "message": "Method not found"}}}})
        continue
{script}
"#
    );
    start("s", "python3", &["-c", &program], Some(5))
}

#[test]
fn every_page_of_tools_is_listed() {
    let server = scripted(
        r#"    if m["method"] == "tools/list":
        c = int(m["params"].get("cursor", "0"))
        page = {"tools": [{"name": "t%d" % c, "inputSchema": {"type": "object"}}]}
        if c < 2: page["nextCursor"] = str(c + 1)
        send({"jsonrpc": "2.0", "id": m["id"], "result": page})"#,
    );
    let names: Vec<&str> = server.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t0", "t1", "t2"]);
}

#[test]
fn garbage_and_a_line_over_the_cap_fail_the_call_clearly() {
    let server = scripted(
        r#"    if m["method"] == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}})
    elif m["params"]["name"] == "garbage":
        sys.stdout.write("this is not json\n"); sys.stdout.flush()
    elif m["params"]["name"] == "huge":
        sys.stdout.write("x" * (17 << 20) + "\n"); sys.stdout.flush()
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "fine"}]}})"#,
    );
    let out = server.call("garbage", json!({}), soon());
    assert!(out.is_error && out.text.contains("not JSON-RPC"), "{out:?}");
    let out = server.call("huge", json!({}), soon());
    assert!(out.is_error && out.text.contains("over 16 MiB"), "{out:?}");
    let out = server.call("ok", json!({}), soon());
    assert_eq!(out.text, "fine", "{out:?}");
}

fn http_everything() -> Option<Served> {
    served("streamableHttp", "/mcp")
}

#[test]
fn streamable_http_lists_calls_in_parallel_and_ends_its_session() {
    let Some(http) = http_everything() else {
        return;
    };
    let config = ServerFile {
        name: "web".into(),
        url: Some(http.url.clone()),
        ..ServerFile::default()
    }
    .validate("test")
    .unwrap();
    let log: axe::mcp::rpc::Log =
        Arc::new(|l: &axe::mcp::rpc::Note| eprintln!("{}", l.verbose_line()));
    let server = Arc::new(Server::start(&config, Path::new("."), log, soon()).expect("starts"));
    assert!(server.tools.iter().any(|t| t.name == "echo"));
    let started = Instant::now();
    let handles: Vec<_> = (0..6)
        .map(|i| {
            let server = server.clone();
            std::thread::spawn(move || {
                if i % 2 == 0 {
                    server.call(
                        "trigger-long-running-operation",
                        json!({"duration": 3, "steps": 1}),
                        soon(),
                    )
                } else {
                    server.call("echo", json!({"message": format!("h{i}")}), soon())
                }
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let out = h.join().unwrap();
        assert!(!out.is_error, "{out:?}");
        if i % 2 == 1 {
            assert_eq!(out.text, format!("Echo: h{i}"));
        }
    }
    // Three three-second operations, one after another, would take 9 s.
    assert!(
        started.elapsed() < Duration::from_millis(6500),
        "{:?}",
        started.elapsed()
    );
    server.stop();
    let out = server.call("echo", json!({"message": "x"}), soon());
    assert!(out.is_error && out.text.contains("stopped"), "{out:?}");
}

#[test]
fn only_the_code_minus_32022_has_initialize_probed_again_not_its_text() {
    // A server that lets the first probe wait out its `timeout` (a slow
    // start), refuses `initialize` with -32603 whose message quotes
    // -32022, and answers a second probe as a server of the stateless era
    // would: the refusal is not the stateless era's (design §9.2), so axe
    // gives up with it rather than probing again.
    let program = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
probes = 0
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m: continue
    if m["method"] == "server/discover":
        probes += 1
        if probes > 1:
            send({"jsonrpc": "2.0", "id": m["id"], "result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}})
    elif m["method"] == "initialize":
        send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32603, "message": "internal: error -32022: quoted"}})
    else:
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": []}})
"#;
    let config = ServerFile {
        name: "q".into(),
        command: Some("python3".into()),
        args: vec!["-c".into(), program.into()],
        timeout: Some(1),
        ..ServerFile::default()
    }
    .validate("test")
    .expect("valid server");
    let log: axe::mcp::rpc::Log = Arc::new(|_: &axe::mcp::rpc::Note| {});
    let started = Server::start(&config, Path::new("."), log, soon());
    let err = started.err().expect("initialize was refused");
    assert!(
        err.contains("error -32603: internal: error -32022: quoted"),
        "{err}"
    );
}
