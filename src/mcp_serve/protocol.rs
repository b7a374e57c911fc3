//! The protocol's steps, whatever carries them (design §9.6): one
//! JSON-RPC 2.0 message in, its answer out through an [`Out`]. The
//! handshake (`initialize`, the revision negotiated: the client's when
//! axe speaks it, else axe's newest; `notifications/initialized`),
//! `ping`, `tools/list`, `tools/call` (each call on a thread of its own,
//! at most `--max-concurrent`), `notifications/cancelled` (the call's run
//! cancelled, and, as the spec asks, not answered), and the errors:
//! -32700 for a line that is not JSON, -32600 for a message that is not a
//! request, -32601 for a method axe does not offer, -32602 for a call to
//! an unknown tool or with malformed params. A call's arguments that do
//! not match its input schema are -32602 up to 2025-06-18 and, from
//! 2025-11-25, an error result the model can read and correct.
//!
//! A request carrying the stateless revision's envelope in its `_meta` is
//! of that era (`stateless`): `server/discover`, `tools/list` and
//! `tools/call` answered in its shapes, whatever came before on the same
//! connection; any other is of the handshake era. Both eras on one server.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::call::{self, Progress};
use super::message::{self, Arguments, CallParams, CancelParams, InitParams, Meta, Read};
use super::stateless::{self, Refusal};
use super::tools::{Arguments as CallArgs, Tool};
use super::{Out, Shared, VERSIONS};
use crate::deadline::Cancel;
use crate::text::clip;

/// A call checked and about to run: its request id, its key in
/// `Shared::running`, its cancel flag, and whether it is of the stateless
/// revision.
struct Call {
    id: Value,
    key: String,
    cancel: Cancel,
    modern: bool,
}

/// One client's session: the revision it agreed to and its calls' threads.
pub struct Session {
    shared: Arc<Shared>,
    out: Arc<dyn Out>,
    /// What the calls' keys in `Shared::running` start with: requests of
    /// different HTTP sessions or POSTs may use the same ids.
    scope: String,
    version: Mutex<&'static str>,
    /// How many of its calls are running, for [`Session::wait`].
    calls: Arc<(Mutex<usize>, Condvar)>,
    /// The trace the calls join: an HTTP request's `traceparent` (design
    /// §7.9).
    parent: Option<crate::trace::telemetry::SpanContext>,
}

/// A JSON-RPC error object.
fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A JSON-RPC error object with its `data`, when there is some.
fn refusal(id: &Value, (code, message, data): Refusal) -> Value {
    let mut e = error(id, code, &message);
    if let Some(d) = data {
        e["error"]["data"] = d;
    }
    e
}

fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

impl Session {
    pub fn new(shared: Arc<Shared>, out: Arc<dyn Out>) -> Session {
        Session::scoped(shared, out, String::new(), VERSIONS[0])
    }

    /// A session whose calls' keys start with `scope`, of the handshake
    /// era's `version` (an HTTP session's, agreed before).
    pub fn scoped(
        shared: Arc<Shared>,
        out: Arc<dyn Out>,
        scope: String,
        version: &'static str,
    ) -> Session {
        Session {
            shared,
            out,
            scope,
            version: Mutex::new(version),
            calls: Arc::default(),
            parent: None,
        }
    }

    /// This session, its calls joining the trace of `parent`.
    #[must_use]
    pub fn joined(mut self, parent: Option<crate::trace::telemetry::SpanContext>) -> Session {
        self.parent = parent;
        self
    }

    /// The revision of the handshake era agreed.
    pub fn version(&self) -> &'static str {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Handles one message, `bytes` as the transport read it.
    pub fn handle(&self, bytes: &[u8]) {
        let msg = match message::read(bytes) {
            Read::Message(m) => m,
            Read::NotAMessage => {
                let why = "Invalid Request: a message is a JSON object (batches are not taken)";
                return self.out.send(&error(&Value::Null, -32600, why));
            }
            Read::NotJson(e) => {
                let why = format!("Parse error: not JSON ({e})");
                return self.out.send(&error(&Value::Null, -32700, &why));
            }
        };
        let id = msg.id.filter(|i| i.get() != "null");
        let id = match id.map(message::id) {
            None => None,
            Some(Some(id)) => Some(id),
            Some(None) => {
                let why = "Invalid Request: an id is a string or an integer";
                return self.out.send(&error(&Value::Null, -32600, why));
            }
        };
        let method = message::string(msg.method);
        match (method, id) {
            (Some(m), Some(id)) => self.request(&m, &id, msg.params),
            (Some(m), None) => self.notified(&m, msg.params),
            // A response: axe sends no requests, so there is nothing to do.
            (None, Some(_)) if msg.result.is_some() || msg.error.is_some() => {}
            (None, id) => {
                let id = id.unwrap_or(Value::Null);
                self.out
                    .send(&error(&id, -32600, "Invalid Request: no method"));
            }
        }
    }

    fn request(&self, method: &str, id: &Value, params: Option<&RawValue>) {
        match stateless::version(params) {
            Some(Ok(_)) => return self.stateless(method, id, params),
            Some(Err(why)) => return self.out.send(&refusal(id, why)),
            None => {}
        }
        let reply = match method {
            "initialize" => answer(id, self.initialize(params)),
            "ping" => answer(id, json!({})),
            "tools/list" => answer(id, self.shared.tools.list()),
            "tools/call" => return self.call(id, params, false),
            "server/discover" => error(
                id,
                -32602,
                "Invalid params: server/discover takes the 2026-07-28 envelope in _meta",
            ),
            other => error(
                id,
                -32601,
                &format!("Method not found: {}", clip(other, 64, "…")),
            ),
        };
        self.out.send(&reply);
    }

