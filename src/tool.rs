//! The tools a model can call, and running them: the `call_agent` definition
//! (the sub-agents spec, Req 6.1–6.4), its execution with every check in the
//! spec's order (Req 7.3–7.5, 13.1–13.3), dispatch by tool name (Req 8.2),
//! and the fan-out that runs the calls of one response at the same time on a
//! rayon pool sized for them (DECISIONS D4).
//!
//! A sub-agent runs through [`crate::run::run_agent`], the same path as the
//! top-level run (Constraint 9); only its inputs differ: its own agent file,
//! no command-line overrides, the `Task: ...` message, one level deeper, and
//! a deadline no later than its parent's (D5).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use crate::agent;
use crate::error::Error;
use crate::provider::{ErrorKind, ModelRef, Tool, ToolCall, ToolParameter, ToolResult};
use crate::resolve::{self, Overrides};
use crate::run::{self, Ctx, millis};
use crate::tree::Children;

/// The name of the one tool axe injects (Req 6.2).
pub const CALL_AGENT: &str = "call_agent";

/// The most calls of one response that run at the same time; more wait for
/// a free thread. Far above what a model sends in practice, it only bounds
/// the threads (and provider connections) a runaway response can open.
pub const MAX_PARALLEL_CALLS: usize = 256;

/// How many characters of a task the `--verbose` line shows (Req 7.5).
const TASK_PREVIEW_CHARS: usize = 80;

/// The agent whose model made the tool calls: what it may call, and how.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// Its `sub_agents` list.
    pub allowed_agents: &'a [String],
    /// Its `sub_agents_config.parallel`.
    pub parallel: bool,
    /// Its `sub_agents_config.max_parallel`: calls of one response in flight
    /// at once (`usize::MAX`: no limit beyond [`MAX_PARALLEL_CALLS`]).
    pub max_parallel: usize,
    /// Its `sub_agents_config.max_result_chars`: a longer answer is cut.
    pub max_result_chars: usize,
    /// Its `sub_agents_config.timeout`, seconds per call; 0 means its own deadline.
    pub timeout_secs: u64,
    /// Where it runs: its depth, deadline, config, verbosity and tree.
    pub ctx: &'a Ctx<'a>,
    /// The calls it has made to each sub-agent, to number their paths.
    pub children: &'a Children,
    /// The turn whose response made these calls.
    pub turn: u32,
}

/// A one-shot gate: [`Gate::wait`] blocks until [`Gate::open`].
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.cv.notify_all();
    }

    fn wait(&self) {
        let open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let _open = self
            .cv
            .wait_while(open, |open| !*open)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

/// Counts one finished call when dropped, and opens `gate` at the last.
struct Countdown<'a> {
    done: &'a AtomicUsize,
    of: usize,
    gate: &'a Gate,
}

impl Drop for Countdown<'_> {
    fn drop(&mut self) {
        if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.of {
            self.gate.open();
        }
    }
}

/// The `call_agent` tool definition for an agent that may call `allowed`
/// (Req 6.3). The names are in both descriptions and, as a JSON Schema
/// `enum`, in the `agent` parameter (D19).
pub fn call_agent_tool(allowed: &[String]) -> Tool {
    let names = allowed.join(", ");
    let mut unique: Vec<String> = Vec::with_capacity(allowed.len());
    for name in allowed {
        if !unique.contains(name) {
            unique.push(name.clone());
        }
    }
    let param = |description: String, required: bool, allowed: Vec<String>| ToolParameter {
        kind: "string".into(),
        description,
        required,
        allowed,
    };
    Tool {
        name: CALL_AGENT.into(),
        description: format!(
            "Delegate a task to a sub-agent. The sub-agent runs independently with its own \
             context and returns only its final result. Available agents: {names}"
        ),
        parameters: [
            (
                "agent".to_string(),
                param(
                    format!("Name of the sub-agent to invoke (must be one of: {names})"),
                    true,
                    unique,
                ),
            ),
            (
                "task".to_string(),
                param("What you need the sub-agent to do".into(), true, Vec::new()),
            ),
            (
                "context".to_string(),
                param(
                    "Additional context from your conversation to pass along".into(),
                    false,
                    Vec::new(),
                ),
            ),
        ]
        .into_iter()
        .collect(),
    }
}

