//! JSON-RPC 2.0 as an MCP client speaks it (design §11.2): requests waiting
//! for their answers by id, each until its own deadline, and what to do
//! with each message a server sends — a response handed to its waiter, a
//! server's request answered (`ping`; method not found for sampling, roots
//! and elicitation), a log notification passed to the log.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};

/// Where what a server says beside its answers goes (`--verbose` and the
/// trace): its log messages, its stderr, and what axe noticed about it.
pub type Log = Arc<dyn Fn(&Note) + Send + Sync>;

/// One thing a server said or axe noticed about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Note<'a> {
    pub server: &'a str,
    /// `starting`, `ready`, `stderr`, `log <level>`, or `dropped`.
    pub kind: &'a str,
    /// One line.
    pub text: &'a str,
}

impl Note<'_> {
    /// The note as `--verbose` prints it: `[mcp] "git" stderr: ...`.
    pub fn verbose_line(&self) -> String {
        format!("[mcp] \"{}\" {}: {}", self.server, self.kind, self.text)
    }
}

/// What a request ended with, when it did not end with a result.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The server answered with a JSON-RPC error.
    Rpc(i64, String),
    /// No answer by the deadline.
    Timeout,
    /// The connection failed (the server exited, wrote garbage, ...).
    Broken(String),
}

impl Failure {
    pub fn describe(&self) -> String {
        match self {
            Failure::Rpc(code, msg) => format!("the server answered with error {code}: {msg}"),
            Failure::Timeout => "no answer before the deadline".into(),
            Failure::Broken(why) => why.clone(),
        }
    }
}

type Answer = Result<Value, Failure>;

/// Requests sent and not yet answered.
#[derive(Default)]
pub struct Pending {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    waiting: HashMap<u64, Sender<Answer>>,
    /// Set once the connection is gone: every later request fails with it.
    broken: Option<String>,
}

/// One request waiting for its answer.
pub struct Waiter {
    pub id: u64,
    rx: Receiver<Answer>,
}

impl Pending {
    /// A new id and the receiver its answer will arrive on.
    pub fn open(&self) -> Result<Waiter, Failure> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(why) = &s.broken {
            return Err(Failure::Broken(why.clone()));
        }
        s.next_id += 1;
        let id = s.next_id;
        let (tx, rx) = mpsc::channel();
        s.waiting.insert(id, tx);
        Ok(Waiter { id, rx })
    }

    /// Forgets request `id` (it timed out or could not be sent).
    pub fn close(&self, id: u64) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.waiting.remove(&id);
    }

    /// Hands `answer` to the request `id`; false when none waits for it.
    fn answer(&self, id: u64, answer: Answer) -> bool {
        let tx = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.waiting.remove(&id)
        };
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Fails every request waiting now with `why`.
    pub fn fail_all(&self, why: &str) {
        let waiting: Vec<_> = {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.waiting.drain().collect()
        };
        for (_, tx) in waiting {
            let _ = tx.send(Err(Failure::Broken(why.to_string())));
        }
    }

    /// The connection is gone: every request, now and later, fails with `why`.
    pub fn break_with(&self, why: &str) {
        {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.broken.get_or_insert_with(|| why.to_string());
        }
        self.fail_all(why);
    }
}

impl Waiter {
    /// The answer, or [`Failure::Timeout`] at `deadline`.
    pub fn wait(&self, deadline: Instant) -> Answer {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.rx.recv_timeout(left) {
            Ok(answer) => answer,
            Err(RecvTimeoutError::Timeout) => Err(Failure::Timeout),
            Err(RecvTimeoutError::Disconnected) => {
                Err(Failure::Broken("the connection was closed".into()))
            }
        }
    }
}

