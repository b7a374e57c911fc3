//! End-to-end tests against real third-party servers, run by `make e2e`
//! (scripts/e2e.sh starts the servers on 127.0.0.1 and passes their URLs):
//!
//! - `AXE_E2E_LLAMA_URL`: llama.cpp's own server (the xllamacpp wheel) with
//!   Qwen2.5-Coder 0.5B Instruct and examples/demo/chat-template.jinja: a
//!   real model whose real tool calls go through `call_agent` and to the
//!   built-in `read_file` and `run_command` and to the MCP time server
//!   `mcp-server-time` (the agents of fixtures/e2e/agents), on both the OpenAI (`/v1/chat/completions`) and
//!   the Anthropic (`/v1/messages`) wire formats the server speaks;
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

// The shared harness serves the integration crate (tests/it); this crate
// uses a part of it.
#[allow(dead_code, unused_imports)]
mod common;
use common::*;

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

/// Sent as the key to servers that ignore it (axe's OpenAI and Anthropic
/// providers require one).
const DUMMY_KEY: &str = "sk-e2e-local-server-ignores-this";

/// The server's URL from `var`, or a failure that says how to run these.
fn require(var: &str) -> String {
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
fn local_model() -> String {
    std::env::var("AXE_E2E_MODEL")
        .ok()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| "qwen".to_string())
}

// ---------------------------------------------------------------------------
// The recording proxy.
// ---------------------------------------------------------------------------

/// One request axe sent and the upstream server's real answer.
#[derive(Debug, Clone)]
struct Exchange {
    request: Recorded,
    status: u16,
    response: String,
    millis: u128,
}

impl Exchange {
    fn response_json(&self) -> Value {
        serde_json::from_str(&self.response).unwrap_or_else(|e| {
            panic!(
                "{} answered {} with a body that is not JSON ({e}): {}",
                self.request.path, self.status, self.response
            )
        })
    }
}

/// A loopback server that forwards every request to `upstream` and records
/// both sides. Requests are forwarded as they come, several at once when
/// axe sends several, so the proxy also sees how many were in flight.
struct Proxy {
    server: FakeServer,
    log: Arc<Mutex<Vec<Exchange>>>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .into();
        let upstream = upstream.to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let record = log.clone();
        let server = FakeServer::route(move |req| {
            let started = std::time::Instant::now();
            let mut out = agent.post(format!("{upstream}{}", req.path));
            for (k, v) in &req.headers {
                if matches!(
                    k.as_str(),
                    "content-type" | "authorization" | "x-api-key" | "anthropic-version"
                ) {
                    out = out.header(k.as_str(), v.as_str());
                }
            }
            let (status, body) = match out.send(req.body.as_bytes()) {
                Ok(mut resp) => (
                    resp.status().as_u16(),
                    resp.body_mut()
                        .with_config()
                        .limit(64 << 20)
                        .read_to_string()
                        .unwrap_or_else(|e| format!("(proxy: body unreadable: {e})")),
                ),
                Err(e) => (
                    502,
                    json!({"error": {"message": format!("proxy: upstream failed: {e}")}})
                        .to_string(),
                ),
            };
            record.lock().unwrap().push(Exchange {
                request: req.clone(),
                status,
                response: body.clone(),
                millis: started.elapsed().as_millis(),
            });
            Reply::Json(status, body)
        });
        Proxy { server, log }
    }

    fn url(&self) -> &str {
        &self.server.url
    }

    fn exchanges(&self) -> Vec<Exchange> {
        self.log.lock().unwrap().clone()
    }
}

// ---------------------------------------------------------------------------
// The three wire formats, read from the outside.
// ---------------------------------------------------------------------------

/// A tool call as a response carries it: id (Ollama has none), name, arguments.
#[derive(Debug, Clone, PartialEq)]
struct WireCall {
    id: Option<String>,
    name: String,
    arguments: Value,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Format {
    OpenAi,
    Anthropic,
    Ollama,
}

impl Format {
    fn provider(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Ollama => "ollama",
        }
    }

