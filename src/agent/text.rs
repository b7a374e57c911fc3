//! Agent files as text for people: the scaffold `axe agents init` writes
//! and the `axe agents show` view.

use super::{Agent, PLACEHOLDER_MODEL};

/// The scaffold after its `name` line.
const SCAFFOLD_REST: &str = r#"description = ""

# Full provider/model per models.dev
model = "provider/model-name"
# The model is the one key to set before a first run: provider/model, e.g.
# anthropic/claude-sonnet-4-5, openai/gpt-4o, or ollama/llama3.1 (a local
# model, no key). Any OpenAI-compatible server works through the openai
# provider and AXE_OPENAI_BASE_URL. The API key comes from the environment
# (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...) or config.toml (`axe config init`).
#
# Then:  axe run {NAME} --dry-run       what would be sent (no key needed)
#        axe run {NAME} -p "Hello"      a run; the answer goes to stdout
#        axe agents check {NAME}        this file and its sub-agents checked
# Every key below is optional: uncomment one (remove its leading #) to use it.

# A one-line description, shown by `axe agents list` and to a parent agent
# that may call this one: set description = "..." above.

# Agent persona (optional)
# system_prompt = ""
# The instructions the model gets as its system prompt, e.g.:
# system_prompt = """
# You are a careful reviewer. Answer briefly.
# """

# Default skill (optional, can be overridden with --skill flag)
# skill = ""
# A SKILL.md appended to the system prompt; relative paths resolve against
# the config directory (`axe config init` writes a sample).
# skill = "skills/sample/SKILL.md"

# Context files - glob patterns resolved from workdir or cwd (optional)
# files = []
# Their contents are appended to the system prompt; ** matches any number of
# directories.
# files = ["src/**/*.rs", "README.md"]
# The AGENTS.md files from the repository's root down to the workdir, as
# context files before these (default false).
# agents_md = true

# Attachments - files (relative to the workdir) sent with the first message:
# PNG, JPEG, GIF, WebP, PDF or plain text, told by their content; at most
# 20 MiB each, 32 MiB in all (also `axe run -a FILE`).
# attach = ["diagram.png", "spec.pdf"]

# Working directory (optional)
# workdir = ""
# The directory the files are read from (default: the current directory).
# workdir = "/path/to/project"

# Bounds on what is read: a context file larger than max_file_bytes is
# skipped (a skill that large is an error), and context files that would
# take the system prompt past max_prompt_bytes are skipped; --verbose lists
# what was skipped and why.
# max_file_bytes = 1048576
# max_prompt_bytes = 8388608

# Seconds for a run of this agent when --timeout gives none (default 120).
# timeout = 300

# Anthropic requests mark the tools, the system prompt and the newest
# messages for the provider's prompt cache, so that each turn of a tool loop
# reads the turn before from it; false sends no marks.
# prompt_cache = true
# Stream answers: the text is printed as it comes (as axe run --stream),
# and every request of the tree asks for a stream.
# stream = true

# Sub-agents this agent can invoke (optional)
# sub_agents = []
# They are offered through the call_agent tool; each is an agent file of its
# own, and one without a model runs on this agent's.
# sub_agents = ["helper"]

# Built-in tools: read_file, list_directory, search_files, write_file,
# edit_file, run_command, url_fetch, web_search. Files stay beneath the workdir (the
# kernel resolves every path); run_command runs sh -c under Landlock. A
# sub-agent gets only the tools its own file lists.
# tools = ["read_file", "search_files"]

# Hosts url_fetch may reach: exact names or *.suffix (default: any public
# host; private and local addresses are refused unless [sandbox] allows).
# allowed_hosts = ["docs.rs", "*.github.io"]

