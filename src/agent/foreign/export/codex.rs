//! An agent as Codex's custom agent file: `name`, `description`, `model`,
//! `model_reasoning_effort` (`[params] reasoning_effort`), `sandbox_mode`
//! (from the tools) and `developer_instructions` (the
//! system prompt), `[mcp_servers.NAME]` for its MCP servers; the inverse
//! of `foreign::codex`'s import.

use toml::{Table, Value};

use super::{Writer, bare, document, strings};
use crate::agent::foreign::codex::{READING, WRITING};

/// The keys of the file in their order; its MCP servers follow.
const ORDER: [&str; 6] = [
    "name",
    "description",
    "model",
    "model_reasoning_effort",
    "sandbox_mode",
    "developer_instructions",
];

/// The file for the agent of axe's keys `t`.
pub(super) fn write(w: &mut Writer, t: &Table) -> String {
    let mut out = Table::new();
    let text = |k: &str| Value::from(t.get(k).and_then(Value::as_str).unwrap_or_default());
    out.insert("name".into(), text("name"));
    out.insert("description".into(), text("description"));
    if let Some(m) = t.get("model").and_then(Value::as_str) {
        out.insert("model".into(), Value::from(model(w, m)));
    }
    out.insert(
        "sandbox_mode".into(),
        sandbox_mode(w, &strings(t.get("tools"))).into(),
    );
    // Required by Codex, as `name` and `description` are: written empty
    // when the agent has no prompt.
    let prompt = t
        .get("system_prompt")
        .and_then(Value::as_str)
        .unwrap_or_default();
    out.insert("developer_instructions".into(), Value::from(prompt.trim()));
    let servers = mcp_servers(w, t);
    for (key, value) in t {
        match key.as_str() {
            "name" | "description" | "model" | "system_prompt" | "tools" | "mcp_servers"
            | "mcp_tools" => {}
            "agents_md" => w.agents_md(value),
            "sub_agents" => w.drop(key, "Codex's agent files have no sub-agents"),
            "budget" => w.drop(key, "Codex's agent files have no budget"),
            "params" => params(w, &mut out, value),
            other => w.drop_axes(other),
        }
    }
    let mut text = document(&out, &ORDER);
    for (name, server) in servers {
        text.push_str(&format!("\n[mcp_servers.{}]\n", bare(&name)));
        for key in SERVER_ORDER.iter().filter(|k| server.contains_key(**k)) {
            // A table (`env`) inline: the section is the server's.
            text.push_str(&format!("{key} = {}\n", server[*key]));
        }
    }
    text
}

/// `[params]`: its `reasoning_effort` is Codex's `model_reasoning_effort`;
/// every other key is dropped, each said.
fn params(w: &mut Writer, out: &mut Table, value: &Value) {
    for (key, v) in value.as_table().into_iter().flatten() {
        match key.as_str() {
            "reasoning_effort" => {
                out.insert("model_reasoning_effort".into(), v.clone());
            }
            _ => w.drop(
                &format!("params.{key}"),
                "Codex's agent files have no sampling parameters",
            ),
        }
    }
}

/// The keys of a `[mcp_servers.NAME]` table, in the order written.
const SERVER_ORDER: [&str; 8] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "http_headers",
    "tool_timeout_sec",
    "enabled_tools",
];

/// The model as Codex names it: OpenAI's bare, another provider's whole
/// (axe reads it back; Codex would need that provider), and said.
fn model(w: &mut Writer, model: &str) -> String {
    let model = model.trim();
    match model.strip_prefix("openai/") {
        Some(id) if !id.contains('/') => id.to_string(),
        _ => {
            w.lines.push(format!(
                "kept: model {model} (not a bare OpenAI model: axe reads it back as it is)"
            ));
            model.to_string()
        }
    }
}

