//! `axe run AGENT --each FILE` and `--each-file GLOB`: the command line's
//! side of a batch (design ch. 11). The flags checked, the agent set up as
//! every top-level run is (`run.rs`'s [`base`] and [`top_ctx`]), the inputs
//! opened, `--resume`'s file read, the signal actions, the progress view,
//! then the batch (`crate::batch`) and its exit status. The run log gets one
//! record for the whole batch: its tokens, and a summary as its answer.

use std::io::IsTerminal;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::args::RunCmd;
use super::print_stdout;
use super::run::{base, max_cost, trace_path};
use crate::batch::inputs::{Body, Inputs, Lines, Source};
use crate::batch::lines::Out;
use crate::batch::progress::View;
use crate::batch::schedule::{Gate, Order};
use crate::batch::shard::Shard;
use crate::batch::{self, Batch, resume};
use crate::deadline::Cancel;
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::interrupt;
use crate::io::stderr::{self, Verbose};
use crate::resolve::Found;
use crate::resolve::template::Template;
use crate::run::{TextSink, top};
use crate::sandbox::beneath::{Follow, Root};
use crate::trace::run_log::RunLog;

/// `--jobs` when not given.
pub const DEFAULT_JOBS: usize = 4;
/// The most `--jobs`: as many threads as one fan-out may have (design
/// §3.10).
pub const MAX_JOBS: usize = 256;

/// Whether `cmd` asks for a batch: any of its flags.
pub(super) fn wanted(cmd: &RunCmd) -> bool {
    cmd.each.is_some()
        || cmd.each_file.is_some()
        || cmd.jobs.is_some()
        || cmd.unordered
        || cmd.resume.is_some()
        || cmd.prompt_field.is_some()
        || cmd.shard.is_some()
        || cmd.provider_batch
        || cmd.batch_wait.is_some()
}

/// Runs the batch `cmd` asks for, telling `log` what it learns.
pub(super) fn run(cmd: RunCmd, log: &RunLog) -> Result<(), Error> {
    let (jobs, shard) = check(&cmd)?;
    let wait = batch_wait(&cmd)?;
    let base = base(&cmd, log)?;
    let prompt = cmd.prompt.as_deref().map(Template::parse);
    let (source, total) = source(&cmd, &base.cwd, base.timeout, shard)?;
    let mut inputs = Inputs::new(source, shard).peekable();
    // The names every input gives, known from the first: a key that is in
    // none of them fails before anything runs.
    let given: Option<&[&str]> = match inputs.peek().map(|i| &i.body) {
        Some(Body::Text(_)) => Some(&["line", "input"]),
        Some(Body::File { .. }) => Some(&["line", "input", "path"]),
        _ => None,
    };
    if let Some(given) = given {
        base.prompts.check(prompt.as_ref(), &base.vars, given)?;
    }

    let deadline = Deadline::since(base.started, base.timeout);
    let trace = trace_path(cmd.trace.clone()).filter(|_| !cmd.dry_run);
    // Every input's spans under the batch's own (design §7.9).
    let parent = top::env_parent(&Verbose::new(cmd.verbose));
    let workflow = crate::trace::telemetry::Workflow::start(&cmd.agent, parent);
    let ledger = Arc::new(
        top::open_ledger(trace.as_deref(), cmd.trace_bodies, &deadline)?
            .joined(workflow.as_ref().map_or(parent, |w| Some(w.ctx()))),
    );
    crate::trace::telemetry::deadline(deadline.at);
    log.ledger(&ledger, trace.as_deref(), &base.cwd);
    let quiet = Verbose::new(false);
    let (out, done) = match &cmd.resume {
        Some(path) if !cmd.dry_run => {
            let previous = resume::open(path, &base.cwd)?;
            (Out::file(previous.file, path), previous.done)
        }
        _ => (Out::stdout(), Default::default()),
    };
    // Streamed from the provider when asked, never printed as it comes: a
    // batch's answers are lines of JSON.
    let setup = top::Setup {
        global: &base.global,
        catalog: &base.catalog,
        cwd: &base.cwd,
        verbose: quiet.clone(),
        retries: cmd.retries,
        max_tokens: None,
        max_turns: None,
        max_cost: None,
        stream: false,
        whole: true,
        text: TextSink::Stdout,
        cancel: Cancel::default(),
    };
    // The command line's bounds are the whole batch's; the file's bound
    // each input (design §11.2).
    let proto = crate::run::Ctx {
        budgets: top::budgets(cmd.max_tokens, cmd.max_turns, max_cost(cmd.max_cost)?),
        ..top::ctx(setup, &cmd.agent, &base.resolved, deadline, ledger.clone())?
    };
    let file_budget = &base.resolved.agent.config.budget;
    let batch = Batch {
        resolved: &base.resolved,
        prompts: &base.prompts,
        vars: &base.vars,
        prompt,
        prompt_field: cmd.prompt_field.clone().unwrap_or_else(|| "prompt".into()),
        proto,
        timeout: base.timeout,
        file_budget: (
            file_budget.max_tokens,
            file_budget.max_turns,
            file_budget.max_cost,
        ),
        ledger: ledger.clone(),
        gate: Gate::new(cmd.max_tokens, cmd.max_turns),
        order: Order::new(jobs, cmd.unordered),
        out: Arc::new(out),
        done,
        counts: Arc::default(),
        verbose: Verbose::new(cmd.verbose),
        live: Arc::new(Mutex::new(Vec::new())),
    };
    if cmd.dry_run {
        let first = inputs
            .next()
            .ok_or_else(|| Error::general("--dry-run: the batch has no inputs"))?;
        return print_stdout(&batch.dry_run(&first)?);
    }
    let _on_signal = on_signal(&batch, cmd.resume.as_deref(), total);
    let _stops_servers = {
        let mcp = batch.proto.mcp.clone();
        interrupt::on_signal(move |_| mcp.stop_all())
    };
    #[allow(clippy::disallowed_methods, reason = "asks whether it is a terminal")]
    let view = (crate::report::progress::wanted(false, cmd.quiet, &ledger)
        && (cmd.resume.is_some() || !std::io::stdout().is_terminal()))
    .then(|| View::start(batch.counts.clone(), total));
    if cmd.provider_batch {
        provider_batch(&cmd, &base, &batch, (inputs, jobs), shard, wait)?;
    } else {
        batch.run(jobs, inputs);
    }
    drop(view);
    drop(workflow);
    ledger.flush_trace();
    crate::io::interrupt::wait_if_ending();
    end(&batch, log)
}

