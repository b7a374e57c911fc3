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

/// Codex's agent file `name` in `home`'s project, `text` its keys.
fn codex(home: &Home, name: &str, text: &str) {
    let dir = home.dir.path().join(".codex/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
}

/// `axe <args>` run in `home`'s directory (where its `.codex/` is).
fn run_here(home: &Home, args: &[&str]) -> std::process::Output {
    home.axe()
        .current_dir(home.dir.path())
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn codex_model_reasoning_effort_is_axes_and_codexs_own_efforts_are_said() {
    let home = Home::new();
    std::fs::create_dir_all(home.dir.path().join(".git")).unwrap();
    let file = |effort: &str| {
        format!(
            "model = \"o4-mini\"\nmodel_reasoning_effort = \"{effort}\"\ndeveloper_instructions = \"x\"\n"
        )
    };
    codex(&home, "deep", &file("high"));
    codex(&home, "deeper", &file("xhigh"));
    codex(&home, "shallow", &file("none"));
    let dry = |name: &str| {
        let out = run_here(&home, &["run", name, "--dry-run", "-p", "x"]);
        assert_eq!(code(&out), 0, "{name}: {}", stderr(&out));
        (stdout(&out), stderr(&out))
    };
    let (text, err) = dry("deep");
    assert!(
        text.contains("max_tokens=default, reasoning_effort=high\n"),
        "{text}"
    );
    assert!(!err.contains("model_reasoning_effort"), "{err}");
    let (text, err) = dry("deeper");
    assert!(text.contains("reasoning_effort=high\n"), "{text}");
    assert!(
        err.contains("model_reasoning_effort \"xhigh\" runs as \"high\""),
        "{err}"
    );
    let (text, _) = dry("shallow");
    assert!(text.contains("max_tokens=default\n"), "{text}");
    assert!(
        text.contains("model_reasoning_effort = \"none\" is not sent"),
        "{text}"
    );
}

#[test]
fn an_agents_reasoning_effort_is_exported_to_codex_and_read_back() {
    let home = Home::new();
    std::fs::create_dir_all(home.dir.path().join(".git")).unwrap();
    home.agent(
        "rx",
        "name = \"rx\"\nmodel = \"openai/o4-mini\"\nsystem_prompt = \"You are rx.\"\n\
         tools = [\"read_file\", \"list_directory\", \"search_files\"]\n\n\
         [params]\nreasoning_effort = \"medium\"\ntemperature = 0.5\n",
    );
    let out = home.run(&["agents", "export", "rx", "--to", "codex"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let file = stdout(&out);
    assert_eq!(
        file,
        "name = \"rx\"\ndescription = \"\"\nmodel = \"o4-mini\"\nmodel_reasoning_effort = \"medium\"\n\
         sandbox_mode = \"read-only\"\ndeveloper_instructions = \"You are rx.\"\n"
    );
    assert!(
        stderr(&out).contains(
            "dropped: params.temperature (Codex's agent files have no sampling parameters)"
        ),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(home.config_dir().join("agents/rx.toml")).unwrap();
    codex(&home, "rx", &file);
    let back = run_here(&home, &["agents", "export", "rx", "--to", "axe"]);
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    let after: toml::Table = stdout(&back).parse().unwrap();
    assert_eq!(
        after["params"]["reasoning_effort"].as_str(),
        Some("medium"),
        "{after}"
    );
}

#[test]
fn agents_show_says_the_effort_and_the_budget_only_when_set() {
    let home = thinker(
        "anthropic/claude-sonnet-4-5",
        "reasoning_effort = \"low\"\nthinking_budget = 4000",
    );
    let out = home.run(&["agents", "show", "thinker"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let row = |label: &str| {
        text.lines()
            .find(|l| l.starts_with(label))
            .map(|l| l[label.len()..].trim().to_string())
    };
    assert_eq!(row("Reasoning Effort:").as_deref(), Some("low"), "{text}");
    assert_eq!(row("Thinking Budget:").as_deref(), Some("4000"), "{text}");
    let plain = thinker("anthropic/claude-sonnet-4-5", "");
    let text = stdout(&plain.run(&["agents", "show", "thinker"]));
    assert!(
        !text.contains("Reasoning Effort") && !text.contains("Thinking Budget"),
        "{text}"
    );
}
