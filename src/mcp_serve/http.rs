//! The streamable HTTP transport (design §9.6; MCP 2025-11-25 and
//! 2026-07-28): one path, `/mcp`, where a client POSTs one JSON-RPC
//! message and gets its answer (`reply.rs`). Listened on as `axe serve`
//! listens (its socket timeouts, its token or, without one, its
//! Host/Origin/content-type checks: `crate::serve::auth`). Each request
//! runs on a thread of its own, at most `--max-concurrent` plus
//! [`EXTRA`] at once, beyond them 503.
//!
//! The handshake era has sessions: `initialize` is answered with an
//! `Mcp-Session-Id`, which every later request must carry (400 without
//! it, 404 for one axe does not know); DELETE ends one and cancels its
//! calls. A request of the stateless revision carries no session; its
//! `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must
//! match its body (else 400, -32020). GET is 405: axe sends nothing
//! unasked, so it offers no stream of its own.

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;
use tiny_http::{Method, Request};

use super::message::{self, Read as Parsed};
use super::protocol::Session;
use super::reply::{Answer, Channel, error};
use super::stateless::{self, HEADER_MISMATCH};
use super::{Out, Shared, VERSIONS};
use crate::deadline::Cancel;
use crate::error::Error;
use crate::serve::json_response;
use crate::serve::{auth, conn};

/// The one path served.
pub const PATH: &str = "/mcp";
/// The largest body taken, bytes: `axe serve`'s default `--max-body`.
/// Up to `--max-concurrent` + [`EXTRA`] bodies are held at once.
const MAX_BODY: usize = 4 * 1024 * 1024;
/// Requests answered at once beyond `--max-concurrent` (lists, pings,
/// refusals: a busy server still says it is busy).
const EXTRA: usize = 32;
/// Sessions of the handshake era kept; the oldest goes first.
const MAX_SESSIONS: usize = 4096;

/// The server: what its requests share.
struct Http {
    shared: Arc<Shared>,
    port: u16,
    token: Option<String>,
    /// The handshake era's sessions: their revision and their age.
    sessions: Mutex<HashMap<String, (&'static str, u64)>>,
    next: AtomicU64,
    in_flight: AtomicUsize,
    stopping: AtomicBool,
}

/// Serves `shared`'s tools at `listen` until SIGTERM or SIGINT, then
/// cancels the calls running and gives them a few seconds.
pub fn serve(
    shared: Arc<Shared>,
    listen: SocketAddr,
    token: Option<String>,
    idle: Duration,
) -> Result<(), Error> {
    let listener = crate::serve::listen(listen, idle)?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::general(format!("cannot listen on {listen}: {e}")))?;
    let server =
        tiny_http::Server::from_listener_limited(listener, None, crate::serve::most_connections())
            .map_err(|e| Error::general(format!("cannot listen on {addr}: {e}")))?;
    let http = Arc::new(Http {
        port: addr.port(),
        token,
        sessions: Mutex::new(HashMap::new()),
        next: AtomicU64::new(0),
        in_flight: AtomicUsize::new(0),
        stopping: AtomicBool::new(false),
        shared,
    });
    {
        let h = http.clone();
        crate::io::interrupt::on_first_signal(move |_| h.stopping.store(true, Ordering::SeqCst));
    }
    {
        let h = http.clone();
        crate::serve::tick(addr, idle / 4, move || h.stopping.load(Ordering::SeqCst));
    }
    crate::io::stderr::lines(format!(
        "axe: mcp serve: {} tool(s), serving on http://{addr} at {PATH} ({} calls at once)\n",
        http.shared.tools.len(),
        http.shared.settings.max_concurrent
    ));
    let failed = accept(&server, &http);
    http.shared.cancel_all();
    let until = Instant::now() + Duration::from_secs(5);
    while http.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    crate::io::stderr::flush(crate::io::stderr::PATIENCE);
    match failed {
        Some(e) => Err(Error::general(format!("the listener failed: {e}"))),
        None => Ok(()),
    }
}

/// Takes requests until the stop, each to a thread of its own.
fn accept(server: &tiny_http::Server, http: &Arc<Http>) -> Option<std::io::Error> {
    let most = http.shared.settings.max_concurrent + EXTRA;
    while !http.stopping.load(Ordering::SeqCst) {
        let rq = match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(rq)) => rq,
            Ok(None) => continue,
            Err(e) => return Some(e),
        };
        if http.in_flight.fetch_add(1, Ordering::SeqCst) >= most {
            http.in_flight.fetch_sub(1, Ordering::SeqCst);
            let why = "axe is busy: too many requests at once; try again shortly";
            http.now(rq, 503, why, &[("retry-after", "1".into())]);
            continue;
        }
        let h = http.clone();
        let spawned = std::thread::Builder::new()
            .name("axe-mcp-http".into())
            .spawn(move || {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.request(rq)));
                h.in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            // The request went with the closure: tiny_http answers it 500.
            http.in_flight.fetch_sub(1, Ordering::SeqCst);
        }
    }
    None
}

