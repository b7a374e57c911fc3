//! `axe run <agent>`: the agent resolved with the command line's
//! overrides, the user message, the ledger (trace and budgets), the live
//! view, the run, and the answer or `--json` on stdout.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use super::args::RunCmd;
use super::{continued, load_global, print_stdout};
use crate::agent::{Agent, Catalog, Place, Roots};
use crate::config::GlobalConfig;
use crate::deadline::Cancel;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::interrupt;
use crate::io::stderr::{self, Verbose};
use crate::io::stdin;
use crate::paths::AgentDirs;
use crate::report;
use crate::report::progress::{self, Progress};
use crate::resolve::template::{self, Prompts, Template, Vars};
use crate::resolve::{self, Overrides, UserInput};
use crate::run::{self, Ctx, TextSink, top};
use crate::tools::artifacts::ArtifactRun;
use crate::trace::run_log::RunLog;

/// Runs the agent and prints its answer, or runs it over a batch of inputs
/// (`--each`, `--each-file`: `batch.rs`), and records the command in the
/// run log with the status the process exits with (design §7.7).
pub(super) fn main(mut cmd: RunCmd) -> Result<(), Error> {
    // It runs agents and writes a trace: a signal ends them cleanly
    // (design §6.5).
    interrupt::install();
    cmd.json |= cmd.json_messages;
    let log = RunLog::start(&cmd.agent, !cmd.no_log && !cmd.dry_run);
    let result = if super::batch::wanted(&cmd) {
        match cmd.continues.is_some() || cmd.json_messages {
            true => Err(Error::config(
                "--continue and --json-messages are for one run, not --each or --each-file",
            )),
            false => super::batch::run(cmd, &log),
        }
    } else {
        run(cmd, &log)
    };
    log.finish(&result);
    result
}

/// What every top-level run starts from, one run or a batch of them: the
/// config, where agents are found, the agent resolved with the command
/// line's overrides (read once), its templates and `--var`s.
pub(super) struct Base {
    pub(super) global: GlobalConfig,
    /// The agent and its tree, read once from the trusted agent
    /// directories (design §8.8).
    pub(super) catalog: Arc<Catalog>,
    pub(super) cwd: PathBuf,
    pub(super) resolved: resolve::Resolved,
    /// Seconds for the run; for a batch, for each input.
    pub(super) timeout: u64,
    pub(super) started: Instant,
    pub(super) vars: BTreeMap<String, String>,
    pub(super) prompts: Prompts,
}

