//! What a wire format is to the rest of the provider layer: [`Format`],
//! implemented once by each wire's folder (`anthropic/`, `openai/`,
//! `ollama/`, `bedrock/`) and reached through [`Wire::format`](super::Wire). A wire
//! owns all it says: where its requests go and the headers that carry the
//! key, the body, the parsing of an answer, how its stream is framed and
//! what its events mean, and what its models refuse. The common code (the
//! HTTP path, retries, the attempt, the stream's framing, the errors)
//! calls only these, and names no wire.

use serde_json::Value;

use super::adjust::{Change, Quirks};
use super::bedrock::AwsKeys;
use super::stream::{Assembly, Frames};
use super::{ErrorDetail, Request, Response};

/// One wire format, as the common code calls it.
pub(crate) trait Format: Sync {
    /// The base URL of the wire's own provider (`openai`, ...), when its
    /// configuration names none.
    fn default_base_url(&self) -> &'static str;

    /// Whether a provider on this wire needs an API key: exit 3 without
    /// one (a provider named by a `[providers.<name>]` table never does).
    fn needs_key(&self) -> bool;

    /// The URL requests for `model` are sent to, from the provider's base
    /// URL.
    fn endpoint(&self, base_url: &str, model: &str) -> String;

    /// Where a request for a stream goes: the same URL, but for a wire
    /// whose streams have an endpoint of their own (Bedrock's
    /// `converse-stream`).
    fn stream_endpoint(&self, base_url: &str, model: &str) -> String {
        self.endpoint(base_url, model)
    }

    /// The headers that carry the API key, with any the API requires of
    /// every request, in the order they are sent.
    fn auth(&self, key: Option<&str>) -> Vec<(&'static str, String)>;

    /// The headers that sign a request of `body` to `url` with AWS's keys
    /// (Bedrock's SigV4); none by default.
    fn signed(
        &self,
        _aws: Option<&AwsKeys>,
        _url: &str,
        _body: &[u8],
    ) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    /// Whether the wire's answers are ever streamed: a request for a
    /// stream to one that is not gets its answer whole.
    fn streams(&self) -> bool {
        true
    }

    /// How a streamed answer is cut into events.
    fn frames(&self) -> Frames;

    /// How a request to any model at `base_url` is written before the
    /// model refused anything (design §4.4).
    fn quirks(&self, _base_url: &str) -> Quirks {
        Quirks::default()
    }

    /// The JSON body for `req`, written for a model with `quirks`.
    fn body(&self, req: &Request, quirks: Quirks) -> Value;

    /// What a 400's `detail` says the model refused, if it is a parameter
    /// `req` (written with `quirks`) carried and may go without: the
    /// request is then sent again without it, and the model remembered
    /// (`adjust`). None by default: the 400 is the answer.
    fn refused(&self, _detail: &ErrorDetail, _req: &Request, _quirks: Quirks) -> Option<Change> {
        None
    }

    /// Why `schema` cannot go to this wire as the answer's schema, when it
    /// cannot: axe alone then checks the answer (design D22).
    fn unsent_schema(&self, _schema: &Value) -> Option<String> {
        None
    }

    /// Whether this wire's requests carry prompt-cache marks of axe's
    /// (design §4.10); the other wires' servers cache on their own.
    fn marks_cache(&self) -> bool {
        false
    }

    /// Why this wire cannot carry an attachment of `kind`, when it cannot
    /// (design §4.16): the run is refused before any request.
    fn refuses_attachment(&self, _kind: crate::provider::AttachmentKind) -> Option<&'static str> {
        None
    }

    /// A successful response body read into the answer, or why it is not one.
    fn parse(&self, body: &str) -> Result<Response, String>;

    /// A streamed answer's assembly, before its first event.
    fn assembly(&self) -> Box<dyn Assembly>;

    /// What a refused connection to `url` is said to be.
    fn connection_refused(&self, _base_url: &str, url: &str) -> String {
        format!("connection refused ({url})")
    }
}
