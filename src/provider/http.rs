//! The one HTTP path: a provider endpoint with its credentials, and the
//! loop that sends a request until it has an answer, retrying what may be
//! retried within the deadline and adjusting what a server refused. Each
//! try is `attempt.rs`'s; a streamed answer is read as it comes
//! (`streamed.rs`, design §4.11).

use std::cell::Cell;
use std::fmt;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::adjust::{self, Change, Quirks};
use super::attempt::Attempt;
use super::error::{ErrorKind, ProviderError};
use super::retry::RetryPolicy;
use super::{Request, Response, Wire};
use crate::text::one_line;
use crate::text::redact;

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
    pub wire: Wire,
    /// The provider's name as the model string gives it (`groq`): what
    /// its errors and reports say.
    pub name: String,
    pub base_url: String,
    /// Read only by the provider module (its requests and its `Debug`).
    pub(super) api_key: Option<String>,
    /// Headers sent with every request beside the wire's own (config.toml's
    /// `headers`, OpenRouter's attribution).
    pub(super) headers: Vec<(String, String)>,
    /// AWS's keys, which sign each request (Bedrock, design §4.13).
    pub(super) aws: Option<std::sync::Arc<super::bedrock::AwsKeys>>,
    /// How failed requests are retried; none unless set.
    pub retry: RetryPolicy,
    /// The longest a streamed answer may send nothing.
    pub idle: Duration,
    /// The run's cancel flag (`axe serve`): no request is sent or retried
    /// once it is set, and a stream being read is given up at its next
    /// piece (design §12.3).
    pub cancel: Option<crate::deadline::Cancel>,
    /// The model's price, which its responses' cost is reckoned at (none:
    /// no cost, design §7.8).
    pub price: Option<crate::cost::Price>,
    /// Its responses say what they cost ([`Response::cost_usd`]): with no
    /// price, that is their cost.
    pub reports_cost: bool,
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("wire", &self.wire)
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
    /// Whether its responses have a cost: it has a price, or says itself
    /// what each cost (design §7.8).
    pub fn priced(&self) -> bool {
        self.price.is_some() || self.reports_cost
    }

    pub fn new(wire: Wire, base_url: impl Into<String>, api_key: Option<String>) -> Provider {
        if let Some(k) = &api_key {
            redact::register(k);
        }
        let base_url = base_url.into().trim_end_matches('/').to_string();
        redact::register_url(&base_url);
        Provider {
            wire,
            name: wire.name().to_string(),
            base_url,
            api_key,
            headers: Vec::new(),
            aws: None,
            retry: RetryPolicy::NONE,
            idle: DEFAULT_IDLE,
            cancel: None,
            price: None,
            reports_cost: false,
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

    /// The same provider signing its requests with AWS's `keys`.
    pub fn with_aws(mut self, keys: super::bedrock::AwsKeys) -> Provider {
        self.aws = Some(std::sync::Arc::new(keys.registered()));
        self
    }

    /// The URL requests for `model` are sent to.
    pub fn endpoint(&self, model: &str) -> String {
        self.wire.format().endpoint(&self.base_url, model)
    }

    /// The JSON body for `req` in this provider's wire format, written as
    /// this process knows the model wants it (see [`adjust`]).
    pub fn body(&self, req: &Request) -> Value {
        self.body_with(req, adjust::known(self.wire, &self.base_url, req))
    }

    fn body_with(&self, req: &Request, quirks: Quirks) -> Value {
        self.wire.format().body(req, quirks)
    }

    /// Why `req`'s output schema cannot go to this provider's wire as it
    /// is, when it cannot: axe alone then checks the answer (design D22).
    pub fn unsent_schema(&self, req: &Request) -> Option<String> {
        self.wire
            .format()
            .unsent_schema(req.output_schema.as_ref()?)
    }

    /// Sends `req` and waits for the answer, at most until `deadline`,
    /// retrying as [`Provider::retry`] says; a wait that would pass the
    /// deadline is not started, and the last error is returned instead.
    pub fn send(&self, req: &Request, deadline: Instant) -> Result<Response, ProviderError> {
        self.send_with(req, deadline, &|_| {}, None).map(|r| *r)
    }

    /// [`Provider::send`], telling `on_notice` about each retry before its
    /// wait, and about each parameter the model refused (the request is
    /// then sent again without it, once per parameter, not counted as a
    /// retry). A streamed answer's text is handed to `on_text` as it comes
    /// (the whole text at once when the server did not stream); once some
    /// was, a failure of that request is final: what was handed out cannot
    /// be taken back (design §4.11). The answer comes boxed: it is not
    /// copied through the frames a thread holds while it waits on its
    /// answer (design §3.15).
    pub fn send_with(
        &self,
        req: &Request,
        deadline: Instant,
        on_notice: &dyn Fn(&Notice),
        on_text: Option<&dyn Fn(&str)>,
    ) -> Result<Box<Response>, ProviderError> {
        self.send_inner(req, deadline, on_notice, on_text)
            .map_err(|mut e| {
                e.provider.clone_from(&self.name);
                e
            })
    }

    fn send_inner(
        &self,
        req: &Request,
        deadline: Instant,
        on_notice: &dyn Fn(&Notice),
        on_text: Option<&dyn Fn(&str)>,
    ) -> Result<Box<Response>, ProviderError> {
        let mut quirks = adjust::known(self.wire, &self.base_url, req);
        let mut body = self.encode(req, quirks)?;
        let format = self.wire.format();
        let url = if req.stream && format.streams() {
            format.stream_endpoint(&self.base_url, &req.model)
        } else {
            self.endpoint(&req.model)
        };
        let mut retries = 0;
        let handed_out = Cell::new(false);
        let hand_out = |text: &str| {
            if let Some(on_text) = on_text {
                handed_out.set(true);
                on_text(text);
            }
        };
        loop {
            let failed = match self.attempt(&url, &body, deadline, req, &hand_out) {
                Ok(mut resp) => {
                    resp.retries = retries;
                    return Ok(resp);
                }
                Err(failed) => failed,
            };
            let again = Again {
                handed_out: handed_out.get(),
                quirks: &mut quirks,
                retries: &mut retries,
                deadline,
            };
            if let Some(changed) = self.after_failure(failed, req, again, on_notice)? {
                body = changed;
            }
        }
    }

    /// What follows a failed attempt: its error, when it may not be tried
    /// again; the body sent again without what the server refused (`Some`);
    /// or, after the wait its retry takes, the same body again (`None`).
    /// Out of line, as [`Provider::answered`] is: inlined, its notices and
    /// errors would sit in the frame of every thread waiting on its answer
    /// (design §3.15).
    #[inline(never)]
    fn after_failure(
        &self,
        failed: Attempt,
        req: &Request,
        again: Again,
        on_notice: &dyn Fn(&Notice),
    ) -> Result<Option<Vec<u8>>, ProviderError> {
        let Again {
            handed_out,
            quirks,
            retries,
            deadline,
        } = again;
        if handed_out {
            let mut error = failed.error;
            error.retries = *retries;
            return Err(error);
        }
        if let Some(status) = failed.error.status
            && let Some(change) = adjust::refused(self.wire, status, &failed.detail, req, *quirks)
        {
            let first = adjust::learn(self.wire, &self.base_url, req, change);
            on_notice(&Notice::Adjusted {
                change,
                first,
                why: failed.detail.message.clone(),
            });
            *quirks = quirks.with(change);
            return self.encode(req, *quirks).map(Some);
        }
        let mut error = failed.error.clone();
        error.retries = *retries;
        if *retries >= self.retry.max_retries || !failed.may_retry() {
            return Err(error);
        }
        let wait = failed
            .retry_after
            .unwrap_or_else(|| self.retry.backoff(*retries));
        if Instant::now()
            .checked_add(wait)
            .is_none_or(|t| t >= deadline)
        {
            return Err(error);
        }
        *retries += 1;
        let what = match failed.error.status {
            Some(status) => status.to_string(),
            None => one_line(&failed.error.message),
        };
        on_notice(&Notice::Retry(Retry {
            what,
            status: failed.error.status,
            attempt: u64::from(*retries) + 1,
            of: u64::from(self.retry.max_retries) + 1,
            wait,
        }));
        std::thread::sleep(wait);
        Ok(None)
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
        ProviderError::new(self.wire, kind, status, message)
    }

    #[inline(never)]
    fn encode(&self, req: &Request, quirks: Quirks) -> Result<Vec<u8>, ProviderError> {
        Ok(json_value::to_vec(&self.body_with(req, quirks)))
    }
}

/// Where a request's retries stand, for [`Provider::after_failure`].
struct Again<'a> {
    /// Some of the answer's text was handed out: no retry may repeat it.
    handed_out: bool,
    quirks: &'a mut Quirks,
    retries: &'a mut u32,
    deadline: Instant,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_providers_debug_text_shows_no_key_or_password() {
        let p = Provider::new(
            Wire::OpenAi,
            "http://u:debug-pass-123@h:1",
            Some("sk-debug-key-0123456789".into()),
        );
        let text = format!("{p:?}");
        assert!(!text.contains("sk-debug-key"), "{text}");
        assert!(!text.contains("debug-pass-123"), "{text}");
        assert!(text.contains("[redacted]"), "{text}");
    }
}
