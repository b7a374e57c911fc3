//! What a whole tree used and what bounds it, through the real binary: the
//! tree's usage in `--json` and `--verbose` (design §7.3), token and turn
//! budgets with exit 4 (§7.5), the result limit (§3.6) and the concurrency
//! cap (§3.10). The server is [`crate::tree_fake`]'s, so the tests can add
//! up what it billed.

use crate::common::*;
use crate::tree_fake::{billed, plan, three_levels, tree_server};

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

// ---------------------------------------------------------------------------
// Usage of the whole tree.
// ---------------------------------------------------------------------------

#[test]
fn json_totals_equal_what_the_server_billed_and_list_every_agent() {
    let home = Home::new();
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"mid\", \"w\"]\n");
    home.named_agent("mid", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
    let server = tree_server(
        plan(&[("lead", &["mid", "w"]), ("mid", &["w", "w"])]),
        Duration::ZERO,
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
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
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"w\"]\n");
    home.named_agent("w", "openai/gpt-4o", "");
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
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
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
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--verbose"]);
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
            "agent",
            "calls",
            "turns",
            "input",
            "output",
            "cache_read",
            "cache_write",
            "cost",
            "time",
            "errors"
        ]
    );
    assert_eq!(cells[1][..5], ["lead", "1", "2", "802", "82"]);
    assert_eq!(cells[2][..5], ["mid", "1", "2", "602", "62"]);
    assert_eq!(cells[3][..5], ["leaf", "1", "1", "401", "41"]);
    // gpt-4o at $2.50 in and $10 out per million: 1805 × 2.5 + 185 × 10.
    assert_eq!(
        cells[4],
        ["total", "3", "5", "1805", "185", "0", "0", "$0.006363", "0"]
    );
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
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--max-tokens", "500"],
    );
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
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--max-turns", "3"],
    );
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
    home.named_agent("lead", "openai/gpt-4o", lead);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(stderr(&out), "axe: turn budget exceeded (used 1 of 1)\n");
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--max-turns", "5"],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out), "lead got: mid got: answer from leaf\n");
}

#[test]
fn sub_agent_budget_fails_its_call_and_the_parent_finishes() {
    let home = Home::new();
    let server = three_levels(&home);
    // mid may spend 1 request on its subtree: leaf's request is refused, so
    // leaf's call fails, and then mid's own second request is refused.
    home.named_agent(
        "mid",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[budget]\nmax_turns = 1\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
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
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"w\"]\n[sub_agents_config]\nmax_result_chars = 10\n",
    );
    home.named_agent("w", "openai/gpt-4o", "");
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
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
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
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stdout(&out).contains("[truncated"), "{}", stdout(&out));
}

#[test]
fn max_parallel_2_never_has_more_than_2_calls_in_flight_and_keeps_call_order() {
    let home = Home::new();
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"a\", \"b\", \"c\"]\n[sub_agents_config]\nmax_parallel = 2\n",
    );
    for name in ["a", "b", "c"] {
        home.named_agent(name, "openai/gpt-4o", "");
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
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "answer from a | answer from b | answer from c | answer from a | \
         answer from b | answer from c\n"
    );
    // The lead waits while its calls run, so the server's peak is theirs.
    assert_eq!(server.max_in_flight(), 2);
}
