//! The built-in tool calls of a run (design §8.1): those running now,
//! for the live view, and those ended, for `--json`'s `tool_call_details`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Ledger, Place};
use crate::deadline::millis;

/// The ledger's record of built-in tool calls.
#[derive(Debug, Default)]
pub(super) struct ToolLog {
    /// Ended, in the order they ended (sorted when read).
    details: Mutex<Vec<ToolDetail>>,
    running: Mutex<Vec<RunningTool>>,
    next: AtomicU64,
}

/// One built-in tool call, for `--json`'s `tool_call_details` (the Go
/// original's fields) and the live view.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDetail {
    /// The path of the agent run that made it.
    #[serde(skip)]
    pub path: Arc<str>,
    /// The name of the agent that made it.
    #[serde(skip)]
    pub agent: Arc<str>,
    pub name: String,
    /// Its arguments as the model wrote them.
    pub input: serde_json::Value,
    /// Its result, redacted and cut to [`DETAIL_OUTPUT_BYTES`].
    pub output: String,
    pub is_error: bool,
    pub turn: u32,
    /// Its place among its response's calls.
    #[serde(skip)]
    pub index: usize,
    pub duration_ms: u64,
}

/// The most bytes of a tool's result kept for `--json`.
pub const DETAIL_OUTPUT_BYTES: usize = 4096;

impl ToolDetail {
    pub fn new(
        call: &crate::provider::ToolCall,
        output: &str,
        is_error: bool,
        turn: u32,
        index: usize,
        took: Duration,
    ) -> ToolDetail {
        let input = serde_json::to_value(&call.arguments).unwrap_or_default();
        ToolDetail {
            path: Arc::default(),
            agent: Arc::default(),
            name: call.name.clone(),
            input,
            // Redacted before it is cut, so that no part of a key is left
            // at the cut; the arguments are the model's words, kept as the
            // trace keeps them (design §6.7).
            output: crate::text::cap(crate::text::redact::redact(output), DETAIL_OUTPUT_BYTES),
            is_error,
            turn,
            index,
            duration_ms: millis(took),
        }
    }
}

/// A built-in tool call running now, for the live view.
#[derive(Debug, Clone)]
pub struct RunningTool {
    pub place: Place,
    pub name: String,
    pub summary: String,
    pub started: Instant,
    id: u64,
}

/// Removes its call from the running tools when dropped.
pub struct ToolRunning<'a> {
    ledger: &'a Ledger,
    id: u64,
}

impl Drop for ToolRunning<'_> {
    fn drop(&mut self) {
        let mut tools = self
            .ledger
            .tools
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tools.retain(|t| t.id != self.id);
    }
}

impl Ledger {
    /// A built-in tool call at `place` starts; it is running until the
    /// returned guard is dropped.
    pub fn tool_started(&self, place: &Place, name: &str, summary: &str) -> ToolRunning<'_> {
        let id = self.tools.next.fetch_add(1, Ordering::Relaxed);
        let mut tools = self
            .tools
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tools.push(RunningTool {
            place: place.clone(),
            name: name.to_string(),
            summary: summary.to_string(),
            started: Instant::now(),
            id,
        });
        drop(tools);
        self.step(super::Step::Tool(place, name));
        ToolRunning { ledger: self, id }
    }

    /// The built-in tool calls running now, oldest first.
    pub fn tools_running(&self) -> Vec<RunningTool> {
        self.tools
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// A built-in tool call at `place` ended.
    pub fn record_tool(&self, place: &Place, mut detail: ToolDetail) {
        detail.path = place.path.clone();
        detail.agent = place.agent.clone();
        let mut details = self
            .tools
            .details
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        details.push(detail);
    }

    /// The built-in tool calls the agent at `path` made, in the order the
    /// model made them (calls of one response end in any order).
    pub fn tool_details(&self, path: &str) -> Vec<ToolDetail> {
        let details = self
            .tools
            .details
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut mine: Vec<ToolDetail> = details
            .iter()
            .filter(|d| *d.path == *path)
            .cloned()
            .collect();
        mine.sort_by_key(|d| (d.turn, d.index));
        mine
    }

    /// The built-in tool calls made by every run of the agent named
    /// `agent`: each run's in the order the model made them, the runs in
    /// the order their calls ended.
    pub fn agent_tool_details(&self, agent: &str) -> Vec<ToolDetail> {
        let details = self
            .tools
            .details
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut theirs: Vec<ToolDetail> = details
            .iter()
            .filter(|d| *d.agent == *agent)
            .cloned()
            .collect();
        // Stable: the runs keep their order, each run's calls sorted.
        let first: Vec<Arc<str>> = theirs.iter().map(|d| d.path.clone()).collect();
        theirs.sort_by_key(|d| {
            let run = first.iter().position(|p| *p == d.path).unwrap_or(0);
            (run, d.turn, d.index)
        });
        theirs
    }
}
