//! The run's ledger: what one `axe run` shares across its whole delegation
//! tree: the trace (`--trace FILE`, JSON Lines), usage per agent (the
//! `--json` totals and the `--verbose` summary), the token and turn
//! budgets, and the list of agents running now (what the live progress
//! view draws).
//!
//! Every agent run in the tree has a [`Place`]: its name, its depth and a
//! path such as `lead/researcher#2` (the second `researcher` call made by
//! `lead`). The conversation loop reports to the [`Ledger`] through
//! `Ledger::event` (a `TraceEvent`, whose line `event.rs`
//! writes) and the `record_*` methods; all of them may be called from
//! parallel sub-agents at once.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cost::Cost;
use crate::deadline::{Deadline, millis};
use crate::error::Exceeded;
use crate::trace::event::{Ending, TraceEvent};
use crate::trace::writer::Trace;

mod place;
mod tools;
mod totals;

pub use place::Place;
pub use tools::{DETAIL_OUTPUT_BYTES, RunningTool, ToolDetail, ToolRunning};
pub use totals::{Totals, totals};

/// Usage of one agent, summed over every time it ran in the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentUsage {
    pub name: String,
    /// Times it was run (the top-level agent: 1).
    pub calls: u64,
    /// Requests it sent.
    pub turns: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `output_tokens`, those the model spent reasoning (design §4.15).
    pub reasoning_tokens: u64,
    /// Of `input_tokens`, those read from a prompt cache.
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to a prompt cache.
    pub cache_creation_input_tokens: u64,
    /// What its responses cost in USD; `null` when one had no price
    /// (design §7.8).
    pub cost_usd: Cost,
    /// Wall-clock time of its runs, summed (parallel runs overlap).
    pub duration_ms: u64,
    /// Runs that ended in an error.
    pub errors: u64,
}

/// An agent running now, for the progress view.
#[derive(Debug, Clone)]
pub struct Running {
    pub place: Place,
    pub turn: u32,
    pub started: Instant,
}

/// A bound on the whole tree below (and including) one agent run: at most
/// `max_tokens` tokens (input plus output; output only when
/// `output_only`), `max_turns` requests and `max_cost` picodollars.
#[derive(Debug, Default)]
pub struct Budget {
    pub max_tokens: Option<u64>,
    pub max_turns: Option<u64>,
    /// In picodollars (design §7.8).
    pub max_cost: Option<u64>,
    /// Only the tokens generated count: a served request's
    /// `max_completion_tokens` (design §12.2).
    pub output_only: bool,
    tokens: AtomicU64,
    turns: AtomicU64,
    cost: AtomicU64,
}

/// What the whole tree of one run shares.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Identifies this run in the trace and in `--json`.
    pub run_id: String,
    /// Shared by the ledgers of a batch's inputs (design §11.2).
    trace: Option<Arc<Trace>>,
    /// Whether trace events carry message bodies (`--trace-bodies`).
    bodies: bool,
    /// In order of first run; the top-level agent first.
    usage: Mutex<Vec<AgentUsage>>,
    running: Mutex<Vec<Running>>,
    /// Built-in tool calls: those running, and those ended.
    tools: tools::ToolLog,
    /// Tool calls started by every agent of the tree (the run log's count).
    tool_calls: AtomicU64,
    /// Told of each agent's start, turn and end, and each tool's start
    /// (`axe mcp serve`'s progress notifications, design §9.7).
    watch: Option<Watch>,
    /// The run's OpenTelemetry spans, when they are exported (design
    /// §7.9): a second reader of every event.
    spans: Option<crate::trace::telemetry::RunSpans>,
}

