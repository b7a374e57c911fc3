//! Test harness shared by the integration tests: a fake provider (a real
//! HTTP/1.1 server on 127.0.0.1 that records every request and answers from
//! a script) and a temporary config home for driving the real `axe` binary.
//!
//! The server is written here on `std::net` rather than taken from
//! tiny_http: tiny_http 0.12 serves connections from a task pool that, in a
//! burst of new connections, can queue one behind threads that are busy with
//! kept-alive connections (its `spawn` counts a just-woken thread as still
//! waiting). A fan-out of N sub-agents then never has N requests in flight
//! at the server, and the concurrency tests stall. Here every connection has
//! its own thread, `TCP_NODELAY` is set, and each response is one write.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// One request the fake provider received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }
}

/// What the fake provider answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `status` with a body, content-type application/json.
    Json(u16, String),
    /// `status` with a body, a content type of your choosing, and extra headers.
    Raw {
        status: u16,
        content_type: String,
        body: String,
        headers: Vec<(String, String)>,
    },
    /// Accept the request and never answer (held for a minute).
    Hang,
    /// Wait, then answer.
    Delay(Duration, Box<Reply>),
    /// Send `status`'s head with a content-length 1 KiB larger than
    /// `partial_body`, then `partial_body`, then close the connection: a
    /// server that dies in the middle of its answer.
    CloseMidBody { status: u16, partial_body: String },
    /// A 200 JSON answer of `bytes` bytes in all, streamed in pieces:
    /// spaces, then `tail` (so the whole body, read to the end, would be
    /// `tail` as valid JSON). Stops quietly when the client hangs up.
    Huge { bytes: u64, tail: String },
}

/// A fake provider on 127.0.0.1. Every connection is served on its own
/// thread, keep-alive included; a request's handler runs on that thread.
pub struct FakeServer {
    pub url: String,
    addr: std::net::SocketAddr,
    listener: Arc<std::net::TcpListener>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    max_in_flight: Arc<AtomicUsize>,
    connections: Arc<AtomicUsize>,
}

type Handler = dyn Fn(&Recorded) -> Reply + Send + Sync;

/// What every connection thread shares.
struct Shared {
    handler: Box<Handler>,
    requests: Arc<Mutex<Vec<Recorded>>>,
    in_flight: AtomicUsize,
    max_in_flight: Arc<AtomicUsize>,
}

