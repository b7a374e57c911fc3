//! The sub-agent's own run (design §3.7, §3.9, D7): its turns and depth,
//! its own timeout, workdir, files and skill, and the calls of one response
//! at once or in sequence (§3.10).

use super::*;

// ---------------------------------------------------------------------------
// The sub-agent's own conversation (design §3.7, §3.9).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_sub_agent_exceeding_50_turns() {
    // The looper always calls an agent outside its list: each call fails at
    // once (no nested run), and the conversation goes on until the limit.
    let server = FakeServer::json(
        200,
        &openai_tool_calls(
            &[("call_loop", "call_agent", delegate("stranger", "again"))],
            4,
            2,
        ),
    );
    let s = Setup::openai(&server);
    s.agent(
        "looper",
        "name = \"looper\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Loop.\"\nsub_agents = [\"leaf\"]\n",
    );
    let ctx = s.ctx(0, 3, 60);
    assert_error(
        &call_one(&ctx, &["looper"], &call("l1", "looper", "loop forever")),
        "l1",
        "Error: sub-agent \"looper\" failed - agent exceeded maximum conversation turns (50). \
         You may retry or proceed without this result.",
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 50);
    // The refused nested call went back to the looper as its tool result.
    let last = reqs[1].messages().last().cloned().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_call_id"], "call_loop");
    assert_eq!(
        last["content"],
        "call_agent error: agent \"stranger\" is not in this agent's sub_agents list"
    );
}