# What run_command may touch beyond the system's directories, the workdir
# and a private TMPDIR: extra paths to read (and run programs from) or to
# write, TCP (network), private addresses for url_fetch (private_networks),
# environment variables to pass (never a key). mode = "off" runs commands
# without Landlock, where the kernel has none. .git, axe/, .claude/ and
# .codex/ stay read-only to commands; protect = false lets them write there
# (an agent that commits), and run where the kernel cannot protect them.
# [sandbox]
# mode = "landlock"
# read = ["~/.cargo", "~/.rustup"]
# write = []
# network = false
# private_networks = false
# env = ["CARGO_HOME"]
# protect = true

# MCP servers whose tools this agent is offered, as <server>__<tool>: names
# of config.toml's [[mcp_servers]], or tables here (at the end of the file).
# mcp_tools narrows them to the tools named. One process per run, shared.
# mcp_servers = ["git"]
# mcp_tools = ["git__git_status", "git__git_log"]
# [[mcp_servers]]
# name = "time"
# command = "uvx"              # stdio; or url = "https://..." (streamable-http)
# args = ["mcp-server-time"]
# env = { TZ = "UTC" }         # and headers = { Authorization = "Bearer ${TOKEN}" }
# cwd = "."
# timeout = 30                 # seconds one call may take

# Sub-agent settings. max_depth: nesting limit for the whole tree (0 means 3,
# at most 5); parallel: run the calls of one response at the same time;
# timeout: seconds per sub-agent call (0 means the parent's deadline);
# max_parallel: calls of one response in flight at once (default: all);
# max_result_chars: a longer sub-agent answer is cut, and says so.
# [sub_agents_config]
# max_depth = 3
# parallel = true
# timeout = 120
# max_parallel = 4
# max_result_chars = 20000

# Memory of past runs: after each run that succeeds, its task and answer
# (cut at 1000 characters; stdin is never stored) are appended to
# ~/.local/share/axe/memory/<agent>.md, or path; the last last_n entries
# (0: all) end the system prompt. At max_entries a run warns to run
# `axe gc <agent>`, which finds patterns and trims the file.
# [memory]
# enabled = false
# path = ""
# last_n = 10
# max_entries = 100

# Bounds on the whole tree this agent starts, sub-agents included:
# max_tokens (input plus output), max_turns (requests) and max_cost (USD,
# at config.toml's or the built-in prices). When one is spent, a
# sub-agent's call fails and the top-level run exits 4.
# [budget]
# max_tokens = 200000
# max_turns = 40
# max_cost = 0.50

# Model parameters; unset ones are not sent (Anthropic requires max_tokens,
# so 4096 is sent there when unset).
# [params]
# temperature = 0.3
# max_tokens = 4096
# response_format = "json_object"  # the Go original's: text, json_object, or
#                                  # a json_schema table; read as [output]
# reasoning_effort = "medium"  # minimal, low, medium or high: how hard the
#                              # model thinks, in each wire's own form
# thinking_budget = 8192       # tokens to think in (Anthropic's budget; at
#                              # least 1024), over the effort's

# The shape of the answer: a JSON Schema (inline, or schema_file relative to
# the config directory). The answer must be JSON matching it; when it is
# not, the model is told what is wrong and asked again, max_repairs times
# (default 2), then the run exits 5 (a sub-agent's call fails).
# [output]
# schema = { type = "object", properties = { verdict = { type = "string" } }, required = ["verdict"] }
# schema_file = "schemas/verdict.json"
# max_repairs = 2

# Retries of one HTTP request on 429/5xx/refused connections (over the
# [retry] of config.toml; `axe run --retries N` wins over both).
# [retry]
# max_retries = 2
# initial_delay_ms = 500
# max_delay_ms = 30000
# backoff = "exponential"   # or "linear", "fixed"

# A directory for the files this agent makes for a later step (the Go
# original's): dir (relative: the workdir's), else one made for the run and
# removed after it. The file tools' `artifact` argument works there.
# [artifacts]
# enabled = false
# dir = ""
# default_write = false   # write_file without `artifact` writes there
"#;

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
        .flat_map(super::super::file::known_keys)
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
