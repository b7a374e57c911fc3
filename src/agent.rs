//! Agent files (`<config>/agents/<name>.toml`): loading, validation, the
//! scaffold written by `axe agents init`, and the `axe agents show` view.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;
use crate::{paths, read, tomlfile};

/// Default nesting limit for sub-agents when `max_depth` is 0 or absent.
pub const DEFAULT_MAX_DEPTH: u32 = 3;
/// Hard limit for `max_depth`.
pub const MAX_DEPTH_LIMIT: i64 = 5;
/// Default `max_result_chars`: the most characters of a sub-agent's answer
/// that reach its parent.
pub const DEFAULT_MAX_RESULT_CHARS: usize = 20_000;
/// Default `max_file_bytes`: a larger context file is skipped, a larger
/// skill refused.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 20;
/// Default `max_prompt_bytes`: the most the system prompt may hold; context
/// files that would take it past this are skipped.
pub const DEFAULT_MAX_PROMPT_BYTES: u64 = 8 << 20;

/// One agent file, as written. Optional keys are `None`/empty when absent.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AgentConfig {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub model: String,
    pub system_prompt: Option<String>,
    pub skill: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    pub workdir: Option<String>,
    #[serde(default)]
    pub sub_agents: Vec<String>,
    #[serde(default)]
    pub sub_agents_config: SubAgentsConfig,
    #[serde(default)]
    pub params: Params,
    /// Transport retries for this agent's requests (over `config.toml`'s).
    #[serde(default)]
    pub retry: crate::config::RetrySettings,
    /// Bounds on the whole tree this agent starts.
    #[serde(default)]
    pub budget: BudgetSettings,
    /// A larger context file is skipped, a larger skill refused; absent:
    /// [`DEFAULT_MAX_FILE_BYTES`].
    pub max_file_bytes: Option<i64>,
    /// The most the system prompt may hold; context files past it are
    /// skipped. Absent: [`DEFAULT_MAX_PROMPT_BYTES`].
    pub max_prompt_bytes: Option<i64>,
}

/// `[budget]`: bounds on the whole tree an agent starts, its sub-agents at
/// every depth included. Absent means unbounded.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BudgetSettings {
    /// Input plus output tokens.
    pub max_tokens: Option<i64>,
    /// Requests sent.
    pub max_turns: Option<i64>,
}

/// `[sub_agents_config]`. Integers are signed so that negative values reach
/// validation and get its message instead of a type error.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SubAgentsConfig {
    /// 0 means the default (3); at most 5.
    #[serde(default)]
    pub max_depth: i64,
    /// Absent means true.
    pub parallel: Option<bool>,
    /// Seconds per sub-agent call; 0 means the parent's deadline.
    #[serde(default)]
    pub timeout: i64,
    /// At most this many calls of one response in flight; absent: no limit.
    pub max_parallel: Option<i64>,
    /// A longer sub-agent result is cut to this many characters; absent:
    /// [`DEFAULT_MAX_RESULT_CHARS`].
    pub max_result_chars: Option<i64>,
}

/// `[params]`.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Params {
    pub temperature: Option<f64>,
    pub max_tokens: Option<i64>,
}

/// A loaded, validated agent.
#[derive(Debug, Clone)]
pub struct Agent {
    /// The file stem: what `axe run` and `sub_agents` call it by.
    pub id: String,
    pub path: PathBuf,
    pub config: AgentConfig,
    /// Unknown keys, for the caller to print.
    pub warnings: Vec<String>,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "model",
    "system_prompt",
    "skill",
    "files",
    "workdir",
    "sub_agents",
    "sub_agents_config",
    "params",
    "retry",
    "budget",
    "max_file_bytes",
    "max_prompt_bytes",
];
const SUB_AGENTS_CONFIG_KEYS: &[&str] = &[
    "max_depth",
    "parallel",
    "timeout",
    "max_parallel",
    "max_result_chars",
];
const BUDGET_KEYS: &[&str] = &["max_tokens", "max_turns"];
const PARAMS_KEYS: &[&str] = &["temperature", "max_tokens"];

