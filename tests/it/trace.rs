//! Delegation you can see and bound, through the real binary: the trace
//! (`--trace`, `AXE_TRACE`), the whole tree's usage in `--json` and
//! `--verbose`, token and turn budgets (exit 4), the result limit and the
//! concurrency cap.
//!
//! One fake OpenAI server plays every agent: agents are told apart by their
//! system prompt (`You are <name>.`), each has a plan (the `call_agent`
//! calls of its first response, or none), and each bills a known number of
//! tokens per response, so the tests can add up what the server billed.

use crate::common::*;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::Value;

const KEY: &str = "sk-test-tree-trace-key-0123456789";

/// Writes agent `name` (OpenAI) with system prompt `You are <name>.`.
fn agent(home: &Home, name: &str, extra: &str) {
    home.named_agent(name, "openai/gpt-4o", extra);
}

/// The tokens the fake server bills for one response to `name`.
fn billed(name: &str) -> (u64, u64) {
    let n = name.len() as u64;
    (100 * n + 1, 10 * n + 1)
}

/// What each agent does in its first response: the agents it calls (as
/// `call_agent` calls, ids `<name>_<i>`); an agent without a plan answers.
type Plan = BTreeMap<String, Vec<&'static str>>;

/// A server playing every agent by `plan`: a first response with the
/// planned calls, then (with the tool results in) `<name> got: <results>`;
/// an agent with no calls answers `answer from <name>` after `delay`.
fn tree_server(plan: Plan, delay: Duration) -> FakeServer {
    FakeServer::route(move |req| {
        let name = req.who();
        let (input, output) = billed(&name);
        let calls = plan.get(&name).cloned().unwrap_or_default();
        if req.has_tool_results() {
            let text = format!("{name} got: {}", req.tool_result_texts().join(" | "));
            return Reply::Json(200, openai_text(&text, input, output));
        }
        if calls.is_empty() {
            std::thread::sleep(delay);
            let text = format!("answer from {name}");
            return Reply::Json(200, openai_text(&text, input, output));
        }
        let ids: Vec<String> = (0..calls.len()).map(|i| format!("{name}_{i}")).collect();
        let list: Vec<Call> = calls
            .iter()
            .zip(&ids)
            .map(|(callee, id)| (id.as_str(), "call_agent", delegate(callee, "go")))
            .collect();
        Reply::Json(200, openai_tool_calls(&list, input, output))
    })
}

