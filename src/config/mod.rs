//! The global config file (`<config>/config.toml`): API keys and base URLs
//! per provider, with environment variables taking precedence, and
//! `axe config init`. Every TOML file axe reads, this one and the agent
//! files, is parsed by `tomlfile`, which warns of the keys it did not use.

mod init;
pub(crate) mod tomlfile;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

pub use init::{Init, init};

use crate::error::Error;
use crate::paths;
use crate::provider::{ModelError, ModelRef, Provider, RetryPolicy, Wire, bedrock, presets};
use crate::sandbox::read;
use crate::text::redact;

/// The parsed `config.toml`. A missing file is an empty config.
#[derive(Debug, Default, Deserialize)]
pub struct GlobalConfig {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Transport retries for every agent (an agent's own `[retry]` wins).
    #[serde(default)]
    pub retry: RetrySettings,
    /// `[[mcp_servers]]`: the MCP servers agents may list by name (design §9.1).
    #[serde(default)]
    pub mcp_servers: Vec<crate::mcp::ServerFile>,
    /// `[run_log]`: the record each `axe run` appends (design §7.7).
    #[serde(default)]
    pub run_log: crate::trace::run_log::Settings,
    /// `trusted_agent_dirs`: agent directories read even where an agent of
    /// the run may write them with its commands unconfined (design §8.8).
    #[serde(default)]
    pub trusted_agent_dirs: Vec<String>,
    /// `[aliases]`: a short model name and the `provider/model` it stands
    /// for, as an imported agent file writes its model (`sonnet`; design
    /// §3.17). [`MODEL_ALIASES`] when not set here.
    #[serde(default)]
    pub aliases: BTreeMap<String, String>,
    /// `[import]`: what an imported agent file may ask for (design §3.17).
    #[serde(default)]
    pub import: ImportSettings,
    /// `[prices."provider/model"]`: a model's price, over the built-in
    /// table's (design §7.8).
    #[serde(default)]
    pub prices: BTreeMap<String, crate::cost::PriceSettings>,
    /// `[telemetry]`: OpenTelemetry export (design §7.9).
    #[serde(default)]
    pub telemetry: crate::trace::telemetry::TelemetrySettings,
}

/// `[import]` in config.toml.
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct ImportSettings {
    /// A Codex file's `sandbox_mode = "danger-full-access"` is run (as
    /// `workspace-write`, inside axe's sandbox) rather than refused.
    #[serde(default)]
    pub allow_full_access: bool,
    /// A Codex file's `[mcp_servers]` are started (a command in axe's
    /// sandbox) rather than refused.
    #[serde(default)]
    pub allow_mcp_servers: bool,
}

/// The models Claude Code's aliases stand for when config.toml's
/// `[aliases]` does not say (design §3.17).
pub const MODEL_ALIASES: [(&str, &str); 3] = [
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-1"),
    ("haiku", "anthropic/claude-haiku-4-5"),
];

/// A `[retry]` table, in `config.toml` or an agent file: each key that is
/// set overrides the one below it (defaults, then `config.toml`, then the
/// agent, then `--retries`).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct RetrySettings {
    pub max_retries: Option<u32>,
    pub initial_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
    /// `exponential` (the default), `linear` or `fixed`.
    pub backoff: Option<crate::provider::Backoff>,
}

impl RetrySettings {
    /// `base` with every key set here applied.
    pub fn over(&self, base: RetryPolicy) -> RetryPolicy {
        RetryPolicy {
            max_retries: self.max_retries.unwrap_or(base.max_retries),
            initial_delay: self
                .initial_delay_ms
                .map_or(base.initial_delay, Duration::from_millis),
            max_delay: self
                .max_delay_ms
                .map_or(base.max_delay, Duration::from_millis),
            backoff: self.backoff.unwrap_or(base.backoff),
        }
    }
}

