//! The `call_agent` tool driven through the library API in-process: its
//! definition, and its execution against real agent files in a temp config
//! directory and a fake provider on 127.0.0.1 (design §3.3–§3.12; D5–D7,
//! D9, D19). Nothing here touches the process environment or the internet.

mod common;
use common::*;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axe::config::{GlobalConfig, ProviderSettings, RetrySettings};
use axe::deadline::Deadline;
use axe::ledger::{Children, Ledger, Place};
use axe::provider::{ToolCall, ToolResult};
use axe::run::Ctx;
use axe::stderr::Verbose;
use axe::tool::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// Helpers.
// ---------------------------------------------------------------------------

/// The key every provider here is configured with. It is registered for
/// redaction (process-wide), so no expected text may contain it.
const KEY: &str = "sk-test-tool-1234567890";

/// The tail of every `Error: sub-agent ...` result (design §3.6).
const TAIL: &str = ". You may retry or proceed without this result.";

/// A global config naming each `(provider, key, base_url)`.
fn global(providers: &[(&str, Option<&str>, &str)]) -> GlobalConfig {
    GlobalConfig {
        providers: providers
            .iter()
            .map(|(name, key, url)| {
                (
                    name.to_string(),
                    ProviderSettings {
                        api_key: key.map(str::to_string),
                        base_url: Some(url.to_string()),
                    },
                )
            })
            .collect(),
        // The default 2 retries, with millisecond waits.
        retry: RetrySettings {
            max_retries: None,
            initial_delay_ms: Some(1),
            max_delay_ms: Some(5),
        },
        mcp_servers: Vec::new(),
    }
}

/// OpenAI at `server`, with a key.
fn openai(server: &FakeServer) -> GlobalConfig {
    assert!(
        std::env::var_os("AXE_OPENAI_BASE_URL").is_none(),
        "AXE_OPENAI_BASE_URL is set: it would send these tests' requests elsewhere; unset it"
    );
    global(&[("openai", Some(KEY), &server.url)])
}

/// A temp directory that is both the config directory (`agents/` inside)
/// and the current directory of the run, with the global config.
struct Setup {
    dir: TempDir,
    global: GlobalConfig,
}

impl Setup {
    fn new(global: GlobalConfig) -> Setup {
        let dir = TempDir::new("tool");
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        Setup { dir, global }
    }

    /// OpenAI at `server`.
    fn openai(server: &FakeServer) -> Setup {
        Setup::new(openai(server))
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Writes `<config>/agents/<name>.toml`.
    fn agent(&self, name: &str, toml: &str) {
        let path = self.dir().join("agents").join(format!("{name}.toml"));
        std::fs::write(path, toml).unwrap();
    }

    /// A context at `depth` of a tree bounded by `max_depth`, with a deadline
    /// `secs` from now.
    fn ctx(&self, depth: u32, max_depth: u32, secs: u64) -> Ctx<'_> {
        Ctx {
            global: &self.global,
            config_dir: self.dir(),
            cwd: self.dir(),
            depth,
            max_depth,
            deadline: Deadline {
                at: Instant::now() + Duration::from_secs(secs),
                secs,
            },
            retries: None,
            verbose: Verbose::new(false),
            ledger: std::sync::Arc::new(Ledger::new()),
            place: Place::default(),
            budgets: Vec::new(),
            snapshot: Default::default(),
            mcp: Default::default(),
        }
    }
}

/// A plain OpenAI agent file.
fn openai_agent(name: &str, system_prompt: &str) -> String {
    format!("name = \"{name}\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"{system_prompt}\"\n")
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A `call_agent` call with exactly these arguments.
fn call_with(id: &str, args: &[(&str, &str)]) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: CALL_AGENT.into(),
        arguments: args
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..ToolCall::default()
    }
}

fn call(id: &str, agent: &str, task: &str) -> ToolCall {
    call_with(id, &[("agent", agent), ("task", task)])
}

/// Runs `call` for a caller allowed `allowed`, parallel, with no own timeout.
fn run(ctx: &Ctx, allowed: &[&str], call: &ToolCall) -> ToolResult {
    run_timed(ctx, allowed, 0, call)
}

/// Runs `call` for a caller allowed `allowed` with its own `timeout_secs`.
fn run_timed(ctx: &Ctx, allowed: &[&str], timeout_secs: u64, call: &ToolCall) -> ToolResult {
    let allowed = names(allowed);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: true,
        timeout_secs,
        tools: None,
        mcp: &[],
        ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };
    run_call(call, &caller)
}

#[track_caller]
fn assert_error(r: &ToolResult, id: &str, expected: &str) {
    assert_eq!(r.content, expected);
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, id);
}

#[track_caller]
fn assert_no_request(server: &FakeServer) {
    assert_eq!(server.requests().len(), 0, "{:?}", server.requests());
}

