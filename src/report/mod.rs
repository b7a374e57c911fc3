//! The reports of a run besides its answer: the `--dry-run` text (its
//! tools section in `report/tools.rs`), the `--json` object, the
//! `--verbose` header and footer and the usage table. Everything here
//! passes through [`redact`](crate::text::redact) first, but the model's words in
//! `--json`: the answer and the tool calls' arguments (design §6.7). The
//! live progress view a terminal shows while a run goes on is `progress`'s.
//! `axe run` and a batch (each input's `--json` line, its dry run, its
//! progress line) print them.

pub(crate) mod progress;
mod refusal;
mod tools;

use serde::Serialize;

use crate::agent::yes_no;
use crate::cost::Cost;
use crate::deadline::millis;
use crate::io::stderr::Verbose;
use crate::resolve::{Resolved, UserInput};
use crate::run::Outcome;
use crate::text::redact::redact;
use crate::trace::ledger::{self, AgentUsage, Ledger, ToolDetail};

fn params_line(r: &Resolved) -> String {
    let p = &r.agent.config.params;
    let mut line = format!(
        "temperature={}, max_tokens={}",
        p.temperature.map_or("default".into(), |t| t.to_string()),
        p.max_tokens.map_or("default".into(), |n| n.to_string())
    );
    // Only when set: without, the line is as design §2.9 gives it.
    if let Some(e) = p.reasoning_effort {
        line.push_str(&format!(", reasoning_effort={}", e.name()));
    }
    if let Some(n) = p.thinking_budget {
        line.push_str(&format!(", thinking_budget={n}"));
    }
    line
}

/// The `--dry-run` report (design §2.9).
pub fn dry_run(r: &Resolved, input: &UserInput, timeout_secs: u64) -> String {
    let mut s = String::new();
    s.push_str("=== Dry Run ===\n\n");
    s.push_str(&format!("Model:    {}\n", r.model));
    s.push_str(&format!("Workdir:  {}\n", r.workdir.display()));
    s.push_str(&format!("Timeout:  {timeout_secs}s\n"));
    s.push_str(&format!("Params:   {}\n", params_line(r)));
    // Only when it streams: without, the report is as design §2.9 gives it.
    if r.agent.config.stream {
        s.push_str("Stream:   yes\n");
    }
    s.push_str(&format!("\n--- System Prompt ---\n{}\n", r.system_prompt));
    s.push_str(&format!(
        "\n--- Skill ---\n{}\n",
        r.skill.as_deref().unwrap_or("(none)")
    ));
    s.push_str(&format!("\n--- Files ({}) ---\n", r.files.len()));
    if r.files.is_empty() {
        s.push_str("(none)\n");
    }
    // A name from a directory an agent may write: one line, its control
    // characters written out, as every line axe prints of what others
    // wrote (the prompt above is shown as it is sent).
    for f in &r.files {
        s.push_str(&format!("{}\n", crate::text::one_line(&f.path)));
    }
    // Only when there is one: without, the report is as design §2.9 gives it.
    if !r.attachments.is_empty() {
        s.push_str(&format!(
            "\n--- Attachments ({}) ---\n",
            r.attachments.len()
        ));
        for a in &r.attachments {
            s.push_str(&format!(
                "{}  {}  {} bytes\n",
                crate::text::one_line(&a.name),
                a.kind.media_type(),
                a.bytes.len()
            ));
        }
    }
    let stdin = match input {
        UserInput::Prompt(t) | UserInput::Stdin(t) => t.as_str(),
        UserInput::Default => "(none)",
    };
    s.push_str(&format!("\n--- Stdin ---\n{stdin}\n"));
    if let Some(m) = &r.memory {
        s.push_str(&memory_section(m));
    }
    let c = &r.agent.config;
    s.push_str("\n--- Sub-Agents ---\n");
    if c.sub_agents.is_empty() {
        s.push_str("(none)\n");
    } else {
        let sac = &c.sub_agents_config;
        s.push_str(&format!("{}\n", c.sub_agents.join(", ")));
        s.push_str(&format!("Max Depth: {}\n", sac.max_depth));
        s.push_str(&format!("Parallel:  {}\n", yes_no(sac.parallel)));
        let t = match sac.timeout {
            0 => timeout_secs,
            n => n,
        };
        s.push_str(&format!("Timeout:   {t}s\n"));
    }
    // Each only when there is one: without, the report is as design §2.9
    // gives it.
    if let Some(kit) = &r.tools {
        s.push_str(&tools::section(kit));
    }
    if !c.mcp.is_empty() {
        s.push_str(&tools::mcp_section(&c.mcp));
    }
    // Another tool's agent file: what axe does differently (design §3.17).
    if !r.agent.notes.is_empty() {
        s.push_str(&format!("\n--- Notes ---\n{}\n", r.agent.notes.join("\n")));
    }
    if let Some(o) = &r.output_schema {
        let schema = serde_json::to_string_pretty(&o.schema).unwrap_or_default();
        s.push_str(&format!(
            "\n--- Output Schema ---\n{schema}\nMax Repairs: {}\n",
            o.max_repairs
        ));
    }
    if r.model.wire.format().marks_cache() {
        s.push_str(&prompt_cache_section(r));
    }
    redact(&s)
}

