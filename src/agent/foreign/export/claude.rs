//! An agent as Claude Code's sub-agent file: a YAML header (`name`,
//! `description`, `tools`, `model`, `maxTurns`) and the system prompt as
//! the body, the inverse of `foreign::claude`'s import.

use toml::{Table, Value};

use super::{Writer, strings};

/// axe's built-in tools by Claude Code's names, the inverse of the import's
/// (`Glob` for `list_directory`: `LS` is Claude Code's older name for it).
const TOOLS: [(&str, &str); 8] = [
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("run_command", "Bash"),
    ("search_files", "Grep"),
    ("list_directory", "Glob"),
    ("url_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
];

/// Claude Code's own model aliases, written for the model config.toml's
/// `[aliases]` (or its defaults) gives them.
const ALIASES: [&str; 3] = ["sonnet", "opus", "haiku"];

/// The file for the agent of axe's keys `t`.
pub(super) fn write(w: &mut Writer, t: &Table) -> String {
    let text = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut header = vec![
        ("name", yaml(text("name"))),
        ("description", yaml(text("description"))),
        ("tools", tools(w, t)),
        ("model", model(w, t.get("model").and_then(Value::as_str))),
    ];
    for (key, value) in t {
        match key.as_str() {
            "name" | "description" | "model" | "system_prompt" | "tools" | "sub_agents"
            | "mcp_servers" | "mcp_tools" => {}
            "agents_md" => w.agents_md(value),
            "budget" => {
                if let Some(n) = budget(w, value) {
                    header.push(("maxTurns", n.to_string()));
                }
            }
            other => w.drop_axes(other),
        }
    }
    let mut out = String::from("---\n");
    for (key, value) in header {
        out.push_str(&format!("{key}: {value}\n"));
    }
    out.push_str("---\n");
    let prompt = text("system_prompt").trim();
    if !prompt.is_empty() {
        out.push('\n');
        out.push_str(prompt);
        out.push('\n');
    }
    out
}

/// `tools` as Claude Code's names: the built-ins, `Agent(...)` for the
/// sub-agents, `mcp__server__tool` for `mcp_tools`. None is `[]`: without
/// a `tools` key Claude Code would offer every tool.
fn tools(w: &mut Writer, t: &Table) -> String {
    let mut names: Vec<String> = Vec::new();
    for tool in strings(t.get("tools")) {
        match TOOLS.iter().find(|(axe, _)| *axe == tool) {
            Some((_, claude)) => names.push((*claude).to_string()),
            None => w.drop(&format!("tools {tool}"), "Claude Code has no such tool"),
        }
    }
    let subs = strings(t.get("sub_agents"));
    if !subs.is_empty() {
        names.push(format!("Agent({})", subs.join(", ")));
    }
    let mcp_tools = strings(t.get("mcp_tools"));
    for entry in t
        .get("mcp_servers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (server, inline) = match entry {
            Value::String(name) => (name.as_str(), false),
            other => (
                other.get("name").and_then(Value::as_str).unwrap_or("?"),
                true,
            ),
        };
        if inline {
            w.drop(
                &format!("mcp_servers \"{server}\"'s table"),
                "Claude Code's agent files define no MCP server: name it in config.toml's \
                 [[mcp_servers]] (and Claude Code's .mcp.json)",
            );
        }
        let own = format!("{server}__");
        let listed: Vec<&String> = mcp_tools.iter().filter(|m| m.starts_with(&own)).collect();
        if listed.is_empty() && mcp_tools.is_empty() {
            w.drop(
                &format!("mcp_servers \"{server}\""),
                &format!(
                    "Claude Code's tools name each MCP tool, mcp__{server}__TOOL: \
                     list the tools in mcp_tools"
                ),
            );
        }
        names.extend(listed.iter().map(|m| format!("mcp__{m}")));
    }
    if names.is_empty() {
        "[]".into()
    } else {
        names.join(", ")
    }
}

/// The model as Claude Code names it: `inherit` for none, an alias for the
/// model config.toml gives it, `claude-...` for Anthropic's; another
/// provider's is kept whole (axe reads it back; Claude Code would not run
/// it), and said.
fn model(w: &mut Writer, model: Option<&str>) -> String {
    let Some(model) = model.map(str::trim).filter(|m| !m.is_empty()) else {
        return "inherit".into();
    };
    if let Some(alias) = ALIASES
        .iter()
        .find(|a| w.global.alias(a).as_deref() == Some(model))
    {
        return (*alias).to_string();
    }
    match model.strip_prefix("anthropic/") {
        Some(id) if id.starts_with("claude-") && !id.contains('/') => yaml(id),
        _ => {
            w.lines.push(format!(
                "kept: model {model} (not one of Anthropic's: Claude Code would not run it; \
                 axe reads it back as it is)"
            ));
            yaml(model)
        }
    }
}

/// `[budget] max_turns` as `maxTurns`; the rest of the table dropped.
fn budget(w: &mut Writer, value: &Value) -> Option<i64> {
    let table = value.as_table()?;
    let mut turns = None;
    for (key, v) in table {
        match (key.as_str(), v.as_integer()) {
            ("max_turns", Some(n)) if n > 0 => turns = Some(n),
            ("max_turns", _) => {}
            _ => w.drop(
                &format!("budget.{key}"),
                "Claude Code bounds a sub-agent's turns only (maxTurns)",
            ),
        }
    }
    turns
}

/// A YAML scalar for `s`: plain when it reads back as the same text in any
/// YAML reader, else double-quoted (JSON's quoting, which YAML reads).
fn yaml(s: &str) -> String {
    let safe = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " -_./(),".contains(c))
        && !s.ends_with(' ')
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if safe {
        s.to_string()
    } else {
        serde_json::Value::String(s.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scalar_is_plain_only_when_it_reads_back_the_same() {
        assert_eq!(yaml("Reviews code, briefly."), "Reviews code, briefly.");
        assert_eq!(yaml("a: b"), "\"a: b\"");
        assert_eq!(yaml("yes"), "\"yes\"");
        assert_eq!(yaml("12"), "\"12\"");
        assert_eq!(yaml("two\nlines \"q\""), "\"two\\nlines \\\"q\\\"\"");
        assert_eq!(yaml(""), "\"\"");
    }
}
