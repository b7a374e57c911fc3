//! Request parameters that some models refuse, and how axe learns which.
//!
//! OpenAI's reasoning models refuse `max_tokens` and take
//! `max_completion_tokens`; some OpenAI and Anthropic models refuse any
//! `temperature` but their default; Anthropic's JSON outputs refuse a
//! schema they cannot take. Each wire says what a request to a model is
//! written with at first, and which 400 names which parameter
//! (`Format::quirks`, `Format::refused`). Here is what they share: a 400
//! that names one of these parameters makes the provider send the same
//! request again without it, once, and remember the model for the rest of
//! the process, so that later requests to it (other turns, sibling
//! sub-agents) are right the first time. A schema refused is not sent to
//! that model again in the process (another agent's may be); axe checks
//! and repairs the answer itself (design D22).

use std::sync::{Mutex, PoisonError};

use super::{ErrorDetail, Request, Wire};

/// How a request to one model is written, beyond its [`Request`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Quirks {
    /// Send the output limit as `max_completion_tokens` (OpenAI).
    pub max_completion_tokens: bool,
    /// Send no `temperature`.
    pub no_temperature: bool,
    /// Send no output schema (Anthropic's `output_config`).
    pub no_output_schema: bool,
    /// Ask for no encrypted reasoning (the Responses API's `include`,
    /// which its models that do not reason refuse).
    pub no_encrypted_reasoning: bool,
}

/// One thing a model refused, and what is sent instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// `max_tokens` refused: send `max_completion_tokens`.
    MaxCompletionTokens,
    /// `temperature` refused: send none.
    NoTemperature,
    /// The output schema refused: send none.
    NoOutputSchema,
    /// `include: ["reasoning.encrypted_content"]` refused: send none.
    NoEncryptedReasoning,
}

impl Quirks {
    pub fn with(mut self, change: Change) -> Quirks {
        match change {
            Change::MaxCompletionTokens => self.max_completion_tokens = true,
            Change::NoTemperature => self.no_temperature = true,
            Change::NoOutputSchema => self.no_output_schema = true,
            Change::NoEncryptedReasoning => self.no_encrypted_reasoning = true,
        }
        self
    }

    pub(crate) fn has(self, change: Change) -> bool {
        self.with(change) == self
    }
}

/// Something a model at a base URL refused, learned in this process.
#[derive(PartialEq)]
struct Learned {
    wire: Wire,
    base_url: String,
    model: String,
    change: Change,
    /// For [`Change::NoOutputSchema`], the schema refused (as JSON text):
    /// another agent's schema may suit the same model.
    schema: String,
}

static LEARNED: Mutex<Vec<Learned>> = Mutex::new(Vec::new());

impl Learned {
    fn new(wire: Wire, base_url: &str, req: &Request, change: Change) -> Learned {
        let schema = match (change, &req.output_schema) {
            (Change::NoOutputSchema, Some(s)) => s.to_string(),
            _ => String::new(),
        };
        Learned {
            wire,
            base_url: base_url.to_string(),
            model: req.model.clone(),
            change,
            schema,
        }
    }
}

/// What is known about `req`'s model at `base_url`: what its wire writes
/// from the start, and anything learned since.
pub fn known(wire: Wire, base_url: &str, req: &Request) -> Quirks {
    let mut quirks = wire.format().quirks(base_url);
    let learned = LEARNED.lock().unwrap_or_else(PoisonError::into_inner);
    for l in learned.iter() {
        if l.wire == wire
            && l.base_url == base_url
            && l.model == req.model
            && (l.schema.is_empty() || *l == Learned::new(wire, base_url, req, l.change))
        {
            quirks = quirks.with(l.change);
        }
    }
    quirks
}

/// Remembers that `req`'s model at `base_url` refused something; true the
/// first time (so that the user is told once).
pub fn learn(wire: Wire, base_url: &str, req: &Request, change: Change) -> bool {
    let mut learned = LEARNED.lock().unwrap_or_else(PoisonError::into_inner);
    let entry = Learned::new(wire, base_url, req, change);
    if learned.contains(&entry) {
        return false;
    }
    learned.push(entry);
    true
}

/// What a 400 answer to `req` (written with `quirks`) says the model
/// refused, if it is one of the parameters above and the request carried
/// it: the wire's to say.
pub fn refused(
    wire: Wire,
    status: u16,
    detail: &ErrorDetail,
    req: &Request,
    quirks: Quirks,
) -> Option<Change> {
    if status != 400 {
        return None;
    }
    wire.format().refused(detail, req, quirks)
}

/// `temperature` refused, when `req` carried one: the error names it as
/// its parameter, or in its message beside a word of refusal (wires whose
/// models may refuse it say so with this).
pub(crate) fn temperature_refused(
    detail: &ErrorDetail,
    req: &Request,
    quirks: Quirks,
) -> Option<Change> {
    let message = detail.message.to_ascii_lowercase();
    let refusal_words = [
        "unsupported",
        "not supported",
        "deprecated",
        "no longer",
        "not accepted",
    ];
    let named = detail.param.as_deref() == Some("temperature")
        || (message.contains("temperature") && refusal_words.iter().any(|w| message.contains(w)));
    let sent = req.temperature.is_some() && !quirks.has(Change::NoTemperature);
    (sent && named).then_some(Change::NoTemperature)
}

/// What the user is told when a model refuses `change`, the provider
/// having said `why`.
pub fn describe(change: Change, why: &str) -> String {
    match change {
        Change::MaxCompletionTokens => "takes max_completion_tokens, not max_tokens".into(),
        Change::NoTemperature => "does not accept temperature; it was sent without it".into(),
        Change::NoOutputSchema => format!(
            "refused the output schema ({why}); it was sent without it, and axe checks the answer itself"
        ),
        Change::NoEncryptedReasoning => {
            "keeps no encrypted reasoning; it was asked again without include".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_openais_own_api_starts_with_max_completion_tokens() {
        let req = Request {
            model: "m-adjust-test".into(),
            ..Request::default()
        };
        let q = |url| known(Wire::OpenAi, url, &req).max_completion_tokens;
        assert!(q("https://api.openai.com"));
        assert!(q("https://API.openai.com/v1"));
        assert!(!q("http://127.0.0.1:8080/v1"));
        assert!(!q("https://api.openai.com.example.net"));
        assert!(!known(Wire::Anthropic, "https://api.openai.com", &req).max_completion_tokens);
    }

    #[test]
    fn only_an_anthropic_400_about_a_schema_it_was_sent_drops_the_schema() {
        let grammar = ErrorDetail {
            message: "The compiled grammar is too large, which would cause performance issues. Simplify your tool schemas or reduce the number of strict tools.".into(),
            error_type: Some("invalid_request_error".into()),
            param: None,
        };
        let mut req = Request {
            model: "m".into(),
            output_schema: Some(serde_json::json!({"type": "string"})),
            ..Request::default()
        };
        let q = Quirks::default();
        let drop = Some(Change::NoOutputSchema);
        assert_eq!(refused(Wire::Anthropic, 400, &grammar, &req, q), drop);
        assert_eq!(refused(Wire::Anthropic, 500, &grammar, &req, q), None);
        assert_eq!(refused(Wire::OpenAi, 400, &grammar, &req, q), None);
        let dropped = q.with(Change::NoOutputSchema);
        assert_eq!(refused(Wire::Anthropic, 400, &grammar, &req, dropped), None);
        // A map is never sent, so a 400 cannot be about it.
        req.output_schema = Some(serde_json::json!({"additionalProperties": true}));
        assert_eq!(refused(Wire::Anthropic, 400, &grammar, &req, q), None);
    }
}
