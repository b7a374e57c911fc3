//! `axe serve` (design ch. 12): agents behind an OpenAI-compatible HTTP
//! endpoint, on tiny_http. This file owns the listener and the pool: the
//! socket (loopback unless told otherwise, with read and write timeouts
//! every connection inherits), the dispatcher that answers `/healthz`,
//! checks the token and hands each request to a free worker or answers 429
//! (never a queue of its own, never a write that may wait on a client),
//! the workers, the access log, and the stop:
//! on SIGTERM or SIGINT no new request is taken, running ones get the
//! grace period, then are cancelled. SIGHUP reads the agents again
//! (`agents.rs`).
//!
//! The request itself is `handle.rs`'s; a chat completion's run
//! `complete.rs`'s; the request's shape `chat.rs`'s; answers and errors in
//! OpenAI's shapes `reply.rs`'s; the event stream `sse.rs`'s; the
//! Responses API (`POST /v1/responses`) `responses/`'s; what a
//! request meets before a worker `admit.rs`'s; the token and the
//! cross-site checks `auth.rs`'s; the socket below tiny_http `conn.rs`'s;
//! the listening socket and its tick `listen.rs`'s.

mod admit;
mod agents;
pub(crate) mod auth;
mod chat;
mod complete;
pub(crate) mod conn;
mod handle;
mod images;
mod listen;
mod pipeline;
mod reply;
mod responses;
mod sse;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tiny_http::{Header, Request, Response};

use crate::config::GlobalConfig;
use crate::deadline::Cancel;
use crate::error::Error;

pub use agents::AgentFiles;
pub use auth::token;
pub(crate) use listen::{listen, most_connections, tick};
pub use reply::ApiError;

/// A worker's stack: a run's top-level agent runs on it.
const WORKER_STACK: usize = 8 * 1024 * 1024;
/// What a 429 tells the client to wait, seconds.
const RETRY_AFTER: &str = "1";
/// After the grace period, how long cancelled runs get to end before the
/// process exits without them.
const AFTER_GRACE: Duration = Duration::from_secs(5);

/// The server's settings, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    pub listen: SocketAddr,
    pub max_concurrent: usize,
    /// The bearer token clients must send; none on loopback without one.
    pub token: Option<String>,
    /// `--timeout`: seconds per request's run, over the agent file's.
    pub timeout: Option<u64>,
    pub max_body: usize,
    pub grace: Duration,
    /// How long a connection may send nothing (its request's head or
    /// body) or take nothing (its answer) before it is closed.
    pub idle: Duration,
    /// `--agent`: the agents served; empty: every agent on the search path.
    pub agents: Vec<String>,
    /// A request's system messages are taken (`--system-messages
    /// append`, the default), else refused.
    pub system_messages: bool,
    /// `--ignore-client-tools`: a request's tools are ignored, not refused.
    pub ignore_client_tools: bool,
    pub trace: Option<String>,
    pub trace_bodies: bool,
    pub retries: Option<u32>,
    pub run_log: bool,
    pub access_log: bool,
}

/// What every worker shares.
pub struct Shared {
    settings: Settings,
    global: GlobalConfig,
    /// The agent files, read at the start.
    files: AgentFiles,
    cwd: PathBuf,
    /// The port listened on, to find a request's socket.
    port: u16,
    /// Requests being answered by workers.
    active: AtomicUsize,
    /// The cancel flags of the runs under way, for the stop.
    runs: Mutex<Vec<(u64, Cancel)>>,
    next_run: AtomicU64,
    stopping: AtomicBool,
    /// Requests pipelined behind one a worker is serving.
    pipelines: pipeline::Pipelines,
}

/// What the access log says of an answered request.
pub struct Served {
    pub agent: String,
    pub status: u16,
    pub tokens: u64,
    /// The run id (the `x-request-id`), when a run started.
    pub id: String,
    /// A failed run's error code, which its status (424) does not say.
    pub error: Option<&'static str>,
}

impl Served {
    /// A request answered `status` before any agent ran.
    pub(super) fn only(status: u16) -> Served {
        Served {
            status,
            ..Served::new("")
        }
    }

    fn new(agent: &str) -> Served {
        Served {
            agent: agent.to_string(),
            status: 0,
            tokens: 0,
            id: String::new(),
            error: None,
        }
    }
}

/// Removes a run's flag from the stop's list when the run ends.
struct Running<'a>(&'a Shared, u64);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(id, _)| *id != self.1);
    }
}

impl Shared {
    /// Whether `agent` may be run here.
    fn serves(&self, agent: &str) -> bool {
        self.settings.agents.is_empty() || self.settings.agents.iter().any(|a| a == agent)
    }

    /// The agents served, sorted: the allowlist, or every agent found.
    fn agents(&self) -> Result<Vec<String>, Error> {
        if !self.settings.agents.is_empty() {
            let mut a = self.settings.agents.clone();
            a.sort();
            return Ok(a);
        }
        Ok(self.files.current().roots().to_vec())
    }