#[test]
fn run_call_answers_an_unknown_tool_and_runs_call_agent() {
    let server = FakeServer::json(200, &openai_text("dispatched", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let allowed = names(&["h"]);
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
    let unknown = ToolCall {
        id: "call_rf".into(),
        name: "read_file".into(),
        arguments: [("path".to_string(), "/etc/passwd".to_string())]
            .into_iter()
            .collect(),
        ..ToolCall::default()
    };
    assert_error(
        &run_call(&unknown, &caller),
        "call_rf",
        "Unknown tool: \"read_file\"",
    );
    assert_no_request(&server);
    // call_agent goes to the sub-agent.
    let r = run_call(&call("call_ok", "h", "do it"), &caller);
    assert_eq!((r.content.as_str(), r.is_error), ("dispatched", false));
    assert_eq!(r.call_id, "call_ok");
    assert_eq!(server.requests().len(), 1);
}

/// The `tools` of the one request agent "d" (`sub_agents = ["x", "y"]`)
/// sends when called at `depth` in a tree bounded by `max_depth`.
fn tools_sent_at(depth: u32, max_depth: u32) -> Option<Value> {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent(
        "d",
        "name = \"d\"\nmodel = \"openai/gpt-4o\"\nsub_agents = [\"x\", \"y\"]\n",
    );
    let ctx = s.ctx(depth, max_depth, 30);
    let r = call_one(&ctx, &["d"], &call("d1", "d", "do it"));
    assert_eq!((r.content.as_str(), r.is_error), ("ok", false), "{r:?}");
    server.only_request().json().get("tools").cloned()
}

#[test]
fn sub_agent_below_the_depth_limit_gets_call_agent() {
    for (depth, max_depth) in [(0, 3), (1, 3), (3, 5)] {
        let tools = tools_sent_at(depth, max_depth)
            .unwrap_or_else(|| panic!("no tools at depth {depth} of {max_depth}"));
        let tools = tools.as_array().unwrap();
        assert_eq!(tools.len(), 1);
        let f = &tools[0]["function"];
        assert_eq!(tools[0]["type"], "function");
        assert_eq!(f["name"], "call_agent");
        assert!(
            f["description"]
                .as_str()
                .unwrap()
                .ends_with("Available agents: x, y"),
            "{f}"
        );
        assert_eq!(
            f["parameters"]["properties"]["agent"]["enum"],
            json!(["x", "y"])
        );
        assert_eq!(f["parameters"]["required"], json!(["agent", "task"]));
    }
}

#[test]
fn sub_agent_at_the_depth_limit_gets_no_tools() {
    // Called at depth 2 of 3, the sub-agent runs at depth 3: single-shot (design §3.2).
    for (depth, max_depth) in [(2, 3), (0, 1), (4, 5)] {
        assert_eq!(
            tools_sent_at(depth, max_depth),
            None,
            "depth {depth} of {max_depth}"
        );
    }
}

#[test]
fn nested_call_runs_one_level_deeper() {
    // Called at depth 1 of 3: "mid" runs at 2 with call_agent; its call to
    // "leaf" runs at 3, without tools; leaf's answer goes back to mid.
    let server = FakeServer::route(|req| {
        let body = match req.system_prompt().as_str() {
            "I am mid." if !req.has_tool_results() => openai_tool_calls(
                &[("call_leaf", "call_agent", delegate("leaf", "find it"))],
                5,
                3,
            ),
            "I am mid." => openai_text("mid done", 9, 2),
            "I am leaf." => openai_text("leaf result", 3, 2),
            other => panic!("unexpected system prompt {other:?}"),
        };
        Reply::Json(200, body)
    });
    let s = Setup::openai(&server);
    // mid's own max_depth does not raise the root's bound (design D6).
    s.agent(
        "mid",
        "name = \"mid\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am mid.\"\nsub_agents = [\"leaf\"]\n\
         [sub_agents_config]\nmax_depth = 5\n",
    );
    s.agent(
        "leaf",
        "name = \"leaf\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am leaf.\"\nsub_agents = [\"mid\"]\n",
    );
    let ctx = s.ctx(1, 3, 30);
    let r = call_one(&ctx, &["mid"], &call("n1", "mid", "delegate it"));
    assert_eq!(
        r,
        ToolResult {
            call_id: "n1".into(),
            tool_name: CALL_AGENT.into(),
            content: "mid done".into(),
            is_error: false,
        }
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let prompts: Vec<String> = reqs.iter().map(|r| r.system_prompt()).collect();
    assert_eq!(prompts, ["I am mid.", "I am leaf.", "I am mid."]);
    assert!(
        reqs[0].json().get("tools").is_some(),
        "mid at depth 2 has tools"
    );
    assert!(
        reqs[1].json().get("tools").is_none(),
        "leaf at depth 3 has none"
    );
    assert_eq!(reqs[1].first_user_text(), "Task: find it");
    let back = reqs[2].messages().last().cloned().unwrap();
    assert_eq!(back["role"], "tool");
    assert_eq!(back["tool_call_id"], "call_leaf");
    assert_eq!(back["content"], "leaf result");
}

#[test]
fn nested_sub_agents_own_timeout_governs_its_calls() {
    // design D6: "mid" has `timeout = 1`; its call to "leaf" (which never gets an
    // answer) fails after 1s although the tree's deadline is 30s away, and
    // mid goes on with the error as its tool result.
    let server = FakeServer::route(|req| match req.system_prompt().as_str() {
        "I am mid." if !req.has_tool_results() => Reply::Json(
            200,
            openai_tool_calls(
                &[("call_leaf", "call_agent", delegate("leaf", "wait"))],
                5,
                3,
            ),
        ),
        "I am mid." => Reply::Json(200, openai_text("mid went on", 9, 2)),
        _ => Reply::Hang,
    });
    let s = Setup::openai(&server);
    s.agent(
        "mid",
        "name = \"mid\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"I am mid.\"\nsub_agents = [\"leaf\"]\n\
         [sub_agents_config]\ntimeout = 1\n",
    );
    s.agent("leaf", &openai_agent("leaf", "I am leaf."));
    let ctx = s.ctx(0, 3, 30);
    let started = Instant::now();
    let r = call_one(&ctx, &["mid"], &call("n2", "mid", "delegate it"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (r.content.as_str(), r.is_error),
        ("mid went on", false),
        "{r:?}"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{reqs:?}");
    let back = reqs[2].messages().last().cloned().unwrap();
    assert_eq!(back["tool_call_id"], "call_leaf");
    assert_eq!(
        back["content"],
        "Error: sub-agent \"leaf\" failed - timeout after 1s. You may retry or proceed without this result."
    );
}

// ---------------------------------------------------------------------------
// Isolation (design D7) and skill resolution.
// ---------------------------------------------------------------------------

#[test]
fn sub_agent_uses_its_own_workdir_and_files() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    // The run's current directory has a file the sub-agent must not see.
    std::fs::write(s.dir().join("parent.txt"), "parent secret").unwrap();
    let work = TempDir::new("tool-work");
    std::fs::write(work.path().join("a.txt"), "alpha contents").unwrap();
    s.agent(
        "iso",
        &format!(
            "name = \"iso\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Isolated.\"\n\
             files = [\"*.txt\"]\nworkdir = {:?}\n",
            work.path().display().to_string()
        ),
    );
    let ctx = s.ctx(0, 3, 30);
    let r = call_one(&ctx, &["iso"], &call("i1", "iso", "look"));
    assert!(!r.is_error, "{r:?}");
    let req = server.only_request();
    assert_eq!(
        req.system_prompt(),
        "Isolated.\n\n---\n\n## Context Files\n\n### a.txt\n```txt\nalpha contents\n```"
    );
    assert!(!req.body.contains("parent"), "{}", req.body);
    assert_eq!(req.first_user_text(), "Task: look");
}

#[test]
fn sub_agent_without_workdir_reads_files_from_the_runs_cwd() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let cwd = TempDir::new("tool-cwd");
    std::fs::write(cwd.path().join("b.txt"), "bravo").unwrap();
    s.agent(
        "w",
        "name = \"w\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"W.\"\nfiles = [\"*.txt\"]\n",
    );
    let ctx = Ctx {
        cwd: cwd.path(),
        ..s.ctx(0, 3, 30)
    };
    let r = call_one(&ctx, &["w"], &call("w1", "w", "look"));
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().system_prompt(),
        "W.\n\n---\n\n## Context Files\n\n### b.txt\n```txt\nbravo\n```"
    );
}

#[test]
fn sub_agent_skill_resolves_against_the_ctx_config_dir() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    let skill_dir = s.dir().join("skills").join("s");
    std::fs::create_dir_all(&skill_dir).unwrap();
    std::fs::write(skill_dir.join("SKILL.md"), "# Skill S\nDo the S thing.").unwrap();
    s.agent(
        "sk",
        "name = \"sk\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"Base.\"\n\
         skill = \"skills/s/SKILL.md\"\n",
    );
    // The run's current directory is elsewhere: only the config dir has the skill.
    let cwd = TempDir::new("tool-cwd");
    let ctx = Ctx {
        cwd: cwd.path(),
        ..s.ctx(0, 3, 30)
    };
    let r = call_one(&ctx, &["sk"], &call("s1", "sk", "use the skill"));
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().system_prompt(),
        "Base.\n\n---\n\n## Skill\n\n# Skill S\nDo the S thing."
    );
}