/// Runs the tool calls of one response and returns one result per call, in
/// call order: at the same time when the caller is `parallel` and there is
/// more than one call, else one after another (Req 8.2, 11.1–11.5).
///
/// Sub-agent paths are numbered here, in call order, before any call runs,
/// so a trace names the same call the same way whatever finishes first.
pub fn execute(calls: &[ToolCall], caller: &Caller) -> Vec<ToolResult> {
    let seqs: Vec<u32> = calls.iter().map(|c| next_seq(c, caller)).collect();
    let threads = caller.max_parallel.clamp(1, MAX_PARALLEL_CALLS);
    fan_out(calls, caller.parallel, threads, |i, call| {
        dispatch_numbered(call, caller, seqs.get(i).copied().unwrap_or(0))
    })
}

/// Runs one tool call by its name (Req 8.2).
pub fn dispatch(call: &ToolCall, caller: &Caller) -> ToolResult {
    dispatch_numbered(call, caller, next_seq(call, caller))
}

/// The number of this call among the caller's calls to the same agent.
fn next_seq(call: &ToolCall, caller: &Caller) -> u32 {
    caller.children.next(argument(call, "agent"))
}

/// The call's argument `key`, trimmed; empty when absent.
fn argument<'c>(call: &'c ToolCall, key: &str) -> &'c str {
    call.arguments.get(key).map_or("", |v| v.trim())
}

fn dispatch_numbered(call: &ToolCall, caller: &Caller, seq: u32) -> ToolResult {
    let ctx = caller.ctx;
    let agent = argument(call, "agent");
    let args_chars: usize = call.arguments.values().map(|v| v.chars().count()).sum();
    let mut fields = serde_json::json!({
        "call_id": call.id,
        "tool": call.name,
        "agent_called": agent,
        "chars": args_chars,
    });
    if ctx.tree.bodies() {
        fields["arguments"] = serde_json::json!(call.arguments);
    }
    ctx.tree.event("tool_call", &ctx.node, caller.turn, fields);
    let started = Instant::now();
    let result = match call.name.as_str() {
        CALL_AGENT => call_agent_numbered(call, caller, seq),
        _ => error_result(call, format!("Unknown tool: \"{}\"", call.name)),
    };
    let mut fields = serde_json::json!({
        "call_id": call.id,
        "tool": call.name,
        "agent_called": agent,
        "is_error": result.is_error,
        "chars": result.content.chars().count(),
        "duration_ms": millis(started.elapsed()),
    });
    if ctx.tree.bodies() {
        fields["content"] = result.content.clone().into();
    }
    ctx.tree
        .event("tool_result", &ctx.node, caller.turn, fields);
    result
}

/// Runs `run` for every call and collects the results in call order. With
/// `parallel` and more than one call, the calls run on a rayon pool built
/// for this fan-out with one thread per call (at most `max_threads`; a
/// thread that finishes takes the next waiting call); a single call runs on
/// the current thread. A panic in one call becomes that call's error result;
/// its siblings and the caller go on (D4, Req 13.1).
///
/// Every worker is handed its work by [`rayon::ThreadPool::broadcast`] and
/// takes calls by index from a shared counter, so no job ever sits in a
/// rayon queue. That matters twice. Stealing 256 jobs out of one deque
/// costs 256 threads × 256 deques of probes, each pinning crossbeam's epoch
/// (measured: half of axe's CPU at N = 256, and the last sub-agent request
/// left 170 ms after the first). And a worker that waits for a nested
/// fan-out inside rayon would run a queued sibling call meanwhile, then
/// finish its own call only when the sibling does; with no queued jobs it
/// has nothing to pick up.
pub fn fan_out<F>(calls: &[ToolCall], parallel: bool, max_threads: usize, run: F) -> Vec<ToolResult>
where
    F: Fn(usize, &ToolCall) -> ToolResult + Sync,
{
    fan_out_spawning(calls, parallel, max_threads, usize::MAX, run)
}

