//! What a server bills, counted the way its API defines it (design §4.6):
//! Anthropic's `input_tokens` leaves out the prompt-cache reads and writes,
//! which are billed input all the same, so axe counts all three in
//! `input_tokens`, the tree's totals and the budgets, and shows the cache
//! reads on their own (`cache_read_input_tokens`), as it does OpenAI's
//! `prompt_tokens_details.cached_tokens`, which `prompt_tokens` already
//! includes. Through the real binary.

use crate::common::*;

use serde_json::{Value, json};

/// An Anthropic answer with prompt caching at work.
fn anthropic_cached(text: &str, input: u64, created: u64, read: u64, output: u64) -> String {
    let mut v: Value = serde_json::from_str(&anthropic_text(text, input, output)).unwrap();
    v["usage"]["cache_creation_input_tokens"] = created.into();
    v["usage"]["cache_read_input_tokens"] = read.into();
    v.to_string()
}

#[test]
fn anthropic_input_tokens_count_cache_reads_and_writes_too() {
    let home = Home::new();
    home.named_agent("lead", P::Anthropic.model(), "sub_agents = [\"w\"]\n");
    home.named_agent("w", P::Anthropic.model(), "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" if req.has_tool_results() => {
            Reply::Json(200, anthropic_cached("lead done", 1, 0, 191, 9))
        }
        "lead" => {
            let mut v: Value = serde_json::from_str(&anthropic_tool_use(
                "",
                &[("c1", "call_agent", delegate("w", "go"))],
                3,
                20,
            ))
            .unwrap();
            v["usage"]["cache_creation_input_tokens"] = 150.into();
            v["usage"]["cache_read_input_tokens"] = json!(null);
            Reply::Json(200, v.to_string())
        }
        _ => Reply::Json(200, anthropic_cached("w done", 2, 10, 40, 5)),
    });
    let trace = home.dir.path().join("t.jsonl");
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &["run", "lead", "--json", "--trace", trace.to_str().unwrap()],
        HUNG,
    );
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    // lead: (3 + 150 + 0) + (1 + 0 + 191); w: 2 + 10 + 40.
    assert_eq!(out["input_tokens"], 345);
    assert_eq!(out["cache_read_input_tokens"], 191);
    assert_eq!(out["total_input_tokens"], 345 + 52);
    assert_eq!(out["total_cache_read_input_tokens"], 191 + 40);
    assert_eq!(out["agents"][1]["input_tokens"], 52);
    assert_eq!(out["agents"][1]["cache_read_input_tokens"], 40);
    let responses: Vec<Value> = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "response")
        .collect();
    let counted: Vec<(u64, u64)> = responses
        .iter()
        .map(|e| {
            (
                e["input_tokens"].as_u64().unwrap(),
                e["cache_read_input_tokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counted, [(153, 0), (52, 40), (192, 191)]);
}

#[test]
fn a_token_budget_counts_anthropic_cache_reads() {
    let home = Home::new();
    home.named_agent("lead", P::Anthropic.model(), "sub_agents = [\"w\"]\n");
    home.named_agent("w", P::Anthropic.model(), "");
    let server = FakeServer::route(|req| match req.who().as_str() {
        "lead" => {
            let mut v: Value = serde_json::from_str(&anthropic_tool_use(
                "",
                &[("c1", "call_agent", delegate("w", "go"))],
                1,
                1,
            ))
            .unwrap();
            v["usage"]["cache_read_input_tokens"] = 5000.into();
            Reply::Json(200, v.to_string())
        }
        _ => Reply::Json(200, anthropic_text("w done", 1, 1)),
    });
    let b = home.run_bounded(
        &[(P::Anthropic, &server)],
        &["run", "lead", "--max-tokens", "1000"],
        HUNG,
    );
    assert_eq!(code(&b.output), 4, "{}", stderr(&b.output));
    assert_eq!(
        stderr(&b.output),
        "axe: token budget exceeded (used 5002 of 1000)\n"
    );
}

#[test]
fn openai_cached_prompt_tokens_are_shown_and_not_counted_twice() {
    let home = Home::new();
    home.named_agent("solo", P::OpenAi.model(), "");
    let mut v: Value = serde_json::from_str(&openai_text("fine", 300, 7)).unwrap();
    v["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 256});
    let server = FakeServer::json(200, &v.to_string());
    let b = home.run_bounded(&[(P::OpenAi, &server)], &["run", "solo", "--json"], HUNG);
    assert_eq!(code(&b.output), 0, "{}", stderr(&b.output));
    let out: Value = serde_json::from_str(&stdout(&b.output)).unwrap();
    assert_eq!(out["input_tokens"], 300);
    assert_eq!(out["cache_read_input_tokens"], 256);
}
