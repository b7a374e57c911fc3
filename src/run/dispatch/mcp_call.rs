//! A call to one of the caller's MCP tools (design §11.3): sent to its
//! server with the arguments as the model wrote them, within the caller's
//! deadline (and the server's `timeout`), and seen as a built-in tool's
//! call is — a `--verbose` line, a `tool` trace event, the ledger's record
//! for `--json` and the live view. Every failure is the call's error result.

use std::time::Instant;

use super::Caller;
use crate::provider::{ToolCall, ToolResult, wire};
use crate::trace::event::TraceEvent;
use crate::trace::ledger::ToolDetail;

/// Runs `call`, whose tool is among the caller's MCP tools.
pub(super) fn run(call: &ToolCall, index: usize, caller: &Caller) -> ToolResult {
    let ctx = caller.ctx;
    let Some(bound) = caller.mcp.iter().find(|b| b.wire == call.name) else {
        return super::error_result(call, format!("Unknown tool: \"{}\"", call.name));
    };
    let summary = super::builtin::summary(call);
    let running = ctx.ledger.tool_started(&ctx.place, &call.name, &summary);
    let started = Instant::now();
    let arguments = wire::arguments_object(call);
    let done = bound.server.call(&bound.tool, arguments, ctx.deadline.at);
    let took = started.elapsed();
    drop(running);
    let ms = crate::deadline::millis(took);
    let how = if done.is_error { "error" } else { "ok" };
    let bytes = done.text.len();
    ctx.verbose.line(&format!(
        "[tool] {}: {summary} ({how}, {ms} ms, {bytes} bytes)",
        call.name
    ));
    let event = TraceEvent::Tool {
        name: &call.name,
        summary: &summary,
        took,
        bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
        exit: None,
        error: done.is_error.then_some(done.text.as_str()),
    };
    ctx.ledger.event(&ctx.place, caller.turn, event);
    ctx.ledger.record_tool(
        &ctx.place,
        ToolDetail::new(call, &done.text, done.is_error, caller.turn, index, took),
    );
    ToolResult {
        call_id: call.id.clone(),
        tool_name: call.name.clone(),
        content: done.text,
        is_error: done.is_error,
    }
}
