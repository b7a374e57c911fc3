//! `axe config init`: the config directory, `agents/`, the sample skill
//! and a commented `config.toml`, each made where missing and never
//! overwritten.

use std::fs;
use std::path::PathBuf;

use crate::error::Error;
use crate::paths;
use crate::sandbox::write::{Created, create_new};

/// `config.toml` written by `axe config init`.
pub(super) const CONFIG_TEMPLATE: &str = r#"# axe global configuration.
#
# API keys are read from the environment first (ANTHROPIC_API_KEY,
# OPENAI_API_KEY, ...), then from this file. Base URLs are read from
# AXE_<PROVIDER>_BASE_URL first, then from this file, then the defaults.
# This file is created with mode 0600 because it may hold keys.

# Agent directories read even where an agent of the run (or of any request
# to `axe serve`) may write them with its commands unconfined ([sandbox]
# mode = "off"): such a directory is otherwise left out, with a warning.
# trusted_agent_dirs = ["~/src/project/axe/agents"]

# [providers.anthropic]
# api_key = "sk-ant-..."
# base_url = "https://api.anthropic.com"

# [providers.openai]
# api_key = "sk-..."
# base_url = "https://api.openai.com"     # or any OpenAI-compatible server
# idle_timeout = 120     # seconds a streamed answer may send nothing

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
# backoff = "exponential"   # or "linear", "fixed"

# The run log: one JSON line per `axe run` in $XDG_STATE_HOME/axe/runs.jsonl
# (default ~/.local/state/axe), listed by `axe runs`. Rotated to
# runs.jsonl.1 past max_bytes. `axe run --no-log` skips one run. Each run's
# conversation is kept beside it (messages/) for `axe run AGENT --continue`.
# [run_log]
# enabled = true
# max_bytes = 10485760
# messages = true

# The models a Claude Code agent file's `model: sonnet` (opus, haiku) stands
# for; these are the defaults.
# [aliases]
# sonnet = "anthropic/claude-sonnet-4-5"
# opus = "anthropic/claude-opus-4-1"
# haiku = "anthropic/claude-haiku-4-5"

# What an imported agent file may ask for. A Codex file's sandbox_mode =
# "danger-full-access" is refused (exit 2) unless allow_full_access is true
# (default false); it then runs as "workspace-write", inside axe's sandbox.
# [import]
# allow_full_access = true
"#;

/// The sample skill written by `axe config init`.
const SAMPLE_SKILL: &str = include_str!("../../fixtures/skills/sample/SKILL.md");

/// `axe config init`: creates the config directory, `agents/`, the sample
/// skill and a commented `config.toml` (0600) where missing. Never overwrites.
/// Returns the config directory and what it made and found.
pub fn init() -> Result<Init, Error> {
    let dir = paths::config_dir()?;
    let skill_dir = dir.join("skills").join("sample");
    let agents = dir.join("agents");
    let mut done = vec![(agents.clone(), !agents.is_dir())];
    for d in [agents, skill_dir.clone()] {
        fs::create_dir_all(&d)
            .map_err(|e| Error::config(format!("cannot create directory {}: {e}", d.display())))?;
    }
    let files: [(PathBuf, &str, u32); 2] = [
        (skill_dir.join("SKILL.md"), SAMPLE_SKILL, 0o644),
        (dir.join("config.toml"), CONFIG_TEMPLATE, 0o600),
    ];
    for (path, contents, mode) in files {
        match create_new(&path, contents.as_bytes(), mode) {
            Ok(Created::Written) => done.push((path, true)),
            Ok(Created::AlreadyExists) => done.push((path, false)),
            Err(e) => {
                return Err(Error::config(format!(
                    "cannot write {}: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(Init { dir, done })
}

/// What [`init`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Init {
    /// The config directory.
    pub dir: PathBuf,
    /// `agents/`, the sample skill and config.toml, each with whether
    /// `init` created it (false: it was there, and is left as it was).
    pub done: Vec<(PathBuf, bool)>,
}
