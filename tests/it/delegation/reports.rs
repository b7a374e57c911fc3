//! What a run with sub-agents reports (design §3.14): `--json` counts and
//! tokens, `--verbose` turns and calls, warnings once, keys redacted, and
//! sub-agents untouched by the parent's command-line overrides.

use super::*;

// ---------------------------------------------------------------------------
// Output (design §3.14).
// ---------------------------------------------------------------------------

#[test]
fn run_json_counts_tool_calls_and_sums_the_parents_tokens_only() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\", \"b\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    home.named_agent("b", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[
        ("c1", delegate("a", "x")),
        ("c2", delegate("b", "y")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
    assert_ok(&out);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["tool_calls"], 2);
    // Parent turns: 10+7 in, 5+3 out; the sub-agents' 100/50 each are not
    // the parent's (design D16).
    assert_eq!(v["input_tokens"], 17);
    assert_eq!(v["output_tokens"], 8);
    assert_eq!(v["content"], "answer from a | answer from b");
    assert_eq!(v["stop_reason"], "stop");
    assert_eq!(v["model"], "openai/gpt-4o");
}

#[test]
fn run_verbose_logs_turns_and_sub_agent_calls() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"nobody\"]\n",
    );
    home.named_agent("a", "openai/gpt-4o", "");
    let long_task = "t".repeat(100);
    let server = openai_delegation(calls(&[
        ("c1", delegate("a", &long_task)),
        ("c2", delegate("nobody", "x")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    for expected in [
        "[turn 1] Sending request (1 messages, 0 tool calls pending)".to_string(),
        "[turn 1] Received response: tool_calls (2 tool calls)".to_string(),
        format!(
            "[sub-agent] Calling \"a\" (depth 1) with task: {}...",
            "t".repeat(80)
        ),
        "[turn 2] Sending request (3 messages, 2 tool calls pending)".to_string(),
        "[turn 2] Received response: stop (0 tool calls)".to_string(),
        "Tokens:   17 input, 8 output".to_string(),
    ] {
        assert!(
            lines.contains(&expected.as_str()),
            "missing {expected:?} in:\n{err}"
        );
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("[sub-agent] \"a\" completed in ")
                && l.ends_with("ms (13 chars returned)")),
        "{err}"
    );
    assert!(
        lines.contains(&"[sub-agent] \"nobody\" failed: call_agent error: failed to load agent \"nobody\": agent config not found: nobody"),
        "{err}"
    );
    assert!(!err.contains(OPENAI_KEY));
}

#[test]
fn run_verbose_shows_nested_agents_turns_under_their_names() {
    let home = Home::new();
    home.named_agent("a", "openai/gpt-4o", "sub_agents = [\"b\"]\n");
    home.named_agent("b", "openai/gpt-4o", "sub_agents = [\"c\"]\n");
    home.named_agent("c", "openai/gpt-4o", "");
    let server = chain_server();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "a", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    for expected in [
        "[sub-agent] Calling \"b\" (depth 1) with task: go",
        "  b: [turn 1] Sending request (1 messages, 0 tool calls pending)",
        "  b: [sub-agent] Calling \"c\" (depth 2) with task: go",
        "  b: [turn 2] Received response: stop (0 tool calls)",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in:\n{err}");
    }
    // c runs without tools, a single request: a sub-agent's turn is shown
    // all the same (design §3.14), or a tree's leaves would run unseen.
    for expected in [
        "    c: [turn 1] Sending request (1 messages, 0 tool calls pending)",
        "    c: [turn 1] Received response: stop (0 tool calls)",
    ] {
        assert!(lines.contains(&expected), "missing {expected:?} in:\n{err}");
    }
}

#[test]
fn run_verbose_shows_the_turns_of_sub_agents_without_tools_run_side_by_side() {
    // make demo's tree: lead calls two sub-agents at once, neither with tools
    // or a schema; before, neither's turns appeared in --verbose.
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"summarizer\", \"critic\"]\n",
    );
    home.named_agent("summarizer", "openai/gpt-4o", "");
    home.named_agent("critic", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[
        ("c1", delegate("summarizer", "sum it up")),
        ("c2", delegate("critic", "find the flaw")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    for name in ["summarizer", "critic"] {
        for expected in [
            format!("  {name}: [turn 1] Sending request (1 messages, 0 tool calls pending)"),
            format!("  {name}: [turn 1] Received response: stop (0 tool calls)"),
        ] {
            assert!(
                lines.contains(&expected.as_str()),
                "missing {expected:?} in:\n{err}"
            );
        }
    }
}

#[test]
fn run_verbose_of_a_top_level_agent_without_tools_has_no_turn_lines() {
    // The top-level agent keeps the Go original's lines: turns only when it
    // can take more than one.
    let home = Home::new();
    home.named_agent("solo", "openai/gpt-4o", "");
    let server = FakeServer::json(200, &openai_text("alone", 3, 2));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "solo", "-v"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(!err.contains("[turn"), "{err}");
    assert!(err.contains("Tokens:   3 input, 2 output"), "{err}");
}

#[test]
fn run_sub_agent_unknown_key_is_warned_about_once_per_run() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"h\"]\n");
    // A typo a user would otherwise never hear about.
    home.named_agent("h", "openai/gpt-4o", "sub_agent = [\"x\"]\n");
    let server = openai_delegation(calls(&[
        ("c1", delegate("h", "one")),
        ("c2", delegate("h", "two")),
        ("c3", delegate("h", "three")),
    ]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "answer from h | answer from h | answer from h\n"
    );
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("sub_agent")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(warnings[0].starts_with("axe: warning: "), "{err}");
    assert!(warnings[0].contains("h.toml"), "{err}");
}

#[test]
fn run_call_arriving_at_the_depth_limit_gets_the_depth_error() {
    // design D6: leaf runs at the limit without tools; its model calls anyway.
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[sub_agents_config]\nmax_depth = 1\n",
    );
    home.named_agent("leaf", "openai/gpt-4o", "sub_agents = [\"x\"]\n");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("lead", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("leaf", "go"))], 1, 1),
        ),
        ("leaf", false) => Reply::Json(
            200,
            openai_tool_calls(&[("c2", "call_agent", delegate("x", "deeper"))], 1, 1),
        ),
        (name, true) => Reply::Json(
            200,
            openai_text(&format!("{name} got: {}", results_text(req, ",")), 1, 1),
        ),
        _ => Reply::Json(500, "{}".into()),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_ok(&out);
    assert_eq!(
        stdout(&out),
        "lead got: leaf got: call_agent error: maximum sub-agent depth (1) reached\n"
    );
    let leaf = server.sent_by("leaf");
    assert!(
        leaf[0].json().get("tools").is_none(),
        "no tool at the limit"
    );
    assert_eq!(leaf.len(), 2);
    assert!(server.sent_by("x").is_empty());
}

