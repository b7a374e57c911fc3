//! The one HTTP path: a provider endpoint with its credentials, sending a
//! request with the time left before the deadline, retrying what may be
//! retried, and turning every answer into a response or a classified error.
//! A streamed answer is read as it comes (design §4.11), its text handed
//! out piece by piece, with an idle limit between any two reads.

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::adjust::{self, Change, Quirks};
use super::client::client;
use super::error::{
    ErrorDetail, ErrorKind, ProviderError, error_detail, status_error, transport_error,
};
use super::retry::{RetryPolicy, retry_hint, retryable_status, should_retry_hint};
use super::{Kind, Request, Response, anthropic, ollama, openai};
use crate::redact;
use crate::text::one_line;

/// The largest response body axe reads; a larger one is refused, not read.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

/// How long a streamed answer may send nothing before it is given up
/// (design §4.11); `idle_timeout` in config.toml changes it.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(120);

/// A provider endpoint with its credentials. Cheap to build; the HTTP
/// connection pool behind it is shared by every call in the process. Its
/// `Debug` shows no key.
#[derive(Clone)]
pub struct Provider {
    pub kind: Kind,
    /// The provider's name as the model string gives it (`groq`): what
    /// its errors and reports say.
    pub name: String,
    pub base_url: String,
    api_key: Option<String>,
    /// Headers sent with every request beside the wire's own (config.toml's
    /// `headers`, OpenRouter's attribution).
    headers: Vec<(String, String)>,
    /// How failed requests are retried; none unless set.
    pub retry: RetryPolicy,
    /// The longest a streamed answer may send nothing.
    pub idle: Duration,
    /// The run's cancel flag (`axe serve`): no request is sent or retried
    /// once it is set, and a stream being read is given up at its next
    /// piece (design §14.3).
    pub cancel: Option<crate::deadline::Cancel>,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("base_url", &redact::redact(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| redact::MARK))
            .field("retry", &self.retry)
            .field("idle", &self.idle)
            .finish()
    }
}

/// What [`Provider::send_with`] tells its caller while it works (for
/// `--verbose`, warnings and the trace).
#[derive(Debug, Clone)]
pub enum Notice {
    /// A failed request is about to be retried.
    Retry(Retry),
    /// The model refused a parameter; the request is sent again without it.
    /// `first`: the first time this process learned it; `why`: the
    /// provider's own message.
    Adjusted {
        change: Change,
        first: bool,
        why: String,
    },
}

/// One retry about to happen, as reported to [`Provider::send_with`]'s
/// caller (for `--verbose` and the trace).
#[derive(Debug, Clone)]
pub struct Retry {
    /// The status that failed, or the network error's text.
    pub what: String,
    pub status: Option<u16>,
    /// The attempt about to be made (2 for the first retry), of `of`.
    pub attempt: u64,
    pub of: u64,
    /// How long it waits first.
    pub wait: Duration,
}

impl Provider {
    pub fn new(kind: Kind, base_url: impl Into<String>, api_key: Option<String>) -> Provider {
        if let Some(k) = &api_key {
            redact::register(k);
        }
        let base_url = base_url.into().trim_end_matches('/').to_string();
        redact::register_url(&base_url);
        Provider {
            kind,
            name: kind.name().to_string(),
            base_url,
            api_key,
            headers: Vec::new(),
            retry: RetryPolicy::NONE,
            idle: DEFAULT_IDLE,
            cancel: None,
        }
    }

    /// The same provider under the name a model string gave it.
    pub fn named(mut self, name: &str) -> Provider {
        self.name = name.to_string();
        self
    }

    /// The same provider sending `headers` with every request; their
    /// values are registered as secrets (an attribution header is not one,
    /// but a token in `headers` is).
    pub fn with_headers(mut self, headers: Vec<(String, String)>) -> Provider {
        for (_, v) in &headers {
            redact::register(v);
        }
        self.headers = headers;
        self
    }

