//! Under load nothing leaks: a 256-way fan-out starts at most 255 helper
//! threads (the calling thread takes calls too) and a second one starts
//! none, and 1,000 sequential sub-agent runs end with as many threads and
//! file descriptors as they started with (give or take the connection pool).
//! Counted from `/proc/self`, in-process, against a loopback fake provider.

#![cfg(target_os = "linux")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
mod common;
use common::*;

use std::time::{Duration, Instant};

use axe::config::{GlobalConfig, ProviderSettings, RetrySettings};
use axe::deadline::Deadline;
use axe::io::stderr::Verbose;
use axe::provider::ToolCall;
use axe::run::Ctx;
use axe::run::dispatch::{Caller, run_calls};
use axe::trace::ledger::{Children, Ledger, Place};

fn global(server: &FakeServer) -> GlobalConfig {
    GlobalConfig {
        providers: [(
            "openai".to_string(),
            ProviderSettings {
                api_key: Some("sk-test-load-0123456789".into()),
                base_url: Some(server.url.clone()),
                ..ProviderSettings::default()
            },
        )]
        .into_iter()
        .collect(),
        retry: RetrySettings::default(),
        mcp_servers: Vec::new(),
        ..GlobalConfig::default()
    }
}

fn calls(n: usize) -> Vec<ToolCall> {
    (0..n)
        .map(|i| ToolCall {
            id: format!("c{i}"),
            name: "call_agent".into(),
            arguments: [("agent", "w"), ("task", "work")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..ToolCall::default()
        })
        .collect()
}

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(Result::ok)
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
        })
        .count()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn load_fan_out_of_256_reuses_its_helper_threads_and_connections() {
    // The first two fan-outs are held until all 256 calls are in flight,
    // so that each needs a thread per call.
    let gates = [Gate::new(256), Gate::new(256)];
    let seen = std::sync::atomic::AtomicUsize::new(0);
    let server = FakeServer::route(move |_| {
        let i = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        if let Some(gate) = gates.get(i / 256) {
            gate.arrive(Duration::from_secs(20));
        }
        Reply::Json(200, openai_text("ok", 1, 1))
    });
    let dir = TempDir::new("load");
    std::fs::create_dir_all(dir.path().join("agents")).unwrap();
    std::fs::write(
        dir.path().join("agents/w.toml"),
        "name = \"w\"\nmodel = \"openai/gpt-4o\"\n",
    )
    .unwrap();
    let global = global(&server);
    let dirs = axe::paths::AgentDirs::only(dir.path());
    let ctx = Ctx {
        global: &global,
        agents: &dirs,
        cwd: dir.path(),
        depth: 0,
        max_depth: 3,
        deadline: Deadline {
            at: Instant::now() + Duration::from_secs(60),
            secs: 60,
        },
        verbose: Verbose::new(false),
        ledger: std::sync::Arc::new(Ledger::new()),
        place: Place::default(),
        budgets: Vec::new(),
        snapshot: Default::default(),
        mcp: Default::default(),
        stream: Default::default(),
        text: Default::default(),
        cancel: Default::default(),
        seed: None,
        conversation: None,
        retries: None,
    };
    let allowed = vec!["w".to_string()];
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: true,
        timeout_secs: 0,
        tools: None,
        artifacts: None,
        mcp: &[],
        offered: &[],
        ctx: &ctx,
        max_parallel: usize::MAX,
        max_result_chars: axe::agent::DEFAULT_MAX_RESULT_CHARS,
        children: &Children::default(),
        turn: 1,
    };

    let results = run_calls(&calls(256), &caller);
    assert!(results.iter().all(|r| !r.is_error && r.content == "ok"));
    // Helpers are kept for the run, parked: one per call but the first,
    // which the calling thread runs.
    let helpers = threads_named("axe-call");
    assert_eq!(helpers, 255);
    let fds_after_first = open_fds();

    let results = run_calls(&calls(256), &caller);
    assert!(results.iter().all(|r| !r.is_error));
    // The second fan-out starts no thread: the parked helpers take it.
    assert_eq!(threads_named("axe-call"), helpers);
    // A second fan-out reuses pooled connections rather than piling up
    // sockets: at most the pool's 64 idle connections more (each has a
    // server-side socket in this process too).
    let fds_after_second = open_fds();
    assert!(
        fds_after_second <= fds_after_first + 2 * 64,
        "fds grew from {fds_after_first} to {fds_after_second}"
    );

    // 1,000 sub-agent runs one after another: threads and descriptors stay
    // flat (one kept-alive connection is reused).
    let before_threads = std::fs::read_dir("/proc/self/task").unwrap().count();
    let before_fds = open_fds();
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let sequential = Caller {
        model: &caller_model,
        parallel: false,
        ..caller
    };
    for chunk in 0..100 {
        let results = run_calls(&calls(10), &sequential);
        assert!(results.iter().all(|r| !r.is_error), "chunk {chunk}");
    }
    let after_threads = std::fs::read_dir("/proc/self/task").unwrap().count();
    let after_fds = open_fds();
    assert!(
        after_fds <= before_fds + 4,
        "fds grew from {before_fds} to {after_fds} over 1,000 runs"
    );
    assert!(
        after_threads <= before_threads + 4,
        "threads grew from {before_threads} to {after_threads} over 1,000 runs"
    );
    assert!(server.requests().len() >= 1_512);
}
