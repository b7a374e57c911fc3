//! The tools a model can call, and running them (design §3.8, §3.10):
//! [`run_calls`] runs the calls of one response, at the same time through
//! `pool` when the caller allows, and [`run_call`] runs one; both report
//! each call to the trace and dispatch it by its tool's name, to one of
//! the tools the caller was offered: `call_agent` (`call_agent.rs`), its
//! built-in tools (`builtin.rs`, design §8) or its MCP servers' tools
//! (`mcp_call.rs`, design §9), the last two reported alike
//! (`reported.rs`). Any other name, or a call of a type that is not a
//! function, gets an error result and the conversation goes on. The
//! fan-out, the trace, panics and error results are here, the same for
//! every tool.

mod builtin;
mod mcp_call;
mod reported;

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use super::call_agent;
use super::pool;
use crate::provider::{ModelRef, ToolCall, ToolResult};
use crate::run::Ctx;
use crate::trace::event::TraceEvent;
use crate::trace::ledger::Children;

use crate::agent::CALL_AGENT;

/// The most calls of one response that run at the same time; more wait for
/// a free thread. Far above what a model sends in practice, it only bounds
/// the threads (and provider connections) a runaway response can open.
pub const MAX_PARALLEL_CALLS: usize = pool::MAX_THREADS;

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
    /// Its built-in tools (design §8), if it lists any.
    pub tools: Option<&'a crate::tools::Kit>,
    /// Its artifact directory, if it has one (design §8.9).
    pub artifacts: Option<&'a crate::tools::artifacts::Artifacts>,
    /// Its MCP servers' tools (design §9.3).
    pub mcp: &'a [crate::mcp::Bound],
    /// The names of the tools its model was offered, in order: what an
    /// error result tells the model it may call.
    pub offered: &'a [String],
    /// Where it runs: its depth, deadline, config, verbosity and tree.
    pub ctx: &'a Ctx<'a>,
    /// The calls it has made to each sub-agent, to number their paths.
    pub children: &'a Children,
    /// The turn whose response made these calls.
    pub turn: u32,
}

/// Runs the tool calls of one response and returns one result per call, in
/// call order: at the same time when the caller is `parallel` and there is
/// more than one call, else one after another (design §3.8, §3.10). A call
/// that panics gets an error result; its siblings go on (design D4).
///
/// Sub-agent paths are numbered here, in call order, before any call runs,
/// so a trace names the same call the same way whatever finishes first.
pub fn run_calls(calls: &[ToolCall], caller: &Caller) -> Vec<ToolResult> {
    let seqs: Vec<u32> = calls.iter().map(|c| next_seq(c, caller)).collect();
    let threads = pool::Threads::at_most(caller.max_parallel.clamp(1, MAX_PARALLEL_CALLS));
    pool::fan_out(
        calls,
        caller.parallel,
        threads,
        |i, call| run_numbered(call, i, caller, seqs.get(i).copied().unwrap_or(0)),
        panicked,
    )
}

/// Runs one tool call, as the caller's next, on this thread: what
/// [`run_calls`] does for a response with one call, a panic included.
pub fn run_call(call: &ToolCall, caller: &Caller) -> ToolResult {
    run_calls(std::slice::from_ref(call), caller)
        .pop()
        .unwrap_or_else(|| panicked(call, &"the call returned no result"))
}

/// The number of this call among the caller's calls to the same agent.
fn next_seq(call: &ToolCall, caller: &Caller) -> u32 {
    caller.children.next(argument(call, "agent"))
}

/// The call's argument `key`, trimmed; empty when absent.
pub(super) fn argument<'c>(call: &'c ToolCall, key: &str) -> &'c str {
    call.arguments.get(key).map_or("", |v| v.trim())
}

/// Runs `call`, numbered `seq`, between its `tool_call` and `tool_result`
/// trace events. A panic in the call is its error result here, so that
/// the `tool_result` event comes, and the call's span ends, all the same
/// (design §7.9); the fan-out's own catch stays for what is outside.
fn run_numbered(call: &ToolCall, index: usize, caller: &Caller, seq: u32) -> ToolResult {
    report_call(call, caller);
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| dispatch(call, index, caller, seq)))
        .unwrap_or_else(|p| panicked(call, p.as_ref()));
    report_result(call, caller, &result, started);
    result
}

/// The `tool_call` event. This and [`report_result`] are out of line: an
/// event inlined sits in the frame that a waiting sub-agent's thread holds
/// under its call (design §3.15).
#[inline(never)]
fn report_call(call: &ToolCall, caller: &Caller) {
    let ctx = caller.ctx;
    let agent_called = argument(call, "agent");
    let event = TraceEvent::ToolCall { call, agent_called };
    ctx.ledger.event(&ctx.place, caller.turn, event);
}

