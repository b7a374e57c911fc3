//! Tokens and cost billed: by one response, or summed over a whole tree
//! (the `--json` totals, the top-level `run_end`).

use super::AgentUsage;
use crate::cost::Cost;

/// Tokens billed: by one response, or summed over the whole tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub reasoning_tokens: u64,
    /// Of `input_tokens`, those read from a prompt cache.
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to a prompt cache.
    pub cache_creation_input_tokens: u64,
    /// What they cost (design §7.8).
    pub cost: Cost,
}

/// The tokens of the whole tree, summed (saturating) over its agents.
pub fn totals(usage: &[AgentUsage]) -> Totals {
    usage.iter().fold(Totals::default(), |t, u| Totals {
        input_tokens: t.input_tokens.saturating_add(u.input_tokens),
        output_tokens: t.output_tokens.saturating_add(u.output_tokens),
        reasoning_tokens: t.reasoning_tokens.saturating_add(u.reasoning_tokens),
        cache_read_input_tokens: t
            .cache_read_input_tokens
            .saturating_add(u.cache_read_input_tokens),
        cache_creation_input_tokens: t
            .cache_creation_input_tokens
            .saturating_add(u.cache_creation_input_tokens),
        cost: t.cost.plus(u.cost_usd),
    })
}
