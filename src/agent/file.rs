//! An agent file as written: the TOML shape (every key optional, integers
//! signed so that a negative value reaches validation and gets its message)
//! and its validation into an [`AgentConfig`], rule by rule in the order
//! design §2.3 gives (the tools' keys in `tools`).

use serde::Deserialize;

use super::{
    AgentConfig, Budget, DEFAULT_LAST_N, DEFAULT_MAX_DEPTH, DEFAULT_MAX_REPAIRS, MAX_DEPTH_LIMIT,
    MAX_REPAIRS_LIMIT, MIN_THINKING_BUDGET, MemoryConfig, OutputConfig, Params, SchemaSource,
    SubAgentsConfig,
};
use crate::config::RetrySettings;
use crate::error::Error;
use crate::paths;
use crate::provider::Effort;
use crate::tools::artifacts::ArtifactsConfig;

/// The keys of an agent file, as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct AgentFile {
    #[serde(default)]
    name: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    model: String,
    system_prompt: Option<String>,
    skill: Option<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    attach: Vec<String>,
    workdir: Option<String>,
    #[serde(default)]
    sub_agents: Vec<String>,
    #[serde(default)]
    sub_agents_config: SubAgentsFile,
    #[serde(default)]
    params: ParamsFile,
    #[serde(default)]
    retry: RetrySettings,
    #[serde(default)]
    budget: BudgetFile,
    max_file_bytes: Option<i64>,
    max_prompt_bytes: Option<i64>,
    timeout: Option<i64>,
    output: Option<OutputFile>,
    #[serde(default)]
    tools: Vec<String>,
    #[serde(default)]
    allowed_hosts: Vec<String>,
    #[serde(default)]
    sandbox: super::tools::SandboxFile,
    #[serde(default)]
    mcp_servers: Vec<McpEntry>,
    #[serde(default)]
    mcp_tools: Vec<String>,
    prompt_cache: Option<bool>,
    #[serde(default)]
    stream: bool,
    memory: Option<MemoryFile>,
    #[serde(default)]
    agents_md: bool,
    #[serde(default)]
    artifacts: ArtifactsFile,
}

/// `[artifacts]` as written (the Go original's keys).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ArtifactsFile {
    #[serde(default)]
    enabled: bool,
    dir: Option<String>,
    #[serde(default)]
    default_write: bool,
}

impl ArtifactsFile {
    /// The Go original's two rules, with its messages.
    fn validate(self) -> Result<ArtifactsConfig, Error> {
        let dir = self.dir.filter(|d| !d.trim().is_empty());
        if dir.is_some() && !self.enabled {
            return Err(Error::config(
                "artifacts.dir is set but artifacts.enabled is false",
            ));
        }
        if dir.as_deref().is_some_and(|d| d.contains("..")) {
            return Err(Error::config(
                "artifacts.dir must not contain path traversal sequences",
            ));
        }
        Ok(ArtifactsConfig {
            enabled: self.enabled,
            dir,
            default_write: self.default_write,
        })
    }
}

/// One entry of an agent's `mcp_servers`: the name of one of config.toml's
/// servers, or a whole `[[mcp_servers]]` table (as the Go original's agent
/// files have them).
#[derive(Debug, Clone)]
pub(super) enum McpEntry {
    Name(String),
    Table(Box<crate::mcp::ServerFile>),
}

impl<'de> Deserialize<'de> for McpEntry {
    /// A name or a table, the table read in place (an untagged enum would
    /// buffer it, and its unknown keys would pass without a warning).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<McpEntry, D::Error> {
        struct Entry;
        impl<'de> serde::de::Visitor<'de> for Entry {
            type Value = McpEntry;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a server's name or a [[mcp_servers]] table")
            }
            fn visit_str<E>(self, name: &str) -> Result<McpEntry, E> {
                Ok(McpEntry::Name(name.to_string()))
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, m: M) -> Result<McpEntry, M::Error> {
                let d = serde::de::value::MapAccessDeserializer::new(m);
                crate::mcp::ServerFile::deserialize(d).map(|t| McpEntry::Table(Box::new(t)))
            }
        }
        d.deserialize_any(Entry)
    }
}

/// `[output]` as written: the schema inline (any TOML value, turned into
/// JSON) or in a file.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct OutputFile {
    schema: Option<toml::Value>,
    schema_file: Option<String>,
    max_repairs: Option<i64>,
}

/// `[sub_agents_config]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct SubAgentsFile {
    #[serde(default)]
    max_depth: i64,
    parallel: Option<bool>,
    #[serde(default)]
    timeout: i64,
    max_parallel: Option<i64>,
    max_result_chars: Option<i64>,
}

/// `[params]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ParamsFile {
    temperature: Option<f64>,
    max_tokens: Option<i64>,
    reasoning_effort: Option<String>,
    thinking_budget: Option<i64>,
    /// The Go original's key, read into an output schema.
    response_format: Option<toml::Value>,
}