/// The request's `traceparent`, the trace its calls join (design §7.9);
/// a malformed one is ignored.
fn traceparent(rq: &Request) -> Option<crate::trace::telemetry::SpanContext> {
    header(rq, "traceparent").and_then(|v| crate::trace::telemetry::parse_traceparent(v).ok())
}

/// The value of `rq`'s header `name`, when it has one.
fn header<'a>(rq: &'a Request, name: &str) -> Option<&'a str> {
    rq.headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

impl Http {
    /// Answers `rq` at once, its body unread, with a JSON-RPC error.
    fn now(&self, rq: Request, status: u16, why: &str, extra: &[(&str, String)]) {
        let body = error(&Value::Null, -32600, why);
        conn::answer_now(rq, json_response(status, &body, extra), self.port);
    }

    fn request(&self, rq: Request) {
        let path = rq.url().split('?').next().unwrap_or("");
        if path != PATH {
            return self.now(rq, 404, "Not Found: axe mcp serve answers at /mcp", &[]);
        }
        if let Some(t) = self.token.as_deref() {
            if !auth::allowed(Some(t), header(&rq, "Authorization")) {
                let extra = [("www-authenticate", "Bearer".into())];
                return self.now(rq, 401, "a valid bearer token is required", &extra);
            }
        } else if let Some(e) = auth::cross_site(rq.method(), rq.headers()) {
            return self.now(rq, e.status, &e.message, &[]);
        }
        match rq.method() {
            Method::Post => self.post(rq),
            Method::Delete => self.delete(rq),
            _ => {
                let why = "Method Not Allowed: POST a JSON-RPC message to /mcp (DELETE ends a session); axe offers no stream to GET";
                self.now(rq, 405, why, &[("allow", "POST, DELETE".into())]);
            }
        }
    }

