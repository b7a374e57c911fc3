//! The run log (design §7.7) through the real binary: the record every
//! `axe run` leaves, for every way it ends (`records.rs`); the log's file
//! under concurrent runs, rotation and its switches (`file.rs`); `axe runs`
//! and `axe runs show` reading it back (`listing.rs`); a run's trace drawn
//! as Chrome trace-event JSON (`chrome.rs`).

mod chrome;
mod continued;
mod file;
mod listing;
mod records;

use crate::common::*;

use serde_json::Value;

/// A home with agent `solo` on `openai/gpt-4o`, `extra` appended.
fn solo(extra: &str) -> Home {
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", extra);
    home
}

/// The one record of the log, failing when there is not exactly one.
#[track_caller]
fn only_record(home: &Home) -> Value {
    let log = home.run_log();
    assert_eq!(log.len(), 1, "{log:?}");
    log.into_iter().next().unwrap_or_default()
}

/// Writes `lines` as the whole run log (`runs.jsonl`).
fn write_log(home: &Home, lines: &[String]) {
    std::fs::create_dir_all(home.state_dir()).unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(home.state_dir().join("runs.jsonl"), text).unwrap();
}

/// A record line as axe writes one.
fn record_line(id: &str, agent: &str, start: &str, exit: i32, answer: &str) -> String {
    serde_json::json!({
        "run_id": id, "agent": agent, "start": start, "duration_ms": 1500,
        "exit": exit, "model": "openai/gpt-4o", "input_tokens": 100,
        "output_tokens": 20, "cache_read_input_tokens": 0, "tool_calls": 1,
        "first_line": answer.lines().next().unwrap_or(""), "answer": answer,
        "error": if exit == 0 { Value::Null } else { "it failed".into() },
        "trace": null, "cwd": "/w",
    })
    .to_string()
}
