//! Where an agent run sits in the tree ([`Place`]): its agent, its path
//! (`lead/researcher#2`, the second `researcher` call `lead` made), its
//! depth, and its OpenTelemetry spans open while it runs (design §7.9).

use crate::trace::telemetry::AgentSpans;

/// Where one agent run sits in the tree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place {
    /// The agent's name (its file stem).
    pub agent: String,
    /// `lead`, `lead/researcher#1`, `lead/researcher#1/fetcher#3`, ...
    pub path: String,
    pub depth: u32,
    /// Its OpenTelemetry spans open, when they are exported (design
    /// §7.9): found by the place an event comes with, not looked up.
    pub spans: AgentSpans,
}

impl Place {
    /// The top-level agent.
    pub fn root(agent: &str) -> Place {
        Place {
            agent: agent.to_string(),
            path: agent.to_string(),
            depth: 0,
            spans: AgentSpans::new(),
        }
    }

    /// The same place for another run (a batch's next input): its own
    /// spans, where a clone shares them.
    pub fn again(&self) -> Place {
        Place {
            agent: self.agent.clone(),
            path: self.path.clone(),
            depth: self.depth,
            spans: AgentSpans::new(),
        }
    }

    /// The `seq`-th call (from 1) this place makes to the agent `name`.
    pub fn child(&self, name: &str, seq: u32) -> Place {
        let path = if self.path.is_empty() {
            format!("{name}#{seq}")
        } else {
            format!("{}/{name}#{seq}", self.path)
        };
        Place {
            agent: name.to_string(),
            path,
            depth: self.depth + 1,
            spans: AgentSpans::new(),
        }
    }
}
