//! The `call_agent` tool driven through the library API in-process: its
//! definition, and its execution against real agent files in a temp config
//! directory and a fake provider on 127.0.0.1 (design §3.3–§3.12; D5–D7,
//! D9, D19). Nothing here touches the process environment or the internet.
//! One file per part of it, the helpers they share here.

mod checks;
mod failures;
mod nested;

use crate::common::*;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axe::agent::CALL_AGENT;
use axe::config::{GlobalConfig, ProviderSettings, RetrySettings};
use axe::deadline::Deadline;
use axe::io::stderr::Verbose;
use axe::provider::{ToolCall, ToolResult};
use axe::run::Ctx;
use axe::run::call_agent::call_agent_tool;
use axe::run::dispatch::*;
use axe::trace::ledger::{Children, Ledger, Place};
use serde_json::{Value, json};

/// The tail of every `Error: sub-agent ...` result (design §3.6).
const TAIL: &str = ". You may retry or proceed without this result.";

/// A global config naming each `(provider, key, base_url)`.
fn global(providers: &[(&str, Option<&str>, &str)]) -> GlobalConfig {
    GlobalConfig {
        providers: providers
            .iter()
            .map(|(name, key, url)| {
                (
                    name.to_string(),
                    ProviderSettings {
                        api_key: key.map(str::to_string),
                        base_url: Some(url.to_string()),
                        ..ProviderSettings::default()
                    },
                )
            })
            .collect(),
        // The default 2 retries, with millisecond waits.
        retry: RetrySettings {
            max_retries: None,
            initial_delay_ms: Some(1),
            max_delay_ms: Some(5),
            ..RetrySettings::default()
        },
        mcp_servers: Vec::new(),
        ..GlobalConfig::default()
    }
}

/// OpenAI at `server`, with a key.
fn openai(server: &FakeServer) -> GlobalConfig {
    assert!(
        std::env::var_os("AXE_OPENAI_BASE_URL").is_none(),
        "AXE_OPENAI_BASE_URL is set: it would send these tests' requests elsewhere; unset it"
    );
    global(&[("openai", Some(OPENAI_KEY), &server.url)])
}

/// A temp directory that is both the config directory (`agents/` inside)
/// and the current directory of the run, with the global config.
struct Setup {
    dir: TempDir,
    global: GlobalConfig,
    agents: axe::paths::AgentDirs,
}

impl Setup {
    fn new(global: GlobalConfig) -> Setup {
        let dir = TempDir::new("tool");
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        let agents = axe::paths::AgentDirs::only(dir.path());
        Setup {
            dir,
            global,
            agents,
        }
    }

    /// OpenAI at `server`.
    fn openai(server: &FakeServer) -> Setup {
        Setup::new(openai(server))
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `<config>/agents/<name>.toml`.
    fn agent(&self, name: &str, toml: &str) {
        let path = self.dir().join("agents").join(format!("{name}.toml"));
        std::fs::write(path, toml).unwrap();
    }

    /// A context at `depth` of a tree bounded by `max_depth`, with a deadline
    /// `secs` from now.
    fn ctx(&self, depth: u32, max_depth: u32, secs: u64) -> Ctx<'_> {
        Ctx {
            global: &self.global,
            agents: &self.agents,
            cwd: self.dir(),
            depth,
            max_depth,
            deadline: Deadline {
                at: Instant::now() + Duration::from_secs(secs),
                secs,
            },
            retries: None,
            verbose: Verbose::new(false),
            ledger: std::sync::Arc::new(Ledger::new()),
            place: Place::default(),
            budgets: Vec::new(),
            snapshot: Default::default(),
            mcp: Default::default(),
            stream: Default::default(),
            text: Default::default(),
            cancel: Default::default(),
            seed: None,
            conversation: None,
        }
    }
}

/// A plain OpenAI agent file.
fn openai_agent(name: &str, system_prompt: &str) -> String {
    format!("name = \"{name}\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"{system_prompt}\"\n")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A `call_agent` call with exactly these arguments.
fn call_with(id: &str, args: &[(&str, &str)]) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: CALL_AGENT.into(),
        arguments: args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ToolCall::default()
    }
}

fn call(id: &str, agent: &str, task: &str) -> ToolCall {
    call_with(id, &[("agent", agent), ("task", task)])
}

/// Runs `call` for a caller allowed `allowed`, parallel, with no own timeout.
fn call_one(ctx: &Ctx, allowed: &[&str], call: &ToolCall) -> ToolResult {
    call_one_timed(ctx, allowed, 0, call)
}

/// Runs `call` for a caller allowed `allowed` with its own `timeout_secs`.
fn call_one_timed(ctx: &Ctx, allowed: &[&str], timeout_secs: u64, call: &ToolCall) -> ToolResult {
    let allowed = names(allowed);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: true,
        timeout_secs,
        tools: None,
        artifacts: None,
        mcp: &[],
        offered: &[],
        ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };
    run_call(call, &caller)
}

#[track_caller]
fn assert_error(r: &ToolResult, id: &str, expected: &str) {
    assert_eq!(r.content, expected);
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, id);
}

#[track_caller]
fn assert_no_request(server: &FakeServer) {
    assert_eq!(server.requests().len(), 0, "{:?}", server.requests());
}

/// An OpenAI-style error body.
fn openai_error(message: &str, kind: &str, code: Value) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}
