//! A call to one of the caller's built-in tools (design §8.1): run through
//! the registry (`crate::tools`) with the caller's kit and deadline, and
//! reported as every tool call is (`reported.rs`).

use super::Caller;
use crate::provider::{ToolCall, ToolResult};
use crate::tools::{self, Env};

/// Runs `call`, whose tool the caller listed.
pub(super) fn run(call: &ToolCall, index: usize, caller: &Caller) -> ToolResult {
    let ctx = caller.ctx;
    let Some(kit) = caller.tools else {
        return super::error_result(call, format!("Unknown tool: \"{}\"", call.name));
    };
    super::reported::run(call, index, caller, || {
        let env = Env {
            root: &kit.root,
            policy: &kit.policy,
            allowed_hosts: &kit.allowed_hosts,
            private_networks: kit.private_networks,
            deadline: ctx.deadline.at,
            cancel: &ctx.cancel,
            artifacts: kit.artifacts.as_deref(),
        };
        tools::run(&call.name, &call.arguments, &env)
    })
}
