//! The tool's definition (design §3.3, D19), a call that succeeds and the
//! user message it makes (§3.4 steps 6–12), and the checks that come
//! before anything runs, in order (§3.4 steps 1–5, D9).

use super::*;

// ---------------------------------------------------------------------------
// The tool definition (design §3.3, D19).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_tool_definition() {
    let tool = call_agent_tool(&names(&["helper", "runner"]), &[]);
    assert_eq!(CALL_AGENT, "call_agent");
    assert_eq!(tool.name, "call_agent");
    assert_eq!(
        tool.description,
        "Delegate a task to a sub-agent. The sub-agent runs independently with its own context \
         and returns only its final result. Available agents: helper, runner"
    );
    let keys: Vec<&str> = tool.parameters.keys().map(String::as_str).collect();
    assert_eq!(keys, ["agent", "context", "task"]);

    let agent = &tool.parameters["agent"];
    assert_eq!(agent.kind, "string");
    assert!(agent.required);
    assert_eq!(
        agent.description,
        "Name of the sub-agent to invoke (must be one of: helper, runner)"
    );
    assert_eq!(agent.allowed, ["helper", "runner"]);

    let task = &tool.parameters["task"];
    assert_eq!(task.kind, "string");
    assert!(task.required);
    assert_eq!(task.description, "What you need the sub-agent to do");
    assert!(task.allowed.is_empty());

    let context = &tool.parameters["context"];
    assert_eq!(context.kind, "string");
    assert!(!context.required);
    assert_eq!(
        context.description,
        "Additional context from your conversation to pass along"
    );
    assert!(context.allowed.is_empty());
}

#[test]
fn call_agent_tool_with_no_agents_keeps_its_structure() {
    let tool = call_agent_tool(&[], &[]);
    assert_eq!(tool.name, "call_agent");
    assert!(
        tool.description.ends_with("Available agents: "),
        "{}",
        tool.description
    );
    assert!(
        tool.description
            .starts_with("Delegate a task to a sub-agent.")
    );
    assert_eq!(tool.parameters.len(), 3);
    let agent = &tool.parameters["agent"];
    assert_eq!(
        agent.description,
        "Name of the sub-agent to invoke (must be one of: )"
    );
    assert!(agent.required);
    assert!(agent.allowed.is_empty());
    assert!(tool.parameters["task"].required);
    assert!(!tool.parameters["context"].required);
}

#[test]
fn call_agent_tool_with_duplicate_names_dedups_the_enum_only() {
    let tool = call_agent_tool(&names(&["a", "b", "a"]), &[]);
    assert!(
        tool.description.ends_with("Available agents: a, b, a"),
        "{}",
        tool.description
    );
    assert_eq!(
        tool.parameters["agent"].description,
        "Name of the sub-agent to invoke (must be one of: a, b, a)"
    );
    assert_eq!(tool.parameters["agent"].allowed, ["a", "b"]);
}

// ---------------------------------------------------------------------------
// Success, and the user message (design §3.4 steps 6–12).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_success() {
    let server = FakeServer::json(200, &openai_text("the answer", 12, 5));
    let s = Setup::openai(&server);
    s.agent(
        "helper",
        "name = \"helper\"\nmodel = \"openai/gpt-4o\"\nsystem_prompt = \"You are the helper.\"\n\
         [params]\ntemperature = 0.3\nmax_tokens = 77\n",
    );
    let ctx = s.ctx(0, 3, 30);
    let r = call_one(
        &ctx,
        &["helper"],
        &call("call_abc", "helper", "Summarise it"),
    );
    assert_eq!(
        r,
        ToolResult {
            call_id: "call_abc".into(),
            tool_name: CALL_AGENT.into(),
            content: "the answer".into(),
            is_error: false,
        }
    );

    let req = server.only_request();
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.system_prompt(), "You are the helper.");
    assert_eq!(req.first_user_text(), "Task: Summarise it");
    let body = req.json();
    // The sub-agent's own model and params (design §3.4).
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["temperature"], 0.3);
    assert_eq!(body["max_tokens"], 77);
    assert_eq!(req.messages().len(), 2, "system and user only");
    // No sub_agents: no tools.
    assert!(body.get("tools").is_none(), "{body}");
}

