//! Agents: an agent file (`<config>/agents/<name>.toml`) loaded, checked and
//! turned into an [`AgentConfig`] whose values are known to be valid, and
//! the agents directory listed. The file's TOML shape and its validation
//! are in `file`; other tools' files are turned into it in `foreign`; the
//! scaffold and the `agents show` view in `text`.

mod catalog;
mod file;
mod foreign;
mod output;
mod response_format;
mod text;
mod tools;

use std::fs;
use std::path::{Path, PathBuf};

pub use crate::memory::MemoryConfig;
pub use crate::tools::{SandboxConfig, ToolsConfig};
pub use catalog::{Catalog, LeftOut, Place, Roots};
pub use foreign::{Exported, export};
pub use output::output_schema;
pub use text::{scaffold, scaffold_for, show, yes_no};

use crate::config::tomlfile;
use crate::config::{GlobalConfig, RetrySettings};
use crate::error::Error;
use crate::paths;
use crate::paths::{AgentDirs, Format};
use crate::provider::{Effort, ModelRef, Reasoning};
use crate::sandbox::read;

/// The name of the tool through which an agent's `sub_agents` are offered
/// (design §3.3): no built-in tool, and not a name its `tools` may list.
/// The tool itself is `run::call_agent`'s.
pub const CALL_AGENT: &str = "call_agent";

/// The model the scaffold is written with (`axe agents init` without
/// `--model`): the Go original's placeholder, which the spec fixes; a run of
/// an agent still holding it says what to set (design §2.3).
pub const PLACEHOLDER_MODEL: &str = "provider/model-name";

/// Nesting limit for sub-agents when `max_depth` is 0 or absent.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// Hard limit for `max_depth`.
pub const MAX_DEPTH_LIMIT: i64 = 5;
/// Default `max_result_chars`: the most characters of a sub-agent's answer
/// that reach its parent.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 20_000;
/// Default `max_file_bytes`: a larger context file is skipped, a larger
/// skill is an error.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;
/// Default `max_prompt_bytes`: the most the system prompt may hold; context
/// files that would take it past this are skipped.
pub const DEFAULT_MAX_PROMPT_BYTES: u64 = 8 << 20;

/// Default `[output] max_repairs`: turns that tell the model what is wrong
/// with its answer and ask again.
pub const DEFAULT_MAX_REPAIRS: u32 = 2;
/// The most `max_repairs` may be (each repair is a turn of the 50).
pub const MAX_REPAIRS_LIMIT: i64 = 10;

/// `[memory] last_n` when absent: the entries loaded into the system prompt.
pub const DEFAULT_LAST_N: u64 = 10;

/// A loaded agent.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The file stem: what `axe run` and `sub_agents` call it by.
    pub id: String,
    pub path: PathBuf,
    pub config: AgentConfig,
    /// Unknown keys, for the caller to print.
    pub warnings: Vec<String>,
    /// What `--dry-run` says of how the file was read: for another tool's
    /// file, what axe does differently from that tool (design §3.17).
    pub notes: Vec<String>,
}

/// An agent file's settings, validated: only [`parse`] makes one, so every
/// value here obeys its rule (design §2.3).
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub name: String,
    pub description: String,
    /// None when the file names no model: a sub-agent then runs on its
    /// caller's, a top-level agent needs `--model` (design D21).
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub skill: Option<String>,
    pub files: Vec<String>,
    /// `attach`: files (relative to the workdir) sent with the agent's
    /// first message, as images or documents (design §4.16).
    pub attach: Vec<String>,
    /// `agents_md`: the `AGENTS.md` files from the repository's root down
    /// to the workdir are context files too (design §2.7; absent: false).
    pub agents_md: bool,
    pub workdir: Option<String>,
    pub sub_agents: Vec<String>,
    pub sub_agents_config: SubAgentsConfig,
    pub params: Params,
    /// Transport retries for this agent's requests (over `config.toml`'s).
    pub retry: RetrySettings,
    /// Bounds on the whole tree this agent starts.
    pub budget: Budget,
    /// As written; [`AgentConfig::file_limit`] applies the default.
    pub max_file_bytes: Option<u64>,
    /// As written; [`AgentConfig::prompt_limit`] applies the default.
    pub max_prompt_bytes: Option<u64>,
    /// `timeout`: seconds for a run it starts, when `--timeout` gives none
    /// (the Go original's key; a sub-agent's calls are bounded by its
    /// caller's `[sub_agents_config] timeout` instead).
    pub timeout: Option<u64>,
    /// `[output]`: the output schema the answer must match (design D22).
    pub output: Option<OutputConfig>,
    /// `tools`, `allowed_hosts`, `[sandbox]` (design §8).
    pub tools: ToolsConfig,
    /// `mcp_servers` and `mcp_tools` (design §9.1).
    pub mcp: crate::mcp::AgentMcp,
    /// `prompt_cache`: whether its requests mark their stable prefix for
    /// the provider's prompt cache (absent: true; design §4.10).
    pub prompt_cache: bool,
    /// `stream`: answers are streamed, and at top level printed as they
    /// come (design §4.11).
    pub stream: bool,
    /// `[memory]` (design §10.1); None when the file has no such table.
    pub memory: Option<MemoryConfig>,
    /// `[artifacts]` (the Go original's, design §8.9).
    pub artifacts: crate::tools::artifacts::ArtifactsConfig,
}

