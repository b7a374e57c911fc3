//! One agent over many inputs (design ch. 11): `axe run AGENT --each FILE`
//! or `--each-file GLOB`. The agent is read and resolved once; each input
//! fills its templates (`template.rs`), runs as a top-level run of its own
//! with its own ledger and deadline, and becomes one JSON line
//! (`lines.rs`). The inputs are read as they are needed (`inputs.rs`), run
//! on a rayon pool of `--jobs` threads under the batch's shared bounds, and
//! their lines written in input order (`schedule.rs`); `--resume` passes
//! over what a previous output did (`resume.rs`); `progress.rs` counts and
//! shows. The command line's side (flags, the run log, the exit code) is
//! `cli/batch.rs`.

pub mod engine;
pub mod inputs;
pub mod lines;
pub mod progress;
pub mod resume;
pub mod schedule;
pub mod shard;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use crate::deadline::{Deadline, millis};
use crate::error::Error;
use crate::io::stderr::Verbose;
use crate::resolve::template::{Prompts, Template};
use crate::resolve::{Resolved, UserInput};
use crate::run::{self, Ctx, Seed};
use crate::trace::ledger::{self, Budget, Ledger};
use inputs::{Body, Input};
use progress::Counts;
use schedule::{Admit, Gate, Order};

/// Everything the inputs of a batch share.
pub struct Batch<'a> {
    /// The agent, resolved once, and its templates.
    pub resolved: &'a Resolved,
    pub prompts: &'a Prompts,
    /// `--var`s.
    pub vars: &'a BTreeMap<String, String>,
    /// `--prompt`, a template filled per input.
    pub prompt: Option<Template>,
    /// The field of a JSON Lines input that is its prompt.
    pub prompt_field: String,
    /// Each input's context is this one with a ledger and deadline of its
    /// own; its budgets are the batch's (`--max-tokens`, `--max-turns`).
    pub proto: Ctx<'a>,
    /// Seconds for each input.
    pub timeout: u64,
    /// The agent file's `[budget]`, bounding each input's tree.
    pub file_budget: (Option<u64>, Option<u64>, Option<u64>),
    /// The trace every input's ledger writes to, and the tokens of every
    /// input (the run log's record of the batch).
    pub ledger: Arc<Ledger>,
    pub gate: Gate,
    pub order: Order,
    pub out: Arc<lines::Out>,
    /// The keys of the inputs `--resume`'s file has done.
    pub done: HashSet<u64>,
    pub counts: Arc<Counts>,
    /// `--verbose`: a line per input that ended.
    pub verbose: Verbose,
    /// The ledgers of the inputs running now, for a signal's `run_end`s.
    pub live: Live,
}

/// The ledgers of the inputs running now.
pub type Live = Arc<Mutex<Vec<Arc<Ledger>>>>;

/// How one input ended.
struct Ended {
    line: String,
    code: u8,
    skipped: bool,
    tokens: u64,
    error: Option<String>,
}