    /// The URL requests are sent to.
    pub fn endpoint(&self) -> String {
        match self.kind {
            Kind::Anthropic => super::wire::join_v1(&self.base_url, "messages"),
            Kind::OpenAi => super::wire::join_v1(&self.base_url, "chat/completions"),
            Kind::Ollama => format!("{}/api/chat", self.base_url),
        }
    }

    /// The JSON body for `req` in this provider's wire format, written as
    /// this process knows the model wants it (see [`adjust`]).
    pub fn body(&self, req: &Request) -> Value {
        self.body_with(req, adjust::known(self.kind, &self.base_url, req))
    }

    fn body_with(&self, req: &Request, quirks: Quirks) -> Value {
        match self.kind {
            Kind::Anthropic => anthropic::body(req, quirks),
            Kind::OpenAi => openai::body(req, quirks),
            Kind::Ollama => ollama::body(req),
        }
    }

    /// Sends `req` and waits for the answer, at most until `deadline`,
    /// retrying as [`Provider::retry`] says; a wait that would pass the
    /// deadline is not started, and the last error is returned instead.
    pub fn send(&self, req: &Request, deadline: Instant) -> Result<Response, ProviderError> {
        self.send_with(req, deadline, &|_| {}, None)
    }

    /// [`Provider::send`], telling `on_notice` about each retry before its
    /// wait, and about each parameter the model refused (the request is
    /// then sent again without it, once per parameter, not counted as a
    /// retry). A streamed answer's text is handed to `on_text` as it comes
    /// (the whole text at once when the server did not stream); once some
    /// was, a failure of that request is final: what was handed out cannot
    /// be taken back (design §4.11).
    pub fn send_with(
        &self,
        req: &Request,
        deadline: Instant,
        on_notice: &dyn Fn(&Notice),
        on_text: Option<&dyn Fn(&str)>,
    ) -> Result<Response, ProviderError> {
        self.send_inner(req, deadline, on_notice, on_text)
            .map_err(|mut e| {
                e.name.clone_from(&self.name);
                e
            })
    }

    fn send_inner(
        &self,
        req: &Request,
        deadline: Instant,
        on_notice: &dyn Fn(&Notice),
        on_text: Option<&dyn Fn(&str)>,
    ) -> Result<Response, ProviderError> {
        let mut quirks = adjust::known(self.kind, &self.base_url, req);
        let mut body = self.encode(req, quirks)?;
        let mut retries = 0;
        let handed_out = Cell::new(false);
        let hand_out = |text: &str| {
            if let Some(on_text) = on_text {
                handed_out.set(true);
                on_text(text);
            }
        };
        loop {
            let failed = match self.attempt(&body, deadline, req.stream, &hand_out) {
                Ok(mut resp) => {
                    resp.retries = retries;
                    return Ok(resp);
                }
                Err(failed) => failed,
            };
            if handed_out.get() {
                let mut error = failed.error;
                error.retries = retries;
                return Err(error);
            }
            if let Some(status) = failed.error.status
                && let Some(change) =
                    adjust::refused(self.kind, status, &failed.detail, req, quirks)
            {
                let first = adjust::learn(self.kind, &self.base_url, req, change);
                on_notice(&Notice::Adjusted {
                    change,
                    first,
                    why: failed.detail.message.clone(),
                });
                quirks = quirks.with(change);
                body = self.encode(req, quirks)?;
                continue;
            }
            let mut error = failed.error.clone();
            error.retries = retries;
            if retries >= self.retry.max_retries || !failed.may_retry() {
                return Err(error);
            }
            let wait = failed
                .retry_after
                .unwrap_or_else(|| self.retry.backoff(retries));
            if Instant::now()
                .checked_add(wait)
                .is_none_or(|t| t >= deadline)
            {
                return Err(error);
            }
            retries += 1;
            let what = match failed.error.status {
                Some(status) => status.to_string(),
                None => one_line(&failed.error.message),
            };
            on_notice(&Notice::Retry(Retry {
                what,
                status: failed.error.status,
                attempt: u64::from(retries) + 1,
                of: u64::from(self.retry.max_retries) + 1,
                wait,
            }));
            std::thread::sleep(wait);
        }
    }

