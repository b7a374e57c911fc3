//! A fake of Anthropic's prompt cache: what a request's usage would say
//! given the `cache_control` marks it carries, so that a test or the bench
//! measures where axe puts its marks rather than a script's numbers.
//!
//! The request is rendered as the API renders it, tools, then system, then
//! messages, one block at a time (a string content is one block); a block
//! costs one token per 4 bytes of its JSON. A mark makes the prefix up to
//! and including its block a cache entry once it is at least
//! [`MIN_CACHEABLE`] tokens long; a later request reads the longest entry
//! it finds at one of its own marks or up to [`LOOKBACK`] blocks before it,
//! and writes everything from there to its last mark. What is left is the
//! uncached `input_tokens`. Beside that, the most any placement could have
//! read: the longest prefix this request shares with any earlier one.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;

use serde_json::Value;

/// The shortest prefix the fake caches (the API's minimum for its Sonnet
/// models).
pub const MIN_CACHEABLE: u64 = 1024;
/// How many blocks before a mark the API looks for an earlier entry.
pub const LOOKBACK: usize = 20;

/// One request's usage as the fake cache bills it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Neither read nor written (the API's `input_tokens`).
    pub uncached: u64,
    pub written: u64,
    pub read: u64,
    /// The most any marks could have read: the longest prefix shared with
    /// an earlier request, when long enough to cache.
    pub readable: u64,
    /// The `cache_control` marks the request carried.
    pub marks: usize,
}

impl CacheUsage {
    /// Every input token of the request.
    pub fn total(&self) -> u64 {
        self.uncached + self.written + self.read
    }
}

/// The cache, shared by every request one fake server receives.
#[derive(Default)]
pub struct PromptCache {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The prefixes written, by their hash.
    entries: HashSet<u64>,
    /// Every prefix any request has had, marked or not.
    seen: HashSet<u64>,
}

impl PromptCache {
    pub fn new() -> PromptCache {
        PromptCache::default()
    }

    /// What the request `body` (an Anthropic Messages body) is billed.
    pub fn usage(&self, body: &Value) -> CacheUsage {
        let blocks = render(body);
        let mut hasher = DefaultHasher::new();
        let mut keys = Vec::with_capacity(blocks.len());
        let mut tokens = Vec::with_capacity(blocks.len());
        let mut sum = 0;
        for (text, _) in &blocks {
            text.hash(&mut hasher);
            keys.push(hasher.finish());
            sum += (text.len() as u64).div_ceil(4);
            tokens.push(sum);
        }
        let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
        let mut state = self.state.lock().unwrap();
        let read_at = marks
            .iter()
            .filter_map(|&m| {
                (m.saturating_sub(LOOKBACK - 1)..=m)
                    .rev()
                    .find(|&j| state.entries.contains(&keys[j]))
            })
            .max();
        let read = read_at.map_or(0, |j| tokens[j]);
        let mut written = 0;
        if let Some(&last) = marks.last()
            && tokens[last] >= MIN_CACHEABLE
        {
            written = tokens[last].saturating_sub(read);
        }
        for &m in &marks {
            if tokens[m] >= MIN_CACHEABLE {
                state.entries.insert(keys[m]);
            }
        }
        let shared = (0..keys.len())
            .rev()
            .find(|&j| state.seen.contains(&keys[j]));
        let readable = shared
            .map(|j| tokens[j])
            .filter(|&t| t >= MIN_CACHEABLE)
            .unwrap_or(0);
        state.seen.extend(keys.iter().copied());
        CacheUsage {
            uncached: sum - read - written,
            written,
            read,
            readable,
            marks: marks.len(),
        }
    }
}

/// The request's blocks in the order the API renders them, each as the
/// JSON text that identifies it (its role with it, its mark left out) and
/// whether it is marked.
fn render(body: &Value) -> Vec<(String, bool)> {
    let mut blocks = Vec::new();
    let mut push = |role: &str, block: &Value| {
        let mut b = block.clone();
        let marked = b
            .as_object_mut()
            .and_then(|o| o.remove("cache_control"))
            .is_some();
        blocks.push((format!("{role}:{b}"), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool", tool);
    }
    match &body["system"] {
        Value::Array(parts) => parts.iter().for_each(|b| push("system", b)),
        Value::Null => {}
        text => push("system", text),
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("");
        match &m["content"] {
            Value::Array(parts) => parts.iter().for_each(|b| push(role, b)),
            text => push(role, text),
        }
    }
    blocks
}

/// An Anthropic response body `reply` with its `usage` input replaced by
/// what the cache billed.
pub fn with_cache_usage(reply: &str, u: &CacheUsage) -> String {
    let mut v: Value = serde_json::from_str(reply).unwrap();
    v["usage"]["input_tokens"] = u.uncached.into();
    v["usage"]["cache_creation_input_tokens"] = u.written.into();
    v["usage"]["cache_read_input_tokens"] = u.read.into();
    v.to_string()
}

/// A fake Anthropic server playing a tool loop of `turns` requests, billed
/// by a [`PromptCache`]: until the last turn the model calls `read_file` on
/// `path` `calls` times at once (ids `c<turn>_<i>`), then it answers
/// `done`. Returns the server and each request's usage, in arrival order.
pub fn cached_tool_loop(
    turns: usize,
    calls: usize,
    path: &'static str,
) -> (
    super::server::FakeServer,
    std::sync::Arc<Mutex<Vec<CacheUsage>>>,
) {
    use super::server::{FakeServer, Reply};
    use super::wire::{anthropic_text, anthropic_tool_use};
    let cache = PromptCache::new();
    let usages = std::sync::Arc::new(Mutex::new(Vec::new()));
    let seen = usages.clone();
    let server = FakeServer::route(move |req| {
        let body = req.json();
        let turn = 1 + body["messages"]
            .as_array()
            .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
        let reply = if turn < turns {
            let ids: Vec<String> = (1..=calls).map(|i| format!("c{turn}_{i}")).collect();
            let made: Vec<_> = ids
                .iter()
                .map(|id| (id.as_str(), "read_file", serde_json::json!({"path": path})))
                .collect();
            anthropic_tool_use("", &made, 0, 7)
        } else {
            anthropic_text("done", 0, 3)
        };
        let usage = cache.usage(&body);
        seen.lock().unwrap().push(usage);
        Reply::Json(200, with_cache_usage(&reply, &usage))
    });
    (server, usages)
}