/// One `[providers.<name>]` table. Its `Debug` shows no key (and so
/// neither does [`GlobalConfig`]'s).
#[derive(Default, Clone, Deserialize)]
pub struct ProviderSettings {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
    /// The wire a provider speaks: `openai`, `anthropic`, `ollama` or
    /// `responses` (design §4.12). The documented key; read through
    /// [`ProviderSettings::wire_name`].
    pub api: Option<String>,
    /// `api`'s older name, still read.
    pub kind: Option<String>,
    /// Headers sent with every request to it (values may hold `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The Go original's OpenRouter attribution keys: `HTTP-Referer`,
    /// `X-Title` and `X-OpenRouter-Categories`.
    pub referer: Option<String>,
    pub title: Option<String>,
    pub categories: Option<String>,
    /// Seconds a streamed answer may send nothing (design §4.11).
    pub idle_timeout: Option<u64>,
    /// Bedrock's AWS region when no `AWS_REGION` names one (design §4.13).
    pub region: Option<String>,
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("api_key", &self.api_key.as_ref().map(|_| redact::MARK))
            .field("base_url", &self.base_url.as_deref().map(redact::redact))
            .field("api", &self.api)
            .field("kind", &self.kind)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl ProviderSettings {
    /// The wire the table names, and the key it was named by: `api`, else
    /// `kind` (the one way both are read).
    pub fn wire_name(&self) -> Option<(&'static str, &str)> {
        match (&self.api, &self.kind) {
            (Some(a), _) => Some(("api", a)),
            (None, Some(k)) => Some(("kind", k)),
            (None, None) => None,
        }
    }
}

impl GlobalConfig {
    /// Loads `<config>/config.toml`; a missing file gives the empty config.
    /// Unknown keys are returned as warnings.
    pub fn load() -> Result<(GlobalConfig, Vec<String>), Error> {
        let path = paths::config_file()?;
        Self::load_from(&path)
    }

    pub fn load_from(path: &Path) -> Result<(GlobalConfig, Vec<String>), Error> {
        let text = match read::config_text(path) {
            Ok(t) => t,
            Err(read::Unreadable::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((GlobalConfig::default(), Vec::new()));
            }
            Err(e) => {
                return Err(Error::Unreadable {
                    path: path.to_path_buf(),
                    why: e.to_string(),
                });
            }
        };
        let (config, warnings) = GlobalConfig::parse(&text)
            .and_then(|(c, w)| c.check().map(|()| (c, w)))
            .map_err(|e| Error::InvalidConfigFile {
                path: path.to_path_buf(),
                why: e,
            })?;
        let warnings = warnings
            .into_iter()
            .map(|w| format!("{}: {w}", path.display()))
            .collect();
        Ok((config, warnings))
    }

    /// Parses the text of a `config.toml`: the config and a warning for each
    /// unknown key, or the parser's one-line error.
    pub fn parse(text: &str) -> Result<(GlobalConfig, Vec<String>), String> {
        tomlfile::parse(text, &known_keys)
    }

    /// `s` as a model string, its provider looked up here first (a
    /// `[providers.<name>]` table's `kind`), then among the wires' own
    /// names and the presets (design §4.12).
    pub fn model_ref(&self, s: &str) -> Result<ModelRef, ModelError> {
        ModelRef::parse_with(s, &|name| self.kind_of(name))
    }

    /// The `provider/model` the alias `name` stands for: `[aliases]`, else
    /// [`MODEL_ALIASES`]; none for a name that is no alias.
    pub fn alias(&self, name: &str) -> Option<String> {
        self.aliases.get(name).cloned().or_else(|| {
            MODEL_ALIASES
                .iter()
                .find(|(a, _)| *a == name)
                .map(|(_, m)| (*m).to_string())
        })
    }

    /// The wire a `[providers.<name>]` table says `name` speaks.
    fn kind_of(&self, name: &str) -> Option<Wire> {
        self.providers
            .get(name)
            .and_then(ProviderSettings::wire_name)
            .and_then(|(_, w)| Wire::nameable(w))
    }

    /// The API key for the provider `name`: its key variable
    /// (`<NAME>_API_KEY`, or a preset's), then the file. Empty values count
    /// as unset. The key is registered for redaction.
    pub fn api_key(&self, name: &str) -> Option<String> {
        let key = env_nonempty(&presets::key_var(name)).or_else(|| {
            self.providers
                .get(name)
                .and_then(|s| s.api_key.clone())
                .filter(|k| !k.trim().is_empty())
        })?;
        redact::register(&key);
        Some(key)
    }