#[test]
fn call_agent_uses_the_sub_agents_own_provider() {
    let anthropic = FakeServer::json(200, &anthropic_text("from claude", 3, 2));
    let ollama = FakeServer::json(200, &ollama_text("from llama", 3, 2));
    let s = Setup::new(global(&[
        ("anthropic", Some(ANTHROPIC_KEY), &anthropic.url),
        ("ollama", None, &ollama.url),
    ]));
    s.agent(
        "a",
        "name = \"a\"\nmodel = \"anthropic/claude-x\"\nsystem_prompt = \"Claude here.\"\n",
    );
    s.agent(
        "o",
        "name = \"o\"\nmodel = \"ollama/llama3.1\"\nsystem_prompt = \"Llama here.\"\n",
    );
    let ctx = s.ctx(0, 3, 30);

    let r = call_one(&ctx, &["a", "o"], &call("toolu_1", "a", "one"));
    assert_eq!((r.content.as_str(), r.is_error), ("from claude", false));
    assert_eq!(r.call_id, "toolu_1");
    let req = anthropic.only_request();
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.system_prompt(), "Claude here.");
    assert_eq!(req.json()["model"], "claude-x");
    assert_eq!(req.first_user_text(), "Task: one");

    let r = call_one(&ctx, &["a", "o"], &call("ollama_0", "o", "two"));
    assert_eq!((r.content.as_str(), r.is_error), ("from llama", false));
    let req = ollama.only_request();
    assert_eq!(req.path, "/api/chat");
    assert_eq!(req.system_prompt(), "Llama here.");
    assert_eq!(req.json()["model"], "llama3.1");
    assert_eq!(req.first_user_text(), "Task: two");
}

#[test]
fn call_agent_with_context() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let c = call_with(
        "c1",
        &[
            ("agent", "h"),
            ("task", "Summarise the report"),
            ("context", "The report is in Q3.md.\nFocus on revenue."),
        ],
    );
    let r = call_one(&ctx, &["h"], &c);
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        server.only_request().first_user_text(),
        "Task: Summarise the report\n\nContext:\nThe report is in Q3.md.\nFocus on revenue."
    );
}

#[test]
fn call_agent_without_context() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    let cases = [
        call_with("absent", &[("agent", "h"), ("task", "do it")]),
        call_with(
            "empty",
            &[("agent", "h"), ("task", "do it"), ("context", "")],
        ),
        call_with(
            "blank",
            &[("agent", "h"), ("task", "do it"), ("context", "  \n\t ")],
        ),
    ];
    for c in &cases {
        let r = call_one(&ctx, &["h"], c);
        assert!(!r.is_error, "{}: {r:?}", c.id);
        assert_eq!(r.call_id, c.id);
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    for (req, c) in reqs.iter().zip(&cases) {
        assert_eq!(req.first_user_text(), "Task: do it", "{}", c.id);
    }
}

// ---------------------------------------------------------------------------
// The checks before anything runs (design §3.4 steps 1–5, D9).
// ---------------------------------------------------------------------------

#[test]
fn call_agent_empty_agent_name() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    for c in [
        call_with("c1", &[("agent", ""), ("task", "do it")]),
        call_with("c1", &[("task", "do it")]),
    ] {
        assert_error(
            &call_one(&ctx, &["h"], &c),
            "c1",
            "call_agent error: \"agent\" argument is required",
        );
    }
    assert_no_request(&server);
}

#[test]
fn call_agent_empty_task() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(0, 3, 30);
    for c in [
        call_with("c2", &[("agent", "h"), ("task", "")]),
        call_with("c2", &[("agent", "h")]),
        call_with("c2", &[("agent", "h"), ("context", "some context")]),
    ] {
        assert_error(
            &call_one(&ctx, &["h"], &c),
            "c2",
            "call_agent error: \"task\" argument is required",
        );
    }
    assert_no_request(&server);
}

