//! Running an agent: [`run_agent`] sets up a resolved agent's run — its
//! provider, its first request (`request.rs`: `call_agent` injected when it
//! has sub-agents and the tree is not at its depth limit, design §3.2,
//! §3.9), its budget and how its tool calls are run — and reports its start
//! and end; [`converse`] (`converse.rs`) is the conversation loop of design
//! §3.7, and `repair.rs` checks a final answer against its output schema
//! and asks for repairs (design D22).
//!
//! The top-level run and every sub-agent go through these functions
//! (design §3.5); a sub-agent differs only in its [`Ctx`].

pub mod call_agent;
mod converse;
pub mod dispatch;
mod hooks;
mod pool;
mod repair;
mod request;
mod snapshot;
mod thread;
pub mod top;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::GlobalConfig;
use crate::deadline::{Cancel, Deadline};
use crate::error::Error;
use crate::io::stderr::Verbose;
use crate::provider::{Provider, Request};
use crate::resolve::Resolved;
use crate::trace::ledger::{self, Budget, Children, Ledger, Place};
use dispatch::Caller;
use snapshot::Snapshot;

use crate::trace::event::{Ending, TraceEvent};
pub use crate::trace::outcome::Outcome;

pub use converse::{ToolRunner, converse};
pub use hooks::{TextFn, TextSink};

/// The most send-receive cycles one conversation may take.
pub const MAX_TURNS: u32 = 50;

/// Where an agent runs in the tree and what bounds it. The top-level run is
/// depth 0; a sub-agent gets its parent's context one level down, with a
/// deadline no later than its parent's.
#[derive(Debug, Clone)]
pub struct Ctx<'a> {
    /// API keys and base URLs for every provider in the tree.
    pub global: &'a GlobalConfig,
    /// Where sub-agents' files are loaded from (`<config>/agents/<name>.toml`).
    pub agents: &'a crate::paths::AgentDirs,
    /// The process's current directory: a sub-agent's workdir when its file
    /// sets none (design D7), and what relative paths resolve against.
    pub cwd: &'a Path,
    /// 0 for the top-level agent; one more per level of delegation.
    pub depth: u32,
    /// The root agent's effective `max_depth`, bounding the whole tree (design D6).
    pub max_depth: u32,
    pub deadline: Deadline,
    pub verbose: Verbose,
    /// `--retries`: the most transport retries per request, over any
    /// `[retry]` setting, for the whole tree.
    pub retries: Option<u32>,
    /// The trace, usage and running agents of the whole tree.
    pub ledger: Arc<Ledger>,
    /// This agent run's name, path and depth in the tree.
    pub place: Place,
    /// The budgets that bound this run: the root's, then those of every
    /// ancestor that has a `[budget]` (its own is added by [`run_agent`]).
    pub budgets: Vec<Arc<Budget>>,
    /// The sub-agents the tree has read, each once (design D20).
    pub snapshot: Arc<Snapshot>,
    /// The run's MCP servers, started on first need (design §9.4).
    pub mcp: Arc<crate::mcp::Servers>,
    /// Whether answers are streamed, and this agent's printed (design §4.11).
    pub stream: Streaming,
    /// Where the printed agent's text goes: stdout, or `axe serve`'s client.
    pub text: TextSink,
    /// Set when the run must stop before its deadline (design §12.3).
    pub cancel: Cancel,
    /// The answer to this run's first request, already had from a
    /// provider's batch engine (design §11.8): the first turn takes it
    /// instead of sending; any later one (a repair) is sent as usual.
    pub seed: Option<Arc<Seed>>,
    /// The top-level run's conversation, kept for the run log and
    /// `--json-messages`, with the one it continues (design §7.7): only
    /// `axe run` has one, and only depth 0 reads or fills it.
    pub conversation: Option<Arc<crate::trace::run_log::messages::Kept>>,
}

/// A first answer had another way (`Ctx::seed`), taken once.
#[derive(Debug, Default)]
pub struct Seed(std::sync::Mutex<Option<crate::provider::Response>>);

impl Seed {
    pub fn new(response: crate::provider::Response) -> Seed {
        Seed(std::sync::Mutex::new(Some(response)))
    }

    /// The answer, the first time it is asked for.
    fn take(&self) -> Option<crate::provider::Response> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}

