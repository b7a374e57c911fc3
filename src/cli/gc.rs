//! `axe gc [agent] [--all] [--dry-run] [--model provider/model]` (design
//! §10.5): an agent's memory sent to a model that looks for patterns in it,
//! the model's report printed, then the memory file trimmed to its last
//! entries, what was removed kept in `<file>.bak`. The request goes
//! through the provider layer as a run's do (the same client, retries and
//! deadline); `--dry-run` shows what would be sent and trimmed, and sends
//! and changes nothing.

use super::args::GcCmd;
use super::{load_agent, load_global, print_stdout};
use crate::agent::{self, Agent, MemoryConfig};
use crate::config::GlobalConfig;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::interrupt;
use crate::io::stderr;
use crate::memory::{self, Log};
use crate::paths::AgentDirs;
use crate::provider::{Message, ModelRef, Request, RetryPolicy};
use crate::text::redact::redact;

/// What the model is asked to do with the memory (the Go original's three
/// sections, in words of our own).
const PROMPT: &str =
    "You review the run log of an AI agent. Each entry in the user message is one \
past run: a UTC timestamp, the task the agent was given, and the start of its answer. Write a \
short report with exactly these three sections, under these exact headings:

## Patterns Found
What recurs across the runs: the kinds of task, problems met again and again, how the agent tends \
to answer. If nothing recurs, write \"No clear patterns detected.\"

## Repeated Work
Runs that did the same work again, on the same or nearly the same input. If there are none, write \
\"No repeated work detected.\"

## Recommendations
Concrete changes the user could make to the agent's instructions, skill or workflow that follow \
from the two sections above. If none follow, write \"No specific recommendations.\"

Be brief, and cite entries by their timestamps where it helps.";

/// The analysis request's temperature and output limit (the Go original's).
const TEMPERATURE: f64 = 0.3;
const MAX_TOKENS: u32 = 4096;

/// Runs `axe gc`.
pub(super) fn main(cmd: GcCmd) -> Result<(), Error> {
    // It rewrites files: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    if cmd.timeout == 0 {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    match (cmd.all, cmd.agent.as_deref()) {
        (true, Some(_)) => Err(Error::general(
            "cannot specify both --all and an agent name",
        )),
        (false, None) => Err(Error::general("agent name is required (or use --all)")),
        (false, Some(name)) => {
            let global = load_global()?;
            let dirs = AgentDirs::search(cmd.agents_dir.as_deref())?;
            one(load_agent(&dirs, name)?, &cmd, &global)
        }
        (true, None) => all(&cmd),
    }
}

/// `--all`: every agent whose memory is enabled, one after another; one
/// that fails is reported and the others still run, and the command then
/// exits 1.
fn all(cmd: &GcCmd) -> Result<(), Error> {
    let global = load_global()?;
    let dirs = AgentDirs::search(cmd.agents_dir.as_deref())?;
    let (found, warnings) = agent::list(&dirs)?;
    for w in &warnings {
        stderr::warn(w);
    }
    let mut agents = Vec::new();
    for (id, _) in found {
        match agent::load(&dirs, &id) {
            Ok(a) if a.config.memory.as_ref().is_some_and(|m| m.enabled) => agents.push(a),
            Ok(_) => {}
            Err(e) => stderr::warn(&format!("skipping agent {id}: {e}")),
        }
    }
    if agents.is_empty() {
        return print_stdout("No agents with memory enabled.\n");
    }
    let total = agents.len();
    let mut failed = 0;
    for a in agents {
        let id = a.id.clone();
        print_stdout(&format!("=== GC: {id} ===\n"))?;
        if let Err(e) = one(a, cmd, &global) {
            stderr::warn(&format!("gc failed for agent \"{id}\": {}", e.one_line()));
            failed += 1;
        }
    }
    if failed > 0 {
        return Err(Error::general(format!(
            "gc completed with errors: {failed} of {total} agents failed"
        )));
    }
    Ok(())
}

