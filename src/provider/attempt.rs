//! One HTTP request to a provider and what it came to: the request built
//! (the wire's endpoint and headers, `accept`, extra headers) and sent with
//! the time left before the deadline, and its answer classified — a
//! response, or an [`Attempt`] that failed, with what the server said about
//! trying again, for the retry loop of `http.rs` to judge. A streamed body
//! goes to `streamed.rs`.

use std::time::{Duration, Instant, SystemTime};

use ureq::Body;
use ureq::http::Response as HttpResponse;
use ureq::http::{HeaderName, HeaderValue};

use super::client::client;
use super::error::{
    ErrorDetail, ErrorKind, ProviderError, error_detail, status_error, transport_error,
};
use super::retry::{retry_hint, retryable_status, should_retry_hint};
use super::{MAX_BODY_BYTES, Provider, Response};

impl Provider {
    /// One HTTP request of `req` and its classified outcome; a streamed
    /// answer's text goes to `on_text` as it comes.
    pub(super) fn attempt(
        &self,
        url: &str,
        body: &[u8],
        deadline: Instant,
        req: &super::Request,
        on_text: &dyn Fn(&str),
    ) -> Result<Box<Response>, Attempt> {
        let stream = req.stream;
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
        let sent = Instant::now();
        // A wire that never streams is asked for its answer whole.
        let streams = stream && self.wire.format().streams();
        let tp = req.traceparent.as_ref();
        let resp = self.send_request(url, body, remaining, streams, tp)?;
        self.answered(resp, url, sent, stream, on_text)
    }

    /// What a response whose head came is: its status classified, its body
    /// read whole and parsed, or its stream read. Out of line, as
    /// [`Provider::request`] is: inlined, the body, the parsed answer and
    /// the failures would sit in the frame of every thread waiting on its
    /// head (design §3.15).
    #[inline(never)]
    fn answered(
        &self,
        mut resp: HttpResponse<Body>,
        url: &str,
        sent: Instant,
        stream: bool,
        on_text: &dyn Fn(&str),
    ) -> Result<Box<Response>, Attempt> {
        let streams = stream && self.wire.format().streams();
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.failed_status(status, &mut resp));
        }
        // A server may answer a request for a stream whole, as JSON.
        if streams && !is_json(&resp) {
            return self
                .read_stream(resp.body_mut(), sent, on_text, url)
                .map(Box::new);
        }
        // A 2xx whose body cannot be read is the body's failure.
        let bytes = read_body(resp.body_mut())
            .map_err(|e| Attempt::failed(transport_error(self.wire, &self.base_url, e, url)))?;
        let answer = self.wire.format().parse(&String::from_utf8_lossy(&bytes));
        let answer = answer.map_err(|detail| {
            Attempt::failed(self.error(
                ErrorKind::InvalidResponse,
                Some(status),
                format!("invalid response: {detail}"),
            ))
        })?;
        // A server that answered a stream whole: its text at once.
        if stream && !answer.content.is_empty() {
            on_text(&answer.content);
        }
        Ok(Box::new(answer))
    }

    /// The request to `url` with the wire's headers and the extra ones
    /// (`traceparent`: its chat span's, design §7.9), sent with the time
    /// left: its response's head, or why none came.
    fn send_request(
        &self,
        url: &str,
        body: &[u8],
        remaining: Duration,
        stream: bool,
        traceparent: Option<&[u8; 55]>,
    ) -> Result<HttpResponse<Body>, Attempt> {
        self.request(url, body, remaining, stream, traceparent)
            .send(body)
            .map_err(|e| self.no_answer(e, url))
    }

    /// The request to `url`, built: out of line, so that the builders it
    /// goes through are off the stack of the thread while it waits on its
    /// answer (design §3.15).
    #[inline(never)]
    fn request(
        &self,
        url: &str,
        body: &[u8],
        remaining: Duration,
        stream: bool,
        traceparent: Option<&[u8; 55]>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        let format = self.wire.format();
        let accept = if stream {
            format.frames().accept()
        } else {
            "application/json"
        };
        let mut call = client(self.wire)
            .post(url)
            .header("content-type", "application/json")
            .header("accept", accept);
        for (name, value) in format.auth(self.api_key.as_deref()) {
            call = call.header(name, value);
        }
        for (name, value) in format.signed(self.aws.as_deref(), url, body) {
            call = call.header(name, value);
        }
        for (name, value) in &self.headers {
            call = call.header(name, value);
        }
        if let Some(tp) = traceparent {
            // Into the map in place, its name made at compile time: through
            // `header` the builder is moved in and out and the name parsed,
            // for every request a provider is sent (design §7.9).
            const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
            if let (Some(headers), Some(value)) = (call.headers_mut(), header_value(tp)) {
                headers.insert(TRACEPARENT, value);
            }
        }
        // A stream may take as long as the deadline allows, but not go
        // quiet for longer than the idle limit (the wait for the head too).
        let idle = stream.then_some(self.idle);
        call.config()
            .timeout_global(Some(remaining))
            .timeout_per_read(idle)
            .build()
    }

    /// A request that got no answer, or not all of one: silent past the
    /// idle limit, or a connection refused, reset or cut. Either may be
    /// retried, as long as nothing was handed out; the deadline is not.
    #[inline(never)]
    pub(super) fn no_answer(&self, e: ureq::Error, url: &str) -> Attempt {
        if matches!(e, ureq::Error::Timeout(ureq::Timeout::PerRead)) {
            return self.idle_failure();
        }
        let retryable = closed_before_response(&e);
        let mut failed = Attempt::failed(transport_error(self.wire, &self.base_url, e, url));
        failed.retryable = retryable;
        failed
    }

    /// A status other than 2xx, classified, with the provider's own message
    /// and what the server said about trying again.
    fn failed_status(&self, status: u16, resp: &mut HttpResponse<Body>) -> Attempt {
        let retry_after = retry_hint(
            header(resp, "retry-after-ms").as_deref(),
            header(resp, "retry-after").as_deref(),
            SystemTime::now(),
        );
        let should_retry = should_retry_hint(header(resp, "x-should-retry").as_deref());
        let location = header(resp, "location");
        // Still that status when its body cannot be read (a 503 cut off
        // mid-body is a 503, retried as one), with what went wrong reading
        // it as its detail.
        let body = read_body(resp.body_mut())
            .unwrap_or_else(|e| format!("(body unreadable: {e})").into_bytes());
        let detail = error_detail(&String::from_utf8_lossy(&body));
        let error = status_error(self.wire, status, &detail, location.as_deref());
        let retryable = retryable_status(status, error.kind);
        Attempt {
            error,
            detail: Box::new(detail),
            retry_after,
            should_retry,
            retryable,
        }
    }
}