/// `[memory]` as written (the Go original's keys).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct MemoryFile {
    #[serde(default)]
    enabled: bool,
    path: Option<String>,
    last_n: Option<i64>,
    max_entries: Option<i64>,
}

/// `[budget]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct BudgetFile {
    max_tokens: Option<i64>,
    max_turns: Option<i64>,
    /// USD (design §7.8).
    max_cost: Option<f64>,
}

/// The fields of each of an agent file's tables that is a struct's (`[]`:
/// the top level), for its unknown keys and their "did you mean"; None for
/// a table that is not (a schema, a server's `env`).
pub(super) fn known_keys(table: &[&str]) -> Option<&'static [&'static str]> {
    use crate::config::tomlfile::fields;
    Some(match table {
        [] => fields::<AgentFile>(),
        ["sub_agents_config"] => fields::<SubAgentsFile>(),
        ["params"] => fields::<ParamsFile>(),
        ["retry"] => fields::<RetrySettings>(),
        ["budget"] => fields::<BudgetFile>(),
        ["memory"] => fields::<MemoryFile>(),
        ["artifacts"] => fields::<ArtifactsFile>(),
        ["output"] => fields::<OutputFile>(),
        ["sandbox"] => fields::<super::tools::SandboxFile>(),
        ["mcp_servers", _] => fields::<crate::mcp::ServerFile>(),
        ["mcp_servers", _, "sandbox"] => fields::<crate::mcp::config::SandboxFile>(),
        _ => return None,
    })
}

impl ParamsFile {
    /// Checks `temperature` and gives `max_tokens` as sent: 0 is not sent,
    /// as in the Go original.
    fn max_tokens(&self) -> Result<Option<u32>, Error> {
        if let Some(t) = self.temperature
            && !(t.is_finite() && t >= 0.0)
        {
            return Err(Error::config(
                "params.temperature must be a non-negative number",
            ));
        }
        match self.max_tokens {
            None | Some(0) => Ok(None),
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| Error::config("params.max_tokens must be a positive integer")),
        }
    }
}

impl ParamsFile {
    /// `reasoning_effort` one of the efforts, and `thinking_budget` at
    /// least [`MIN_THINKING_BUDGET`] (0 is not sent, as `max_tokens`).
    fn reasoning(&self) -> Result<(Option<Effort>, Option<u32>), Error> {
        let effort = match &self.reasoning_effort {
            Some(name) => Some(super::effort("params.reasoning_effort", name)?),
            None => None,
        };
        let budget = match self.thinking_budget {
            None | Some(0) => None,
            Some(n) => Some(
                u32::try_from(n)
                    .ok()
                    .filter(|n| *n >= MIN_THINKING_BUDGET)
                    .ok_or_else(|| {
                        Error::config(format!(
                            "params.thinking_budget must be at least {MIN_THINKING_BUDGET} tokens \
                             (0: not sent), not {n}"
                        ))
                    })?,
            ),
        };
        Ok((effort, budget))
    }
}

