//! Agents: an agent file (`<config>/agents/<name>.toml`) loaded, checked and
//! turned into an [`AgentConfig`] whose values are known to be valid, and
//! the agents directory listed. The file's TOML shape and its validation
//! are in `file`; the scaffold and the `agents show` view in `text`.

mod file;
mod text;
mod tools;

use std::fs;
use std::path::{Path, PathBuf};

pub use text::{scaffold, show, yes_no};
pub use tools::{SandboxConfig, ToolsConfig};

use crate::config::RetrySettings;
use crate::error::Error;
use crate::paths::AgentDirs;
use crate::{paths, read, tomlfile};

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
    /// `tools`, `allowed_hosts`, `[sandbox]` (design §10).
    pub tools: ToolsConfig,
    /// `mcp_servers` and `mcp_tools` (design §11.1).
    pub mcp: crate::mcp::AgentMcp,
    /// `prompt_cache`: whether its requests mark their stable prefix for
    /// the provider's prompt cache (absent: true; design §4.10).
    pub prompt_cache: bool,
    /// `stream`: answers are streamed, and at top level printed as they
    /// come (design §4.11).
    pub stream: bool,
    /// `[memory]` (design §12.1); None when the file has no such table.
    pub memory: Option<MemoryConfig>,
}

/// `[memory]`, validated: the Go original's keys and meanings.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    pub enabled: bool,
    /// The memory file, as written (never blank); None means the default,
    /// `$XDG_DATA_HOME/axe/memory/<agent>.md`.
    pub path: Option<String>,
    /// Entries loaded into the system prompt, the newest; 0 means all.
    pub last_n: u64,
    /// At or over this many entries a run warns to run `axe gc`; 0: never.
    pub max_entries: u64,
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
}

/// `[budget]`: bounds on the whole tree an agent starts, its sub-agents at
/// every depth included; each positive when set. Absent means unbounded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budget {
    /// Input plus output tokens.
    pub max_tokens: Option<u64>,
    /// Requests sent.
    pub max_turns: Option<u64>,
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
    let path = dirs.file(name)?;
    let text = match read::config_text(&path) {
        Ok(t) => t,
        Err(read::Unreadable::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::AgentNotFound {
                name: name.to_string(),
            });
        }
        Err(e) => {
            return Err(Error::Unreadable {
                path,
                why: e.to_string(),
            });
        }
    };
    let mut agent = parse(name, &path, &text)?;
    agent.warnings = agent
        .warnings
        .into_iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    Ok(agent)
}

