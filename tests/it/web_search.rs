//! `web_search`, the Go original's search tool (design §8.1), through the
//! binary against a fake of Tavily's search API: what is sent (the query,
//! the key as a bearer token, never to the model), the results as text, no
//! results, a missing key and an API error as error results.

use crate::common::*;
use serde_json::json;

/// Runs an agent with `web_search` whose model searches for `query`;
/// returns the output and the tool result the model got.
fn search(
    query: &str,
    tavily: Option<&FakeServer>,
    key: Option<&str>,
) -> (std::process::Output, String) {
    let home = Home::new();
    home.named_agent("finder", P::OpenAi.model(), "tools = [\"web_search\"]\n");
    let first = P::OpenAi.tool_calls(&[("c1", "web_search", json!({"query": query}))]);
    let done = P::OpenAi.text("done");
    let model = FakeServer::tool_loop(first, done);
    let mut cmd = home.axe_on(&[(P::OpenAi, &model)]);
    cmd.args(["run", "finder", "-p", "go"]);
    if let Some(t) = tavily {
        cmd.env("AXE_TAVILY_BASE_URL", &t.url);
    }
    if let Some(k) = key {
        cmd.env("TAVILY_API_KEY", k);
    }
    let out = cmd.output().unwrap();
    let result = model
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts().join("\n"))
        .unwrap_or_default();
    (out, result)
}

const KEY: &str = "tvly-test-key-0123456789abcdef";

#[test]
fn web_search_sends_the_query_to_tavily_and_returns_the_results_as_text() {
    let tavily = FakeServer::json(
        200,
        &json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language empowering everyone.", "score": 0.9},
            {"title": "The Book", "url": "https://doc.rust-lang.org/book/", "content": "Learn Rust.", "score": 0.8}
        ]})
        .to_string(),
    );
    let (out, result) = search("rust language", Some(&tavily), Some(KEY));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        result,
        "Title: Rust\nURL: https://www.rust-lang.org/\nSnippet: A language empowering everyone.\n\n\
         Title: The Book\nURL: https://doc.rust-lang.org/book/\nSnippet: Learn Rust."
    );
    let req = &tavily.requests()[0];
    assert_eq!(req.path, "/search");
    assert_eq!(req.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(req.json()["query"], "rust language");
    assert_eq!(req.json()["max_results"], 10);
    assert!(!stderr(&out).contains(KEY) && !stdout(&out).contains(KEY));
}

#[test]
fn no_results_is_said_and_is_not_an_error() {
    let tavily = FakeServer::json(200, r#"{"query":"x","results":[]}"#);
    let (out, result) = search("zzzz", Some(&tavily), Some(KEY));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(result, "No results found.");
}

#[test]
fn a_missing_key_or_an_api_error_is_an_error_result_and_the_run_goes_on() {
    let (out, result) = search("rust", None, None);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        result,
        "TAVILY_API_KEY is not set: web_search needs a Tavily key"
    );
    let tavily = FakeServer::json(
        401,
        r#"{"detail":{"error":"Unauthorized: missing or invalid API key."}}"#,
    );
    let (out, result) = search("rust", Some(&tavily), Some(KEY));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        result.starts_with("Tavily API error (HTTP 401): {\"detail\""),
        "{result}"
    );
}

#[test]
fn the_go_originals_base_url_variable_points_it_elsewhere_too() {
    // As a base (`/search` added) and as the search endpoint itself, which
    // is how the Go original documents it.
    for suffix in ["", "/search"] {
        let tavily = FakeServer::json(200, r#"{"query":"x","results":[]}"#);
        let home = Home::new();
        home.named_agent("finder", P::OpenAi.model(), "tools = [\"web_search\"]\n");
        let first = P::OpenAi.tool_calls(&[("c1", "web_search", json!({"query": "x"}))]);
        let model = FakeServer::tool_loop(first, P::OpenAi.text("done"));
        let out = home
            .axe_on(&[(P::OpenAi, &model)])
            .args(["run", "finder", "-p", "go"])
            .env("AXE_WEB_SEARCH_BASE_URL", format!("{}{suffix}", tavily.url))
            .env("TAVILY_API_KEY", KEY)
            .output()
            .unwrap();
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let req = &tavily.requests()[0];
        assert_eq!(req.path, "/search", "{suffix:?}");
        assert_eq!(req.json()["query"], "x");
    }
}
