//! Memory through the binary (design ch. 10): the entries a run appends
//! and the next run loads ([`entries`]), and the file under concurrent runs,
//! `axe gc` and damage ([`files`]). The helpers here serve both.

mod entries;
mod files;

use std::time::SystemTime;

use crate::common::*;

/// An agent `name` on OpenAI with `[memory]` holding `memory` (after
/// `enabled = true`).
pub(super) fn remembering(home: &Home, name: &str, memory: &str) {
    home.named_agent(
        name,
        "openai/gpt-4o",
        &format!("[memory]\nenabled = true\n{memory}"),
    );
}

#[track_caller]
pub(super) fn assert_ok(out: &std::process::Output) {
    assert_eq!(code(out), 0, "stderr: {}", stderr(out));
}

/// The entries of `text`, each checked to be whole: a timestamp header
/// that parses as UTC RFC 3339, a task line, a result, a blank line.
/// Returns (timestamp, task, result) for each.
#[track_caller]
pub(super) fn whole_entries(text: &str) -> Vec<(SystemTime, String, String)> {
    let mut out = Vec::new();
    for chunk in text.split("\n\n## ") {
        let chunk = chunk.strip_prefix("## ").unwrap_or(chunk);
        let (ts, rest) = chunk.split_once('\n').expect("a header line");
        let at = humantime::parse_rfc3339(ts).unwrap_or_else(|e| panic!("{ts:?}: {e}"));
        assert!(ts.ends_with('Z') && ts.len() == 20, "{ts}");
        let rest = rest.strip_prefix("**Task:** ").expect("a task line");
        let (task, rest) = rest.split_once('\n').expect("a task line");
        let result = rest.strip_prefix("**Result:** ").expect("a result");
        out.push((at, task.to_string(), result.trim_end().to_string()));
    }
    assert!(
        text.ends_with("\n\n"),
        "the last entry is not whole: {text:?}"
    );
    out
}
