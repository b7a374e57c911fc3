//! JSON-RPC 2.0 as an MCP client speaks it (design §9.2): requests waiting
//! for their answers by id, each until its own deadline, and what to do
//! with each message a server sends — a response handed to its waiter, a
//! server's request answered (`ping`; method not found for sampling, roots
//! and elicitation), a log notification passed to the log.
//!
//! A message is read as text, never as a whole tree (issue 31): the parts
//! axe looks at are taken from it and a result is handed on as its JSON
//! text ([`RawValue`]), for its reader to take what it needs from. A tree
//! of a server's JSON can take 90 times the line's size; the text takes
//! its size, and a batch is handled one message at a time.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::Thread;
use std::time::Instant;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::text::{clip, one_line};

/// The most characters of what a server says shown in one note or error.
pub const SHOWN: usize = 1000;

/// The longest id a server's request may have and be answered: the reply
/// echoes it.
const MAX_ID: usize = 200;

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
    /// An HTTP server refused the request with a 4xx status (which one,
    /// and why in words): a server of the handshake era refuses so the
    /// probe of the stateless one (`era`).
    Refused(u16, String),
}

impl Failure {
    pub fn describe(&self) -> String {
        match self {
            Failure::Rpc(code, msg) => format!("the server answered with error {code}: {msg}"),
            Failure::Timeout => "no answer before the deadline".into(),
            Failure::Broken(why) | Failure::Refused(_, why) => why.clone(),
        }
    }
}

/// A result as the server wrote it, or why there is none.
pub type Answer = Result<Box<RawValue>, Failure>;

/// One message as it arrives: what axe reads of it, borrowed from the line.
#[derive(Deserialize)]
pub struct Message<'a> {
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// A JSON-RPC error object, leniently.
#[derive(Deserialize)]
struct ErrorObject<'a> {
    #[serde(borrow, default)]
    code: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

/// `notifications/message`'s params, leniently.
#[derive(Deserialize)]
struct LogParams<'a> {
    #[serde(borrow, default)]
    level: Option<&'a RawValue>,
    #[serde(borrow, default)]
    data: Option<&'a RawValue>,
}

/// Requests sent and not yet answered.
#[derive(Default)]
pub struct Pending {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Each request's place, until its waiter takes the answer or gives up:
    /// kept in the map itself, so a request costs no allocation of its own
    /// (a channel per request cost two and about 2 KiB), and an answer
    /// wakes its one waiter, once.
    waiting: HashMap<u64, Slot>,
    /// Set once the connection is gone: every later request fails with it.
    broken: Option<String>,
}

/// Who waits for a request, and its answer once it came.
struct Slot {
    thread: Thread,
    answer: Option<Answer>,
}

/// One request waiting for its answer, on the thread that opened it.
pub struct Waiter<'p> {
    pub id: u64,
    pending: &'p Pending,
}

impl Pending {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A new id, its answer to be waited for on this thread.
    pub fn open(&self) -> Result<Waiter<'_>, Failure> {
        let mut s = self.lock();
        if let Some(why) = &s.broken {
            return Err(Failure::Broken(why.clone()));
        }
        s.next_id += 1;
        let id = s.next_id;
        let slot = Slot {
            thread: std::thread::current(),
            answer: None,
        };
        s.waiting.insert(id, slot);
        Ok(Waiter { id, pending: self })
    }

    /// Forgets request `id` (it timed out or could not be sent).
    pub fn close(&self, id: u64) {
        self.lock().waiting.remove(&id);
    }

    /// Hands `answer` to the request `id`; false when none waits for it
    /// (or it has its answer already). Its waiter is woken once the lock
    /// is let go, so that it does not wake into it.
    fn answer(&self, id: u64, answer: Answer) -> bool {
        let thread = {
            let mut s = self.lock();
            match s.waiting.get_mut(&id) {
                Some(slot) if slot.answer.is_none() => {
                    slot.answer = Some(answer);
                    slot.thread.clone()
                }
                _ => return false,
            }
        };
        thread.unpark();
        true
    }

    /// Fails every request waiting now with `why`.
    pub fn fail_all(&self, why: &str) {
        let woken: Vec<Thread> = {
            let mut s = self.lock();
            s.waiting
                .values_mut()
                .filter(|slot| slot.answer.is_none())
                .map(|slot| {
                    slot.answer = Some(Err(Failure::Broken(why.to_string())));
                    slot.thread.clone()
                })
                .collect()
        };
        for thread in woken {
            thread.unpark();
        }
    }

    /// The connection is gone: every request, now and later, fails with `why`.
    pub fn break_with(&self, why: &str) {
        self.lock().broken.get_or_insert_with(|| why.to_string());
        self.fail_all(why);
    }

    /// Request `id`'s answer, if it has come (its place given up then).
    fn take(&self, id: u64) -> Option<Answer> {
        let mut s = self.lock();
        let answer = s.waiting.get_mut(&id)?.answer.take()?;
        s.waiting.remove(&id);
        Some(answer)
    }
}

