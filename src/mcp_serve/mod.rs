//! `axe mcp serve` (design §9.6): axe's agents as MCP tools, one per
//! agent, for the hosts that call MCP servers (Claude Code, Cursor, Claude
//! Desktop, ...). Three layers, each blind to the one above it: the
//! transport (`stdio`: one JSON-RPC message per line, stdout carrying only
//! the protocol; or `http`, streamable HTTP at `/mcp` with `--listen`,
//! each request's answer `reply`'s), the protocol's steps (`protocol`: the handshake, `ping`,
//! `tools/list`, `tools/call`, cancellation, every JSON-RPC error) and
//! running an agent for a call (`call`: as `axe serve` runs one, with its
//! cancel flag, deadline, budget, progress and run-log record); what the
//! stateless revision 2026-07-28 changes `stateless`'s. The tools
//! themselves, their input and output schemas, are `tools`'s; a message
//! read as text, never as a whole tree, `message`'s.
//!
//! This file owns the settings and what every call shares, including the
//! calls running now (for `--max-concurrent`, cancellation, and the end).

mod call;
mod http;
mod message;
mod pool;
mod protocol;
mod reply;
mod stateless;
mod stdio;
mod tools;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use crate::config::GlobalConfig;
use crate::deadline::Cancel;
use crate::error::Error;
use crate::serve::AgentFiles;

/// The protocol revisions of the handshake era axe speaks, newest first:
/// a client asking for one gets it; any other gets the first (design
/// §9.6).
pub const VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The server's settings, from the command line.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Calls run at once; more are answered with an error result.
    pub max_concurrent: usize,
    /// `--timeout`: seconds per call's run, over the agent file's.
    pub timeout: Option<u64>,
    /// `--max-tokens`: each call's tree's token budget.
    pub max_tokens: Option<u64>,
    /// `--max-cost`: each call's tree's money budget, in picodollars.
    pub max_cost: Option<u64>,
    pub retries: Option<u32>,
    pub run_log: bool,
    /// `--listen`: streamable HTTP on this address, else stdio.
    pub listen: Option<SocketAddr>,
    /// The bearer token HTTP clients must send; none on loopback without one.
    pub token: Option<String>,
    /// How long an HTTP connection may send or take nothing.
    pub idle: Duration,
}

/// Where the protocol's messages go: one whole message at a time, in the
/// order they are sent (a transport's, `stdio`'s).
pub trait Out: Send + Sync {
    fn send(&self, message: &Value);
}

/// What every call shares.
pub struct Shared {
    settings: Settings,
    global: GlobalConfig,
    /// The agent files, read at the start.
    files: AgentFiles,
    cwd: PathBuf,
    /// The tools, made once at the start from the agent files.
    tools: tools::Tools,
    /// The calls running now, by their request id's JSON text.
    running: Mutex<HashMap<String, Cancel>>,
    /// The threads the calls run on, kept for the next call.
    pool: pool::Pool,
}

impl Shared {
    /// Lists the call `id` as running: its cancel flag; or, when
    /// `--max-concurrent` are running or one has the same id, why not.
    fn begin(&self, id: &str) -> Result<Cancel, String> {
        let mut running = self.lock();
        let max = self.settings.max_concurrent;
        if running.len() >= max {
            return Err(format!(
                "axe is busy: it is running {max} calls, its most (--max-concurrent); try again shortly"
            ));
        }
        if running.contains_key(id) {
            return Err(format!(
                "a call with the id {} is running already",
                crate::text::clip(id, 64, "…")
            ));
        }
        let cancel = Cancel::default();
        running.insert(id.to_string(), cancel.clone());
        Ok(cancel)
    }

    /// The call `id` ended.
    fn end(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Cancels the call `id` (`notifications/cancelled`); false when no
    /// such call runs.
    fn cancel(&self, id: &str) -> bool {
        self.lock().get(id).map(Cancel::cancel).is_some()
    }

    /// Cancels every call whose key starts with `scope` (an HTTP
    /// session ended).
    fn cancel_scope(&self, scope: &str) {
        for (_, c) in self.lock().iter().filter(|(k, _)| k.starts_with(scope)) {
            c.cancel();
        }
    }

    /// Cancels every call running (the client went away).
    fn cancel_all(&self) {
        for c in self.lock().values() {
            c.cancel();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cancel>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves over stdin and stdout until stdin ends, then cancels the calls
/// still running and waits for them; or, with `--listen`, over HTTP until
/// SIGTERM or SIGINT.
pub fn serve(
    settings: Settings,
    global: GlobalConfig,
    files: AgentFiles,
    cwd: PathBuf,
) -> Result<(), Error> {
    let catalog = files.current();
    let tools = tools::Tools::of(&catalog, &global, &cwd);
    let http = settings
        .listen
        .map(|l| (l, settings.token.clone(), settings.idle));
    if http.is_none() {
        crate::io::stderr::lines(format!(
            "axe: mcp serve: {} tool(s) over stdio ({} calls at once)\n",
            tools.len(),
            settings.max_concurrent
        ));
    }
    let shared = Arc::new(Shared {
        settings,
        global,
        files,
        cwd,
        tools,
        running: Mutex::new(HashMap::new()),
        pool: pool::Pool::default(),
    });
    match http {
        Some((listen, token, idle)) => http::serve(shared, listen, token, idle),
        None => stdio::serve(&shared),
    }
}
