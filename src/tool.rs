//! The tools a model can call, and running them: the `call_agent` definition
//! (design §3.3), its execution with every check in order (§3.4) and the
//! result texts (§3.6, §3.12), and dispatch by tool name (§3.8). The calls
//! of one response run at the same time through `pool`.
//!
//! A sub-agent runs through [`crate::run::run_agent`], the same path as the
//! top-level run (design §3.5); only its inputs differ: its own agent file,
//! no command-line overrides, the `Task: ...` message, one level deeper, and
//! a deadline no later than its parent's (design D5).

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use crate::agent;
use crate::deadline::{Deadline, millis};
use crate::error::Error;
use crate::ledger::Children;
use crate::pool;
use crate::provider::{ErrorKind, ModelRef, Tool, ToolCall, ToolParameter, ToolResult};
use crate::resolve::{self, Overrides, Resolved};
use crate::run::{self, Ctx};
use crate::schema;
use crate::snapshot::LoadError;

/// The name of the one tool axe injects (design §3.3).
pub const CALL_AGENT: &str = "call_agent";

/// The most calls of one response that run at the same time; more wait for
/// a free thread. Far above what a model sends in practice, it only bounds
/// the threads (and provider connections) a runaway response can open.
pub const MAX_PARALLEL_CALLS: usize = pool::MAX_THREADS;

/// How many characters of a task the `--verbose` line shows (design §3.14).
const TASK_PREVIEW_CHARS: usize = 80;

/// The agent whose model made the tool calls: what it may call, and how.
#[derive(Debug, Clone, Copy)]
pub struct Caller<'a> {
    /// Its `sub_agents` list.
    pub allowed_agents: &'a [String],
    /// The model it runs on: a sub-agent without one of its own inherits it
    /// (design D21).
    pub model: &'a ModelRef,
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

/// The `call_agent` tool definition for an agent that may call `allowed`
/// (design §3.3). The names are in both descriptions and, as a JSON Schema
/// `enum`, in the `agent` parameter (design D19). `shapes` are the output
/// schemas of those that have one ([`shapes`]): the description tells the
/// model what each returns, and is the spec's own when there are none.
pub fn call_agent_tool(allowed: &[String], shapes: &[(String, serde_json::Value)]) -> Tool {
    let names = allowed.join(", ");
    let mut description = format!(
        "Delegate a task to a sub-agent. The sub-agent runs independently with its own \
         context and returns only its final result. Available agents: {names}"
    );
    if !shapes.is_empty() {
        description
            .push_str("\nThese agents return one JSON value matching the JSON Schema given:");
        for (name, schema) in shapes {
            description.push_str(&format!("\n- {name}: {schema}"));
        }
    }
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
        description,
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

/// The output schemas of the agents in `allowed` that have one, in list
/// order, each once, read from their files for the parent's tool
/// description. A file that does not load or a schema that cannot be read
/// is left out here: the call itself reports it. Out of line, to keep
/// `run_agent`'s frame (on every waiting sub-agent's stack) small.
#[inline(never)]
pub fn shapes(allowed: &[String], ctx: &Ctx) -> Vec<(String, serde_json::Value)> {
    let mut found: Vec<(String, serde_json::Value)> = Vec::new();
    for (i, name) in allowed.iter().enumerate() {
        if allowed[..i].contains(name) {
            continue;
        }
        let Ok(loaded) = agent::load_in(ctx.config_dir, name) else {
            continue;
        };
        let output = loaded.config.output.as_ref();
        if let Ok(Some(shape)) = schema::load(output, None, loaded.config_dir(), ctx.cwd) {
            found.push((name.clone(), shape.schema));
        }
    }
    found
}

/// Runs the tool calls of one response and returns one result per call, in
/// call order: at the same time when the caller is `parallel` and there is
/// more than one call, else one after another (design §3.8, §3.10).
///
/// Sub-agent paths are numbered here, in call order, before any call runs,
/// so a trace names the same call the same way whatever finishes first.
pub fn execute(calls: &[ToolCall], caller: &Caller) -> Vec<ToolResult> {
    let seqs: Vec<u32> = calls.iter().map(|c| next_seq(c, caller)).collect();
    let threads = pool::Threads::at_most(caller.max_parallel.clamp(1, MAX_PARALLEL_CALLS));
    pool::fan_out(
        calls,
        caller.parallel,
        threads,
        |i, call| dispatch_numbered(call, caller, seqs.get(i).copied().unwrap_or(0)),
        panicked,
    )
}

/// Runs one tool call by its name (design §3.8).
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
    if ctx.ledger.bodies() {
        fields["arguments"] = serde_json::json!(call.arguments);
    }
    ctx.ledger
        .event("tool_call", &ctx.place, caller.turn, fields);
    let started = Instant::now();
    let result = match (&call.foreign, call.name.as_str()) {
        (Some(raw), _) => error_result(call, foreign_call(&call.name, raw)),
        (None, CALL_AGENT) => call_agent_numbered(call, caller, seq),
        (None, _) => error_result(call, format!("Unknown tool: \"{}\"", call.name)),
    };
    let mut fields = serde_json::json!({
        "call_id": call.id,
        "tool": call.name,
        "agent_called": agent,
        "is_error": result.is_error,
        "chars": result.content.chars().count(),
        "duration_ms": millis(started.elapsed()),
    });
    if ctx.ledger.bodies() {
        fields["content"] = result.content.clone().into();
    }
    ctx.ledger
        .event("tool_result", &ctx.place, caller.turn, fields);
    result
}