impl Waiter<'_> {
    /// The answer, or [`Failure::Timeout`] at `deadline`. Parked until
    /// it comes: a wake that brings none (another part of this thread's
    /// work may unpark it) is only a look.
    pub fn wait(&self, deadline: Instant) -> Answer {
        loop {
            if let Some(answer) = self.pending.take(self.id) {
                return answer;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::Timeout);
            }
            std::thread::park_timeout(left);
        }
    }

    /// The answer, if it has arrived.
    pub fn try_take(&self) -> Option<Answer> {
        self.pending.take(self.id)
    }
}

/// A request as it is written.
#[derive(Serialize)]
struct Request<'a> {
    jsonrpc: &'static str,
    id: u64,
    method: &'a str,
    params: &'a Value,
}

/// A request as one line of JSON: `params` written from where they are
/// (`json!` would copy them whole first, and a call's arguments can be a
/// file's text).
pub fn request(id: u64, method: &str, params: &Value) -> String {
    let request = Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    };
    serde_json::to_string(&request).unwrap_or_default()
}

/// A notification as one line of JSON.
pub fn notification(method: &str, params: &Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// `raw` as a string when it is one.
pub fn string(raw: Option<&RawValue>) -> Option<String> {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
}

/// What a server said, as it is shown: one line, at most `max` characters.
pub fn shown(text: &str, max: usize) -> String {
    one_line(&clip(text, max, "…"))
}

impl Message<'_> {
    /// Whether it is a response (no method).
    pub fn is_response(&self) -> bool {
        self.method.is_none()
    }
}

/// What the reader does with one message: returns the reply to send back,
/// if any. `server` names it in the log.
pub fn handle(msg: &Message, pending: &Pending, log: &Log, server: &str) -> Option<String> {
    let dropped = |text: &str| {
        log(&Note {
            server,
            kind: "dropped",
            text,
        })
    };
    match (msg.method, msg.id) {
        (Some(method), Some(id)) => {
            let method = string(Some(method)).unwrap_or_default();
            if id.get().len() > MAX_ID {
                dropped(&format!(
                    "a request with an id over {MAX_ID} bytes, not answered"
                ));
                return None;
            }
            Some(answer_request(&method, id))
        }
        (Some(method), None) => {
            notified(
                &string(Some(method)).unwrap_or_default(),
                msg.params,
                log,
                server,
            );
            None
        }
        (None, Some(id)) => {
            let answer = match (msg.result, msg.error) {
                (_, Some(err)) => Err(rpc_error(err)),
                (Some(result), None) => Ok(result.to_owned()),
                (None, None) => Err(Failure::Broken(
                    "the server sent a response with neither result nor error".into(),
                )),
            };
            let n = serde_json::from_str::<u64>(id.get()).ok();
            if !n.is_some_and(|n| pending.answer(n, answer)) {
                let id = shown(id.get(), 40);
                dropped(&format!("a response to no request waiting (id {id})"));
            }
            None
        }
        (None, None) => {
            dropped("a message with neither method nor id");
            None
        }
    }
}