/// An OpenAI-style error body.
fn openai_error(message: &str, kind: &str, code: Value) -> String {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}}).to_string()
}

// ---------------------------------------------------------------------------
// The tool definition (design §3.3, D19).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_tool_definition() {
    let tool = call_agent_tool(&names(&["helper", "runner"]), &[]);
    assert_eq!(CALL_AGENT, "call_agent");
    assert_eq!(tool.name, "call_agent");
    assert_eq!(
        tool.description,
        "Delegate a task to a sub-agent. The sub-agent runs independently with its own context \
         and returns only its final result. Available agents: helper, runner"
    );
    let keys: Vec<&str> = tool.parameters.keys().map(String::as_str).collect();
    assert_eq!(keys, ["agent", "context", "task"]);

    let agent = &tool.parameters["agent"];
    assert_eq!(agent.kind, "string");
    assert!(agent.required);
    assert_eq!(
        agent.description,
        "Name of the sub-agent to invoke (must be one of: helper, runner)"
    );
    assert_eq!(agent.allowed, ["helper", "runner"]);

    let task = &tool.parameters["task"];
    assert_eq!(task.kind, "string");
    assert!(task.required);
    assert_eq!(task.description, "What you need the sub-agent to do");
    assert!(task.allowed.is_empty());

    let context = &tool.parameters["context"];
    assert_eq!(context.kind, "string");
    assert!(!context.required);
    assert_eq!(
        context.description,
        "Additional context from your conversation to pass along"
    );
    assert!(context.allowed.is_empty());
}

#[test]
fn call_agent_tool_with_no_agents_keeps_its_structure() {
    let tool = call_agent_tool(&[], &[]);
    assert_eq!(tool.name, "call_agent");
    assert!(
        tool.description.ends_with("Available agents: "),
        "{}",
        tool.description
    );
    assert!(
        tool.description
            .starts_with("Delegate a task to a sub-agent.")
    );
    assert_eq!(tool.parameters.len(), 3);
    let agent = &tool.parameters["agent"];
    assert_eq!(
        agent.description,
        "Name of the sub-agent to invoke (must be one of: )"
    );
    assert!(agent.required);
    assert!(agent.allowed.is_empty());
    assert!(tool.parameters["task"].required);
    assert!(!tool.parameters["context"].required);
}

#[test]
fn call_agent_tool_with_duplicate_names_dedups_the_enum_only() {
    let tool = call_agent_tool(&names(&["a", "b", "a"]), &[]);
    assert!(
        tool.description.ends_with("Available agents: a, b, a"),
        "{}",
        tool.description
    );
    assert_eq!(
        tool.parameters["agent"].description,
        "Name of the sub-agent to invoke (must be one of: a, b, a)"
    );
    assert_eq!(tool.parameters["agent"].allowed, ["a", "b"]);
}

// ---------------------------------------------------------------------------
// Success, and the user message (design §3.4 steps 6–12).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_success() {
    let server = FakeServer::json(200, &openai_text("the answer", 12, 5));
    let s = Setup::openai(&server);
    s.agent(
        "helper",
        "name = \"helper\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"You are the helper.\"\n\
         [params]\ntemperature = 0.3\nmax_tokens = 77\n",
    );
    let ctx = s.ctx(0, 3, 30);
    let r = run(
        &ctx,
        &["helper"],
        &call("call_abc", "helper", "Summarise it"),
    );
    assert_eq!(
        r,
        ToolResult {
            call_id: "call_abc".into(),
            tool_name: CALL_AGENT.into(),
            content: "the answer".into(),
            is_error: false,
        }
    );

    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.system_prompt(), "You are the helper.");
    assert_eq!(req.first_user_text(), "Task: Summarise it");
    let body = req.json();
    // The sub-agent's own model and params (design §3.4).
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["max_tokens"], 77);
    assert_eq!(req.messages().len(), 2, "system and user only");
    // No sub_agents: no tools.
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn call_agent_uses_the_sub_agents_own_provider() {
    let anthropic = FakeServer::json(200, &anthropic_text("from claude", 3, 2));
    let ollama = FakeServer::json(200, &ollama_text("from llama", 3, 2));
    let s = Setup::new(global(&[
        ("anthropic", Some(KEY), &anthropic.url),
        ("ollama", None, &ollama.url),
    ]));
    s.agent(
        "a",
        "name = \"a\"\nmodel = \"anthropic/claude-x\"\nsystem_prompt = \"Claude here.\"\n",
    );
    s.agent(
        "o",
        "name = \"o\"\nmodel = \"ollama/llama3.1\"\nsystem_prompt = \"Llama here.\"\n",
    );
    let ctx = s.ctx(0, 3, 30);

    let r = run(&ctx, &["a", "o"], &call("toolu_1", "a", "one"));
    assert_eq!((r.content.as_str(), r.is_error), ("from claude", false));
    assert_eq!(r.call_id, "toolu_1");
    let req = anthropic.only_request();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.system_prompt(), "Claude here.");
    assert_eq!(req.json()["model"], "claude-x");
    assert_eq!(req.first_user_text(), "Task: one");

    let r = run(&ctx, &["a", "o"], &call("ollama_0", "o", "two"));
    assert_eq!((r.content.as_str(), r.is_error), ("from llama", false));
    let req = ollama.only_request();
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.system_prompt(), "Llama here.");
    assert_eq!(req.json()["model"], "llama3.1");
    assert_eq!(req.first_user_text(), "Task: two");
}

