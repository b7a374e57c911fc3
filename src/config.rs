//! The global config file (`<config>/config.toml`): API keys and base URLs
//! per provider, with environment variables taking precedence, and
//! `axe config init`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;
use crate::provider::{Kind, Provider, RetryPolicy};
use crate::write::{Created, create_new};
use crate::{paths, read, redact, tomlfile};

/// The parsed `config.toml`. A missing file is an empty config.
#[derive(Debug, Default, Deserialize)]
pub struct GlobalConfig {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderSettings>,
    /// Transport retries for every agent (an agent's own `[retry]` wins).
    #[serde(default)]
    pub retry: RetrySettings,
    /// `[[mcp_servers]]`: the MCP servers agents may list by name (design §11.1).
    #[serde(default)]
    pub mcp_servers: Vec<crate::mcp::ServerFile>,
    /// `[run_log]`: the record each `axe run` appends (design §7.7).
    #[serde(default)]
    pub run_log: crate::run_log::Settings,
}

/// A `[retry]` table, in `config.toml` or an agent file: each key that is
/// set overrides the one below it (defaults, then `config.toml`, then the
/// agent, then `--retries`).
#[derive(Debug, Default, Clone, Copy, Deserialize)]
pub struct RetrySettings {
    pub max_retries: Option<u32>,
    pub initial_delay_ms: Option<u64>,
    pub max_delay_ms: Option<u64>,
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
        }
    }
}

/// One `[providers.<name>]` table. Its `Debug` shows no key (and so
/// neither does [`GlobalConfig`]'s).
#[derive(Default, Clone, Deserialize)]
pub struct ProviderSettings {
    pub api_key: Option<String>,
    pub base_url: Option<String>,
}

impl std::fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("api_key", &self.api_key.as_ref().map(|_| redact::MARK))
            .field("base_url", &self.base_url.as_deref().map(redact::redact))
            .finish()
    }
}

/// `config.toml` written by `axe config init`.
const CONFIG_TEMPLATE: &str = r#"# axe global configuration.
#
# API keys are read from the environment first (ANTHROPIC_API_KEY,
# OPENAI_API_KEY, ...), then from this file. Base URLs are read from
# AXE_<PROVIDER>_BASE_URL first, then from this file, then the defaults.
# This file is created with mode 0600 because it may hold keys.

# [providers.anthropic]
# api_key = "sk-ant-..."
# base_url = "https://api.anthropic.com"

# [providers.openai]
# api_key = "sk-..."
# base_url = "https://api.openai.com"     # or any OpenAI-compatible server

# [providers.ollama]
# base_url = "http://localhost:11434"

# Retries of one HTTP request (429, 529, 500, 502, 503, 504, connection
# refused or closed), with exponential backoff and jitter, honouring
# Retry-After, never past the run's --timeout. An agent's own [retry] wins;
# `axe run --retries N` wins over both.
# [retry]
# max_retries = 2
# initial_delay_ms = 500
# max_delay_ms = 30000

# The run log: one JSON line per `axe run` in $XDG_STATE_HOME/axe/runs.jsonl
# (default ~/.local/state/axe), listed by `axe runs`. Rotated to
# runs.jsonl.1 past max_bytes. `axe run --no-log` skips one run.
# [run_log]
# enabled = true
# max_bytes = 10485760
"#;

/// The sample skill written by `axe config init`.
const SAMPLE_SKILL: &str = include_str!("../fixtures/skills/sample/SKILL.md");

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
        let (config, warnings) =
            GlobalConfig::parse(&text).map_err(|e| Error::InvalidConfigFile {
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

    /// The API key for `kind`: `<PROVIDER>_API_KEY`, then the file. Empty
    /// values count as unset. The key is registered for redaction.
    pub fn api_key(&self, kind: Kind) -> Option<String> {
        let key = env_nonempty(&format!("{}_API_KEY", kind.name().to_ascii_uppercase())).or_else(
            || {
                self.settings(kind)
                    .and_then(|s| s.api_key.clone())
                    .filter(|k| !k.trim().is_empty())
            },
        )?;
        redact::register(&key);
        Some(key)
    }

    /// The base URL for `kind`: `AXE_<PROVIDER>_BASE_URL`, then the file, then
    /// (Ollama) `OLLAMA_HOST`, then the provider's default. No trailing `/`.
    pub fn base_url(&self, kind: Kind) -> String {
        let env_name = format!("AXE_{}_BASE_URL", kind.name().to_ascii_uppercase());
        let url = env_nonempty(&env_name)
            .or_else(|| {
                self.settings(kind)
                    .and_then(|s| s.base_url.clone())
                    .filter(|u| !u.trim().is_empty())
            })
            .or_else(|| match kind {
                Kind::Ollama => env_nonempty("OLLAMA_HOST").map(|h| ollama_host_url(&h)),
                _ => None,
            })
            .unwrap_or_else(|| kind.default_base_url().to_string());
        url.trim().trim_end_matches('/').to_string()
    }

    /// The provider for `kind` as configured here and by the environment
    /// (no retries: the caller sets its policy). A missing key is exit 3, a
    /// base URL that is not http(s) exit 2.
    pub fn provider(&self, kind: Kind) -> Result<Provider, Error> {
        let key = self.api_key(kind);
        if key.is_none() && kind.needs_key() {
            return Err(Error::MissingKey { provider: kind });
        }
        let base_url = self.base_url(kind);
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(Error::InvalidBaseUrl {
                provider: kind,
                url: base_url,
            });
        }
        Ok(Provider::new(kind, base_url, key))
    }

    /// Registers every key that could be used, so that none is ever printed,
    /// even one belonging to a provider this run does not talk to.
    pub fn register_secrets(&self) {
        for kind in Kind::ALL {
            let _ = self.api_key(kind);
            redact::register_url(&self.base_url(kind));
        }
        for s in self.providers.values() {
            if let Some(k) = &s.api_key {
                redact::register(k);
            }
        }
    }

    fn settings(&self, kind: Kind) -> Option<&ProviderSettings> {
        self.providers.get(kind.name())
    }
}

