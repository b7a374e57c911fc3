//! One fake OpenAI server that plays a whole tree of agents, for the trace
//! and budget tests: agents are told apart by their system prompt (`You are
//! <name>.`), each has a plan (the `call_agent` calls of its first
//! response, or none), and each bills a known number of tokens per
//! response, so that a test can add up what the server billed.

use crate::common::*;

use std::collections::BTreeMap;
use std::time::Duration;

/// The tokens the fake server bills for one response to `name`.
pub fn billed(name: &str) -> (u64, u64) {
    let n = name.len() as u64;
    (100 * n + 1, 10 * n + 1)
}

/// What each agent does in its first response: the agents it calls (as
/// `call_agent` calls, ids `<name>_<i>`); an agent without a plan answers.
pub type Plan = BTreeMap<String, Vec<&'static str>>;

/// A server playing every agent by `plan`: a first response with the
/// planned calls, then (with the tool results in) `<name> got: <results>`;
/// an agent with no calls answers `answer from <name>` after `delay`.
pub fn tree_server(plan: Plan, delay: Duration) -> FakeServer {
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

/// A [`Plan`] from `(agent, the agents it calls)` pairs.
pub fn plan(entries: &[(&str, &[&'static str])]) -> Plan {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_vec()))
        .collect()
}

/// `lead` → `mid` → `leaf`, three levels.
pub fn three_levels(home: &Home) -> FakeServer {
    home.named_agent("lead", "openai/gpt-4o", "sub_agents = [\"mid\"]\n");
    home.named_agent("mid", "openai/gpt-4o", "sub_agents = [\"leaf\"]\n");
    home.named_agent("leaf", "openai/gpt-4o", "");
    tree_server(
        plan(&[("lead", &["mid"]), ("mid", &["leaf"])]),
        Duration::ZERO,
    )
}
