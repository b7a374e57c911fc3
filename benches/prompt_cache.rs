//! `make bench`, the prompt-cache part: a 10-turn tool loop of the real
//! binary against a fake Anthropic server whose cache bills each request by
//! the `cache_control` marks it carries (tests/common/cache.rs: the prefix
//! up to a mark is written once long enough; a later request reads the
//! longest entry found at or shortly before one of its marks). The figure is
//! the cached share of input tokens, as the binary's own `--json` reports
//! it, beside the most any placement of marks could have read (the prefix
//! each request shares with the one before it). There is no target: the
//! figures are printed, never checked.
//!
//! Three loops: one `read_file` call a turn; twelve at once a turn (more
//! blocks a turn than the API looks back from a mark); and the first again
//! with `--no-prompt-cache`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[allow(dead_code, unused_imports, reason = "a part of the shared harness")]
#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use serde_json::Value;

/// Requests in each loop.
const TURNS: usize = 10;

fn main() {
    println!("prompt cache bench: a {TURNS}-turn tool loop through the binary");
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "loop", "requests", "input", "read", "written", "cached", "readable"
    );
    for (name, calls, off) in [
        ("1 call a turn", 1, false),
        ("12 calls a turn", 12, false),
        ("1 call a turn, --no-prompt-cache", 1, true),
    ] {
        let row = run(calls, off);
        println!(
            "{name:<34} {:>8} {:>8} {:>8} {:>8} {:>7.1}% {:>8.1}%",
            row.requests,
            row.input,
            row.read,
            row.written,
            share(row.read, row.input),
            share(row.readable, row.input),
        );
    }
}

struct Row {
    requests: usize,
    input: u64,
    read: u64,
    written: u64,
    readable: u64,
}

/// One loop: `calls` calls a turn, with the switch off when `off`.
fn run(calls: usize, off: bool) -> Row {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("workdir");
    std::fs::write(
        work.join("notes.txt"),
        "alpha beta gamma delta\n".repeat(40),
    )
    .expect("file");
    let prompt = "You are hands. Read what you are asked to read, then answer. ".repeat(100);
    home.agent(
        "hands",
        &format!(
            "name = \"hands\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n\
             system_prompt = \"{prompt}\"\nworkdir = \"{}\"\n\
             tools = [\"list_directory\", \"read_file\"]\n",
            work.display()
        ),
    );
    let (server, usages) = cached_tool_loop(TURNS, calls, "notes.txt");
    let mut args = vec!["run", "hands", "-p", "go", "--json"];
    if off {
        args.push("--no-prompt-cache");
    }
    let out = home.run_on(&[(P::Anthropic, &server)], &args);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).expect("--json output");
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let readable = usages
        .lock()
        .expect("usages")
        .iter()
        .map(|u| u.readable)
        .sum();
    Row {
        requests: server.requests().len(),
        input: n("input_tokens"),
        read: n("cache_read_input_tokens"),
        written: n("cache_creation_input_tokens"),
        readable,
    }
}

fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}
