//! What the tests of the other clients share (design §12.2): finding the
//! Node packages and simonw's `llm` that scripts/serve_client.sh installs
//! into target/serve-client (missing: the skip said, a failure of `make
//! test`), running a Node driver script, and the fake provider's answers
//! they check.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::Server;
use crate::common::*;

/// A key the clients send where no token is needed.
pub const ANY: &str = "unused-by-a-loopback-server";

/// What a failing provider says, for the client to show.
pub const BOOM: &str = r#"{"error":{"message":"boom","type":"server_error"}}"#;

/// The system message the clients send.
pub const FRENCH: &str = "Answer in French.";

fn installed(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A home with agents `helper` (plain) and `lead` (delegates to helper).
pub fn home() -> Home {
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "");
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"helper\"]\n");
    home
}

/// The Node packages' directory, or None (the skip said) when node or
/// the packages are missing.
pub fn node_modules(what: &str) -> Option<PathBuf> {
    let dir = installed("target/serve-client/node/node_modules");
    let has_node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if has_node && dir.join("openai").is_dir() && dir.join("ai").is_dir() {
        Some(dir)
    } else {
        crate::common::missing(
            &format!("axe serve with {what}"),
            "node or the Node clients are not installed in target/serve-client/node (bash scripts/serve_client.sh)",
        );
        None
    }
}

/// simonw's `llm`, or None (the skip said) when it is not installed.
pub fn llm() -> Option<PathBuf> {
    let p = installed("target/serve-client/llm/bin/llm");
    if p.is_file() {
        Some(p)
    } else {
        crate::common::missing(
            "axe serve with simonw's llm",
            "llm is not installed in target/serve-client/llm (bash scripts/serve_client.sh)",
        );
        None
    }
}

/// A command that reaches only loopback: no proxies, no OpenAI settings
/// from the developer's environment.
pub fn isolated(cmd: &mut Command) -> &mut Command {
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NO_PROXY", "*")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("ALL_PROXY")
        .stdin(Stdio::null())
}

/// Runs the Node driver `script` (in tests/it/serve/) with `action` and
/// `arg` against `server`; the JSON it prints.
pub fn node(
    modules: &PathBuf,
    script: &str,
    server: &Server,
    action: &str,
    arg: &str,
) -> serde_json::Value {
    let path = installed("tests/it/serve").join(script);
    let mut cmd = Command::new("node");
    cmd.arg(&path)
        .args([&server.url, ANY, action, arg])
        .env("AXE_NODE_MODULES", modules);
    isolated(&mut cmd);
    // The AI SDK's retries of a 5xx wait 2 s then 4 s.
    let out = run_within(&mut cmd, Duration::from_secs(90)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "{script} {action}: not JSON ({e}): {text}\nstderr: {}\nserver: {}",
            String::from_utf8_lossy(&out.stderr),
            server.log()
        )
    })
}

/// A provider streaming `pieces` in two writes 100 ms apart, so that the
/// client gets them in more than one chunk (design §4.11's pacing).
pub fn paced(pieces: &[&str], input: u64, output: u64) -> FakeServer {
    let body = P::OpenAi.stream_text(pieces, input, output);
    let cut = body.find(&format!("\"{}\"", pieces[1])).unwrap();
    let cut = body[..cut].rfind("data: ").unwrap();
    FakeServer::start(vec![P::OpenAi.stream_steps(vec![
        Step::bytes(&body[..cut], 4096),
        Step::Sleep(Duration::from_millis(100)),
        Step::bytes(&body[cut..], 4096),
    ])])
}

/// Checks that the one request `fake` got carries the agent's own system
/// prompt first and the client's system message after it.
pub fn assert_system_after_agents(fake: &FakeServer, client: &str) {
    let sent = fake.only_request();
    let prompt = sent.system_prompt();
    assert_eq!(sent.who(), "helper", "the agent's prompt first: {prompt}");
    let own = prompt.find("You are helper").unwrap();
    let theirs = prompt
        .find(client)
        .unwrap_or_else(|| panic!("the client's system message is not in: {prompt}"));
    assert!(own < theirs, "{prompt}");
}

/// A failing agent ran once: one request reached the provider, though the
/// client retries a 5xx by default (axe's own retries are off).
pub fn assert_ran_once(fake: &FakeServer, r: &serde_json::Value) {
    // A retry would come after the client's back-off (seconds): the client
    // has returned by now, so every request it made is in.
    let n = fake.requests().len();
    assert_eq!(n, 1, "the agent ran {n} times for one request: {r}");
}
