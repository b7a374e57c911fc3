//! How a call to a built-in tool or an MCP server's tool is seen (design
//! §2.9, §7.2, §7.4): a `--verbose` line, a `tool` trace event, the
//! ledger's record for `--json` and the live view while it runs, as a
//! sub-agent is seen. Written once for both; each says only how its call
//! runs.

use std::time::Instant;

use super::Caller;
use crate::provider::{ToolCall, ToolResult};
use crate::tools::Done;
use crate::trace::event::TraceEvent;
use crate::trace::ledger::ToolDetail;

/// Characters of an argument shown in a summary.
const SUMMARY_CHARS: usize = 80;

/// Runs `call`, the `index`-th of its response, with `run`, reporting it
/// before and after; answered with its result, an error result when it
/// failed. It never fails the run.
pub(super) fn run(
    call: &ToolCall,
    index: usize,
    caller: &Caller,
    run: impl FnOnce() -> Done,
) -> ToolResult {
    let ctx = caller.ctx;
    let summary = summary(call);
    let running = ctx.ledger.tool_started(&ctx.place, &call.name, &summary);
    let started = Instant::now();
    let done = run();
    let took = started.elapsed();
    drop(running);
    let ms = crate::deadline::millis(took);
    let how = if done.is_error { "error" } else { "ok" };
    ctx.verbose.line(&format!(
        "[tool] {}: {summary} ({how}, {ms} ms, {} bytes)",
        call.name, done.bytes
    ));
    let event = TraceEvent::Tool {
        id: &call.id,
        name: &call.name,
        summary: &summary,
        took,
        bytes: done.bytes,
        exit: done.exit,
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

/// A call's arguments in one short line: `path "src/main.rs"`,
/// `command "cargo test"`, each value cut to [`SUMMARY_CHARS`].
fn summary(call: &ToolCall) -> String {
    let mut parts = Vec::new();
    for (key, value) in &call.arguments {
        // The body of a write is its size, not its text.
        if key == "content" || key == "new_string" || key == "old_string" {
            parts.push(format!("{key} ({} bytes)", value.len()));
            continue;
        }
        let one = crate::text::one_line(value);
        let mut shown: String = one.chars().take(SUMMARY_CHARS).collect();
        if one.chars().count() > SUMMARY_CHARS {
            shown.push_str("...");
        }
        parts.push(format!("{key} {shown:?}"));
    }
    parts.join(", ")
}
