//! One `tools/call` run (design §9.6): the tool's agent loaded from the
//! agent files read at the start and resolved as `axe serve` resolves
//! one, its `{{KEY}}` templates filled from the call's arguments, the run
//! put together by `run::top` with the call's cancel flag, its deadline
//! (`--timeout`, else the agent file's) and budget (`--max-tokens`), and
//! recorded in the run log. What comes back is the call's result: the
//! answer as text (and as `structuredContent` for a schema'd agent), or
//! axe's one-line error with `isError`, the tree's usage in `_meta`. Its
//! steps (agents started and ended, turns, tools) are told to the client
//! as `notifications/progress` when the call asked for them.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use serde_json::{Value, json};

use super::tools::{Arguments, Tool};
use super::{Out, Shared};
use crate::agent::Agent;
use crate::deadline::{Cancel, Deadline};
use crate::error::Error;
use crate::io::stderr::Verbose;
use crate::resolve::template::{Prompts, Vars};
use crate::resolve::{self, Overrides, Resolved};
use crate::run::{self, TextSink, top};
use crate::trace::ledger::{self, Ledger, Step, Totals, Watch};
use crate::trace::outcome::Outcome;
use crate::trace::run_log::RunLog;

/// A call's progress notifications: the client's token and the count so
/// far, sent under one lock so that the count only grows on the wire.
pub struct Progress {
    token: Value,
    out: Arc<dyn Out>,
    sent: Mutex<u64>,
}

impl Progress {
    pub fn new(token: Value, out: Arc<dyn Out>) -> Arc<Progress> {
        Arc::new(Progress {
            token,
            out,
            sent: Mutex::new(0),
        })
    }

    /// `notifications/progress` saying `message`.
    pub fn say(&self, message: &str) {
        let mut n = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        *n += 1;
        self.out.send(&json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": self.token, "progress": *n, "message": message},
        }));
    }

    /// What the client is told of `step`.
    fn step(&self, step: Step) {
        let line = match step {
            Step::Started(p) if p.depth == 0 => format!("{} started", p.agent),
            Step::Started(p) => format!("sub-agent {} started", p.path),
            Step::Ended(p, _) if p.depth == 0 => return,
            Step::Ended(p, false) => format!("sub-agent {} finished", p.path),
            Step::Ended(p, true) => format!("sub-agent {} failed", p.path),
            Step::Turn(p, turn) => format!("{}: turn {turn}", p.path),
            Step::Tool(p, name) => format!("{}: tool {name}", p.path),
        };
        self.say(&line);
    }
}

/// Runs `tool`'s agent with `args`, its spans under `parent`; the call's
/// result.
pub fn run(
    shared: &Shared,
    tool: &Tool,
    args: &Arguments,
    cancel: &Cancel,
    progress: Option<Arc<Progress>>,
    parent: Option<crate::trace::telemetry::SpanContext>,
) -> Value {
    let started = Instant::now();
    let log = RunLog::start(&tool.name, shared.settings.run_log);
    log.settings(shared.global.run_log);
    let catalog = shared.files.current();
    let (resolved, deadline) = match prepare(shared, &catalog, tool, args, started) {
        Ok(p) => p,
        // Refused before any run: no record, as `axe serve` keeps none.
        Err(e) => return failed(&e, &Totals::default()),
    };
    log.model(&resolved.model.to_string());
    let mut ledger = Ledger::new().joined(parent);
    if let Some(p) = &progress {
        let p = p.clone();
        ledger = ledger.watched(Watch(Arc::new(move |s: Step| p.step(s))));
    }
    let ledger = Arc::new(ledger);
    log.ledger(&ledger, None, &shared.cwd);
    let setup = top::Setup {
        global: &shared.global,
        catalog: &catalog,
        cwd: &shared.cwd,
        verbose: Verbose::new(false),
        retries: shared.settings.retries,
        max_tokens: shared.settings.max_tokens,
        max_turns: None,
        max_cost: shared.settings.max_cost,
        // Streamed from the provider, so that a cancel is seen at the next
        // piece (design §12.3); the answer is wanted whole.
        stream: true,
        whole: true,
        text: TextSink::To(Arc::new(|_: &str, _: bool| {})),
        cancel: cancel.clone(),
    };
    let message = args.message();
    let outcome = top::ctx(setup, &tool.name, &resolved, deadline, ledger.clone())
        .and_then(|ctx| run::run_agent(&resolved, &message, &args.task, &ctx));
    let usage = ledger::totals(&ledger.usage());
    if let Some(p) = &progress {
        p.say(if outcome.is_ok() { "done" } else { "failed" });
    }
    let (result, logged) = match outcome {
        Ok(o) => {
            log.answer(&o.content);
            (answered(tool, &o, &usage, &ledger.run_id), Ok(()))
        }
        Err(e) => (failed(&e, &usage), Err(e)),
    };
    log.finish(&logged);
    result
}

/// The agent of `tool`, resolved, its templates filled from `args`, with
/// its deadline from `started`.
fn prepare(
    shared: &Shared,
    catalog: &crate::agent::Catalog,
    tool: &Tool,
    args: &Arguments,
    started: Instant,
) -> Result<(Resolved, Deadline), Error> {
    let agent: Agent = (*catalog.agent(&tool.name)?).clone();
    for w in &agent.warnings {
        crate::io::stderr::warn_once(w);
    }
    let secs = top::timeout(
        shared.settings.timeout,
        agent.config.timeout,
        crate::deadline::DEFAULT_TIMEOUT_SECS,
    );
    let deadline = Deadline::since(started, secs);
    let resolved = resolve::resolve(
        agent,
        &Overrides::default(),
        &shared.global,
        &shared.cwd,
        &deadline,
    )?;
    if args.vars.is_empty() {
        return Ok((resolved, deadline));
    }
    let vars = Vars {
        global: None,
        own: args.vars.clone(),
    };
    let filled = Prompts::of(&resolved).fill(&resolved, &vars)?;
    Ok((filled.unwrap_or(resolved), deadline))
}

/// The tree's usage, as the result's `_meta` carries it.
fn usage_meta(usage: &Totals, run_id: Option<&str>) -> Value {
    let mut u = json!({
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "total_cost_usd": usage.cost,
    });
    if let Some(id) = run_id {
        u["run_id"] = json!(id);
    }
    json!({"axe/usage": u})
}

/// The result of a run that answered: its text, and for a tool with an
/// output schema the checked answer as `structuredContent`.
fn answered(tool: &Tool, o: &Outcome, usage: &Totals, run_id: &str) -> Value {
    let mut meta = usage_meta(usage, Some(run_id));
    if let Some(what) = o.incomplete() {
        meta["axe/incomplete"] = json!(what);
    }
    let mut r = json!({
        "content": [{"type": "text", "text": o.content}],
        "isError": false,
        "_meta": meta,
    });
    if tool.output.is_some()
        && let Some(out) = o.output.as_ref().filter(|v| v.is_object())
    {
        r["structuredContent"] = out.clone();
    }
    r
}

/// The result of a run that failed: axe's one-line error.
pub fn failed(e: &Error, usage: &Totals) -> Value {
    error_result(&e.one_line(), usage_meta(usage, None))
}

/// An error result saying `text`.
pub fn error_result(text: &str, meta: Value) -> Value {
    json!({
        "content": [{"type": "text", "text": text}],
        "isError": true,
        "_meta": meta,
    })
}