/// Parses and validates agent TOML. Keys serde does not know become
/// warnings, not errors (a typo such as `sub_agent` must not pass silently).
pub fn parse(id: &str, path: &Path, text: &str) -> Result<Agent, Error> {
    let (raw, warnings): (file::AgentFile, _) =
        tomlfile::parse(text, &file::known_keys).map_err(|e| Error::InvalidAgentFile {
            path: path.to_path_buf(),
            why: e,
        })?;
    Ok(Agent {
        id: id.to_string(),
        path: path.to_path_buf(),
        config: raw.validate()?,
        warnings,
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
    for dir in dirs.dirs() {
        let entries = match fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(Error::Unreadable {
                    path: dir.clone(),
                    why: e.to_string(),
                });
            }
        };
        for entry in entries.filter_map(Result::ok) {
            let p = entry.path();
            if !(p.extension().is_some_and(|x| x == "toml") && p.is_file()) {
                continue;
            }
            let Some(id) = p.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            match paths::check_agent_name(id) {
                Ok(()) if found.iter().any(|(f, _)| f == id) => {}
                Ok(()) => found.push((id.to_string(), p.clone())),
                Err(e) => warnings.push(format!("skipping {}/{id}.toml: {e}", dir.display())),
            }
        }
    }
    found.sort();
    warnings.sort();
    Ok((found, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Agent, Error> {
        parse("t", Path::new("t.toml"), text)
    }

    /// The validation error of `text`.
    fn validation_error(text: &str) -> String {
        parsed(text).unwrap_err().to_string()
    }

    #[test]
    fn loading_tells_a_missing_agent_from_a_bad_name_and_an_unreadable_file() {
        let dir = std::env::temp_dir().join(format!("axe-agent-errors-{}", std::process::id()));
        fs::create_dir_all(dir.join("agents").join("folder.toml")).unwrap();
        fs::write(dir.join("agents").join("broken.toml"), "name = \n").unwrap();
        assert!(
            matches!(load(&AgentDirs::only(&dir), "ghost"), Err(Error::AgentNotFound { name }) if name == "ghost")
        );
        assert!(matches!(
            load(&AgentDirs::only(&dir), "../ghost"),
            Err(Error::InvalidAgentName { .. })
        ));
        match load(&AgentDirs::only(&dir), "folder") {
            Err(Error::Unreadable { path, why }) => {
                assert!(path.ends_with("agents/folder.toml"), "{}", path.display());
                assert_eq!(why, "not a regular file");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            load(&AgentDirs::only(&dir), "broken"),
            Err(Error::InvalidAgentFile { .. })
        ));
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A valid agent with `extra` appended.
    fn with(extra: &str) -> String {
        format!("name = \"x\"\nmodel = \"a/b\"\n{extra}")
    }

    #[test]
    fn validation_order_is_name_then_sub_agents_config() {
        assert_eq!(
            validation_error("[sub_agents_config]\nmax_depth = 9\n"),
            "agent config missing required field: name"
        );
        // A missing model is no error in the file: a sub-agent inherits its
        // caller's (design D21).
        assert_eq!(
            validation_error("name = \"x\"\n[sub_agents_config]\nmax_depth = 9\n"),
            "sub_agents_config.max_depth cannot exceed 5"
        );
        assert_eq!(parsed("name = \"x\"\n").unwrap().config.model, None);
        assert_eq!(
            parsed("name = \"x\"\nmodel = \" \"\n")
                .unwrap()
                .config
                .model,
            None
        );
        // [sub_agents_config] before the sub_agents names (design D17, D9).
        assert_eq!(
            validation_error(&with(
                "sub_agents = [\"../x\"]\n[sub_agents_config]\nmax_depth = 6\n"
            )),
            "sub_agents_config.max_depth cannot exceed 5"
        );
        // max_depth before timeout.
        assert_eq!(
            validation_error(&with("[sub_agents_config]\nmax_depth = -1\ntimeout = -1\n")),
            "sub_agents_config.max_depth must be non-negative"
        );
    }

    #[test]
    fn validate_max_depth_too_high() {
        for d in [6, 100] {
            assert_eq!(
                validation_error(&with(&format!("[sub_agents_config]\nmax_depth = {d}\n"))),
                "sub_agents_config.max_depth cannot exceed 5"
            );
        }
    }

    #[test]
    fn validate_max_depth_negative() {
        assert_eq!(
            validation_error(&with("[sub_agents_config]\nmax_depth = -1\n")),
            "sub_agents_config.max_depth must be non-negative"
        );
    }

    #[test]
    fn validate_timeout_negative() {
        assert_eq!(
            validation_error(&with("[sub_agents_config]\ntimeout = -1\n")),
            "sub_agents_config.timeout must be non-negative"
        );
    }

    #[test]
    fn validate_max_depth_5_is_valid() {
        let a = parsed(&with("[sub_agents_config]\nmax_depth = 5\n")).unwrap();
        assert_eq!(a.config.sub_agents_config.max_depth, 5);
        for extra in [
            "[sub_agents_config]\nmax_depth = 0\ntimeout = 0\n",
            "[sub_agents_config]\nmax_depth = 1\n",
        ] {
            assert!(parsed(&with(extra)).is_ok(), "{extra}");
        }
    }

    #[test]
    fn load_sub_agents_config_from_a_file() {
        let dir = std::env::temp_dir().join(format!(
            "axe-agent-load-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("agents")).unwrap();
        let file = dir.join("agents").join("lead.toml");
        fs::write(
            &file,
            "name = \"lead\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"helper\", \"runner\"]\n\
             [sub_agents_config]\nmax_depth = 2\nparallel = false\ntimeout = 45\n",
        )
        .unwrap();
        fs::write(
            dir.join("agents").join("deep.toml"),
            "name = \"deep\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\n",
        )
        .unwrap();
        let loaded = load(&AgentDirs::only(&dir), "lead");
        let deep = load(&AgentDirs::only(&dir), "deep");
        let _ = fs::remove_dir_all(&dir);

        let a = loaded.unwrap();
        assert_eq!(a.id, "lead");
        assert_eq!(a.path, file);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.config.sub_agents, ["helper", "runner"]);
        let sac = &a.config.sub_agents_config;
        assert_eq!((sac.max_depth, sac.parallel, sac.timeout), (2, false, 45));
        // Loading validates: max_depth = 6 fails at load time (design §3.13).
        assert_eq!(
            deep.unwrap_err().to_string(),
            "sub_agents_config.max_depth cannot exceed 5"
        );
    }

    #[test]
    fn blank_name_is_missing() {
        assert_eq!(
            validation_error("name = \"  \"\nmodel = \"a/b\"\n"),
            "agent config missing required field: name"
        );
    }

    #[test]
    fn sub_agents_config_defaults_when_absent() {
        let a = parsed(&with("sub_agents = [\"h\"]\n")).unwrap();
        let sac = &a.config.sub_agents_config;
        assert_eq!(
            (sac.max_depth, sac.parallel, sac.timeout),
            (DEFAULT_MAX_DEPTH, true, 0)
        );
    }

    #[test]
    fn sub_agents_config_is_parsed() {
        let a = parsed(&with(
            "[sub_agents_config]\nmax_depth = 2\nparallel = false\ntimeout = 30\n",
        ))
        .unwrap();
        let sac = &a.config.sub_agents_config;
        assert_eq!((sac.max_depth, sac.parallel, sac.timeout), (2, false, 30));
    }

    #[test]
    fn unknown_keys_are_named_in_warnings() {
        let a = parsed(&with("sub_agent = [\"h\"]\n[params]\ntemprature = 1\n")).unwrap();
        assert_eq!(
            a.warnings,
            [
                "unknown key \"params.temprature\" (did you mean \"params.temperature\"?)",
                "unknown key \"sub_agent\" (did you mean \"sub_agents\"?)"
            ]
        );
    }

    #[test]
    fn budget_and_result_settings_load_and_must_be_positive() {
        let a = parsed(&with(
            "[sub_agents_config]\nmax_parallel = 2\n\
             max_result_chars = 100\n[budget]\nmax_tokens = 5000\nmax_turns = 7\n",
        ))
        .unwrap();
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        let sac = &a.config.sub_agents_config;
        assert_eq!(sac.parallel_limit(), 2);
        assert_eq!(sac.result_limit(), 100);
        assert_eq!(a.config.budget.max_tokens, Some(5000));
        assert_eq!(a.config.budget.max_turns, Some(7));
        let defaults = parsed(&with("")).unwrap();
        let sac = &defaults.config.sub_agents_config;
        assert_eq!(sac.parallel_limit(), usize::MAX);
        assert_eq!(sac.result_limit(), DEFAULT_MAX_RESULT_CHARS);
        assert_eq!(defaults.config.budget.max_tokens, None);
        for (table, key) in [
            ("sub_agents_config", "max_parallel"),
            ("sub_agents_config", "max_result_chars"),
        ] {
            assert_eq!(
                validation_error(&with(&format!("[{table}]\n{key} = 0\n"))),
                format!("{table}.{key} must be a positive integer")
            );
        }
        // The Go original's 0: no budget, and a max_tokens not sent.
        let zero = parsed(&with(
            "[budget]\nmax_tokens = 0\nmax_turns = 0\n[params]\nmax_tokens = 0\n",
        ))
        .unwrap();
        assert_eq!(zero.config.budget.max_tokens, None);
        assert_eq!(zero.config.budget.max_turns, None);
        assert_eq!(zero.config.params.max_tokens, None);
        assert_eq!(
            validation_error(&with("[budget]\nmax_tokens = -1\n")),
            "budget.max_tokens must be non-negative"
        );
    }

    #[test]
    fn integer_temperature_is_accepted_as_float() {
        let a = parsed(&with("[params]\ntemperature = 0\n")).unwrap();
        assert_eq!(a.config.params.temperature, Some(0.0));
    }
}