/// One agent: its memory read, analysed (or, with `--dry-run`, shown),
/// then trimmed.
fn one(agent: Agent, cmd: &GcCmd, global: &GlobalConfig) -> Result<(), Error> {
    let id = agent.id.clone();
    let Some(config) = agent.config.memory.clone().filter(|m| m.enabled) else {
        stderr::warn(&format!(
            "agent \"{id}\" does not have memory enabled; skipping"
        ));
        return Ok(());
    };
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    let place = memory::place(&id, &config, &cwd)?;
    let path = place.path.clone();
    let log = memory::read_log(&place)
        .map_err(|e| Error::config(format!("cannot read memory file {}: {e}", path.display())))?;
    let Some(log) = log.filter(|l| l.entries > 0) else {
        return print_stdout(&format!(
            "No memory entries for agent \"{id}\". Nothing to do.\n"
        ));
    };
    print_stdout(&format!("Agent: {id}\nEntries: {}\n", log.entries))?;
    if log.sent < log.entries {
        stderr::warn(&format!(
            "memory file {} is over {} MiB; only its newest {} entries are sent",
            path.display(),
            memory::READ_LIMIT >> 20,
            log.sent
        ));
    }
    let model = match cmd.model.as_deref() {
        Some(m) => global.model_ref(m)?,
        None => agent.own_model(global)?.ok_or(Error::NoModel)?,
    };
    let keep = keep(&config);
    if cmd.dry_run {
        return print_stdout(&dry_run(&model, &log, keep, &path));
    }
    let analysis = analyse(&agent, global, &model, &log, cmd.timeout)?;
    // A report axe prints, not an agent's answer: a key a memory file
    // holds (one the Go original wrote) is not echoed.
    print_stdout(&redact(&format!("--- Analysis ---\n{analysis}\n")))?;
    let Some(keep) = keep else {
        return print_stdout(
            "No trim target configured (last_n and max_entries are both 0). Skipping trim.\n",
        );
    };
    let trimmed = memory::trim(&place, keep)
        .map_err(|e| Error::config(format!("cannot trim {}: {e}", path.display())))?;
    match trimmed.backup {
        Some(backup) => print_stdout(&format!(
            "Trimmed: {} entries removed, {} entries kept.\nRemoved entries appended to {}\n",
            trimmed.removed,
            trimmed.kept,
            backup.display()
        )),
        None => print_stdout(&format!(
            "No trimming needed: {} entries within limit ({keep}).\n",
            trimmed.kept
        )),
    }
}

/// How many entries a trim keeps: `last_n`, else `max_entries`; None when
/// both are 0 (the file is left whole).
fn keep(config: &MemoryConfig) -> Option<u64> {
    [config.last_n, config.max_entries]
        .into_iter()
        .find(|&n| n > 0)
}

/// The model's report on `log`: one request through the provider layer,
/// with the agent's retry settings over config.toml's, within `timeout`
/// seconds. A refusal is an error; a report cut short is printed, and
/// said to be.
fn analyse(
    agent: &Agent,
    global: &GlobalConfig,
    model: &ModelRef,
    log: &Log,
    timeout: u64,
) -> Result<String, Error> {
    let deadline = Deadline::after(timeout);
    let mut provider = global.provider(model)?;
    provider.retry = agent
        .config
        .retry
        .over(global.retry.over(RetryPolicy::default()));
    let req = Request {
        model: model.model.clone(),
        system: PROMPT.to_string(),
        messages: vec![Message::user(log.send.clone())],
        temperature: Some(TEMPERATURE),
        max_tokens: Some(MAX_TOKENS),
        ..Request::default()
    };
    let resp = provider.send(&req, deadline.at)?;
    if let Some(what) = resp.declined {
        return Err(Error::Declined {
            provider: model.provider.clone(),
            what,
        });
    }
    if let Some(cut) = resp.cut {
        stderr::warn(&format!("the analysis was {}", cut.describe()));
    }
    Ok(resp.content)
}

/// `--dry-run`: the model, the prompt, the memory as it would be sent, and
/// what the trim would do.
fn dry_run(model: &ModelRef, log: &Log, keep: Option<u64>, path: &std::path::Path) -> String {
    let trim = match keep {
        None => "no trim target (last_n and max_entries are both 0)".to_string(),
        Some(k) => {
            let entries = u64::try_from(log.entries).unwrap_or(u64::MAX);
            if entries <= k {
                format!("none: {entries} entries within limit ({k})")
            } else {
                format!(
                    "{} entries removed (appended to {}), {k} entries kept",
                    entries - k,
                    memory::backup_path(path).display()
                )
            }
        }
    };
    redact(&format!(
        "Model: {model}\n\n--- System Prompt ---\n{PROMPT}\n\n--- Memory ({} entries, sent as the user message) ---\n{}\n\nWould trim: {trim}\nDry run: nothing sent, no entries trimmed.\n",
        log.sent,
        log.send.trim_end()
    ))
}
