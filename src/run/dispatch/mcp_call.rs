//! A call to one of the caller's MCP tools (design §9.3): sent to its
//! server with the arguments as the model wrote them, within the caller's
//! deadline (and the server's `timeout`), and reported as every tool call
//! is (`reported.rs`). Every failure is the call's error result.

use super::Caller;
use crate::provider::{ToolCall, ToolResult};
use crate::tools::Done;

/// Runs `call`, whose tool is among the caller's MCP tools.
pub(super) fn run(call: &ToolCall, index: usize, caller: &Caller) -> ToolResult {
    let Some(bound) = caller.mcp.iter().find(|b| b.wire == call.name) else {
        return super::error_result(call, format!("Unknown tool: \"{}\"", call.name));
    };
    if let Some(spans) = caller.ctx.ledger.spans() {
        spans.mcp_call(&caller.ctx.place, &call.id, &bound.server.name, &bound.tool);
    }
    super::reported::run(call, index, caller, || {
        let arguments = call.arguments_object();
        let done = bound
            .server
            .call(&bound.tool, arguments, caller.ctx.deadline.at);
        Done {
            bytes: u64::try_from(done.text.len()).unwrap_or(u64::MAX),
            text: done.text,
            is_error: done.is_error,
            exit: None,
        }
    })
}