// ---------------------------------------------------------------------------
// Several calls of one response (design §3.10).
// ---------------------------------------------------------------------------

/// Runs four calls of one response for a parallel caller at `depth`: three
/// to "w" whose requests must all be in flight together (the gate) and whose
/// first is answered last, and one refused at once.
fn parallel_calls_at(depth: u32) {
    let gate = Arc::new(Gate::new(3));
    let server = {
        let gate = gate.clone();
        FakeServer::route(move |req| {
            gate.arrive(Duration::from_secs(5));
            let task = req.first_user_text();
            let delay = match task.as_str() {
                "Task: first" => 1200,
                "Task: second" => 400,
                _ => 0,
            };
            Reply::Delay(
                Duration::from_millis(delay),
                Box::new(Reply::Json(200, openai_text(&format!("done {task}"), 1, 1))),
            )
        })
    };
    let s = Setup::openai(&server);
    s.agent("w", &openai_agent("w", "Worker."));
    let ctx = s.ctx(depth, 3, 30);
    let allowed = names(&["w"]);
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
    let calls = [
        call("c1", "w", "first"),
        call("c2", "w", "second"),
        call("c3", "w", "third"),
        call("c4", "stranger", "fourth"),
    ];
    let results = run_calls(&calls, &caller);
    assert_eq!(
        results,
        [
            ToolResult {
                call_id: "c1".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: first".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c2".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: second".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c3".into(),
                tool_name: CALL_AGENT.into(),
                content: "done Task: third".into(),
                is_error: false,
            },
            ToolResult {
                call_id: "c4".into(),
                tool_name: CALL_AGENT.into(),
                content:
                    "call_agent error: agent \"stranger\" is not in this agent's sub_agents list"
                        .into(),
                is_error: true,
            },
        ]
    );
    assert!(
        !gate.timed_out.load(std::sync::atomic::Ordering::SeqCst),
        "the three calls did not run at the same time (depth {depth})"
    );
    assert_eq!(server.max_in_flight(), 3);
}

#[test]
fn run_calls_in_parallel_returns_results_in_call_order() {
    parallel_calls_at(0);
}

#[test]
fn run_calls_in_a_sub_agent_runs_calls_at_the_same_time() {
    // A sub-agent's own `parallel` governs the calls it makes (design D6, §3.10).
    parallel_calls_at(1);
}

#[test]
fn run_calls_sequential_runs_calls_one_after_another_in_order() {
    // Each request notes how many earlier ones had been answered when it
    // arrived: one after another, that is 0, 1, 2 even though the first
    // answer is slow.
    let answered = Arc::new(Mutex::new(0usize));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = {
        let (answered, seen) = (answered.clone(), seen.clone());
        FakeServer::route(move |req| {
            let task = req.first_user_text();
            seen.lock()
                .unwrap()
                .push((task.clone(), *answered.lock().unwrap()));
            if task == "Task: first" {
                std::thread::sleep(Duration::from_millis(300));
            }
            *answered.lock().unwrap() += 1;
            Reply::Json(200, openai_text(&format!("done {task}"), 1, 1))
        })
    };
    let s = Setup::openai(&server);
    s.agent("w", &openai_agent("w", "Worker."));
    let ctx = s.ctx(0, 3, 30);
    let allowed = names(&["w"]);
    let caller_model = axe::provider::ModelRef::parse("openai/gpt-4o").unwrap();
    let caller = Caller {
        model: &caller_model,
        allowed_agents: &allowed,
        parallel: false,
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
    let calls = [
        call("c1", "w", "first"),
        call("c2", "w", "second"),
        call("c3", "w", "third"),
    ];
    let results = run_calls(&calls, &caller);
    let got: Vec<(&str, &str, bool)> = results
        .iter()
        .map(|r| (r.call_id.as_str(), r.content.as_str(), r.is_error))
        .collect();
    assert_eq!(
        got,
        [
            ("c1", "done Task: first", false),
            ("c2", "done Task: second", false),
            ("c3", "done Task: third", false),
        ]
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("Task: first".to_string(), 0),
            ("Task: second".to_string(), 1),
            ("Task: third".to_string(), 2),
        ]
    );
}
