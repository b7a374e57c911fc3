//! The `call_agent` tool (design §3.3–§3.6): its definition, its checks
//! in the order of design §3.4, the sub-agent it runs one level down, and
//! the texts of its results (§3.6, §3.12).
//!
//! A sub-agent runs through [`crate::run::run_agent`], the same path as the
//! top-level run (design §3.5); only its inputs differ: its own agent file,
//! no command-line overrides, the `Task: ...` message, one level deeper, and
//! a deadline no later than its parent's (design D5).

use std::sync::Arc;
use std::time::Instant;

use super::dispatch::{Caller, argument, error_result};
use super::snapshot::LoadError;
use crate::agent::{self, Agent, CALL_AGENT};
use crate::deadline::{Deadline, millis};
use crate::error::Error;
use crate::provider::{ErrorKind, ModelRef, Tool, ToolCall, ToolParameter, ToolResult};
use crate::resolve::{self, Overrides, Resolved};
use crate::run::{self, Ctx};
use crate::tools::artifacts::ArtifactRun;

/// How many characters of a task the `--verbose` line shows (design §3.14).
const TASK_PREVIEW_CHARS: usize = 80;

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

/// The `call_agent` tool definition for an agent that may call `allowed`
/// (design §3.3). The names are in both descriptions and, as a JSON Schema
/// `enum`, in the `agent` parameter (design D19). `shapes` are the output
/// schemas of those that have one (`shapes`): the description tells the
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
        schema: None,
    }
}

/// The output schemas of the agents in `allowed` that have one, in list
/// order, each once, from their files as the run's snapshot has them (read
/// now if not yet: their first call uses the same), for the parent's tool
/// description. A file that does not load or a schema that cannot be read
/// is left out here: the call itself reports it. Out of line, to keep
/// `run_agent`'s frame (on every waiting sub-agent's stack) small.
#[inline(never)]
pub(super) fn shapes(allowed: &[String], ctx: &Ctx) -> Vec<(String, serde_json::Value)> {
    let mut found: Vec<(String, serde_json::Value)> = Vec::new();
    for (i, name) in allowed.iter().enumerate() {
        if allowed[..i].contains(name) {
            continue;
        }
        let Ok(loaded) = ctx.snapshot.file(name, || agent::load(ctx.agents, name)) else {
            continue;
        };
        let output = loaded.config.output.as_ref();
        if let Ok(Some(shape)) =
            crate::agent::output_schema(output, None, loaded.config_dir(), ctx.cwd)
        {
            found.push((name.clone(), shape.schema));
        }
    }
    found
}

/// Runs one `call_agent` call, the caller's `seq`-th to its agent: checks
/// its arguments, the allowed names and the depth, in the order of design
/// §3.4, then runs the sub-agent one level down. Every failure is an error
/// result, never an error (design §3.12).
pub(super) fn run(call: &ToolCall, caller: &Caller, seq: u32) -> ToolResult {
    let ctx = caller.ctx;
    let (name, task, context) = (
        argument(call, "agent"),
        argument(call, "task"),
        argument(call, "context"),
    );
    if let Err(message) = check(name, task, caller) {
        return rejected(call, ctx, name, message);
    }
    let started = Instant::now();
    let message = task_message(name, task, context, ctx);
    match run_sub_agent(name, &message, call, caller, seq) {
        Ok(outcome) => answered(call, caller, name, &outcome, started),
        Err(SubAgentError::Rejected(message)) => rejected(call, ctx, name, message),
        Err(SubAgentError::Failed(description)) => failed(call, ctx, name, &description),
    }
}

/// Steps 1–5 of design §3.4: the arguments, the allowed names and the
/// depth. This and the texts below are out of line, as [`answered`] is.
#[inline(never)]
fn check(name: &str, task: &str, caller: &Caller) -> Result<(), String> {
    let ctx = caller.ctx;
    if name.is_empty() {
        return Err("call_agent error: \"agent\" argument is required".into());
    }
    if task.is_empty() {
        return Err("call_agent error: \"task\" argument is required".into());
    }
    if !caller.allowed_agents.iter().any(|a| a == name) {
        return Err(format!(
            "call_agent error: agent \"{name}\" is not in this agent's sub_agents list"
        ));
    }
    if ctx.depth >= ctx.max_depth {
        return Err(format!(
            "call_agent error: maximum sub-agent depth ({}) reached",
            ctx.max_depth
        ));
    }
    Ok(())
}

/// The sub-agent's user message, `--verbose`'s line said as it starts.
#[inline(never)]
fn task_message(name: &str, task: &str, context: &str, ctx: &Ctx) -> String {
    let depth = ctx.depth + 1;
    ctx.verbose.line(&format!(
        "[sub-agent] Calling \"{name}\" (depth {depth}) with task: {}",
        preview(task)
    ));
    if context.is_empty() {
        format!("Task: {task}")
    } else {
        format!("Task: {task}\n\nContext:\n{context}")
    }
}