/// `[output]`, validated: where the schema is, and how many repair turns.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputConfig {
    pub schema: SchemaSource,
    /// 0 to [`MAX_REPAIRS_LIMIT`]; absent means [`DEFAULT_MAX_REPAIRS`].
    pub max_repairs: u32,
}

/// Where an output schema comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaSource {
    /// Written in the agent file, as JSON.
    Inline(serde_json::Value),
    /// `schema_file`: relative to the config directory, as `skill` is.
    File(String),
}

/// `[sub_agents_config]`, validated, defaults applied where a run needs
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct SubAgentsConfig {
    /// 1 to 5; 0 or absent in the file means [`DEFAULT_MAX_DEPTH`].
    pub max_depth: u32,
    /// Absent means true.
    pub parallel: bool,
    /// Seconds per sub-agent call; 0 means the parent's deadline.
    pub timeout: u64,
    /// At most this many calls of one response in flight; absent: no limit.
    pub max_parallel: Option<usize>,
    /// As written; [`SubAgentsConfig::result_limit`] applies the default.
    pub max_result_chars: Option<usize>,
}

/// `[params]`, validated.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Finite and not negative; absent is not sent (0 is, design D8).
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// `reasoning_effort`: how hard the model is asked to think.
    pub reasoning_effort: Option<Effort>,
    /// `thinking_budget`: the tokens it may think in; at least
    /// [`MIN_THINKING_BUDGET`] when set.
    pub thinking_budget: Option<u32>,
}

/// The least `thinking_budget`: Anthropic's least `budget_tokens`.
pub const MIN_THINKING_BUDGET: u32 = 1024;

impl Params {
    /// What the request asks of the model's reasoning; None when neither
    /// key is set (nothing is sent).
    pub fn reasoning(&self) -> Option<Reasoning> {
        let r = Reasoning {
            effort: self.reasoning_effort,
            budget_tokens: self.thinking_budget,
        };
        (r != Reasoning::default()).then_some(r)
    }
}

/// The effort named `name`, or the one-line error naming `key` (the
/// agent file's key, or `--reasoning-effort`) and the values it takes.
pub fn effort(key: &str, name: &str) -> Result<Effort, Error> {
    Effort::named(name).ok_or_else(|| {
        Error::config(format!(
            "{key} {name:?} is not an effort: expected minimal, low, medium or high"
        ))
    })
}

/// `[budget]`: bounds on the whole tree an agent starts, its sub-agents at
/// every depth included; each positive when set. Absent means unbounded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budget {
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
    /// Requests sent.
    pub max_turns: Option<u64>,
    /// Picodollars spent (design §7.8).
    pub max_cost: Option<u64>,
}

impl SubAgentsConfig {
    /// Calls of one response in flight at once; `usize::MAX` when unlimited.
    pub fn parallel_limit(&self) -> usize {
        self.max_parallel.unwrap_or(usize::MAX)
    }

    /// The most characters of one sub-agent's answer its parent gets.
    pub fn result_limit(&self) -> usize {
        self.max_result_chars.unwrap_or(DEFAULT_MAX_RESULT_CHARS)
    }
}

impl AgentConfig {
    /// The largest context file read; a larger skill is an error.
    pub fn file_limit(&self) -> u64 {
        self.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES)
    }

    /// The most the system prompt may hold.
    pub fn prompt_limit(&self) -> u64 {
        self.max_prompt_bytes.unwrap_or(DEFAULT_MAX_PROMPT_BYTES)
    }
}

