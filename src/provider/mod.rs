//! The provider layer: the types every wire format shares, and the one HTTP
//! path that sends a request to Anthropic, OpenAI (or any OpenAI-compatible
//! server) or Ollama and classifies what comes back.
//!
//! A wire format is a [`Wire`], and all it says is in its own folder,
//! behind one interface, `Format` (`format.rs`), which `Wire::format`
//! gives the common code:
//! - `anthropic/` (the Messages API): in `mod.rs` its endpoint, the headers
//!   that carry the key, the body, the parsing of an answer and the 400s
//!   that name a `temperature` or an output schema its models refuse; its
//!   stream's events in `stream.rs`, its prompt-cache marks in `cache.rs`,
//!   the schema its JSON outputs are sent (or why none can be) in
//!   `schema.rs`;
//! - `openai/` (Chat Completions, OpenAI and every compatible server): in
//!   `mod.rs` the same, with `max_completion_tokens` for OpenAI's own API
//!   and the 400s that name `max_tokens` or `temperature`; its stream's
//!   events in `stream.rs`;
//! - `ollama/` (`/api/chat`): in `mod.rs` the same, its refused connection
//!   said as Ollama not running; its stream's lines in `stream.rs`;
//! - `responses/` (OpenAI's Responses API, and any server that speaks
//!   it): in `mod.rs` the same, with its reasoning items kept and sent
//!   back; its stream's events in `stream.rs`;
//! - `bedrock/` (Amazon Bedrock's Converse API): in `mod.rs` the same,
//!   with `converse-stream` for a stream; its stream's events in
//!   `stream.rs`, its SigV4 signing in `sigv4.rs`, its keys and region
//!   from the AWS variables in `keys.rs`.
//!
//! The rest is common, here, and branches on no wire: the shared types
//! (`types`), the HTTP path with its retry loop (`http`), one try of it
//! (`attempt`, its streamed side in `streamed`), the clients (`client`),
//! retries (`retry`), error classification (`error`), refused parameters
//! remembered per model (`adjust`), the stream's framing and bounds
//! (`stream`: server-sent events in `sse.rs`, JSON lines in `mod.rs`,
//! AWS's binary event-stream in `eventstream.rs`),
//! helpers the wires' bodies share (`wire`) and the providers known by
//! name (`presets`). The provider knows nothing of where its settings came
//! from.

pub mod adjust;
pub mod anthropic;
pub mod attachment;
mod attempt;
mod batches;
pub mod bedrock;
#[cfg(target_os = "linux")]
mod buffers;
mod client;
mod error;
mod format;
mod http;
pub mod ollama;
mod one_write;
pub(crate) use one_write::OneWrite;
pub mod openai;
pub mod presets;
pub mod responses;
mod retry;
pub mod stream;
mod streamed;
#[cfg(target_os = "linux")]
mod tcp;
#[cfg(target_os = "linux")]
pub(crate) use tcp::{adopt as adopt_tcp, probe as tcp_is_idle, socket_addr};
mod types;
pub(crate) mod wire;

use std::fmt;

pub use adjust::{Change, Quirks};
pub use attachment::{Attachment, Kind as AttachmentKind};
pub use batches::{Counts as BatchCounts, Item as BatchItem, Polled};
pub(crate) use client::{Pooled, open_tcp, with_parts as http_agent};
pub use error::{
    ErrorDetail, ErrorKind, ProviderError, error_detail, invalid_json_detail, looks_like_html,
};
pub use http::{MAX_BODY_BYTES, Notice, Provider, Retry};
pub use retry::{
    Backoff, RETRYABLE_STATUSES, RetryPolicy, http_date, retry_hint, retryable_status,
    should_retry_hint,
};
pub use types::*;
pub(crate) use wire::*;

/// A wire format by name: what a provider speaks (config.toml's `api`,
/// or `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    Anthropic,
    OpenAi,
    Ollama,
    /// Amazon Bedrock's Converse API, signed with AWS's keys: a wire of
    /// its own provider only (no `kind` names it), so not in [`Wire::ALL`].
    Bedrock,
    /// OpenAI's Responses API: named by a table's `api` (design §4.14),
    /// and the route of the models that answer only there (`presets.rs`);
    /// no provider has it as its own name, so not in [`Wire::ALL`].
    Responses,
}

impl Wire {
    /// The wires that are also providers' own names (`openai/gpt-4o`).
    pub const ALL: [Wire; 3] = [Wire::Anthropic, Wire::OpenAi, Wire::Ollama];

    /// The wires a `[providers.<name>]` table's `api` (or `kind`) may name.
    pub const NAMEABLE: [Wire; 4] = [Wire::Anthropic, Wire::OpenAi, Wire::Ollama, Wire::Responses];

    /// The number of wires, Bedrock's and Responses' included.
    pub const COUNT: usize = 5;

    pub fn parse(name: &str) -> Option<Wire> {
        Wire::ALL
            .into_iter()
            .chain([Wire::Bedrock])
            .find(|w| w.name() == name)
    }