impl FakeServer {
    /// Replies are used in order; the last one repeats.
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        assert!(
            !replies.is_empty(),
            "a fake server needs at least one reply"
        );
        let next = AtomicUsize::new(0);
        FakeServer::route(move |_| {
            let i = next.fetch_add(1, Ordering::SeqCst);
            replies[i.min(replies.len() - 1)].clone()
        })
    }

    /// Each request is answered with what `handler` returns for it. The
    /// handler runs on the connection's own thread, so it may block (at a
    /// [`Gate`], say) without holding up other connections.
    pub fn route<F>(handler: F) -> FakeServer
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeServer::serving(handler, None)
    }

    /// [`FakeServer::route`] with `threads` connection threads started
    /// before any client connects, each taking the next connection when it
    /// is free: for the bench, so that a burst of hundreds of connections
    /// is not served at the pace one accepting thread can start threads
    /// (on two cores, among hundreds of busy ones). At most `threads`
    /// connections are served at once; more wait to be accepted.
    pub fn route_prestarted<F>(threads: usize, handler: F) -> FakeServer
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        FakeServer::serving(handler, Some(threads))
    }

    fn serving<F>(handler: F, prestarted: Option<usize>) -> FakeServer
    where
        F: Fn(&Recorded) -> Reply + Send + Sync + 'static,
    {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        deepen_backlog(&listener);
        let addr = listener.local_addr().expect("local address");
        let listener = Arc::new(listener);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let max_in_flight = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(AtomicUsize::new(0));
        let shared = Arc::new(Shared {
            handler: Box::new(handler),
            requests: requests.clone(),
            in_flight: AtomicUsize::new(0),
            max_in_flight: max_in_flight.clone(),
        });
        let accept = {
            let (listener, stop, connections) =
                (listener.clone(), stop.clone(), connections.clone());
            move || -> Option<std::net::TcpStream> {
                loop {
                    let accepted = listener.accept();
                    if stop.load(Ordering::SeqCst) {
                        return None;
                    }
                    match accepted {
                        Ok((stream, _)) => {
                            connections.fetch_add(1, Ordering::SeqCst);
                            return Some(stream);
                        }
                        // Out of descriptors, say: do not spin.
                        Err(_) => thread::sleep(Duration::from_millis(10)),
                    }
                }
            }
        };
        match prestarted {
            None => {
                thread::spawn(move || {
                    while let Some(stream) = accept() {
                        let shared = shared.clone();
                        thread::spawn(move || serve(stream, &shared));
                    }
                });
            }
            Some(threads) => {
                let accept = Arc::new(accept);
                for _ in 0..threads {
                    let (accept, shared) = (accept.clone(), shared.clone());
                    thread::spawn(move || {
                        while let Some(stream) = accept() {
                            serve(stream, &shared);
                        }
                    });
                }
            }
        }
        FakeServer {
            url: format!("http://{addr}"),
            addr,
            listener,
            stop,
            requests,
            max_in_flight,
            connections,
        }
    }

    /// A server answering every request with `status` and `body` as JSON.
    pub fn json(status: u16, body: &str) -> FakeServer {
        FakeServer::start(vec![Reply::Json(status, body.to_string())])
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// The only request received (panics if there was not exactly one).
    pub fn only_request(&self) -> Recorded {
        let r = self.requests();
        assert_eq!(r.len(), 1, "expected exactly one request, got {}", r.len());
        r[0].clone()
    }

    /// The most requests that were being answered at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight.load(Ordering::SeqCst)
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake every thread waiting to accept, so that it sees the flag.
        wake_acceptors(&self.listener);
        let _ = std::net::TcpStream::connect(self.addr);
    }
}

/// Shutting a listening socket down makes every accept() waiting on it
/// return (Linux).
#[cfg(target_os = "linux")]
fn wake_acceptors(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn shutdown(fd: i32, how: i32) -> i32;
    }
    // SAFETY: the fd is a valid socket owned by `listener`; shutdown only
    // changes its state. 2 is SHUT_RDWR.
    unsafe {
        shutdown(listener.as_raw_fd(), 2);
    }
}

#[cfg(not(target_os = "linux"))]
fn wake_acceptors(_: &std::net::TcpListener) {}

/// Raises the listen backlog from std's 128 to the kernel's limit. A 256-way
/// fan-out connects all at once; with 128 the overflowing SYNs are dropped
/// and retried a second later, and the fake provider, not axe, would be
/// what the benchmark measures. Linux takes a second `listen` on a
/// listening socket as a new backlog.
#[cfg(target_os = "linux")]
fn deepen_backlog(listener: &std::net::TcpListener) {
    use std::os::fd::AsRawFd;
    unsafe extern "C" {
        fn listen(fd: i32, backlog: i32) -> i32;
    }
    // SAFETY: the fd is a valid listening socket owned by `listener`, and
    // listen() only changes its backlog.
    unsafe {
        listen(listener.as_raw_fd(), 4096);
    }
}

#[cfg(not(target_os = "linux"))]
fn deepen_backlog(_: &std::net::TcpListener) {}

