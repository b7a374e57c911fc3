//! Prompt caching (design §4.10), through the real binary: where an
//! Anthropic request carries its `cache_control` marks, as the fake server
//! received them; the switch that turns them off; the dry run that shows
//! them; the cache writes and reads reported beside each other in `--json`,
//! the trace and `--verbose`, from a fake cache that bills each request by
//! the marks it carries; and OpenAI's own cache counts.

use crate::common::*;

use serde_json::{Value, json};

const MARK: &str = "cache_control";

/// A system prompt long enough for the fake cache to keep (over
/// [`MIN_CACHEABLE`] tokens).
fn long_prompt() -> String {
    "You are hands. Read what you are asked to read, then answer. ".repeat(100)
}

/// A home whose agent `hands` (Anthropic, a long system prompt, two file
/// tools, `extra` TOML) works in `<home>/work`, which holds `notes.txt`.
fn hands(extra: &str) -> Home {
    let home = Home::new();
    let work = home.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\nbeta\ngamma\n".repeat(20)).unwrap();
    home.agent(
        "hands",
        &format!(
            "name = \"hands\"\nmodel = \"{}\"\nsystem_prompt = \"{}\"\nworkdir = \"{}\"\n\
             tools = [\"list_directory\", \"read_file\"]\n{extra}",
            P::Anthropic.model(),
            long_prompt(),
            work.display()
        ),
    );
    home
}

/// The blocks of a message, a string content as one text block.
fn blocks(m: &Value) -> Vec<Value> {
    match &m["content"] {
        Value::Array(b) => b.clone(),
        other => vec![json!({"type": "text", "text": other})],
    }
}

/// Whether the last block of message `i` of `body` is marked.
fn last_block_marked(body: &Value, i: usize) -> bool {
    blocks(&body["messages"][i])
        .last()
        .is_some_and(|b| b[MARK] == json!({"type": "ephemeral"}))
}

/// Every mark in `body`, wherever it is.
fn marks(body: &Value) -> usize {
    body.to_string().matches(&format!("\"{MARK}\"")).count()
}

