//! The provider layer: the request/response types shared by every wire
//! format, and the one HTTP path that sends a request to Anthropic, OpenAI
//! (or any OpenAI-compatible server) or Ollama and classifies what comes back.
//!
//! Each wire format lives in its own file and owns three things: the endpoint
//! path, the JSON body for a [`Request`], and the parsing of a successful
//! response body into a [`Response`]. Everything else — headers, deadlines,
//! size limits, error classification — is here, once.

pub mod adjust;
pub mod anthropic;
pub mod ollama;
pub mod openai;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

use crate::config::GlobalConfig;
use crate::error::{Code, Error};
use crate::redact;
use crate::text::{clip, one_line};
pub use adjust::{Change, Quirks};

/// The largest response body axe reads; a larger one is refused, not read.
pub const MAX_BODY_BYTES: u64 = 32 * 1024 * 1024;

// ---------------------------------------------------------------------------
// Types shared by every wire format (the sub-agents spec, Req 1.1–1.9).
// ---------------------------------------------------------------------------

/// One parameter of a tool's input schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolParameter {
    /// JSON Schema type, e.g. `"string"`.
    pub kind: String,
    pub description: String,
    pub required: bool,
    /// Allowed values (JSON Schema `enum`); empty means any (DECISIONS D19).
    pub allowed: Vec<String>,
}

/// A tool definition sent to the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: BTreeMap<String, ToolParameter>,
}

/// A tool invocation requested by the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// Provider-assigned id (generated as `ollama_<index>` for Ollama).
    pub id: String,
    pub name: String,
    /// Argument values as strings; non-string JSON values as their JSON text
    /// (DECISIONS D3), `null` as empty. This is for the tool's own use.
    pub arguments: BTreeMap<String, String>,
    /// The arguments exactly as the wire carried them (a JSON text for
    /// OpenAI, an object for Anthropic and Ollama), sent back unchanged in
    /// the conversation history. `Null` for a call that did not come from a
    /// provider: the history is then built from `arguments`.
    pub wire_arguments: Value,
}

/// The result of executing one [`ToolCall`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    /// The name of the tool that was called (Ollama's `tool_name`).
    pub tool_name: String,
    pub content: String,
    pub is_error: bool,
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Role {
    #[default]
    User,
    Assistant,
    /// Tool results (sent as a `user` message by Anthropic).
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    pub role: Role,
    /// May be empty when `tool_calls` is not; ignored when `tool_results` is not.
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_results: Vec<ToolResult>,
}

/// What is sent to a provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    pub model: String,
    /// Empty means no system prompt is sent.
    pub system: String,
    pub messages: Vec<Message>,
    /// `None` is not sent; `Some(0.0)` is sent as `0` (DECISIONS D8).
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Empty means no `tools` key at all.
    pub tools: Vec<Tool>,
    /// Whether the model may call `tools`.
    pub tool_choice: ToolChoice,
}

/// Whether a request lets the model call its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (every API's default).
    #[default]
    Auto,
    /// The tools are there only because the history names them (an agent at
    /// the depth limit whose model called one anyway: Anthropic refuses
    /// `tool_use` blocks without `tools`); the model may not call them. Sent
    /// only once the history has a tool call, and never to Ollama, which has
    /// no way to say "none".
    None,
}

impl Request {
    /// Whether the `tools` go on the wire: offered, or needed by the history
    /// and forbidden by `tool_choice` where the wire can say so.
    pub fn sends_tools(&self, can_forbid: bool) -> bool {
        !self.tools.is_empty()
            && match self.tool_choice {
                ToolChoice::Auto => true,
                ToolChoice::None => {
                    can_forbid && self.messages.iter().any(|m| !m.tool_calls.is_empty())
                }
            }
    }
}

/// What a provider answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Response {
    /// The text of the answer; empty when the model said nothing (D14).
    pub content: String,
    /// The provider's own stop reason, informational only.
    pub stop_reason: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Empty when the model called no tools.
    pub tool_calls: Vec<ToolCall>,
    /// HTTP requests retried before this answer (DECISIONS D12).
    pub retries: u32,
    /// The model declined to answer: `the model refused to answer`, then
    /// its own words or the provider's reason where the wire carries them.
    pub refusal: Option<String>,
    /// Why the answer is incomplete, when it is.
    pub cut: Option<Cut>,
}