/// A step of the tree, as a [`Watch`] is told of it.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// An agent run started.
    Started(&'a Place),
    /// An agent run sends its request number `turn`.
    Turn(&'a Place, u32),
    /// An agent run ended, in an error or not.
    Ended(&'a Place, bool),
    /// A built-in tool call of the agent at `place` starts.
    Tool(&'a Place, &'a str),
}

/// Who is told of each [`Step`] of a tree: called on the thread of the
/// agent that took it, so it must not wait long.
#[derive(Clone)]
pub struct Watch(pub Arc<dyn Fn(Step) + Send + Sync>);

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

impl Budget {
    pub fn new(max_tokens: Option<u64>, max_turns: Option<u64>) -> Budget {
        Budget {
            max_tokens,
            max_turns,
            ..Budget::default()
        }
    }

    /// This budget, bounding the money spent too: `max_cost` picodollars.
    #[must_use]
    pub fn costing(mut self, max_cost: Option<u64>) -> Budget {
        self.max_cost = max_cost;
        self
    }

    /// At most `max` tokens generated by the tree (its output tokens).
    pub fn output(max: u64) -> Budget {
        Budget {
            max_tokens: Some(max),
            output_only: true,
            ..Budget::default()
        }
    }

    /// Whether one more request fits: no tokens left (the tokens a request
    /// will use are not known before it is sent), or no turns left, is the
    /// error. Called under [`TAKING`].
    fn check_turn(&self) -> Result<(), Exceeded> {
        if let Some(max) = self.max_tokens {
            let used = self.tokens.load(Ordering::Acquire);
            if used >= max && self.output_only {
                return Err(Exceeded::OutputTokens { used, max });
            }
            if used >= max {
                return Err(Exceeded::Tokens { used, max });
            }
        }
        if let Some(max) = self.max_turns {
            let used = self.turns.load(Ordering::Acquire);
            if used >= max {
                return Err(Exceeded::Turns { used, max });
            }
        }
        if let Some(max) = self.max_cost {
            let used = self.cost.load(Ordering::Acquire);
            if used >= max {
                return Err(Exceeded::Cost { used, max });
            }
        }
        Ok(())
    }

    fn spend(&self, tokens: u64, cost: u64) {
        // Saturating: a server's count near u64::MAX must not wrap to a
        // small number and reopen the budget.
        let add = |n: u64| move |t: u64| Some(t.saturating_add(n));
        let _ = self
            .tokens
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, add(tokens));
        if self.max_cost.is_some() {
            let _ = self
                .cost
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, add(cost));
        }
    }
}

/// Held while a turn is checked and taken from a chain of budgets, so that
/// no one sees a turn taken that is then given back (a sibling refused by a
/// budget of its own must not make another fail on a budget they share).
/// Taking is a few loads and adds, once per request.
static TAKING: Mutex<()> = Mutex::new(());

/// Takes one request from every budget that bounds this agent (its own and
/// its ancestors'), checking them all first; the first spent one is the
/// error, and then nothing is taken.
pub fn take_turn(budgets: &[Arc<Budget>]) -> Result<(), Exceeded> {
    let _taking = TAKING.lock().unwrap_or_else(PoisonError::into_inner);
    for b in budgets {
        b.check_turn()?;
    }
    for b in budgets {
        b.turns.fetch_add(1, Ordering::AcqRel);
    }
    Ok(())
}

/// Charges a response's `input` and `output` tokens and its cost (in
/// picodollars) to every budget that bounds this agent (the output alone to
/// one that counts only those).
pub fn spend_tokens(budgets: &[Arc<Budget>], input: u64, output: u64, cost: u64) {
    for b in budgets {
        let tokens = if b.output_only {
            output
        } else {
            input.saturating_add(output)
        };
        b.spend(tokens, cost);
    }
}

impl Ledger {
    /// A tree that traces nothing (the library's and the tests' default).
    pub fn new() -> Ledger {
        let run_id = new_run_id();
        Ledger {
            spans: crate::trace::telemetry::run_spans(&run_id, None),
            run_id,
            ..Ledger::default()
        }
    }

