//! The one error type. Every failure axe reports is an [`Error`], and
//! [`Error::exit_code`] is the exit code the README documents for it
//! (design §2.10). A caller can match on it the way it would on any enum:
//! a sub-agent's timeout, say, is `Error::Provider` whose kind is
//! `ErrorKind::Timeout`.

use std::fmt;

use crate::ledger::Exceeded;
use crate::provider::{ErrorKind, Kind, ModelError, ProviderError};

/// Process exit codes, as documented in README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Bad model string, unsupported provider, bad request, turn limit,
    /// refusal, usage errors.
    General = 1,
    /// Agent not found, bad TOML, validation, bad config.toml, bad glob,
    /// workdir or skill.
    Config = 2,
    /// Missing key, auth, rate limit, overloaded, timeout, server error,
    /// network.
    Api = 3,
    /// A `[budget]` or `--max-tokens` / `--max-turns` bound was reached.
    Budget = 4,
    /// The answer never matched the output schema (design D22).
    Output = 5,
}

/// Everything that can end a command with an error.
#[derive(Debug)]
pub enum Error {
    /// Bad usage or input (exit 1).
    General(String),
    /// A model string that is not one, or an unsupported provider (exit 1).
    Model(ModelError),
    /// A problem with the config: agent files, config.toml, globs, workdir,
    /// skill, trace path (exit 2).
    Config(String),
    /// A missing API key, or a deadline that passed outside a provider call
    /// (exit 3).
    Api(String),
    /// A provider call failed (exit 3; a bad request is exit 1).
    Provider(ProviderError),
    /// The model declined to answer (exit 1); `what` says how.
    Refused { provider: Kind, what: String },
    /// The conversation needed more than its turns, 50 (exit 1).
    TooManyTurns(u32),
    /// A token or turn budget is spent (exit 4).
    Budget(Exceeded),
    /// The answer did not match the output schema after `repairs` repair
    /// turns; `first` is the first thing wrong with the last one (exit 5).
    Output { repairs: u32, first: String },
}

impl Error {
    pub fn general(message: impl Into<String>) -> Error {
        Error::General(message.into())
    }

    pub fn config(message: impl Into<String>) -> Error {
        Error::Config(message.into())
    }

    pub fn api(message: impl Into<String>) -> Error {
        Error::Api(message.into())
    }

    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> Code {
        match self {
            Error::Config(_) => Code::Config,
            Error::Api(_) => Code::Api,
            Error::Provider(e) if e.kind == ErrorKind::BadRequest => Code::General,
            Error::Provider(_) => Code::Api,
            Error::Budget(_) => Code::Budget,
            Error::Output { .. } => Code::Output,
            Error::General(_)
            | Error::Model(_)
            | Error::Refused { .. }
            | Error::TooManyTurns(_) => Code::General,
        }
    }

    /// The error as the one line `axe: ...` prints: newlines folded,
    /// secrets redacted.
    pub fn one_line(&self) -> String {
        crate::redact::redact(&crate::text::one_line(&self.to_string()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::General(m) | Error::Config(m) | Error::Api(m) => f.write_str(m),
            Error::Model(e) => e.fmt(f),
            Error::Provider(e) => e.fmt(f),
            Error::Refused { provider, what } => write!(f, "{}: {what}", provider.name()),
            Error::TooManyTurns(max) => {
                write!(f, "agent exceeded maximum conversation turns ({max})")
            }
            Error::Budget(e) => e.fmt(f),
            // "repairs" whatever N, as design D22 writes the message.
            Error::Output { repairs, first } => write!(
                f,
                "output does not match the schema after {repairs} repairs: {first}"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl From<ModelError> for Error {
    fn from(e: ModelError) -> Error {
        Error::Model(e)
    }
}

impl From<ProviderError> for Error {
    fn from(e: ProviderError) -> Error {
        Error::Provider(e)
    }
}

impl From<Exceeded> for Error {
    fn from(e: Exceeded) -> Error {
        Error::Budget(e)
    }
}

/// The text a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}