/// [`fan_out`], with at most `spawnable` threads startable per pool (the
/// tests' stand-in for a machine out of threads).
fn fan_out_spawning<F>(
    calls: &[ToolCall],
    parallel: bool,
    max_threads: usize,
    spawnable: usize,
    run: F,
) -> Vec<ToolResult>
where
    F: Fn(usize, &ToolCall) -> ToolResult + Sync,
{
    let guarded = |i: usize, call: &ToolCall| {
        catch_unwind(AssertUnwindSafe(|| run(i, call)))
            .unwrap_or_else(|p| panicked(call, p.as_ref()))
    };
    let in_order = || {
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| guarded(i, c))
            .collect()
    };
    if !parallel || calls.len() < 2 {
        return in_order();
    }
    // Fewer threads than wanted (a machine short of them) still beats one
    // call at a time: try again with as many as could be started.
    let mut threads = calls.len().min(max_threads.max(1));
    let slots = loop {
        if threads < 2 {
            return in_order();
        }
        match on_pool(calls, threads, spawnable, &guarded) {
            Ok(slots) => break slots,
            Err(started) => threads = started.min(threads - 1),
        }
    };
    calls
        .iter()
        .zip(slots)
        .map(|(call, slot)| {
            slot.into_inner()
                .unwrap_or_else(|| panicked(call, &"the call returned no result"))
        })
        .collect()
}

/// Runs `calls` on a pool of `threads` workers, at most `spawnable` of which
/// can be started (the tests' stand-in for a machine out of threads). On
/// failure, returns how many threads did start.
fn on_pool<G>(
    calls: &[ToolCall],
    threads: usize,
    spawnable: usize,
    guarded: &G,
) -> Result<Vec<OnceLock<ToolResult>>, usize>
where
    G: Fn(usize, &ToolCall) -> ToolResult + Sync,
{
    // rayon's workers look for work while they have none, each probing every
    // other worker's queue: with hundreds of workers on a few cores that
    // spinning, not the calls, takes most of the CPU (measured at N = 256:
    // 489 ms of CPU and 14,561 context switches, against 193 ms and 1,098
    // for the same calls on plain threads). So no worker is idle in rayon
    // here: each waits at `start` until its call is ready for it, and one
    // whose calls are done waits at `finished` until all are.
    let start = Arc::new(Gate::default());
    let finished = Gate::default();
    let start_handler = start.clone();
    let spawned = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .start_handler(move |_| start_handler.wait())
            .spawn_handler(|thread| {
                if spawned.load(Ordering::Relaxed) >= spawnable {
                    return Err(std::io::Error::other("no more threads"));
                }
                std::thread::Builder::new()
                    .name(format!("axe-call-{}", thread.index()))
                    .spawn_scoped(scope, || thread.run())?;
                spawned.fetch_add(1, Ordering::Relaxed);
                Ok(())
            })
            .build();
        let Ok(pool) = built else {
            // rayon has terminated the half-built pool; the threads it did
            // start are waiting at the gate. Let them go, so that they see
            // the termination and end, and this scope can join them.
            start.open();
            return Err(spawned.load(Ordering::Relaxed));
        };
        let slots: Vec<OnceLock<ToolResult>> = calls.iter().map(|_| OnceLock::new()).collect();
        let next = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        let run_all = || {
            pool.broadcast(|_| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let (Some(call), Some(slot)) = (calls.get(i), slots.get(i)) else {
                        break;
                    };
                    // Counted even if this unwinds, so `finished` always opens.
                    let _counted = Countdown {
                        done: &done,
                        of: calls.len(),
                        gate: &finished,
                    };
                    let _ = slot.set(guarded(i, call));
                }
                finished.wait();
            });
        };
        start.open();
        // Inside a sub-agent this thread is a worker of its parent's pool,
        // and rayon would keep it polling that pool for work while it
        // waits (measured: 190 ms of CPU for 128 x 2 nested calls, against
        // 60 ms on plain threads). A plain thread's join sleeps instead.
        if rayon::current_thread_index().is_some() {
            std::thread::scope(|inner| {
                match std::thread::Builder::new().spawn_scoped(inner, run_all) {
                    Ok(handle) => {
                        let _ = handle.join();
                    }
                    Err(_) => run_all(),
                }
            });
        } else {
            run_all();
        }
        // Ends the workers, which the scope then joins: no thread outlives
        // its fan-out.
        drop(pool);
        Ok(slots)
    })
}

