//! Errors that decide axe's exit code.
//!
//! Most code returns `anyhow::Result` and adds context at the edges. Where the
//! exit code matters, the root cause is a typed error: [`Error`] for config and
//! general failures, [`crate::provider::ProviderError`] for anything a provider
//! did. [`exit_code`] walks an error chain to find which one it is.

use std::fmt;

use crate::provider::ProviderError;
use crate::run::RunError;

/// Process exit codes, as documented in README.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Bad model string, unsupported provider, bad request, turn limit, usage errors.
    General = 1,
    /// Agent not found, bad TOML, validation, bad config.toml, bad glob, workdir or skill.
    Config = 2,
    /// Missing key, auth, rate limit, overloaded, timeout, server error, network.
    Api = 3,
    /// A `[budget]` or `--max-tokens` / `--max-turns` bound was reached.
    Budget = 4,
}

/// A failure whose exit code is known where it happens.
#[derive(Debug)]
pub struct Error {
    pub code: Code,
    pub message: String,
}

impl Error {
    pub fn general(message: impl Into<String>) -> Error {
        Error {
            code: Code::General,
            message: message.into(),
        }
    }

    pub fn config(message: impl Into<String>) -> Error {
        Error {
            code: Code::Config,
            message: message.into(),
        }
    }

    pub fn api(message: impl Into<String>) -> Error {
        Error {
            code: Code::Api,
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// The exit code for an error: the code of the first typed error in its chain,
/// else [`Code::General`].
pub fn exit_code(err: &anyhow::Error) -> Code {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<Error>() {
            return e.code;
        }
        if let Some(e) = cause.downcast_ref::<ProviderError>() {
            return e.exit_code();
        }
        if let Some(e) = cause.downcast_ref::<RunError>() {
            return e.exit_code();
        }
    }
    Code::General
}

/// The text a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// The one-line text of an error: every cause joined by `: `, newlines folded,
/// configured secrets redacted.
pub fn one_line(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    let folded: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    crate::redact::redact(&folded)
}