/// The provider `resolved` runs on and the first request its run would
/// send for `message`, exactly as [`run_agent`] sends it: for a provider's
/// batch engine (design §11.8), which sends it another way. Only for an
/// agent whose run is that one request (no tools, sub-agents or MCP
/// servers: the caller checks).
pub fn first_request(
    resolved: &Resolved,
    message: &str,
    ctx: &Ctx,
) -> Result<(Provider, Request), Error> {
    let provider = request::provider(resolved, ctx)?;
    let (req, _) = request::first(resolved, message, &[], ctx, provider.wire);
    Ok((provider, req))
}

/// How a tree's answers are streamed (design §4.11).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streaming {
    /// Every request of the tree asks for a stream: `--stream`, or the
    /// top-level agent's `stream = true`.
    pub on: bool,
    /// This agent's text goes to stdout as it comes: the top-level agent,
    /// without `--json` and without an output schema.
    pub print: bool,
}

/// Runs the agent `resolved` on the user message `message`: the same path
/// for the top-level run and for every sub-agent. When it succeeds and the
/// agent has memory, `task` and the answer are appended to its memory file
/// (design §10.3): `task` is the message, except that a top-level message
/// read from stdin is not stored. The `call_agent` tool is
/// injected when the agent has `sub_agents` and `ctx.depth < ctx.max_depth`
/// (design §3.2); its calls run as the agent's `[sub_agents_config]` says.
/// At the depth limit such an agent gets no tool, and a call its model makes
/// anyway is answered with the depth error (design D6). An agent without
/// `sub_agents` sends exactly one request (design §3.2).
///
/// The run is reported to `ctx.ledger` (`run_start`, `run_end` and what
/// [`converse`] reports), and an agent with a `[budget]` bounds its own
/// subtree with it, under any budget of its ancestors.
pub fn run_agent(
    resolved: &Resolved,
    message: &str,
    task: &str,
    ctx: &Ctx,
) -> Result<Outcome, Error> {
    #[cfg(debug_assertions)]
    inject_panic(&resolved.agent.id);
    let config = &resolved.agent.config;
    let provider = request::provider(resolved, ctx)?;
    priced_under_budget(&provider, &resolved.model.model, ctx)?;
    let mcp = mcp_tools(resolved, ctx)?;
    let (req, offered) = request::first(resolved, message, &mcp, ctx, provider.wire);
    let own = request::with_own_budget(resolved, ctx);
    let ctx = &own;

    let sac = &config.sub_agents_config;
    let children = Children::default();
    let caller = Caller {
        allowed_agents: &config.sub_agents,
        model: &resolved.model,
        parallel: sac.parallel,
        max_parallel: sac.parallel_limit(),
        max_result_chars: sac.result_limit(),
        timeout_secs: sac.timeout,
        tools: resolved.tools.as_deref(),
        artifacts: resolved.artifacts.as_deref(),
        mcp: &mcp,
        offered: &offered,
        ctx,
        children: &children,
        turn: 0,
    };
    let run_calls = |turn: u32, calls: &[_]| dispatch::run_calls(calls, &Caller { turn, ..caller });
    let tools: Option<&ToolRunner> =
        if config.sub_agents.is_empty() && resolved.tools.is_none() && mcp.is_empty() {
            None
        } else {
            Some(&run_calls)
        };

    let started = Instant::now();
    report_start(ctx, &provider, &req.model, offered.len());
    note_unpriced(ctx, &provider, &req.model);
    note_unsent_schema(ctx, &provider, &req);
    let output = resolved.output_schema.as_deref();
    let result = converse(&provider, req, ctx, tools, output);
    report_end(ctx, started.elapsed(), &result);
    remember(resolved, task, &result);
    result
}

/// A money budget over this run needs its model's price: without one the
/// budget could not be kept, so the run is refused before any request
/// (exit 2 at top level, the sub-agent's error result below; design §7.8).
/// Out of line, as [`report_start`] is: its error would sit in the frame
/// every waiting sub-agent's thread holds (design §3.15).
#[inline(never)]
fn priced_under_budget(provider: &Provider, model: &str, ctx: &Ctx) -> Result<(), Error> {
    if provider.priced() || !ctx.budgets.iter().any(|b| b.max_cost.is_some()) {
        return Ok(());
    }
    let name = &provider.name;
    Err(Error::config(format!(
        "no price is known for {name}/{model}, so the cost budget cannot be kept: \
         set [prices.\"{name}/{model}\"] in config.toml"
    )))
}