    /// Whether the run this provider serves was cancelled.
    pub(super) fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(crate::deadline::Cancel::is_set)
    }

    /// The failure of a request given up because its run was cancelled:
    /// never retried.
    pub(super) fn cancelled_failure(&self) -> Attempt {
        let mut failed =
            Attempt::failed(self.error(ErrorKind::Network, None, "the run was cancelled"));
        failed.retryable = false;
        failed
    }

    pub(super) fn error(
        &self,
        kind: ErrorKind,
        status: Option<u16>,
        message: impl AsRef<str>,
    ) -> ProviderError {
        ProviderError::new(self.kind, kind, status, message)
    }

    fn encode(&self, req: &Request, quirks: Quirks) -> Result<Vec<u8>, ProviderError> {
        serde_json::to_vec(&self.body_with(req, quirks)).map_err(|e| {
            self.error(
                ErrorKind::BadRequest,
                None,
                format!("cannot encode request: {e}"),
            )
        })
    }

    /// One HTTP request and its classified outcome; a streamed answer's
    /// text goes to `on_text` as it comes.
    fn attempt(
        &self,
        body: &[u8],
        deadline: Instant,
        stream: bool,
        on_text: &dyn Fn(&str),
    ) -> Result<Response, Attempt> {
        if self.cancelled() {
            return Err(self.cancelled_failure());
        }
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Attempt::failed(self.error(
                ErrorKind::Timeout,
                None,
                "no time left before the deadline",
            )));
        }
        let url = self.endpoint();
        let accept = match (stream, self.kind) {
            (false, _) => "application/json",
            (true, Kind::Ollama) => "application/x-ndjson",
            (true, _) => "text/event-stream",
        };
        let mut call = client(self.kind)
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", accept);
        match (self.kind, &self.api_key) {
            (Kind::Anthropic, key) => {
                call = call
                    .header("x-api-key", key.as_deref().unwrap_or(""))
                    .header("anthropic-version", "2023-06-01");
            }
            (Kind::OpenAi | Kind::Ollama, Some(key)) => {
                call = call.header("authorization", format!("Bearer {key}"));
            }
            (Kind::OpenAi | Kind::Ollama, None) => {}
        }
        for (name, value) in &self.headers {
            call = call.header(name, value);
        }
        let sent = Instant::now();
        // A stream may take as long as the deadline allows, but not go
        // quiet for longer than the idle limit (the wait for the head too).
        let idle = stream.then_some(self.idle);
        let result = call
            .config()
            .timeout_global(Some(remaining))
            .timeout_per_read(idle)
            .build()
            .send(body);
        let mut resp = match result {
            Ok(resp) => resp,
            Err(ureq::Error::Timeout(ureq::Timeout::PerRead)) => {
                return Err(self.idle_failure());
            }
            // Nothing came back: a refused or dropped connection may be retried.
            Err(e) => {
                let retryable = closed_before_response(&e);
                let mut failed =
                    Attempt::failed(transport_error(self.kind, &self.base_url, e, &url));
                failed.retryable = retryable;
                return Err(failed);
            }
        };

        let status = resp.status().as_u16();
        let location = header(&resp, "location");
        // Retry hints are read only where a retry may follow.
        let (wait, should_retry) = if (200..300).contains(&status) {
            (None, None)
        } else {
            (
                retry_hint(
                    header(&resp, "retry-after-ms").as_deref(),
                    header(&resp, "retry-after").as_deref(),
                    std::time::SystemTime::now(),
                ),
                should_retry_hint(header(&resp, "x-should-retry").as_deref()),
            )
        };
        let streamed = stream
            && (200..300).contains(&status)
            && !header(&resp, "content-type")
                .is_some_and(|t| t.trim_start().starts_with("application/json"));
        if streamed {
            return self.read_stream(resp.body_mut(), sent, on_text, &url);
        }
        let bytes = match read_body(resp.body_mut()) {
            Ok(bytes) => bytes,
            // A 2xx whose body cannot be read is the body's failure; any other
            // status is still that status (a 503 cut off mid-body is a 503,
            // retried as one), with what went wrong reading it as its detail.
            Err(e) if (200..300).contains(&status) => {
                return Err(Attempt::failed(transport_error(
                    self.kind,
                    &self.base_url,
                    e,
                    &url,
                )));
            }
            Err(e) => format!("(body unreadable: {e})").into_bytes(),
        };
        let text = String::from_utf8_lossy(&bytes);

        if !(200..300).contains(&status) {
            let detail = error_detail(&text);
            let error = status_error(self.kind, status, &detail, location.as_deref());
            let retryable = retryable_status(status, error.kind);
            return Err(Attempt {
                error,
                detail: Box::new(detail),
                retry_after: wait,
                should_retry,
                retryable,
            });
        }
        let parsed = match self.kind {
            Kind::Anthropic => anthropic::parse(&text),
            Kind::OpenAi => openai::parse(&text),
            Kind::Ollama => ollama::parse(&text),
        };
        let resp = parsed.map_err(|detail| {
            Attempt::failed(self.error(
                ErrorKind::InvalidResponse,
                Some(status),
                format!("invalid response: {detail}"),
            ))
        })?;
        // A server that answered a stream whole: its text at once.
        if stream && !resp.content.is_empty() {
            on_text(&resp.content);
        }
        Ok(resp)
    }
}