impl SubAgentsConfig {
    /// `max_depth` with 0 meaning [`DEFAULT_MAX_DEPTH`]. Call after validation.
    pub fn effective_max_depth(&self) -> u32 {
        match self.max_depth {
            d if d > 0 => u32::try_from(d.min(MAX_DEPTH_LIMIT)).unwrap_or(DEFAULT_MAX_DEPTH),
            _ => DEFAULT_MAX_DEPTH,
        }
    }

    pub fn effective_parallel(&self) -> bool {
        self.parallel.unwrap_or(true)
    }

    /// Seconds per sub-agent call; 0 means the parent's deadline.
    pub fn timeout_secs(&self) -> u64 {
        u64::try_from(self.timeout).unwrap_or(0)
    }

    /// Calls of one response in flight at once; `usize::MAX` when unlimited.
    /// Call after validation.
    pub fn effective_max_parallel(&self) -> usize {
        self.max_parallel
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(usize::MAX)
    }

    /// Call after validation.
    pub fn effective_max_result_chars(&self) -> usize {
        self.max_result_chars
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_RESULT_CHARS)
    }
}

impl BudgetSettings {
    pub fn tokens(&self) -> Option<u64> {
        self.max_tokens.and_then(|n| u64::try_from(n).ok())
    }

    pub fn turns(&self) -> Option<u64> {
        self.max_turns.and_then(|n| u64::try_from(n).ok())
    }
}

impl AgentConfig {
    /// Checks the rules of BASE.md and the sub-agents spec, in their order:
    /// `name`, `model`, then `[sub_agents_config]` (whenever present, D17),
    /// then `sub_agents` names (D9) and `[params]`.
    pub fn validate(&self) -> Result<(), Error> {
        if self.name.trim().is_empty() {
            return Err(Error::config("agent config missing required field: name"));
        }
        if self.model.trim().is_empty() {
            return Err(Error::config("agent config missing required field: model"));
        }
        let sac = &self.sub_agents_config;
        if sac.max_depth > MAX_DEPTH_LIMIT {
            return Err(Error::config("sub_agents_config.max_depth cannot exceed 5"));
        }
        if sac.max_depth < 0 {
            return Err(Error::config(
                "sub_agents_config.max_depth must be non-negative",
            ));
        }
        if sac.timeout < 0 {
            return Err(Error::config(
                "sub_agents_config.timeout must be non-negative",
            ));
        }
        for (key, value) in [
            ("sub_agents_config.max_parallel", sac.max_parallel),
            ("sub_agents_config.max_result_chars", sac.max_result_chars),
            ("budget.max_tokens", self.budget.max_tokens),
            ("budget.max_turns", self.budget.max_turns),
            ("max_file_bytes", self.max_file_bytes),
            ("max_prompt_bytes", self.max_prompt_bytes),
        ] {
            if value.is_some_and(|n| n < 1) {
                return Err(Error::config(format!("{key} must be a positive integer")));
            }
        }
        for name in &self.sub_agents {
            paths::check_agent_name(name).map_err(|e| Error::config(format!("sub_agents: {e}")))?;
        }
        if let Some(t) = self.params.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::config(
                "params.temperature must be a non-negative number",
            ));
        }
        if let Some(n) = self.params.max_tokens
            && !(1..=i64::from(u32::MAX)).contains(&n)
        {
            return Err(Error::config(
                "params.max_tokens must be a positive integer",
            ));
        }
        Ok(())
    }

    pub fn max_tokens(&self) -> Option<u32> {
        self.params.max_tokens.and_then(|n| u32::try_from(n).ok())
    }

    /// `max_file_bytes`, or its default. Call after validation.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_FILE_BYTES)
    }

    /// `max_prompt_bytes`, or its default. Call after validation.
    pub fn max_prompt_bytes(&self) -> u64 {
        self.max_prompt_bytes
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(DEFAULT_MAX_PROMPT_BYTES)
    }
}