    fn path(self) -> &'static str {
        match self {
            Format::OpenAi => "/v1/chat/completions",
            Format::Anthropic => "/v1/messages",
            Format::Ollama => "/api/chat",
        }
    }

    /// (input, output) tokens of a response, as the server billed them:
    /// Anthropic's input is `input_tokens` plus the prompt-cache writes and
    /// reads, which its `input_tokens` leaves out.
    fn usage(self, resp: &Value) -> (u64, u64) {
        let n = |v: &Value| v.as_u64().unwrap_or(0);
        let u = &resp["usage"];
        match self {
            Format::OpenAi => (n(&u["prompt_tokens"]), n(&u["completion_tokens"])),
            Format::Anthropic => (
                n(&u["input_tokens"])
                    + n(&u["cache_creation_input_tokens"])
                    + n(&u["cache_read_input_tokens"]),
                n(&u["output_tokens"]),
            ),
            Format::Ollama => (n(&resp["prompt_eval_count"]), n(&resp["eval_count"])),
        }
    }

    /// Input tokens read from the server's prompt cache.
    fn cache_reads(self, resp: &Value) -> u64 {
        let u = &resp["usage"];
        match self {
            Format::OpenAi => u["prompt_tokens_details"]["cached_tokens"].as_u64(),
            Format::Anthropic => u["cache_read_input_tokens"].as_u64(),
            Format::Ollama => None,
        }
        .unwrap_or(0)
    }

    /// Input tokens written to the server's prompt cache.
    fn cache_writes(self, resp: &Value) -> u64 {
        let u = &resp["usage"];
        match self {
            Format::OpenAi => u["prompt_tokens_details"]["cache_write_tokens"].as_u64(),
            Format::Anthropic => u["cache_creation_input_tokens"].as_u64(),
            Format::Ollama => None,
        }
        .unwrap_or(0)
    }

    fn stop_reason(self, resp: &Value) -> String {
        let v = match self {
            Format::OpenAi => &resp["choices"][0]["finish_reason"],
            Format::Anthropic => &resp["stop_reason"],
            Format::Ollama => &resp["done_reason"],
        };
        v.as_str().unwrap_or("").to_string()
    }

    /// The answer's text.
    fn content(self, resp: &Value) -> String {
        match self {
            Format::OpenAi => resp["choices"][0]["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            Format::Anthropic => resp["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect(),
            Format::Ollama => resp["message"]["content"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        }
    }

    /// The tool calls of a response.
    fn calls(self, resp: &Value) -> Vec<WireCall> {
        match self {
            Format::OpenAi => openai_calls(&resp["choices"][0]["message"]),
            Format::Anthropic => anthropic_calls(&resp["content"]),
            Format::Ollama => ollama_calls(&resp["message"]),
        }
    }

    /// The messages of a request: for Anthropic, as sent; for the others,
    /// after the system message.
    fn messages(self, req: &Value) -> Vec<Value> {
        let all = req["messages"].as_array().cloned().unwrap_or_default();
        match self {
            Format::Anthropic => all,
            _ => all.into_iter().filter(|m| m["role"] != "system").collect(),
        }
    }

    /// The tool calls of an assistant message in a request.
    fn calls_in_message(self, m: &Value) -> Vec<WireCall> {
        match self {
            Format::OpenAi => openai_calls(m),
            Format::Anthropic => anthropic_calls(&m["content"]),
            Format::Ollama => ollama_calls(m),
        }
    }

    /// The tool results of a request message: (call id, content) each. An
    /// OpenAI or Ollama `tool` message is one result; an Anthropic user
    /// message may hold several `tool_result` blocks.
    fn results_in_message(self, m: &Value) -> Vec<(Option<String>, String)> {
        match self {
            Format::Anthropic => m["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    (
                        b["tool_use_id"].as_str().map(String::from),
                        b["content"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect(),
            _ if m["role"] == "tool" => vec![(
                m["tool_call_id"].as_str().map(String::from),
                m["content"].as_str().unwrap_or("").to_string(),
            )],
            _ => vec![],
        }
    }
}

fn openai_calls(message: &Value) -> Vec<WireCall> {
    message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| WireCall {
            id: c["id"].as_str().map(String::from),
            name: c["function"]["name"].as_str().unwrap_or("").to_string(),
            arguments: match &c["function"]["arguments"] {
                Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
                other => other.clone(),
            },
        })
        .collect()
}

fn anthropic_calls(content: &Value) -> Vec<WireCall> {
    content
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| WireCall {
            id: b["id"].as_str().map(String::from),
            name: b["name"].as_str().unwrap_or("").to_string(),
            arguments: b["input"].clone(),
        })
        .collect()
}

fn ollama_calls(message: &Value) -> Vec<WireCall> {
    message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| WireCall {
            id: None,
            name: c["function"]["name"].as_str().unwrap_or("").to_string(),
            arguments: c["function"]["arguments"].clone(),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Running axe.
// ---------------------------------------------------------------------------

/// `axe` with every provider pointed at the proxy and dummy keys.
fn axe(home: &Home, proxy: &Proxy) -> std::process::Command {
    let mut c = home.axe();
    for p in ["OPENAI", "ANTHROPIC", "OLLAMA"] {
        c.env(format!("AXE_{p}_BASE_URL"), proxy.url());
    }
    c.env("OPENAI_API_KEY", DUMMY_KEY)
        .env("ANTHROPIC_API_KEY", DUMMY_KEY);
    c
}

/// Runs `axe run <agent> --json --verbose --timeout 600 <args>`; returns the
/// output and the parsed JSON report (failing with stderr when it is not 0).
fn run_json(home: &Home, proxy: &Proxy, agent: &str, args: &[&str]) -> (Output, Value) {
    let out = axe(home, proxy)
        .args(["run", agent, "--json", "--verbose", "--timeout", "600"])
        .args(args)
        .output()
        .expect("run axe");
    assert_eq!(
        code(&out),
        0,
        "axe run {agent} failed\nstderr:\n{}\nstdout:\n{}",
        stderr(&out),
        stdout(&out)
    );
    let report: Value = serde_json::from_str(stdout(&out).trim())
        .unwrap_or_else(|e| panic!("--json output is not JSON ({e}): {}", stdout(&out)));
    (out, report)
}

/// Agents by their system prompt, for telling who sent a request.
struct Cast(Vec<(String, String)>);

impl Cast {
    /// Writes `(name, toml)` agents into `home` and remembers their prompts.
    fn write(home: &Home, agents: &[(String, String)]) -> Cast {
        let mut prompts = Vec::new();
        for (name, text) in agents {
            home.agent(name, text);
            let v: toml::Value = toml::from_str(text).expect("agent TOML");
            let prompt = v["system_prompt"].as_str().unwrap_or("").to_string();
            prompts.push((name.clone(), prompt));
        }
        Cast(prompts)
    }

    fn who(&self, req: &Recorded) -> String {
        let prompt = req.system_prompt();
        self.0
            .iter()
            .find(|(_, p)| *p == prompt)
            .map_or_else(|| "?".to_string(), |(n, _)| n.clone())
    }
}

/// The exchanges that agent `name` made, in order.
fn made_by(cast: &Cast, log: &[Exchange], name: &str) -> Vec<Exchange> {
    log.iter()
        .filter(|e| cast.who(&e.request) == name)
        .cloned()
        .collect()
}

#[track_caller]
fn assert_all_ok(log: &[Exchange], format: Format) {
    assert!(!log.is_empty(), "axe sent no request");
    for e in log {
        assert_eq!(e.request.method, "POST");
        assert_eq!(e.request.path, format.path(), "wrong endpoint");
        assert_eq!(
            e.status, 200,
            "the server refused a request axe sent\nrequest: {}\nresponse: {}",
            e.request.body, e.response
        );
    }
}

/// The `--json` report against the responses of the top-level agent: its
/// answer is the last response's text, its stop reason that response's, its
/// tokens the sum of the server's usage over its turns, its tool_calls the
/// calls it made.
#[track_caller]
fn assert_report_matches(format: Format, report: &Value, top: &[Exchange]) {
    let last = top.last().expect("the top-level agent sent a request");
    let last_json = last.response_json();
    assert_eq!(report["content"], json!(format.content(&last_json)));
    assert_eq!(
        report["stop_reason"],
        json!(format.stop_reason(&last_json)),
        "stop_reason"
    );
    let (mut input, mut output, mut calls, mut cached, mut written) = (0, 0, 0, 0, 0);
    for e in top {
        let r = e.response_json();
        let (i, o) = format.usage(&r);
        input += i;
        output += o;
        cached += format.cache_reads(&r);
        written += format.cache_writes(&r);
        calls += format.calls(&r).len() as u64;
    }
    assert_eq!(
        report["cache_read_input_tokens"].as_u64(),
        Some(cached),
        "cache reads"
    );
    assert_eq!(
        report["cache_creation_input_tokens"].as_u64(),
        Some(written),
        "cache writes"
    );
    assert_eq!(
        (
            report["input_tokens"].as_u64(),
            report["output_tokens"].as_u64()
        ),
        (Some(input), Some(output)),
        "--json tokens must equal the server's usage summed over the top-level agent's {} turn(s)",
        top.len()
    );
    assert_eq!(report["tool_calls"].as_u64(), Some(calls), "tool_calls");
}

/// Checks the request after a turn whose response made `calls`: the
/// history is sent back whole (that turn's messages, then the assistant's
/// calls as received, OpenAI's `content` a string, never null), then one
/// result per call, by id, in call order. Returns the results' texts.
#[track_caller]
fn assert_echoed(
    format: Format,
    turn: &Exchange,
    next: &Exchange,
    calls: &[WireCall],
) -> Vec<String> {
    let msgs = format.messages(&next.request.json());
    let before = format.messages(&turn.request.json()).len();
    let assistant = &msgs[before];
    assert_eq!(assistant["role"], "assistant", "{assistant}");
    if format == Format::OpenAi {
        assert!(
            assistant["content"].is_string(),
            "the assistant message with tool_calls must carry string content (design D15): {assistant}"
        );
    }
    let sent_calls = format.calls_in_message(assistant);
    assert_eq!(sent_calls.len(), calls.len(), "{assistant}");
    for (sent, got) in sent_calls.iter().zip(calls) {
        assert_eq!(sent.name, got.name);
        assert_eq!(sent.arguments, got.arguments);
        if got.id.is_some() {
            assert_eq!(sent.id, got.id, "call ids must be sent back as received");
        }
    }
    let results: Vec<(Option<String>, String)> = msgs[before + 1..]
        .iter()
        .flat_map(|m| format.results_in_message(m))
        .collect();
    assert_eq!(results.len(), calls.len(), "one result per call: {msgs:?}");
    for (call, (id, _)) in calls.iter().zip(&results) {
        if call.id.is_some() {
            assert_eq!(id, &call.id, "results in call order, by id");
        }
    }
    results.into_iter().map(|(_, content)| content).collect()
}

/// Checks a delegation conversation of `parent` through `call_agent`:
/// every response with tool calls is followed by a request that carries the
/// assistant's calls and one result per call ([`assert_echoed`]), each the
/// answer of the sub-agent that was asked `Task: <task>`. Returns the number
/// of calls checked.
#[track_caller]
fn assert_round_trips(format: Format, cast: &Cast, log: &[Exchange], parent: &str) -> usize {
    let turns = made_by(cast, log, parent);
    let mut checked = 0;
    for (i, turn) in turns.iter().enumerate() {
        let calls = format.calls(&turn.response_json());
        if calls.is_empty() {
            continue;
        }
        let next = turns.get(i + 1).unwrap_or_else(|| {
            panic!(
                "{parent}'s turn {} called tools but no later request came",
                i + 1
            )
        });
        let results = assert_echoed(format, turn, next, &calls);
        for (call, content) in calls.iter().zip(&results) {
            assert_eq!(call.name, "call_agent");
            let agent = call.arguments["agent"].as_str().unwrap_or("");
            let task = call.arguments["task"].as_str().unwrap_or("").trim();
            let context = call.arguments["context"].as_str().unwrap_or("").trim();
            let user = if context.is_empty() {
                format!("Task: {task}")
            } else {
                format!("Task: {task}\n\nContext:\n{context}")
            };
            let sub = made_by(cast, log, agent);
            // Its last turn for this task: with an output schema there may
            // have been repairs (design D22).
            let asked = sub
                .iter()
                .rev()
                .find(|e| e.request.first_user_text() == user)
                .unwrap_or_else(|| {
                    panic!("no request from sub-agent {agent:?} with the user message {user:?}")
                });
            let answer = format.content(&asked.response_json());
            // A sub-agent with an output schema returns its answer as the
            // same JSON value, compact.
            let shaped = serde_json::from_str::<Value>(content)
                .ok()
                .filter(Value::is_object);
            match (shaped, serde_json::from_str::<Value>(answer.trim()).ok()) {
                (Some(got), Some(sent)) => assert_eq!(
                    got, sent,
                    "the tool result is the sub-agent's final answer, as JSON"
                ),
                _ => assert_eq!(
                    content, &answer,
                    "the tool result is the sub-agent's final answer"
                ),
            }
        }
        checked += calls.len();
    }
    checked
}

fn demo_agents() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/axe/agents");
    ["lead", "summarizer", "critic"]
        .iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(format!("{n}.toml"))).unwrap();
            // The model the local server answers to, whatever its alias.
            let text = text.replace("openai/qwen", &format!("openai/{}", local_model()));
            (n.to_string(), text)
        })
        .collect()
}

