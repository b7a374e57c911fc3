//! `reasoning_effort` and `thinking_budget` in `[params]`, and
//! `--reasoning-effort`: shown by `--dry-run`, and a value axe does not
//! know refused with exit 2 and one line.

use super::*;

#[test]
fn dry_run_shows_the_effort_and_the_budget_only_when_set() {
    let home = thinker(
        "anthropic/claude-sonnet-4-5",
        "reasoning_effort = \"high\"\nthinking_budget = 2048",
    );
    let out = home.run(&["run", "thinker", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "Params:   temperature=default, max_tokens=default, reasoning_effort=high, \
             thinking_budget=2048\n"
        ),
        "{}",
        stdout(&out)
    );
    let plain = thinker("anthropic/claude-sonnet-4-5", "");
    let out = plain.run(&["run", "thinker", "--dry-run"]);
    assert!(
        stdout(&out).contains("Params:   temperature=default, max_tokens=default\n"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_flag_is_over_the_files_effort_in_the_dry_run() {
    let home = thinker("openai/o4-mini", "reasoning_effort = \"low\"");
    let out = home.run(&[
        "run",
        "thinker",
        "--dry-run",
        "--reasoning-effort",
        "minimal",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("reasoning_effort=minimal\n"),
        "{}",
        stdout(&out)
    );
}

/// Exit 2, nothing on stdout, and one line on stderr holding `words`.
#[track_caller]
fn refused(out: &std::process::Output, words: &str) {
    assert_eq!(code(out), 2, "{}", stderr(out));
    assert_eq!(stdout(out), "");
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err:?}");
    assert!(err.contains(words), "{err:?}");
}

#[test]
fn an_effort_axe_does_not_know_is_exit_2_in_one_line_in_the_file_or_the_flag() {
    let home = thinker("openai/o4-mini", "reasoning_effort = \"extreme\"");
    refused(
        &home.run(&["run", "thinker", "--dry-run"]),
        "params.reasoning_effort \"extreme\" is not an effort: expected minimal, low, medium or high",
    );
    let home = thinker("openai/o4-mini", "");
    refused(
        &home.run(&["run", "thinker", "--dry-run", "--reasoning-effort", "max"]),
        "--reasoning-effort \"max\" is not an effort",
    );
}

#[test]
fn a_thinking_budget_under_1024_or_not_a_count_is_exit_2_in_one_line() {
    for (value, words) in [
        (
            "500",
            "params.thinking_budget must be at least 1024 tokens (0: not sent), not 500",
        ),
        ("-3", "params.thinking_budget must be at least 1024"),
        ("\"lots\"", "expected i64 at line 5"),
    ] {
        let home = thinker(
            "anthropic/claude-sonnet-4-5",
            &format!("thinking_budget = {value}"),
        );
        refused(&home.run(&["run", "thinker", "--dry-run"]), words);
    }
    // 0 is not sent, as `max_tokens = 0`.
    let home = thinker("anthropic/claude-sonnet-4-5", "thinking_budget = 0");
    let out = home.run(&["run", "thinker", "--dry-run"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !stdout(&out).contains("thinking_budget"),
        "{}",
        stdout(&out)
    );
}