/// Serves one connection: requests one after another until the client
/// closes it (or sends something that is not HTTP/1.1 with a length).
fn serve(stream: std::net::TcpStream, shared: &Shared) {
    use std::io::BufRead;
    let _ = stream.set_nodelay(true);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut writer = write_half;
    let mut reader = std::io::BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        match reader.read_line(&mut request_line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or("").to_string();
        let path = parts.next().unwrap_or("").to_string();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        // Only bodies with a content-length are understood; anything else
        // would put the connection out of step, so it is refused and closed.
        if headers
            .iter()
            .any(|(k, _)| k == "transfer-encoding" || k == "expect")
        {
            let _ = write_response(&mut writer, 501, "text/plain", "not supported", &[]);
            return;
        }
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
            return;
        }
        let recorded = Recorded {
            method,
            path,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        };
        shared.requests.lock().unwrap().push(recorded.clone());
        let now = shared.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        shared.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let reply = (shared.handler)(&recorded);
        let keep = answer(&mut writer, reply);
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep {
            return;
        }
    }
}

/// Writes `reply`; false when the connection is to be closed.
fn answer(out: &mut std::net::TcpStream, reply: Reply) -> bool {
    use std::io::Write;
    let written = match reply {
        Reply::Json(status, body) => write_response(out, status, "application/json", &body, &[]),
        Reply::Raw {
            status,
            content_type,
            body,
            headers,
        } => write_response(out, status, &content_type, &body, &headers),
        Reply::Hang => {
            thread::sleep(Duration::from_secs(60));
            false
        }
        Reply::Delay(d, inner) => {
            thread::sleep(d);
            return answer(out, *inner);
        }
        Reply::CloseMidBody {
            status,
            partial_body,
        } => {
            let head = format!(
                "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                if status < 400 { "OK" } else { "Error" },
                partial_body.len() + 1024
            );
            let mut bytes = head.into_bytes();
            bytes.extend_from_slice(partial_body.as_bytes());
            let _ = out.write_all(&bytes);
            let _ = out.flush();
            let _ = out.shutdown(std::net::Shutdown::Both);
            false
        }
        Reply::Huge { bytes, tail } => {
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {bytes}\r\n\r\n"
            );
            if out.write_all(head.as_bytes()).is_err() {
                return false;
            }
            let padding = [b' '; 64 * 1024];
            let mut left = bytes.saturating_sub(tail.len() as u64);
            while left > 0 {
                let n = left.min(padding.len() as u64) as usize;
                if out.write_all(&padding[..n]).is_err() {
                    // The client hung up (as it should, past its limit).
                    return false;
                }
                left -= n as u64;
            }
            out.write_all(tail.as_bytes()).is_ok()
        }
    };
    written && out.flush().is_ok()
}

/// One response in one write (so no delayed-ACK stall between head and body).
fn write_response(
    out: &mut std::net::TcpStream,
    status: u16,
    content_type: &str,
    body: &str,
    headers: &[(String, String)],
) -> bool {
    use std::io::Write;
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n",
        if status < 400 { "OK" } else { "Error" },
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    out.write_all(&bytes).is_ok()
}

/// A barrier with a bounded wait: [`Gate::arrive`] returns `true` once `n`
/// callers have arrived, or `false` when `timeout` passes first. A test that
/// needs N requests in flight together lets each one arrive; a sequential
/// implementation then fails in bounded time instead of hanging.
pub struct Gate {
    n: usize,
    arrived: Mutex<usize>,
    cv: std::sync::Condvar,
    /// Set when any arrival timed out.
    pub timed_out: std::sync::atomic::AtomicBool,
}

impl Gate {
    pub fn new(n: usize) -> Gate {
        Gate {
            n,
            arrived: Mutex::new(0),
            cv: std::sync::Condvar::new(),
            timed_out: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn arrive(&self, timeout: Duration) -> bool {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.cv.notify_all();
        let (guard, result) = self
            .cv
            .wait_timeout_while(arrived, timeout, |a| *a < self.n)
            .unwrap();
        drop(guard);
        if result.timed_out() {
            self.timed_out.store(true, Ordering::SeqCst);
            false
        } else {
            true
        }
    }

    pub fn arrived(&self) -> usize {
        *self.arrived.lock().unwrap()
    }
}

// ---------------------------------------------------------------------------
// Real provider response shapes (as the APIs document them).
// ---------------------------------------------------------------------------

pub fn anthropic_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
    .to_string()
}

pub fn openai_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}