/// The flags a batch needs, checked before anything is read: `--jobs`
/// and `--shard`.
fn check(cmd: &RunCmd) -> Result<(usize, Option<Shard>), Error> {
    match (&cmd.each, &cmd.each_file) {
        (Some(_), Some(_)) => {
            return Err(Error::general(
                "--each and --each-file cannot be given together",
            ));
        }
        (None, None) => {
            return Err(Error::general(
                "--jobs, --unordered, --resume, --prompt-field and --shard need --each or --each-file",
            ));
        }
        _ => {}
    }
    let shard = match &cmd.shard {
        Some(text) => Some(Shard::parse(text).map_err(Error::general)?),
        None => None,
    };
    match cmd.jobs.unwrap_or(DEFAULT_JOBS) {
        n @ 1..=MAX_JOBS => Ok((n, shard)),
        n => Err(Error::general(format!("--jobs {n}: give 1 to {MAX_JOBS}"))),
    }
}

/// `--provider-batch`: the inputs through the provider's own batch engine
/// (`batch::engine`), read a second time from the same source.
fn provider_batch(
    cmd: &RunCmd,
    base: &super::run::Base,
    batch: &Batch,
    (inputs, jobs): (impl Iterator<Item = crate::batch::inputs::Input>, usize),
    shard: Option<Shard>,
    wait: std::time::Duration,
) -> Result<(), Error> {
    if let Some(why) = batch::engine::refused(batch) {
        return Err(Error::config(why));
    }
    // A provider's batch is sent whole and billed whole: a bound on the
    // whole batch could only refuse answers already paid for.
    let bound = match (cmd.max_cost, cmd.max_tokens) {
        (Some(_), _) => Some("--max-cost"),
        (None, Some(_)) => Some("--max-tokens"),
        (None, None) => None,
    };
    if let Some(flag) = bound {
        return Err(Error::config(format!(
            "--provider-batch: {flag} cannot bound a provider's batch, which runs every input \
             at once and is billed whole; the agent file's [budget] bounds each input"
        )));
    }
    let again = || -> Result<Box<dyn Iterator<Item = _> + Send>, Error> {
        let (again, _) = self::source(cmd, &base.cwd, base.timeout, shard)?;
        Ok(Box::new(Inputs::new(again, shard)))
    };
    let kept = match &cmd.resume {
        Some(path) => Some(kept_beside(path, &base.cwd)?),
        None => None,
    };
    batch::engine::run(batch, inputs, &again, wait, kept.as_ref(), jobs)
}

/// Where `--provider-batch` keeps its batch's id: `OUT.batch` beside
/// `--resume OUT`.
fn kept_beside(path: &str, cwd: &std::path::Path) -> Result<batch::engine::Kept, Error> {
    use crate::sandbox::beneath::{Anchored, Base};
    let (dir, name) = Anchored::new(Base::Cwd(cwd), path)
        .and_then(|at| Ok(at.parent(false)?))
        .map_err(|e| Error::general(format!("cannot keep a batch beside {path}: {e}")))?;
    Ok(batch::engine::Kept {
        dir,
        name: format!("{name}.batch"),
    })
}

