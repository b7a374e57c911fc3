//! Agent files as text for people: the scaffold `axe agents init` writes
//! and the `axe agents show` view.

use super::{Agent, PLACEHOLDER_MODEL};

/// The scaffold after its `name` line.
// Kept as a file of its own: a TOML file read as one, and the longest
// text of the room.
const SCAFFOLD_REST: &str = include_str!("scaffold.toml");

/// The file `axe agents init <name>` writes: required keys set, every
/// optional key shown commented out, the model the placeholder
/// [`PLACEHOLDER_MODEL`] (the Go original's scaffold has it; a run names
/// it, design §2.3).
pub fn scaffold(name: &str) -> String {
    let rest = SCAFFOLD_REST.replace("{NAME}", name);
    format!("name = \"{name}\"\n{rest}")
}

/// The scaffold with `model` (`axe agents init --model`, already checked)
/// in the placeholder's place.
pub fn scaffold_for(name: &str, model: &str) -> String {
    let placeholder = format!("model = \"{PLACEHOLDER_MODEL}\"");
    // A TOML string, whatever the model part holds.
    let written = format!("model = {}", toml::Value::String(model.to_string()));
    scaffold(name).replacen(&placeholder, &written, 1)
}

/// The `axe agents show` text: one aligned `Label:` line per field; `tool`
/// names the tool whose file it was imported from (design §3.17).
pub fn show(agent: &Agent, tool: Option<&str>) -> String {
    let c = &agent.config;
    let or_none = |s: Option<&str>| match s {
        Some(s) if !s.trim().is_empty() => s.to_string(),
        _ => "(none)".to_string(),
    };
    let mut rows: Vec<(&str, String)> = vec![
        ("Name", c.name.clone()),
        ("Description", or_none(Some(&c.description))),
        (
            "Model",
            c.model
                .clone()
                .unwrap_or_else(|| "(inherited from the caller)".to_string()),
        ),
        (
            "System Prompt",
            or_none(c.system_prompt.as_deref().map(str::trim)),
        ),
        ("Skill", or_none(c.skill.as_deref())),
        (
            "Files",
            if c.files.is_empty() {
                "(none)".into()
            } else {
                c.files.join(", ")
            },
        ),
        ("Workdir", or_none(c.workdir.as_deref())),
        (
            "Sub-Agents",
            if c.sub_agents.is_empty() {
                "(none)".into()
            } else {
                c.sub_agents.join(", ")
            },
        ),
    ];
    if !c.sub_agents.is_empty() {
        rows.extend(sub_agent_rows(&c.sub_agents_config));
    }
    if c.agents_md {
        rows.push((
            "AGENTS.md",
            "yes (the repository's root down to the workdir)".into(),
        ));
    }
    if c.stream {
        rows.push(("Stream", "yes".into()));
    }
    rows.extend(tool_rows(&c.tools));
    if let Some(n) = c.max_file_bytes {
        rows.push(("Max File Bytes", n.to_string()));
    }
    if let Some(n) = c.timeout {
        rows.push(("Timeout", format!("{n}s")));
    }
    if let Some(n) = c.max_prompt_bytes {
        rows.push(("Max Prompt Bytes", n.to_string()));
    }
    if !c.prompt_cache {
        rows.push(("Prompt Cache", "off".into()));
    }
    if let Some(o) = &c.output {
        let schema = match &o.schema {
            super::SchemaSource::Inline(v) => v.to_string(),
            super::SchemaSource::File(f) => format!("file {f}"),
        };
        rows.push(("Output Schema", schema));
        rows.push(("Max Repairs", o.max_repairs.to_string()));
    }
    rows.extend(memory_rows(agent));
    if let Some(n) = c.budget.max_tokens {
        rows.push(("Budget Tokens", n.to_string()));
    }
    if let Some(n) = c.budget.max_turns {
        rows.push(("Budget Turns", n.to_string()));
    }
    rows.extend(param_rows(&c.params));
    rows.extend(source_rows(agent, tool));

    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0) + 2;
    let mut out = String::new();
    for (label, value) in rows {
        // Multi-line values (a system prompt) are indented under their label.
        let value = value.replace('\n', &format!("\n{}", " ".repeat(width)));
        out.push_str(&format!("{:<width$}{value}\n", format!("{label}:")));
    }
    out
}

/// The rows of `show` on where the agent came from: its file, whose
/// format it is when another tool's, and what the import noted.
fn source_rows(agent: &Agent, tool: Option<&str>) -> Vec<(&'static str, String)> {
    let mut rows = vec![("File", agent.path.display().to_string())];
    if let Some(tool) = tool {
        rows.push(("Format", format!("{tool}'s, read as axe's")));
    }
    if !agent.notes.is_empty() {
        rows.push(("Notes", agent.notes.join("\n")));
    }
    rows
}

/// The `[sub_agents_config]` rows of `show`, for an agent with sub-agents.
fn sub_agent_rows(sac: &super::SubAgentsConfig) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("Max Depth", sac.max_depth.to_string()),
        ("Parallel", yes_no(sac.parallel).into()),
        (
            "Sub-Agent Timeout",
            match sac.timeout {
                0 => "inherit (the parent's deadline)".into(),
                n => format!("{n}s"),
            },
        ),
    ];
    if let Some(n) = sac.max_parallel {
        rows.push(("Max Parallel", n.to_string()));
    }
    if let Some(n) = sac.max_result_chars {
        rows.push(("Max Result Chars", n.to_string()));
    }
    rows
}