#[test]
fn run_sub_agents_own_parallel_false_governs_its_calls() {
    // The root fans out in parallel; mid says parallel = false for its own calls.
    let home = Home::new();
    home.named_agent("root", "openai/gpt-4o", "sub_agents = [\"mid\"]\n");
    home.named_agent(
        "mid",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[sub_agents_config]\nparallel = false\n",
    );
    home.named_agent("leaf", "openai/gpt-4o", "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.has_tool_results()) {
        ("root", false) => Reply::Json(
            200,
            openai_tool_calls(&[("r", "call_agent", delegate("mid", "go"))], 1, 1),
        ),
        ("mid", false) => Reply::Json(
            200,
            openai_tool_calls(
                &[
                    ("m1", "call_agent", delegate("leaf", "one")),
                    ("m2", "call_agent", delegate("leaf", "two")),
                    ("m3", "call_agent", delegate("leaf", "three")),
                ],
                1,
                1,
            ),
        ),
        ("leaf", _) => {
            std::thread::sleep(Duration::from_millis(100));
            Reply::Json(200, openai_text(&req.first_user_text(), 1, 1))
        }
        (_, true) => Reply::Json(200, openai_text(&results_text(req, ","), 1, 1)),
        _ => Reply::Json(500, "{}".into()),
    });
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "root"]);
    assert_ok(&out);
    assert_eq!(stdout(&out), "Task: one,Task: two,Task: three\n");
    let order: Vec<String> = server
        .sent_by("leaf")
        .iter()
        .map(Recorded::first_user_text)
        .collect();
    assert_eq!(order, ["Task: one", "Task: two", "Task: three"]);
    assert_eq!(server.max_in_flight(), 1);
}

#[test]
fn run_verbose_redacts_a_key_the_model_puts_in_a_task() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "");
    let server = openai_delegation(calls(&[(
        "c1",
        delegate("a", &format!("use the key {OPENAI_KEY} please")),
    )]));
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--verbose"]);
    assert_ok(&out);
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l
                == "[sub-agent] Calling \"a\" (depth 1) with task: use the key [redacted] please"),
        "{err}"
    );
    assert!(!err.contains(OPENAI_KEY), "{err}");
}

#[test]
fn run_sub_agents_ignore_the_parents_command_line_overrides() {
    // design D7: --model, --workdir and --skill are the top-level agent's only.
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"a\"]\n");
    home.named_agent("a", "openai/gpt-4o", "files = [\"*.txt\"]\n");
    std::fs::write(home.dir.path().join("cwd.txt"), "from the cwd").unwrap();
    let wd = TempDir::new("override-wd");
    std::fs::write(wd.path().join("wd.txt"), "from --workdir").unwrap();
    let skill = wd.path().join("SKILL.md");
    std::fs::write(&skill, "PARENT SKILL").unwrap();
    let server = openai_delegation(calls(&[("c1", delegate("a", "read"))]));
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &[
            "run",
            "lead",
            "--model",
            "openai/gpt-4o-mini",
            "--workdir",
            wd.path().to_str().unwrap(),
            "--skill",
            skill.to_str().unwrap(),
        ],
    );
    assert_ok(&out);
    let lead = &server.sent_by("lead")[0];
    assert_eq!(lead.json()["model"], "gpt-4o-mini");
    assert!(lead.system_prompt().contains("PARENT SKILL"));
    let a = &server.sent_by("a")[0];
    assert_eq!(a.json()["model"], "gpt-4o");
    assert_eq!(
        a.system_prompt(),
        "You are a.\n\n---\n\n## Context Files\n\n### cwd.txt\n```txt\nfrom the cwd\n```"
    );
}