/// The entry of a run that succeeded, for an agent with memory. Out of
/// line, as [`report_start`] is.
#[inline(never)]
fn remember(resolved: &Resolved, task: &str, result: &Result<Outcome, Error>) {
    if let (Some(memory), Ok(outcome)) = (&resolved.memory, result) {
        crate::memory::remember(memory, task, &outcome.content);
    }
}

/// The MCP tools the agent is offered, its servers started if they are not
/// yet (design §9.4). A server that cannot start or list its tools fails
/// the agent's run before any request: exit 2 at top level, the
/// sub-agent's error result below.
#[inline(never)]
fn mcp_tools(resolved: &Resolved, ctx: &Ctx) -> Result<Vec<crate::mcp::Bound>, Error> {
    let mcp = &resolved.agent.config.mcp;
    if mcp.is_empty() {
        return Ok(Vec::new());
    }
    ctx.mcp
        .tools_for(mcp, ctx.deadline.at)
        .map_err(Error::config)
}

/// `run_start` to the run's ledger. This and [`report_end`] are out of
/// line: their locals would otherwise sit in `run_agent`'s frame, which
/// every waiting sub-agent's thread holds (design §3.15).
#[inline(never)]
fn report_start(ctx: &Ctx, provider: &Provider, model: &str, offered: usize) {
    ctx.ledger.record_start(&ctx.place);
    let start = TraceEvent::RunStart {
        provider: &provider.name,
        model,
        tools: offered,
    };
    ctx.ledger.event(&ctx.place, 0, start);
}

/// `--verbose`: a model with no price has no cost (`null`), said once per
/// model (design §7.8).
#[inline(never)]
fn note_unpriced(ctx: &Ctx, provider: &Provider, model: &str) {
    if !ctx.verbose.enabled || provider.priced() {
        return;
    }
    let key = format!("{}/{model}", provider.name);
    if crate::cost::first_unpriced(&key) {
        ctx.verbose.line(&format!(
            "[cost] No price is known for {key}: its cost is null (set [prices.\"{key}\"] in config.toml)"
        ));
    }
}

/// `--verbose`: an output schema the provider's wire cannot take as it is
/// (Anthropic's JSON outputs, without forbidding answers it allows) is not
/// sent, and axe alone checks the answer (design D22); said once per agent
/// run.
#[inline(never)]
fn note_unsent_schema(ctx: &Ctx, provider: &Provider, req: &Request) {
    if !ctx.verbose.enabled {
        return;
    }
    if let Some(why) = provider.unsent_schema(req) {
        ctx.verbose.line(&format!(
            "[output] The output schema is not sent to {} ({why}); axe checks the answer and asks for repairs",
            provider.wire.name()
        ));
    }
}

/// `run_end` to the run's ledger, with the tree's totals at top level.
#[inline(never)]
fn report_end(ctx: &Ctx, took: Duration, result: &Result<Outcome, Error>) {
    ctx.ledger.record_end(&ctx.place, took, result.is_err());
    let (turn, end) = match result {
        Ok(o) => (o.turns, Ending::Finished(o)),
        Err(e) => (0, Ending::Failed(e)),
    };
    let totals = (ctx.depth == 0).then(|| ledger::totals(&ctx.ledger.usage()));
    let end = TraceEvent::RunEnd { took, end, totals };
    ctx.ledger.event(&ctx.place, turn, end);
    if ctx.depth == 0 {
        // The answer, printed next, may share the trace's pipe.
        ctx.ledger.flush_trace();
    }
}

/// A test hook, compiled into debug builds only: the agent named by
/// `AXE_DEBUG_PANIC_AGENT` panics when it starts, so that tests can show
/// that a sub-agent's panic stays inside its own call (design D4) and that a
/// top-level panic is one line and exit 1.
#[cfg(debug_assertions)]
fn inject_panic(name: &str) {
    if std::env::var_os("AXE_DEBUG_PANIC_AGENT").is_some_and(|v| v == name) {
        panic!("injected by AXE_DEBUG_PANIC_AGENT");
    }
}