impl Agent {
    /// The config directory the agent was loaded from (its file is
    /// `<config>/agents/<id>.toml`); relative `skill` paths resolve against it.
    pub fn config_dir(&self) -> Option<&Path> {
        self.path.parent().and_then(Path::parent)
    }
}

/// Loads and validates the agent `name` from the agents directory.
pub fn load(name: &str) -> Result<Agent, Error> {
    load_in(&paths::config_dir()?, name)
}

/// Loads and validates the agent `name` from `<config_dir>/agents/`. The
/// name is checked (D9) before any file is touched.
pub fn load_in(config_dir: &Path, name: &str) -> Result<Agent, Error> {
    let path = paths::agent_file_in(config_dir, name)?;
    let text = match read::config_text(&path) {
        Ok(t) => t,
        Err(read::Refused::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::config(format!("agent config not found: {name}")));
        }
        Err(e) => {
            return Err(Error::config(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let mut agent = parse(name, &path, &text)?;
    agent.config.validate()?;
    agent.warnings = agent
        .warnings
        .into_iter()
        .map(|w| format!("{}: {w}", path.display()))
        .collect();
    Ok(agent)
}

/// Parses agent TOML (no validation). Unknown keys become warnings.
pub fn parse(id: &str, path: &Path, text: &str) -> Result<Agent, Error> {
    let (config, table): (AgentConfig, toml::Table) = tomlfile::parse(text)
        .map_err(|e| Error::config(format!("invalid agent config {}: {e}", path.display())))?;
    let mut warnings = Vec::new();
    tomlfile::unknown_keys(&table, "", TOP_KEYS, &mut warnings);
    for (key, known) in [
        ("sub_agents_config", SUB_AGENTS_CONFIG_KEYS),
        ("params", PARAMS_KEYS),
        ("retry", crate::config::RETRY_KEYS),
        ("budget", BUDGET_KEYS),
    ] {
        if let Some(toml::Value::Table(t)) = table.get(key) {
            tomlfile::unknown_keys(t, &format!("{key}."), known, &mut warnings);
        }
    }
    Ok(Agent {
        id: id.to_string(),
        path: path.to_path_buf(),
        config,
        warnings,
    })
}

/// The ids of every `*.toml` file in the agents directory, sorted.
pub fn list_ids() -> Result<Vec<String>, Error> {
    let dir = paths::agents_dir()?;
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Error::config(format!("cannot read {}: {e}", dir.display())));
        }
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml") && p.is_file() {
                p.file_stem().and_then(|s| s.to_str()).map(str::to_string)
            } else {
                None
            }
        })
        .filter(|id| match paths::check_agent_name(id) {
            Ok(()) => true,
            Err(e) => {
                crate::stderr::warn(&format!("skipping {}/{id}.toml: {e}", dir.display()));
                false
            }
        })
        .collect();
    ids.sort();
    Ok(ids)
}