fn demo_input() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/input.txt");
    std::fs::read_to_string(p).unwrap().trim().to_string()
}

fn print_timings(log: &[Exchange], cast: &Cast) {
    for e in log {
        eprintln!(
            "  {:>10} {} -> {} in {} ms",
            cast.who(&e.request),
            e.request.path,
            e.status,
            e.millis
        );
    }
}

// ---------------------------------------------------------------------------
// llama.cpp's server with a real model, on the OpenAI and Anthropic wires.
// ---------------------------------------------------------------------------

/// The demo agents on `format`'s wire.
fn demo_agents_on(format: Format) -> Vec<(String, String)> {
    demo_agents()
        .into_iter()
        .map(|(name, text)| {
            let text = text.replace(
                &format!("openai/{}", local_model()),
                &format!("{}/{}", format.provider(), local_model()),
            );
            (name, text)
        })
        .collect()
}

/// A single-shot agent on `format`: one request, the request shape the API
/// reference gives, the server's usage in `--json`.
fn single_shot(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let cast = Cast::write(
        &home,
        &[(
            "solo".into(),
            format!(
                "name = \"solo\"\nmodel = \"{}/{}\"\nsystem_prompt = \"You answer in one short sentence.\"\n\
                 [params]\ntemperature = 0\nmax_tokens = 40\n",
                format.provider(),
                local_model()
            ),
        )],
    );
    let (_, report) = run_json(&home, &proxy, "solo", &["-p", "What is a CLI?"]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);
    assert_eq!(log.len(), 1, "a single-shot run is one request");
    let req = &log[0].request;
    let body = req.json();
    assert!(
        body.get("tools").is_none(),
        "no sub_agents, no tools: {body}"
    );
    assert_eq!(body["temperature"], json!(0));
    assert_eq!(body["max_tokens"], json!(40));
    let resp = log[0].response_json();
    match format {
        Format::OpenAi => assert_eq!(resp["object"], "chat.completion"),
        _ => {
            assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(req.header("x-api-key"), Some(DUMMY_KEY));
            // One text block, carrying the prompt-cache mark (design §4.10).
            assert_eq!(
                body["system"],
                json!([{"type": "text", "text": "You answer in one short sentence.",
                        "cache_control": {"type": "ephemeral"}}])
            );
            assert_eq!(resp["type"], "message");
            assert_eq!(resp["role"], "assistant");
        }
    }
    let (input, output) = format.usage(&resp);
    assert!(input > 0 && output > 0, "the server reports usage: {resp}");
    assert_report_matches(format, &report, &log);
    assert_eq!(
        report["model"],
        json!(format!("{}/{}", format.provider(), local_model()))
    );
}