/// The dry run's `--- Prompt Cache ---` section, for an agent whose wire
/// marks the cache (Anthropic's):
/// where its requests carry `cache_control` (design §4.10). The other wires
/// send nothing for their caches, and get no section.
fn prompt_cache_section(r: &Resolved) -> String {
    let c = &r.agent.config;
    if !c.prompt_cache {
        return "\n--- Prompt Cache ---\nOff: no cache_control is sent \
                (prompt_cache = false, or --no-prompt-cache)\n"
            .into();
    }
    let mut marked = Vec::new();
    if !c.sub_agents.is_empty() || r.tools.is_some() || !c.mcp.is_empty() {
        marked.push("the last tool");
    }
    if !r.system_prompt.trim().is_empty() {
        marked.push("the system prompt");
    }
    marked.push("the newest message");
    let last = marked.pop().unwrap_or_default();
    let marked = if marked.is_empty() {
        last.to_string()
    } else {
        format!("{} and {last}", marked.join(", "))
    };
    format!(
        "\n--- Prompt Cache ---\nOn: cache_control {{\"type\":\"ephemeral\"}} on {marked}; \
         from the second turn, on the previous request's last message too\n"
    )
}

/// The dry run's `--- Memory ---`: the file, how many entries, and the
/// entries the system prompt ends with (design §10.2).
fn memory_section(m: &crate::memory::Memory) -> String {
    let entries = if m.loaded.is_empty() {
        "(none)"
    } else {
        m.loaded.trim_end()
    };
    format!(
        "\n--- Memory ---\n{}: {} of {} entries loaded (last_n = {})\n{entries}\n",
        m.place.path.display(),
        m.count,
        m.total,
        m.config.last_n
    )
}

/// The `--verbose` lines printed before the first request.
pub fn verbose_header(v: &Verbose, r: &Resolved, input: &UserInput, timeout_secs: u64) {
    v.line(&format!("Model:    {}", r.model));
    v.line(&format!("Workdir:  {}", r.workdir.display()));
    let skill = r
        .skill_path
        .as_ref()
        .map_or("(none)".into(), |p| p.display().to_string());
    v.line(&format!("Skill:    {skill}"));
    v.line(&format!("Files:    {} file(s)", r.files.len()));
    for f in &r.skipped {
        let path = crate::text::one_line(&f.path);
        v.line(&format!("Skipped:  {path} ({})", f.reason));
    }
    v.line(&format!(
        "Stdin:    {}",
        yes_no(matches!(input, UserInput::Stdin(_)))
    ));
    if let Some(m) = &r.memory {
        v.line(&format!(
            "Memory:   {} entries loaded from {}",
            m.count,
            m.place.path.display()
        ));
    }
    v.line(&format!("Timeout:  {timeout_secs}s"));
    v.line(&format!("Params:   {}", params_line(r)));
}

/// The `--verbose` lines printed after the answer, ending with usage per
/// agent when sub-agents ran.
pub fn verbose_footer(v: &Verbose, o: &Outcome, usage: &[AgentUsage]) {
    v.line(&format!("Duration: {}ms", millis(o.duration)));
    // The reasoning among the output only where there was some: the line
    // is otherwise as it was.
    let reasoning = match o.reasoning_tokens {
        0 => String::new(),
        n => format!(" ({n} reasoning)"),
    };
    v.line(&format!(
        "Tokens:   {} input, {} output{reasoning}",
        o.input_tokens, o.output_tokens
    ));
    v.line(&format!(
        "Cache:    {} read, {} written (of the input)",
        o.cache_read_input_tokens, o.cache_creation_input_tokens
    ));
    v.line(&format!(
        "Cost:     {} (tree {})",
        o.cost.column(),
        ledger::totals(usage).cost.column()
    ));
    v.line(&format!("Stop:     {}", o.stop_reason));
    let sub_agents_ran = usage.len() > 1 || usage.iter().any(|u| u.calls > 1);
    if sub_agents_ran {
        for line in usage_table(usage).lines() {
            v.line(line);
        }
    }
}