/// The result of a call that could not start: `message` as it is.
#[inline(never)]
fn rejected(call: &ToolCall, ctx: &Ctx, name: &str, message: String) -> ToolResult {
    ctx.verbose
        .line(&format!("[sub-agent] \"{name}\" failed: {message}"));
    error_result(call, message)
}

/// The result of a call whose sub-agent started and failed.
#[inline(never)]
fn failed(call: &ToolCall, ctx: &Ctx, name: &str, description: &str) -> ToolResult {
    let description = description.trim_end_matches('.');
    ctx.verbose
        .line(&format!("[sub-agent] \"{name}\" failed: {description}"));
    error_result(call, sub_agent_failed(name, description))
}

/// The result of a call whose sub-agent answered, cut to the caller's
/// limit. Out of line, as [`load_sub_agent`] is: inlined, its locals would
/// sit in the frame of every sub-agent's thread while it waits.
#[inline(never)]
fn answered(
    call: &ToolCall,
    caller: &Caller,
    name: &str,
    outcome: &run::Outcome,
    started: Instant,
) -> ToolResult {
    let mut content = truncate_result(outcome.content.clone(), caller.max_result_chars);
    // The parent's model must know an answer is not whole.
    if let Some(what) = outcome.incomplete() {
        content.push_str(&format!("\n[incomplete: {what}]"));
    }
    caller.ctx.verbose.line(&format!(
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

/// Steps 6–12 of design §3.4: load, resolve and run the sub-agent `name` with
/// the user message `message`, within the caller's deadline narrowed by its
/// per-call timeout (design D5), which starts now, before any file is read.
fn run_sub_agent(
    name: &str,
    message: &str,
    call: &ToolCall,
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
    // Field by field, not `..ctx.clone()`: that builds a whole second Ctx
    // in this frame, which every waiting sub-agent's thread holds (design
    // §3.15).
    let sub_ctx = Ctx {
        global: ctx.global,
        agents: ctx.agents,
        cwd: ctx.cwd,
        depth: ctx.depth + 1,
        max_depth: ctx.max_depth,
        deadline,
        verbose: ctx.verbose.nested(name, ctx.depth + 1),
        retries: ctx.retries,
        ledger: ctx.ledger.clone(),
        place: ctx.place.child(name, seq),
        budgets: ctx.budgets.clone(),
        snapshot: ctx.snapshot.clone(),
        mcp: ctx.mcp.clone(),
        // A sub-agent's answer is its caller's tool result, never printed.
        stream: crate::run::Streaming {
            print: false,
            ..ctx.stream
        },
        text: ctx.text.clone(),
        cancel: ctx.cancel.clone(),
        seed: ctx.seed.clone(),
        conversation: ctx.conversation.clone(),
    };
    // Its spans go under this call's (design §7.9).
    if let Some(spans) = ctx.ledger.spans() {
        spans.sub_agent(&ctx.place, &call.id, &sub_ctx.place);
    }
    // Its memory records the whole message as its task (design §10.2).
    run::run_agent(&resolved, message, message, &sub_ctx)
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
    let loaded = ctx
        .snapshot
        .file(name, || agent::load(ctx.agents, name))
        .map_err(|e| {
            LoadError::Rejected(format!(
                "call_agent error: failed to load agent \"{name}\": {e}"
            ))
        })?;
    for w in &loaded.warnings {
        crate::io::stderr::warn_once(w);
    }
    if let Some(Err(e)) = loaded
        .config
        .model
        .as_deref()
        .map(|m| ctx.global.model_ref(m))
    {
        return Err(LoadError::Rejected(format!(
            "call_agent error: invalid model for agent \"{name}\": {e}"
        )));
    }
    // Its own workdir, skill and files; never the parent's overrides
    // (design D7). Only a file without `model` takes the caller's (D21).
    // Its own `[artifacts]` too, never the caller's directory unless its
    // `dir` names `${AXE_ARTIFACT_DIR}` (design §8.9).
    let overrides = Overrides {
        caller_model: Some(caller.model.clone()),
        artifacts: ArtifactRun {
            make: true,
            caller: caller.artifacts.map(|a| a.path().to_path_buf()),
            ..ArtifactRun::default()
        },
        ..Overrides::default()
    };
    resolve::resolve(
        Agent::clone(&loaded),
        &overrides,
        ctx.global,
        ctx.cwd,
        deadline,
    )
    .map_err(|e| {
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
fn truncate_result(content: String, max: usize) -> String {
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
pub(super) fn sub_agent_failed(name: &str, description: &str) -> String {
    format!(
        "Error: sub-agent \"{name}\" failed - {description}. You may retry or proceed without this result."
    )
}

/// The first [`TASK_PREVIEW_CHARS`] characters of a task on one line, with
/// `...` when it was cut.
fn preview(task: &str) -> String {
    crate::text::clip(&crate::text::one_line(task), TASK_PREVIEW_CHARS, "...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_cuts_at_80_chars_on_one_line() {
        assert_eq!(preview("short\ntask"), "short task");
        let long = "x".repeat(100);
        assert_eq!(preview(&long), format!("{}...", "x".repeat(80)));
    }
}