    /// A request of the stateless revision (its envelope checked).
    fn stateless(&self, method: &str, id: &Value, params: Option<&RawValue>) {
        let reply = match method {
            "server/discover" => answer(id, stateless::discover()),
            "tools/list" => answer(id, stateless::complete(self.shared.tools.list(), true)),
            "tools/call" => return self.call(id, params, true),
            other => error(
                id,
                -32601,
                &format!("Method not found: {}", clip(other, 64, "…")),
            ),
        };
        self.out.send(&reply);
    }

    /// `initialize`'s result: the revision the client asked for when axe
    /// speaks it, else axe's newest (the client then decides).
    fn initialize(&self, params: Option<&RawValue>) -> Value {
        let asked =
            message::params::<InitParams>(params).and_then(|p| message::string(p.protocol_version));
        let version = VERSIONS
            .iter()
            .find(|v| Some(**v) == asked.as_deref())
            .copied()
            .unwrap_or(VERSIONS[0]);
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) = version;
        json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": false}},
            "serverInfo": {"name": "axe", "version": env!("CARGO_PKG_VERSION")},
        })
    }

    fn notified(&self, method: &str, params: Option<&RawValue>) {
        if method == "notifications/cancelled"
            && let Some(p) = message::params::<CancelParams>(params)
            && let Some(id) = p.request_id.and_then(message::id)
        {
            self.shared.cancel(&format!("{}{id}", self.scope));
        }
        // `notifications/initialized` and the rest need nothing.
    }

    /// `tools/call`: checked here, run on a thread of its own, answered
    /// from it when the run ends (unless the client cancelled it).
    fn call(&self, id: &Value, params: Option<&RawValue>, modern: bool) {
        let result = |r: Value| {
            let r = if modern {
                stateless::complete(r, false)
            } else {
                r
            };
            answer(id, r)
        };
        let Some(params) = message::params::<CallParams>(params) else {
            return self
                .out
                .send(&error(id, -32602, "Invalid params: not an object"));
        };
        let Some(name) = message::string(params.name) else {
            let why = "Invalid params: \"name\" (a string) is required";
            return self.out.send(&error(id, -32602, why));
        };
        let Some(tool) = self.shared.tools.get(&name) else {
            let why = format!("Unknown tool: {}", clip(&name, 64, "…"));
            return self.out.send(&error(id, -32602, &why));
        };
        let Some(given) = message::params::<Option<Arguments>>(params.arguments) else {
            let why = format!(
                "Invalid params: \"arguments\" must be an object of at most {} keys",
                message::MAX_ARGUMENTS
            );
            return self.out.send(&error(id, -32602, &why));
        };
        let args = match tool.arguments(given.as_ref()) {
            Ok(a) => a,
            Err(why) if modern || self.validation_is_a_result() => {
                let r = call::error_result(&format!("invalid arguments: {why}"), json!({}));
                return self.out.send(&result(r));
            }
            Err(why) => {
                let why = format!("Invalid params: {why}");
                return self.out.send(&error(id, -32602, &why));
            }
        };
        let key = format!("{}{id}", self.scope);
        let cancel = match self.shared.begin(&key) {
            Ok(c) => c,
            Err(why) => return self.out.send(&result(call::error_result(&why, json!({})))),
        };
        let progress = message::params::<Meta>(params.meta)
            .and_then(|m| m.progress_token.and_then(message::id))
            .map(|t| Progress::new(t, self.out.clone()));
        let call = Call {
            id: id.clone(),
            key,
            cancel,
            modern,
        };
        self.spawn(tool.clone(), args, call, progress);
    }

    /// Whether arguments that do not match are an error result (from
    /// 2025-11-25, SEP-1303) rather than -32602.
    fn validation_is_a_result(&self) -> bool {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) == VERSIONS[0]
    }

    /// Runs `call` on a thread of the pool's.
    fn spawn(&self, tool: Tool, args: CallArgs, call: Call, progress: Option<Arc<Progress>>) {
        let (shared, out, calls) = (self.shared.clone(), self.out.clone(), self.calls.clone());
        let parent = self.parent;
        let Call {
            id,
            key,
            cancel,
            modern,
        } = call;
        let (answered_id, running_key) = (id.clone(), key.clone());
        *calls.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let job = move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                call::run(&shared, &tool, &args, &cancel, progress, parent)
            }))
            .unwrap_or_else(|_| {
                call::error_result("axe: internal error: the run panicked", json!({}))
            });
            shared.end(&key);
            // A call the client cancelled is not answered (the spec's
            // SHOULD NOT); one cancelled because the client left cannot be.
            if !cancel.is_set() {
                let result = if modern {
                    stateless::complete(result, false)
                } else {
                    result
                };
                out.send(&answer(&answered_id, result));
            }
            ended(&calls);
        };
        if let Err(e) = self.shared.pool.run(Box::new(job)) {
            ended(&self.calls);
            self.shared.end(&running_key);
            let r = call::error_result(&format!("axe: cannot start the call: {e}"), json!({}));
            self.out.send(&answer(&id, r));
        }
    }

    /// Waits for every call of the session to end (the transport
    /// cancelled them).
    pub fn wait(&self) {
        let (running, done) = &*self.calls;
        let mut n = running.lock().unwrap_or_else(PoisonError::into_inner);
        while *n > 0 {
            n = done.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One call of a session ended.
fn ended(calls: &(Mutex<usize>, Condvar)) {
    let mut n = calls.0.lock().unwrap_or_else(PoisonError::into_inner);
    *n = n.saturating_sub(1);
    calls.1.notify_all();
}
