//! A top-level run put together: the one way `axe run` and `axe serve`
//! both build one (design §12.2) — the timeout, the ledger and its trace,
//! the MCP servers, the budgets, how it streams, and the [`Ctx`] that
//! holds them. What differs between the two (where the user message comes
//! from, where the answer and streamed text go, the run log's record, the
//! signals) stays with each command.

use std::path::Path;
use std::sync::Arc;

use super::snapshot::Snapshot;
use super::{Ctx, Streaming, TextSink};
use crate::agent::Catalog;
use crate::config::GlobalConfig;
use crate::deadline::Cancel;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::stderr::Verbose;
use crate::resolve::Resolved;
use crate::trace::event::TraceEvent;
use crate::trace::ledger::{Budget, Ledger, Place};

/// What a top-level run is given beside its resolved agent.
pub struct Setup<'a> {
    pub global: &'a GlobalConfig,
    /// The agent files read at the start, and where the rest are found.
    pub catalog: &'a Arc<Catalog>,
    pub cwd: &'a Path,
    pub verbose: Verbose,
    /// `--retries`.
    pub retries: Option<u32>,
    /// The whole tree's token and turn bounds, over the agent file's
    /// `[budget]` (`--max-tokens`, a request's `max_tokens`).
    pub max_tokens: Option<u64>,
    pub max_turns: Option<u64>,
    /// `--max-cost`, in picodollars (design §7.8).
    pub max_cost: Option<u64>,
    /// Every request of the tree streams.
    pub stream: bool,
    /// The answer is wanted whole (`--json`): it is never printed as it
    /// comes.
    pub whole: bool,
    pub text: TextSink,
    pub cancel: Cancel,
}

/// The seconds a top-level run has: `flag` (`--timeout`), else the agent
/// file's own, else `default`.
pub fn timeout(flag: Option<u64>, resolved_file: Option<u64>, default: u64) -> u64 {
    flag.or(resolved_file).unwrap_or(default)
}

/// The run's ledger, with a trace to `trace` when there is one.
pub fn open_ledger(
    trace: Option<&str>,
    bodies: bool,
    deadline: &Deadline,
) -> Result<Ledger, Error> {
    match trace {
        Some(path) => Ledger::with_trace(Path::new(path), bodies, deadline)
            .map_err(|e| Error::config(format!("cannot open trace file {path}: {e}"))),
        None => Ok(Ledger::new()),
    }
}

/// The trace the run joins: `TRACEPARENT` (design §7.9); a malformed one
/// is ignored, with a `--verbose` note.
pub fn env_parent(verbose: &Verbose) -> Option<crate::trace::telemetry::SpanContext> {
    crate::trace::telemetry::env_parent().unwrap_or_else(|why| {
        verbose.line(&format!("[telemetry] {why}"));
        None
    })
}

/// The context of the top-level run of `resolved` (named `agent`), with
/// its deadline and ledger: its MCP servers checked (none started yet),
/// its budget, how it streams.
pub fn ctx<'a>(
    setup: Setup<'a>,
    agent: &str,
    resolved: &Resolved,
    deadline: Deadline,
    ledger: Arc<Ledger>,
) -> Result<Ctx<'a>, Error> {
    let place = Place::root(agent);
    let file_budget = &resolved.agent.config.budget;
    let max_tokens = setup.max_tokens.or(file_budget.max_tokens);
    let max_turns = setup.max_turns.or(file_budget.max_turns);
    let max_cost = setup.max_cost.or(file_budget.max_cost);
    let mcp = mcp_servers(setup.global, setup.cwd, &setup.verbose, &ledger, &place)?;
    Ok(Ctx {
        global: setup.global,
        agents: setup.catalog.dirs(),
        cwd: setup.cwd,
        depth: 0,
        max_depth: resolved.agent.config.sub_agents_config.max_depth,
        deadline,
        verbose: setup.verbose,
        retries: setup.retries,
        ledger,
        place,
        budgets: budgets(max_tokens, max_turns, max_cost),
        snapshot: Arc::new(Snapshot::of(setup.catalog.clone())),
        mcp,
        stream: streaming(resolved, setup.stream, setup.whole),
        text: setup.text,
        cancel: setup.cancel,
        seed: None,
        conversation: None,
    })
}

/// How the run streams: every request when the agent (or `stream`) asks;
/// the answer handed out as it comes unless it must be whole first
/// (`whole`, an output schema).
fn streaming(resolved: &Resolved, stream: bool, whole: bool) -> Streaming {
    let on = resolved.agent.config.stream || stream;
    Streaming {
        on,
        print: on && !whole && resolved.output_schema.is_none(),
    }
}

/// The run's MCP servers: config.toml's checked, none started yet. What
/// they say beside their answers (stderr, log messages) goes to `--verbose`
/// and to the trace, as the top-level agent's.
fn mcp_servers(
    global: &GlobalConfig,
    cwd: &Path,
    verbose: &Verbose,
    ledger: &Arc<Ledger>,
    place: &Place,
) -> Result<Arc<crate::mcp::Servers>, Error> {
    let configs = crate::mcp::config::validate_all(global.mcp_servers.clone())?;
    let (verbose, ledger, place) = (verbose.clone(), ledger.clone(), place.clone());
    let log: crate::mcp::rpc::Log = Arc::new(move |note: &crate::mcp::rpc::Note| {
        verbose.line(&note.verbose_line());
        ledger.event(&place, 0, TraceEvent::Mcp { note });
    });
    Ok(Arc::new(crate::mcp::Servers::new(
        configs,
        cwd.to_path_buf(),
        log,
    )))
}

/// The whole tree's budget, when any bound is set.
pub fn budgets(
    max_tokens: Option<u64>,
    max_turns: Option<u64>,
    max_cost: Option<u64>,
) -> Vec<Arc<Budget>> {
    if max_tokens.is_some() || max_turns.is_some() || max_cost.is_some() {
        vec![Arc::new(
            Budget::new(max_tokens, max_turns).costing(max_cost),
        )]
    } else {
        Vec::new()
    }
}