    /// The base URL for the provider `name` on `kind`'s wire:
    /// `AXE_<NAME>_BASE_URL`, then the file, then (Ollama) `OLLAMA_HOST`,
    /// then the preset's or the wire's default; none for a provider by
    /// another name that sets none. No trailing `/`.
    pub fn base_url(&self, name: &str, kind: Wire) -> Option<String> {
        let env_name = format!("AXE_{}_BASE_URL", presets::env_name(name));
        // `openai` on the Responses API (a model that answers only there,
        // or the table's `api`) is still OpenAI's own endpoint.
        let own = Wire::parse(name) == Some(kind)
            || (name == Wire::OpenAi.name() && kind == Wire::Responses);
        let url = env_nonempty(&env_name)
            .or_else(|| {
                self.providers
                    .get(name)
                    .and_then(|s| s.base_url.clone())
                    .filter(|u| !u.trim().is_empty())
            })
            .or_else(|| match kind {
                Wire::Ollama if own => env_nonempty("OLLAMA_HOST").map(|h| ollama_host_url(&h)),
                Wire::Bedrock => bedrock::region(self.region(name)).map(|r| bedrock::base_url(&r)),
                _ => None,
            })
            .or_else(|| presets::preset(name).map(|p| p.base_url.to_string()))
            .or_else(|| own.then(|| kind.format().default_base_url().to_string()))?;
        Some(url.trim().trim_end_matches('/').to_string())
    }

    /// The provider `m` names, as configured here and by the environment
    /// (no retries: the caller sets its policy). A missing key is exit 3
    /// (a provider by another name may have none: a local server), a base
    /// URL that is not http(s), or none, or an idle limit of 0, exit 2.
    pub fn provider(&self, m: &ModelRef) -> Result<Provider, Error> {
        let (name, kind) = (m.provider.as_str(), m.wire);
        let key = self.api_key(name);
        // A wire's own name keeps its key rule whatever its table's `api`.
        let named = self.kind_of(name).is_some() && Wire::parse(name).is_none();
        if key.is_none() && kind.format().needs_key() && !named {
            return Err(Error::MissingKey {
                provider: name.to_string(),
                var: presets::key_var(name),
            });
        }
        let Some(base_url) = self.base_url(name, kind) else {
            return Err(Error::config(format!(
                "provider \"{name}\" has no base_url: set it in config.toml's \
                 [providers.{name}] or AXE_{}_BASE_URL",
                presets::env_name(name)
            )));
        };
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::InvalidBaseUrl {
                provider: name.to_string(),
                url: base_url,
            });
        }
        let headers = self.headers(name)?;
        let mut provider = Provider::new(kind, base_url, key)
            .named(name)
            .with_headers(headers);
        provider.price = self.price(name, &m.model);
        provider.reports_cost = presets::reports_cost(name);
        if kind == Wire::Bedrock {
            let keys = bedrock::from_env(self.region(name), &|path, limit| {
                // As axe reads a file it did not write (design §8.7).
                read::bytes(path, limit).map_err(|e| e.to_string())
            })
            .map_err(|var| Error::MissingKey {
                provider: name.to_string(),
                var,
            })?;
            provider = provider.with_aws(keys);
        }
        match self.providers.get(name).and_then(|s| s.idle_timeout) {
            Some(0) => {
                return Err(Error::config(format!(
                    "providers.{name}.idle_timeout must be at least 1 second"
                )));
            }
            Some(secs) => provider.idle = Duration::from_secs(secs),
            None => {}
        }
        Ok(provider)
    }

    /// The price of `model` at the provider `name`: config.toml's
    /// `[prices."name/model"]`, else the built-in table's (design §7.8).
    /// Checked when the file is loaded, so a bad one here is none. Out of
    /// line: it runs as each agent's provider is made, under frames every
    /// waiting sub-agent's thread holds (design §3.15).
    #[inline(never)]
    pub fn price(&self, name: &str, model: &str) -> Option<crate::cost::Price> {
        // Most configs set no price: no key is made for them.
        let set = (!self.prices.is_empty())
            .then(|| self.prices.get(&format!("{name}/{model}")))
            .flatten();
        match set {
            Some(s) => s.price("").ok(),
            None => crate::cost::builtin(name, model),
        }
    }

    /// config.toml's `region` for the provider `name`.
    fn region(&self, name: &str) -> Option<&str> {
        self.providers.get(name).and_then(|s| s.region.as_deref())
    }

    /// The extra headers of the provider `name`: its `headers` table
    /// (`${VAR}` read from the environment), and the Go original's
    /// OpenRouter keys.
    fn headers(&self, name: &str) -> Result<Vec<(String, String)>, Error> {
        let Some(s) = self.providers.get(name) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for (k, v) in &s.headers {
            let v = crate::mcp::config::expand(v)
                .map_err(|e| Error::config(format!("providers.{name}.headers.{k}: {e}")))?;
            out.push((k.clone(), v));
        }
        let named = [
            ("HTTP-Referer", &s.referer),
            ("X-Title", &s.title),
            ("X-OpenRouter-Categories", &s.categories),
        ];
        for (header, value) in named {
            if let Some(v) = value.as_ref().filter(|v| !v.trim().is_empty()) {
                out.push((header.to_string(), v.clone()));
            }
        }
        Ok(out)
    }

    /// `trusted_agent_dirs`, each `~` expanded and its symlinks resolved
    /// (as written when it does not exist).
    pub fn trusted_agent_dirs(&self) -> Vec<PathBuf> {
        self.trusted_agent_dirs
            .iter()
            .map(|d| {
                let p = paths::expand_tilde(d);
                p.canonicalize().unwrap_or(p)
            })
            .collect()
    }

    /// Checks what the tables say: a `kind` is one of the wires; a trusted
    /// agent directory is absolute (relative to what else would it be?).
    fn check(&self) -> Result<(), String> {
        for d in &self.trusted_agent_dirs {
            if !paths::expand_tilde(d).is_absolute() {
                return Err(format!(
                    "trusted_agent_dirs: {d:?} must be an absolute path (or start with ~/)"
                ));
            }
        }
        for (key, p) in &self.prices {
            if !key.contains('/') {
                return Err(format!("prices.\"{key}\" must name a provider/model"));
            }
            p.price(key)?;
        }
        for (name, s) in &self.providers {
            if let (Some(a), Some(k)) = (&s.api, &s.kind)
                && a != k
            {
                return Err(format!(
                    "providers.{name}: api = {a:?} and kind = {k:?} disagree (kind is api's older name): keep api"
                ));
            }
            if let Some((key, w)) = s.wire_name()
                && Wire::nameable(w).is_none()
            {
                return Err(format!(
                    "providers.{name}.{key} must be \"openai\", \"anthropic\", \"ollama\" or \"responses\", not {w:?}"
                ));
            }
        }
        Ok(())
    }

    /// Registers every key that could be used, so that none is ever printed,
    /// even one belonging to a provider this run does not talk to.
    pub fn register_secrets(&self) {
        let names = Wire::ALL
            .iter()
            .map(|k| k.name())
            .chain(presets::PRESETS.iter().map(|p| p.name))
            .chain(self.providers.keys().map(String::as_str));
        bedrock::register_env_secrets();
        for name in names {
            let _ = self.api_key(name);
            let kind = self
                .kind_of(name)
                .or_else(|| Wire::parse(name))
                .unwrap_or(Wire::OpenAi);
            if let Some(url) = self.base_url(name, kind) {
                redact::register_url(&url);
            }
        }
        for s in self.providers.values() {
            if let Some(k) = &s.api_key {
                redact::register(k);
            }
        }
    }
}