/// Executes one `call_agent` call: checks its arguments, the allowed names
/// and the depth, in the spec's order (Req 7.3), then runs the sub-agent one
/// level down. Every failure is an error result, never an error (Req 7.1).
pub fn execute_call_agent(call: &ToolCall, caller: &Caller) -> ToolResult {
    call_agent_numbered(call, caller, next_seq(call, caller))
}

/// [`execute_call_agent`] as the caller's `seq`-th call to this agent.
fn call_agent_numbered(call: &ToolCall, caller: &Caller, seq: u32) -> ToolResult {
    let ctx = caller.ctx;
    let (name, task, context) = (
        argument(call, "agent"),
        argument(call, "task"),
        argument(call, "context"),
    );
    let refused = |message: String| {
        ctx.verbose
            .line(&format!("[sub-agent] \"{name}\" failed: {message}"));
        error_result(call, message)
    };
    if name.is_empty() {
        return refused("call_agent error: \"agent\" argument is required".into());
    }
    if task.is_empty() {
        return refused("call_agent error: \"task\" argument is required".into());
    }
    if !caller.allowed_agents.iter().any(|a| a == name) {
        return refused(format!(
            "call_agent error: agent \"{name}\" is not in this agent's sub_agents list"
        ));
    }
    if ctx.depth >= ctx.max_depth {
        return refused(format!(
            "call_agent error: maximum sub-agent depth ({}) reached",
            ctx.max_depth
        ));
    }

    let depth = ctx.depth + 1;
    ctx.verbose.line(&format!(
        "[sub-agent] Calling \"{name}\" (depth {depth}) with task: {}",
        preview(task)
    ));
    let started = Instant::now();
    let message = if context.is_empty() {
        format!("Task: {task}")
    } else {
        format!("Task: {task}\n\nContext:\n{context}")
    };
    match run_sub_agent(name, &message, caller, seq) {
        Ok(outcome) => {
            let mut content = truncate_result(outcome.content.clone(), caller.max_result_chars);
            // The parent's model must know an answer is not whole.
            if let Some(what) = outcome.incomplete() {
                content.push_str(&format!("\n[incomplete: {what}]"));
            }
            ctx.verbose.line(&format!(
                "[sub-agent] \"{name}\" completed in {}ms ({} chars returned)",
                started.elapsed().as_millis(),
                content.chars().count()
            ));
            ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content,
                is_error: false,
            }
        }
        Err(SubAgentError::Refused(message)) => refused(message),
        Err(SubAgentError::Failed(description)) => {
            let description = description.trim_end_matches('.');
            ctx.verbose
                .line(&format!("[sub-agent] \"{name}\" failed: {description}"));
            error_result(call, sub_agent_failed(name, description))
        }
    }
}

/// Why a sub-agent gave no answer.
enum SubAgentError {
    /// It could not be started: the whole `call_agent error: ...` text.
    Refused(String),
    /// It started and failed: what went wrong, for `Error: sub-agent ...`.
    Failed(String),
}