/// Why an answer ended before the model finished it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The output limit (`max_tokens`) was reached.
    OutputLimit,
    /// The model's context window was full.
    ContextWindow,
    /// The provider's content filter stopped or removed the answer.
    Filtered,
}

impl Cut {
    /// What happened, for a warning or a marker: `cut off at the output limit`.
    pub fn describe(self) -> &'static str {
        match self {
            Cut::OutputLimit => "cut off at the output limit",
            Cut::ContextWindow => "cut off: the context window is full",
            Cut::Filtered => "stopped by the provider's content filter",
        }
    }
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: Role::User,
            content: content.into(),
            ..Message::default()
        }
    }
}

// ---------------------------------------------------------------------------
// Providers and model strings.
// ---------------------------------------------------------------------------

/// The supported wire formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Anthropic,
    OpenAi,
    Ollama,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Anthropic, Kind::OpenAi, Kind::Ollama];

    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The name used in model strings, config tables and env variables.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Anthropic => "anthropic",
            Kind::OpenAi => "openai",
            Kind::Ollama => "ollama",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            Kind::Anthropic => "https://api.anthropic.com",
            Kind::OpenAi => "https://api.openai.com",
            Kind::Ollama => "http://localhost:11434",
        }
    }

    pub fn needs_key(self) -> bool {
        !matches!(self, Kind::Ollama)
    }
}

/// A `provider/model` string, split at the first `/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    pub provider: Kind,
    pub model: String,
}

impl ModelRef {
    /// Parses `provider/model`. Errors are general errors (exit 1).
    pub fn parse(s: &str) -> Result<ModelRef, Error> {
        let (provider, model) = match s.split_once('/') {
            Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => (p.trim(), m.trim()),
            _ => {
                return Err(Error::general(format!(
                    "invalid model {s:?}: expected provider/model, e.g. anthropic/claude-sonnet-4-5"
                )));
            }
        };
        let provider = Kind::parse(provider).ok_or_else(|| {
            Error::general(format!(
                "unsupported provider \"{provider}\": supported providers are anthropic, openai, ollama"
            ))
        })?;
        Ok(ModelRef {
            provider,
            model: model.to_string(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider.name(), self.model)
    }
}

// ---------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------

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
    /// A 2xx whose body cannot be used (DECISIONS D13).
    InvalidResponse,
}

/// A classified provider failure. Its text includes the provider's own error
/// message, with every configured key redacted (D18).
#[derive(Debug, Clone)]
pub struct ProviderError {
    pub provider: Kind,
    pub kind: ErrorKind,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    pub message: String,
    /// HTTP requests retried before giving up (DECISIONS D12).
    pub retries: u32,
}

impl ProviderError {
    fn new(provider: Kind, kind: ErrorKind, status: Option<u16>, message: impl AsRef<str>) -> Self {
        let message = redact::redact(message.as_ref());
        ProviderError {
            provider,
            kind,
            status,
            message,
            retries: 0,
        }
    }

    pub fn exit_code(&self) -> Code {
        match self.kind {
            ErrorKind::BadRequest => Code::General,
            _ => Code::Api,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.provider.name(), self.message)
    }
}

impl std::error::Error for ProviderError {}

// ---------------------------------------------------------------------------
// Transport retries (DECISIONS D12).
// ---------------------------------------------------------------------------

/// How one provider call retries its HTTP request: 429, 529 / overloaded,
/// 500, 502, 503, 504, and connections refused or closed before any
/// response; never another 4xx, never a deadline timeout. These retries are
/// not the spec's sub-agent retries, which stay the parent model's to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 turns retrying off.
    pub max_retries: u32,
    /// The first backoff ceiling; each retry doubles it, up to `max_delay`.
    pub initial_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// The wait before retry number `retry` (0-based): "full jitter", a
    /// uniformly random duration up to `min(max_delay, initial_delay * 2^retry)`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let ceiling = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(random_u64() % nanos.saturating_add(1))
    }
}

/// 64 random bits, from the standard library's randomly keyed hasher (no
/// dependency for a few jitter values).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

/// A failed attempt and what the server said about trying again.
struct Attempt {
    error: ProviderError,
    /// The error body's message, type and parameter, when there was one
    /// (boxed: failures are rare, and the result stays small).
    detail: Box<ErrorDetail>,
    /// `Retry-After` (seconds or an HTTP date), or `retry-after-ms`.
    retry_after: Option<Duration>,
    /// Anthropic's `x-should-retry`, which overrides the status.
    should_retry: Option<bool>,
    /// Whether the failure is of a retryable kind (D12).
    retryable: bool,
}