    /// Lists `cancel` for the stop while the guard lives.
    fn running(&self, cancel: &Cancel) -> Running<'_> {
        let id = self.next_run.fetch_add(1, Ordering::Relaxed);
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, cancel.clone()));
        Running(self, id)
    }

    fn stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }
}

/// Serves until SIGTERM or SIGINT, then stops as the module says.
pub fn serve(
    settings: Settings,
    global: GlobalConfig,
    files: AgentFiles,
    cwd: PathBuf,
) -> Result<(), Error> {
    let listener = listen(settings.listen, settings.idle)?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::general(format!("cannot listen on {}: {e}", settings.listen)))?;
    let server =
        tiny_http::Server::from_listener_limited(listener, None, crate::serve::most_connections())
            .map_err(|e| Error::general(format!("cannot listen on {addr}: {e}")))?;
    let max = settings.max_concurrent.max(1);
    let shared = Arc::new(Shared {
        settings,
        global,
        files,
        cwd,
        port: addr.port(),
        active: AtomicUsize::new(0),
        runs: Mutex::new(Vec::new()),
        next_run: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        pipelines: pipeline::Pipelines::default(),
    });
    {
        let shared = shared.clone();
        crate::io::interrupt::on_first_signal(move |_| {
            shared.stopping.store(true, Ordering::SeqCst)
        });
    }
    {
        let shared = shared.clone();
        crate::io::interrupt::on_hangup(move |_| shared.files.reload(&shared.global));
    }
    let (tx, rx) = sync_channel::<(Request, Instant)>(max);
    let rx = Arc::new(Mutex::new(rx));
    for n in 0..max {
        let (rx, shared) = (rx.clone(), shared.clone());
        std::thread::Builder::new()
            .name(format!("axe-serve-{n}"))
            .stack_size(WORKER_STACK)
            .spawn(move || worker(&rx, &shared))
            .map_err(|e| Error::general(format!("cannot start a worker: {e}")))?;
    }
    {
        let shared = shared.clone();
        tick(addr, shared.settings.idle / 4, move || shared.stopping());
    }
    crate::io::stderr::lines(format!("axe: serving on http://{addr} ({max} at once)\n"));
    let failed = dispatch(&server, &shared, &tx, max);
    stop(&server, &shared);
    match failed {
        Some(e) => Err(Error::general(format!("the listener failed: {e}"))),
        None => Ok(()),
    }
}

/// Takes requests until the stop: `/healthz` answered at once, a request
/// without the token refused, the rest handed to a free worker, or told to
/// come back (429) when all `max` are busy. A request pipelined behind one
/// still being served is set aside for that one's worker (`pipeline.rs`).
/// The listener's error, if it failed.
fn dispatch(
    server: &tiny_http::Server,
    shared: &Shared,
    tx: &SyncSender<(Request, Instant)>,
    max: usize,
) -> Option<std::io::Error> {
    while !shared.stopping() {
        let rq = match server.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(rq)) => rq,
            Ok(None) => continue,
            Err(e) => return Some(e),
        };
        let Some((rq, started)) = shared.pipelines.set_aside((rq, Instant::now())) else {
            continue;
        };
        let Some(rq) = admit::admit(rq, shared, started) else {
            continue;
        };
        if shared.active.fetch_add(1, Ordering::SeqCst) >= max {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            let (method, path) = (rq.method().to_string(), rq.url().to_string());
            let e = ApiError::new(
                429,
                "rate_limit_error",
                "too_many_requests",
                format!("the server is running {max} requests, its most: try again shortly"),
            );
            let extra = [("retry-after", RETRY_AFTER.into())];
            let status = admit::answer_now(rq, shared, &e, &extra);
            access(shared, &method, &path, &Served::only(status), started);
            continue;
        }
        let peer = rq.remote_addr().copied();
        shared.pipelines.begin(peer);
        if let Err(e) = tx.send((rq, started)) {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            drop(e);
            while let Some(behind) = peer.and_then(|p| shared.pipelines.next(p)) {
                drop(behind);
            }
        }
    }
    None
}

/// A worker: one request at a time, a panic kept inside its request
/// (tiny_http answers it 500). The requests its connection pipelined
/// behind it follow in the same slot, in order.
fn worker(rx: &Mutex<Receiver<(Request, Instant)>>, shared: &Shared) {
    loop {
        let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((rq, started)) = next else {
            return;
        };
        let peer = rq.remote_addr().copied();
        serve_one(rq, shared, started);
        while let Some((rq, started)) = peer.and_then(|p| shared.pipelines.next(p)) {
            if shared.stopping() {
                let (method, path) = (rq.method().to_string(), rq.url().to_string());
                let closed = [("connection", "close".into())];
                let status = admit::answer_now(rq, shared, &shutting_down(), &closed);
                access(shared, &method, &path, &Served::only(status), started);
            } else if let Some(rq) = admit::admit(rq, shared, started) {
                serve_one(rq, shared, started);
            }
        }
        shared.active.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers one request a worker took, and logs it.
fn serve_one(rq: Request, shared: &Shared, started: Instant) {
    let (method, path) = (rq.method().to_string(), rq.url().to_string());
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        handle::request(rq, shared, started)
    }))
    .unwrap_or_else(|_| Served::only(500));
    access(shared, &method, &path, &served, started);
}

