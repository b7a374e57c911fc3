//! Sub-agents through the real `axe` binary (design chapter 3): one
//! file per part of it, the helpers they share here.
//!
//! Every agent's system prompt is `You are <name>.`, so one fake server can
//! play several agents: its handler answers by who is asking and by whether
//! the request already carries tool results (a later turn).

mod conversation;
mod depth_and_timeouts;
mod fan_out;
mod reports;

use crate::common::*;

use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a barrier waits for its requests before giving up: long enough
/// for a loaded CI machine, short enough that a sequential implementation
/// fails instead of hanging.
const GATE_WAIT: Duration = Duration::from_secs(10);

const RETRY_HINT: &str = "You may retry or proceed without this result.";

#[track_caller]
fn assert_ok(out: &Output) {
    assert_eq!(code(out), 0, "stderr: {}", stderr(out));
}

/// The contents of every tool result in a request, in order, joined by
/// `sep`: OpenAI/Ollama `role: tool` messages or Anthropic `tool_result` blocks.
fn results_text(req: &Recorded, sep: &str) -> String {
    req.tool_result_texts().join(sep)
}

/// An OpenAI server playing a parent `lead` that delegates `calls` in its
/// first response and then answers `final` (echoing the tool results'
/// contents, joined by ` | `), and any other agent answering
/// `answer from <name>`.
fn openai_delegation(calls: Vec<(String, Value)>) -> FakeServer {
    openai_delegation_with(calls, Duration::ZERO)
}

/// [`openai_delegation`] with every sub-agent answer taking `delay`.
fn openai_delegation_with(calls: Vec<(String, Value)>, delay: Duration) -> FakeServer {
    FakeServer::route(move |req| {
        let name = req.who();
        if name == "lead" {
            if req.has_tool_results() {
                Reply::Json(200, openai_text(&results_text(req, " | "), 7, 3))
            } else {
                let calls: Vec<Call> = calls
                    .iter()
                    .map(|(id, args)| (id.as_str(), "call_agent", args.clone()))
                    .collect();
                Reply::Json(200, openai_tool_calls(&calls, 10, 5))
            }
        } else {
            std::thread::sleep(delay);
            Reply::Json(200, openai_text(&format!("answer from {name}"), 100, 50))
        }
    })
}

fn calls(list: &[(&str, Value)]) -> Vec<(String, Value)> {
    list.iter()
        .map(|(i, v)| (i.to_string(), v.clone()))
        .collect()
}

/// A server where every agent that was given tools delegates once to the
/// agent named in its own `sub_agents` list (the enum of its tool), then
/// answers `<name>(<result>)`; an agent without tools answers `<name>`.
fn chain_server() -> FakeServer {
    FakeServer::route(|req| {
        let name = req.who();
        let body = req.json();
        let next = body["tools"][0]["function"]["parameters"]["properties"]["agent"]["enum"][0]
            .as_str()
            .map(str::to_string);
        match next {
            None => Reply::Json(200, openai_text(&name, 1, 1)),
            Some(_) if req.has_tool_results() => {
                let inner = req.tool_messages()[0]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                Reply::Json(200, openai_text(&format!("{name}({inner})"), 1, 1))
            }
            Some(next) => Reply::Json(
                200,
                openai_tool_calls(&[("d", "call_agent", delegate(&next, "go"))], 1, 1),
            ),
        }
    })
}
