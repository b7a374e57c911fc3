//! `axe mcp serve` (design §9.6): axe's agents as MCP tools, one per
//! agent, for the hosts that call MCP servers (Claude Code, Cursor, Claude
//! Desktop, ...). Three layers, each blind to the one above it: the
//! transport (`stdio`: one JSON-RPC message per line, stdout carrying only
//! the protocol), the protocol's steps (`protocol`: the handshake, `ping`,
//! `tools/list`, `tools/call`, cancellation, every JSON-RPC error) and
//! running an agent for a call (`call`: as `axe serve` runs one, with its
//! cancel flag, deadline, budget, progress and run-log record). The tools
//! themselves, their input and output schemas, are `tools`'s; a message
//! read as text, never as a whole tree, `message`'s.
//!
//! This file owns the settings and what every call shares, including the
//! calls running now (for `--max-concurrent`, cancellation, and the end).

mod call;
mod message;
mod protocol;
mod stdio;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

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
    pub retries: Option<u32>,
    pub run_log: bool,
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
/// still running and waits for them.
pub fn serve(
    settings: Settings,
    global: GlobalConfig,
    files: AgentFiles,
    cwd: PathBuf,
) -> Result<(), Error> {
    let catalog = files.current();
    let tools = tools::Tools::of(&catalog, &global, &cwd);
    crate::io::stderr::lines(format!(
        "axe: mcp serve: {} tool(s) over stdio ({} calls at once)\n",
        tools.len(),
        settings.max_concurrent
    ));
    let shared = Arc::new(Shared {
        settings,
        global,
        files,
        cwd,
        tools,
        running: Mutex::new(HashMap::new()),
    });
    stdio::serve(&shared)
}