impl Batch<'_> {
    /// Runs every input of `inputs` on `jobs` threads, writing their lines.
    pub fn run(&self, jobs: usize, inputs: impl Iterator<Item = Input> + Send) {
        let stop = &self.out.closed;
        schedule::run(jobs, inputs, stop, &|input| self.one(input));
    }

    /// Whether `input` runs: not once the output is closed, nor when
    /// `--resume`'s file has it (either way its place in the order is
    /// passed); else once its turn in the order has come.
    fn begin(&self, input: &Input) -> bool {
        let mut write = |l: &str| self.out.write(l);
        if self.out.closed.load(std::sync::atomic::Ordering::SeqCst) {
            self.order.done(input.seq, None, &mut write);
            return false;
        }
        if self.done.contains(&input.key()) {
            self.counts
                .resumed
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            self.order.done(input.seq, None, &mut write);
            return false;
        }
        self.order.wait_turn(input.seq);
        true
    }

    /// One input, start to line. Every input taken calls `order.done`, with
    /// a line or without, so that no thread waits on it for ever.
    fn one(&self, input: Input) {
        let seq = input.seq;
        let mut write = |l: &str| self.out.write(l);
        if !self.begin(&input) {
            return;
        }
        let started = Instant::now();
        let ended = match self.gate.admit() {
            Admit::Skip(why) => Ended {
                line: lines::failed(&input, 4, why.clone(), true, None),
                code: 4,
                skipped: true,
                tokens: 0,
                error: Some(why),
            },
            Admit::Go => {
                let (ended, turns) = self.attempt(&input, None);
                self.gate.ended(ended.tokens, turns);
                ended
            }
        };
        self.counts.ended(ended.code, ended.skipped, ended.tokens);
        self.tell(&input, &ended, started);
        self.order.done(seq, Some(ended.line), &mut write);
    }

    /// `--verbose`'s line for an input that ended.
    fn tell(&self, input: &Input, ended: &Ended, started: Instant) {
        if !self.verbose.enabled {
            return;
        }
        let ms = millis(started.elapsed());
        let how = match (&ended.error, ended.skipped) {
            (None, _) => "ok".to_string(),
            (Some(e), true) => format!("skipped: {e}"),
            (Some(e), false) => format!("failed (exit {}): {e}", ended.code),
        };
        self.verbose.line(&format!(
            "[batch] line {}: {how} ({ms} ms, {} tokens)",
            input.line, ended.tokens
        ));
    }

    /// An input of a provider's batch (`engine.rs`), its first answer
    /// `seed` from batch `id`'s results (an error: why it has none, or
    /// none: the results lack it), written in input order on this thread.
    fn one_seeded(&self, input: Input, seed: Option<Result<Arc<Seed>, String>>, id: &str) {
        let seq = input.seq;
        let mut write = |l: &str| self.out.write(l);
        if !self.begin(&input) {
            return;
        }
        let started = Instant::now();
        let no_answer = |why: String| {
            let e = Error::general(format!("batch {id}: {why}"));
            self.failure(&input, &e, None)
        };
        let ended = match seed {
            None => no_answer("no answer for this input".into()),
            Some(Err(why)) => no_answer(why),
            Some(Ok(seed)) => self.attempt(&input, Some(seed)).0,
        };
        self.counts.ended(ended.code, ended.skipped, ended.tokens);
        self.tell(&input, &ended, started);
        self.order.done(seq, Some(ended.line), &mut write);
    }

    /// Runs one admitted input (its first answer `seed`, when a provider's
    /// batch gave it); its line, and the turns it took.
    fn attempt(&self, input: &Input, seed: Option<Arc<Seed>>) -> (Ended, u64) {
        let started = Instant::now();
        let prepared = self.prepare(input);
        let (filled, message) = match prepared {
            Ok(p) => p,
            Err(e) => return (self.failure(input, &e, None), 0),
        };
        let resolved = filled.as_ref().unwrap_or(self.resolved);
        let ledger = Arc::new(self.ledger.sibling());
        let mut budgets = self.proto.budgets.clone();
        if let (None, None, None) = self.file_budget {
        } else {
            let (tokens, turns, cost) = self.file_budget;
            budgets.push(Arc::new(Budget::new(tokens, turns).costing(cost)));
        }
        let ctx = Ctx {
            ledger: ledger.clone(),
            deadline: Deadline::after(self.timeout),
            budgets,
            seed,
            // Its own spans: inputs run at once from the one context.
            place: self.proto.place.again(),
            ..self.proto.clone()
        };
        self.live(&ledger, true);
        let outcome = run::run_agent(resolved, &message, &message, &ctx);
        self.live(&ledger, false);
        let usage = ledger.usage();
        let totals = ledger::totals(&usage);
        let tokens = totals.input_tokens.saturating_add(totals.output_tokens);
        let turns = usage.iter().map(|u| u.turns).fold(0, u64::saturating_add);
        self.ledger.record_tokens(&self.proto.place, totals);
        self.counts.spent(totals.cost);
        let ended = match outcome {
            Ok(mut o) => {
                o.duration = started.elapsed();
                let json =
                    crate::report::json(resolved, &o, &ledger, &self.proto.place.path, &usage);
                Ended {
                    line: lines::answered(input, &json),
                    code: 0,
                    skipped: false,
                    tokens,
                    error: None,
                }
            }
            Err(e) => {
                let spent = lines::Spent {
                    duration_ms: millis(started.elapsed()),
                    run_id: &ledger.run_id,
                    total_input_tokens: totals.input_tokens,
                    total_output_tokens: totals.output_tokens,
                    total_cost_usd: totals.cost,
                };
                let mut ended = self.failure(input, &e, Some(&spent));
                ended.tokens = tokens;
                ended
            }
        };
        (ended, turns)
    }

    fn failure(&self, input: &Input, e: &Error, spent: Option<&lines::Spent>) -> Ended {
        let code = e.exit_code().status();
        let why = e.one_line();
        Ended {
            line: lines::failed(input, code, why.clone(), false, spent),
            code,
            skipped: false,
            tokens: 0,
            error: Some(why),
        }
    }

    /// The agent with the input's variables filled in (None: as resolved)
    /// and the user message.
    fn prepare(&self, input: &Input) -> Result<(Option<Resolved>, String), Error> {
        let file_text = match &input.body {
            Body::File { shown, root } => Some(inputs::read_file(root, shown)?),
            _ => None,
        };
        let vars = input.vars(self.vars, file_text.as_deref());
        let filled = match &input.body {
            Body::Bad { why, .. } => return Err(Error::config(why.clone())),
            _ => self.prompts.fill(self.resolved, &vars)?,
        };
        let message = input.message(self.prompt.as_ref(), &vars, &self.prompt_field, file_text)?;
        Ok((filled, message))
    }

    /// `--dry-run`: the report of what the first input would send.
    pub fn dry_run(&self, input: &Input) -> Result<String, Error> {
        let (filled, message) = self.prepare(input)?;
        let resolved = filled.as_ref().unwrap_or(self.resolved);
        Ok(crate::report::dry_run(
            resolved,
            &UserInput::Prompt(message),
            self.timeout,
        ))
    }

    /// Adds `ledger` to the inputs running now, or takes it out.
    fn live(&self, ledger: &Arc<Ledger>, running: bool) {
        let mut live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if running {
            live.push(ledger.clone());
        } else if let Some(i) = live.iter().position(|l| Arc::ptr_eq(l, ledger)) {
            live.swap_remove(i);
        }
    }
}

/// A signal is ending the process: no more lines are written to `out`, and
/// every input running (`live`) gets its `run_end` in the trace.
pub fn interrupt(out: &lines::Out, live: &Live, why: &str) {
    out.close(crate::io::stderr::PATIENCE);
    for l in live.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        l.interrupt(why);
    }
}