impl AgentFile {
    /// Checks the rules in their order: `name`, then
    /// `[sub_agents_config]` (whenever present, design D17), the positive
    /// integers, `sub_agents` names (design D9) and `[params]`.
    pub(super) fn validate(self) -> Result<AgentConfig, Error> {
        if self.name.trim().is_empty() {
            return Err(Error::config("agent config missing required field: name"));
        }
        let sac = &self.sub_agents_config;
        if sac.max_depth > MAX_DEPTH_LIMIT {
            return Err(Error::config(format!(
                "sub_agents_config.max_depth cannot exceed {MAX_DEPTH_LIMIT}"
            )));
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
        let positive = |key: &str, value: Option<i64>| match value {
            Some(n) if n < 1 => Err(Error::config(format!("{key} must be a positive integer"))),
            _ => Ok(value.and_then(|n| u64::try_from(n).ok())),
        };
        let max_parallel = positive("sub_agents_config.max_parallel", sac.max_parallel)?;
        let max_result_chars =
            positive("sub_agents_config.max_result_chars", sac.max_result_chars)?;
        // 0 is no budget, as in the Go original (its scaffold has
        // `max_tokens = 0`); only a negative count is refused.
        let unbounded_at_0 = |key: &str, value: Option<i64>| match value {
            Some(n) if n < 0 => Err(Error::config(format!("{key} must be non-negative"))),
            _ => Ok(value.and_then(|n| u64::try_from(n).ok()).filter(|&n| n > 0)),
        };
        let budget_tokens = unbounded_at_0("budget.max_tokens", self.budget.max_tokens)?;
        let budget_turns = unbounded_at_0("budget.max_turns", self.budget.max_turns)?;
        let budget_cost = match self.budget.max_cost.filter(|usd| *usd != 0.0) {
            Some(usd) => Some(crate::cost::pico(usd).ok_or_else(|| {
                Error::config("budget.max_cost must be a positive amount of USD")
            })?),
            None => None,
        };
        let max_file_bytes = positive("max_file_bytes", self.max_file_bytes)?;
        let max_prompt_bytes = positive("max_prompt_bytes", self.max_prompt_bytes)?;
        let timeout = positive("timeout", self.timeout)?;
        for name in &self.sub_agents {
            paths::check_agent_name(name).map_err(|e| Error::config(format!("sub_agents: {e}")))?;
        }
        let max_tokens = self.params.max_tokens()?;
        let (reasoning_effort, thinking_budget) = self.params.reasoning()?;
        let output = self.output.map(OutputFile::validate).transpose()?;
        let output = super::response_format::with(output, self.params.response_format)?;
        let memory = self.memory.map(MemoryFile::validate).transpose()?;
        let artifacts = self.artifacts.validate()?;
        let tools = super::tools::validate(self.tools, self.allowed_hosts, self.sandbox)?;
        let mcp = super::tools::validate_mcp(self.mcp_servers, self.mcp_tools)?;
        let to_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        Ok(AgentConfig {
            name: self.name,
            description: self.description,
            // Left out (or blank): the agent runs on its caller's model
            // (design D21); at top level `resolve` asks for `--model`.
            model: Some(self.model).filter(|m| !m.trim().is_empty()),
            system_prompt: self.system_prompt,
            skill: self.skill,
            files: self.files,
            attach: self.attach,
            agents_md: self.agents_md,
            workdir: self.workdir,
            sub_agents: self.sub_agents,
            sub_agents_config: SubAgentsConfig {
                max_depth: match u32::try_from(sac.max_depth) {
                    Ok(0) | Err(_) => DEFAULT_MAX_DEPTH,
                    Ok(d) => d,
                },
                parallel: sac.parallel.unwrap_or(true),
                timeout: u64::try_from(sac.timeout).unwrap_or(0),
                max_parallel: max_parallel.map(to_usize),
                max_result_chars: max_result_chars.map(to_usize),
            },
            params: Params {
                temperature: self.params.temperature,
                max_tokens,
                reasoning_effort,
                thinking_budget,
            },
            retry: self.retry,
            budget: Budget {
                max_tokens: budget_tokens,
                max_turns: budget_turns,
                max_cost: budget_cost,
            },
            max_file_bytes,
            max_prompt_bytes,
            timeout,
            output,
            tools,
            mcp,
            prompt_cache: self.prompt_cache.unwrap_or(true),
            stream: self.stream,
            memory,
            artifacts,
        })
    }
}

impl MemoryFile {
    /// Neither count negative (the Go original's messages); `last_n`
    /// absent is [`DEFAULT_LAST_N`], `max_entries` absent is no limit.
    fn validate(self) -> Result<MemoryConfig, Error> {
        let count = |key: &str, value: Option<i64>, default: u64| match value {
            None => Ok(default),
            Some(n) => u64::try_from(n)
                .map_err(|_| Error::config(format!("memory.{key} must be non-negative"))),
        };
        Ok(MemoryConfig {
            enabled: self.enabled,
            path: self.path.filter(|p| !p.trim().is_empty()),
            last_n: count("last_n", self.last_n, DEFAULT_LAST_N)?,
            max_entries: count("max_entries", self.max_entries, 0)?,
        })
    }
}

impl OutputFile {
    /// One of `schema` and `schema_file`; `max_repairs` within its limit.
    /// Whether the schema is a valid JSON Schema is checked when it is
    /// compiled (`schema::compile`), a file's once it is read.
    fn validate(self) -> Result<OutputConfig, Error> {
        let schema = match (self.schema, self.schema_file) {
            (Some(_), Some(_)) => {
                return Err(Error::config("output: set schema or schema_file, not both"));
            }
            (None, None) => {
                return Err(Error::config("output: schema or schema_file is required"));
            }
            (Some(inline), None) => SchemaSource::Inline(
                serde_json::to_value(inline)
                    .map_err(|e| Error::config(format!("output.schema: {e}")))?,
            ),
            (None, Some(path)) => SchemaSource::File(path),
        };
        let max_repairs = match self.max_repairs {
            None => DEFAULT_MAX_REPAIRS,
            Some(n) => match u32::try_from(n) {
                Ok(n) if i64::from(n) <= MAX_REPAIRS_LIMIT => n,
                _ => {
                    return Err(Error::config(format!(
                        "output.max_repairs must be between 0 and {MAX_REPAIRS_LIMIT}"
                    )));
                }
            },
        };
        Ok(OutputConfig {
            schema,
            max_repairs,
        })
    }
}
