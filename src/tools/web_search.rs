//! `web_search`: the Go original's search tool, through Tavily's search API
//! (`POST /search`), so that its agent files carry over. The key is
//! `TAVILY_API_KEY` (registered as a secret, never sent to the model or
//! printed); `AXE_TAVILY_BASE_URL` (or the Go original's
//! `AXE_WEB_SEARCH_BASE_URL`) points it elsewhere. The URL is the
//! user's, not the model's: only the query comes from the call. The answer
//! is bounded in size and time like `url_fetch`'s.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Args, Done, Env, required, tool};
use crate::provider::Tool;

/// The most bytes of Tavily's answer read.
const MAX_BODY: u64 = 1024 * 1024;

/// The longest one search may take (the run's deadline may be sooner).
const MAX_TIME: Duration = Duration::from_secs(30);

/// Results asked for.
const MAX_RESULTS: u64 = 10;

pub fn define() -> Tool {
    tool(
        "web_search",
        "Search the web and return the results' titles, URLs and snippets.",
        &[("query", "string", true, "What to search for.")],
    )
}

/// Tavily's search URL: `AXE_TAVILY_BASE_URL`, else the Go original's
/// `AXE_WEB_SEARCH_BASE_URL`, else Tavily's own, with `/search` after it
/// (unless it already ends so: the Go original's variable is documented as
/// the search endpoint).
fn search_url(var: &dyn Fn(&str) -> Option<String>) -> String {
    let base = ["AXE_TAVILY_BASE_URL", "AXE_WEB_SEARCH_BASE_URL"]
        .iter()
        .filter_map(|name| var(name))
        .map(|u| u.trim().trim_end_matches('/').to_string())
        .find(|u| !u.is_empty())
        .unwrap_or_else(|| "https://api.tavily.com".into());
    if base.ends_with("/search") {
        base
    } else {
        format!("{base}/search")
    }
}

pub fn run(args: &Args, env: &Env) -> Done {
    match search(args, env) {
        Ok(done) | Err(done) => done,
    }
}

fn search(args: &Args, env: &Env) -> Result<Done, Done> {
    let query = required(args, "query")?.trim();
    let key = std::env::var("TAVILY_API_KEY")
        .ok()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| Done::error("TAVILY_API_KEY is not set: web_search needs a Tavily key"))?;
    crate::text::redact::register(&key);
    let url = search_url(&|name| std::env::var(name).ok());
    let left = env
        .deadline
        .saturating_duration_since(Instant::now())
        .min(MAX_TIME);
    if left.is_zero() {
        return Err(Done::error("the deadline has passed"));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(left))
        .user_agent(concat!("axe/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let body = json!({
        "query": query,
        "max_results": MAX_RESULTS,
        "search_depth": "basic",
        "include_images": false,
    });
    let mut resp = agent
        .post(&url)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .send(body.to_string().as_bytes())
        .map_err(|e| Done::error(crate::text::redact::redact(&format!("web_search: {e}"))))?;
    let status = resp.status().as_u16();
    let text = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_string()
        .map_err(|e| Done::error(format!("web_search: the answer could not be read: {e}")))?;
    if !(200..300).contains(&status) {
        let head: String = text.chars().take(500).collect();
        return Err(Done::error(crate::text::redact::redact(&format!(
            "Tavily API error (HTTP {status}): {head}"
        ))));
    }
    let bytes = u64::try_from(text.len()).unwrap_or(u64::MAX);
    let parsed: Value = serde_json::from_str(&text)
        .map_err(|e| Done::error(format!("web_search: Tavily's answer is not JSON: {e}")))?;
    Ok(Done::ok(results(&parsed), bytes))
}

/// The results as text: title, URL and snippet each, a blank line between.
fn results(answer: &Value) -> String {
    let field = |r: &Value, k: &str| r[k].as_str().unwrap_or("").trim().to_string();
    let list: Vec<String> = answer["results"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    format!(
                        "Title: {}\nURL: {}\nSnippet: {}",
                        field(r, "title"),
                        field(r, "url"),
                        field(r, "content")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if list.is_empty() {
        "No results found.".to_string()
    } else {
        list.join("\n\n")
    }
}