pub fn ollama_text(text: &str, input: u64, output: u64) -> String {
    serde_json::json!({
        "model": "llama3.1",
        "created_at": "2026-11-23T10:00:00.000000Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": "stop",
        "done": true,
        "total_duration": 4_883_583_458u64,
        "load_duration": 1_334_875,
        "prompt_eval_count": input,
        "prompt_eval_duration": 342_546_000,
        "eval_count": output,
        "eval_duration": 4_535_599_000u64
    })
    .to_string()
}

/// An HTML page served with `status` (a proxy's error page, a login page).
pub fn html(status: u16, page: &str) -> Reply {
    Reply::Raw {
        status,
        content_type: "text/html".into(),
        body: page.into(),
        headers: vec![],
    }
}

/// nginx's own 502 page, as a reverse proxy in front of a provider sends it.
pub const NGINX_502: &str = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n";

/// A captive portal / login page.
pub const LOGIN_PAGE: &str = "<!DOCTYPE html>\n<html lang=\"en\">\n<head><title>Sign in</title></head>\n<body><form action=\"/login\"></form></body>\n</html>\n";

/// A tool call for the response builders: id, tool name, arguments.
pub type Call<'a> = (&'a str, &'a str, serde_json::Value);

/// A `call_agent` call's arguments.
pub fn delegate(agent: &str, task: &str) -> serde_json::Value {
    serde_json::json!({"agent": agent, "task": task})
}

/// An Anthropic response with `text` (omitted when empty) and `tool_use` blocks.
pub fn anthropic_tool_use(text: &str, calls: &[Call], input: u64, output: u64) -> String {
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(serde_json::json!({"type": "text", "text": text}));
    }
    for (id, name, args) in calls {
        content
            .push(serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": args}));
    }
    serde_json::json!({
        "id": "msg_01Aq9w938a90dw8q",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use",
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output}
    })
    .to_string()
}

/// An OpenAI response whose message has `tool_calls` (arguments as a JSON
/// string, as the API sends them) and null content.
pub fn openai_tool_calls(calls: &[Call], input: u64, output: u64) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, name, args)| {
            serde_json::json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args.to_string()}
            })
        })
        .collect();
    serde_json::json!({
        "id": "chatcmpl-abc123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-2024-08-06",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": null, "tool_calls": calls, "refusal": null},
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
    })
    .to_string()
}

/// An Ollama response whose message has `tool_calls` (object arguments, no ids).
pub fn ollama_tool_calls(calls: &[Call], input: u64, output: u64) -> String {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(_, name, args)| serde_json::json!({"function": {"name": name, "arguments": args}}))
        .collect();
    serde_json::json!({
        "model": "llama3.1",
        "created_at": "2026-11-23T10:00:00.000000Z",
        "message": {"role": "assistant", "content": "", "tool_calls": calls},
        "done_reason": "stop",
        "done": true,
        "prompt_eval_count": input,
        "eval_count": output
    })
    .to_string()
}

impl Recorded {
    /// The system prompt, in any of the three wire formats.
    pub fn system_prompt(&self) -> String {
        let body = self.json();
        if let Some(s) = body["system"].as_str() {
            return s.to_string();
        }
        match body["messages"].get(0) {
            Some(m) if m["role"] == "system" => m["content"].as_str().unwrap_or("").to_string(),
            _ => String::new(),
        }
    }

    /// Which agent sent the request, when every agent's system prompt
    /// starts `You are <name>.` (as the sub-agent tests and the bench write
    /// them); `?` otherwise.
    pub fn who(&self) -> String {
        self.system_prompt()
            .strip_prefix("You are ")
            .and_then(|s| s.split_once('.'))
            .map_or("?", |(name, _)| name)
            .to_string()
    }