/// Steps 6–15 of Req 7.3: load, resolve and run the sub-agent `name` with
/// the user message `message`, within the caller's deadline narrowed by its
/// per-call timeout (D5), which starts now, before any file is read.
fn run_sub_agent(
    name: &str,
    message: &str,
    caller: &Caller,
    seq: u32,
) -> Result<run::Outcome, SubAgentError> {
    let ctx = caller.ctx;
    let deadline = ctx.deadline.narrowed(caller.timeout_secs);
    let timed_out = || SubAgentError::Failed(format!("timeout after {}s", deadline.secs));
    let loaded = agent::load_in(ctx.config_dir, name).map_err(|e| {
        SubAgentError::Refused(format!(
            "call_agent error: failed to load agent \"{name}\": {e}"
        ))
    })?;
    for w in &loaded.warnings {
        crate::stderr::warn_once(w);
    }
    if let Err(e) = ModelRef::parse(&loaded.config.model) {
        return Err(SubAgentError::Refused(format!(
            "call_agent error: invalid model for agent \"{name}\": {e}"
        )));
    }

    // Its own workdir, skill and files; never the parent's overrides (D7).
    let resolved =
        resolve::resolve(loaded, &Overrides::default(), ctx.cwd, &deadline).map_err(|e| {
            if deadline.passed() {
                timed_out()
            } else {
                SubAgentError::Failed(e.to_string())
            }
        })?;
    let sub_ctx = Ctx {
        depth: ctx.depth + 1,
        deadline,
        verbose: ctx.verbose.nested(name, ctx.depth + 1),
        node: ctx.node.child(name, seq),
        ..ctx.clone()
    };
    run::run_agent(&resolved, message, &sub_ctx)
        .map_err(|err| SubAgentError::Failed(describe(&err)))
}

/// What went wrong in a sub-agent, for its error result: a timeout reads
/// exactly `timeout after <N>s` (D5); anything else is the one-line error.
fn describe(err: &Error) -> String {
    match err {
        Error::Provider(e) if e.kind == ErrorKind::Timeout => e.message.clone(),
        other => other.one_line(),
    }
}

/// `content` cut to at most `max` characters (never inside a character),
/// ending with `[truncated: N of M chars]` so the parent knows; the marker
/// is not counted in `max`.
pub fn truncate_result(content: String, max: usize) -> String {
    let total = content.chars().count();
    if total <= max {
        return content;
    }
    let cut = content
        .char_indices()
        .nth(max)
        .map_or(content.len(), |(i, _)| i);
    format!("{}\n[truncated: {max} of {total} chars]", &content[..cut])
}

/// The result text of a sub-agent that started and failed (Req 13.3).
fn sub_agent_failed(name: &str, description: &str) -> String {
    format!(
        "Error: sub-agent \"{name}\" failed - {description}. You may retry or proceed without this result."
    )
}

/// The results of calls made in a response that was cut off (stop reason
/// `stop_reason`): none is run, since the last may be half-written.
pub fn not_run_cut_off(calls: &[ToolCall], stop_reason: &str) -> Vec<ToolResult> {
    calls
        .iter()
        .map(|call| {
            error_result(
                call,
                format!(
                    "call_agent error: not run: the response that made this call was cut off \
                     (stop reason \"{stop_reason}\"), so the call may be incomplete"
                ),
            )
        })
        .collect()
}

fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content,
        is_error: true,
    }
}

/// The error result of a call that panicked: a bug in axe, reported to the
/// model like any other failure of that one call.
fn panicked(call: &ToolCall, payload: &(dyn Any + Send)) -> ToolResult {
    let what = crate::error::panic_message(payload);
    let what = crate::redact::redact(&crate::text::one_line(&what));
    let content = match call.arguments.get("agent") {
        Some(name) if call.name == CALL_AGENT => {
            sub_agent_failed(name.trim(), &format!("internal error in axe: {what}"))
        }
        _ => format!(
            "Error: tool \"{}\" failed - internal error in axe: {what}",
            call.name
        ),
    };
    error_result(call, content)
}