/// The `tool_result` event.
#[inline(never)]
fn report_result(call: &ToolCall, caller: &Caller, result: &ToolResult, started: Instant) {
    let ctx = caller.ctx;
    let event = TraceEvent::ToolResult {
        call,
        agent_called: argument(call, "agent"),
        result,
        took: started.elapsed(),
    };
    ctx.ledger.event(&ctx.place, caller.turn, event);
}

/// Runs `call`, the `index`-th of its response, by its tool's name
/// (design §3.8).
fn dispatch(call: &ToolCall, index: usize, caller: &Caller, seq: u32) -> ToolResult {
    match (&call.foreign, call.name.as_str()) {
        (Some(raw), _) => error_result(call, foreign_call(&call.name, raw, caller.offered)),
        (None, CALL_AGENT) => call_agent::run(call, caller, seq),
        (None, name) if caller.tools.is_some_and(|k| k.has(name)) => {
            builtin::run(call, index, caller)
        }
        (None, name) if caller.mcp.iter().any(|b| b.wire == name) => {
            mcp_call::run(call, index, caller)
        }
        (None, _) => error_result(call, format!("Unknown tool: \"{}\"", call.name)),
    }
}

/// The results of calls made in a response that was cut off (stop reason
/// `stop_reason`): none is run, since the last may be half-written. Each
/// result names its call's tool as that tool's errors do: a `call_agent`
/// call's as its checks' (design §3.6), any other's as a tool's.
pub(crate) fn not_run_cut_off(calls: &[ToolCall], stop_reason: &str) -> Vec<ToolResult> {
    let why = format!(
        "not run: the response that made this call was cut off (stop reason \"{stop_reason}\"), \
         so the call may be incomplete"
    );
    calls
        .iter()
        .map(|call| match call.name.as_str() {
            CALL_AGENT => error_result(call, format!("{CALL_AGENT} error: {why}")),
            name => error_result(call, format!("Error: tool \"{name}\" {why}")),
        })
        .collect()
}

/// The most tool names an error result lists; more are counted.
const NAMES_SHOWN: usize = 20;

/// The result text of a call of a type axe has no tool of (an OpenAI
/// `custom` call), whatever its name: it is never run (design §3.8). It
/// names the tools the model was `offered`. Out of line: rare, and its
/// locals would otherwise sit in every sub-agent thread's frame.
#[inline(never)]
fn foreign_call(name: &str, raw: &serde_json::Value, offered: &[String]) -> String {
    let kind = raw["type"].as_str().unwrap_or("unknown");
    let quoted: Vec<String> = offered
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| format!("\"{n}\""))
        .collect();
    let tools = match (quoted.as_slice(), offered.len() - quoted.len()) {
        ([], _) => "no tool is offered here".to_string(),
        ([one], _) => format!("the only tool here is the function {one}"),
        ([first @ .., last], 0) => {
            format!(
                "the tools here are the functions {} and {last}",
                first.join(", ")
            )
        }
        (all, more) => format!(
            "the tools here are the functions {} and {more} more",
            all.join(", ")
        ),
    };
    format!("Unknown tool: \"{name}\" (a \"{kind}\" tool call; {tools})")
}

/// An error result: axe's own text, which may quote an agent file or a
/// provider's error, so it is redacted before the parent's model (and the
/// trace, which writes results as they are) sees it (design §6.7).
pub(super) fn error_result(call: &ToolCall, content: String) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: crate::text::redact::redact(&content),
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
            call_agent::sub_agent_failed(name.trim(), &format!("internal error in axe: {what}"))
        }
        _ => format!(
            "Error: tool \"{}\" failed - internal error in axe: {what}",
            call.name
        ),
    };
    error_result(call, content)
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
    fn a_foreign_calls_result_names_what_was_offered_and_counts_past_twenty() {
        let raw = serde_json::json!({"type": "custom"});
        let head = "Unknown tool: \"x\" (a \"custom\" tool call; ";
        assert_eq!(
            foreign_call("x", &raw, &[]),
            format!("{head}no tool is offered here)")
        );
        let two = ["call_agent".to_string(), "read_file".to_string()];
        assert_eq!(
            foreign_call("x", &raw, &two),
            format!("{head}the tools here are the functions \"call_agent\" and \"read_file\")")
        );
        let many: Vec<String> = (0..25).map(|i| format!("s__t{i}")).collect();
        let text = foreign_call("x", &raw, &many);
        assert!(
            text.contains("\"s__t18\", \"s__t19\" and 5 more)"),
            "{text}"
        );
        assert!(!text.contains("s__t20"), "{text}");
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
}
