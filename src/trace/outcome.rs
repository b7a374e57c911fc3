//! What a finished conversation gives its caller: the answer, how it
//! stopped and what it cost (design §3.14). Its own module, below `run`
//! which makes it, so that the trace's events and the run log, which only
//! read it, need not depend on the run loop.

use std::time::Duration;

use crate::provider::Cut;

/// The result of a finished conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub content: String,
    pub stop_reason: String,
    /// Summed over every turn (design §3.14, D16).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Of `output_tokens`, those the model spent reasoning (design §4.15).
    pub reasoning_tokens: u64,
    /// Of `input_tokens`, those read from the provider's prompt cache.
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache.
    pub cache_creation_input_tokens: u64,
    /// What this agent's own requests cost (design §7.8).
    pub cost: crate::cost::Cost,
    pub turns: u32,
    /// Tool calls executed.
    pub tool_calls: u64,
    /// HTTP requests retried (design D12), summed over every turn.
    pub retry_attempts: u64,
    pub duration: Duration,
    /// Why the final answer is incomplete, when it is.
    pub cut: Option<Cut>,
    /// With an output schema: the answer, parsed (`content` is its compact
    /// JSON text).
    pub output: Option<serde_json::Value>,
    /// Turns spent asking for an answer that matches the output schema.
    pub repairs: u32,
}

impl Outcome {
    /// When the final answer is incomplete, what happened:
    /// `the answer was cut off at the output limit (stop reason "length")`.
    pub fn incomplete(&self) -> Option<String> {
        self.cut.map(|cut| {
            format!(
                "the answer was {} (stop reason \"{}\")",
                cut.describe(),
                self.stop_reason
            )
        })
    }
}