/// The `sandbox_mode` whose tools hold `tools`: `workspace-write` when it
/// writes or runs commands, else `read-only`. A tool neither mode gives is
/// dropped; tools the mode gives beyond `tools` are said (Codex names no
/// single tool).
fn sandbox_mode(w: &mut Writer, tools: &[String]) -> &'static str {
    let writes = tools.iter().any(|t| WRITING.contains(&t.as_str()));
    let (mode, given): (&str, Vec<&str>) = if writes {
        (
            "workspace-write",
            READING.iter().chain(&WRITING).copied().collect(),
        )
    } else {
        ("read-only", READING.to_vec())
    };
    let other: Vec<&str> = tools
        .iter()
        .map(String::as_str)
        .filter(|t| !given.contains(t))
        .collect();
    if !other.is_empty() {
        w.drop(
            &format!("tools {}", other.join(", ")),
            "Codex's agent files choose tools only by sandbox_mode, which has none of these",
        );
    }
    let more: Vec<&str> = given
        .iter()
        .copied()
        .filter(|g| !tools.iter().any(|t| t == g))
        .collect();
    if !more.is_empty() {
        w.lines.push(format!(
            "widened: sandbox_mode = \"{mode}\" gives {} too",
            more.join(", ")
        ));
    }
    mode
}

/// The agent's MCP servers as Codex's `[mcp_servers.NAME]` tables: one
/// named in config.toml is written out whole; `mcp_tools` becomes each
/// server's `enabled_tools`.
fn mcp_servers(w: &mut Writer, t: &Table) -> Vec<(String, Table)> {
    let mcp_tools = strings(t.get("mcp_tools"));
    let mut out = Vec::new();
    for entry in t
        .get("mcp_servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let server = match entry {
            Value::String(name) => match w.global.mcp_servers.iter().find(|s| s.name == *name) {
                Some(s) => from_config(s),
                None => {
                    w.drop(
                        &format!("mcp_servers \"{name}\""),
                        "config.toml has no such server",
                    );
                    continue;
                }
            },
            Value::Table(table) => table.clone(),
            _ => continue,
        };
        let name = server
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let mut codex = Table::new();
        for (key, value) in &server {
            let to = match key.as_str() {
                "command" | "args" | "env" | "cwd" | "url" => key.as_str(),
                "headers" => "http_headers",
                "timeout" => "tool_timeout_sec",
                "name" => continue,
                "transport" => {
                    w.drop(
                        &format!("mcp_servers.{name}.transport"),
                        "Codex tells stdio from HTTP by `command` or `url`",
                    );
                    continue;
                }
                other => {
                    w.drop(
                        &format!("mcp_servers.{name}.{other}"),
                        "Codex's MCP servers have no such key",
                    );
                    continue;
                }
            };
            codex.insert(to.into(), value.clone());
        }
        if !mcp_tools.is_empty() {
            let own = format!("{name}__");
            let enabled: Vec<Value> = mcp_tools
                .iter()
                .filter_map(|m| m.strip_prefix(&own))
                .map(Value::from)
                .collect();
            codex.insert("enabled_tools".into(), Value::Array(enabled));
        }
        out.push((name, codex));
    }
    out
}

/// A server of config.toml as the table an agent file would hold.
fn from_config(s: &crate::mcp::ServerFile) -> Table {
    let mut t = Table::new();
    t.insert("name".into(), s.name.clone().into());
    let text = |v: &Option<String>| v.clone().map(Value::from);
    let map = |m: &std::collections::BTreeMap<String, String>| {
        (!m.is_empty()).then(|| {
            Value::Table(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                    .collect(),
            )
        })
    };
    let args = (!s.args.is_empty())
        .then(|| Value::Array(s.args.iter().map(|a| Value::from(a.as_str())).collect()));
    for (key, value) in [
        ("transport", text(&s.transport)),
        ("command", text(&s.command)),
        ("args", args),
        ("env", map(&s.env)),
        ("cwd", text(&s.cwd)),
        ("url", text(&s.url)),
        ("headers", map(&s.headers)),
        ("timeout", s.timeout.map(Value::from)),
        ("sandbox", s.sandbox.as_ref().map(|_| Value::from(true))),
    ] {
        if let Some(v) = value {
            t.insert(key.into(), v);
        }
    }
    t
}