    /// DELETE: the session named ends, its calls cancelled.
    fn delete(&self, rq: Request) {
        let Some(id) = header(&rq, "Mcp-Session-Id").map(str::to_string) else {
            return self.now(rq, 400, "Bad Request: no Mcp-Session-Id", &[]);
        };
        if self.lock().remove(&id).is_none() {
            return self.now(rq, 404, "Not Found: no such session", &[]);
        }
        self.shared.cancel_scope(&format!("{id}:"));
        let _ = rq.respond(tiny_http::Response::empty(200));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (&'static str, u64)>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// POST: one JSON-RPC message.
    fn post(&self, mut rq: Request) {
        if rq.body_length().is_some_and(|n| n > MAX_BODY) {
            return self.now(rq, 413, "a body over 4 MiB", &[]);
        }
        let mut body = Vec::new();
        let limit = u64::try_from(MAX_BODY).unwrap_or(u64::MAX) + 1;
        if rq.as_reader().take(limit).read_to_end(&mut body).is_err() {
            return self.now(rq, 400, "Bad Request: the body could not be read", &[]);
        }
        if body.len() > MAX_BODY {
            return self.now(rq, 413, "a body over 4 MiB", &[]);
        }
        let msg = match message::read(&body) {
            Parsed::Message(m) => m,
            // The protocol answers what it cannot read, 400 whatever the
            // era (the transport's "HTTP error status").
            _ => return self.answer(rq, &body, Route::refused()),
        };
        let method = message::string(msg.method);
        let id = msg.id.filter(|i| i.get() != "null").map(message::id);
        let id = match id {
            Some(None) => return self.answer(rq, &body, Route::refused()),
            Some(Some(id)) => Some(id),
            None => None,
        };
        let route = match (method.as_deref(), id) {
            // An id without a method (or one not a string) that is no
            // response: the protocol's invalid request, not a 202 and no
            // answer.
            (None, Some(_)) if msg.result.is_none() && msg.error.is_none() => {
                return self.answer(rq, &body, Route::refused());
            }
            (Some(m), Some(id)) => match self.route(&rq, m, id, msg.params) {
                Ok(r) => r,
                Err((status, reply)) => {
                    return drop(rq.respond(json_response(status, &reply, &[])));
                }
            },
            // A notification or a response: its session's, if it names one.
            _ => Route {
                scope: header(&rq, "Mcp-Session-Id")
                    .filter(|s| self.lock().contains_key(*s))
                    .map(|s| format!("{s}:"))
                    .unwrap_or_default(),
                accepted: true,
                ..Route::plain()
            },
        };
        self.answer(rq, &body, route)
    }

    /// How the request `method` `id` is answered, or why it is refused:
    /// its era told by its envelope (design §9.6).
    fn route(
        &self,
        rq: &Request,
        method: &str,
        id: Value,
        params: Option<&serde_json::value::RawValue>,
    ) -> Result<Route, (u16, Value)> {
        match stateless::version(params) {
            Some(Ok(v)) => {
                if let Err(why) = stateless::routing(method, &v, params, |n| header(rq, n)) {
                    return Err((400, error(&id, HEADER_MISMATCH, &why)));
                }
                let n = self.next.fetch_add(1, Ordering::Relaxed);
                Ok(Route {
                    scope: format!("post-{n}:"),
                    modern: true,
                    call: method == "tools/call",
                    id,
                    ..Route::plain()
                })
            }
            // The protocol refuses it, with the status of its error.
            Some(Err(_)) => Ok(Route {
                modern: true,
                id,
                ..Route::plain()
            }),
            None if method == "initialize" => {
                let sid = session_id();
                Ok(Route {
                    scope: format!("{sid}:"),
                    session: Some(sid),
                    id,
                    ..Route::plain()
                })
            }
            None => self.in_session(rq, method, id),
        }
    }

    /// A request of the handshake era after `initialize`: its session.
    fn in_session(&self, rq: &Request, method: &str, id: Value) -> Result<Route, (u16, Value)> {
        let Some(sid) = header(rq, "Mcp-Session-Id") else {
            let why = "Bad Request: no Mcp-Session-Id (initialize first, or send the 2026-07-28 envelope in _meta)";
            return Err((400, error(&id, -32600, why)));
        };
        let Some((version, _)) = self.lock().get(sid).copied() else {
            return Err((404, error(&id, -32600, "Not Found: no such session")));
        };
        if let Some(v) = header(rq, "MCP-Protocol-Version")
            && !VERSIONS.contains(&v)
        {
            let why = format!(
                "Bad Request: MCP-Protocol-Version {} is not one axe speaks",
                crate::text::clip(v, 40, "…")
            );
            return Err((400, error(&id, -32600, &why)));
        }
        Ok(Route {
            scope: format!("{sid}:"),
            version,
            call: method == "tools/call",
            id,
            ..Route::plain()
        })
    }

    /// Hands `body` to the protocol and answers with what it sends.
    fn answer(&self, rq: Request, body: &[u8], route: Route) {
        let (tx, rx) = mpsc::channel();
        let out: Arc<dyn Out> = Arc::new(Channel(Mutex::new(tx)));
        let key = format!("{}{}", route.scope, route.id);
        let session = Session::scoped(self.shared.clone(), out, route.scope, route.version)
            .joined(traceparent(&rq));
        session.handle(body);
        let mut extra = Vec::new();
        if let Some(sid) = route.session {
            self.keep(&sid, session.version());
            extra.push(("mcp-session-id", sid));
        }
        drop(session);
        if route.accepted {
            return drop(rq.respond(tiny_http::Response::empty(202)));
        }
        let gone = Cancel::default();
        let _watched = route
            .call
            .then(|| rq.remote_addr().copied())
            .flatten()
            .and_then(|peer| conn::socket(self.port, peer))
            .map(|sock| conn::watch(sock, gone.clone()));
        let on_gone = || {
            self.shared.cancel(&key);
        };
        Answer {
            rq,
            rx,
            id: route.id,
            modern: route.modern,
            extra,
            gone,
            on_gone: &on_gone,
        }
        .send();
    }

    /// Keeps the session `sid` of `version`, the oldest dropped when
    /// [`MAX_SESSIONS`] are kept.
    fn keep(&self, sid: &str, version: &'static str) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let mut sessions = self.lock();
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, (_, age))| *age)
                .map(|(k, _)| k.clone())
        {
            sessions.remove(&oldest);
            // Its calls go with it, as a DELETE's do: nobody can reach
            // them to cancel them any more.
            self.shared.cancel_scope(&format!("{oldest}:"));
        }
        sessions.insert(sid.to_string(), (version, n));
    }
}

/// How one POST is answered.
struct Route {
    /// What its calls' keys start with.
    scope: String,
    /// The handshake era's revision it is of.
    version: &'static str,
    /// Of the stateless revision.
    modern: bool,
    /// A `tools/call`: its client watched.
    call: bool,
    /// A notification or a response: 202, no body.
    accepted: bool,
    /// `initialize`: the new session's id.
    session: Option<String>,
    id: Value,
}

impl Route {
    /// A message the protocol refuses (not JSON, not a message, a bad id).
    fn refused() -> Route {
        Route {
            modern: true,
            ..Route::plain()
        }
    }

    fn plain() -> Route {
        Route {
            scope: String::new(),
            version: VERSIONS[0],
            modern: false,
            call: false,
            accepted: false,
            session: None,
            id: Value::Null,
        }
    }
}

/// A new session's id: 128 random bits, hex (the spec: globally unique,
/// cryptographically secure).
fn session_id() -> String {
    let mut bytes = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        // No /dev/urandom: unique still, if guessable.
        for b in &mut bytes {
            *b = fastrand::u8(..);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
