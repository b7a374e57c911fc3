//! The streamable HTTP transport (design §9.2): each message is a POST to
//! the server's URL, answered with JSON or with a stream of server-sent
//! events that carries the answer (and maybe the server's own requests and
//! logs first), read by the one SSE decoder (`provider::stream::sse`), as
//! the older transport's stream is ([`read_events`]). The session id the
//! server gives at `initialize` goes on every later request; stopping ends
//! the session with a DELETE. A server of the stateless revision (design
//! §9.7) has no session: each POST names its method and the tool it calls
//! in `Mcp-Method` and `Mcp-Name`, and a call past its deadline is
//! cancelled by closing its POST (that wire has no notifications from
//! the client). No thread of its own: each caller reads its
//! own answer, so calls run side by side.

use std::io::Read;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::rpc::{self, Failure, Log, Pending};
use super::stdio::MAX_LINE;
use crate::provider::stream::sse::{Event, Sse};

/// Why an answer's event stream is read no further.
enum Stop {
    /// The response came: what follows it is not waited for.
    Answered,
    Failed(Failure),
}

/// A streamable HTTP server.
pub struct Http {
    name: String,
    url: String,
    headers: Vec<(String, String)>,
    log: Log,
    pending: Pending,
    session: Mutex<Option<String>>,
    version: Mutex<Option<String>>,
    /// The server speaks the stateless revision (or is being probed).
    stateless: std::sync::atomic::AtomicBool,
    agent: ureq::Agent,
}

impl Http {
    pub fn new(name: &str, url: &str, headers: Vec<(String, String)>, log: Log) -> Http {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
            .build();
        Http {
            name: name.to_string(),
            url: url.to_string(),
            headers,
            log,
            pending: Pending::default(),
            session: Mutex::new(None),
            version: Mutex::new(None),
            stateless: std::sync::atomic::AtomicBool::new(false),
            agent: config.into(),
        }
    }

