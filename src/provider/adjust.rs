//! Request parameters that some models refuse, and how axe learns which.
//!
//! OpenAI's reasoning models take `max_completion_tokens` and refuse
//! `max_tokens` (the API reference marks `max_tokens` deprecated, and not
//! compatible with those models); some OpenAI and Anthropic models refuse
//! any `temperature` but their default. OpenAI-compatible servers, on the
//! other hand, may know only `max_tokens`. So axe sends `max_tokens` to every
//! OpenAI-compatible server but OpenAI's own (`api.openai.com`), which gets
//! `max_completion_tokens`; and a 400 that names one of these parameters
//! makes the provider send the same request again without it, once, and
//! remember the model for the rest of the process, so that later requests
//! to it (other turns, sibling sub-agents) are right the first time.

use std::sync::{Mutex, PoisonError};

use super::{ErrorDetail, Kind, Request};

/// How a request to one model is written, beyond its [`Request`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Send the output limit as `max_completion_tokens` (OpenAI).
    pub max_completion_tokens: bool,
    /// Send no `temperature`.
    pub no_temperature: bool,
}

/// One thing a model refused, and what is sent instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `max_tokens` refused: send `max_completion_tokens`.
    MaxCompletionTokens,
    /// `temperature` refused: send none.
    NoTemperature,
}

impl Quirks {
    pub fn with(mut self, change: Change) -> Quirks {
        match change {
            Change::MaxCompletionTokens => self.max_completion_tokens = true,
            Change::NoTemperature => self.no_temperature = true,
        }
        self
    }

    fn has(self, change: Change) -> bool {
        self.with(change) == self
    }
}

/// The models this process has seen refuse something: (provider, base URL,
/// model, what it refused).
static LEARNED: Mutex<Vec<(Kind, String, String, Change)>> = Mutex::new(Vec::new());

/// What is known about `model` at `base_url`: OpenAI's own API gets
/// `max_completion_tokens` from the start; anything learned is applied.
pub fn known(kind: Kind, base_url: &str, model: &str) -> Quirks {
    let mut quirks = Quirks {
        max_completion_tokens: kind == Kind::OpenAi && is_openai_itself(base_url),
        no_temperature: false,
    };
    let learned = LEARNED.lock().unwrap_or_else(PoisonError::into_inner);
    for (k, url, m, change) in learned.iter() {
        if *k == kind && url == base_url && m == model {
            quirks = quirks.with(*change);
        }
    }
    quirks
}

/// Remembers that `model` at `base_url` refused something; true the first
/// time (so that the user is told once).
pub fn learn(kind: Kind, base_url: &str, model: &str, change: Change) -> bool {
    let mut learned = LEARNED.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = (kind, base_url.to_string(), model.to_string(), change);
    if learned.contains(&entry) {
        return false;
    }
    learned.push(entry);
    true
}

/// What a 400 answer to `req` (written with `quirks`) says the model
/// refused, if it is one of the parameters above and the request carried it.
pub fn refused(
    kind: Kind,
    status: u16,
    detail: &ErrorDetail,
    req: &Request,
    quirks: Quirks,
) -> Option<Change> {
    if status != 400 || kind == Kind::Ollama {
        return None;
    }
    let message = detail.message.to_ascii_lowercase();
    let param = detail.param.as_deref().unwrap_or("");
    let refusal_words = [
        "unsupported",
        "not supported",
        "deprecated",
        "no longer",
        "not accepted",
    ];
    let refuses = |name: &str| {
        param == name
            || (message.contains(name) && refusal_words.iter().any(|w| message.contains(w)))
    };
    let sent_max_tokens = req.max_tokens.is_some() && !quirks.max_completion_tokens;
    if kind == Kind::OpenAi
        && sent_max_tokens
        && (param == "max_tokens" || message.contains("max_completion_tokens"))
    {
        return Some(Change::MaxCompletionTokens);
    }
    if req.temperature.is_some() && !quirks.has(Change::NoTemperature) && refuses("temperature") {
        return Some(Change::NoTemperature);
    }
    None
}

/// What the user is told when a model refuses `change`.
pub fn describe(change: Change) -> &'static str {
    match change {
        Change::MaxCompletionTokens => "takes max_completion_tokens, not max_tokens",
        Change::NoTemperature => "does not accept temperature; it was sent without it",
    }
}

/// Whether `base_url` is OpenAI's own API (not a compatible server).
fn is_openai_itself(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("https://")
        .or_else(|| base_url.strip_prefix("http://"))
        .unwrap_or(base_url);
    let host = rest.split(['/', ':']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_openais_own_api_starts_with_max_completion_tokens() {
        let q = |url| known(Kind::OpenAi, url, "m-adjust-test").max_completion_tokens;
        assert!(q("https://api.openai.com"));
        assert!(q("https://API.openai.com/v1"));
        assert!(!q("http://127.0.0.1:8080/v1"));
        assert!(!q("https://api.openai.com.example.net"));
        assert!(!known(Kind::Anthropic, "https://api.openai.com", "m").max_completion_tokens);
    }
}