/// The demo's lead on `format`: a real model's real calls to both
/// sub-agents in one response, which run at the same time on the server's
/// two slots; every result goes back by id, in call order; the lead answers
/// without tools; `--json` matches the server's usage, the whole tree's too.
fn delegation(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &demo_agents_on(format));
    let (out, report) = run_json(&home, &proxy, "lead", &["-p", &demo_input()]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);
    let lead = made_by(&cast, &log, "lead");
    let first = lead[0].response_json();
    let calls = format.calls(&first);
    assert_eq!(
        calls.len(),
        2,
        "the lead did not call both sub-agents in its first response (the demo's \
         prompt and chat template make it do so at temperature 0): {first}"
    );
    let body = lead[0].request.json();
    let enum_path = match format {
        Format::OpenAi => &body["tools"][0]["function"]["parameters"],
        _ => &body["tools"][0]["input_schema"],
    };
    assert_eq!(
        enum_path["properties"]["agent"]["enum"],
        json!(["summarizer", "critic"])
    );
    if format == Format::OpenAi {
        assert_eq!(body["parallel_tool_calls"], json!(true), "{body}");
    }
    assert_eq!(assert_round_trips(format, &cast, &log, "lead"), 2);
    // The two sub-agents were answered by the server at the same time.
    assert!(
        proxy.server.max_in_flight() >= 2,
        "the two calls of one response did not run side by side"
    );
    let last = lead.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &lead);
    let (mut input, mut output) = (0, 0);
    for e in &log {
        let (i, o) = format.usage(&e.response_json());
        input += i;
        output += o;
    }
    assert_eq!(
        (
            report["total_input_tokens"].as_u64(),
            report["total_output_tokens"].as_u64()
        ),
        (Some(input), Some(output)),
        "the tree's totals are everything the server billed"
    );
    let err = stderr(&out);
    assert!(err.contains("[turn 1] Sending request"), "{err}");
    assert!(err.contains("[sub-agent] Calling \"summarizer\""), "{err}");
    assert!(err.contains("[sub-agent] Calling \"critic\""), "{err}");
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_single_shot() {
    single_shot(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_single_shot() {
    single_shot(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_delegation_to_two_sub_agents_at_once() {
    delegation(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_delegation_to_two_sub_agents_at_once() {
    delegation(Format::Anthropic);
}

/// An agent with an output schema on the OpenAI wire: llama.cpp's server
/// turns `response_format`'s schema into a grammar, so the real model's
/// answer is JSON of that shape on the first turn; axe checks it anyway,
/// prints it compact and puts the value in `--json`'s `output`.
#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_answer_in_a_schema() {
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let schema = json!({
        "type": "object",
        "properties": {
            "severity": {"type": "string", "enum": ["low", "high"]},
            "reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3}
        },
        "required": ["severity", "reasons"]
    });
    std::fs::write(home.config_dir().join("triage.json"), schema.to_string()).unwrap();
    let cast = Cast::write(
        &home,
        &[(
            "triage".into(),
            format!(
                "name = \"triage\"\nmodel = \"openai/{}\"\n\
                 system_prompt = \"You triage incident reports: how severe, and why.\"\n\
                 [output]\nschema_file = \"triage.json\"\n\
                 [params]\ntemperature = 0\nmax_tokens = 200\n",
                local_model()
            ),
        )],
    );
    let (_, report) = run_json(
        &home,
        &proxy,
        "triage",
        &["-p", "The database disk is full and every write fails."],
    );
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, Format::OpenAi);
    let body = log[0].request.json();
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["schema"], schema);
    let output = &report["output"];
    assert!(
        output["severity"] == "low" || output["severity"] == "high",
        "{report}"
    );
    let reasons = output["reasons"].as_array().expect("reasons");
    assert!((1..=3).contains(&reasons.len()), "{report}");
    assert_eq!(report["content"], json!(output.to_string()));
    eprintln!(
        "  answer: {}  ({} request(s))",
        report["content"],
        log.len()
    );
}

// ---------------------------------------------------------------------------
// The real model using the built-in tools (design chapter 10).
// ---------------------------------------------------------------------------

/// The file in the tool-using agent's workdir: facts no model knows.
const NOTES: &str =
    "Project codename: BLUE HERON\nRelease date: 14 March 2031\nOwner: Marta Kowalczyk\n";

/// A built-in tool the real model is asked to use.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Builtin {
    ReadFile,
    RunCommand,
}

impl Builtin {
    fn name(self) -> &'static str {
        match self {
            Builtin::ReadFile => "read_file",
            Builtin::RunCommand => "run_command",
        }
    }

    /// The argument a call must carry.
    fn argument(self) -> &'static str {
        match self {
            Builtin::ReadFile => "path",
            Builtin::RunCommand => "command",
        }
    }

    /// A question that names the file (or the command): the 0.5B model
    /// guesses paths when it is not told one. The first of `make
    /// demo-rates`' 20 (scripts/tool_rates.py).
    fn question(self) -> &'static str {
        match self {
            Builtin::ReadFile => "What is the project codename in notes.txt?",
            Builtin::RunCommand => "What does `grep -n codename notes.txt` print?",
        }
    }

    /// The agent in fixtures/e2e/agents that has this tool (`make
    /// demo-rates` measures the same agents over 20 questions).
    fn agent(self) -> &'static str {
        match self {
            Builtin::ReadFile => "reader",
            Builtin::RunCommand => "runner",
        }
    }

    /// What axe sent back for the model's call: the file's numbered lines,
    /// or the command's output and its exit status.
    #[track_caller]
    fn assert_result(self, call: &WireCall, result: &str) {
        match self {
            Builtin::ReadFile => {
                let numbered: String = NOTES
                    .lines()
                    .enumerate()
                    .map(|(i, l)| format!("{}: {l}\n", i + 1))
                    .collect();
                if call.arguments.as_object().is_some_and(|a| a.len() == 1) {
                    assert_eq!(result, numbered, "read_file's result for {call:?}");
                } else {
                    // An offset or a limit: at least the line with the fact.
                    assert!(
                        result.contains("1: Project codename: BLUE HERON\n"),
                        "read_file's result for {call:?}: {result:?}"
                    );
                }
            }
            Builtin::RunCommand => {
                assert!(
                    result.contains("Project codename: BLUE HERON\n"),
                    "run_command's result for {call:?} lacks the command's output: {result:?}"
                );
                let status = result.lines().last().unwrap_or("");
                assert!(
                    status.starts_with("[exit status 0, ") && status.ends_with(" ms]"),
                    "run_command's result for {call:?} must end in its exit status: {result:?}"
                );
            }
        }
    }
}