/// Loads and resolves what `cmd` names, telling `log` what it learns.
pub(super) fn base(cmd: &RunCmd, log: &RunLog) -> Result<Base, Error> {
    if cmd.timeout == Some(0) {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    let started = Instant::now();
    stderr::set_quiet(cmd.quiet);
    let vars = template::parse_vars(&cmd.var)?;

    let global = load_global()?;
    log.settings(global.run_log);
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    let catalog = Arc::new(read_agents(cmd, &global, &cwd)?);
    let mut agent: Agent = (*catalog
        .agent(&cmd.agent)
        .map_err(|e| e.looked_in(catalog.dirs().dirs()))?)
    .clone();
    for w in &agent.warnings {
        stderr::warn(w);
    }
    if cmd.no_prompt_cache {
        agent.config.prompt_cache = false;
    }
    agent.config.stream |= cmd.stream;
    // The top-level agent's only: a sub-agent keeps its own file's.
    if let Some(name) = &cmd.reasoning_effort {
        agent.config.params.reasoning_effort =
            Some(crate::agent::effort("--reasoning-effort", name)?);
    }
    // The flag, else the file's own, from when the command started.
    let timeout = top::timeout(
        cmd.timeout,
        agent.config.timeout,
        super::DEFAULT_TIMEOUT_SECS,
    );
    let deadline = Deadline::since(started, timeout);
    let overrides = Overrides {
        model: cmd.model.clone(),
        skill: cmd.skill.clone(),
        workdir: cmd.workdir.clone(),
        caller_model: None,
        output_schema: cmd.output_schema.clone(),
        artifacts: ArtifactRun {
            dir: cmd.artifact_dir.clone(),
            keep: cmd.keep_artifacts,
            make: !cmd.dry_run,
            caller: None,
        },
        attach: cmd.attach.clone(),
    };
    let resolved = resolve::resolve(agent, &overrides, &global, &cwd, &deadline)?;
    log.model(&resolved.model.to_string());
    let prompts = Prompts::of(&resolved);
    Ok(Base {
        global,
        catalog,
        cwd,
        resolved,
        timeout,
        started,
        vars,
        prompts,
    })
}

/// The agent `cmd` names and its tree, from the search path less the
/// directories an agent of it may write unconfined (design §8.8), each
/// left out said on stderr.
fn read_agents(cmd: &RunCmd, global: &GlobalConfig, cwd: &Path) -> Result<Catalog, Error> {
    let dirs = AgentDirs::search(cmd.agents_dir.as_deref())?;
    let place = Place {
        global,
        cwd,
        workdir: cmd.workdir.as_deref(),
        sealed: false,
    };
    let (catalog, left_out) = Catalog::read(&dirs, &Roots::Named(vec![cmd.agent.clone()]), &place)?;
    for l in &left_out {
        stderr::warn(&l.to_string());
    }
    Ok(catalog)
}

/// The run itself, telling `log` what it learns.
fn run(cmd: RunCmd, log: &RunLog) -> Result<(), Error> {
    let base = base(&cmd, log)?;
    let started = base.started;
    let timeout = base.timeout;
    let verbose = Verbose::new(cmd.verbose);
    let deadline = Deadline::since(started, timeout);
    let vars = Vars {
        global: Some(&base.vars),
        own: Vec::new(),
    };
    // Templates are filled only when a run asks for them (`--var`): a
    // `{{name}}` in a prompt or skill written before there were templates
    // (a skill quoting Mustache, a Go original's file) is plain text.
    let templated = !base.vars.is_empty();
    let filled = match templated {
        true => base.prompts.fill(&base.resolved, &vars)?,
        false => None,
    };
    let resolved = filled.as_ref().unwrap_or(&base.resolved);
    let prompt = match &cmd.prompt {
        Some(p) if templated => Some(Template::parse(p).fill(&vars, "--prompt")?),
        other => other.clone(),
    };
    let input = user_input(prompt, &deadline)?;
    let kept = continued::conversation(&cmd, &base.global.run_log, log)?;

    report::verbose_header(&verbose, resolved, &input, timeout);
    if cmd.dry_run {
        let text = report::dry_run(resolved, &input, timeout);
        return print_stdout(&(text + &continued::dry_run(kept.as_deref())));
    }
    let trace = trace_path(cmd.trace.clone());
    let ledger = Arc::new(
        top::open_ledger(trace.as_deref(), cmd.trace_bodies, &deadline)?
            .joined(top::env_parent(&verbose)),
    );
    crate::trace::telemetry::deadline(deadline.at);
    log.ledger(&ledger, trace.as_deref(), &base.cwd);
    let setup = top::Setup {
        global: &base.global,
        catalog: &base.catalog,
        cwd: &base.cwd,
        verbose,
        retries: cmd.retries,
        max_tokens: cmd.max_tokens,
        max_turns: cmd.max_turns,
        max_cost: max_cost(cmd.max_cost)?,
        stream: cmd.stream,
        whole: cmd.json,
        text: TextSink::Stdout,
        cancel: Cancel::default(),
    };
    let mut ctx = top::ctx(setup, &cmd.agent, resolved, deadline, ledger)?;
    ctx.conversation = kept.clone();
    let _closes_trace = {
        let ledger = ctx.ledger.clone();
        interrupt::on_signal(move |why| {
            ledger.interrupt(why);
            crate::trace::telemetry::finish();
        })
    };
    // A signal stops the MCP servers too; every other way out drops `ctx`
    // and its servers with it (design §9.4).
    let _stops_servers = {
        let mcp = ctx.mcp.clone();
        interrupt::on_signal(move |_| mcp.stop_all())
    };
    // Text streamed to a terminal would be drawn over by the view, which
    // erases the lines above it on the same screen: the text is the view.
    #[allow(clippy::disallowed_methods, reason = "asks whether it is a terminal")]
    let progress = (progress::wanted(cmd.json, cmd.quiet, &ctx.ledger)
        && !(ctx.stream.print && std::io::stdout().is_terminal()))
    .then(|| Progress::start(ctx.ledger.clone(), progress::color()));
    let outcome = run::run_agent(resolved, input.text(), &input.task(), &ctx);
    // The run's last span has ended: its spans go to the collector while
    // the answer is printed (design §7.9).
    crate::trace::telemetry::ended();
    // Erases the view before anything else is printed.
    drop(progress);
    if ctx.stream.print {
        return streamed_end(outcome, &ctx, started);
    }
    let mut outcome = outcome?;
    outcome.duration = started.elapsed();
    if let Some(what) = outcome.incomplete() {
        stderr::warn(&what);
    }
    log.answer(&outcome.content);
    let usage = ctx.ledger.usage();
    report::verbose_footer(&ctx.verbose, &outcome, &usage);

    if cmd.json {
        let json = report::json(resolved, &outcome, &ctx.ledger, &ctx.place.path, &usage);
        let json = match (&kept, cmd.json_messages) {
            (Some(kept), true) => continued::with_messages(json, kept),
            _ => json,
        };
        print_stdout(&format!("{json}\n"))
    } else {
        // The answer is printed as the model gave it (design §6.7).
        let mut text = outcome.content;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        print_stdout(&text)
    }
}

/// The end of a run whose answer was printed as it came: the text ended
/// with a newline and written, the warnings and `--verbose` footer as for
/// any run; a failure after some text was printed says that stdout holds
/// partial output (design §4.11).
fn streamed_end(
    outcome: Result<run::Outcome, Error>,
    ctx: &Ctx,
    started: Instant,
) -> Result<(), Error> {
    let written = crate::io::stdout::finish(ctx.deadline.at);
    let mut outcome = match outcome {
        Ok(o) => o,
        Err(e) if crate::io::stdout::printed() => return Err(Error::Partial(Box::new(e))),
        Err(e) => return Err(e),
    };
    outcome.duration = started.elapsed();
    if let Some(what) = outcome.incomplete() {
        stderr::warn(&what);
    }
    let usage = ctx.ledger.usage();
    report::verbose_footer(&ctx.verbose, &outcome, &usage);
    written
}

/// `--prompt`, else stdin when it is not a terminal and not blank, else the
/// default. Reading stdin ends at the run's deadline.
/// `--max-cost USD` in picodollars: a positive amount (design §7.8).
pub(super) fn max_cost(usd: Option<f64>) -> Result<Option<u64>, Error> {
    usd.map(|v| {
        crate::cost::pico(v).ok_or_else(|| {
            Error::config(format!(
                "--max-cost must be a positive amount of USD, not {v}"
            ))
        })
    })
    .transpose()
}

fn user_input(prompt: Option<String>, deadline: &Deadline) -> Result<UserInput, Error> {
    if let Some(p) = prompt {
        // A blank prompt would be rejected by some APIs; it means the default.
        return Ok(if p.trim().is_empty() {
            UserInput::Default
        } else {
            UserInput::Prompt(p)
        });
    }
    #[allow(clippy::disallowed_methods, reason = "asks whether it is a terminal")]
    if std::io::stdin().is_terminal() {
        return Ok(UserInput::Default);
    }
    let text = String::from_utf8_lossy(&stdin::read_all(deadline)?).into_owned();
    Ok(if text.trim().is_empty() {
        UserInput::Default
    } else {
        UserInput::Stdin(text)
    })
}

/// The trace file: `--trace`, else `AXE_TRACE` (a blank one is none).
pub(super) fn trace_path(flag: Option<String>) -> Option<String> {
    flag.filter(|t| !t.trim().is_empty()).or_else(|| {
        std::env::var("AXE_TRACE")
            .ok()
            .filter(|t| !t.trim().is_empty())
    })
}
