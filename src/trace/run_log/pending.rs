//! One `axe run`'s record as the command fills it in (the agent at once,
//! the settings once config.toml is read, the model once resolved, the
//! ledger once opened, the answer once there is one), and the one place it
//! is written: when the command ends with its exit status, or from the
//! signal action when a signal ends the process (design §7.7). Whichever
//! comes first writes, the run's conversation first when it is kept; a
//! record is never written twice.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime};

use super::messages::{self, Kept};
use super::{ANSWER_BYTES, FIRST_LINE_CHARS, Record, Settings};
use crate::deadline::millis;
use crate::error::Error;
use crate::io::interrupt;
use crate::io::stderr;
use crate::text;
use crate::text::redact::redact;
use crate::trace::ledger::{self, Ledger};

/// The record of the run under way. Dropped while a panic unwinds, it
/// writes the panic's exit status (1).
pub struct RunLog {
    state: Arc<Mutex<State>>,
    _on_signal: Option<interrupt::Registered>,
}

/// What is known so far.
struct State {
    /// Neither `--no-log` nor `--dry-run`.
    wanted: bool,
    /// config.toml's `[run_log]`, once read: until then nothing is written
    /// (a config.toml that does not load might have turned the log off).
    settings: Option<Settings>,
    written: bool,
    started: SystemTime,
    clock: Instant,
    agent: String,
    cwd: String,
    model: Option<String>,
    ledger: Option<Arc<Ledger>>,
    trace: Option<PathBuf>,
    /// Redacted and cut to [`ANSWER_BYTES`].
    answer: String,
    /// The run's conversation, as the run has it so far.
    conversation: Option<Arc<Kept>>,
    /// The run this one continues.
    continues: Option<String>,
}

impl RunLog {
    /// The record of a run of `agent` starting now; with `wanted` false
    /// (`--no-log`, `--dry-run`) nothing is ever written. From now on a
    /// signal that ends the process writes the record first.
    pub fn start(agent: &str, wanted: bool) -> RunLog {
        let cwd = std::env::current_dir()
            .map(|d| redact(&d.to_string_lossy()))
            .unwrap_or_default();
        let state = Arc::new(Mutex::new(State {
            wanted,
            settings: None,
            written: false,
            started: SystemTime::now(),
            clock: Instant::now(),
            agent: agent.to_string(),
            cwd,
            model: None,
            ledger: None,
            trace: None,
            answer: String::new(),
            conversation: None,
            continues: None,
        }));
        let on_signal = wanted.then(|| {
            let state = state.clone();
            interrupt::on_signal(move |why| {
                let status = interrupt::ending_status().unwrap_or(1);
                write(&state, i32::from(status), Some(why.to_string()));
            })
        });
        RunLog {
            state,
            _on_signal: on_signal,
        }
    }

    /// config.toml's `[run_log]`: read, so a record may be written.
    pub fn settings(&self, settings: Settings) {
        self.with(|s| s.settings = Some(settings));
    }

    /// The model the run is on (`provider/model`).
    pub fn model(&self, model: &str) {
        let model = redact(model);
        self.with(|s| s.model = Some(model));
    }

    /// The run's ledger (its id, its tokens and tool calls) and its trace
    /// file as given (`--trace`, `AXE_TRACE`), relative to `cwd`.
    pub fn ledger(&self, ledger: &Arc<Ledger>, trace: Option<&str>, cwd: &Path) {
        let trace = trace.map(|t| crate::paths::resolve_against(cwd, t));
        let ledger = ledger.clone();
        self.with(|s| {
            s.ledger = Some(ledger);
            s.trace = trace;
        });
    }

    /// The run's answer. Redacted before it is cut, so that no part of a
    /// key is left at the cut.
    pub fn answer(&self, answer: &str) {
        let answer = text::cap(redact(answer), ANSWER_BYTES);
        self.with(|s| s.answer = answer);
    }