    /// A tree tracing to `path` (design §7.2): a regular file is appended
    /// to (created 0600 when missing), so one file can collect many runs,
    /// told apart by `run_id`; a pipe or a terminal is written through a
    /// queue that never holds the run. A FIFO's reader is waited for a
    /// short while, never past `deadline`. With `bodies`, requests and
    /// responses carry their messages.
    pub fn with_trace(path: &Path, bodies: bool, deadline: &Deadline) -> std::io::Result<Ledger> {
        let patience = deadline.left().min(crate::trace::writer::READER_PATIENCE);
        Ok(Ledger {
            trace: Some(Arc::new(Trace::open(path, patience)?)),
            bodies,
            ..Ledger::new()
        })
    }

    /// A ledger of its own for another run, with a new run id, writing to
    /// the same trace: one input of a batch (design §11.2).
    pub fn sibling(&self) -> Ledger {
        Ledger {
            trace: self.trace.clone(),
            bodies: self.bodies,
            ..Ledger::new()
        }
        .joined(self.spans.as_ref().and_then(|s| s.parent()))
    }

    /// Writes `event` of the agent run at `place`, on its turn `turn`, as
    /// one whole line ([`TraceEvent::line`]), so that lines from parallel
    /// sub-agents never interleave. Nothing is built when nothing is traced.
    pub(crate) fn event(&self, place: &Place, turn: u32, event: TraceEvent) {
        if let TraceEvent::ToolCall { .. } = event {
            self.tool_calls.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(trace) = self.trace.as_ref().filter(|t| t.working()) {
            trace.write(event.line(&self.run_id, place, turn, self.bodies));
        }
        if let Some(spans) = &self.spans {
            spans.event(place, &event);
        }
    }

    /// This run's spans under `parent`, another process's span (a
    /// `TRACEPARENT`, a served request's `traceparent`; design §7.9).
    #[must_use]
    pub fn joined(mut self, parent: Option<crate::trace::telemetry::SpanContext>) -> Ledger {
        self.spans = crate::trace::telemetry::run_spans(&self.run_id, parent);
        self
    }

    /// The `traceparent` the request of the agent run at `place` carries:
    /// its chat span's, when spans are exported (design §7.9).
    pub(crate) fn traceparent(
        &self,
        place: &Place,
    ) -> Option<[u8; crate::trace::telemetry::context::TRACEPARENT_LEN]> {
        self.spans.as_ref()?.traceparent(place)
    }

    /// The run's spans, when they are exported.
    pub(crate) fn spans(&self) -> Option<&crate::trace::telemetry::RunSpans> {
        self.spans.as_ref()
    }

    /// This ledger, its steps told to `watch` as they come.
    #[must_use]
    pub fn watched(mut self, watch: Watch) -> Ledger {
        self.watch = Some(watch);
        self
    }

    /// Tells the watch, if any, of `step`.
    pub(crate) fn step(&self, step: Step) {
        if let Some(w) = &self.watch {
            (w.0)(step);
        }
    }

    /// Whether the trace goes to a terminal.
    pub fn trace_on_terminal(&self) -> bool {
        self.trace.as_deref().is_some_and(Trace::on_terminal)
    }

    /// Waits (a while) until the trace's lines are written: before the
    /// answer, which may go to the same pipe, and before the process ends.
    pub fn flush_trace(&self) {
        if let Some(trace) = &self.trace {
            trace.flush();
        }
    }

    /// The run was interrupted (`why`: `interrupted`, `terminated`): every
    /// agent still running gets its `run_end`, deepest first, with `ok:
    /// false` and the reason, so that the trace says how it ended.
    pub fn interrupt(&self, why: &str) {
        let mut running = self.running();
        running.sort_by_key(|r| std::cmp::Reverse(r.place.depth));
        for r in running {
            let totals = (r.place.depth == 0).then(|| totals(&self.usage()));
            let end = TraceEvent::RunEnd {
                took: r.started.elapsed(),
                end: Ending::Interrupted(why),
                totals,
            };
            self.event(&r.place, r.turn, end);
        }
        self.flush_trace();
    }

    /// An agent run started.
    pub fn record_start(&self, place: &Place) {
        self.with_usage(&place.agent, |u| u.calls += 1);
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Running {
                place: place.clone(),
                turn: 0,
                started: Instant::now(),
            });
        self.step(Step::Started(place));
    }