/// Executes one `call_agent` call: checks its arguments, the allowed names
/// and the depth, in the order of design §3.4, then runs the sub-agent one
/// level down. Every failure is an error result, never an error (design §3.12).
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
    let rejected = |message: String| {
        ctx.verbose
            .line(&format!("[sub-agent] \"{name}\" failed: {message}"));
        error_result(call, message)
    };
    if name.is_empty() {
        return rejected("call_agent error: \"agent\" argument is required".into());
    }
    if task.is_empty() {
        return rejected("call_agent error: \"task\" argument is required".into());
    }
    if !caller.allowed_agents.iter().any(|a| a == name) {
        return rejected(format!(
            "call_agent error: agent \"{name}\" is not in this agent's sub_agents list"
        ));
    }
    if ctx.depth >= ctx.max_depth {
        return rejected(format!(
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
                millis(started.elapsed()),
                content.chars().count()
            ));
            ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content,
                is_error: false,
            }
        }
        Err(SubAgentError::Rejected(message)) => rejected(message),
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
    Rejected(String),
    /// It started and failed: what went wrong, for `Error: sub-agent ...`.
    Failed(String),
}

impl From<LoadError> for SubAgentError {
    fn from(e: LoadError) -> SubAgentError {
        match e {
            LoadError::Rejected(text) => SubAgentError::Rejected(text),
            LoadError::Failed(text) => SubAgentError::Failed(text),
        }
    }
}

/// Steps 6–12 of design §3.4: load, resolve and run the sub-agent `name` with
/// the user message `message`, within the caller's deadline narrowed by its
/// per-call timeout (design D5), which starts now, before any file is read.
fn run_sub_agent(
    name: &str,
    message: &str,
    caller: &Caller,
    seq: u32,
) -> Result<run::Outcome, SubAgentError> {
    let ctx = caller.ctx;
    let deadline = ctx.deadline.narrowed(caller.timeout_secs);
    // Read once per run (design D20); a call waiting for another's load
    // waits no longer than its own deadline.
    let mut resolved = ctx
        .snapshot
        .get_or_load(name, &deadline, || load_sub_agent(name, caller, &deadline))?;
    // An agent that inherits its model was resolved with its first caller's;
    // a caller on another model gets its own (design D21).
    if resolved.agent.config.model.is_none() && resolved.model != *caller.model {
        resolved = on_model(&resolved, caller.model);
    }
    let sub_ctx = Ctx {
        depth: ctx.depth + 1,
        deadline,
        verbose: ctx.verbose.nested(name, ctx.depth + 1),
        place: ctx.place.child(name, seq),
        ..ctx.clone()
    };
    run::run_agent(&resolved, message, &sub_ctx)
        .map_err(|err| SubAgentError::Failed(failure_text(&err)))
}