#[test]
fn call_agent_with_context() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let c = call_with(
        "c1",
        &[
            ("agent", "h"),
            ("task", "Summarise the report"),
            ("context", "The report is in Q3.md.\nFocus on revenue."),
        ],
    );
    let r = run(&ctx, &["h"], &c);
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().first_user_text(),
        "Task: Summarise the report\n\nContext:\nThe report is in Q3.md.\nFocus on revenue."
    );
}

#[test]
fn call_agent_without_context() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let cases = [
        call_with("absent", &[("agent", "h"), ("task", "do it")]),
        call_with(
            "empty",
            &[("agent", "h"), ("task", "do it"), ("context", "")],
        ),
        call_with(
            "blank",
            &[("agent", "h"), ("task", "do it"), ("context", "  \n\t ")],
        ),
    ];
    for c in &cases {
        let r = run(&ctx, &["h"], c);
        assert!(!r.is_error, "{}: {r:?}", c.id);
        assert_eq!(r.call_id, c.id);
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    for (req, c) in reqs.iter().zip(&cases) {
        assert_eq!(req.first_user_text(), "Task: do it", "{}", c.id);
    }
}

// ---------------------------------------------------------------------------
// The checks before anything runs (design §3.4 steps 1–5, D9).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_empty_agent_name() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    for c in [
        call_with("c1", &[("agent", ""), ("task", "do it")]),
        call_with("c1", &[("task", "do it")]),
    ] {
        assert_error(
            &run(&ctx, &["h"], &c),
            "c1",
            "call_agent error: \"agent\" argument is required",
        );
    }
    assert_no_request(&server);
}

#[test]
fn call_agent_empty_task() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    for c in [
        call_with("c2", &[("agent", "h"), ("task", "")]),
        call_with("c2", &[("agent", "h")]),
        call_with("c2", &[("agent", "h"), ("context", "some context")]),
    ] {
        assert_error(
            &run(&ctx, &["h"], &c),
            "c2",
            "call_agent error: \"task\" argument is required",
        );
    }
    assert_no_request(&server);
}