/// Whether a transport error happened before any response: the connection
/// was refused, reset or closed. (A deadline timeout is not one of these.)
pub(super) fn closed_before_response(e: &ureq::Error) -> bool {
    use std::io::ErrorKind as Io;
    match e {
        ureq::Error::ConnectionFailed => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            Io::ConnectionRefused
                | Io::ConnectionReset
                | Io::ConnectionAborted
                | Io::BrokenPipe
                | Io::UnexpectedEof
                | Io::NotConnected
        ),
        _ => false,
    }
}

fn header(resp: &ureq::http::Response<ureq::Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Reads at most [`MAX_BODY_BYTES`]; a longer body is an error, not read whole.
fn read_body(body: &mut ureq::Body) -> Result<Vec<u8>, ureq::Error> {
    body.with_config().limit(MAX_BODY_BYTES).read_to_vec()
}

/// A failed attempt and what the server said about trying again.
pub(super) struct Attempt {
    pub(super) error: ProviderError,
    /// The error body's message, type and parameter, when there was one
    /// (boxed: failures are rare, and the result stays small).
    pub(super) detail: Box<ErrorDetail>,
    /// `Retry-After` (seconds or an HTTP date), or `retry-after-ms`.
    pub(super) retry_after: Option<Duration>,
    /// Anthropic's `x-should-retry`, which overrides the status.
    pub(super) should_retry: Option<bool>,
    /// Whether the failure is of a retryable kind (design D12).
    pub(super) retryable: bool,
}

impl Attempt {
    pub(super) fn failed(error: ProviderError) -> Attempt {
        Attempt {
            error,
            detail: Box::default(),
            retry_after: None,
            should_retry: None,
            retryable: false,
        }
    }

    fn may_retry(&self) -> bool {
        // The deadline's timeout leaves no time to try again; a stream that
        // went quiet may be tried again within it.
        if self.error.kind == ErrorKind::Timeout && !self.error.idle {
            return false;
        }
        self.should_retry.unwrap_or(self.retryable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_debug_text_shows_no_key_or_password() {
        let p = Provider::new(
            Kind::OpenAi,
            "http://u:debug-pass-123@h:1",
            Some("sk-debug-key-0123456789".into()),
        );
        let text = format!("{p:?}");
        assert!(!text.contains("sk-debug-key"), "{text}");
        assert!(!text.contains("debug-pass-123"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