impl Attempt {
    fn failed(error: ProviderError) -> Attempt {
        Attempt {
            error,
            detail: Box::default(),
            retry_after: None,
            should_retry: None,
            retryable: false,
        }
    }

    fn may_retry(&self) -> bool {
        if self.error.kind == ErrorKind::Timeout {
            return false;
        }
        self.should_retry.unwrap_or(self.retryable)
    }
}

/// The longest wait a server may ask for that axe will consider: a day.
/// Any longer hint is taken as a day, which no run's deadline reaches, so
/// the call gives up at once instead of converting an absurd number.
const MAX_RETRY_HINT: Duration = Duration::from_secs(24 * 3600);

/// The wait a failed response asks for: `retry-after-ms`, else
/// `Retry-After` as seconds or as an HTTP date (RFC 9110), relative to
/// `now`. Values that are not a non-negative number or a valid date give
/// `None` (the backoff decides); values beyond [`MAX_RETRY_HINT`] are cut to
/// it. Header values come from the server: nothing here may panic.
pub fn retry_hint(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| seconds(v.trim())) {
        return Some(ms.div_f64(1000.0).min(MAX_RETRY_HINT));
    }
    let value = retry_after?.trim();
    if let Some(secs) = seconds(value) {
        return Some(secs.min(MAX_RETRY_HINT));
    }
    let at = http_date(value)?;
    Some(
        at.duration_since(now)
            .unwrap_or(Duration::ZERO)
            .min(MAX_RETRY_HINT),
    )
}

/// A non-negative, finite decimal number as a duration in its unit, or
/// `None`; numbers too large for a [`Duration`] are [`MAX_RETRY_HINT`]
/// (itself far beyond any deadline) times 1000.
fn seconds(value: &str) -> Option<Duration> {
    let x: f64 = value.parse().ok()?;
    if !(x.is_finite() && x >= 0.0) {
        return None;
    }
    Some(Duration::try_from_secs_f64(x).unwrap_or(MAX_RETRY_HINT.saturating_mul(1000)))
}