fn plan(entries: &[(&str, &[&'static str])]) -> Plan {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

fn axe(home: &Home, server: &FakeServer) -> Command {
    let mut c = home.axe();
    c.env("AXE_OPENAI_BASE_URL", &server.url)
        .env("OPENAI_API_KEY", KEY);
    c
}

fn run(mut cmd: Command, args: &[&str]) -> Output {
    cmd.args(args).output().expect("run axe")
}

/// `lead` → `mid` → `leaf`, three levels.
fn three_levels(home: &Home) -> FakeServer {
    agent(home, "lead", "sub_agents = [\"mid\"]\n");
    agent(home, "mid", "sub_agents = [\"leaf\"]\n");
    agent(home, "leaf", "");
    tree_server(
        plan(&[("lead", &["mid"]), ("mid", &["leaf"])]),
        Duration::ZERO,
    )
}

/// Every line of the trace file, parsed.
fn events(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("trace file written");
    assert!(text.ends_with('\n'), "whole lines only");
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == kind).collect()
}

/// `2026-11-23T16:28:01.123Z`.
fn is_rfc3339_ms(ts: &str) -> bool {
    let b = ts.as_bytes();
    ts.len() == 24
        && b[4] == b'-'
        && b[7] == b'-'
        && b[10] == b'T'
        && b[13] == b':'
        && b[16] == b':'
        && b[19] == b'.'
        && b[23] == b'Z'
        && ts
            .chars()
            .enumerate()
            .all(|(i, c)| [4, 7, 10, 13, 16, 19, 23].contains(&i) || c.is_ascii_digit())
}

// ---------------------------------------------------------------------------
// Trace.
// ---------------------------------------------------------------------------

#[test]
fn trace_of_a_three_level_run_accounts_for_every_request_the_server_saw() {
    let home = Home::new();
    let server = three_levels(&home);
    let trace = home.dir.path().join("run.jsonl");
    let out = run(
        axe(&home, &server),
        &[
            "run",
            "lead",
            "-p",
            "go",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead got: mid got: answer from leaf\n");
    let events = events(&trace);

    // Every event carries the common fields.
    let run_id = events[0]["run_id"].as_str().unwrap().to_string();
    for e in &events {
        assert!(is_rfc3339_ms(e["ts"].as_str().unwrap_or("")), "{e}");
        assert_eq!(e["run_id"], run_id.as_str(), "{e}");
        for field in ["event", "agent", "path", "depth", "turn"] {
            assert!(e.get(field).is_some(), "{field} missing: {e}");
        }
    }
    // One request event per request the server saw, from the same agents.
    let requests = of_kind(&events, "request");
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(requests.len(), seen.len());
    let mut traced: Vec<String> = requests
        .iter()
        .map(|e| e["agent"].as_str().unwrap().to_string())
        .collect();
    let mut seen_sorted = seen.clone();
    traced.sort();
    seen_sorted.sort();
    assert_eq!(traced, seen_sorted);
    assert_eq!(of_kind(&events, "response").len(), seen.len());
    for r in of_kind(&events, "response") {
        let (input, output) = billed(r["agent"].as_str().unwrap());
        assert_eq!(r["input_tokens"], input, "{r}");
        assert_eq!(r["output_tokens"], output, "{r}");
        assert_eq!(r["provider"], "openai");
        assert_eq!(r["model"], "gpt-4o");
        assert!(r["duration_ms"].is_u64(), "{r}");
        assert!(r["stop_reason"].is_string(), "{r}");
    }

    // Paths and depths name each run in the tree.
    let starts: Vec<(String, u64)> = of_kind(&events, "run_start")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["depth"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        starts,
        [
            ("lead".to_string(), 0),
            ("lead/mid#1".to_string(), 1),
            ("lead/mid#1/leaf#1".to_string(), 2)
        ]
    );
    assert_eq!(of_kind(&events, "run_end").len(), 3);
    // The tool events: made by lead and mid, each naming whom it called.
    let calls: Vec<(String, String, u64)> = of_kind(&events, "tool_call")
        .iter()
        .map(|e| {
            (
                e["path"].as_str().unwrap().into(),
                e["agent_called"].as_str().unwrap().into(),
                e["turn"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("lead".into(), "mid".into(), 1),
            ("lead/mid#1".into(), "leaf".into(), 1)
        ]
    );
    for r in of_kind(&events, "tool_result") {
        assert_eq!(r["is_error"], false, "{r}");
        assert!(r["chars"].as_u64().unwrap() > 0, "{r}");
        assert!(r["call_id"].is_string(), "{r}");
    }
    // The last event is the top-level run's end, with the tree's totals.
    let last = events.last().unwrap();
    assert_eq!(last["event"], "run_end");
    assert_eq!(last["path"], "lead");
    let (input, output) = seen.iter().fold((0, 0), |(i, o), who| {
        let (bi, bo) = billed(who);
        (i + bi, o + bo)
    });
    assert_eq!(last["total_input_tokens"], input, "{last}");
    assert_eq!(last["total_output_tokens"], output, "{last}");
    // Bodies are off by default.
    assert!(events.iter().all(|e| e.get("body").is_none()));
}

#[test]
fn trace_bodies_adds_the_wire_body_and_the_answers_and_never_the_key() {
    let home = Home::new();
    let server = three_levels(&home);
    let trace = home.dir.path().join("bodies.jsonl");
    // A key echoed in a message body still never reaches the trace.
    let out = run(
        axe(&home, &server),
        &[
            "run",
            "lead",
            "-p",
            &format!("my key is {KEY}"),
            "--trace",
            trace.to_str().unwrap(),
            "--trace-bodies",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(!text.contains(KEY), "the key leaked into the trace");
    assert!(text.contains("[redacted]"));
    let events = events(&trace);
    let first = of_kind(&events, "request")[0];
    assert_eq!(first["body"]["model"], "gpt-4o");
    assert!(first["body"]["messages"].is_array(), "{first}");
    let last = of_kind(&events, "response").into_iter().last().unwrap();
    assert_eq!(last["content"], "lead got: mid got: answer from leaf");
    let result = of_kind(&events, "tool_result")[0];
    assert!(result["content"].is_string(), "{result}");
}

#[test]
fn trace_lines_from_sixteen_parallel_sub_agents_never_interleave() {
    let home = Home::new();
    let workers: Vec<&'static str> = vec!["w"; 16];
    agent(&home, "lead", "sub_agents = [\"w\"]\n");
    agent(&home, "w", "");
    let server = tree_server(plan(&[("lead", &workers)]), Duration::from_millis(50));
    let trace = home.dir.path().join("parallel.jsonl");
    let out = run(
        axe(&home, &server),
        &["run", "lead", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // `events` panics on any line that is not one whole JSON object.
    let events = events(&trace);
    assert_eq!(of_kind(&events, "request").len(), 18);
    let mut paths: Vec<String> = of_kind(&events, "run_start")
        .iter()
        .map(|e| e["path"].as_str().unwrap().to_string())
        .collect();
    paths.sort();
    let mut want: Vec<String> = (1..=16).map(|i| format!("lead/w#{i}")).collect();
    want.push("lead".into());
    want.sort();
    assert_eq!(paths, want);
    // Numbered in call order: call `lead_<i>` went to `w#<i+1>`.
    for e in of_kind(&events, "tool_call") {
        let id = e["call_id"].as_str().unwrap();
        assert!(id.starts_with("lead_"), "{e}");
    }
}

#[test]
fn trace_records_each_retry_and_axe_trace_env_turns_it_on() {
    let home = Home::new();
    home.config("[retry]\ninitial_delay_ms = 1\nmax_delay_ms = 5\n");
    agent(&home, "solo", "");
    let server = FakeServer::start(vec![
        Reply::Json(
            429,
            r#"{"error":{"message":"slow down","type":"rate_limit"}}"#.into(),
        ),
        Reply::Json(200, openai_text("fine", 5, 2)),
    ]);
    let trace = home.dir.path().join("env.jsonl");
    let mut cmd = axe(&home, &server);
    cmd.env("AXE_TRACE", &trace);
    let out = run(cmd, &["run", "solo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = events(&trace);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["run_start", "request", "retry", "response", "run_end"]
    );
    let retry = &events[2];
    assert_eq!(retry["status"], 429);
    assert_eq!(retry["attempt"], 2);
    assert_eq!(retry["of"], 3);
    assert_eq!(retry["provider"], "openai");
    assert!(retry["delay_ms"].is_u64());
}

#[test]
fn trace_records_a_failed_request_as_an_error_event() {
    let home = Home::new();
    agent(&home, "solo", "");
    let server = FakeServer::json(401, r#"{"error":{"message":"bad key","type":"auth"}}"#);
    let trace = home.dir.path().join("err.jsonl");
    let out = run(
        axe(&home, &server),
        &["run", "solo", "--trace", trace.to_str().unwrap()],
    );
    assert_eq!(code(&out), 3);
    let events = events(&trace);
    let err = of_kind(&events, "error");
    assert_eq!(err.len(), 1, "{events:?}");
    assert_eq!(err[0]["status"], 401);
    let end = of_kind(&events, "run_end")[0];
    assert_eq!(end["ok"], false);
    assert!(end["error"].as_str().unwrap().contains("bad key"), "{end}");
}

#[test]
fn trace_file_that_cannot_be_opened_is_exit_2_before_any_request() {
    let home = Home::new();
    agent(&home, "solo", "");
    let server = FakeServer::json(200, &openai_text("x", 1, 1));
    let missing = home.dir.path().join("no/such/dir/t.jsonl");
    let out = run(
        axe(&home, &server),
        &["run", "solo", "--trace", missing.to_str().unwrap()],
    );
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).starts_with("axe: cannot open trace file "));
    assert!(server.requests().is_empty());
}

// ---------------------------------------------------------------------------
// Usage of the whole tree.
// ---------------------------------------------------------------------------

#[test]
fn json_totals_equal_what_the_server_billed_and_list_every_agent() {
    let home = Home::new();
    agent(&home, "lead", "sub_agents = [\"mid\", \"w\"]\n");
    agent(&home, "mid", "sub_agents = [\"w\"]\n");
    agent(&home, "w", "");
    let server = tree_server(
        plan(&[("lead", &["mid", "w"]), ("mid", &["w", "w"])]),
        Duration::ZERO,
    );
    let out = run(axe(&home, &server), &["run", "lead", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    let sum = |f: fn((u64, u64)) -> u64| seen.iter().map(|w| f(billed(w))).sum::<u64>();
    assert_eq!(v["total_input_tokens"], sum(|b| b.0), "{v}");
    assert_eq!(v["total_output_tokens"], sum(|b| b.1), "{v}");
    // The single-agent fields stay the top-level agent's (design D16).
    assert_eq!(v["input_tokens"], 2 * billed("lead").0);
    assert_eq!(v["tool_calls"], 2);
    let agents: BTreeMap<String, Value> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap().to_string(), a.clone()))
        .collect();
    assert_eq!(v["agents"][0]["name"], "lead", "the top-level agent first");
    assert_eq!(agents.len(), 3);
    // w ran three times (once for lead, twice for mid), one turn each.
    assert_eq!(agents["w"]["calls"], 3);
    assert_eq!(agents["w"]["turns"], 3);
    assert_eq!(agents["w"]["input_tokens"], 3 * billed("w").0);
    assert_eq!(agents["mid"]["calls"], 1);
    assert_eq!(agents["mid"]["turns"], 2);
    assert_eq!(agents["lead"]["turns"], 2);
    for a in agents.values() {
        assert_eq!(a["errors"], 0, "{a}");
        assert!(a["duration_ms"].is_u64(), "{a}");
    }
}

#[test]
fn json_counts_a_failed_sub_agent_run_as_an_error_of_that_agent() {
    let home = Home::new();
    agent(&home, "lead", "sub_agents = [\"w\"]\n");
    agent(&home, "w", "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" if req.has_tool_results() => Reply::Json(200, openai_text("done", 1, 1)),
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("w", "go"))], 1, 1),
        ),
        _ => Reply::Json(
            400,
            r#"{"error":{"message":"nope","type":"invalid"}}"#.into(),
        ),
    });
    let out = run(axe(&home, &server), &["run", "lead", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["agents"][1]["name"], "w");
    assert_eq!(v["agents"][1]["errors"], 1);
    assert_eq!(v["agents"][1]["calls"], 1);
    assert_eq!(v["agents"][0]["errors"], 0);
}

#[test]
fn verbose_ends_with_a_usage_table_of_the_tree() {
    let home = Home::new();
    let server = three_levels(&home);
    let out = run(axe(&home, &server), &["run", "lead", "--verbose"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("agent "))
        .unwrap_or_else(|| panic!("no usage table: {err}"));
    let table = &lines[at..];
    assert_eq!(table.len(), 5, "header, three agents, total: {err}");
    let cells: Vec<Vec<&str>> = table
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        cells[0],
        [
            "agent", "calls", "turns", "input", "output", "time", "errors"
        ]
    );
    assert_eq!(cells[1][..5], ["lead", "1", "2", "802", "82"]);
    assert_eq!(cells[2][..5], ["mid", "1", "2", "602", "62"]);
    assert_eq!(cells[3][..5], ["leaf", "1", "1", "401", "41"]);
    assert_eq!(cells[4], ["total", "3", "5", "1805", "185", "0"]);
}

// ---------------------------------------------------------------------------
// Budgets.
// ---------------------------------------------------------------------------

#[test]
fn max_tokens_flag_stops_the_tree_with_exit_4_once_spent() {
    let home = Home::new();
    let server = three_levels(&home);
    // lead's response bills 401 + 41 tokens and mid's 301 + 31: 774 in
    // all, so leaf's request is refused, then mid's, then lead's own.
    let out = run(axe(&home, &server), &["run", "lead", "--max-tokens", "500"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "axe: token budget exceeded (used 774 of 500)\n"
    );
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(
        seen,
        ["lead", "mid"],
        "nothing sent once the budget is spent"
    );
}

#[test]
fn max_turns_flag_counts_requests_of_the_whole_tree() {
    let home = Home::new();
    let server = three_levels(&home);
    // lead 1, mid 1, leaf 1: the fourth request (mid's second) is refused;
    // mid fails, lead gets its error, and lead's own next request is refused.
    let out = run(axe(&home, &server), &["run", "lead", "--max-turns", "3"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(stderr(&out), "axe: turn budget exceeded (used 3 of 3)\n");
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(seen, ["lead", "mid", "leaf"]);
}

#[test]
fn agent_file_budget_bounds_the_run_and_the_flag_wins_over_it() {
    let home = Home::new();
    let server = three_levels(&home);
    let lead = "sub_agents = [\"mid\"]\n[budget]\nmax_turns = 1\n";
    agent(&home, "lead", lead);
    let out = run(axe(&home, &server), &["run", "lead"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(stderr(&out), "axe: turn budget exceeded (used 1 of 1)\n");
    let out = run(axe(&home, &server), &["run", "lead", "--max-turns", "5"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead got: mid got: answer from leaf\n");
}

#[test]
fn sub_agent_budget_fails_its_call_and_the_parent_finishes() {
    let home = Home::new();
    let server = three_levels(&home);
    // mid may spend 1 request on its subtree: leaf's request is refused, so
    // leaf's call fails, and then mid's own second request is refused.
    agent(
        &home,
        "mid",
        "sub_agents = [\"leaf\"]\n[budget]\nmax_turns = 1\n",
    );
    let out = run(axe(&home, &server), &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "lead got: Error: sub-agent \"mid\" failed - turn budget exceeded (used 1 of 1). \
         You may retry or proceed without this result.\n"
    );
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(seen, ["lead", "mid", "lead"]);
}

// ---------------------------------------------------------------------------
// Result limit and concurrency cap.
// ---------------------------------------------------------------------------

#[test]
fn long_sub_agent_result_is_cut_at_a_character_boundary_with_a_marker() {
    let home = Home::new();
    agent(
        &home,
        "lead",
        "sub_agents = [\"w\"]\n[sub_agents_config]\nmax_result_chars = 10\n",
    );
    agent(&home, "w", "");
    let long = "é".repeat(25) + "ü";
    let answer = long.clone();
    let server = FakeServer::route(move |req| match req.who().as_str() {
        "lead" if req.has_tool_results() => {
            let result = req.tool_result_texts().join("");
            Reply::Json(200, openai_text(&result, 1, 1))
        }
        "lead" => Reply::Json(
            200,
            openai_tool_calls(&[("c1", "call_agent", delegate("w", "go"))], 1, 1),
        ),
        _ => Reply::Json(200, openai_text(&answer, 1, 1)),
    });
    let out = run(axe(&home, &server), &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\n[truncated: 10 of 26 chars]\n", "é".repeat(10))
    );
}

#[test]
fn result_under_the_default_limit_is_passed_whole() {
    let home = Home::new();
    let server = three_levels(&home);
    let out = run(axe(&home, &server), &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("[truncated"), "{}", stdout(&out));
}

#[test]
fn max_parallel_2_never_has_more_than_2_calls_in_flight_and_keeps_call_order() {
    let home = Home::new();
    agent(
        &home,
        "lead",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nmax_parallel = 2\n",
    );
    for name in ["a", "b", "c"] {
        agent(&home, name, "");
    }
    // The first two sub-agent requests must be in flight together to pass
    // this gate (else they get a 500 after 10 s), which proves the calls
    // still run in parallel; the server's peak proves the cap.
    let gate = std::sync::Arc::new(Gate::new(2));
    let order = ["a", "b", "c", "a", "b", "c"];
    let server = FakeServer::route(move |req| {
        let name = req.who();
        if name != "lead" {
            if !gate.arrive(Duration::from_secs(10)) {
                return Reply::Json(500, "{}".into());
            }
            std::thread::sleep(Duration::from_millis(50));
            return Reply::Json(200, openai_text(&format!("answer from {name}"), 1, 1));
        }
        if req.has_tool_results() {
            let results = req.tool_result_texts().join(" | ");
            return Reply::Json(200, openai_text(&results, 1, 1));
        }
        let ids: Vec<String> = (0..order.len()).map(|i| format!("c{i}")).collect();
        let calls: Vec<Call> = order
            .iter()
            .zip(&ids)
            .map(|(n, id)| (id.as_str(), "call_agent", delegate(n, "go")))
            .collect();
        Reply::Json(200, openai_tool_calls(&calls, 1, 1))
    });
    let out = run(axe(&home, &server), &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "answer from a | answer from b | answer from c | answer from a | \
         answer from b | answer from c\n"
    );
    // The lead waits while its calls run, so the server's peak is theirs.
    assert_eq!(server.max_in_flight(), 2);
}
