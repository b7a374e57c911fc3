//! What a run costs, through the real binary (design §7.8): prices from
//! the built-in table and from config.toml, cost in `--json`, `--verbose`,
//! the trace and the run log, `axe runs`, and the money budget
//! (`--max-cost`, `[budget] max_cost`) stopping a tree, a sub-agent and a
//! batch. The server is [`crate::tree_fake`]'s, which bills each agent a
//! known number of tokens (lead 401 + 41, mid 301 + 31, leaf 401 + 41).

use crate::common::*;
use crate::tree_fake::three_levels;

use serde_json::Value;

/// USD per token 0.001 both ways: lead's response costs $0.442.
const DEAR: &str = "[prices.\"openai/gpt-4o\"]\ninput = 1000\noutput = 1000\n";

fn json_of(out: &std::process::Output) -> Value {
    assert_eq!(code(out), 0, "{}", stderr(out));
    serde_json::from_str(&stdout(out)).unwrap()
}

fn close(v: &Value, usd: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - usd).abs() < 1e-12)
}

#[test]
fn json_has_the_agents_own_cost_the_trees_and_each_agents_from_the_built_in_table() {
    let home = Home::new();
    let server = three_levels(&home);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]);
    let v = json_of(&out);
    // gpt-4o: $2.50 in, $10 out per million (genai-prices). lead sent two
    // requests, each billed 401 + 41.
    let at = |i: u64, o: u64| (i as f64 * 2.5 + o as f64 * 10.0) / 1e6;
    assert!(close(&v["cost_usd"], 2.0 * at(401, 41)), "{v}");
    let total = 2.0 * at(401, 41) + 2.0 * at(301, 31) + at(401, 41);
    assert!(close(&v["total_cost_usd"], total), "{v}");
    assert!(close(&v["agents"][1]["cost_usd"], 2.0 * at(301, 31)), "{v}");
    assert!(close(&v["agents"][2]["cost_usd"], at(401, 41)), "{v}");
}

#[test]
fn a_config_price_overrides_the_tables_and_adds_a_model() {
    let home = Home::new();
    home.config(&format!(
        "{DEAR}[prices.\"openai/house-model\"]\ninput = 2\noutput = 4\ncache_read = 1\n"
    ));
    let server = three_levels(&home);
    let v = json_of(&home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--json"]));
    assert!(close(&v["cost_usd"], 2.0 * 0.442), "{v}");
    home.plain_agent("house", "openai/house-model");
    let fake = FakeServer::json(200, &openai_text("hi", 1000, 500));
    let v = json_of(&home.run_on(&[(P::OpenAi, &fake)], &["run", "house", "--json"]));
    assert!(close(&v["cost_usd"], 0.004), "{v}");
}

#[test]
fn a_model_with_no_price_has_a_null_cost_said_once_with_verbose() {
    let home = Home::new();
    home.named_agent("lead", "openai/no-such-model", "sub_agents = [\"mid\"]\n");
    home.named_agent("mid", "openai/no-such-model", "sub_agents = [\"leaf\"]\n");
    home.named_agent("leaf", "openai/gpt-4o", "");
    let server = crate::tree_fake::tree_server(
        crate::tree_fake::plan(&[("lead", &["mid"]), ("mid", &["leaf"])]),
        std::time::Duration::ZERO,
    );
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--json", "--verbose"],
    );
    let v = json_of(&out);
    assert_eq!(v["cost_usd"], Value::Null, "{v}");
    assert_eq!(
        v["total_cost_usd"],
        Value::Null,
        "never a part for the whole: {v}"
    );
    assert!(v["agents"][2]["cost_usd"].as_f64().unwrap() > 0.0, "{v}");
    let err = stderr(&out);
    let said = err
        .matches("No price is known for openai/no-such-model")
        .count();
    assert_eq!(said, 1, "{err}");
    assert!(
        !err.contains("No price is known for openai/gpt-4o"),
        "{err}"
    );
}

#[test]
fn verbose_shows_the_cost_and_a_cost_column_in_the_trees_table() {
    let home = Home::new();
    home.config(DEAR);
    let server = three_levels(&home);
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--verbose"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("Cost:     $0.884000 (tree $1.990000)"),
        "{err}"
    );
    let header = err.lines().find(|l| l.starts_with("agent ")).unwrap();
    assert!(header.split_whitespace().any(|c| c == "cost"), "{header}");
    let total = err.lines().find(|l| l.starts_with("total ")).unwrap();
    assert!(total.contains("$1.990000"), "{total}");
}