/// The fields of each table of `config.toml`, for "did you mean".
fn known_keys(table: &str) -> &'static [&'static str] {
    match table {
        "" => tomlfile::fields::<GlobalConfig>(),
        "retry" => tomlfile::fields::<RetrySettings>(),
        "run_log" => tomlfile::fields::<crate::run_log::Settings>(),
        t if t.starts_with("mcp_servers.") && t.ends_with(".sandbox") => {
            tomlfile::fields::<crate::mcp::config::SandboxFile>()
        }
        t if t.starts_with("mcp_servers") => tomlfile::fields::<crate::mcp::ServerFile>(),
        t if t.starts_with("providers.") => tomlfile::fields::<ProviderSettings>(),
        _ => &[],
    }
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

/// `axe config init`: creates the config directory, `agents/`, the sample
/// skill and a commented `config.toml` (0600) where missing. Never overwrites.
/// Returns the config directory.
pub fn init() -> Result<PathBuf, Error> {
    let dir = paths::config_dir()?;
    let skill_dir = dir.join("skills").join("sample");
    for d in [dir.join("agents"), skill_dir.clone()] {
        fs::create_dir_all(&d)
            .map_err(|e| Error::config(format!("cannot create directory {}: {e}", d.display())))?;
    }
    let files: [(PathBuf, &str, u32); 2] = [
        (skill_dir.join("SKILL.md"), SAMPLE_SKILL, 0o644),
        (dir.join("config.toml"), CONFIG_TEMPLATE, 0o600),
    ];
    for (path, contents, mode) in files {
        match create_new(&path, contents.as_bytes(), mode) {
            Ok(Created::Written | Created::AlreadyExists) => {}
            Err(e) => {
                return Err(Error::config(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_without_a_key_or_with_a_bad_base_url_is_a_typed_error() {
        let (config, _) = GlobalConfig::parse(
            "[providers.anthropic]\napi_key = \"sk-typed-errors-0123456789\"\nbase_url = \"ftp://h\"\n",
        )
        .unwrap();
        if std::env::var_os("AXE_ANTHROPIC_BASE_URL").is_none() {
            assert!(matches!(
                config.provider(Kind::Anthropic),
                Err(Error::InvalidBaseUrl { provider: Kind::Anthropic, url }) if url == "ftp://h"
            ));
        }
        // The environment's key, where there is one, is not missing.
        if std::env::var_os("OPENAI_API_KEY").is_none() {
            assert!(matches!(
                GlobalConfig::default().provider(Kind::OpenAi),
                Err(Error::MissingKey {
                    provider: Kind::OpenAi
                })
            ));
        }
    }

    #[test]
    fn the_configs_debug_text_shows_no_key() {
        let dir = std::env::temp_dir().join(format!("axe-config-debug-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(
            &path,
            "[providers.openai]\napi_key = \"sk-config-debug-0123456789\"\nbase_url = \"http://u:pw-config-debug@h\"\n",
        )
        .unwrap();
        let (config, _) = GlobalConfig::load_from(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = format!("{config:?}");
        assert!(!text.contains("sk-config-debug"), "{text}");
        assert!(!text.contains("pw-config-debug"), "{text}");
    }

    #[test]
    fn ollama_host_gets_scheme_and_port() {
        assert_eq!(ollama_host_url("127.0.0.1"), "http://127.0.0.1:11434");
        assert_eq!(ollama_host_url("10.0.0.2:9999"), "http://10.0.0.2:9999");
        assert_eq!(
            ollama_host_url("https://o.example/"),
            "https://o.example:443"
        );
        assert_eq!(ollama_host_url("http://h"), "http://h:80");
        assert_eq!(ollama_host_url("http://h:1234"), "http://h:1234");
        assert_eq!(
            ollama_host_url("127.0.0.1:1/ollama"),
            "http://127.0.0.1:1/ollama"
        );
        assert_eq!(ollama_host_url(":18777"), "http://127.0.0.1:18777");
        assert_eq!(ollama_host_url("::1"), "http://[::1]:11434");
        assert_eq!(ollama_host_url("[::1]:5000"), "http://[::1]:5000");
    }
}