/// `--provider-batch`'s checks, before anything is read, and
/// `--batch-wait`: a number of seconds, or of minutes, hours or days
/// (`90m`, `24h`, `2d`).
fn batch_wait(cmd: &RunCmd) -> Result<std::time::Duration, Error> {
    if cmd.batch_wait.is_some() && !cmd.provider_batch {
        return Err(Error::general("--batch-wait needs --provider-batch"));
    }
    if cmd.provider_batch && cmd.each.as_deref().is_none_or(|e| e == "-") {
        return Err(Error::general(
            "--provider-batch needs --each FILE (a file: its inputs are read twice)",
        ));
    }
    let Some(text) = &cmd.batch_wait else {
        return Ok(std::time::Duration::from_secs(24 * 3600));
    };
    // As `axe runs --since` reads its duration; a bare number is seconds.
    let bare = text.bytes().all(|b| b.is_ascii_digit());
    let spelled = if bare {
        format!("{text}s")
    } else {
        text.clone()
    };
    match humantime::parse_duration(spelled.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(Error::general(format!(
            "--batch-wait {text}: give a number of seconds, or with m, h or d (e.g. 90m, 24h)"
        ))),
    }
}

/// The inputs `cmd` names, and how many there are when that is known (a
/// regular file's lines are counted first, for the progress line).
fn source(
    cmd: &RunCmd,
    cwd: &std::path::Path,
    timeout: u64,
    shard: Option<Shard>,
) -> Result<(Source, Option<u64>), Error> {
    if let Some(path) = &cmd.each {
        let (lines, total) = Lines::open(path, cwd, shard)?;
        return Ok((Source::Lines(lines), total));
    }
    let glob = cmd.each_file.clone().unwrap_or_default();
    // The glob is walked beneath the current directory, no link followed
    // (design §8.7): an input may lie where an agent writes.
    let root = Root::cwd(cwd, Follow::NothingAsWritten)
        .map_err(|e| Error::config(format!("cannot open {}: {e}", cwd.display())))?;
    let matched = crate::resolve::glob_matches(&root, &[glob], &Deadline::after(timeout))?;
    // What is not a regular file (a FIFO would never end) is not an input;
    // a link is, and its line says it is not followed.
    let names: Vec<String> = matched
        .into_iter()
        .filter(|(_, found)| matches!(found, Found::File | Found::Link))
        .map(|(name, _)| name)
        .collect();
    let kept = |name: &&String| shard.is_none_or(|s| s.keeps_file(name));
    let total = Some(names.iter().filter(kept).count() as u64);
    let root = Arc::new(root);
    let names = names.into_iter();
    Ok((Source::Files { root, names }, total))
}

/// What a signal does first: no line is written after it and none is left
/// half written, every running input's trace gets its `run_end`, and one
/// line says how to do the rest.
fn on_signal(batch: &Batch, resume: Option<&str>, total: Option<u64>) -> interrupt::Registered {
    let (out, live, counts) = (batch.out.clone(), batch.live.clone(), batch.counts.clone());
    let file = resume.map(str::to_string).or_else(stdout_file);
    interrupt::on_signal(move |why| {
        batch::interrupt(&out, &live, why);
        let done = counts.done.load(Ordering::Relaxed) + counts.resumed.load(Ordering::Relaxed);
        let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
        let file = file.as_deref().unwrap_or("FILE");
        stderr::error_line(format!(
            "axe: the batch stopped with {done}{of} inputs done; to do the rest, run the same \
             command with --resume {file}{}\n",
            if file == "FILE" {
                " (the file its output went to)"
            } else {
                ""
            }
        ));
    })
}

/// The path of stdout when it is a regular file (`> out.jsonl`).
fn stdout_file() -> Option<String> {
    let path = std::fs::read_link("/proc/self/fd/1").ok()?;
    path.is_file().then(|| path.to_string_lossy().into_owned())
}

/// The batch's end: its record in the run log and its exit status (design
/// §11.6): 0 when every input succeeded, else the largest exit code of
/// those that did not.
fn end(batch: &Batch, log: &RunLog) -> Result<(), Error> {
    let c = &batch.counts;
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    let (done, failed, skipped, resumed) = (n(&c.done), n(&c.failed), n(&c.skipped), n(&c.resumed));
    log.answer(&format!(
        "batch: {} inputs, {} succeeded, {failed} failed, {skipped} skipped, {resumed} done before, cost {}",
        done + resumed,
        done.saturating_sub(failed + skipped),
        c.cost().column()
    ));
    if let Some(why) = batch.out.failed.lock().ok().and_then(|f| f.clone()) {
        return Err(Error::general(why));
    }
    if failed + skipped > 0 {
        return Err(Error::Batch {
            failed: failed + skipped,
            total: done + resumed,
            code: c.worst.load(Ordering::Relaxed),
        });
    }
    Ok(())
}
