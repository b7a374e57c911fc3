//! The one error type. Every failure axe reports is an [`Error`], and
//! [`Error::exit_code`] is the exit code docs/reference/exit-codes.md gives it
//! (design §2.10); [`Code`] names every way the process ends, a panic and
//! the signals included. A caller can match on an error the way it would on
//! any enum: a missing agent is `Error::AgentNotFound`, a sub-agent's
//! timeout `Error::Provider` whose kind is `ErrorKind::Timeout`. The
//! failures no caller tells apart keep a message (`General`, `Config`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::provider::{ErrorKind, ModelError, ProviderError};

/// How the process ends: every exit status axe gives, as docs/reference/exit-codes.md
/// and design §2.10 list them. [`Code::status`] is the number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The command did what it was asked; `--dry-run` too (0).
    Success,
    /// Bad model string, unsupported provider, bad request, turn limit, a
    /// model that declined, usage errors (1).
    General,
    /// Agent not found, bad TOML, validation, bad config.toml, bad glob,
    /// workdir or skill (2).
    Config,
    /// Missing key, auth, rate limit, overloaded, timeout, server error,
    /// network (3).
    Api,
    /// A `[budget]` or `--max-tokens` / `--max-turns` bound was reached (4).
    Budget,
    /// The answer never matched the output schema (5, design D22).
    Output,
    /// A panic outside a sub-agent's call: a bug in axe (1, as `General`;
    /// design §6.8).
    Panic,
    /// Ended by SIGHUP (129, design §6.5).
    HungUp,
    /// Ended by SIGINT, Ctrl-C (130).
    Interrupted,
    /// Ended by SIGTERM (143).
    Terminated,
}

impl Code {
    /// The exit status: 128 plus the signal's number for a signal, as
    /// shells report them.
    pub const fn status(self) -> u8 {
        match self {
            Code::Success => 0,
            Code::General | Code::Panic => 1,
            Code::Config => 2,
            Code::Api => 3,
            Code::Budget => 4,
            Code::Output => 5,
            Code::HungUp => 129,
            Code::Interrupted => 130,
            Code::Terminated => 143,
        }
    }
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> ExitCode {
        ExitCode::from(code.status())
    }
}

/// What the run's deadline passed during, outside a provider call (a
/// provider call's own timeout is a [`ProviderError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum During {
    /// Waiting for stdin's end.
    ReadingStdin,
    /// Walking the context files' globs or reading the files.
    ReadingContextFiles,
    /// Checking the final answer against the output schema.
    CheckingAnswer,
}