#[test]
fn call_agent_agent_not_allowed() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    // Both exist as files; only "h" is allowed.
    s.agent("h", &openai_agent("h", "H."));
    s.agent("other", &openai_agent("other", "Other."));
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &call_one(&ctx, &["h"], &call("c3", "other", "do it")),
        "c3",
        "call_agent error: agent \"other\" is not in this agent's sub_agents list",
    );
    // A path is not a name in the list: refused before any file is read.
    assert_error(
        &call_one(&ctx, &["h"], &call("c4", "../../etc/passwd", "do it")),
        "c4",
        "call_agent error: agent \"../../etc/passwd\" is not in this agent's sub_agents list",
    );
    // No list at all: nothing is allowed.
    assert_error(
        &call_one(&ctx, &[], &call("c5", "h", "do it")),
        "c5",
        "call_agent error: agent \"h\" is not in this agent's sub_agents list",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_path_in_sub_agents_list_is_never_loaded() {
    // design D9: even a list entry that is a path (which validation would refuse)
    // reaches no file: `<config>/agents/../outside.toml` exists and is valid.
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    std::fs::write(
        s.dir().join("outside.toml"),
        openai_agent("outside", "Outside."),
    )
    .unwrap();
    let ctx = s.ctx(0, 3, 30);
    assert_error(
        &call_one(&ctx, &["../outside"], &call("c6", "../outside", "do it")),
        "c6",
        "call_agent error: failed to load agent \"../outside\": invalid agent name \"../outside\": \
         use only letters, digits, '.', '_' and '-'",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_depth_limit_reached() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ctx = s.ctx(3, 3, 30);
    assert_error(
        &call_one(&ctx, &["h"], &call("c7", "h", "do it")),
        "c7",
        "call_agent error: maximum sub-agent depth (3) reached",
    );
    let ctx = s.ctx(5, 5, 30);
    assert_error(
        &call_one(&ctx, &["h"], &call("c8", "h", "do it")),
        "c8",
        "call_agent error: maximum sub-agent depth (5) reached",
    );
    let ctx = s.ctx(4, 1, 30);
    assert_error(
        &call_one(&ctx, &["h"], &call("c9", "h", "do it")),
        "c9",
        "call_agent error: maximum sub-agent depth (1) reached",
    );
    assert_no_request(&server);
}

#[test]
fn call_agent_checks_run_in_spec_order() {
    let server = FakeServer::json(200, &openai_text("ok", 1, 1));
    let s = Setup::openai(&server);
    s.agent("h", &openai_agent("h", "H."));
    let ok = s.ctx(0, 3, 30);
    let at_limit = s.ctx(3, 3, 30);

    // Empty agent and empty task: the agent check comes first.
    assert_error(
        &call_one(&ok, &["h"], &call("o1", "", "")),
        "o1",
        "call_agent error: \"agent\" argument is required",
    );
    // Empty agent at the depth limit: still the agent check.
    assert_error(
        &call_one(&at_limit, &["h"], &call("o2", "", "do it")),
        "o2",
        "call_agent error: \"agent\" argument is required",
    );
    // Empty task and an agent not allowed: the task check comes first.
    assert_error(
        &call_one(&ok, &["h"], &call("o3", "stranger", "")),
        "o3",
        "call_agent error: \"task\" argument is required",
    );
    // Not allowed at the depth limit: the list check comes first.
    assert_error(
        &call_one(&at_limit, &["h"], &call("o4", "stranger", "do it")),
        "o4",
        "call_agent error: agent \"stranger\" is not in this agent's sub_agents list",
    );
    // Allowed, no file, at the depth limit: the depth check comes before loading.
    assert_error(
        &call_one(&at_limit, &["ghost"], &call("o5", "ghost", "do it")),
        "o5",
        "call_agent error: maximum sub-agent depth (3) reached",
    );
    assert_no_request(&server);
}