/// The answer to a request that comes once the server is stopping.
fn shutting_down() -> ApiError {
    ApiError::new(
        503,
        "server_error",
        "shutting_down",
        "the server is stopping",
    )
}

/// The stop: requests tiny_http had read but not handed out are told 503;
/// running ones get the grace period, then are cancelled and get
/// [`AFTER_GRACE`] more.
fn stop(server: &tiny_http::Server, shared: &Shared) {
    crate::io::stderr::lines("axe: stopping: no new requests; waiting for those running\n".into());
    while let Ok(Some(rq)) = server.try_recv() {
        // One pipelined behind a running request is its worker's to answer.
        if let Some((rq, _)) = shared.pipelines.set_aside((rq, Instant::now())) {
            admit::answer_now(
                rq,
                shared,
                &shutting_down(),
                &[("connection", "close".into())],
            );
        }
    }
    let idle = |within: Duration| {
        let until = Instant::now() + within;
        while shared.active.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        shared.active.load(Ordering::SeqCst) == 0
    };
    if idle(shared.settings.grace) {
        return;
    }
    let runs = shared
        .runs
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    crate::io::stderr::lines(format!(
        "axe: stopping: cancelling {} running requests\n",
        runs.len()
    ));
    for (_, cancel) in &runs {
        cancel.cancel();
    }
    idle(AFTER_GRACE);
    crate::io::stderr::flush(crate::io::stderr::PATIENCE);
}

/// One access-log line on stderr: method, path, agent, status, time,
/// tokens, request id, and a failed run's error code, each field one word
/// whatever the client sent. Never waits for stderr.
fn access(shared: &Shared, method: &str, path: &str, s: &Served, started: Instant) {
    if !shared.settings.access_log {
        return;
    }
    let error = s.error.map(|c| format!(" error={c}")).unwrap_or_default();
    crate::io::stderr::lines(format!(
        "axe: serve: {} {} agent={} status={} ms={} tokens={} id={}{error}\n",
        field(method, 100),
        field(path, 200),
        field(&s.agent, 100),
        s.status,
        crate::deadline::millis(started.elapsed()),
        s.tokens,
        field(&s.id, 100),
    ));
}

/// `text`, at most `max` characters, as one field of a log line: control
/// characters written out as `text::one_line` writes them (`\u{1b}`,
/// `\n`), so that a client's escape sequence cannot drive the terminal nor
/// a newline forge a line of its own, and other whitespace too (`\u{20}`),
/// so that the field stays one word; `-` when empty.
fn field(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max));
    for c in text.chars().take(max) {
        if c.is_control() {
            out.extend(c.escape_default());
        } else if c.is_whitespace() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    if out.is_empty() {
        out.push('-');
    }
    out
}

/// Answers `rq` with `status` and the JSON `body`; returns the status.
/// The request's `traceparent`, the trace its run joins (design §7.9); a
/// malformed one is ignored.
fn traceparent(rq: &Request) -> Option<crate::trace::telemetry::SpanContext> {
    rq.headers()
        .iter()
        .find(|h| h.field.equiv("traceparent"))
        .and_then(|h| crate::trace::telemetry::parse_traceparent(h.value.as_str()).ok())
}

fn respond_json(rq: Request, status: u16, body: &Value, extra: &[(&str, String)]) -> u16 {
    let _ = rq.respond(json_response(status, body, extra));
    status
}

/// An answer of `status` with the JSON `body` and the `extra` headers
/// (`axe mcp serve --listen` answers with it too).
pub(crate) fn json_response(
    status: u16,
    body: &Value,
    extra: &[(&str, String)],
) -> Response<std::io::Cursor<Vec<u8>>> {
    let mut resp = Response::from_string(body.to_string()).with_status_code(status);
    let headers = [("content-type", "application/json")]
        .into_iter()
        .chain(extra.iter().map(|(n, v)| (*n, v.as_str())));
    for (name, value) in headers {
        // Every name and value here is axe's own ASCII.
        if let Ok(h) = Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            resp = resp.with_header(h);
        }
    }
    resp
}

/// Answers `rq` with `e` in OpenAI's error shape, saying whether a retry
/// may help ([`ApiError::headers`]).
fn respond_error(rq: Request, e: &ApiError, extra: &[(&str, String)]) -> u16 {
    respond_json(rq, e.status, &e.body(), &e.headers(extra))
}

#[cfg(test)]
mod tests;