#[test]
fn call_agent_agent_not_allowed() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    // Both exist as files; only "h" is allowed.
    s.agent("h", &openai_agent("h", "H."));
    s.agent("other", &openai_agent("other", "Other."));
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &run(&ctx, &["h"], &call("c3", "other", "do it")),
        "c3",
        "call_agent error: agent \"other\" is not in this agent's sub_agents list",
    );
    // A path is not a name in the list: refused before any file is read.
    assert_error(
        &run(&ctx, &["h"], &call("c4", "../../etc/passwd", "do it")),
        "c4",
        "call_agent error: agent \"../../etc/passwd\" is not in this agent's sub_agents list",
    );
    // No list at all: nothing is allowed.
    assert_error(
        &run(&ctx, &[], &call("c5", "h", "do it")),
        "c5",
        "call_agent error: agent \"h\" is not in this agent's sub_agents list",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_path_in_sub_agents_list_is_never_loaded() {
    // design D9: even a list entry that is a path (which validation would refuse)
    // reaches no file: `<config>/agents/../outside.toml` exists and is valid.
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    std::fs::write(
        s.dir().join("outside.toml"),
        openai_agent("outside", "Outside."),
    )
    .unwrap();
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &run(&ctx, &["../outside"], &call("c6", "../outside", "do it")),
        "c6",
        "call_agent error: failed to load agent \"../outside\": invalid agent name \"../outside\": \
         use only letters, digits, '.', '_' and '-'",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_depth_limit_reached() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(3, 3, 30);
    assert_error(
        &run(&ctx, &["h"], &call("c7", "h", "do it")),
        "c7",
        "call_agent error: maximum sub-agent depth (3) reached",
    );
    let ctx = s.ctx(5, 5, 30);
    assert_error(
        &run(&ctx, &["h"], &call("c8", "h", "do it")),
        "c8",
        "call_agent error: maximum sub-agent depth (5) reached",
    );
    let ctx = s.ctx(4, 1, 30);
    assert_error(
        &run(&ctx, &["h"], &call("c9", "h", "do it")),
        "c9",
        "call_agent error: maximum sub-agent depth (1) reached",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_checks_run_in_spec_order() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ok = s.ctx(0, 3, 30);
    let at_limit = s.ctx(3, 3, 30);

    // Empty agent and empty task: the agent check comes first.
    assert_error(
        &run(&ok, &["h"], &call("o1", "", "")),
        "o1",
        "call_agent error: \"agent\" argument is required",
    );
    // Empty agent at the depth limit: still the agent check.
    assert_error(
        &run(&at_limit, &["h"], &call("o2", "", "do it")),
        "o2",
        "call_agent error: \"agent\" argument is required",
    );
    // Empty task and an agent not allowed: the task check comes first.
    assert_error(
        &run(&ok, &["h"], &call("o3", "stranger", "")),
        "o3",
        "call_agent error: \"task\" argument is required",
    );
    // Not allowed at the depth limit: the list check comes first.
    assert_error(
        &run(&at_limit, &["h"], &call("o4", "stranger", "do it")),
        "o4",
        "call_agent error: agent \"stranger\" is not in this agent's sub_agents list",
    );
    // Allowed, no file, at the depth limit: the depth check comes before loading.
    assert_error(
        &run(&at_limit, &["ghost"], &call("o5", "ghost", "do it")),
        "o5",
        "call_agent error: maximum sub-agent depth (3) reached",
    );
    assert_no_request(&server);
}

// ---------------------------------------------------------------------------
// Loading and model errors (design §3.4, §3.6).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_agent_not_found() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &run(&ctx, &["ghost"], &call("n1", "ghost", "do it")),
        "n1",
        "call_agent error: failed to load agent \"ghost\": agent config not found: ghost",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_invalid_agent_file() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent(
        "bad",
        "model = \"openai/gpt-4o\"\nsystem_prompt = \"no name\"\n",
    );
    s.agent("broken", "name = \"broken\"\nmodel = \n");
    s.agent(
        "deep",
        "name = \"deep\"\nmodel = \"openai/gpt-4o\"\n[sub_agents_config]\nmax_depth = 6\n",
    );
    let ctx = s.ctx(0, 3, 30);
    let allowed = ["bad", "broken", "deep"];

    assert_error(
        &run(&ctx, &allowed, &call("v1", "bad", "do it")),
        "v1",
        "call_agent error: failed to load agent \"bad\": agent config missing required field: name",
    );

    let r = run(&ctx, &allowed, &call("v2", "broken", "do it"));
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "v2");
    assert!(
        r.content.starts_with(
            "call_agent error: failed to load agent \"broken\": invalid agent config "
        ),
        "{}",
        r.content
    );
    assert!(r.content.contains("broken.toml"), "{}", r.content);

    assert_error(
        &run(&ctx, &allowed, &call("v3", "deep", "do it")),
        "v3",
        "call_agent error: failed to load agent \"deep\": sub_agents_config.max_depth cannot exceed 5",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_invalid_model() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("m", "name = \"m\"\nmodel = \"nonsense\"\n");
    s.agent("f", "name = \"f\"\nmodel = \"foo/bar\"\n");
    let ctx = s.ctx(0, 3, 30);

    let r = run(&ctx, &["m", "f"], &call("m1", "m", "do it"));
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "m1");
    assert!(
        r.content
            .starts_with("call_agent error: invalid model for agent \"m\": "),
        "{}",
        r.content
    );
    assert!(r.content.contains("\"nonsense\""), "{}", r.content);

    let r = run(&ctx, &["m", "f"], &call("m2", "f", "do it"));
    assert!(r.is_error, "{r:?}");
    assert!(
        r.content
            .starts_with("call_agent error: invalid model for agent \"f\": "),
        "{}",
        r.content
    );
    assert!(
        r.content.contains("unsupported provider \"foo\""),
        "{}",
        r.content
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_missing_api_key() {
    if std::env::var_os("ANTHROPIC_API_KEY").is_some() {
        eprintln!("skipped: ANTHROPIC_API_KEY is set in the environment");
        return;
    }
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("k", "name = \"k\"\nmodel = \"anthropic/claude-x\"\n");
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &run(&ctx, &["k"], &call("k1", "k", "do it")),
        "k1",
        "Error: sub-agent \"k\" failed - API key for provider \"anthropic\" is not configured \
         (set ANTHROPIC_API_KEY or add it to config.toml). You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}

// ---------------------------------------------------------------------------
// Provider errors (design §3.6, §3.12).
// ---------------------------------------------------------------------------

/// Runs agent "h" once against a server answering `status` with `body`.
fn api_error(status: u16, body: &str) -> (ToolResult, FakeServer) {
    let server = FakeServer::json(status, body);
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let r = run(&ctx, &["h"], &call("e1", "h", "do it"));
    (r, server)
}

#[track_caller]
fn assert_api_error(r: &ToolResult, head: &str, provider_message: &str) {
    assert!(r.is_error, "{r:?}");
    assert_eq!(r.call_id, "e1");
    assert!(r.content.starts_with(head), "{}", r.content);
    assert!(r.content.ends_with(TAIL), "{}", r.content);
    assert!(r.content.contains(provider_message), "{}", r.content);
    assert!(!r.content.contains(".."), "{}", r.content);
}

#[test]
fn call_agent_api_error() {
    let msg = "The server had an error while processing your request. Sorry about that!";
    let (r, server) = api_error(500, &openai_error(msg, "server_error", Value::Null));
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: server error (HTTP 500)",
        msg,
    );
    // The HTTP request is retried twice inside the provider call (design D12);
    // the failed sub-agent itself is not run again (§3.12).
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn call_agent_api_auth_error() {
    let msg = "Incorrect API key provided: sk-wrong. You can find your API key at \
               https://platform.openai.com/account/api-keys";
    let (r, server) = api_error(
        401,
        &openai_error(
            &format!("{msg}."),
            "invalid_request_error",
            json!("invalid_api_key"),
        ),
    );
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: authentication failed (HTTP 401)",
        msg,
    );
    // A 401 is never retried (design D12).
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn call_agent_api_rate_limited() {
    let msg = "Rate limit reached for gpt-4o in organization org-123 on requests per min (RPM): \
               Limit 3, Used 3, Requested 1. Please try again in 20s";
    let (r, server) = api_error(
        429,
        &openai_error(&format!("{msg}."), "requests", json!("rate_limit_exceeded")),
    );
    assert_api_error(
        &r,
        "Error: sub-agent \"h\" failed - openai: rate limited (HTTP 429)",
        msg,
    );
    // Two transport retries (design D12), then the error; no sub-agent retry.
    assert_eq!(server.requests().len(), 3);
}

// ---------------------------------------------------------------------------
// Timeouts (design §3.11, D5).
// ---------------------------------------------------------------------------

/// Runs agent "slow" against a server that never answers, with the caller's
/// own `timeout_secs` and a context deadline `deadline_secs` away whose
/// message says `ctx_secs`. Returns the result and how long it took.
fn hang(timeout_secs: u64, deadline_secs: u64, ctx_secs: u64) -> (ToolResult, Duration) {
    let server = FakeServer::start(vec![Reply::Hang]);
    let s = Setup::openai(&server);
    s.agent("slow", &openai_agent("slow", "Slow."));
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now() + Duration::from_secs(deadline_secs),
            secs: ctx_secs,
        },
        ..s.ctx(0, 3, deadline_secs)
    };
    let started = Instant::now();
    let r = run_timed(&ctx, &["slow"], timeout_secs, &call("t1", "slow", "do it"));
    let took = started.elapsed();
    assert_eq!(server.requests().len(), 1, "the request was sent");
    (r, took)
}

const TIMEOUT_1S: &str = "Error: sub-agent \"slow\" failed - timeout after 1s. You may retry or proceed without this result.";

#[test]
fn call_agent_timeout() {
    let (r, took) = hang(1, 30, 30);
    assert_error(&r, "t1", TIMEOUT_1S);
    // A bound that proves the own timeout applied, not a speed claim.
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_timeout_inherits_the_parent_deadline() {
    let (r, took) = hang(0, 1, 1);
    assert_error(&r, "t1", TIMEOUT_1S);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_timeout_earlier_parent_deadline_wins() {
    let (r, took) = hang(20, 1, 1);
    assert_error(&r, "t1", TIMEOUT_1S);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn call_agent_parent_deadline_already_passed() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("late", &openai_agent("late", "Late."));
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now(),
            secs: 7,
        },
        ..s.ctx(0, 3, 7)
    };
    let started = Instant::now();
    let r = run_timed(&ctx, &["late"], 0, &call("t2", "late", "do it"));
    assert_error(
        &r,
        "t2",
        "Error: sub-agent \"late\" failed - timeout after 7s. You may retry or proceed without this result.",
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_no_request(&server);
    // An own timeout does not extend a passed deadline (design D5).
    let r = run_timed(&ctx, &["late"], 30, &call("t3", "late", "do it"));
    assert_error(
        &r,
        "t3",
        "Error: sub-agent \"late\" failed - timeout after 7s. You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_deadline_passing_while_files_are_read_is_a_timeout() {
    // A `**` glob over a tree stops at the deadline, with D5's exact text,
    // and nothing is sent.
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    for i in 0..20 {
        let dir = s.dir().join(format!("tree/d{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("f.txt"), "x").unwrap();
    }
    s.agent(
        "reader",
        &format!(
            "{}files = [\"tree/**/*\"]\n",
            openai_agent("reader", "Reader.")
        ),
    );
    let ctx = Ctx {
        deadline: Deadline {
            at: Instant::now(),
            secs: 4,
        },
        ..s.ctx(0, 3, 4)
    };
    let r = run_timed(&ctx, &["reader"], 0, &call("t4", "reader", "read"));
    assert_error(
        &r,
        "t4",
        "Error: sub-agent \"reader\" failed - timeout after 4s. You may retry or proceed without this result.",
    );
    assert_no_request(&server);
}

// ---------------------------------------------------------------------------
// The sub-agent's own conversation (design §3.7, §3.9).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_sub_agent_exceeding_50_turns() {
    // The looper always calls an agent outside its list: each call fails at
    // once (no nested run), and the conversation goes on until the limit.
    let server = FakeServer::json(
        200,
        &openai_tool_calls(
            &[("call_loop", "call_agent", delegate("stranger", "again"))],
            4,
            2,
        ),
    );
    let s = Setup::openai(&server);
    s.agent(
        "looper",
        "name = \"looper\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Loop.\"\nsub_agents = [\"leaf\"]\n",
    );
    let ctx = s.ctx(0, 3, 60);
    assert_error(
        &run(&ctx, &["looper"], &call("l1", "looper", "loop forever")),
        "l1",
        "Error: sub-agent \"looper\" failed - agent exceeded maximum conversation turns (50). \
         You may retry or proceed without this result.",
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 50);
    // The refused nested call went back to the looper as its tool result.
    let last = reqs[1].messages().last().cloned().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_loop");
    assert_eq!(
        last["content"],
        "call_agent error: agent \"stranger\" is not in this agent's sub_agents list"
    );
}

#[test]
fn run_call_answers_an_unknown_tool_and_runs_call_agent() {
    let server = FakeServer::json(200, &openai_text("dispatched", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let allowed = names(&["h"]);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: true,
        timeout_secs: 0,
        tools: None,
        mcp: &[],
        ctx: &ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };
    let unknown = ToolCall {
        id: "call_rf".into(),
        name: "read_file".into(),
        arguments: [("path".to_string(), "/etc/passwd".to_string())]
            .into_iter()
            .collect(),
        ..ToolCall::default()
    };
    assert_error(
        &run_call(&unknown, &caller),
        "call_rf",
        "Unknown tool: \"read_file\"",
    );
    assert_no_request(&server);
    // call_agent goes to the sub-agent.
    let r = run_call(&call("call_ok", "h", "do it"), &caller);
    assert_eq!((r.content.as_str(), r.is_error), ("dispatched", false));
    assert_eq!(r.call_id, "call_ok");
    assert_eq!(server.requests().len(), 1);
}

/// The `tools` of the one request agent "d" (`sub_agents = ["x", "y"]`)
/// sends when called at `depth` in a tree bounded by `max_depth`.
fn tools_sent_at(depth: u32, max_depth: u32) -> Option<Value> {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent(
        "d",
        "name = \"d\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"x\", \"y\"]\n",
    );
    let ctx = s.ctx(depth, max_depth, 30);
    let r = run(&ctx, &["d"], &call("d1", "d", "do it"));
    assert_eq!((r.content.as_str(), r.is_error), ("ok", false), "{r:?}");
    server.only_request().json().get("tools").cloned()
}

#[test]
fn sub_agent_below_the_depth_limit_gets_call_agent() {
    for (depth, max_depth) in [(0, 3), (1, 3), (3, 5)] {
        let tools = tools_sent_at(depth, max_depth)
            .unwrap_or_else(|| panic!("no tools at depth {depth} of {max_depth}"));
        let tools = tools.as_array().unwrap();
        assert_eq!(tools.len(), 1);
        let f = &tools[0]["function"];
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(f["name"], "call_agent");
        assert!(
            f["description"]
                .as_str()
                .unwrap()
                .ends_with("Available agents: x, y"),
            "{f}"
        );
        assert_eq!(
            f["parameters"]["properties"]["agent"]["enum"],
            json!(["x", "y"])
        );
        assert_eq!(f["parameters"]["required"], json!(["agent", "task"]));
    }
}

#[test]
fn sub_agent_at_the_depth_limit_gets_no_tools() {
    // Called at depth 2 of 3, the sub-agent runs at depth 3: single-shot (design §3.2).
    for (depth, max_depth) in [(2, 3), (0, 1), (4, 5)] {
        assert_eq!(
            tools_sent_at(depth, max_depth),
            None,
            "depth {depth} of {max_depth}"
        );
    }
}

#[test]
fn nested_call_runs_one_level_deeper() {
    // Called at depth 1 of 3: "mid" runs at 2 with call_agent; its call to
    // "leaf" runs at 3, without tools; leaf's answer goes back to mid.
    let server = FakeServer::route(|req| {
        let body = match req.system_prompt().as_str() {
            "I am mid." if !req.has_tool_results() => openai_tool_calls(
                &[("call_leaf", "call_agent", delegate("leaf", "find it"))],
                5,
                3,
            ),
            "I am mid." => openai_text("mid done", 9, 2),
            "I am leaf." => openai_text("leaf result", 3, 2),
            other => panic!("unexpected system prompt {other:?}"),
        };
        Reply::Json(200, body)
    });
    let s = Setup::openai(&server);
    // mid's own max_depth does not raise the root's bound (design D6).
    s.agent(
        "mid",
        "name = \"mid\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am mid.\"\nsub_agents = [\"leaf\"]\n\
         [sub_agents_config]\nmax_depth = 5\n",
    );
    s.agent(
        "leaf",
        "name = \"leaf\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am leaf.\"\nsub_agents = [\"mid\"]\n",
    );
    let ctx = s.ctx(1, 3, 30);
    let r = run(&ctx, &["mid"], &call("n1", "mid", "delegate it"));
    assert_eq!(
        r,
        ToolResult {
            call_id: "n1".into(),
            tool_name: CALL_AGENT.into(),
            content: "mid done".into(),
            is_error: false,
        }
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let prompts: Vec<String> = reqs.iter().map(|r| r.system_prompt()).collect();
    assert_eq!(prompts, ["I am mid.", "I am leaf.", "I am mid."]);
    assert!(
        reqs[0].json().get("tools").is_some(),
        "mid at depth 2 has tools"
    );
    assert!(
        reqs[1].json().get("tools").is_none(),
        "leaf at depth 3 has none"
    );
    assert_eq!(reqs[1].first_user_text(), "Task: find it");
    let back = reqs[2].messages().last().cloned().unwrap();
    assert_eq!(back["role"], "tool");
    assert_eq!(back["tool_call_id"], "call_leaf");
    assert_eq!(back["content"], "leaf result");
}

#[test]
fn nested_sub_agents_own_timeout_governs_its_calls() {
    // design D6: "mid" has `timeout = 1`; its call to "leaf" (which never gets an
    // answer) fails after 1s although the tree's deadline is 30s away, and
    // mid goes on with the error as its tool result.
    let server = FakeServer::route(|req| match req.system_prompt().as_str() {
        "I am mid." if !req.has_tool_results() => Reply::Json(
            200,
            openai_tool_calls(
                &[("call_leaf", "call_agent", delegate("leaf", "wait"))],
                5,
                3,
            ),
        ),
        "I am mid." => Reply::Json(200, openai_text("mid went on", 9, 2)),
        _ => Reply::Hang,
    });
    let s = Setup::openai(&server);
    s.agent(
        "mid",
        "name = \"mid\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am mid.\"\nsub_agents = [\"leaf\"]\n\
         [sub_agents_config]\ntimeout = 1\n",
    );
    s.agent("leaf", &openai_agent("leaf", "I am leaf."));
    let ctx = s.ctx(0, 3, 30);
    let started = Instant::now();
    let r = run(&ctx, &["mid"], &call("n2", "mid", "delegate it"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (r.content.as_str(), r.is_error),
        ("mid went on", false),
        "{r:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let back = reqs[2].messages().last().cloned().unwrap();
    assert_eq!(back["tool_call_id"], "call_leaf");
    assert_eq!(
        back["content"],
        "Error: sub-agent \"leaf\" failed - timeout after 1s. You may retry or proceed without this result."
    );
}

// ---------------------------------------------------------------------------
// Isolation (design D7) and skill resolution.
// ---------------------------------------------------------------------------

#[test]
fn sub_agent_uses_its_own_workdir_and_files() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    // The run's current directory has a file the sub-agent must not see.
    std::fs::write(s.dir().join("parent.txt"), "parent secret").unwrap();
    let work = TempDir::new("tool-work");
    std::fs::write(work.path().join("a.txt"), "alpha contents").unwrap();
    s.agent(
        "iso",
        &format!(
            "name = \"iso\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Isolated.\"\n\
             files = [\"*.txt\"]\nworkdir = {:?}\n",
            work.path().display().to_string()
        ),
    );
    let ctx = s.ctx(0, 3, 30);
    let r = run(&ctx, &["iso"], &call("i1", "iso", "look"));
    assert!(!r.is_error, "{r:?}");
    let req = server.only_request();
    assert_eq!(
        req.system_prompt(),
        "Isolated.\n\n---\n\n## Context Files\n\n### a.txt\n```txt\nalpha contents\n```"
    );
    assert!(!req.body.contains("parent"), "{}", req.body);
    assert_eq!(req.first_user_text(), "Task: look");
}

#[test]
fn sub_agent_without_workdir_reads_files_from_the_runs_cwd() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let cwd = TempDir::new("tool-cwd");
    std::fs::write(cwd.path().join("b.txt"), "bravo").unwrap();
    s.agent(
        "w",
        "name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"W.\"\nfiles = [\"*.txt\"]\n",
    );
    let ctx = Ctx {
        cwd: cwd.path(),
        ..s.ctx(0, 3, 30)
    };
    let r = run(&ctx, &["w"], &call("w1", "w", "look"));
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().system_prompt(),
        "W.\n\n---\n\n## Context Files\n\n### b.txt\n```txt\nbravo\n```"
    );
}

#[test]
fn sub_agent_skill_resolves_against_the_ctx_config_dir() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let skill_dir = s.dir().join("skills").join("s");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(skill_dir.join("SKILL.md"), "# Skill S\nDo the S thing.").unwrap();
    s.agent(
        "sk",
        "name = \"sk\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\n\
         skill = \"skills/s/SKILL.md\"\n",
    );
    // The run's current directory is elsewhere: only the config dir has the skill.
    let cwd = TempDir::new("tool-cwd");
    let ctx = Ctx {
        cwd: cwd.path(),
        ..s.ctx(0, 3, 30)
    };
    let r = run(&ctx, &["sk"], &call("s1", "sk", "use the skill"));
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().system_prompt(),
        "Base.\n\n---\n\n## Skill\n\n# Skill S\nDo the S thing."
    );
}

// ---------------------------------------------------------------------------
// Several calls of one response (design §3.10).
// ---------------------------------------------------------------------------

/// Runs four calls of one response for a parallel caller at `depth`: three
/// to "w" whose requests must all be in flight together (the gate) and whose
/// first is answered last, and one refused at once.
fn parallel_calls_at(depth: u32) {
    let gate = Arc::new(Gate::new(3));
    let server = {
        let gate = gate.clone();
        FakeServer::route(move |req| {
            gate.arrive(Duration::from_secs(5));
            let task = req.first_user_text();
            let delay = match task.as_str() {
                "Task: first" => 1200,
                "Task: second" => 400,
                _ => 0,
            };
            Reply::Delay(
                Duration::from_millis(delay),
                Box::new(Reply::Json(200, openai_text(&format!("done {task}"), 1, 1))),
            )
        })
    };
    let s = Setup::openai(&server);
    s.agent("w", &openai_agent("w", "Worker."));
    let ctx = s.ctx(depth, 3, 30);
    let allowed = names(&["w"]);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: true,
        timeout_secs: 0,
        tools: None,
        mcp: &[],
        ctx: &ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };
    let calls = [
        call("c1", "w", "first"),
        call("c2", "w", "second"),
        call("c3", "w", "third"),
        call("c4", "stranger", "fourth"),
    ];
    let results = run_calls(&calls, &caller);
    assert_eq!(
        results,
        [
            ToolResult {
                call_id: "c1".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: first".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c2".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: second".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c3".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: third".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c4".into(),
                tool_name: CALL_AGENT.into(),
                content:
                    "call_agent error: agent \"stranger\" is not in this agent's sub_agents list"
                        .into(),
                is_error: true,
            },
        ]
    );
    assert!(
        !gate.timed_out.load(std::sync::atomic::Ordering::SeqCst),
        "the three calls did not run at the same time (depth {depth})"
    );
    assert_eq!(server.max_in_flight(), 3);
}

#[test]
fn run_calls_in_parallel_returns_results_in_call_order() {
    parallel_calls_at(0);
}

#[test]
fn run_calls_in_a_sub_agent_runs_calls_at_the_same_time() {
    // A sub-agent's own `parallel` governs the calls it makes (design D6, §3.10).
    parallel_calls_at(1);
}

#[test]
fn run_calls_sequential_runs_calls_one_after_another_in_order() {
    // Each request notes how many earlier ones had been answered when it
    // arrived: one after another, that is 0, 1, 2 even though the first
    // answer is slow.
    let answered = Arc::new(Mutex::new(0usize));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let (answered, seen) = (answered.clone(), seen.clone());
        FakeServer::route(move |req| {
            let task = req.first_user_text();
            seen.lock()
                .unwrap()
                .push((task.clone(), *answered.lock().unwrap()));
            if task == "Task: first" {
                std::thread::sleep(Duration::from_millis(300));
            }
            *answered.lock().unwrap() += 1;
            Reply::Json(200, openai_text(&format!("done {task}"), 1, 1))
        })
    };
    let s = Setup::openai(&server);
    s.agent("w", &openai_agent("w", "Worker."));
    let ctx = s.ctx(0, 3, 30);
    let allowed = names(&["w"]);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: false,
        timeout_secs: 0,
        tools: None,
        mcp: &[],
        ctx: &ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };
    let calls = [
        call("c1", "w", "first"),
        call("c2", "w", "second"),
        call("c3", "w", "third"),
    ];
    let results = run_calls(&calls, &caller);
    let got: Vec<(&str, &str, bool)> = results
        .iter()
        .map(|r| (r.call_id.as_str(), r.content.as_str(), r.is_error))
        .collect();
    assert_eq!(
        got,
        [
            ("c1", "done Task: first", false),
            ("c2", "done Task: second", false),
            ("c3", "done Task: third", false),
        ]
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("Task: first".to_string(), 0),
            ("Task: second".to_string(), 1),
            ("Task: third".to_string(), 2),
        ]
    );
}
