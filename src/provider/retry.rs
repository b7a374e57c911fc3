//! Transport retries (design D12): how long to wait before trying a failed
//! request again, from the backoff or from what the server asks for.

use std::time::Duration;

use super::ErrorKind;

/// The HTTP statuses a failed request is retried on (design D12, §6.1):
/// 429 rate limited, 500, 502, 503 and 504 server errors, and 529
/// overloaded. Never another 4xx.
pub const RETRYABLE_STATUSES: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// How one provider call retries its HTTP request: on a status that
/// [`retryable_status`] accepts, and on connections refused or closed
/// before any response; never on a deadline timeout. These retries are
/// not sub-agent retries, which stay the parent model's to make (design
/// D12, §3.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 turns retrying off.
    pub max_retries: u32,
    /// The first backoff ceiling; each retry doubles it, up to `max_delay`.
    pub initial_delay: Duration,
    pub max_delay: Duration,
    pub backoff: Backoff,
}

/// How the wait grows from one retry to the next (`[retry] backoff`, the Go
/// original's key and values).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    /// A random wait up to `initial_delay * 2^retry` ("full jitter").
    #[default]
    Exponential,
    /// `initial_delay * (retry + 1)`.
    Linear,
    /// `initial_delay` every time.
    Fixed,
}

impl Default for RetryPolicy {
    fn default() -> RetryPolicy {
        RetryPolicy {
            max_retries: 2,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            backoff: Backoff::Exponential,
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub const NONE: RetryPolicy = RetryPolicy {
        max_retries: 0,
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
        backoff: Backoff::Exponential,
    };

    /// The wait before retry number `retry` (0-based), never over
    /// `max_delay`: exponential is "full jitter", a uniformly random
    /// duration up to `initial_delay * 2^retry`; linear and fixed are exact.
    pub fn backoff(&self, retry: u32) -> Duration {
        match self.backoff {
            Backoff::Exponential => {}
            Backoff::Linear => {
                return self
                    .initial_delay
                    .saturating_mul(retry.saturating_add(1))
                    .min(self.max_delay);
            }
            Backoff::Fixed => return self.initial_delay.min(self.max_delay),
        }
        let ceiling = self
            .initial_delay
            .saturating_mul(2u32.saturating_pow(retry.min(31)))
            .min(self.max_delay);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
}

/// Whether a failed response with `status`, classified as `kind`, may be
/// retried: one of [`RETRYABLE_STATUSES`], or overloaded whatever its
/// status (Anthropic's `overloaded_error`). Anthropic's `x-should-retry`
/// overrides this (see [`should_retry_hint`]).
pub fn retryable_status(status: u16, kind: ErrorKind) -> bool {
    RETRYABLE_STATUSES.contains(&status) || kind == ErrorKind::Overloaded
}

/// The longest wait a server may ask for that axe will consider: a day.
/// Any longer hint is taken as a day, which no run's deadline reaches, so
/// the call gives up at once instead of converting an absurd number.
const MAX_RETRY_HINT: Duration = Duration::from_secs(24 * 3600);

/// The wait a failed response asks for: `retry-after-ms`, else
/// `Retry-After` as seconds or as an HTTP date (RFC 9110), relative to
/// `now`. Values that are not a non-negative number or a valid date give
/// `None` (the backoff decides); values beyond `MAX_RETRY_HINT` are cut to
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
/// `None`; numbers too large for a [`Duration`] are `MAX_RETRY_HINT`
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

/// An HTTP date (RFC 9110: the IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
/// and the obsolete RFC 850 and asctime forms a recipient must accept), for
/// the years 1970 to 9999; anything else is `None`.
pub fn http_date(s: &str) -> Option<std::time::SystemTime> {
    httpdate::parse_http_date(s).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_listed_statuses_and_overloaded_are_retried() {
        for status in [429, 500, 502, 503, 504, 529] {
            assert!(retryable_status(status, ErrorKind::Server), "{status}");
        }
        for status in [400, 401, 403, 404, 422, 501, 505] {
            assert!(!retryable_status(status, ErrorKind::BadRequest), "{status}");
        }
        // Anthropic's `overloaded_error` under a status of its own.
        assert!(retryable_status(400, ErrorKind::Overloaded));
    }

    #[test]
    fn linear_and_fixed_backoff_wait_as_the_go_original_does() {
        let policy = |backoff| RetryPolicy {
            max_retries: 5,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(250),
            backoff,
        };
        let linear: Vec<u128> = (0..4)
            .map(|r| policy(Backoff::Linear).backoff(r).as_millis())
            .collect();
        assert_eq!(linear, [100, 200, 250, 250]);
        let fixed: Vec<u128> = (0..3)
            .map(|r| policy(Backoff::Fixed).backoff(r).as_millis())
            .collect();
        assert_eq!(fixed, [100, 100, 100]);
        for r in 0..6 {
            assert!(policy(Backoff::Exponential).backoff(r) <= Duration::from_millis(250));
        }
    }
}
