//! The older HTTP+SSE transport (protocol 2024-11-05), which the Go
//! original's agent files name as `transport = "sse"` (design §9.2): a GET
//! opens a stream of server-sent events whose first, `endpoint`, says where
//! to POST; every message axe sends is a POST there, and every message the
//! server sends (responses, its requests, logs) comes as a `message` event
//! on the stream. One reader thread per connection reads the stream (with
//! the one SSE decoder, `provider::stream::sse`) and hands each response
//! to the caller waiting on its id, as stdio's does.

use std::io::Read;
use std::sync::mpsc::{self, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::rpc::{self, Failure, Log, Pending};
use super::stdio::MAX_LINE;

/// A server on the older SSE transport.
pub struct Sse {
    name: String,
    /// Where messages are POSTed: the `endpoint` event's URL.
    post_url: String,
    headers: Vec<(String, String)>,
    pending: Arc<Pending>,
    agent: ureq::Agent,
    /// The stream's reader, told to end at [`Sse::stop`].
    stopped: Arc<Mutex<bool>>,
}

/// What the reader thread needs to answer the server.
struct Poster {
    name: String,
    post_url: Arc<Mutex<Option<String>>>,
    headers: Vec<(String, String)>,
    agent: ureq::Agent,
}

impl Sse {
    /// Opens the event stream at `url` and waits, until `deadline`, for the
    /// endpoint to POST to.
    pub fn start(
        name: &str,
        url: &str,
        headers: Vec<(String, String)>,
        log: Log,
        deadline: Instant,
    ) -> Result<Sse, String> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let left = deadline.saturating_duration_since(Instant::now());
        let mut get = agent.get(url).header("accept", "text/event-stream");
        for (k, v) in &headers {
            get = get.header(k, v);
        }
        // The head within the deadline; the stream then lives for the run.
        let resp = get
            .config()
            .timeout_recv_response(Some(left))
            .timeout_connect(Some(left))
            .build()
            .call()
            .map_err(|e| {
                format!(
                    "cannot reach it: {}",
                    crate::text::redact::redact(&e.to_string())
                )
            })?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(format!("its event stream answered HTTP {status}"));
        }
        let pending = Arc::new(Pending::default());
        let stopped = Arc::new(Mutex::new(false));
        let endpoint = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::sync_channel(1);
        let poster = Poster {
            name: name.to_string(),
            post_url: endpoint.clone(),
            headers: headers.clone(),
            agent: agent.clone(),
        };
        let reader = Reader {
            base: url.to_string(),
            pending: pending.clone(),
            stopped: stopped.clone(),
            log,
            poster,
            endpoint: Some(tx),
        };
        std::thread::Builder::new()
            .name(format!("mcp-{name}"))
            .spawn(move || reader.read(resp))
            .map_err(|e| format!("cannot start a thread to read it: {e}"))?;
        let left = deadline.saturating_duration_since(Instant::now());
        let post_url = rx
            .recv_timeout(left)
            .map_err(|_| "its event stream sent no endpoint before the deadline".to_string())??;
        Ok(Sse {
            name: name.to_string(),
            post_url,
            headers,
            pending,
            agent,
            stopped,
        })
    }

    /// Sends a request and waits for its answer on the stream until
    /// `deadline`; one still running then gets `notifications/cancelled`
    /// when `cancel`.
    pub fn request(
        &self,
        method: &str,
        params: Value,
        deadline: Instant,
        cancel: bool,
    ) -> rpc::Answer {
        // A second for the cancel, past the call's deadline.
        let late = |line: &str| {
            let _ = self.post(line, Instant::now() + Duration::from_secs(1));
        };
        rpc::call(
            &self.pending,
            method,
            &params,
            deadline,
            &|line, until| self.post(line, until),
            cancel.then_some(&late as &dyn Fn(&str)),
        )
    }

    /// Sends a notification: five seconds at most, and not past `deadline`.
    pub fn notify(&self, method: &str, params: &Value, deadline: Instant) -> Result<(), Failure> {
        let deadline = deadline.min(Instant::now() + Duration::from_secs(5));
        self.post(&rpc::notification(method, params), deadline)
    }

    /// Later requests fail; the reader ends at the stream's next event or
    /// when the server closes it (a blocking read cannot be interrupted).
    pub fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.pending
            .break_with(&format!("the MCP server \"{}\" was stopped", self.name));
    }

    fn post(&self, body: &str, deadline: Instant) -> Result<(), Failure> {
        post(
            &self.agent,
            &self.name,
            &self.post_url,
            &self.headers,
            body,
            deadline,
        )
    }
}

/// POSTs one message to `url`; any 2xx (the spec's 202) is taken.
fn post(
    agent: &ureq::Agent,
    name: &str,
    url: &str,
    headers: &[(String, String)],
    body: &str,
    deadline: Instant,
) -> Result<(), Failure> {
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let resp = super::http::send_json(agent, name, url, &headers, body, deadline)?;
    let status = resp.status().as_u16();
    if (200..300).contains(&status) {
        Ok(())
    } else {
        Err(Failure::Broken(format!(
            "MCP server \"{name}\": HTTP {status}"
        )))
    }
}

/// The reader thread's state.
struct Reader {
    /// The stream's URL, which a relative endpoint resolves against.
    base: String,
    pending: Arc<Pending>,
    stopped: Arc<Mutex<bool>>,
    log: Log,
    poster: Poster,
    /// Told the endpoint once (or why the stream ended before one came),
    /// then dropped.
    endpoint: Option<SyncSender<Result<String, String>>>,
}