    /// The messages array of the request body.
    pub fn messages(&self) -> Vec<serde_json::Value> {
        self.json()["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// The text of the first user message, in any of the three wire formats.
    pub fn first_user_text(&self) -> String {
        self.messages()
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }

    /// The `role: tool` messages of an OpenAI or Ollama request, in order.
    pub fn tool_messages(&self) -> Vec<serde_json::Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["role"] == "tool")
            .collect()
    }

    /// The `tool_result` blocks of an Anthropic request, in order.
    pub fn anthropic_tool_results(&self) -> Vec<serde_json::Value> {
        self.messages()
            .into_iter()
            .filter(|m| m["role"] == "user")
            .filter_map(|m| m["content"].as_array().cloned())
            .flatten()
            .filter(|b| b["type"] == "tool_result")
            .collect()
    }

    /// The contents of every tool result in the request, in order, in any
    /// of the three wire formats.
    pub fn tool_result_texts(&self) -> Vec<String> {
        let mut results = self.tool_messages();
        results.extend(self.anthropic_tool_results());
        results
            .iter()
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// Whether the last message carries tool results (a later turn).
    pub fn has_tool_results(&self) -> bool {
        self.messages().iter().any(|m| {
            m["role"] == "tool"
                || m["content"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_result"))
        })
    }
}

// ---------------------------------------------------------------------------
// A config home for running the binary.
// ---------------------------------------------------------------------------

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "axe-test-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p.canonicalize().unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `XDG_CONFIG_HOME` (and `HOME`) in a temp dir; the config dir is `<home>/axe`.
pub struct Home {
    pub dir: TempDir,
}

impl Home {
    pub fn new() -> Home {
        let dir = TempDir::new("home");
        std::fs::create_dir_all(dir.path().join("axe/agents")).unwrap();
        Home { dir }
    }

    pub fn config_dir(&self) -> PathBuf {
        self.dir.path().join("axe")
    }

    /// Writes `<config>/agents/<name>.toml`.
    pub fn agent(&self, name: &str, toml: &str) -> PathBuf {
        let p = self
            .config_dir()
            .join("agents")
            .join(format!("{name}.toml"));
        std::fs::write(&p, toml).unwrap();
        p
    }

    /// Writes agent `name` on `model` whose system prompt is `You are
    /// <name>.` (what [`Recorded::who`] reads back), with `extra` appended
    /// (sub_agents, [sub_agents_config], ...).
    pub fn named_agent(&self, name: &str, model: &str, extra: &str) -> PathBuf {
        self.agent(
            name,
            &format!(
                "name = \"{name}\"\nmodel = \"{model}\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        )
    }

    /// Writes `<config>/config.toml`.
    pub fn config(&self, toml: &str) {
        std::fs::write(self.config_dir().join("config.toml"), toml).unwrap();
    }

    /// The `axe` binary with this home and a clean environment: no keys, no
    /// base URLs, no editor from the developer's shell. Stdin is null.
    pub fn axe(&self) -> Command {
        self.command(env!("CARGO_BIN_EXE_axe"))
    }

    /// [`Home::axe`] for any binary of the same CLI (the bench measures
    /// others too).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env("XDG_CONFIG_HOME", self.dir.path())
            .env("HOME", self.dir.path())
            .env_remove("XDG_DATA_HOME")
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for var in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "OLLAMA_API_KEY",
            "AXE_ANTHROPIC_BASE_URL",
            "AXE_OPENAI_BASE_URL",
            "AXE_OLLAMA_BASE_URL",
            "OLLAMA_HOST",
            "VISUAL",
            "EDITOR",
            // ureq honours proxy variables: loopback traffic must not go there.
            "ALL_PROXY",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "NO_PROXY",
            "all_proxy",
            "http_proxy",
            "https_proxy",
            "no_proxy",
        ] {
            c.env_remove(var);
        }
        c
    }

    /// Runs `axe <args>` and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.axe().args(args).output().expect("run axe")
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

// ---------------------------------------------------------------------------
// The three wire formats, for tests that run one case on each.
// ---------------------------------------------------------------------------

/// A provider, for tests that run one case on each wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum P {
    Anthropic,
    OpenAi,
    Ollama,
}

pub const PROVIDERS: [P; 3] = [P::Anthropic, P::OpenAi, P::Ollama];

impl P {
    pub fn name(self) -> &'static str {
        match self {
            P::Anthropic => "anthropic",
            P::OpenAi => "openai",
            P::Ollama => "ollama",
        }
    }

    pub fn model(self) -> &'static str {
        match self {
            P::Anthropic => "anthropic/claude-sonnet-4-5",
            P::OpenAi => "openai/gpt-4o",
            P::Ollama => "ollama/llama3.1",
        }
    }