/// Everything that can end a command with an error.
#[derive(Debug)]
pub enum Error {
    /// Bad usage or input that no caller tells apart: argument errors,
    /// `--timeout 0`, stdin unreadable or over 32 MiB, stdout unwritable,
    /// the editor of `agents edit` (exit 1).
    General(String),
    /// A model string that is not one, or an unsupported provider (exit 1).
    Model(ModelError),
    /// No file `<config>/agents/<name>.toml`: for `axe run`, `agents show`,
    /// `edit` and `tree`, and a sub-agent's load (exit 2). `searched` are
    /// the directories looked in, said when known (a command's own agent;
    /// not a model's `call_agent`, not a client of `axe serve`).
    AgentNotFound {
        name: String,
        searched: Vec<PathBuf>,
    },
    /// `name` is not an agent name (design D9), found before any file is
    /// touched (exit 2). In a file's `sub_agents` it is a
    /// [`Error::Config`] that names the key.
    InvalidAgentName { name: String },
    /// An agent file, config.toml or the agents directory is there but
    /// could not be read: not a regular file, too large, not UTF-8, or an
    /// I/O error, said by `why` (exit 2).
    Unreadable { path: PathBuf, why: String },
    /// An agent file that is not TOML, or a key of the wrong type (exit 2).
    InvalidAgentFile { path: PathBuf, why: String },
    /// `error`, about the agent file at `path`: a rule of its validation,
    /// its model string (exit as `error`'s).
    InAgentFile { path: PathBuf, error: Box<Error> },
    /// A config.toml that is not TOML, or a key of the wrong type (exit 2).
    InvalidConfigFile { path: PathBuf, why: String },
    /// A top-level agent whose file names no model, run without `--model`
    /// (exit 2; only a sub-agent inherits its caller's, design D21).
    NoModel,
    /// The skill (`--skill`, or the file's `skill`) does not exist (exit 2).
    SkillNotFound { path: PathBuf },
    /// The skill is there but could not be read: not a regular file, over
    /// `max_file_bytes`, or an I/O error, said by `why` (exit 2).
    SkillUnreadable { path: PathBuf, why: String },
    /// The workdir (`--workdir`, or the file's `workdir`) does not exist
    /// (exit 2).
    WorkdirNotFound { path: PathBuf },
    /// The workdir is there but is not a directory (exit 2).
    WorkdirNotDirectory { path: PathBuf },
    /// A `files` pattern that is not a glob; `why` is the glob parser's
    /// reason (exit 2).
    InvalidGlob { pattern: String, why: String },
    /// A provider's base URL that is not `http://` or `https://` (exit 2).
    InvalidBaseUrl { provider: String, url: String },
    /// Any other problem with the config: an agent file's validation, an
    /// output schema, the system prompt over its limit, a directory or file
    /// `init` cannot write, the trace path, the problems `agents check`
    /// found (exit 2).
    Config(String),
    /// The provider needs an API key and neither the environment nor
    /// config.toml has one (exit 3).
    MissingKey { provider: String, var: String },
    /// The run's deadline, `secs` after it started, passed outside a
    /// provider call (exit 3).
    TimedOut { secs: u64, during: During },
    /// A provider call failed (exit 3; a bad request is exit 1).
    Provider(ProviderError),
    /// The model declined to answer (exit 1); `what` says how, in the
    /// provider's words where it gave some (design §5.2).
    Declined { provider: String, what: String },
    /// The conversation needed more than its turns, 50 (exit 1).
    TooManyTurns(u32),
    /// A token or turn budget is spent (exit 4).
    Budget(Exceeded),
    /// The answer did not match the output schema after `repairs` repair
    /// turns; `first` is the first thing wrong with the last one (exit 5).
    Output { repairs: u32, first: String },
    /// A run that failed after some of its streamed text was printed: the
    /// failure, said with a note that stdout holds partial output (exit as
    /// the failure's, design §4.11).
    Partial(Box<Error>),
    /// A batch in which `failed` of its `total` inputs did not succeed
    /// (failed or not started); exit as the largest of their exit codes
    /// (design §11.6).
    Batch { failed: u64, total: u64, code: u8 },
}

/// A budget that is spent (exit code 4 at top level). `OutputTokens`: the
/// tokens generated alone (a served request's `max_completion_tokens`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Tokens {
        used: u64,
        max: u64,
    },
    OutputTokens {
        used: u64,
        max: u64,
    },
    Turns {
        used: u64,
        max: u64,
    },
    /// In picodollars (design §7.8).
    Cost {
        used: u64,
        max: u64,
    },
}

impl Error {
    pub fn general(message: impl Into<String>) -> Error {
        Error::General(message.into())
    }

    pub fn config(message: impl Into<String>) -> Error {
        Error::Config(message.into())
    }

    /// This error, said as one about the agent file at `path`.
    pub fn in_agent_file(self, path: &Path) -> Error {
        Error::InAgentFile {
            path: path.to_path_buf(),
            error: Box::new(self),
        }
    }

    /// This error, an agent not found saying the directories `dirs` it was
    /// looked for in.
    pub fn looked_in(self, dirs: &[PathBuf]) -> Error {
        match self {
            Error::AgentNotFound { name, .. } => Error::AgentNotFound {
                name,
                searched: dirs.to_vec(),
            },
            e => e,
        }
    }

    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> Code {
        match self {
            Error::Partial(e) | Error::InAgentFile { error: e, .. } => e.exit_code(),
            Error::Batch { code, .. } => match code {
                2 => Code::Config,
                3 => Code::Api,
                4 => Code::Budget,
                5 => Code::Output,
                _ => Code::General,
            },
            Error::AgentNotFound { .. }
            | Error::InvalidAgentName { .. }
            | Error::Unreadable { .. }
            | Error::InvalidAgentFile { .. }
            | Error::InvalidConfigFile { .. }
            | Error::NoModel
            | Error::SkillNotFound { .. }
            | Error::SkillUnreadable { .. }
            | Error::WorkdirNotFound { .. }
            | Error::WorkdirNotDirectory { .. }
            | Error::InvalidGlob { .. }
            | Error::InvalidBaseUrl { .. }
            | Error::Config(_) => Code::Config,
            Error::MissingKey { .. } | Error::TimedOut { .. } => Code::Api,
            Error::Provider(e) if e.kind == ErrorKind::BadRequest => Code::General,
            Error::Provider(_) => Code::Api,
            Error::Budget(_) => Code::Budget,
            Error::Output { .. } => Code::Output,
            Error::General(_)
            | Error::Model(_)
            | Error::Declined { .. }
            | Error::TooManyTurns(_) => Code::General,
        }
    }