/// Whether a transport error happened before any response: the connection
/// was refused, reset or closed. (A deadline timeout is not one of these.)
fn closed_before_response(e: &ureq::Error) -> bool {
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

fn header(resp: &HttpResponse<Body>, name: &str) -> Option<String> {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Whether the body is one JSON document (`content-type`).
fn is_json(resp: &HttpResponse<Body>) -> bool {
    header(resp, "content-type").is_some_and(|t| t.trim_start().starts_with("application/json"))
}

/// Reads at most [`MAX_BODY_BYTES`]; a longer body is an error, not read whole.
fn read_body(body: &mut Body) -> Result<Vec<u8>, ureq::Error> {
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

    pub(super) fn may_retry(&self) -> bool {
        // The deadline's timeout leaves no time to try again; a stream that
        // went quiet may be tried again within it.
        if self.error.kind == ErrorKind::Timeout && !self.error.idle {
            return false;
        }
        self.should_retry.unwrap_or(self.retryable)
    }
}

/// `bytes` as a header's value when each is printable ASCII (a
/// `traceparent`'s are): checked here in one pass, where `http`'s own check
/// took ~1,000 instructions a request (callgrind, design §7.9).
fn header_value(bytes: &[u8; 55]) -> Option<HeaderValue> {
    // ' ' to '~': one subtraction and compare a byte.
    if !bytes.iter().all(|&b| b.wrapping_sub(b' ') < 0x5f) {
        return None;
    }
    // SAFETY: every byte is visible ASCII or a space, checked above: what
    // a header value may hold (RFC 9110 field-vchar and SP).
    Some(unsafe { HeaderValue::from_maybe_shared_unchecked(*bytes) })
}