/// The fields of each of `config.toml`'s tables that is a struct's, for
/// its unknown keys and their "did you mean" (design §2.3); None for a map.
fn known_keys(table: &[&str]) -> Option<&'static [&'static str]> {
    use tomlfile::fields;
    Some(match table {
        [] => fields::<GlobalConfig>(),
        ["retry"] => fields::<RetrySettings>(),
        ["run_log"] => fields::<crate::trace::run_log::Settings>(),
        ["import"] => fields::<ImportSettings>(),
        ["telemetry"] => fields::<crate::trace::telemetry::TelemetrySettings>(),
        ["mcp_servers", _] => fields::<crate::mcp::ServerFile>(),
        ["mcp_servers", _, "sandbox"] => fields::<crate::mcp::config::SandboxFile>(),
        ["providers", _] => fields::<ProviderSettings>(),
        ["prices", _] => fields::<crate::cost::PriceSettings>(),
        _ => return None,
    })
}

/// `OLLAMA_HOST` read as Ollama's own client reads it: the scheme defaults
/// to http; the port to 11434 without a scheme, else the scheme's port (80 or
/// 443); a path is kept; an empty host means 127.0.0.1.
fn ollama_host_url(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let (scheme, rest, default_port) = match host.split_once("://") {
        Some((s, r)) => (s, r, if s == "https" { "443" } else { "80" }),
        None => ("http", host, "11434"),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (h, port) = match authority.rsplit_once(':') {
        // `::1` and other bare IPv6 addresses have colons but no port.
        Some((h, p)) if p.parse::<u16>().is_ok() && (!h.contains(':') || h.ends_with(']')) => {
            (h, p)
        }
        _ => (authority, default_port),
    };
    let h = match h {
        "" => "127.0.0.1".to_string(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_string(),
    };
    format!("{scheme}://{h}:{port}{path}")
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

#[cfg(test)]
mod tests;