    /// The error as the one line `axe: ...` prints: newlines folded,
    /// secrets redacted.
    pub fn one_line(&self) -> String {
        crate::text::redact::redact(&crate::text::one_line(&self.to_string()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::General(m) | Error::Config(m) => f.write_str(m),
            Error::Model(e) => e.fmt(f),
            Error::AgentNotFound { name, searched } if searched.is_empty() => {
                write!(f, "agent config not found: {name}")
            }
            Error::AgentNotFound { name, searched } => {
                let dirs: Vec<String> = searched.iter().map(|d| d.display().to_string()).collect();
                write!(
                    f,
                    "agent config not found: {name} (looked in {})",
                    dirs.join(", ")
                )
            }
            Error::InAgentFile { path, error } => write!(f, "{error} (in {})", path.display()),
            Error::InvalidAgentName { name } => write!(
                f,
                "invalid agent name {name:?}: use only letters, digits, '.', '_' and '-'"
            ),
            Error::Unreadable { path, why } => write!(f, "cannot read {}: {why}", path.display()),
            Error::InvalidAgentFile { path, why } => {
                write!(f, "invalid agent config {}: {why}", path.display())
            }
            Error::InvalidConfigFile { path, why } => {
                write!(f, "invalid config {}: {why}", path.display())
            }
            Error::NoModel => f.write_str(
                "agent config missing required field: model (at top level an agent needs its \
                 own model or --model; only a sub-agent inherits its caller's)",
            ),
            Error::SkillNotFound { path } => write!(f, "skill not found: {}", path.display()),
            Error::SkillUnreadable { path, why } => {
                write!(f, "cannot read skill {}: {why}", path.display())
            }
            Error::WorkdirNotFound { path } => {
                write!(f, "workdir does not exist: {}", path.display())
            }
            Error::WorkdirNotDirectory { path } => {
                write!(f, "workdir is not a directory: {}", path.display())
            }
            Error::InvalidGlob { pattern, why } => write!(f, "invalid glob {pattern:?}: {why}"),
            Error::InvalidBaseUrl { provider, url } => write!(
                f,
                "invalid base URL for provider \"{provider}\": {url:?} (expected http:// or https://)"
            ),
            // AWS's keys are read from the environment only.
            Error::MissingKey { provider, var } if var.starts_with("AWS_") => write!(
                f,
                "AWS keys for provider \"{provider}\" are not configured (set {var})"
            ),
            Error::MissingKey { provider, var } => write!(
                f,
                "API key for provider \"{provider}\" is not configured (set {var} or add it to \
                 config.toml)"
            ),
            Error::TimedOut { secs, during } => match during {
                During::ReadingStdin => write!(f, "timeout after {secs}s while reading stdin"),
                During::ReadingContextFiles => {
                    write!(f, "timeout after {secs}s (while reading context files)")
                }
                During::CheckingAnswer => write!(
                    f,
                    "timeout after {secs}s (while checking the answer against the output schema)"
                ),
            },
            Error::Provider(e) => e.fmt(f),
            Error::Declined { provider, what } => write!(f, "{provider}: {what}"),
            Error::TooManyTurns(max) => {
                write!(f, "agent exceeded maximum conversation turns ({max})")
            }
            Error::Budget(e) => e.fmt(f),
            // "repairs" whatever N, as design D22 writes the message.
            Error::Output { repairs, first } => write!(
                f,
                "output does not match the schema after {repairs} repairs: {first}"
            ),
            Error::Partial(e) => write!(f, "{e} (the output on stdout is partial)"),
            Error::Batch { failed, total, .. } => write!(
                f,
                "{failed} of {total} inputs did not succeed (their lines say why)"
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

impl std::fmt::Display for Exceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exceeded::Tokens { used, max } => {
                write!(f, "token budget exceeded (used {used} of {max})")
            }
            Exceeded::OutputTokens { used, max } => {
                write!(f, "output token budget exceeded (used {used} of {max})")
            }
            Exceeded::Turns { used, max } => {
                write!(f, "turn budget exceeded (used {used} of {max})")
            }
            Exceeded::Cost { used, max } => {
                let (used, max) = (crate::cost::usd(*used), crate::cost::usd(*max));
                write!(f, "cost budget exceeded (spent ${used:.4} of ${max:.2})")
            }
        }
    }
}

impl std::error::Error for Exceeded {}

/// The text a panic carried (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

#[cfg(test)]
mod tests;
