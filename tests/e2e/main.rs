//! End-to-end tests against real third-party servers, run by `make e2e`
//! (scripts/e2e.sh starts the servers on 127.0.0.1 and passes their URLs):
//!
//! - `AXE_E2E_LLAMA_URL`: llama.cpp's own server (the xllamacpp wheel) with
//!   Qwen2.5-Coder 0.5B Instruct and examples/demo/chat-template.jinja: a
//!   real model whose real tool calls go through `call_agent` and to the
//!   built-in `read_file` and `run_command` and to the MCP time server
//!   `mcp-server-time` (the agents of fixtures/e2e/agents), on both the OpenAI (`/v1/chat/completions`) and
//!   the Anthropic (`/v1/messages`) wire formats the server speaks, and
//!   `read_file` on its Responses API (`/v1/responses`); and the
//!   model of a real MCP host, `llm` with `llm-tools-mcp` (`AXE_E2E_LLM`),
//!   delegating to an axe agent through `axe mcp serve`;
//! - `AXE_E2E_AIMOCK_URL`: `@copilotkit/aimock` serving OpenAI, Anthropic and
//!   Ollama from `fixtures/e2e/aimock.json`: a third-party implementation of
//!   each wire format, scripted to call `call_agent` and to answer once the
//!   tool result arrives (the Ollama wire has no real server here).
//!
//! Every test is `#[ignore]`, so `cargo test` (and `make test`, and CI) skips
//! them; `cargo test --test e2e -- --ignored` runs them, and a test whose
//! server variable is unset fails saying so instead of passing.
//!
//! axe talks to each server through a recording proxy (the test harness's
//! loopback server, forwarding with ureq), so the tests see every request
//! axe sent and every response the server really gave. They assert protocol
//! facts and structure (status codes, messages, ids, token counts, which
//! agent asked what, what ran at the same time), never a model's wording.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../common/mod.rs"]
mod common;
use common::*;

mod aimock;
mod harness;
mod host;
mod llama;
mod mcp;
mod proxy;
mod responses;
mod stream;
mod tools;
mod wire;

use harness::*;
use proxy::*;
use wire::*;

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// Sent as the key to servers that ignore it (axe's OpenAI and Anthropic
/// providers require one).
pub(crate) const DUMMY_KEY: &str = "sk-e2e-local-server-ignores-this";

/// The server's URL from `var`, or a failure that says how to run these.
pub(crate) fn require(var: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => v.trim().trim_end_matches('/').to_string(),
        _ => panic!(
            "{var} is not set: this end-to-end test needs a real server. Run `make e2e` \
             (scripts/e2e.sh starts the servers and sets AXE_E2E_LLAMA_URL and \
             AXE_E2E_AIMOCK_URL)"
        ),
    }
}

/// The model name the local llama.cpp servers answer to.
pub(crate) fn local_model() -> String {
    std::env::var("AXE_E2E_MODEL")
        .ok()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| "qwen".to_string())
}
