//! A hostile MCP server reaches nothing and holds nothing (issue 31, design
//! §11.2–§11.4), through the binary against `fixtures/mcp/hostile_server.py`:
//! a flood of pings while the server stops reading ends the run within a
//! second of its deadline, the replies dropped and counted.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::*;

/// The fixture, when `python3` runs here.
fn hostile() -> Option<PathBuf> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/hostile_server.py");
    let runs = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runs {
        eprintln!("SKIPPED: MCP walls not tested: python3 does not run here");
        return None;
    }
    Some(script)
}

/// `[[mcp_servers]]` running the fixture over stdio as `name` with `args`.
fn stdio_table(script: &std::path::Path, name: &str, args: &[&str]) -> String {
    let mut all = vec![script.display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    format!("[[mcp_servers]]\nname = {name:?}\ncommand = \"python3\"\nargs = {all:?}\n")
}

/// A fake OpenAI model whose first answer makes `calls` and whose later
/// ones end the run.
fn model(calls: &[(&str, &str, Value)]) -> FakeServer {
    let first = P::OpenAi.tool_calls(calls);
    let done = P::OpenAi.text("done");
    FakeServer::route(move |req| {
        if req.has_tool_results() {
            Reply::Json(200, done.clone())
        } else {
            Reply::Json(200, first.clone())
        }
    })
}

fn axe(home: &Home, server: &FakeServer, args: &[&str]) -> std::process::Command {
    let mut cmd = home.axe();
    cmd.env("OPENAI_API_KEY", "sk-test-key-0123456789")
        .env(P::OpenAi.base_url_var(), &server.url)
        .args(["run", "user", "-p", "go"])
        .args(args);
    cmd
}

#[test]
fn a_ping_flood_from_a_server_that_stops_reading_ends_at_the_deadline() {
    let Some(script) = hostile() else { return };
    let home = Home::new();
    home.config(&stdio_table(&script, "flood", &["flood"]));
    home.named_agent("user", P::OpenAi.model(), "mcp_servers = [\"flood\"]\n");
    let server = model(&[("c1", "flood__t0_0", json!({}))]);
    let trace = home.dir.path().join("trace.jsonl");
    let started = Instant::now();
    let b = run_bounded(
        &mut axe(
            &home,
            &server,
            &[
                "--timeout",
                "5",
                "--verbose",
                "--trace",
                trace.to_str().unwrap(),
            ],
        ),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    let err = stderr(&b.output);
    // Each reply held the writer's lock for 5 s: 13 s before.
    assert!(took < Duration::from_millis(6500), "{took:?}: {err}");
    assert_ne!(code(&b.output), 0, "{err}");
    // Said at the first, counted at the stop.
    assert!(
        err.contains("[mcp] \"flood\" dropped: a reply to the server's request"),
        "{err}"
    );
    let n: u64 = err
        .lines()
        .filter_map(|l| l.strip_prefix("[mcp] \"flood\" dropped: "))
        .find_map(|l| {
            l.strip_suffix(" replies to the server's requests in all, its input full or busy")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of the dropped replies: {err}"));
    assert!(n > 0, "{err}");
    eprintln!("{took:?}, {n} replies dropped");
    let events = trace_events(&trace);
    assert!(
        events.iter().any(|e| e["event"] == "mcp"
            && e["kind"] == "dropped"
            && e["text"].as_str().is_some_and(|t| t.contains("replies"))),
        "{events:?}"
    );
}