/// The first [`TASK_PREVIEW_CHARS`] characters of a task on one line, with
/// `...` when it was cut.
fn preview(task: &str) -> String {
    crate::text::clip(&crate::text::one_line(task), TASK_PREVIEW_CHARS, "...")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, agent: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: CALL_AGENT.into(),
            arguments: [("agent".to_string(), agent.to_string())]
                .into_iter()
                .collect(),
            ..ToolCall::default()
        }
    }

    #[test]
    fn fan_out_keeps_call_order_and_turns_a_panic_into_that_calls_error() {
        let calls: Vec<ToolCall> = (0..6).map(|i| call(&format!("c{i}"), "a")).collect();
        for parallel in [true, false] {
            let results = fan_out(&calls, parallel, 8, |_, c| {
                if c.id == "c3" {
                    panic!("boom in {}", c.id);
                }
                // Later calls finish first when run in parallel.
                let n: u64 = c.id[1..].parse().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(60 - 10 * n));
                ToolResult {
                    call_id: c.id.clone(),
                    content: format!("done {}", c.id),
                    is_error: false,
                    ..ToolResult::default()
                }
            });
            let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
            assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5"]);
            assert!(results[3].is_error);
            assert_eq!(
                results[3].content,
                "Error: sub-agent \"a\" failed - internal error in axe: boom in c3. You may retry or proceed without this result."
            );
            assert_eq!(results[5].content, "done c5");
            assert!(!results[5].is_error);
        }
    }

    #[test]
    fn preview_cuts_at_80_chars_on_one_line() {
        assert_eq!(preview("short\ntask"), "short task");
        let long = "x".repeat(100);
        assert_eq!(preview(&long), format!("{}...", "x".repeat(80)));
    }

    /// A fan-out inside a call (a sub-agent delegating in turn) must not
    /// run a queued sibling of that call on the call's own thread while it
    /// waits (rayon's cross-pool wait would), or the call finishes only when
    /// the sibling does. Three calls on two threads leave one queued.
    #[test]
    fn nested_fan_out_never_runs_a_sibling_on_a_busy_thread() {
        use std::cell::Cell;
        use std::sync::atomic::{AtomicUsize, Ordering};
        thread_local!(static BUSY: Cell<bool> = const { Cell::new(false) });
        let overlaps = AtomicUsize::new(0);
        let enter = || {
            if BUSY.with(|b| b.replace(true)) {
                overlaps.fetch_add(1, Ordering::SeqCst);
            }
        };
        let leave = || BUSY.with(|b| b.set(false));
        let ok = |c: &ToolCall| ToolResult {
            call_id: c.id.clone(),
            content: String::new(),
            is_error: false,
            ..ToolResult::default()
        };
        let outer: Vec<ToolCall> = ["nested", "slow-1", "slow-2"]
            .iter()
            .map(|id| call(id, "a"))
            .collect();
        let inner: Vec<ToolCall> = ["x", "y"].iter().map(|id| call(id, "b")).collect();
        let results = fan_out(&outer, true, 2, |_, c| {
            enter();
            if c.id == "nested" {
                fan_out(&inner, true, 2, |_, i| {
                    std::thread::sleep(std::time::Duration::from_millis(150));
                    ok(i)
                });
            } else {
                std::thread::sleep(std::time::Duration::from_millis(300));
            }
            leave();
            ok(c)
        });
        assert_eq!(results.len(), 3);
        assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    }

    /// A machine out of threads must not hang the fan-out (threads that did
    /// start wait at the start gate): the calls run one after another.
    #[test]
    fn fan_out_without_enough_threads_runs_the_calls_in_order() {
        for spawnable in [0, 1, 3] {
            // On a thread of its own, so that a hang fails the test in
            // bounded time instead of hanging the suite.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let calls: Vec<ToolCall> = (0..5).map(|i| call(&format!("c{i}"), "a")).collect();
                let results = fan_out_spawning(&calls, true, 8, spawnable, |_, c| ToolResult {
                    call_id: c.id.clone(),
                    content: format!("done {}", c.id),
                    is_error: false,
                    ..ToolResult::default()
                });
                let _ = tx.send(results);
            });
            let results = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("the fan-out hung when threads ran out");
            let contents: Vec<&str> = results.iter().map(|r| r.content.as_str()).collect();
            assert_eq!(
                contents,
                ["done c0", "done c1", "done c2", "done c3", "done c4"]
            );
        }
    }

    /// Short of threads, the calls still run side by side on as many as
    /// could be started.
    #[test]
    fn fan_out_short_of_threads_runs_on_as_many_as_started() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls: Vec<ToolCall> = (0..6).map(|i| call(&format!("c{i}"), "a")).collect();
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let results = fan_out_spawning(&calls, true, 8, 3, |_, c| {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(50));
            now.fetch_sub(1, Ordering::SeqCst);
            ToolResult {
                call_id: c.id.clone(),
                content: String::new(),
                is_error: false,
                ..ToolResult::default()
            }
        });
        let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["c0", "c1", "c2", "c3", "c4", "c5"]);
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }
}
