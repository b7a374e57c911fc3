//! The built-in tools an agent names in `tools = [...]` (design §8):
//! one file per tool, and this registry, which names, describes
//! and runs them. What a call may touch is decided by the sandbox
//! (`crate::sandbox`): paths through `openat2` beneath the workdir,
//! commands under Landlock, URLs through a resolver that refuses private
//! addresses. Every result is capped, with a marker saying what was cut.
//! A tool never fails its caller: every outcome is a [`Done`].

pub mod artifacts;
mod config;
mod edit_file;
mod kit;
mod list_directory;
mod read_file;
mod run_command;
mod search_files;
pub mod url_fetch;
mod web_search;
mod write_file;

use std::collections::BTreeMap;
use std::time::Instant;

use crate::provider::{Tool, ToolParameter};
use crate::sandbox::{Policy, Root};

pub use config::{SandboxConfig, ToolsConfig};
pub use kit::{Kit, kit};

/// The most bytes of one tool's result that reach the model.
pub const MAX_RESULT_BYTES: usize = 32 * 1024;

/// The arguments of a call, as the run loop has them: values as strings,
/// non-string JSON values as their JSON text (design D3).
pub type Args = BTreeMap<String, String>;

/// What a tool call may use.
pub struct Env<'a> {
    /// The workdir, opened: every path is resolved beneath it.
    pub root: &'a Root,
    pub policy: &'a Policy,
    /// `url_fetch` only reaches these hosts (exact, or `*.suffix`); empty:
    /// any public host.
    pub allowed_hosts: &'a [String],
    /// `url_fetch` may reach private, loopback and link-local addresses.
    pub private_networks: bool,
    pub deadline: Instant,
    /// The run's cancel flag: a running command is stopped when it is set.
    pub cancel: &'a crate::deadline::Cancel,
    /// The agent's artifact directory, when it has one (design §8.9).
    pub artifacts: Option<&'a artifacts::Artifacts>,
}

impl Env<'_> {
    /// The root a file tool's `path` is resolved beneath: the artifact
    /// directory when the call's `artifact` is true (any case, as in the
    /// Go original), or when it is absent and `default` (`write_file` under
    /// `default_write`); else the workdir. `artifact` true without a
    /// directory is the Go original's error result.
    fn place(
        &self,
        args: &Args,
        default: bool,
    ) -> Result<(&Root, Option<&artifacts::Artifacts>), Done> {
        let asked = match args.get("artifact").map(|v| v.trim()) {
            None | Some("") => default && self.artifacts.is_some_and(|a| a.default_write),
            Some(v) => v.eq_ignore_ascii_case("true"),
        };
        match (asked, self.artifacts) {
            (false, _) => Ok((self.root, None)),
            (true, Some(a)) => Ok((&a.root, Some(a))),
            (true, None) => Err(Done::error(
                "artifact directory not configured for this agent",
            )),
        }
    }
}

/// The `artifact` parameter of the file tools (the Go original's: a
/// string, "true" or not).
const ARTIFACT_PARAM: (&str, &str, bool, &str) = (
    "artifact",
    "string",
    false,
    "When \"true\", the path is in the artifact directory instead of the working directory.",
);

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    /// The result for the model.
    pub text: String,
    pub is_error: bool,
    /// A command's exit status, for reports.
    pub exit: Option<i32>,
    /// Bytes the tool read, wrote or received (before the cap), for reports.
    pub bytes: u64,
}

impl Done {
    pub fn ok(text: String, bytes: u64) -> Done {
        Done {
            text,
            is_error: false,
            exit: None,
            bytes,
        }
    }

    pub fn error(text: impl Into<String>) -> Done {
        Done {
            text: text.into(),
            is_error: true,
            exit: None,
            bytes: 0,
        }
    }
}

