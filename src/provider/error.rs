//! What can go wrong with a provider call, and how it is classified: the
//! kind of failure (which decides the exit code), the provider's own error
//! text read from any body shape, and the transport failures of the HTTP
//! path.

use std::fmt;

use serde_json::Value;

use super::{MAX_BODY_BYTES, Wire};
use crate::text::redact;
use crate::text::{clip, one_line};

/// What went wrong with a provider call; decides the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// 401, 403.
    Auth,
    /// 429.
    RateLimit,
    /// 529, or Anthropic's `overloaded_error`.
    Overloaded,
    /// Other 5xx.
    Server,
    /// The deadline passed before the answer was complete.
    Timeout,
    /// Connection refused, reset, DNS, TLS; also unexpected redirects.
    Network,
    /// 400, 404, 422 and other 4xx: the request itself is wrong.
    BadRequest,
    /// A 2xx whose body cannot be used (design D13).
    InvalidResponse,
}

/// A classified provider failure. Its text includes the provider's own error
/// message, with every configured key redacted (design D18).
#[derive(Debug, Clone)]
pub struct ProviderError {
    /// The wire format the request went out on.
    pub wire: Wire,
    /// The provider's name as the model string gave it (`groq`), which its
    /// message starts with.
    pub provider: String,
    pub kind: ErrorKind,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    pub message: String,
    /// HTTP requests retried before giving up (design D12).
    pub retries: u32,
    /// A streamed answer that sent nothing for its idle limit: a timeout
    /// that is not the deadline's (design §4.11).
    pub idle: bool,
}

impl ProviderError {
    pub(super) fn new(
        wire: Wire,
        kind: ErrorKind,
        status: Option<u16>,
        message: impl AsRef<str>,
    ) -> Self {
        let message = redact::redact(message.as_ref());
        ProviderError {
            wire,
            provider: wire.name().to_string(),
            kind,
            status,
            message,
            retries: 0,
            idle: false,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider, self.message)
    }
}

impl std::error::Error for ProviderError {}

/// The message and type of a provider's error body, whatever its shape:
/// Anthropic and OpenAI `{"error":{"message","type"}}`, Ollama
/// `{"error":"..."}`, a plain `{"message":...}`, an HTML page, or text.
#[derive(Debug, Default, PartialEq)]
pub struct ErrorDetail {
    pub message: String,
    pub error_type: Option<String>,
    /// The request parameter the error is about (OpenAI's `error.param`).
    pub param: Option<String>,
}

pub fn error_detail(body: &str) -> ErrorDetail {
    const MAX: usize = 300;
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return ErrorDetail {
            message: "(empty body)".into(),
            ..ErrorDetail::default()
        };
    }
    if let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        let err = &v["error"];
        let message = err["message"]
            .as_str()
            .or_else(|| err.as_str())
            .or_else(|| v["message"].as_str())
            .or_else(|| v["detail"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| clip(trimmed, MAX, "…"));
        let error_type = err["type"].as_str().map(str::to_string);
        return ErrorDetail {
            message: clip(&one_line(&message), MAX, "…"),
            error_type,
            param: err["param"].as_str().map(str::to_string),
        };
    }
    if looks_like_html(trimmed) {
        let title = between(trimmed, "<title>", "</title>").map(|t| one_line(t.trim()));
        let message = match title {
            Some(t) if !t.is_empty() => format!("HTML error page: {t}"),
            _ => "HTML error page".into(),
        };
        return ErrorDetail {
            message: clip(&message, MAX, "…"),
            ..ErrorDetail::default()
        };
    }
    ErrorDetail {
        message: clip(&one_line(trimmed), MAX, "…"),
        ..ErrorDetail::default()
    }
}

/// Whether a body is an HTML page rather than JSON.
pub fn looks_like_html(body: &str) -> bool {
    let start: String = body
        .trim_start()
        .chars()
        .take(15)
        .collect::<String>()
        .to_ascii_lowercase();
    start.starts_with("<!doctype") || start.starts_with("<html") || start.starts_with("<head")
}

/// Detail for a 2xx body that is not the JSON expected (design D13).
pub fn invalid_json_detail(body: &str, err: &serde_json::Error) -> String {
    if body.trim().is_empty() {
        "empty body".into()
    } else if looks_like_html(body) {
        "got an HTML page instead of JSON".into()
    } else if err.is_eof() {
        format!("truncated JSON ({err})")
    } else {
        err.to_string()
    }
}

fn between<'a>(s: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let lower = s.to_ascii_lowercase();
    let start = lower.find(open)? + open.len();
    let end = lower[start..].find(close)? + start;
    s.get(start..end)
}