    /// The protocol version agreed on, sent on every later request.
    pub fn set_version(&self, version: &str) {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) = Some(version.to_string());
    }

    /// Speaks the stateless revision (`true`: its version header and the
    /// routing headers on each request) or the handshake (`false`: the
    /// version header once agreed).
    pub fn set_stateless(&self, on: bool) {
        use std::sync::atomic::Ordering;
        self.stateless.store(on, Ordering::Relaxed);
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
            on.then(|| super::era::STATELESS.to_string());
    }

    fn is_stateless(&self) -> bool {
        self.stateless.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sends a request and reads its answer until `deadline`; one still
    /// running then gets `notifications/cancelled` when `cancel`.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: bool,
    ) -> rpc::Answer {
        self.request_with(method, params, deadline, cancel, Vec::new())
    }

    /// [`Http::request`] with a call's `Mcp-Param-*` headers (the
    /// stateless era's).
    pub fn request_with(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: bool,
        param_headers: Vec<(String, String)>,
    ) -> rpc::Answer {
        let waiter = self.pending.open()?;
        let body = rpc::request(waiter.id, method, &params);
        let routing = self.is_stateless().then(|| super::era::Routing {
            params: param_headers,
            ..super::era::routing(method, &params)
        });
        let got = self
            .post_routed(&body, deadline, method == "initialize", routing.as_ref())
            .and_then(|resp| {
                self.read_answer(resp, deadline)?;
                waiter.try_take().unwrap_or_else(|| {
                    Err(Failure::Broken(format!(
                        "the MCP server \"{}\" ended its answer without a response to the request",
                        self.name
                    )))
                })
            });
        // A JSON-RPC error the refusal carried says more than its status.
        let got = match got {
            Err(f @ Failure::Refused(..)) => waiter.try_take().unwrap_or(Err(f)),
            other => other,
        };
        self.pending.close(waiter.id);
        if matches!(got, Err(Failure::Timeout)) && cancel && !self.is_stateless() {
            // A second, as the older SSE gives it (`rpc::call`): the call
            // is already past its deadline.
            let line = rpc::cancelled(waiter.id);
            let _ = self.post(&line, Instant::now() + Duration::from_secs(1), false);
        }
        got
    }

    /// Sends a notification: five seconds at most, and not past `deadline`.
    pub fn notify(&self, method: &str, params: &Value, deadline: Instant) -> Result<(), Failure> {
        let deadline = deadline.min(Instant::now() + Duration::from_secs(5));
        self.post(&rpc::notification(method, params), deadline, false)
            .map(|_| ())
    }

    /// Ends the session (a DELETE, a second at most). Later requests fail.
    pub fn stop(&self) {
        self.pending
            .break_with(&format!("the MCP server \"{}\" was stopped", self.name));
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(id) = session {
            let _ = self
                .agent
                .delete(&self.url)
                .header("mcp-session-id", &id)
                .config()
                .timeout_global(Some(Duration::from_secs(1)))
                .build()
                .call();
        }
    }

    /// POSTs `body`; a non-2xx status is a failure. At `initialize` the
    /// session id is taken from the answer.
    fn post(
        &self,
        body: &str,
        deadline: Instant,
        initialize: bool,
    ) -> Result<ureq::http::Response<ureq::Body>, Failure> {
        self.post_routed(body, deadline, initialize, None)
    }

    /// [`Http::post`] with the stateless revision's routing headers, when
    /// given.
    fn post_routed(
        &self,
        body: &str,
        deadline: Instant,
        initialize: bool,
        routing: Option<&super::era::Routing>,
    ) -> Result<ureq::http::Response<ureq::Body>, Failure> {
        let session = self
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let version = self
            .version
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut headers: Vec<(&str, &str)> =
            vec![("accept", "application/json, text/event-stream")];
        headers.extend(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        if let Some(id) = &session {
            headers.push(("mcp-session-id", id));
        }
        if let Some(v) = &version {
            headers.push(("mcp-protocol-version", v));
        }
        if let Some(r) = routing {
            headers.push(("mcp-method", &r.method));
            if let Some(name) = &r.name {
                headers.push(("mcp-name", name));
            }
            headers.extend(r.params.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        }
        let resp = send_json(&self.agent, &self.name, &self.url, &headers, body, deadline)?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let why = if status == 404
                && self
                    .session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_some()
            {
                "the server ended the session (HTTP 404)".to_string()
            } else {
                format!("HTTP {status}")
            };
            let why = format!("MCP server \"{}\": {why}", self.name);
            if routing.is_some() && (400..500).contains(&status) {
                self.refusal(resp, deadline);
            }
            return Err(if (400..500).contains(&status) {
                Failure::Refused(status, why)
            } else {
                Failure::Broken(why)
            });
        }
        if initialize && let Some(id) = header(&resp, "mcp-session-id") {
            *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(id);
        }
        Ok(resp)
    }

    /// The body of a 4xx in the stateless era, which maps a request's
    /// JSON-RPC error to an HTTP status (-32602 is 400, -32601 404) and
    /// carries the error: read when it is JSON, 64 KiB at most, and the
    /// error handed to its waiter.
    fn refusal(&self, resp: ureq::http::Response<ureq::Body>, deadline: Instant) {
        let kind = header(&resp, "content-type").unwrap_or_default();
        if !kind.starts_with("application/json") {
            return;
        }
        let mut body = Vec::new();
        let read = resp
            .into_body()
            .into_reader()
            .take(64 << 10)
            .read_to_end(&mut body);
        if read.is_ok() {
            let _ = self.take(&body, deadline);
        }
    }

    /// Reads a POST's answer, JSON or a stream of events, handing each
    /// message on, until the body ends or a response arrives.
    fn read_answer(
        &self,
        resp: ureq::http::Response<ureq::Body>,
        deadline: Instant,
    ) -> Result<(), Failure> {
        let kind = header(&resp, "content-type").unwrap_or_default();
        let reader = resp.into_body().into_reader();
        let max = u64::try_from(MAX_LINE).unwrap_or(u64::MAX);
        let over = || {
            Failure::Broken(format!(
                "MCP server \"{}\" sent an answer over {} MiB",
                self.name,
                MAX_LINE >> 20
            ))
        };
        let io = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::TimedOut => Failure::Timeout,
            _ if Instant::now() >= deadline => Failure::Timeout,
            _ => Failure::Broken(format!(
                "MCP server \"{}\": reading the answer: {e}",
                self.name
            )),
        };
        if !kind.starts_with("text/event-stream") {
            // A JSON answer is read whole, up to the cap a line has.
            let mut body = Vec::new();
            reader.take(max + 1).read_to_end(&mut body).map_err(io)?;
            if body.len() > MAX_LINE {
                return Err(over());
            }
            if body.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            return self.take(&body, deadline).map(|_| ());
        }
        // An event stream: each event capped, and the stream as a whole.
        let events = read_events(
            reader.take(max * 4),
            &mut |event| {
                if event.data.is_empty() {
                    return Ok(());
                }
                match self.take(event.data.as_bytes(), deadline) {
                    Ok(true) => Err(Stop::Answered),
                    Ok(false) => Ok(()),
                    Err(failure) => Err(Stop::Failed(failure)),
                }
            },
            || Stop::Failed(over()),
            |e| Stop::Failed(io(e)),
        );
        match events {
            Ok(()) | Err(Stop::Answered) => Ok(()),
            Err(Stop::Failed(failure)) => Err(failure),
        }
    }

    /// Handles the messages of one body or event; true when one was a
    /// response. A server's request is answered with a POST, on the
    /// caller's thread, so within the call's `deadline`.
    fn take(&self, bytes: &[u8], deadline: Instant) -> Result<bool, Failure> {
        let mut answered = false;
        rpc::each_message(bytes, &mut |m| {
            answered |= m.is_response();
            if let Some(reply) = rpc::handle(m, &self.pending, &self.log, &self.name) {
                let until = deadline.min(Instant::now() + Duration::from_secs(5));
                let _ = self.post(&reply, until, false);
            }
        })
        .map_err(|why| Failure::Broken(format!("MCP server \"{}\": {why}", self.name)))?;
        Ok(answered)
    }
}