/// One built-in tool: its name, its definition for the model, and how it runs.
struct Builtin {
    name: &'static str,
    define: fn() -> Tool,
    run: fn(&Args, &Env) -> Done,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "read_file",
        define: read_file::define,
        run: read_file::run,
    },
    Builtin {
        name: "list_directory",
        define: list_directory::define,
        run: list_directory::run,
    },
    Builtin {
        name: "search_files",
        define: search_files::define,
        run: search_files::run,
    },
    Builtin {
        name: "write_file",
        define: write_file::define,
        run: write_file::run,
    },
    Builtin {
        name: "edit_file",
        define: edit_file::define,
        run: edit_file::run,
    },
    Builtin {
        name: "run_command",
        define: run_command::define,
        run: run_command::run,
    },
    Builtin {
        name: "url_fetch",
        define: url_fetch::define,
        run: url_fetch::run,
    },
    Builtin {
        name: "web_search",
        define: web_search::define,
        run: web_search::run,
    },
];

/// Every built-in tool's name, in the order they are offered.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|b| b.name)
}

/// Whether `name` is a built-in tool.
pub fn exists(name: &str) -> bool {
    BUILTINS.iter().any(|b| b.name == name)
}

/// The closest built-in name to an unknown one, if any is close.
pub fn did_you_mean(name: &str) -> Option<&'static str> {
    names()
        .map(|n| (n, strsim::jaro_winkler(name, n)))
        .filter(|(_, score)| *score > 0.8)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(n, _)| n)
}

/// The definition the model is sent for tool `name`, for an agent with an
/// artifact directory or without one: without, the file tools' `artifact`
/// is not offered (the Go original offers it always; here it costs every
/// request its bytes for nothing, design §8.9). Passed anyway, it still
/// gets the Go original's error result.
pub fn definition(name: &str, artifacts: bool) -> Option<Tool> {
    let mut tool = BUILTINS
        .iter()
        .find(|b| b.name == name)
        .map(|b| (b.define)())?;
    if !artifacts {
        tool.parameters.remove(ARTIFACT_PARAM.0);
    }
    Some(tool)
}

/// Runs built-in tool `name`; its result is capped at [`MAX_RESULT_BYTES`].
pub fn run(name: &str, args: &Args, env: &Env) -> Done {
    let Some(b) = BUILTINS.iter().find(|b| b.name == name) else {
        return Done::error(format!("Unknown tool: \"{name}\""));
    };
    let mut done = (b.run)(args, env);
    done.text = crate::text::cap(done.text, MAX_RESULT_BYTES);
    done
}

/// A tool definition from its name, description and parameters
/// (`(name, type, required, description)`).
fn tool(name: &str, description: &str, params: &[(&str, &str, bool, &str)]) -> Tool {
    Tool {
        name: name.to_string(),
        description: description.to_string(),
        parameters: params
            .iter()
            .map(|(n, kind, required, desc)| {
                let p = ToolParameter {
                    kind: kind.to_string(),
                    description: desc.to_string(),
                    required: *required,
                    allowed: Vec::new(),
                };
                (n.to_string(), p)
            })
            .collect(),
        schema: None,
    }
}

/// A required string argument, or the error result naming it.
fn required<'a>(args: &'a Args, name: &str) -> Result<&'a str, Done> {
    match args.get(name).map(String::as_str) {
        Some(v) if !v.is_empty() => Ok(v),
        _ => Err(Done::error(format!("\"{name}\" argument is required"))),
    }
}

/// An optional positive integer argument.
fn number(args: &Args, name: &str, default: u64) -> Result<u64, Done> {
    match args.get(name).map(|v| v.trim()) {
        None | Some("") => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .ok()
            .or_else(|| {
                v.parse::<f64>()
                    .ok()
                    .filter(|f| *f >= 0.0 && f.fract() == 0.0)
                    .map(|f| f as u64)
            })
            .ok_or_else(|| {
                Done::error(format!(
                    "\"{name}\" must be a non-negative whole number, not {v:?}"
                ))
            }),
    }
}

/// An optional boolean argument (`true`/`false`, as JSON or text).
fn flag(args: &Args, name: &str) -> bool {
    args.get(name)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests;