/// The file `axe agents init <name>` writes: required keys set, every
/// optional key shown commented out.
pub fn scaffold(name: &str) -> String {
    format!(
        r#"name = "{name}"
description = ""
model = "provider/model-name"

# Model strings are provider/model: anthropic/claude-sonnet-4-5,
# openai/gpt-4o, ollama/llama3.1. Any OpenAI-compatible server works through
# the openai provider and AXE_OPENAI_BASE_URL.

# The instructions the model gets as its system prompt.
# system_prompt = """
# You are a careful reviewer. Answer briefly.
# """

# A SKILL.md appended to the system prompt; relative paths resolve against
# the config directory.
# skill = "skills/sample/SKILL.md"

# Files whose contents are appended to the system prompt: globs relative to
# the workdir; ** matches any number of directories.
# files = ["src/**/*.rs", "README.md"]

# The directory the files are read from (default: the current directory).
# workdir = "/path/to/project"

# Bounds on what is read: a context file larger than max_file_bytes is
# skipped (a skill that large is an error), and context files that would
# take the system prompt past max_prompt_bytes are skipped; --verbose lists
# what was skipped and why.
# max_file_bytes = 1048576
# max_prompt_bytes = 8388608

# Agents this agent may delegate to through the call_agent tool.
# sub_agents = ["helper"]

# Sub-agent settings. max_depth: nesting limit for the whole tree (0 means 3,
# at most 5); parallel: run the calls of one response at the same time;
# timeout: seconds per sub-agent call (0 means the parent's deadline);
# max_parallel: calls of one response in flight at once (default: all);
# max_result_chars: a longer sub-agent answer is cut, and says so.
# [sub_agents_config]
# max_depth = 3
# parallel = true
# timeout = 120
# max_parallel = 4
# max_result_chars = 20000

# Bounds on the whole tree this agent starts, sub-agents included:
# max_tokens (input plus output) and max_turns (requests). When one is
# spent, a sub-agent's call fails and the top-level run exits 4.
# [budget]
# max_tokens = 200000
# max_turns = 40

# Model parameters; unset ones are not sent (Anthropic requires max_tokens,
# so 4096 is sent there when unset).
# [params]
# temperature = 0.2
# max_tokens = 4096

# Retries of one HTTP request on 429/5xx/refused connections (over the
# [retry] of config.toml; `axe run --retries N` wins over both).
# [retry]
# max_retries = 2
# initial_delay_ms = 500
# max_delay_ms = 30000
"#
    )
}

/// The `axe agents show` text: one aligned `Label:` line per field.
pub fn show(agent: &Agent) -> String {
    let c = &agent.config;
    let or_none = |s: Option<&str>| match s {
        Some(s) if !s.trim().is_empty() => s.to_string(),
        _ => "(none)".to_string(),
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("Name", c.name.clone()),
        ("Description", or_none(Some(&c.description))),
        ("Model", c.model.clone()),
        (
            "System Prompt",
            or_none(c.system_prompt.as_deref().map(str::trim)),
        ),
        ("Skill", or_none(c.skill.as_deref())),
        (
            "Files",
            if c.files.is_empty() {
                "(none)".into()
            } else {
                c.files.join(", ")
            },
        ),
        ("Workdir", or_none(c.workdir.as_deref())),
        (
            "Sub-Agents",
            if c.sub_agents.is_empty() {
                "(none)".into()
            } else {
                c.sub_agents.join(", ")
            },
        ),
    ];
    if !c.sub_agents.is_empty() {
        let sac = &c.sub_agents_config;
        rows.push(("Max Depth", sac.effective_max_depth().to_string()));
        rows.push(("Parallel", yes_no(sac.effective_parallel()).into()));
        rows.push((
            "Sub-Agent Timeout",
            match sac.timeout_secs() {
                0 => "inherit (the parent's deadline)".into(),
                n => format!("{n}s"),
            },
        ));
        if let Some(n) = sac.max_parallel {
            rows.push(("Max Parallel", n.to_string()));
        }
        if let Some(n) = sac.max_result_chars {
            rows.push(("Max Result Chars", n.to_string()));
        }
    }
    if let Some(n) = c.max_file_bytes {
        rows.push(("Max File Bytes", n.to_string()));
    }
    if let Some(n) = c.max_prompt_bytes {
        rows.push(("Max Prompt Bytes", n.to_string()));
    }
    if let Some(n) = c.budget.max_tokens {
        rows.push(("Budget Tokens", n.to_string()));
    }
    if let Some(n) = c.budget.max_turns {
        rows.push(("Budget Turns", n.to_string()));
    }
    rows.push((
        "Temperature",
        c.params
            .temperature
            .map_or("default".into(), |t| t.to_string()),
    ));
    rows.push((
        "Max Tokens",
        c.params
            .max_tokens
            .map_or("default".into(), |t| t.to_string()),
    ));
    rows.push(("File", agent.path.display().to_string()));

    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (label, value) in rows {
        // Multi-line values (a system prompt) are indented under their label.
        let value = value.replace('\n', &format!("\n{}", " ".repeat(width)));
        out.push_str(&format!("{:<width$}{value}\n", format!("{label}:")));
    }
    out
}

pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Agent {
        parse("t", Path::new("t.toml"), text).unwrap()
    }

    /// A valid agent with `extra` appended.
    fn with(extra: &str) -> Agent {
        parsed(&format!("name = \"x\"\nmodel = \"a/b\"\n{extra}"))
    }

    #[test]
    fn validation_order_is_name_then_model_then_sub_agents_config() {
        let a = parsed("[sub_agents_config]\nmax_depth = 9\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "agent config missing required field: name"
        );
        let a = parsed("name = \"x\"\n[sub_agents_config]\nmax_depth = 9\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "agent config missing required field: model"
        );
        // [sub_agents_config] before the sub_agents names (D17, D9).
        let a = with("sub_agents = [\"../x\"]\n[sub_agents_config]\nmax_depth = 6\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "sub_agents_config.max_depth cannot exceed 5"
        );
        // max_depth before timeout.
        let a = with("[sub_agents_config]\nmax_depth = -1\ntimeout = -1\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "sub_agents_config.max_depth must be non-negative"
        );
    }

    #[test]
    fn validate_max_depth_too_high() {
        for d in [6, 100] {
            let a = with(&format!("[sub_agents_config]\nmax_depth = {d}\n"));
            assert_eq!(
                a.config.validate().unwrap_err().to_string(),
                "sub_agents_config.max_depth cannot exceed 5"
            );
        }
    }

    #[test]
    fn validate_max_depth_negative() {
        let a = with("[sub_agents_config]\nmax_depth = -1\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "sub_agents_config.max_depth must be non-negative"
        );
    }

    #[test]
    fn validate_timeout_negative() {
        let a = with("[sub_agents_config]\ntimeout = -1\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "sub_agents_config.timeout must be non-negative"
        );
    }

    #[test]
    fn validate_max_depth_5_is_valid() {
        let a = with("[sub_agents_config]\nmax_depth = 5\n");
        assert!(a.config.validate().is_ok());
        assert_eq!(a.config.sub_agents_config.effective_max_depth(), 5);
        for extra in [
            "[sub_agents_config]\nmax_depth = 0\ntimeout = 0\n",
            "[sub_agents_config]\nmax_depth = 1\n",
        ] {
            assert!(with(extra).config.validate().is_ok(), "{extra}");
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
        let loaded = load_in(&dir, "lead");
        let deep = load_in(&dir, "deep");
        let _ = fs::remove_dir_all(&dir);

        let a = loaded.unwrap();
        assert_eq!(a.id, "lead");
        assert_eq!(a.path, file);
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.config.sub_agents, ["helper", "runner"]);
        let sac = &a.config.sub_agents_config;
        assert_eq!(
            (sac.max_depth, sac.parallel, sac.timeout),
            (2, Some(false), 45)
        );
        assert_eq!(
            (
                sac.effective_max_depth(),
                sac.effective_parallel(),
                sac.timeout_secs()
            ),
            (2, false, 45)
        );
        // Loading validates: max_depth = 6 fails at load time (§5.2).
        assert_eq!(
            deep.unwrap_err().to_string(),
            "sub_agents_config.max_depth cannot exceed 5"
        );
    }

    #[test]
    fn blank_name_is_missing() {
        let a = parsed("name = \"  \"\nmodel = \"a/b\"\n");
        assert_eq!(
            a.config.validate().unwrap_err().to_string(),
            "agent config missing required field: name"
        );
    }

    #[test]
    fn sub_agents_config_defaults_when_absent() {
        let a = parsed("name = \"x\"\nmodel = \"a/b\"\nsub_agents = [\"h\"]\n");
        let sac = &a.config.sub_agents_config;
        assert_eq!((sac.max_depth, sac.parallel, sac.timeout), (0, None, 0));
        assert_eq!(sac.effective_max_depth(), 3);
        assert!(sac.effective_parallel());
    }

    #[test]
    fn sub_agents_config_is_parsed() {
        let a = parsed(
            "name = \"x\"\nmodel = \"a/b\"\n[sub_agents_config]\nmax_depth = 2\nparallel = false\ntimeout = 30\n",
        );
        let sac = &a.config.sub_agents_config;
        assert_eq!(
            (
                sac.effective_max_depth(),
                sac.effective_parallel(),
                sac.timeout_secs()
            ),
            (2, false, 30)
        );
    }

    #[test]
    fn unknown_keys_are_named_in_warnings() {
        let a = parsed(
            "name = \"x\"\nmodel = \"a/b\"\nsub_agent = [\"h\"]\n[params]\ntemprature = 1\n",
        );
        assert_eq!(a.warnings.len(), 2, "{:?}", a.warnings);
        assert!(a.warnings[0].contains("\"sub_agent\""));
        assert!(a.warnings[1].contains("\"params.temprature\""));
    }

    #[test]
    fn scaffold_parses_and_includes_every_optional_key() {
        let s = scaffold("helper");
        let a = parsed(&s);
        assert!(a.warnings.is_empty());
        assert_eq!(a.config.name, "helper");
        for line in [
            "# [sub_agents_config]",
            "# max_depth = 3",
            "# parallel = true",
            "# timeout = 120",
            "# [params]",
        ] {
            assert!(s.lines().any(|l| l == line), "missing {line}");
        }
        for key in TOP_KEYS
            .iter()
            .chain(SUB_AGENTS_CONFIG_KEYS)
            .chain(PARAMS_KEYS)
            .chain(crate::config::RETRY_KEYS)
            .chain(BUDGET_KEYS)
        {
            assert!(
                s.contains(&format!("# {key}"))
                    || s.contains(&format!("{key} ="))
                    || s.contains(&format!("[{key}]")),
                "{key}"
            );
        }
    }

    #[test]
    fn budget_and_result_settings_load_and_must_be_positive() {
        let a = parsed(
            "name = \"x\"\nmodel = \"a/b\"\n[sub_agents_config]\nmax_parallel = 2\n\
             max_result_chars = 100\n[budget]\nmax_tokens = 5000\nmax_turns = 7\n",
        );
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        a.config.validate().unwrap();
        let sac = &a.config.sub_agents_config;
        assert_eq!(sac.effective_max_parallel(), 2);
        assert_eq!(sac.effective_max_result_chars(), 100);
        assert_eq!(a.config.budget.tokens(), Some(5000));
        assert_eq!(a.config.budget.turns(), Some(7));
        let defaults = parsed("name = \"x\"\nmodel = \"a/b\"\n");
        let sac = &defaults.config.sub_agents_config;
        assert_eq!(sac.effective_max_parallel(), usize::MAX);
        assert_eq!(sac.effective_max_result_chars(), DEFAULT_MAX_RESULT_CHARS);
        assert_eq!(defaults.config.budget.tokens(), None);
        for (table, key) in [
            ("sub_agents_config", "max_parallel"),
            ("sub_agents_config", "max_result_chars"),
            ("budget", "max_tokens"),
            ("budget", "max_turns"),
        ] {
            let a = parsed(&format!(
                "name = \"x\"\nmodel = \"a/b\"\n[{table}]\n{key} = 0\n"
            ));
            assert_eq!(
                a.config.validate().unwrap_err().to_string(),
                format!("{table}.{key} must be a positive integer")
            );
        }
    }

    #[test]
    fn integer_temperature_is_accepted_as_float() {
        let a = parsed("name = \"x\"\nmodel = \"a/b\"\n[params]\ntemperature = 0\n");
        assert_eq!(a.config.params.temperature, Some(0.0));
    }
}