#[test]
fn the_trace_has_a_cost_on_each_response_and_run_end() {
    let home = Home::new();
    home.config(DEAR);
    let server = three_levels(&home);
    let trace = home.dir.path().join("t.jsonl");
    let t = trace.to_str().unwrap();
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--trace", t]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let events = trace_events(&trace);
    let responses: Vec<&Value> = events.iter().filter(|e| e["event"] == "response").collect();
    assert_eq!(responses.len(), 5);
    for r in responses {
        let tokens = r["input_tokens"].as_u64().unwrap() + r["output_tokens"].as_u64().unwrap();
        assert!(close(&r["cost_usd"], tokens as f64 / 1000.0), "{r}");
    }
    let end = events
        .iter()
        .find(|e| e["event"] == "run_end" && e["depth"] == 0)
        .unwrap();
    assert!(close(&end["cost_usd"], 0.884), "{end}");
    assert!(close(&end["total_cost_usd"], 1.99), "{end}");
}

#[test]
fn the_run_log_and_axe_runs_have_the_cost_and_total_sums_it_by_agent() {
    let home = Home::new();
    home.config(DEAR);
    let server = three_levels(&home);
    for _ in 0..2 {
        let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    home.plain_agent("free", "openai/no-such-model");
    let fake = FakeServer::json(200, &openai_text("hi", 10, 5));
    let out = home.run_on(&[(P::OpenAi, &fake)], &["run", "free"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let log = home.run_log();
    assert!(close(&log[0]["cost_usd"], 1.99), "{:?}", log[0]);
    assert_eq!(log[2]["cost_usd"], Value::Null);
    let out = home.run(&["runs"]);
    let text = stdout(&out);
    assert!(text.lines().next().unwrap().contains(" COST "), "{text}");
    assert!(text.contains("$1.990000"), "{text}");
    let out = home.run(&["runs", "--since", "1h", "--total"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rows: Vec<Vec<String>> = stdout(&out)
        .lines()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    assert_eq!(
        rows[0],
        ["AGENT", "RUNS", "INPUT", "OUTPUT", "COST", "UNPRICED"]
    );
    assert_eq!(rows[1], ["free", "1", "10", "5", "$0.000000", "1"]);
    assert_eq!(rows[2], ["lead", "2", "3610", "370", "$3.980000", "0"]);
    assert_eq!(rows[3], ["total", "3", "3620", "375", "$3.980000", "1"]);
    let out = home.run(&["runs", "--since", "1h", "--total", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(close(&v[1]["cost_usd"], 3.98), "{v}");
    // Nothing started in the future's last second... of a minute ago.
    let out = home.run(&["runs", "--since", "0s", "--total"]);
    assert_eq!(stdout(&out).lines().count(), 2, "header and total only");
    let out = home.run(&["runs", "--since", "soon"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn max_cost_stops_the_tree_with_exit_4_once_spent() {
    let home = Home::new();
    home.config(DEAR);
    let server = three_levels(&home);
    // lead's response costs $0.442: mid's request is refused, then lead's.
    let out = home.run_on(
        &[(P::OpenAi, &server)],
        &["run", "lead", "--max-cost", "0.40"],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "axe: cost budget exceeded (spent $0.4420 of $0.40)\n"
    );
    let seen: Vec<String> = server.requests().iter().map(Recorded::who).collect();
    assert_eq!(seen, ["lead"], "nothing sent once the budget is spent");
    // The agent file's [budget] max_cost bounds it too; the flag wins.
    home.named_agent(
        "lead",
        "openai/gpt-4o",
        "sub_agents = [\"mid\"]\n[budget]\nmax_cost = 0.5\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(spent $0.7740 of $0.50)"),
        "{}",
        stderr(&out)
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead", "--max-cost", "5"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn a_sub_agents_cost_budget_fails_its_call_and_the_parent_finishes() {
    let home = Home::new();
    home.config(DEAR);
    let server = three_levels(&home);
    // mid's own response ($0.332) spends its subtree's $0.30.
    home.named_agent(
        "mid",
        "openai/gpt-4o",
        "sub_agents = [\"leaf\"]\n[budget]\nmax_cost = 0.30\n",
    );
    let out = home.run_on(&[(P::OpenAi, &server)], &["run", "lead"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "lead got: Error: sub-agent \"mid\" failed - cost budget exceeded (spent $0.3320 of $0.30). \
         You may retry or proceed without this result.\n"
    );
}

#[test]
fn a_cost_budget_on_a_model_with_no_price_is_refused_before_any_request() {
    let home = Home::new();
    home.plain_agent("free", "openai/no-such-model");
    let fake = FakeServer::json(200, &openai_text("hi", 10, 5));
    let out = home.run_on(&[(P::OpenAi, &fake)], &["run", "free", "--max-cost", "1"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "no price is known for openai/no-such-model, so the cost budget cannot be kept"
        ),
        "{}",
        stderr(&out)
    );
    assert!(fake.requests().is_empty());
    for bad in ["0", "-1", "nan"] {
        let out = home.run_on(&[(P::OpenAi, &fake)], &["run", "free", "--max-cost", bad]);
        assert_eq!(code(&out), 2, "{bad}: {}", stderr(&out));
    }
    home.config("[prices.\"openai/x\"]\ninput = -1\noutput = 1\n");
    let out = home.run_on(&[(P::OpenAi, &fake)], &["run", "free"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("prices.\"openai/x\".input"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn max_cost_bounds_a_whole_batch_and_its_lines_and_summary_say_the_cost() {
    let home = Home::new();
    home.config("[prices.\"openai/m\"]\ninput = 1000\noutput = 1000\n");
    home.plain_agent("one", "openai/m");
    // $0.15 an input: the third passes $0.40 and the rest are refused.
    let fake = FakeServer::json(200, &openai_text("ok", 100, 50));
    let inputs = home.dir.path().join("in.txt");
    std::fs::write(&inputs, "a\nb\nc\nd\ne\n").unwrap();
    let each = inputs.to_str().unwrap();
    let out = home.run_on(
        &[(P::OpenAi, &fake)],
        &[
            "run",
            "one",
            "--each",
            each,
            "--jobs",
            "1",
            "--max-cost",
            "0.40",
        ],
    );
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5);
    for l in &lines[..3] {
        assert!(close(&l["cost_usd"], 0.15), "{l}");
    }
    for l in &lines[3..] {
        assert_eq!(l["exit"], 4, "{l}");
        assert!(
            l["error"]
                .as_str()
                .unwrap()
                .contains("cost budget exceeded"),
            "{l}"
        );
    }
    assert_eq!(fake.requests().len(), 3);
    let log = home.run_log();
    let last = log.last().unwrap();
    assert!(close(&last["cost_usd"], 0.45), "{last}");
    assert!(
        last["answer"].as_str().unwrap().ends_with("cost $0.450000"),
        "{last}"
    );
}

/// `body` with `usage.cost` set to `usd`, as OpenRouter answers.
fn costing(body: &str, usd: f64) -> String {
    let mut v: Value = serde_json::from_str(body).unwrap();
    v["usage"]["cost"] = usd.into();
    v.to_string()
}

#[test]
fn openrouters_own_cost_in_each_response_is_the_cost_and_keeps_a_money_budget() {
    let home = Home::new();
    let model = "openrouter/meta-llama/llama-3.3-70b-instruct";
    home.named_agent("lead", model, "sub_agents = [\"leaf\"]\n");
    home.named_agent("leaf", model, "");
    let server = FakeServer::route(|r| match (r.who().as_str(), r.has_tool_results()) {
        ("lead", false) => {
            let call = [("c1", "call_agent", delegate("leaf", "go"))];
            Reply::Json(200, costing(&openai_tool_calls(&call, 10, 5), 0.0125))
        }
        ("lead", true) => Reply::Json(200, costing(&openai_text("done", 20, 5), 0.0025)),
        _ => Reply::Json(200, costing(&openai_text("leaf says hi", 8, 4), 0.001)),
    });
    let run = |args: &[&str]| {
        home.axe()
            .env("AXE_OPENROUTER_BASE_URL", &server.url)
            .env("OPENROUTER_API_KEY", "sk-or-test-0123456789abcdef")
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["run", "lead", "--json"]);
    let v = json_of(&out);
    assert!(close(&v["cost_usd"], 0.015), "{v}");
    assert!(close(&v["total_cost_usd"], 0.016), "{v}");
    // A money budget is kept with no price table: the lead's first
    // response spends $0.0125 of $0.01, and nothing more is sent.
    let before = server.requests().len();
    let out = run(&["run", "lead", "--max-cost", "0.01"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "axe: cost budget exceeded (spent $0.0125 of $0.01)\n"
    );
    assert_eq!(server.requests().len(), before + 1);
}
