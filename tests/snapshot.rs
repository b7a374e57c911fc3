//! One run reads each sub-agent once (design D20): every call to an agent in
//! a run works from what its first call read, even if the file changes
//! meanwhile; a load that failed is tried again at the next call; and a new
//! run reads afresh. Through the real binary, against a fake OpenAI server
//! that edits the agent files while the run goes on.

mod common;
use common::*;

use std::path::Path;

const KEY: &str = "sk-test-snapshot-0123456789";

fn run_lead(home: &Home, server: &FakeServer) -> std::process::Output {
    home.axe()
        .env("OPENAI_API_KEY", KEY)
        .env("AXE_OPENAI_BASE_URL", &server.url)
        .args(["run", "lead", "-p", "go"])
        .output()
        .expect("run axe")
}

/// A parent that calls `w` once per turn, `turns` times, then answers with
/// the tool results it got, joined by ` | `. `w` answers with its system
/// prompt. `on_w` runs when a request from `w` arrives, `on_result` when
/// the parent sends a tool result.
fn server(
    turns: usize,
    on_w: impl Fn() + Send + Sync + 'static,
    on_result: impl Fn() + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::route(move |req| {
        if req.who() == "w" {
            on_w();
            return Reply::Json(200, openai_text(&req.system_prompt(), 1, 1));
        }
        let done = req.tool_result_texts();
        if !done.is_empty() {
            on_result();
        }
        if done.len() >= turns {
            return Reply::Json(200, openai_text(&done.join(" | "), 1, 1));
        }
        let id = format!("call_{}", done.len());
        Reply::Json(
            200,
            openai_tool_calls(&[(&id, "call_agent", delegate("w", "work"))], 1, 1),
        )
    })
}

fn write_w(agents: &Path, prompt: &str) {
    std::fs::write(
        agents.join("w.toml"),
        format!("name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"{prompt}\"\n"),
    )
    .unwrap();
}

#[test]
fn every_call_in_a_run_uses_the_agent_file_as_first_read_and_a_new_run_reads_afresh() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    let agents = home.config_dir().join("agents");
    write_w(&agents, "You are w. First version.");
    let edit = agents.clone();
    // The file changes as soon as w's first request arrives.
    let server = server(
        3,
        move || write_w(&edit, "You are w. Second version."),
        || {},
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        "You are w. First version. | You are w. First version. | You are w. First version."
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        "You are w. Second version. | You are w. Second version. | You are w. Second version."
    );
}

#[test]
fn a_sub_agent_that_failed_to_load_is_read_again_at_its_next_call() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    let agents = home.config_dir().join("agents");
    let create = agents.clone();
    // w has no file until the parent reports the first call's failure.
    let server = server(
        2,
        || {},
        move || write_w(&create, "You are w. Written late."),
    );

    let out = run_lead(&home, &server);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let (first, second) = text.trim_end().split_once(" | ").expect("two results");
    assert!(
        first.starts_with("call_agent error: failed to load agent \"w\""),
        "{first}"
    );
    assert_eq!(second, "You are w. Written late.");
}
