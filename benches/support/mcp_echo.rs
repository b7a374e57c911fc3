//! The MCP echo server the MCP bench talks to: the bench binary itself,
//! run again with [`FLAG`] as its first argument, speaking JSON-RPC lines
//! on its stdin and stdout. `echo` answers its `text` back, after
//! `sleep_ms` when given. One thread for all calls: a slow call waits in
//! a heap by the time it is due, the loop `poll`s its input until the
//! next due answer, and the answers due together leave in one write. So
//! the server's own part of 64 calls at once is a few microseconds a call
//! (no thread started, no interpreter), and what the bench measures is the
//! client's. It used to be a Python script doing the same, whose CPU for
//! the 64 was three times this one's (docs/contributing.md, the MCP
//! client's figures); and no `python3` is needed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The first argument that turns the bench binary into the echo server.
pub const FLAG: &str = "--mcp-echo-server";

/// Serves stdin and stdout until stdin closes.
pub fn serve() {
    let mut due: BinaryHeap<Reverse<(Instant, u64, String)>> = BinaryHeap::new();
    let (mut seq, mut buf, mut out) = (0u64, Vec::<u8>::new(), Vec::<u8>::new());
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let wait = due
            .peek()
            .map(|Reverse((at, _, _))| at.saturating_duration_since(Instant::now()));
        if readable(wait) {
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::read(0, chunk.as_mut_ptr().cast(), chunk.len()) };
            let Ok(n @ 1..) = usize::try_from(n) else {
                if n < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
                {
                    continue;
                }
                return;
            };
            buf.extend_from_slice(&chunk[..n]);
            let mut start = 0;
            while let Some(i) = buf[start..].iter().position(|&b| b == b'\n') {
                let line = &buf[start..start + i];
                start += i + 1;
                let Ok(m) = serde_json::from_slice::<Value>(line) else {
                    continue;
                };
                match handle(&m) {
                    Some((Some(after), answer)) => {
                        seq += 1;
                        due.push(Reverse((Instant::now() + after, seq, answer)));
                    }
                    Some((None, answer)) => push_line(&mut out, &answer),
                    None => {}
                }
            }
            buf.drain(..start);
        }
        let now = Instant::now();
        while due.peek().is_some_and(|Reverse((at, _, _))| *at <= now) {
            let Some(Reverse((_, _, answer))) = due.pop() else {
                break;
            };
            push_line(&mut out, &answer);
        }
        if !out.is_empty() {
            if !write_out(&out) {
                return;
            }
            out.clear();
        }
    }
}

/// Writes all of `bytes` to stdout (fd 1, unbuffered: the answers due
/// together are one write); false when it is closed.
fn write_out(mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        // SAFETY: writing a live buffer of its length.
        let n = unsafe { libc::write(1, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(n) {
            Ok(n) => bytes = &bytes[n..],
            Err(_) if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {
            }
            Err(_) => return false,
        }
    }
    true
}

fn push_line(out: &mut Vec<u8>, line: &str) {
    out.extend_from_slice(line.as_bytes());
    out.push(b'\n');
}

/// Whether stdin has input (or closed) before `wait` (none: no limit).
fn readable(wait: Option<Duration>) -> bool {
    let ms = wait.map_or(-1, |w| {
        // Rounded up: a poll that wakes early only loops again.
        libc::c_int::try_from(w.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX)
    });
    let mut pfd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd on the stack.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// The answer to a request, and how long it waits first; none for a
/// notification.
fn handle(m: &Value) -> Option<(Option<Duration>, String)> {
    let id = m.get("id")?;
    let result = match m["method"].as_str().unwrap_or("") {
        "initialize" => json!({"protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "1"}}),
        "tools/list" => json!({"tools": [{"name": "echo", "description": "echo",
            "inputSchema": {"type": "object"}}]}),
        "tools/call" => {
            let args = &m["params"]["arguments"];
            let text = args["text"].as_str().unwrap_or("");
            let answer = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": text}]}});
            let after = args["sleep_ms"].as_u64().map(Duration::from_millis);
            return Some((after, answer.to_string()));
        }
        _ => {
            let error = json!({"code": -32601, "message": "no such method"});
            return Some((
                None,
                json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string(),
            ));
        }
    };
    Some((
        None,
        json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
    ))
}