    /// The run's conversation, kept beside the record unless `[run_log]
    /// messages = false`; `continues`, the run it goes on with.
    pub fn conversation(&self, kept: &Arc<Kept>, continues: Option<&str>) {
        let kept = kept.clone();
        let continues = continues.map(str::to_string);
        self.with(|s| {
            s.conversation = Some(kept);
            s.continues = continues;
        });
    }

    /// The command ended with `result`: the record, with the status the
    /// process exits with. When a signal is ending the process its action
    /// writes the record instead, with the signal's status.
    pub fn finish(&self, result: &Result<(), Error>) {
        if interrupt::ending_status().is_some() {
            return;
        }
        let (status, error) = match result {
            Ok(()) => (0, None),
            Err(e) => (e.exit_code().status(), Some(e.one_line())),
        };
        write(&self.state, i32::from(status), error);
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        f(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
    }
}

impl Drop for RunLog {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let why = "internal error (a bug in axe)".to_string();
            let status = crate::error::Code::Panic.status();
            write(&self.state, i32::from(status), Some(why));
        }
    }
}

/// Writes the record once, if it is wanted and the log is on; a log that
/// cannot be written is a warning, never the run's failure.
fn write(state: &Mutex<State>, exit: i32, error: Option<String>) {
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(settings) = s.settings.filter(|c| c.enabled && s.wanted && !s.written) else {
        return;
    };
    s.written = true;
    let record = s.record(exit, error);
    let dir = match super::dir() {
        Ok(d) => d,
        Err(e) => return stderr::warn(&format!("cannot write the run log: {e}")),
    };
    // The conversation first, so that a record names one that is there.
    let kept = match settings.messages {
        true => s.save_conversation(&dir, &record.run_id),
        false => Ok(false),
    };
    // One warning: a log that cannot be written says so, not twice.
    match (super::append(&dir, &record, settings.max_bytes), kept) {
        (Err(e), kept) => {
            if kept == Ok(true) {
                messages::remove(&dir, &record.run_id);
            }
            stderr::warn(&format!("cannot write the run log: {e}"));
        }
        (Ok(()), Err(e)) => stderr::warn(&format!("cannot keep the run's conversation: {e}")),
        (Ok(()), Ok(_)) => {}
    }
}

impl State {
    /// Writes the run's conversation, when it has one, as run `id`'s;
    /// whether there was one to write.
    fn save_conversation(&self, dir: &Path, id: &str) -> Result<bool, String> {
        let Some(kept) = &self.conversation else {
            return Ok(false);
        };
        kept.save(dir, id, &self.agent, self.continues.as_deref())
            .map_err(|e| e.to_string())
    }

    fn record(&self, exit: i32, error: Option<String>) -> Record {
        let (run_id, totals, tool_calls) = match &self.ledger {
            Some(l) => (l.run_id.clone(), ledger::totals(&l.usage()), l.tool_calls()),
            // Ended before its ledger was opened: an id of the same form.
            None => (
                format!("{:016x}", fastrand::u64(..)),
                ledger::Totals::default(),
                0,
            ),
        };
        // A trace that went to a pipe or a terminal cannot be read back.
        let trace = self
            .trace
            .as_ref()
            .filter(|t| t.is_file())
            .map(|t| redact(&t.to_string_lossy()));
        Record {
            run_id,
            agent: self.agent.clone(),
            start: crate::trace::event::rfc3339(self.started),
            duration_ms: millis(self.clock.elapsed()),
            exit,
            model: self.model.clone(),
            input_tokens: totals.input_tokens,
            output_tokens: totals.output_tokens,
            cache_read_input_tokens: totals.cache_read_input_tokens,
            cost_usd: totals.cost.usd(),
            tool_calls,
            first_line: first_line(&self.answer),
            answer: self.answer.clone(),
            error: error.map(|e| redact(&e)),
            trace,
            cwd: self.cwd.clone(),
            continues: self.continues.clone(),
        }
    }
}

/// The first line of `answer` that is not blank, trimmed and cut to
/// [`FIRST_LINE_CHARS`].
fn first_line(answer: &str) -> String {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty());
    text::clip(line.unwrap_or(""), FIRST_LINE_CHARS, "…")
}