/// POSTs `body` as JSON to `url` with `headers` before `deadline`: the
/// response, whatever its status; a timeout; or the server `name` out of
/// reach (the error redacted). Both HTTP transports send this way.
pub(super) fn send_json(
    agent: &ureq::Agent,
    name: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
    deadline: Instant,
) -> Result<ureq::http::Response<ureq::Body>, Failure> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Failure::Timeout);
    }
    let mut call = agent.post(url).header("content-type", "application/json");
    for (k, v) in headers {
        call = call.header(*k, *v);
    }
    call.config()
        .timeout_global(Some(left))
        .build()
        .send(body.as_bytes())
        .map_err(|e| match e {
            ureq::Error::Timeout(_) => Failure::Timeout,
            e => Failure::Broken(format!(
                "cannot reach the MCP server \"{name}\": {}",
                crate::text::redact::redact(&rpc::shown(&e.to_string(), rpc::SHOWN))
            )),
        })
}

/// Reads the server-sent events of `input` through the one decoder
/// (`provider::stream::sse`: lines end in CR, LF or CRLF) and hands each
/// to `each`, until the input ends (`Ok`) or `each` says stop. A line or
/// an event over [`MAX_LINE`] is `too_long`; a failed read, `io`'s. Both
/// HTTP transports read their streams so.
pub(super) fn read_events<E>(
    mut input: impl Read,
    each: &mut dyn FnMut(Event<'_>) -> Result<(), E>,
    too_long: impl Fn() -> E,
    io: impl Fn(std::io::Error) -> E,
) -> Result<(), E> {
    let mut sse = Sse::new(MAX_LINE);
    // On the heap: a caller's frame stays small (design §3.15).
    let mut buf = vec![0; 8 * 1024];
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        sse.feed(&buf[..n], each, &too_long)?;
    }
}

fn header(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that gives one byte a read.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let Some((first, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            buf[0] = *first;
            self.0 = rest;
            Ok(1)
        }
    }

    /// The events of `input` by `read_events`, or its error.
    fn read_all(input: impl Read, stop_at: usize) -> Result<Vec<(String, String)>, String> {
        let mut got = Vec::new();
        read_events(
            input,
            &mut |e| {
                got.push((e.name.to_string(), e.data.to_string()));
                if got.len() == stop_at {
                    return Err("stopped".to_string());
                }
                Ok(())
            },
            || "too long".to_string(),
            |e| e.to_string(),
        )?;
        Ok(got)
    }

    #[test]
    fn events_are_read_in_whatever_pieces_with_cr_line_ends() {
        let text = b": c\revent: endpoint\rdata: /m\r\rdata: {\"a\":\rdata: 1}\r\r";
        let got = read_all(Trickle(text), 0).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("endpoint", "/m"));
        assert_eq!(got[1].1, "{\"a\":\n1}");
        // `each` stops the reading at its first error.
        assert_eq!(read_all(&text[..], 1), Err("stopped".into()));
    }

    #[test]
    fn an_event_over_16_mib_is_too_long_whatever_its_lines() {
        let line = format!("data: {}\r", "x".repeat(1 << 20));
        let many = line.repeat(16) + "\r";
        assert_eq!(read_all(many.as_bytes(), 0), Err("too long".into()));
        let one = format!("data: {}\r\r", "x".repeat(MAX_LINE));
        assert_eq!(read_all(one.as_bytes(), 0), Err("too long".into()));
        // A line of 16 MiB, `data: ` included.
        let fits = format!("data: {}\r\r", "x".repeat(MAX_LINE - 6));
        assert_eq!(read_all(fits.as_bytes(), 0).map(|e| e.len()), Ok(1));
    }
}