/// Classifies a non-2xx answer; the provider's own message is kept.
pub(super) fn status_error(
    wire: Wire,
    status: u16,
    detail: &ErrorDetail,
    location: Option<&str>,
) -> ProviderError {
    let overloaded = detail.error_type.as_deref() == Some("overloaded_error");
    let (kind, what) = match status {
        401 | 403 => (ErrorKind::Auth, "authentication failed"),
        429 => (ErrorKind::RateLimit, "rate limited"),
        529 => (ErrorKind::Overloaded, "overloaded"),
        _ if overloaded => (ErrorKind::Overloaded, "overloaded"),
        500..=599 => (ErrorKind::Server, "server error"),
        404 => (ErrorKind::BadRequest, "not found"),
        300..=399 => (ErrorKind::Network, "unexpected redirect"),
        _ => (ErrorKind::BadRequest, "bad request"),
    };
    let mut msg = format!("{what} (HTTP {status})");
    if (300..400).contains(&status) {
        msg.push_str(&format!(
            " to {}: redirects are not followed; check the base URL",
            location.unwrap_or("(no location)")
        ));
    } else if !detail.message.is_empty() {
        msg.push_str(": ");
        msg.push_str(&detail.message);
    }
    ProviderError::new(wire, kind, Some(status), msg)
}

/// Classifies an error event in the middle of a streamed answer (its HTTP
/// status was 2xx): by the error's type, as the status that type comes
/// with would be, and whether it may be retried as that status would.
/// A type axe does not know is a server error.
pub(super) fn stream_error(wire: Wire, detail: &ErrorDetail) -> (ProviderError, bool) {
    let (kind, what, retryable) = match detail.error_type.as_deref().unwrap_or("") {
        // Anthropic's and OpenAI's types, and Bedrock's exceptions.
        "overloaded_error" | "serviceUnavailableException" => {
            (ErrorKind::Overloaded, "overloaded", true)
        }
        "rate_limit_error" | "rate_limit_exceeded" | "throttlingException" => {
            (ErrorKind::RateLimit, "rate limited", true)
        }
        "authentication_error" | "permission_error" | "accessDeniedException" => {
            (ErrorKind::Auth, "authentication failed", false)
        }
        // The Responses API's `response.failed` code for a prompt it refuses.
        "invalid_request_error"
        | "invalid_prompt"
        | "not_found_error"
        | "request_too_large"
        | "validationException" => (ErrorKind::BadRequest, "bad request", false),
        _ => (ErrorKind::Server, "server error", true),
    };
    let mut msg = format!("{what} (an error event in the stream)");
    if !detail.message.is_empty() {
        msg.push_str(": ");
        msg.push_str(&detail.message);
    }
    (ProviderError::new(wire, kind, None, msg), retryable)
}

/// Classifies a request that got no usable response; `base_url` and `url`
/// say where it went.
pub(super) fn transport_error(
    wire: Wire,
    base_url: &str,
    err: ureq::Error,
    url: &str,
) -> ProviderError {
    use std::io::ErrorKind as Io;
    let error = |kind, message: String| ProviderError::new(wire, kind, None, message);
    let connection_refused = || {
        let message = wire.format().connection_refused(base_url, url);
        error(ErrorKind::Network, message)
    };
    match err {
        ureq::Error::Timeout(_) => error(ErrorKind::Timeout, "request timed out".into()),
        ureq::Error::Io(e) if matches!(e.kind(), Io::TimedOut | Io::WouldBlock) => {
            error(ErrorKind::Timeout, "request timed out".into())
        }
        ureq::Error::BodyExceedsLimit(_) => error(
            ErrorKind::InvalidResponse,
            format!(
                "invalid response: body larger than {} MiB",
                MAX_BODY_BYTES >> 20
            ),
        ),
        ureq::Error::ConnectionFailed => connection_refused(),
        ureq::Error::Io(e) if e.kind() == Io::ConnectionRefused => connection_refused(),
        ureq::Error::HostNotFound => error(ErrorKind::Network, format!("host not found ({url})")),
        other => error(
            ErrorKind::Network,
            format!("network error: {other} ({url})"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_detail_reads_each_providers_shape() {
        let a = error_detail(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert_eq!(
            a,
            ErrorDetail {
                message: "Overloaded".into(),
                error_type: Some("overloaded_error".into()),
                param: None,
            }
        );
        let o = error_detail(
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#,
        );
        assert_eq!(o.message, "Incorrect API key");
        let l = error_detail(r#"{"error":"model \"x\" not found"}"#);
        assert_eq!(l.message, "model \"x\" not found");
        let h = error_detail("<html><head><title>502 Bad Gateway</title></head></html>");
        assert_eq!(h.message, "HTML error page: 502 Bad Gateway");
        assert_eq!(error_detail("").message, "(empty body)");
    }
}