    /// An agent run is sending request number `turn`.
    pub fn record_turn(&self, place: &Place, turn: u32) {
        self.with_usage(&place.agent, |u| u.turns += 1);
        // The same place (not one with the same path: two served requests
        // to one agent are two runs at one path), newest first: from the
        // oldest, N = 256 took 27 k compares.
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = running.iter_mut().rfind(|r| r.place.is(place)) {
            r.turn = turn;
        }
        drop(running);
        self.step(Step::Turn(place, turn));
    }

    /// A response arrived and billed these tokens (the cache reads and
    /// writes among them counted in its input too).
    pub fn record_tokens(&self, place: &Place, billed: Totals) {
        self.with_usage(&place.agent, |u| {
            u.input_tokens = u.input_tokens.saturating_add(billed.input_tokens);
            u.output_tokens = u.output_tokens.saturating_add(billed.output_tokens);
            u.reasoning_tokens = u.reasoning_tokens.saturating_add(billed.reasoning_tokens);
            u.cache_read_input_tokens = u
                .cache_read_input_tokens
                .saturating_add(billed.cache_read_input_tokens);
            u.cache_creation_input_tokens = u
                .cache_creation_input_tokens
                .saturating_add(billed.cache_creation_input_tokens);
            u.cost_usd = u.cost_usd.plus(billed.cost);
        });
    }

    /// An agent run ended, after `took`, in an error or not.
    pub fn record_end(&self, place: &Place, took: Duration, failed: bool) {
        let ms = millis(took);
        self.with_usage(&place.agent, |u| {
            u.duration_ms = u.duration_ms.saturating_add(ms);
            u.errors += u64::from(failed);
        });
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        // Swapped out, not removed: the list's order means nothing (the
        // views sort it), and a removal moved every entry after it, which
        // in a 256-way fan-out was 0.5-1.4 M instructions (callgrind).
        // Found by identity, a pointer's compare: by path, a fan-out's
        // 256 ends compared ~10 k paths byte by byte (callgrind).
        if let Some(i) = running.iter().position(|r| r.place.is(place)) {
            running.swap_remove(i);
        }
        drop(running);
        self.step(Step::Ended(place, failed));
    }

    /// Tool calls started so far by every agent of the tree.
    pub fn tool_calls(&self) -> u64 {
        self.tool_calls.load(Ordering::Relaxed)
    }

    /// Usage per agent, in order of first run.
    pub fn usage(&self) -> Vec<AgentUsage> {
        self.usage
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The agent runs going on now, in no order (a run that ends is
    /// swapped out; the views sort them).
    pub fn running(&self) -> Vec<Running> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn with_usage(&self, agent: &str, f: impl FnOnce(&mut AgentUsage)) {
        let mut usage = self.usage.lock().unwrap_or_else(PoisonError::into_inner);
        let i = match usage.iter().position(|u| u.name == agent) {
            Some(i) => i,
            None => {
                usage.push(AgentUsage {
                    name: agent.to_string(),
                    ..AgentUsage::default()
                });
                usage.len() - 1
            }
        };
        f(&mut usage[i]);
    }
}

/// Counts the calls a place makes to each sub-agent, to number their paths.
#[derive(Debug, Default)]
pub struct Children(Mutex<BTreeMap<String, u32>>);

impl Children {
    /// The number (from 1) of the next call to `name`.
    pub fn next(&self, name: &str) -> u32 {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let n = seen.entry(name.to_string()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }
}

/// A run id: 16 random hex digits.
fn new_run_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

#[cfg(test)]
mod tests;
