//! Transport retries (design D12): how long to wait before trying a failed
//! request again, from the backoff or from what the server asks for.

use std::time::Duration;

/// How one provider call retries its HTTP request: 429, 529 / overloaded,
/// 500, 502, 503, 504, and connections refused or closed before any
/// response; never another 4xx, never a deadline timeout. These retries are
/// not sub-agent retries, which stay the parent model's to make (design
/// D12, §3.12).
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
        Duration::from_nanos(fastrand::u64(0..=nanos))
    }
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