#[test]
fn anthropic_marks_the_last_tool_the_system_prompt_and_the_newest_messages_of_a_tool_loop() {
    let home = hands("");
    let (server, _) = cached_tool_loop(3, 1, "notes.txt");
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &["run", "hands", "-p", "go"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    assert_eq!(stdout(&b.output), "done\n");
    let bodies: Vec<Value> = server.requests().iter().map(|r| r.json()).collect();
    assert_eq!(bodies.len(), 3);
    for (turn, body) in bodies.iter().enumerate() {
        // The system prompt as one marked text block.
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": long_prompt(), MARK: {"type": "ephemeral"}}]),
            "turn {turn}"
        );
        // The last tool only.
        let tools = body["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 2);
        assert!(tools[0].get(MARK).is_none(), "turn {turn}: {}", tools[0]);
        assert_eq!(tools[1][MARK], json!({"type": "ephemeral"}), "turn {turn}");
        // The newest message's last block.
        let n = body["messages"].as_array().unwrap().len();
        assert!(last_block_marked(body, n - 1), "turn {turn}: {body}");
    }
    // Turn 1: the user's message is the newest; three marks in all.
    assert_eq!(bodies[0]["messages"][0]["content"][0]["text"], "go");
    assert_eq!(marks(&bodies[0]), 3);
    // Later turns: the previous request's last message is marked again,
    // where that request wrote its entry; nothing else in the history.
    for (turn, prev) in [(1, 0), (2, 2)] {
        let body = &bodies[turn];
        assert!(last_block_marked(body, prev), "turn {turn}: {body}");
        assert_eq!(marks(body), 4, "turn {turn}: {body}");
    }
}

#[test]
fn never_more_than_four_marks_however_many_turns() {
    let home = hands("");
    let (server, usages) = cached_tool_loop(14, 1, "notes.txt");
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &["run", "hands", "-p", "go"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let requests = server.requests();
    assert_eq!(requests.len(), 14);
    for (i, r) in requests.iter().enumerate() {
        let n = marks(&r.json());
        assert!(n <= 4, "request {}: {n} marks", i + 1);
    }
    // And every turn after the first read the one before it.
    let usages = usages.lock().unwrap();
    for (i, u) in usages.iter().enumerate().skip(1) {
        assert!(
            u.read > 0 && u.read == u.readable,
            "request {}: {u:?}",
            i + 1
        );
    }
}

#[test]
fn a_turn_of_many_calls_still_reads_the_whole_previous_turn() {
    // Twelve calls and their results put 24 blocks between the newest mark
    // and the previous turn's, beyond how far the API looks back from a
    // mark: the previous turn's own mark, sent again, is what reads it.
    let home = hands("");
    let (server, usages) = cached_tool_loop(3, 12, "notes.txt");
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &["run", "hands", "-p", "go"],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let usages = usages.lock().unwrap();
    assert_eq!(usages.len(), 3);
    for (i, u) in usages.iter().enumerate().skip(1) {
        assert!(
            u.read > 0 && u.read == u.readable,
            "request {}: {u:?}",
            i + 1
        );
    }
}

#[test]
fn prompt_cache_false_sends_no_mark_and_the_system_prompt_as_a_string() {
    for (extra, args) in [
        ("prompt_cache = false\n", &["run", "hands", "-p", "go"][..]),
        ("", &["run", "hands", "-p", "go", "--no-prompt-cache"][..]),
    ] {
        let home = hands(extra);
        let (server, usages) = cached_tool_loop(3, 1, "notes.txt");
        let b = home.run_bounded(&[(P::Anthropic, &server)], args, HUNG);
        assert_eq!(code(&b.output), 0, "{args:?}: {}", stderr(&b.output));
        let requests = server.requests();
        assert_eq!(requests.len(), 3);
        for r in &requests {
            assert!(!r.body.contains(MARK), "{args:?}: {}", r.body);
            assert_eq!(r.json()["system"], long_prompt(), "{args:?}");
        }
        assert!(
            usages
                .lock()
                .unwrap()
                .iter()
                .all(|u| u.read == 0 && u.written == 0)
        );
    }
}

#[test]
fn a_sub_agent_follows_its_own_files_switch_not_its_callers() {
    for (lead, sub, flag) in [
        ("prompt_cache = false\n", "", false),
        ("", "prompt_cache = false\n", false),
        ("", "", true),
    ] {
        let home = Home::new();
        home.named_agent(
            "lead",
            P::Anthropic.model(),
            &format!("sub_agents = [\"sub\"]\n{lead}"),
        );
        home.named_agent("sub", P::Anthropic.model(), sub);
        let server = FakeServer::route(|req| match req.who().as_str() {
            "lead" if req.has_tool_results() => Reply::Json(200, anthropic_text("done", 1, 1)),
            "lead" => Reply::Json(
                200,
                anthropic_tool_use("", &[("c1", "call_agent", delegate("sub", "go"))], 1, 1),
            ),
            _ => Reply::Json(200, anthropic_text("sub done", 1, 1)),
        });
        let mut args = vec!["run", "lead"];
        if flag {
            args.push("--no-prompt-cache");
        }
        let b = home.run_bounded(&[(P::Anthropic, &server)], &args, HUNG);
        assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
        let marked = |who: &str| {
            let sent = server.sent_by(who);
            assert!(!sent.is_empty(), "{who} sent nothing");
            sent.iter().all(|r| r.body.contains(MARK))
        };
        let unmarked = |who: &str| server.sent_by(who).iter().all(|r| !r.body.contains(MARK));
        // The command line's switch is the top-level agent's, as --model is.
        let lead_on = lead.is_empty() && !flag;
        let sub_on = sub.is_empty();
        assert!(
            if lead_on {
                marked("lead")
            } else {
                unmarked("lead")
            },
            "{lead:?} {flag}"
        );
        assert!(
            if sub_on {
                marked("sub")
            } else {
                unmarked("sub")
            },
            "{sub:?} {flag}"
        );
    }
}

#[test]
fn dry_run_says_where_the_marks_go_or_that_none_are_sent() {
    let home = hands("");
    let out = home.run(&["run", "hands", "--dry-run", "-p", "go"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with(
            "\n--- Prompt Cache ---\nOn: cache_control {\"type\":\"ephemeral\"} on the last tool, \
             the system prompt and the newest message; from the second turn, on the previous \
             request's last message too\n"
        ),
        "{}",
        stdout(&out)
    );
    let off = home.run(&["run", "hands", "--dry-run", "-p", "go", "--no-prompt-cache"]);
    assert!(
        stdout(&off).ends_with(
            "\n--- Prompt Cache ---\nOff: no cache_control is sent (prompt_cache = false, or \
             --no-prompt-cache)\n"
        ),
        "{}",
        stdout(&off)
    );
    // A file that turns it off says so in `agents show` too.
    let home_off = hands("prompt_cache = false\n");
    let shown = home_off.run(&["agents", "show", "hands"]);
    assert!(
        stdout(&shown)
            .lines()
            .any(|l| l.starts_with("Prompt Cache:") && l.ends_with(" off")),
        "{}",
        stdout(&shown)
    );
    assert!(!stdout(&home.run(&["agents", "show", "hands"])).contains("Prompt Cache"));
    // The other wires send nothing for their caches: no section.
    home.plain_agent("o", P::OpenAi.model());
    let other = home.run(&["run", "o", "--dry-run", "-p", "go"]);
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    assert!(
        !stdout(&other).contains("Prompt Cache"),
        "{}",
        stdout(&other)
    );
}

#[test]
fn cache_writes_and_reads_are_reported_in_json_the_trace_and_verbose() {
    let home = hands("");
    let (server, usages) = cached_tool_loop(4, 1, "notes.txt");
    let trace = home.dir.path().join("t.jsonl");
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &[
            "run",
            "hands",
            "-p",
            "go",
            "--json",
            "-v",
            "--trace",
            trace.to_str().unwrap(),
        ],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let usages = usages.lock().unwrap().clone();
    assert_eq!(usages.len(), 4);
    let sum = |f: fn(&CacheUsage) -> u64| usages.iter().map(f).sum::<u64>();
    let (written, read) = (sum(|u| u.written), sum(|u| u.read));
    assert!(written > 0 && read > 0, "{usages:?}");

    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    assert_eq!(out["input_tokens"], sum(CacheUsage::total));
    assert_eq!(out["cache_creation_input_tokens"], written);
    assert_eq!(out["cache_read_input_tokens"], read);
    assert_eq!(out["total_cache_creation_input_tokens"], written);
    assert_eq!(out["total_cache_read_input_tokens"], read);
    assert_eq!(out["agents"][0]["cache_creation_input_tokens"], written);
    assert_eq!(out["agents"][0]["cache_read_input_tokens"], read);

    let events = trace_events(&trace);
    let responses: Vec<&Value> = events.iter().filter(|e| e["event"] == "response").collect();
    assert_eq!(responses.len(), 4);
    for (e, u) in responses.iter().zip(&usages) {
        assert_eq!(e["cache_creation_input_tokens"], u.written, "{e}");
        assert_eq!(e["cache_read_input_tokens"], u.read, "{e}");
        assert_eq!(e["input_tokens"], u.total(), "{e}");
    }
    let end = events.iter().find(|e| e["event"] == "run_end").unwrap();
    assert_eq!(end["cache_creation_input_tokens"], written);
    assert_eq!(end["total_cache_creation_input_tokens"], written);
    assert_eq!(end["total_cache_read_input_tokens"], read);

    let err = stderr(&b.output);
    let lines: Vec<&str> = err.lines().collect();
    for (i, u) in usages.iter().enumerate() {
        let (stop, calls) = if i < 3 {
            ("tool_use", 1)
        } else {
            ("end_turn", 0)
        };
        let line = format!(
            "[turn {}] Received response: {stop} ({calls} tool calls, cache: {} read, {} written)",
            i + 1,
            u.read,
            u.written
        );
        assert!(
            lines.contains(&line.as_str()),
            "missing {line:?} in:\n{err}"
        );
    }
    let footer = format!("Cache:    {read} read, {written} written (of the input)");
    assert!(
        lines.contains(&footer.as_str()),
        "missing {footer:?} in:\n{err}"
    );
}

#[test]
fn verbose_usage_table_has_each_agents_cache_writes_and_reads() {
    let home = Home::new();
    home.named_agent("lead", P::Anthropic.model(), "sub_agents = [\"sub\"]\n");
    home.named_agent("sub", P::Anthropic.model(), "");
    let cached = |text: &str, created: u64, read: u64| {
        let mut v: Value = serde_json::from_str(&anthropic_text(text, 1, 1)).unwrap();
        v["usage"]["cache_creation_input_tokens"] = created.into();
        v["usage"]["cache_read_input_tokens"] = read.into();
        v.to_string()
    };
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, cached("done", 0, 300)),
        "lead" => Reply::Json(
            200,
            anthropic_tool_use("", &[("c1", "call_agent", delegate("sub", "go"))], 1, 1),
        ),
        _ => Reply::Json(200, cached("sub done", 70, 5)),
    });
    let b = home.run_bounded(&[(P::Anthropic, &server)], &["run", "lead", "-v"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let err = stderr(&b.output);
    let rows: Vec<Vec<&str>> = err
        .lines()
        .skip_while(|l| !l.starts_with("agent "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 4, "{err}");
    assert_eq!(rows[0][5..7], ["cache_read", "cache_write"], "{err}");
    // lead: 1, then 1 + 300; sub: 1 + 70 + 5.
    assert_eq!(
        rows[1][..7],
        ["lead", "1", "2", "302", "2", "300", "0"],
        "{err}"
    );
    assert_eq!(
        rows[2][..7],
        ["sub", "1", "1", "76", "1", "5", "70"],
        "{err}"
    );
    assert_eq!(
        rows[3][..7],
        ["total", "2", "3", "378", "3", "305", "70"],
        "{err}"
    );
}

#[test]
fn openai_cached_tokens_are_reads_and_its_cache_write_tokens_writes() {
    let home = Home::new();
    home.plain_agent("o", P::OpenAi.model());
    let mut v: Value = serde_json::from_str(&openai_text("hi", 2000, 5)).unwrap();
    v["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 1536, "cache_write_tokens": 128});
    let server = FakeServer::start(vec![Reply::Json(200, v.to_string())]);
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "o", "--json"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    // Both are already part of `prompt_tokens`.
    assert_eq!(out["input_tokens"], 2000);
    assert_eq!(out["cache_read_input_tokens"], 1536);
    assert_eq!(out["cache_creation_input_tokens"], 128);
    // OpenAI's request carries nothing for its cache.
    assert!(!server.only_request().body.contains(MARK));
}

#[test]
fn openai_requests_keep_the_stable_prefix_first_turn_after_turn() {
    let home = Home::new();
    home.named_agent("lead", P::OpenAi.model(), "sub_agents = [\"sub\"]\n");
    home.named_agent("sub", P::OpenAi.model(), "");
    let server = FakeServer::route(|req| match (req.who().as_str(), req.messages().len()) {
        ("lead", n) if n < 6 => Reply::Json(
            200,
            openai_tool_calls(
                &[(&format!("c{n}"), "call_agent", delegate("sub", "go"))],
                1,
                1,
            ),
        ),
        ("lead", _) => Reply::Json(200, openai_text("done", 1, 1)),
        _ => Reply::Json(200, openai_text("sub done", 1, 1)),
    });
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "lead"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let lead = server.sent_by("lead");
    assert_eq!(lead.len(), 3);
    for pair in lead.windows(2) {
        let (before, after) = (pair[0].json(), pair[1].json());
        // The system prompt first, then the history as it was sent, byte
        // for byte; the tools the same on every turn.
        assert_eq!(after["messages"][0]["role"], "system");
        let n = before["messages"].as_array().unwrap().len();
        assert_eq!(
            after["messages"].as_array().unwrap()[..n],
            before["messages"].as_array().unwrap()[..]
        );
        assert_eq!(after["tools"], before["tools"]);
        assert_eq!(after["tool_choice"], before["tool_choice"]);
    }
}

#[test]
fn odd_cache_counts_are_zero_and_huge_ones_saturate() {
    let home = Home::new();
    home.named_agent("lead", P::Anthropic.model(), "sub_agents = [\"sub\"]\n");
    home.named_agent("sub", P::Anthropic.model(), "");
    let with = |text: &str, created: Value, read: Value| {
        let mut v: Value = serde_json::from_str(&anthropic_text(text, 1, 1)).unwrap();
        v["usage"]["cache_creation_input_tokens"] = created;
        v["usage"]["cache_read_input_tokens"] = read;
        v.to_string()
    };
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => {
            Reply::Json(200, with("done", json!(u64::MAX), json!(-3)))
        }
        "lead" => {
            let mut v: Value = serde_json::from_str(&anthropic_tool_use(
                "",
                &[("c1", "call_agent", delegate("sub", "go"))],
                1,
                1,
            ))
            .unwrap();
            v["usage"]["cache_creation_input_tokens"] = json!("12");
            v["usage"]["cache_read_input_tokens"] = json!(null);
            Reply::Json(200, v.to_string())
        }
        _ => Reply::Json(200, with("sub done", json!(u64::MAX), json!(2.9))),
    });
    let b = home.run_bounded(&[(P::Anthropic, &server)], &["run", "lead", "--json"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    // lead: "12" and null are 0, then u64::MAX and -3 (0).
    assert_eq!(out["cache_creation_input_tokens"], u64::MAX);
    assert_eq!(out["cache_read_input_tokens"], 0);
    assert_eq!(out["input_tokens"], u64::MAX);
    // sub's u64::MAX on top saturates; 2.9 is read as 2.
    assert_eq!(out["total_cache_creation_input_tokens"], u64::MAX);
    assert_eq!(out["total_cache_read_input_tokens"], 2);
    assert_eq!(out["agents"][1]["cache_creation_input_tokens"], u64::MAX);
}