/// Steps 7–10 of design §3.4 for the sub-agent `name`: its file loaded and
/// checked, and resolved on its own settings (design D7), on `caller`'s model
/// when it names none (D21). Out of line: only a run's first call to an
/// agent loads it (D20), and inlined, its locals would sit in the frame of
/// every waiting sub-agent's thread.
#[inline(never)]
fn load_sub_agent(name: &str, caller: &Caller, deadline: &Deadline) -> Result<Resolved, LoadError> {
    let ctx = caller.ctx;
    let loaded = agent::load_in(ctx.config_dir, name).map_err(|e| {
        LoadError::Rejected(format!(
            "call_agent error: failed to load agent \"{name}\": {e}"
        ))
    })?;
    for w in &loaded.warnings {
        crate::stderr::warn_once(w);
    }
    if let Some(Err(e)) = loaded.config.model.as_deref().map(ModelRef::parse) {
        return Err(LoadError::Rejected(format!(
            "call_agent error: invalid model for agent \"{name}\": {e}"
        )));
    }
    // Its own workdir, skill and files; never the parent's overrides
    // (design D7). Only a file without `model` takes the caller's (D21).
    let overrides = Overrides {
        caller_model: Some(caller.model.clone()),
        ..Overrides::default()
    };
    resolve::resolve(loaded, &overrides, ctx.cwd, deadline).map_err(|e| {
        if deadline.passed() {
            LoadError::Failed(format!("timeout after {}s", deadline.secs))
        } else {
            LoadError::Failed(e.to_string())
        }
    })
}

/// `resolved` on `model` instead. Out of line: the copy is large, and
/// `run_sub_agent`'s frame is on the stack of every sub-agent that waits.
#[inline(never)]
fn on_model(resolved: &Resolved, model: &ModelRef) -> Arc<Resolved> {
    Arc::new(Resolved {
        model: model.clone(),
        ..resolved.clone()
    })
}

/// What went wrong in a sub-agent, for its error result: a timeout reads
/// exactly `timeout after <N>s` (design D5); anything else is the one-line error.
fn failure_text(err: &Error) -> String {
    match err {
        Error::Provider(e) if e.kind == ErrorKind::Timeout => e.message.clone(),
        // The parent gets what was wrong, not how often it was retried.
        Error::Output { first, .. } => format!("output does not match the schema: {first}"),
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

/// The result text of a sub-agent that started and failed (design §3.6).
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

/// The result text of a call of a type axe has no tool of (an OpenAI
/// `custom` call), whatever its name: it is never run (design §3.8).
fn foreign_call(name: &str, raw: &serde_json::Value) -> String {
    let kind = raw["type"].as_str().unwrap_or("unknown");
    format!(
        "Unknown tool: \"{name}\" (a \"{kind}\" tool call; the only tool here is the function \"{CALL_AGENT}\")"
    )
}

/// An error result: axe's own text, which may quote an agent file or a
/// provider's error, so it is redacted before the parent's model (and the
/// trace, which writes results as they are) sees it (design §6.7).
fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: crate::redact::redact(&content),
        is_error: true,
    }
}

/// The error result of a call that panicked: a bug in axe, reported to the
/// model like any other failure of that one call.
fn panicked(call: &ToolCall, payload: &(dyn Any + Send)) -> ToolResult {
    let what = crate::error::panic_message(payload);
    let what = crate::text::one_line(&what);
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
    fn a_panicking_call_becomes_that_sub_agents_error_result() {
        let payload: Box<dyn Any + Send> = Box::new(String::from("boom in c3"));
        let result = panicked(&call("c3", "a"), payload.as_ref());
        assert!(result.is_error);
        assert_eq!(result.call_id, "c3");
        assert_eq!(
            result.content,
            "Error: sub-agent \"a\" failed - internal error in axe: boom in c3. You may retry or proceed without this result."
        );
    }

    #[test]
    fn preview_cuts_at_80_chars_on_one_line() {
        assert_eq!(preview("short\ntask"), "short task");
        let long = "x".repeat(100);
        assert_eq!(preview(&long), format!("{}...", "x".repeat(80)));
    }
}