impl Agent {
    /// Its own model, parsed as `global` names providers (design §4.12);
    /// None when it inherits its caller's (design D21). A model string that
    /// is not one names the file (exit 1, as `--model`'s); the scaffold's
    /// placeholder, unless config.toml names a provider `provider`, says
    /// what to set instead (exit 2: the file is not finished).
    pub fn own_model(&self, global: &GlobalConfig) -> Result<Option<ModelRef>, Error> {
        let Some(model) = self.config.model.as_deref() else {
            return Ok(None);
        };
        match global.model_ref(model) {
            Ok(m) => Ok(Some(m)),
            Err(_) if model.trim() == PLACEHOLDER_MODEL => Err(Error::config(format!(
                "agent {} ({}): model is still the scaffold's placeholder \"{PLACEHOLDER_MODEL}\": \
                 set model = \"anthropic/claude-sonnet-4-5\" (or another provider/model), or pass \
                 --model",
                self.id,
                self.path.display()
            ))),
            Err(e) => Err(Error::Model(e).in_agent_file(&self.path)),
        }
    }

    /// The config directory the agent was loaded from (its file is
    /// `<config>/agents/<id>.toml`); relative `skill` paths resolve against it.
    pub fn config_dir(&self) -> Option<&Path> {
        self.path.parent().and_then(Path::parent)
    }
}

/// Loads the agent `name` from the first directory of `dirs` that has its
/// file. The name is checked (design D9) before any file is touched.
/// Warnings name the file.
pub fn load(dirs: &AgentDirs, name: &str) -> Result<Agent, Error> {
    let (path, format, text) = source(dirs, name)?;
    let mut agent = match format {
        Format::Axe => parse(name, &path, &text)?,
        _ => foreign::import(format, dirs, name, &path, &text)?,
    };
    agent.warnings = agent
        .warnings
        .into_iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    Ok(agent)
}

/// The file of agent `name` on the search path, its format and its text.
fn source(dirs: &AgentDirs, name: &str) -> Result<(PathBuf, Format, String), Error> {
    // The directories are the command's to say (`Error::looked_in`), not a
    // model's `call_agent` result.
    let not_found = || Error::AgentNotFound {
        name: name.to_string(),
        searched: Vec::new(),
    };
    let Some((path, format)) = dirs.locate(name)? else {
        return Err(not_found());
    };
    match read::config_text(&path) {
        Ok(text) => Ok((path, format, text)),
        Err(read::Unreadable::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(not_found())
        }
        Err(e) => Err(Error::Unreadable {
            path,
            why: e.to_string(),
        }),
    }
}

/// Parses and validates agent TOML. Keys serde does not know become
/// warnings, not errors (a typo such as `sub_agent` must not pass silently).
pub fn parse(id: &str, path: &Path, text: &str) -> Result<Agent, Error> {
    let (raw, warnings): (file::AgentFile, _) =
        tomlfile::parse(text, &file::known_keys).map_err(|e| Error::InvalidAgentFile {
            path: path.to_path_buf(),
            why: e,
        })?;
    // A rule broken names the file it is broken in.
    let config = raw.validate().map_err(|e| e.in_agent_file(path))?;
    Ok(Agent {
        id: id.to_string(),
        path: path.to_path_buf(),
        config,
        warnings,
        notes: Vec::new(),
    })
}

/// An agent's id and the file that holds it.
pub type Found = (String, PathBuf);

/// Every agent on the search path, sorted by id, each with the file that
/// holds it (the first directory's, when several have one), and a warning
/// for each file whose name is not an agent name.
pub fn list(dirs: &AgentDirs) -> Result<(Vec<Found>, Vec<String>), Error> {
    let mut found: Vec<Found> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, format) in dirs.entries() {
        let ext = format.extension();
        for (id, p) in files_of(dir, ext)? {
            match paths::check_agent_name(&id) {
                Ok(()) if found.iter().any(|(f, _)| *f == id) => {}
                Ok(()) => found.push((id, p)),
                // A file's name is anyone's (a cloned repository's): its
                // control characters escaped before they reach a terminal.
                Err(e) => {
                    let file = crate::text::one_line(&format!("{}/{id}.{ext}", dir.display()));
                    warnings.push(format!("skipping {file}: {e}"));
                }
            }
        }
    }
    found.sort();
    warnings.sort();
    Ok((found, warnings))
}

/// The files of `dir` ending in `.<ext>`, each with its stem: none when
/// the directory does not exist.
fn files_of(dir: &Path, ext: &str) -> Result<Vec<(String, PathBuf)>, Error> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::Unreadable {
                path: dir.to_path_buf(),
                why: e.to_string(),
            });
        }
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let p = entry.path();
        if !(p.extension().is_some_and(|x| x == ext) && p.is_file()) {
            continue;
        }
        if let Some(id) = p.file_stem().and_then(|s| s.to_str()) {
            out.push((id.to_string(), p.clone()));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