/// An agent on `format` with the one built-in `tool` and a workdir holding
/// notes.txt, asked about it: the real model's first response calls the
/// tool with its argument; axe runs it and sends the result back by id,
/// the history whole; the model then answers without tools; `--json`
/// matches the server's usage; `--verbose` shows the call.
fn tool_step(format: Format, tool: Builtin) {
    if tool == Builtin::RunCommand && axe::sandbox::landlock_abi() == 0 {
        eprintln!(
            "SKIPPED: this kernel has no Landlock, so run_command is refused; \
             the real model's run_command step was NOT tested"
        );
        return;
    }
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), NOTES).unwrap();
    // The fixture names neither model nor workdir.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("fixtures/e2e/agents/{}.toml", tool.agent()));
    let mut agent: toml::Table = toml::from_str(&std::fs::read_to_string(fixture).unwrap())
        .expect("the fixture agent is TOML");
    agent.insert(
        "model".into(),
        format!("{}/{}", format.provider(), local_model()).into(),
    );
    agent.insert("workdir".into(), work.display().to_string().into());
    let agent = toml::to_string(&agent).expect("agent TOML");
    let cast = Cast::write(&home, &[(tool.agent().into(), agent)]);
    let (out, report) = run_json(&home, &proxy, tool.agent(), &["-p", tool.question()]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);

    let body = log[0].request.json();
    let offered: Vec<&Value> = body["tools"].as_array().expect("tools").iter().collect();
    assert_eq!(offered.len(), 1, "only the agent's one tool: {body}");
    let (name, params) = match format {
        Format::OpenAi => (
            &offered[0]["function"]["name"],
            &offered[0]["function"]["parameters"],
        ),
        _ => (&offered[0]["name"], &offered[0]["input_schema"]),
    };
    assert_eq!(name, tool.name());
    assert_eq!(params["required"], json!([tool.argument()]), "{body}");

    let first = log[0].response_json();
    let calls = format.calls(&first);
    assert!(
        !calls.is_empty() && calls[0].name == tool.name(),
        "the model did not call {} in its first response (the prompt's worked example \
         makes it do so at temperature 0): {first}",
        tool.name()
    );
    let argument = calls[0].arguments[tool.argument()].as_str().unwrap_or("");
    assert!(!argument.trim().is_empty(), "{calls:?}");
    let mut results = Vec::new();
    for (i, turn) in log.iter().enumerate() {
        let made = format.calls(&turn.response_json());
        if made.is_empty() {
            continue;
        }
        let next = log
            .get(i + 1)
            .unwrap_or_else(|| panic!("turn {} called tools but no later request came", i + 1));
        results.push(assert_echoed(format, turn, next, &made));
    }
    tool.assert_result(&calls[0], &results[0][0]);

    let last = log.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &log);
    let answer = report["content"].as_str().unwrap_or("");
    assert!(!answer.trim().is_empty(), "no final answer: {report}");
    let err = stderr(&out);
    let line = format!("[tool] {}: {} ", tool.name(), tool.argument());
    assert!(
        err.lines()
            .any(|l| l.starts_with(&line) && l.contains("(ok, ")),
        "{err}"
    );
    eprintln!(
        "  {} call(s) in {} turn(s); answer ({} the fact): {answer:?}",
        report["tool_calls"],
        log.len(),
        if answer.contains("BLUE HERON") {
            "has"
        } else {
            "lacks"
        }
    );
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_tool_read_file() {
    tool_step(Format::OpenAi, Builtin::ReadFile);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_tool_read_file() {
    tool_step(Format::Anthropic, Builtin::ReadFile);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_tool_run_command() {
    tool_step(Format::OpenAi, Builtin::RunCommand);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_tool_run_command() {
    tool_step(Format::Anthropic, Builtin::RunCommand);
}

// ---------------------------------------------------------------------------
// The real model calling an MCP server's tool (README "MCP servers").
// ---------------------------------------------------------------------------

/// The question of the MCP cases: a zone not in the prompt's examples.
const TIME_QUESTION: &str = "What is the current time in London?";

/// `mcp-server-time` as scripts/mcp_servers.sh installs it, or `None`
/// after a loud SKIPPED line.
fn time_server() -> Option<std::path::PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/mcp/venv/bin/mcp-server-time");
    if bin.exists() {
        Some(bin)
    } else {
        eprintln!(
            "SKIPPED: mcp-server-time is not installed (run scripts/mcp_servers.sh; \
             scripts/e2e.sh does); the real model's MCP call was NOT tested"
        );
        None
    }
}

/// fixtures/e2e/agents/clock.toml on `format`, with the model named.
fn clock_agent(format: Format) -> String {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/e2e/agents/clock.toml");
    let mut agent: toml::Table = toml::from_str(&std::fs::read_to_string(fixture).unwrap())
        .expect("the fixture agent is TOML");
    agent.insert(
        "model".into(),
        format!("{}/{}", format.provider(), local_model()).into(),
    );
    toml::to_string(&agent).expect("agent TOML")
}

/// config.toml's `[[mcp_servers]]` table for the time server at `bin`:
/// stdio, UTC as its local zone.
fn time_server_config(bin: &Path) -> String {
    format!(
        "[[mcp_servers]]\nname = \"time\"\ncommand = {:?}\nargs = [\"--local-timezone\", \"UTC\"]\ntimeout = 60\n",
        bin.display().to_string()
    )
}

/// The clock agent on `format` asked the time in London: its request offers
/// only `time__get_current_time` (the server's schema, `timezone`
/// required); the real model's first response calls it with a zone; axe's
/// next request carries the call as received and, by id, the server's
/// result, JSON with that zone and a `datetime`; the last response calls no
/// tool; the run exits 0 with an answer; `--json` matches the server's
/// usage; `--verbose` shows the server starting and the call.
fn mcp_time_step(format: Format) {
    let Some(bin) = time_server() else { return };
    let proxy = Proxy::start(&require("AXE_E2E_LLAMA_URL"));
    let home = Home::new();
    home.config(&time_server_config(&bin));
    let cast = Cast::write(&home, &[("clock".into(), clock_agent(format))]);
    let (out, report) = run_json(&home, &proxy, "clock", &["-p", TIME_QUESTION]);
    let log = proxy.exchanges();
    print_timings(&log, &cast);
    assert_all_ok(&log, format);

    let body = log[0].request.json();
    let offered: Vec<&Value> = body["tools"].as_array().expect("tools").iter().collect();
    assert_eq!(offered.len(), 1, "only time__get_current_time: {body}");
    let (name, params) = match format {
        Format::OpenAi => (
            &offered[0]["function"]["name"],
            &offered[0]["function"]["parameters"],
        ),
        _ => (&offered[0]["name"], &offered[0]["input_schema"]),
    };
    assert_eq!(name, "time__get_current_time");
    assert_eq!(params["required"], json!(["timezone"]), "{body}");

    let first = log[0].response_json();
    let calls = format.calls(&first);
    assert!(
        !calls.is_empty() && calls[0].name == "time__get_current_time",
        "the model did not call time__get_current_time in its first response: {first}"
    );
    let zone = calls[0].arguments["timezone"].as_str().unwrap_or("");
    assert!(!zone.trim().is_empty(), "{calls:?}");
    let next = log
        .get(1)
        .expect("the call was made but no later request came");
    let results = assert_echoed(format, &log[0], next, &calls);
    let result: Value = serde_json::from_str(&results[0])
        .unwrap_or_else(|e| panic!("the time server's result is not JSON ({e}): {results:?}"));
    assert_eq!(result["timezone"], zone, "{result}");
    let datetime = result["datetime"].as_str().unwrap_or("");
    assert!(
        datetime.len() >= 19 && datetime.as_bytes()[10] == b'T',
        "the result must hold an ISO datetime: {result}"
    );

    let last = log.last().unwrap().response_json();
    assert!(format.calls(&last).is_empty(), "{last}");
    assert_report_matches(format, &report, &log);
    let answer = report["content"].as_str().unwrap_or("");
    assert!(!answer.trim().is_empty(), "no final answer: {report}");
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.starts_with("[mcp] \"time\" ready:")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("[tool] time__get_current_time: ") && l.contains("(ok, ")),
        "{err}"
    );
    eprintln!(
        "  {} call(s) in {} turn(s); zone {zone:?}, datetime {datetime:?}; answer: {answer:?}",
        report["tool_calls"],
        log.len()
    );
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_openai_mcp_time() {
    mcp_time_step(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn llama_anthropic_mcp_time() {
    mcp_time_step(Format::Anthropic);
}

// ---------------------------------------------------------------------------
// aimock: a third-party implementation of each wire format, with tool calls.
// ---------------------------------------------------------------------------

fn aimock_agents(format: Format) -> Vec<(String, String)> {
    let model = format!("{}/aimock-model", format.provider());
    let agent = |name: &str, extra: &str| {
        (
            name.to_string(),
            format!(
                "name = \"{name}\"\nmodel = \"{model}\"\nsystem_prompt = \"You are {name}.\"\n{extra}"
            ),
        )
    };
    vec![
        agent("aimock-lead", "sub_agents = [\"aimock-helper\"]\n"),
        agent("aimock-fanout", "sub_agents = [\"aimock-helper\"]\n"),
        agent("aimock-helper", ""),
    ]
}

/// `aimock-lead` calls `call_agent` once (fixture), `aimock-helper` answers,
/// and the lead's fixture answers only once the tool result is in the request.
fn aimock_round_trip(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_AIMOCK_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &aimock_agents(format));
    let (out, report) = run_json(&home, &proxy, "aimock-lead", &["-p", "Go."]);
    let log = proxy.exchanges();
    assert_all_ok(&log, format);
    let who: Vec<String> = log.iter().map(|e| cast.who(&e.request)).collect();
    assert_eq!(who, ["aimock-lead", "aimock-helper", "aimock-lead"]);
    let helper = &log[1].request;
    assert_eq!(helper.first_user_text(), "Task: Name one prime number.");
    assert_eq!(assert_round_trips(format, &cast, &log, "aimock-lead"), 1);
    assert_eq!(report["content"], "lead: the helper has answered");
    let lead = made_by(&cast, &log, "aimock-lead");
    assert_report_matches(format, &report, &lead);
    let err = stderr(&out);
    assert!(
        err.contains("[sub-agent] \"aimock-helper\" completed"),
        "{err}"
    );
}

/// `aimock-fanout` calls `call_agent` twice in one response: both run, and
/// both results go back in call order.
fn aimock_fan_out(format: Format) {
    let proxy = Proxy::start(&require("AXE_E2E_AIMOCK_URL"));
    let home = Home::new();
    let cast = Cast::write(&home, &aimock_agents(format));
    let (_, report) = run_json(&home, &proxy, "aimock-fanout", &["-p", "Go."]);
    let log = proxy.exchanges();
    assert_all_ok(&log, format);
    let helpers: Vec<String> = made_by(&cast, &log, "aimock-helper")
        .iter()
        .map(|e| e.request.first_user_text())
        .collect();
    assert_eq!(helpers.len(), 2);
    assert!(helpers.contains(&"Task: First task.".to_string()));
    assert!(helpers.contains(&"Task: Second task.".to_string()));
    assert_eq!(assert_round_trips(format, &cast, &log, "aimock-fanout"), 2);
    assert_eq!(report["content"], "fanout: both helpers have answered");
    assert_eq!(report["tool_calls"], 2);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_openai_call_agent_round_trip() {
    aimock_round_trip(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_anthropic_call_agent_round_trip() {
    aimock_round_trip(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_ollama_call_agent_round_trip() {
    aimock_round_trip(Format::Ollama);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_openai_parallel_fan_out() {
    aimock_fan_out(Format::OpenAi);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_anthropic_parallel_fan_out() {
    aimock_fan_out(Format::Anthropic);
}

#[test]
#[ignore = "needs a real server: make e2e"]
fn aimock_ollama_parallel_fan_out() {
    aimock_fan_out(Format::Ollama);
}