/// Usage per agent and the tree's totals, as an aligned table.
pub fn usage_table(usage: &[AgentUsage]) -> String {
    let mut rows = vec![
        [
            "agent",
            "calls",
            "turns",
            "input",
            "output",
            "cache_read",
            "cache_write",
            "cost",
            "time",
            "errors",
        ]
        .map(String::from),
    ];
    for u in usage {
        rows.push([
            u.name.clone(),
            u.calls.to_string(),
            u.turns.to_string(),
            u.input_tokens.to_string(),
            u.output_tokens.to_string(),
            u.cache_read_input_tokens.to_string(),
            u.cache_creation_input_tokens.to_string(),
            u.cost_usd.column(),
            format!("{:.1}s", u.duration_ms as f64 / 1000.0),
            u.errors.to_string(),
        ]);
    }
    let totals = ledger::totals(usage);
    let sum = |f: fn(&AgentUsage) -> u64| {
        usage
            .iter()
            .map(f)
            .fold(0u64, u64::saturating_add)
            .to_string()
    };
    rows.push([
        "total".into(),
        sum(|u| u.calls),
        sum(|u| u.turns),
        totals.input_tokens.to_string(),
        totals.output_tokens.to_string(),
        totals.cache_read_input_tokens.to_string(),
        totals.cache_creation_input_tokens.to_string(),
        totals.cost.column(),
        String::new(),
        sum(|u| u.errors),
    ]);
    let mut widths = [0; 10];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = format!("{:<w$}", row[0], w = widths[0]);
        for (cell, w) in row.iter().zip(widths).skip(1) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The `--json` object: the single-agent fields, `tool_calls` and
/// `tool_call_details` (the top-level agent's own), then the whole tree's
/// usage (design §2.9, §3.14, D16).
#[derive(Debug, Serialize)]
pub struct JsonOutput<'a> {
    pub model: String,
    /// The answer, as the model gave it.
    pub content: &'a str,
    /// With an output schema: the answer, parsed (design D22).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<&'a serde_json::Value>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub stop_reason: String,
    pub duration_ms: u64,
    /// Every call the top-level run answered: built-in, `call_agent`, or
    /// one refused as unknown.
    pub tool_calls: u64,
    /// The top-level run's built-in tool calls (the Go original's key).
    pub tool_call_details: Vec<ToolDetail>,
    /// The answer reads as the model declining (the Go original's key and
    /// heuristic); false for an answer that met an output schema.
    pub refused: bool,
    pub retry_attempts: u64,
    /// Of `output_tokens`, those the model spent reasoning (design §4.15).
    pub reasoning_tokens: u64,
    /// Of `input_tokens`, those read from a prompt cache.
    pub cache_read_input_tokens: u64,
    /// Of `input_tokens`, those written to a prompt cache.
    pub cache_creation_input_tokens: u64,
    /// What the top-level agent's own requests cost in USD; `null` when a
    /// model had no price (design §7.8).
    pub cost_usd: Cost,
    pub run_id: &'a str,
    pub total_input_tokens: u64,
    pub total_output_tokens: u64,
    pub total_reasoning_tokens: u64,
    pub total_cache_read_input_tokens: u64,
    pub total_cache_creation_input_tokens: u64,
    /// The whole tree's cost in USD.
    pub total_cost_usd: Cost,
    pub agents: Vec<AgentReport<'a>>,
    /// The files the top-level agent wrote to its artifact directory (the
    /// Go original's key); absent when it has none (design §8.9).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<Vec<crate::tools::artifacts::Entry>>,
}

/// One entry of `--json`'s `agents`: an agent's usage and the built-in
/// tool calls of all its runs.
#[derive(Debug, Serialize)]
pub struct AgentReport<'a> {
    #[serde(flatten)]
    pub usage: &'a AgentUsage,
    pub tool_call_details: Vec<ToolDetail>,
}

/// The `--json` line of a run whose top-level agent ran at `root` (its
/// path), with the tree's `usage` and the tool calls `ledger` recorded.
pub fn json(
    r: &Resolved,
    o: &Outcome,
    ledger: &Ledger,
    root: &str,
    usage: &[AgentUsage],
) -> String {
    let totals = ledger::totals(usage);
    let agents = usage
        .iter()
        .map(|u| AgentReport {
            usage: u,
            tool_call_details: ledger.agent_tool_details(&u.name),
        })
        .collect();
    let out = JsonOutput {
        model: redact(&r.model.to_string()),
        content: &o.content,
        output: o.output.as_ref(),
        input_tokens: o.input_tokens,
        output_tokens: o.output_tokens,
        stop_reason: redact(&o.stop_reason),
        duration_ms: millis(o.duration),
        tool_calls: o.tool_calls,
        tool_call_details: ledger.tool_details(root),
        refused: o.output.is_none() && refusal::refused(&o.content),
        retry_attempts: o.retry_attempts,
        reasoning_tokens: o.reasoning_tokens,
        cache_read_input_tokens: o.cache_read_input_tokens,
        cache_creation_input_tokens: o.cache_creation_input_tokens,
        cost_usd: o.cost,
        run_id: &ledger.run_id,
        total_input_tokens: totals.input_tokens,
        total_output_tokens: totals.output_tokens,
        total_reasoning_tokens: totals.reasoning_tokens,
        total_cache_read_input_tokens: totals.cache_read_input_tokens,
        total_cache_creation_input_tokens: totals.cache_creation_input_tokens,
        total_cost_usd: totals.cost,
        agents,
        artifacts: r.artifacts.as_ref().map(|a| a.entries()),
    };
    // Serializing plain strings, numbers and JSON values cannot fail.
    serde_json::to_string(&out).unwrap_or_default()
}