/// Anthropic's `x-should-retry`: `true` or `false`; anything else is no hint.
pub fn should_retry_hint(value: Option<&str>) -> Option<bool> {
    match value?.trim() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the HTTP date format,
/// for the years 1970 to 9999; anything else is `None`.
pub fn http_date(s: &str) -> Option<std::time::SystemTime> {
    let parts: Vec<&str> = s.split_whitespace().collect();
    let [_, day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    let day: u64 = day.parse().ok()?;
    let month = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]
    .iter()
    .position(|m| *m == month)? as u64
        + 1;
    let year: u64 = year.parse().ok()?;
    let hms: Vec<u64> = time.split(':').filter_map(|p| p.parse().ok()).collect();
    let [h, m, sec] = hms[..] else {
        return None;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if !(1970..=9999).contains(&year)
        || !(1..=month_days).contains(&day)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    // Days since 1970-01-01 (Howard Hinnant's days_from_civil). With the
    // year at most 9999 every step below stays far inside u64.
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + h * 3600 + m * 60 + sec;
    std::time::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

// ---------------------------------------------------------------------------
// The HTTP path.
// ---------------------------------------------------------------------------

/// A provider endpoint with its credentials. Cheap to build; the HTTP
/// connection pool behind it is shared by every call in the process. Its
/// `Debug` shows no key.
#[derive(Clone)]
pub struct Provider {
    pub kind: Kind,
    pub base_url: String,
    api_key: Option<String>,
    /// How failed requests are retried; none unless set.
    pub retry: RetryPolicy,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("kind", &self.kind)
            .field("base_url", &redact::redact(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| redact::MARK))
            .field("retry", &self.retry)
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
    /// `first`: the first time this process learned it.
    Adjusted { change: Change, first: bool },
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
            base_url,
            api_key,
            retry: RetryPolicy::NONE,
        }
    }

    /// The provider for `kind` as configured by env and `config.toml`. A
    /// missing key is an API error (exit 3).
    pub fn from_config(kind: Kind, config: &GlobalConfig) -> Result<Provider, Error> {
        let key = config.api_key(kind);
        if key.is_none() && kind.needs_key() {
            let name = kind.name();
            return Err(Error::api(format!(
                "API key for provider \"{name}\" is not configured (set {}_API_KEY or add it to config.toml)",
                name.to_ascii_uppercase()
            )));
        }
        let base_url = config.base_url(kind);
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::config(format!(
                "invalid base URL for provider \"{}\": {base_url:?} (expected http:// or https://)",
                kind.name()
            )));
        }
        Ok(Provider::new(kind, base_url, key))
    }

    /// The URL requests are sent to.
    pub fn endpoint(&self) -> String {
        match self.kind {
            Kind::Anthropic => join_v1(&self.base_url, "messages"),
            Kind::OpenAi => join_v1(&self.base_url, "chat/completions"),
            Kind::Ollama => format!("{}/api/chat", self.base_url),
        }
    }

    /// The JSON body for `req` in this provider's wire format, written as
    /// this process knows the model wants it (see [`adjust`]).
    pub fn body(&self, req: &Request) -> Value {
        self.body_with(req, adjust::known(self.kind, &self.base_url, &req.model))
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
        self.send_with(req, deadline, &|_| {})
    }

    /// [`Provider::send`], telling `on_notice` about each retry before its
    /// wait, and about each parameter the model refused (the request is
    /// then sent again without it, once per parameter, not counted as a
    /// retry).
    pub fn send_with(
        &self,
        req: &Request,
        deadline: Instant,
        on_notice: &dyn Fn(&Notice),
    ) -> Result<Response, ProviderError> {
        let mut quirks = adjust::known(self.kind, &self.base_url, &req.model);
        let mut body = self.encode(req, quirks)?;
        let mut retries = 0;
        loop {
            let failed = match self.attempt(&body, deadline) {
                Ok(mut resp) => {
                    resp.retries = retries;
                    return Ok(resp);
                }
                Err(failed) => failed,
            };
            if let Some(status) = failed.error.status
                && let Some(change) =
                    adjust::refused(self.kind, status, &failed.detail, req, quirks)
            {
                let first = adjust::learn(self.kind, &self.base_url, &req.model, change);
                on_notice(&Notice::Adjusted { change, first });
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

    fn encode(&self, req: &Request, quirks: Quirks) -> Result<Vec<u8>, ProviderError> {
        serde_json::to_vec(&self.body_with(req, quirks)).map_err(|e| {
            self.error(
                ErrorKind::BadRequest,
                None,
                format!("cannot encode request: {e}"),
            )
        })
    }

    /// One HTTP request and its classified outcome.
    fn attempt(&self, body: &[u8], deadline: Instant) -> Result<Response, Attempt> {
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(Attempt::failed(self.error(
                ErrorKind::Timeout,
                None,
                "no time left before the deadline",
            )));
        }
        let url = self.endpoint();
        let mut call = client(self.kind)
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json");
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
        let result = call
            .config()
            .timeout_global(Some(remaining))
            .build()
            .send(body);
        let mut resp = match result {
            Ok(resp) => resp,
            // Nothing came back: a refused or dropped connection may be retried.
            Err(e) => {
                let retryable = closed_before_response(&e);
                let mut failed = Attempt::failed(self.transport_error(e, &url));
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
        let bytes = match read_body(resp.body_mut()) {
            Ok(bytes) => bytes,
            // A 2xx whose body cannot be read is the body's failure; any other
            // status is still that status (a 503 cut off mid-body is a 503,
            // retried as one), with what went wrong reading it as its detail.
            Err(e) if (200..300).contains(&status) => {
                return Err(Attempt::failed(self.transport_error(e, &url)));
            }
            Err(e) => format!("(body unreadable: {e})").into_bytes(),
        };
        let text = String::from_utf8_lossy(&bytes);

        if !(200..300).contains(&status) {
            let detail = error_detail(&text);
            let error = self.status_error(status, &detail, location.as_deref());
            let retryable = matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
                || error.kind == ErrorKind::Overloaded;
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
        parsed.map_err(|detail| {
            Attempt::failed(self.error(
                ErrorKind::InvalidResponse,
                Some(status),
                format!("invalid response: {detail}"),
            ))
        })
    }

    fn error(
        &self,
        kind: ErrorKind,
        status: Option<u16>,
        message: impl AsRef<str>,
    ) -> ProviderError {
        ProviderError::new(self.kind, kind, status, message)
    }

    /// Classifies a non-2xx answer; the provider's own message is kept.
    fn status_error(
        &self,
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
        self.error(kind, Some(status), msg)
    }

    fn transport_error(&self, err: ureq::Error, url: &str) -> ProviderError {
        use std::io::ErrorKind as Io;
        match err {
            ureq::Error::Timeout(_) => self.error(ErrorKind::Timeout, None, "request timed out"),
            ureq::Error::Io(e) if matches!(e.kind(), Io::TimedOut | Io::WouldBlock) => {
                self.error(ErrorKind::Timeout, None, "request timed out")
            }
            ureq::Error::BodyExceedsLimit(_) => self.error(
                ErrorKind::InvalidResponse,
                None,
                format!(
                    "invalid response: body larger than {} MiB",
                    MAX_BODY_BYTES >> 20
                ),
            ),
            ureq::Error::ConnectionFailed => self.refused(url),
            ureq::Error::Io(e) if e.kind() == Io::ConnectionRefused => self.refused(url),
            ureq::Error::HostNotFound => {
                self.error(ErrorKind::Network, None, format!("host not found ({url})"))
            }
            other => self.error(
                ErrorKind::Network,
                None,
                format!("network error: {other} ({url})"),
            ),
        }
    }

    fn refused(&self, url: &str) -> ProviderError {
        let msg = match self.kind {
            Kind::Ollama => {
                format!(
                    "connection refused: is Ollama running? (expected at {})",
                    self.base_url
                )
            }
            _ => format!("connection refused ({url})"),
        };
        self.error(ErrorKind::Network, None, msg)
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

/// One HTTP client per provider, shared by every call in the process so that
/// keep-alive connections are reused across turns and sub-agents.
fn client(kind: Kind) -> &'static ureq::Agent {
    static CLIENTS: [OnceLock<ureq::Agent>; 3] =
        [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let slot = match kind {
        Kind::Anthropic => &CLIENTS[0],
        Kind::OpenAi => &CLIENTS[1],
        Kind::Ollama => &CLIENTS[2],
    };
    slot.get_or_init(|| {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
            // ureq keeps 10 idle connections overall by default, whatever
            // the per-host limit: a fan-out's connections would be closed.
            .max_idle_connections(64)
            .max_idle_connections_per_host(64)
            .max_idle_age(Duration::from_secs(30))
            // ureq's defaults are 128 KiB each way per connection: 64 MiB
            // for a 256-way fan-out. Provider response heads are a few KiB;
            // bodies are read in pieces, requests written in pieces.
            .input_buffer_size(32 * 1024)
            .max_response_header_size(32 * 1024)
            .output_buffer_size(16 * 1024)
            .build();
        ureq::Agent::with_parts(config, DefaultConnector::default(), LiteralFirst::default())
    })
}

/// ureq's resolver runs every lookup on a thread of its own when a request
/// has a deadline (so that a stuck DNS cannot outlive it): one thread per
/// new connection, even to `127.0.0.1`. A host that is an IP address needs
/// no lookup and is resolved in place; any other host goes through ureq's
/// resolver as before. (A 256-way fan-out to a local server otherwise
/// starts 512 threads, not 256.)
#[derive(Debug, Default)]
struct LiteralFirst(DefaultResolver);

impl Resolver for LiteralFirst {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        match literal_address(uri) {
            Some(addr) => {
                let mut found = self.empty();
                found.push(addr);
                Ok(found)
            }
            None => self.0.resolve(uri, config, timeout),
        }
    }
}

/// The socket address of a URI whose host is an IP address (`[::1]` too).
fn literal_address(uri: &ureq::http::Uri) -> Option<std::net::SocketAddr> {
    let host = uri.host()?;
    let ip: std::net::IpAddr = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()?;
    let port = uri.port_u16().or(match uri.scheme_str() {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    })?;
    Some(std::net::SocketAddr::new(ip, port))
}

/// `{base}/v1/{path}`; a base that already ends in `/v1` (as many
/// OpenAI-compatible servers are documented) is not given a second one.
fn join_v1(base: &str, path: &str) -> String {
    if base.ends_with("/v1") {
        format!("{base}/{path}")
    } else {
        format!("{base}/v1/{path}")
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

/// Detail for a 2xx body that is not the JSON expected (D13).
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

// ---------------------------------------------------------------------------
// Helpers shared by the wire formats.
// ---------------------------------------------------------------------------

/// The JSON Schema object for a tool's parameters.
pub(crate) fn input_schema(tool: &Tool) -> Value {
    let mut properties = serde_json::Map::new();
    let mut required = Vec::new();
    for (name, p) in &tool.parameters {
        let mut prop = json!({"type": p.kind, "description": p.description});
        if !p.allowed.is_empty() {
            prop["enum"] = json!(p.allowed);
        }
        properties.insert(name.clone(), prop);
        if p.required {
            required.push(name.clone());
        }
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// A number as JSON, whole numbers without a fraction (`0`, not `0.0`: D8).
pub(crate) fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        json!(x as i64)
    } else {
        json!(x)
    }
}

/// Tool-call arguments from a JSON object: strings as they are, `null` as
/// empty, anything else as its JSON text (D3). A non-object gives no arguments.
pub(crate) fn arguments_from_json(v: &Value) -> BTreeMap<String, String> {
    let Some(obj) = v.as_object() else {
        return BTreeMap::new();
    };
    obj.iter()
        .map(|(k, v)| {
            let s = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (k.clone(), s)
        })
        .collect()
}

/// Arguments as a wire format sends them: a JSON object, or a string that
/// holds one. Invalid JSON gives no arguments (Req 3.4).
pub(crate) fn arguments_from_wire(v: &Value) -> BTreeMap<String, String> {
    match v {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .map(|v| arguments_from_json(&v))
            .unwrap_or_default(),
        other => arguments_from_json(other),
    }
}

/// A call's arguments as an object, for writing history back: what the
/// model sent when that was an object (or a JSON text holding one), else an
/// object of the string values.
pub(crate) fn arguments_object(call: &ToolCall) -> Value {
    match &call.wire_arguments {
        Value::Object(_) => call.wire_arguments.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => v,
            _ => strings_object(&call.arguments),
        },
        _ => strings_object(&call.arguments),
    }
}

/// A call's arguments as a JSON text, for writing history back: the text
/// the model sent when it sent one, else the object's text.
pub(crate) fn arguments_text(call: &ToolCall) -> String {
    match &call.wire_arguments {
        Value::String(s) => s.clone(),
        Value::Object(_) => call.wire_arguments.to_string(),
        _ => strings_object(&call.arguments).to_string(),
    }
}

fn strings_object(args: &BTreeMap<String, String>) -> Value {
    Value::Object(
        args.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// A token count as a server reports it. Servers send null, leave counts
/// out, or send floats and negative numbers; none of that is a failed
/// answer. A non-negative integer is itself; a positive float is rounded
/// down and saturates at `u64::MAX`; anything else is unknown, 0.
pub(crate) fn count(v: &Value) -> u64 {
    if let Some(n) = v.as_u64() {
        return n;
    }
    match v.as_f64() {
        // `as` from a float saturates; NaN fails `x > 0.0`.
        Some(x) if x > 0.0 => x as u64,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_strings_split_at_the_first_slash() {
        let m = ModelRef::parse("openai/meta-llama/Llama-3-8b").unwrap();
        assert_eq!(
            (m.provider, m.model.as_str()),
            (Kind::OpenAi, "meta-llama/Llama-3-8b")
        );
        assert_eq!(ModelRef::parse("nope").unwrap_err().code, Code::General);
        assert_eq!(ModelRef::parse("/m").unwrap_err().code, Code::General);
        assert_eq!(
            ModelRef::parse("x/m").unwrap_err().message,
            "unsupported provider \"x\": supported providers are anthropic, openai, ollama"
        );
    }

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

    #[test]
    fn whole_numbers_are_sent_without_fraction() {
        assert_eq!(number(0.0).to_string(), "0");
        assert_eq!(number(0.7).to_string(), "0.7");
    }

    #[test]
    fn ip_literal_hosts_resolve_in_place_and_names_do_not() {
        let addr = |u: &str| literal_address(&u.parse().unwrap());
        assert_eq!(
            addr("http://127.0.0.1:8080/v1/messages"),
            Some("127.0.0.1:8080".parse().unwrap())
        );
        assert_eq!(
            addr("http://[::1]/api/chat"),
            Some("[::1]:80".parse().unwrap())
        );
        assert_eq!(
            addr("https://10.0.0.2/x"),
            Some("10.0.0.2:443".parse().unwrap())
        );
        assert_eq!(addr("https://api.openai.com/v1/chat/completions"), None);
        assert_eq!(addr("http://localhost:11434/api/chat"), None);
    }

    #[test]
    fn base_urls_ending_in_v1_get_no_second_v1() {
        assert_eq!(join_v1("http://h:1", "messages"), "http://h:1/v1/messages");
        assert_eq!(
            join_v1("http://h:1/v1", "chat/completions"),
            "http://h:1/v1/chat/completions"
        );
    }
}