    /// The wire a table's `api` (or `kind`) names.
    pub fn nameable(name: &str) -> Option<Wire> {
        Wire::NAMEABLE.into_iter().find(|w| w.name() == name)
    }

    /// The name used in model strings, config tables and env variables.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
            Wire::Ollama => "ollama",
            Wire::Bedrock => "bedrock",
            Wire::Responses => "responses",
        }
    }

    /// What the wire does: its folder's [`Format`](format::Format), the one
    /// interface the common code calls.
    pub(crate) fn format(self) -> &'static dyn format::Format {
        match self {
            Wire::Anthropic => &anthropic::Messages,
            Wire::OpenAi => &openai::ChatCompletions,
            Wire::Ollama => &ollama::Chat,
            Wire::Bedrock => &bedrock::Converse,
            Wire::Responses => &responses::Responses,
        }
    }
}

/// A `provider/model` string, split at the first `/`: the provider by the
/// name written (`groq`) and the wire it speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelRef {
    /// The wire format the provider speaks.
    pub wire: Wire,
    /// The provider's name as written: a wire's own (`openai`), a preset's
    /// (`groq`) or a `[providers.<name>]` table's.
    pub provider: String,
    pub model: String,
}

impl ModelRef {
    /// Parses `provider/model` for a wire's own name or a preset's (design
    /// §4.12); config.toml's named providers need
    /// [`ModelRef::parse_with`].
    pub fn parse(s: &str) -> Result<ModelRef, ModelError> {
        ModelRef::parse_with(s, &|_| None)
    }

    /// Parses `provider/model`, asking `configured` first for the wire of
    /// a provider name (config.toml's `[providers.<name>] kind`), then the
    /// wires' own names, then the presets.
    pub fn parse_with(
        s: &str,
        configured: &dyn Fn(&str) -> Option<Wire>,
    ) -> Result<ModelRef, ModelError> {
        let (provider, model) = match s.split_once('/') {
            Some((p, m)) if !p.trim().is_empty() && !m.trim().is_empty() => (p.trim(), m.trim()),
            _ => return Err(ModelError::Malformed(s.to_string())),
        };
        let wire = configured(provider)
            .or_else(|| Wire::parse(provider).map(|w| presets::own_wire_for(w, model)))
            .or_else(|| presets::preset(provider).map(|p| p.wire_for(model)))
            .ok_or_else(|| ModelError::Unsupported(provider.to_string()))?;
        // Bedrock's model is a segment of the URL's path, where `.` and
        // `..` would name another (design §4.13).
        if wire == Wire::Bedrock && matches!(model, "." | "..") {
            return Err(ModelError::Malformed(s.to_string()));
        }
        Ok(ModelRef {
            wire,
            provider: provider.to_string(),
            model: model.to_string(),
        })
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.provider, self.model)
    }
}

/// Why a model string is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// Not `provider/model`.
    Malformed(String),
    /// A provider axe does not know by that name.
    Unsupported(String),
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Malformed(s) if s.ends_with("/.") || s.ends_with("/..") => {
                write!(
                    f,
                    "invalid model {s:?}: a model ID cannot be \".\" or \"..\""
                )
            }
            ModelError::Malformed(s) => write!(
                f,
                "invalid model {s:?}: expected provider/model, e.g. anthropic/claude-sonnet-4-5"
            ),
            ModelError::Unsupported(p) => {
                let presets: Vec<&str> = presets::PRESETS.iter().map(|p| p.name).collect();
                write!(
                    f,
                    "unsupported provider \"{p}\": supported providers are anthropic, openai, \
                     ollama, bedrock, {}, or a [providers.{p}] table with kind in config.toml",
                    presets.join(", ")
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_strings_split_at_the_first_slash() {
        let m = ModelRef::parse("openai/meta-llama/Llama-3-8b").unwrap();
        assert_eq!(
            (m.wire, m.model.as_str()),
            (Wire::OpenAi, "meta-llama/Llama-3-8b")
        );
        let m = ModelRef::parse("groq/llama-3.3-70b").unwrap();
        assert_eq!((m.wire, m.provider.as_str()), (Wire::OpenAi, "groq"));
        assert_eq!(m.to_string(), "groq/llama-3.3-70b");
        let vllm = ModelRef::parse_with("vllm/qwen", &|n| (n == "vllm").then_some(Wire::OpenAi));
        assert_eq!(vllm.map(|m| m.wire), Ok(Wire::OpenAi));
        assert_eq!(
            ModelRef::parse("nope"),
            Err(ModelError::Malformed("nope".into()))
        );
        assert_eq!(
            ModelRef::parse("/m"),
            Err(ModelError::Malformed("/m".into()))
        );
        assert!(ModelRef::parse("x/m").unwrap_err().to_string().starts_with(
            "unsupported provider \"x\": supported providers are anthropic, openai, ollama, bedrock, google,"
        ),);
    }
}