impl Reader {
    /// Reads events until the stream ends or the server is stopped; then
    /// every request still waiting fails.
    fn read(mut self, resp: ureq::http::Response<ureq::Body>) {
        let name = self.poster.name.clone();
        let stopped = self.stopped.clone();
        let input = Unless {
            input: resp.into_body().into_reader(),
            stopped: stopped.clone(),
        };
        let is_stopped = || *stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let closed = || format!("the MCP server \"{name}\" closed its event stream");
        let read = super::http::read_events(
            input,
            &mut |event| {
                if is_stopped() {
                    return Err(format!("the MCP server \"{name}\" was stopped"));
                }
                self.dispatch(event.name, event.data.as_bytes())
            },
            || {
                format!(
                    "the MCP server \"{name}\" sent an event over {} MiB",
                    MAX_LINE >> 20
                )
            },
            |_| closed(),
        );
        let why = match read {
            Err(why) => why,
            Ok(()) if is_stopped() => format!("the MCP server \"{name}\" was stopped"),
            Ok(()) => closed(),
        };
        if let Some(tx) = self.endpoint.take() {
            let _ = tx.send(Err(why.clone()));
        }
        self.pending.break_with(&why);
    }

    /// One whole event: the endpoint, or messages for their waiters. An
    /// endpoint off the stream's origin is an error, which ends the stream.
    fn dispatch(&mut self, event: &str, data: &[u8]) -> Result<(), String> {
        if data.is_empty() {
            return Ok(());
        }
        // Spaces around the name are forgiven.
        if event.trim() == "endpoint" {
            let url = resolve(&self.base, String::from_utf8_lossy(data).trim());
            // The headers (a token, say) go only where the stream is.
            if origin(&url) != origin(&self.base) {
                return Err(format!(
                    "the MCP server \"{}\" named an endpoint not on the origin of its event \
                     stream: {}",
                    self.poster.name,
                    crate::text::redact::redact(&rpc::shown(&url, 200))
                ));
            }
            *self
                .poster
                .post_url
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(url.clone());
            if let Some(tx) = self.endpoint.take() {
                let _ = tx.send(Ok(url));
            }
            return Ok(());
        }
        let name = &self.poster.name;
        // An event that is not JSON-RPC is passed over.
        let _ = rpc::each_message(data, &mut |m| {
            if let Some(reply) = rpc::handle(m, &self.pending, &self.log, name) {
                let url = self
                    .poster
                    .post_url
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                if let Some(url) = url {
                    let deadline = Instant::now() + Duration::from_secs(5);
                    let p = &self.poster;
                    let _ = post(&p.agent, name, &url, &p.headers, &reply, deadline);
                }
            }
        });
        Ok(())
    }
}

/// The stream, read no further once the server is stopped: a blocking
/// read cannot be interrupted, so the reader ends at its next one.
struct Unless<R> {
    input: R,
    stopped: Arc<Mutex<bool>>,
}

impl<R: Read> Read for Unless<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) {
            return Ok(0);
        }
        self.input.read(buf)
    }
}

/// Where a request to `url` goes: its scheme and host, with the port (the
/// scheme's default when none is written), lowercased.
fn origin(url: &str) -> Option<(String, String)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let scheme = scheme.to_ascii_lowercase();
    let mut host = host.to_ascii_lowercase();
    let port = host
        .rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    if !port {
        match scheme.as_str() {
            "http" => host.push_str(":80"),
            "https" => host.push_str(":443"),
            _ => {}
        }
    }
    Some((scheme, host))
}

/// `endpoint` as an absolute URL: as it is when it has a scheme, else on
/// `base`'s scheme and host (a path), or beside `base` (a relative path).
fn resolve(base: &str, endpoint: &str) -> String {
    let scheme = endpoint.split_once("://").map(|(s, _)| s);
    if scheme.is_some_and(|s| {
        s.starts_with(|c: char| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    }) {
        return endpoint.to_string();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let host = rest.split('/').next().unwrap_or(rest);
    if endpoint.starts_with('/') {
        return format!("{scheme}://{host}{endpoint}");
    }
    let dir = base.rsplit_once('/').map_or(base, |(d, _)| d);
    format!("{dir}/{endpoint}")
}

#[cfg(test)]
mod tests {
    use super::resolve;

    #[test]
    fn an_endpoint_resolves_against_the_stream_url() {
        let base = "http://127.0.0.1:3001/sse";
        assert_eq!(
            resolve(base, "/message?sessionId=ab"),
            "http://127.0.0.1:3001/message?sessionId=ab"
        );
        assert_eq!(
            resolve(base, "messages?sessionId=ab"),
            "http://127.0.0.1:3001/messages?sessionId=ab"
        );
        assert_eq!(resolve(base, "https://h/m"), "https://h/m");
        assert_eq!(
            resolve(base, "/m?next=http://h/"),
            "http://127.0.0.1:3001/m?next=http://h/"
        );
    }

    #[test]
    fn an_origin_is_the_scheme_host_and_port() {
        use super::origin;
        let o = |u| origin(u).unwrap();
        assert_eq!(
            o("http://127.0.0.1:3001/sse"),
            o("http://127.0.0.1:3001/m?x")
        );
        assert_eq!(o("http://H/sse"), o("http://h:80/m"));
        assert_eq!(o("https://h/sse"), o("https://u:p@h:443/m"));
        assert_ne!(o("http://h/sse"), o("https://h/m"));
        assert_ne!(o("http://h:1/sse"), o("http://h:2/m"));
        assert_ne!(o("http://h/sse"), o("http://h.evil/m"));
    }
}