    /// A successful text answer.
    pub fn text(self, text: &str) -> String {
        match self {
            P::Anthropic => anthropic_text(text, 5, 2),
            P::OpenAi => openai_text(text, 5, 2),
            P::Ollama => ollama_text(text, 5, 2),
        }
    }

    /// A well-formed answer calling `calls`.
    pub fn tool_calls(self, calls: &[Call]) -> String {
        match self {
            P::Anthropic => anthropic_tool_use("", calls, 5, 2),
            P::OpenAi => openai_tool_calls(calls, 5, 2),
            P::Ollama => ollama_tool_calls(calls, 5, 2),
        }
    }

    /// The healthy provider of the parent of a sub-agent on `self`.
    pub fn other(self) -> P {
        if self == P::OpenAi {
            P::Anthropic
        } else {
            P::OpenAi
        }
    }

    /// Whether tool calls and results carry ids on this wire (Ollama's do not).
    pub fn has_ids(self) -> bool {
        self != P::Ollama
    }

    /// Tool-call arguments as this wire sends them: a JSON string for
    /// OpenAI, an object for the others.
    pub fn wire_args(self, args: serde_json::Value) -> serde_json::Value {
        match self {
            P::OpenAi => serde_json::Value::String(args.to_string()),
            _ => args,
        }
    }

    /// `AXE_<PROVIDER>_BASE_URL`.
    pub fn base_url_var(self) -> String {
        format!("AXE_{}_BASE_URL", self.name().to_ascii_uppercase())
    }

    /// A text answer with `finish`/`stop_reason`/`done_reason` set to `reason`.
    pub fn text_stopped(self, text: &str, reason: &str) -> String {
        let mut v: serde_json::Value = serde_json::from_str(&self.text(text)).unwrap();
        match self {
            P::Anthropic => v["stop_reason"] = reason.into(),
            P::OpenAi => v["choices"][0]["finish_reason"] = reason.into(),
            P::Ollama => v["done_reason"] = reason.into(),
        }
        v.to_string()
    }
}

/// What [`run_within`] saw.
pub struct Bounded {
    pub output: Output,
    pub took: Duration,
    /// The child was still running at the limit and was killed.
    pub killed: bool,
}

/// Runs `cmd` (its stdout and stderr piped and collected) and kills it if it
/// has not ended within `limit`, so that a hang fails a test in bounded time.
pub fn run_within(cmd: &mut Command, limit: Duration) -> Bounded {
    let started = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn axe");
    fn collect(mut r: impl std::io::Read + Send + 'static) -> thread::JoinHandle<Vec<u8>> {
        thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    }
    let out = collect(child.stdout.take().unwrap());
    let err = collect(child.stderr.take().unwrap());
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for axe") {
            break status;
        }
        if started.elapsed() > limit {
            killed = true;
            let _ = child.kill();
            break child.wait().expect("wait for axe");
        }
        thread::sleep(Duration::from_millis(10));
    };
    let took = started.elapsed();
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    Bounded {
        output,
        took,
        killed,
    }
}