/// The `tools`, `allowed_hosts` and `[sandbox]` rows of `show`, each only
/// when the file sets it.
fn tool_rows(t: &super::ToolsConfig) -> Vec<(&'static str, String)> {
    let sb = &t.sandbox;
    let list = |v: &[String]| (!v.is_empty()).then(|| v.join(", "));
    let yes = |b: bool| b.then(|| "yes".to_string());
    let off = (!sb.landlock).then(|| "off (commands run without Landlock)".to_string());
    let unprotected = (sb.landlock && !sb.protect)
        .then(|| "off (commands may write .git, axe/, .claude/, .codex/)".to_string());
    [
        ("Tools", list(&t.names)),
        ("Allowed Hosts", list(&t.allowed_hosts)),
        ("Sandbox", off),
        ("Sandbox Read", list(&sb.read)),
        ("Sandbox Write", list(&sb.write)),
        ("Sandbox Network", yes(sb.network)),
        ("Private Networks", yes(sb.private_networks)),
        ("Sandbox Env", list(&sb.env)),
        ("Sandbox Protect", unprotected),
    ]
    .into_iter()
    .filter_map(|(label, value)| value.map(|v| (label, v)))
    .collect()
}

/// `[params]`'s rows: temperature and max tokens always, the reasoning
/// effort and thinking budget only when set, as the dry run's Params line
/// (design §4.15).
fn param_rows(p: &super::Params) -> Vec<(&'static str, String)> {
    let or_default = |v: Option<String>| v.unwrap_or_else(|| "default".into());
    let mut rows = vec![
        (
            "Temperature",
            or_default(p.temperature.map(|t| t.to_string())),
        ),
        (
            "Max Tokens",
            or_default(p.max_tokens.map(|n| n.to_string())),
        ),
    ];
    if let Some(e) = p.reasoning_effort {
        rows.push(("Reasoning Effort", e.name().to_string()));
    }
    if let Some(n) = p.thinking_budget {
        rows.push(("Thinking Budget", n.to_string()));
    }
    rows
}

/// The `[memory]` rows of `show`, when the file has that table: whether it
/// is on and, when it is, its file (as a run in this directory finds it)
/// and counts.
fn memory_rows(agent: &Agent) -> Vec<(&'static str, String)> {
    let Some(m) = &agent.config.memory else {
        return Vec::new();
    };
    if !m.enabled {
        return vec![("Memory", "off".into())];
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = match crate::memory::file_path(&agent.id, m, &cwd) {
        Ok(p) => p.display().to_string(),
        Err(e) => e.to_string(),
    };
    let mut rows = vec![
        ("Memory", format!("on, {file}")),
        (
            "Memory Last N",
            match m.last_n {
                0 => "0 (all entries)".to_string(),
                n => n.to_string(),
            },
        ),
    ];
    if m.max_entries > 0 {
        rows.push(("Memory Max Entries", m.max_entries.to_string()));
    }
    rows
}

pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Go original's scaffold (jrswab/axe, internal/agent/agent.go,
    /// `Scaffold`, commit 977dda0), for `name = "helper"`.
    const GO_SCAFFOLD: &str = r#"name = "helper"
description = ""

# Full provider/model per models.dev
model = "provider/model-name"

# Agent persona (optional)
# system_prompt = ""

# Default skill (optional, can be overridden with --skill flag)
# skill = ""

# Context files - glob patterns resolved from workdir or cwd (optional)
# files = []

# Working directory (optional)
# workdir = ""

# Sub-agents this agent can invoke (optional)
# sub_agents = []

# [sub_agents_config]
# max_depth = 3
# parallel = true
# timeout = 120

# [memory]
# enabled = false
# path = ""
# last_n = 10
# max_entries = 100

# [params]
# temperature = 0.3
# max_tokens = 4096
"#;

    #[test]
    fn scaffold_keeps_every_line_of_the_go_originals_in_its_order() {
        let ours = scaffold("helper");
        let mut lines = ours.lines();
        for go in GO_SCAFFOLD.lines().filter(|l| !l.is_empty()) {
            assert!(lines.any(|l| l == go), "missing, or out of order: {go}");
        }
    }

    #[test]
    fn scaffold_for_a_model_writes_it_in_the_placeholders_place_only() {
        let s = scaffold_for("helper", "openai/meta-llama/\"odd\"");
        let table: toml::Table = s.parse().unwrap();
        assert_eq!(table["model"].as_str(), Some("openai/meta-llama/\"odd\""));
        assert_eq!(
            s.replace(&s.lines().nth(4).unwrap().to_string(), ""),
            scaffold("helper").replace("model = \"provider/model-name\"", "")
        );
        assert!(!s.contains("model = \"provider/model-name\""));
        assert!(s.contains("# Full provider/model per models.dev"));
    }

    #[test]
    fn scaffold_parses_and_includes_every_optional_key() {
        let s = scaffold("helper");
        let a = super::super::parse("t", std::path::Path::new("t.toml"), &s).unwrap();
        assert!(a.warnings.is_empty());
        assert_eq!(a.config.name, "helper");
        for line in [
            "# [sub_agents_config]",
            "# max_depth = 3",
            "# parallel = true",
            "# timeout = 120",
            "# [params]",
        ] {
            assert!(s.lines().any(|l| l == line), "missing {line}");
        }
        for key in [
            "",
            "sub_agents_config",
            "params",
            "retry",
            "budget",
            "output",
            "sandbox",
            "memory",
        ]
        .into_iter()
        .flat_map(|t| match t {
            "" => super::super::file::known_keys(&[]),
            t => super::super::file::known_keys(&[t]),
        })
        .flatten()
        {
            assert!(
                s.contains(&format!("# {key}"))
                    || s.contains(&format!("{key} ="))
                    || s.contains(&format!("[{key}]")),
                "{key}"
            );
        }
    }
}