/// A request as one line of JSON.
pub fn request(id: u64, method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A notification as one line of JSON.
pub fn notification(method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// What the reader does with one message (an element of a batch included):
/// returns the reply to send back, if any. `server` names it in the log.
pub fn handle(msg: &Value, pending: &Pending, log: &Log, server: &str) -> Option<String> {
    let method = msg.get("method").and_then(Value::as_str);
    let id = msg.get("id").filter(|id| !id.is_null());
    match (method, id) {
        (Some(method), Some(id)) => Some(answer_request(method, id)),
        (Some(method), None) => {
            notified(method, msg.get("params"), log, server);
            None
        }
        (None, Some(id)) => {
            let answer = match (msg.get("result"), msg.get("error")) {
                (_, Some(err)) => Err(Failure::Rpc(
                    err["code"].as_i64().unwrap_or(0),
                    crate::text::one_line(err["message"].as_str().unwrap_or("(no message)")),
                )),
                (Some(result), None) => Ok(result.clone()),
                (None, None) => Err(Failure::Broken(
                    "the server sent a response with neither result nor error".into(),
                )),
            };
            let delivered = id.as_u64().is_some_and(|n| pending.answer(n, answer));
            if !delivered {
                let text = format!("a response to no request waiting (id {id})");
                log(&Note {
                    server,
                    kind: "dropped",
                    text: &text,
                });
            }
            None
        }
        (None, None) => {
            log(&Note {
                server,
                kind: "dropped",
                text: "a message with neither method nor id",
            });
            None
        }
    }
}

/// One request over a connection whose answers arrive on a reader thread
/// (stdio, the older SSE): a waiter opened, the request sent with `send`
/// before `deadline`, its answer waited for until then; one still running
/// at the deadline is forgotten and, when `cancel` is given, the server is
/// sent `notifications/cancelled` with it (which must not wait long: the
/// call is past its deadline).
pub fn call(
    pending: &Pending,
    method: &str,
    params: &Value,
    deadline: Instant,
    send: &dyn Fn(&str, Instant) -> Result<(), Failure>,
    cancel: Option<&dyn Fn(&str)>,
) -> Result<Value, Failure> {
    let waiter = pending.open()?;
    if let Err(e) = send(&request(waiter.id, method, params), deadline) {
        pending.close(waiter.id);
        return Err(e);
    }
    match waiter.wait(deadline) {
        Err(Failure::Timeout) => {
            pending.close(waiter.id);
            if let Some(cancel) = cancel {
                cancel(&cancelled(waiter.id));
            }
            Err(Failure::Timeout)
        }
        other => other,
    }
}

/// `notifications/cancelled` for request `id`, at its deadline.
pub fn cancelled(id: u64) -> String {
    let params = json!({"requestId": id, "reason": "axe: the call's deadline passed"});
    notification("notifications/cancelled", &params)
}

/// The reply to a request the server made: `ping` is answered; anything
/// else (sampling, roots, elicitation) is not offered by axe.
fn answer_request(method: &str, id: &Value) -> String {
    if method == "ping" {
        return json!({"jsonrpc": "2.0", "id": id, "result": {}}).to_string();
    }
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32601, "message": format!("Method not found: axe does not offer {method}")}
    })
    .to_string()
}

/// A notification from the server: log messages go to the log.
fn notified(method: &str, params: Option<&Value>, log: &Log, server: &str) {
    if method != "notifications/message" {
        return;
    }
    let Some(p) = params else { return };
    let level = p["level"].as_str().unwrap_or("info");
    let data = match &p["data"] {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    log(&Note {
        server,
        kind: &format!("log {level}"),
        text: &crate::text::one_line(&data),
    });
}

/// The messages of one line: a message, or each of a batch. `Err` when it
/// is not JSON-RPC at all.
pub fn messages(line: &[u8]) -> Result<Vec<Value>, String> {
    match serde_json::from_slice::<Value>(line) {
        Ok(Value::Array(batch)) => Ok(batch),
        Ok(v @ Value::Object(_)) => Ok(vec![v]),
        _ => {
            let text = String::from_utf8_lossy(line);
            let shown: String = crate::text::one_line(&text).chars().take(80).collect();
            Err(format!(
                "the server wrote a line that is not JSON-RPC: {shown:?}"
            ))
        }
    }
}

impl Waiter {
    /// The answer, if it has arrived.
    pub fn try_take(&self) -> Option<Answer> {
        self.rx.try_recv().ok()
    }
}
