//! The conversation loop: send, and while the model calls tools, run them and
//! send the results back (the sub-agents spec, Req 8.1–8.4). Without tools it
//! is exactly one request. There is one loop; later a sub-agent runs through
//! it too.

use std::time::{Duration, Instant};

use crate::output::Verbose;
use crate::provider::{
    ErrorKind, Message, Provider, ProviderError, Request, Role, ToolCall, ToolResult,
};

/// The most send-receive cycles one conversation may take.
pub const MAX_TURNS: u32 = 50;

/// What a run is bounded by, and where it reports.
#[derive(Debug, Clone)]
pub struct Limits {
    /// No request is sent or waited for past this instant.
    pub deadline: Instant,
    /// The seconds the deadline stands for, for the timeout message.
    pub timeout_secs: u64,
}

/// The result of a finished conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub content: String,
    pub stop_reason: String,
    /// Summed over every turn (Req 8.8).
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub turns: u32,
    /// Tool calls executed.
    pub tool_calls: u64,
    pub duration: Duration,
}

/// Why a conversation did not finish.
#[derive(Debug)]
pub enum RunError {
    /// The provider failed (its own classification decides the exit code).
    Provider(ProviderError),
    /// More than [`MAX_TURNS`] turns (exit 1).
    TooManyTurns,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Provider(e) => e.fmt(f),
            RunError::TooManyTurns => {
                write!(f, "agent exceeded maximum conversation turns ({MAX_TURNS})")
            }
        }
    }
}

impl std::error::Error for RunError {}

impl RunError {
    pub fn exit_code(&self) -> crate::error::Code {
        match self {
            RunError::Provider(e) => e.exit_code(),
            RunError::TooManyTurns => crate::error::Code::General,
        }
    }
}

/// Runs the conversation that starts with `req`. `execute` runs the tool
/// calls of one response and returns one result per call, in call order.
pub fn converse(
    provider: &Provider,
    mut req: Request,
    limits: &Limits,
    verbose: &Verbose,
    execute: &dyn Fn(&[ToolCall]) -> Vec<ToolResult>,
) -> Result<Outcome, RunError> {
    let started = Instant::now();
    let mut out = Outcome::default();
    let looping = !req.tools.is_empty();
    loop {
        if out.turns == MAX_TURNS {
            return Err(RunError::TooManyTurns);
        }
        out.turns += 1;
        let turn = out.turns;
        if looping {
            let pending = req.messages.last().map_or(0, |m| m.tool_results.len());
            verbose.line(&format!(
                "[turn {turn}] Sending request ({} messages, {pending} tool calls pending)",
                req.messages.len()
            ));
        }
        let resp = provider.send(&req, limits.deadline).map_err(|mut e| {
            if e.kind == ErrorKind::Timeout {
                e.message = format!("timeout after {}s", limits.timeout_secs);
            }
            RunError::Provider(e)
        })?;
        out.input_tokens += resp.input_tokens;
        out.output_tokens += resp.output_tokens;
        if looping {
            verbose.line(&format!(
                "[turn {turn}] Received response: {} ({} tool calls)",
                resp.stop_reason,
                resp.tool_calls.len()
            ));
        }
        // Without tools, tool calls a model invents are not acted on (Req 8.4).
        if !looping || resp.tool_calls.is_empty() {
            out.content = resp.content;
            out.stop_reason = resp.stop_reason;
            out.duration = started.elapsed();
            return Ok(out);
        }
        let results = execute(&resp.tool_calls);
        out.tool_calls += resp.tool_calls.len() as u64;
        req.messages.push(Message {
            role: Role::Assistant,
            content: resp.content,
            tool_calls: resp.tool_calls,
            tool_results: Vec::new(),
        });
        req.messages.push(Message {
            role: Role::Tool,
            tool_results: results,
            ..Message::default()
        });
    }
}

/// The result for a call to a tool that does not exist (Req 8.2).
pub fn unknown_tool(call: &ToolCall) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        content: format!("Unknown tool: \"{}\"", call.name),
        is_error: true,
    }
}