/// A JSON-RPC error as a failure: its code and message (one line, clipped).
fn rpc_error(err: &RawValue) -> Failure {
    let e = serde_json::from_str::<ErrorObject>(err.get()).ok();
    let code = e
        .as_ref()
        .and_then(|e| e.code)
        .and_then(|c| serde_json::from_str::<i64>(c.get()).ok());
    let message = string(e.and_then(|e| e.message));
    Failure::Rpc(
        code.unwrap_or(0),
        shown(message.as_deref().unwrap_or("(no message)"), SHOWN),
    )
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
) -> Answer {
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
/// else (sampling, roots, elicitation) is not offered by axe. The id is
/// echoed as the server wrote it.
fn answer_request(method: &str, id: &RawValue) -> String {
    if method == "ping" {
        return format!(r#"{{"jsonrpc":"2.0","id":{},"result":{{}}}}"#, id.get());
    }
    let error = json!({
        "code": -32601,
        "message": format!("Method not found: axe does not offer {}", clip(method, 64, "…")),
    });
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.get())
}

/// A notification from the server: log messages go to the log, on one
/// line.
fn notified(method: &str, params: Option<&RawValue>, log: &Log, server: &str) {
    if method != "notifications/message" {
        return;
    }
    let Some(p) = params.and_then(|p| serde_json::from_str::<LogParams>(p.get()).ok()) else {
        return;
    };
    let level = string(p.level).unwrap_or_else(|| "info".into());
    let data = p.data.map_or_else(String::new, |d| {
        string(Some(d)).unwrap_or_else(|| d.get().to_string())
    });
    log(&Note {
        server,
        kind: &format!("log {}", shown(&level, 40)),
        text: &shown(&data, SHOWN),
    });
}

/// Hands each message of `line` to `each` as it is read: the message, or
/// each of a batch in turn (never held whole). `Err` when the line is not
/// JSON-RPC; the messages before the fault were handed on.
pub fn each_message(line: &[u8], each: &mut dyn FnMut(&Message)) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let read = de::Deserializer::deserialize_any(&mut de, Each(each)).and_then(|()| de.end());
    read.map_err(|_| {
        let text = String::from_utf8_lossy(&line[..line.len().min(400)]);
        let shown = shown(&text, 80);
        format!("the server wrote a line that is not JSON-RPC: {shown:?}")
    })
}

/// The visitor of [`each_message`].
struct Each<'f, 'g>(&'f mut (dyn FnMut(&Message) + 'g));

impl<'de> Visitor<'de> for Each<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message or a batch of them")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let m = Message::deserialize(de::value::MapAccessDeserializer::new(map))?;
        (self.0)(&m);
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(m) = seq.next_element::<Message>()? {
            (self.0)(&m);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn an_answer_wakes_its_waiter_once_and_a_failure_reaches_the_others() {
        let pending = Arc::new(Pending::default());
        let (first, second) = (pending.open().unwrap(), pending.open().unwrap());
        let (p, id) = (pending.clone(), first.id);
        let answering = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            let text = RawValue::from_string("{\"ok\":1}".into()).unwrap();
            (p.answer(id, Ok(text.clone())), p.answer(id, Ok(text)))
        });
        let got = first.wait(Instant::now() + Duration::from_secs(10));
        assert_eq!(got.unwrap().get(), "{\"ok\":1}");
        assert_eq!(answering.join().unwrap(), (true, false));
        assert!(!pending.answer(first.id, Err(Failure::Timeout)));
        pending.fail_all("gone");
        let failed = second.wait(Instant::now() + Duration::from_secs(10));
        assert!(matches!(failed, Err(Failure::Broken(why)) if why == "gone"));
        let third = pending.open().unwrap();
        let late = third.wait(Instant::now() + Duration::from_millis(30));
        assert!(matches!(late, Err(Failure::Timeout)));
    }
}
