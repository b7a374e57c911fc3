//! `axe runs [AGENT] [-n N] [--json]` and `axe runs show ID [--chrome
//! FILE]`: the run log read back (design §7.7), newest first; one run's
//! record and answer; one run's trace as Chrome trace-event JSON.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use super::args::{RunsCmd, RunsSub};
use super::{print_stdout, register_global_secrets, runs_total};
use crate::error::Error;
use crate::io::interrupt;
use crate::io::stderr;
use crate::text::redact::redact;
use crate::text::{clip, one_line};
use crate::trace::run_log::{self, Record};

/// The widest the answer's column of `axe runs` gets, in characters.
const ANSWER_COLUMN: usize = 80;

/// Runs the `runs` command.
pub(super) fn main(cmd: RunsCmd) -> Result<(), Error> {
    // `--chrome` writes a file: a signal must not leave a temporary one
    // behind (design §6.5).
    interrupt::install();
    register_global_secrets();
    match cmd.command {
        Some(RunsSub::Show(s)) => show(&s.id, s.chrome.as_deref()),
        None => {
            let since = runs_total::since(cmd.since.as_deref())?;
            if cmd.total {
                return runs_total::total(&records()?, cmd.agent.as_deref(), &since, cmd.json);
            }
            list(cmd.agent.as_deref(), cmd.n, cmd.json, &since)
        }
    }
}

/// Every record of the log, newest first (by start; of two that started
/// in the same millisecond, the one written later first). Lines that are
/// not records are skipped with one warning.
pub(super) fn records() -> Result<Vec<Record>, Error> {
    let dir = run_log::dir()?;
    let logged = run_log::read(&dir)
        .map_err(|e| Error::config(format!("cannot read the run log in {}: {e}", dir.display())))?;
    if logged.bad_lines > 0 {
        stderr::warn(&format!(
            "skipped {} line(s) of the run log in {} that are not run records",
            logged.bad_lines,
            dir.display()
        ));
    }
    let mut records = logged.records;
    records.reverse();
    records.sort_by(|a, b| b.start.cmp(&a.start));
    Ok(records)
}

/// `axe runs`: the newest `n` runs (all for 0), of `agent` when given.
fn list(agent: Option<&str>, n: usize, json: bool, since: &str) -> Result<(), Error> {
    let records = records()?;
    let shown: Vec<&Record> = records
        .iter()
        .filter(|r| agent.is_none_or(|a| r.agent == a) && *r.start >= *since)
        .take(if n == 0 { usize::MAX } else { n })
        .collect();
    if json {
        // Serializing strings and numbers cannot fail.
        let text = serde_json::to_string(&shown).unwrap_or_default();
        return print_stdout(&redact(&format!("{text}\n")));
    }
    if shown.is_empty() {
        return Ok(());
    }
    let rows: Vec<[String; 8]> = shown.iter().map(|r| row(r)).collect();
    let header = [
        "ID",
        "START (UTC)",
        "AGENT",
        "EXIT",
        "TIME",
        "TOKENS",
        "COST",
        "ANSWER",
    ]
    .map(String::from);
    let mut widths = [0usize; 8];
    for r in std::iter::once(&header).chain(&rows) {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, w)) in r.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            match i {
                // Numbers to the right.
                3..=6 => line.push_str(&format!("{}{cell}  ", " ".repeat(pad))),
                7 => line.push_str(cell),
                _ => line.push_str(&format!("{cell}{}  ", " ".repeat(pad))),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    print_stdout(&redact(&out))
}

/// One run's cells: id, start, agent, exit, duration, tokens (input plus
/// output), cost (`-`: not known), and the answer's first line (or what
/// failed).
fn row(r: &Record) -> [String; 8] {
    let tokens = r.input_tokens.saturating_add(r.output_tokens);
    let answer = match &r.error {
        Some(e) if r.exit != 0 => format!("error: {e}"),
        _ => r.first_line.clone(),
    };
    [
        one_line(&r.run_id),
        short_time(&r.start),
        one_line(&r.agent),
        r.exit.to_string(),
        duration(r.duration_ms),
        tokens.to_string(),
        r.cost_usd
            .map_or_else(|| "-".into(), |c| format!("${c:.6}")),
        clip(&one_line(&answer), ANSWER_COLUMN, "…"),
    ]
}

/// `2026-11-23T16:28:01.123Z` as `2026-11-23 16:28:01`; anything else as
/// it is.
fn short_time(start: &str) -> String {
    match start.get(..19) {
        Some(s) if start.len() == 24 && s.as_bytes()[10] == b'T' => s.replacen('T', " ", 1),
        _ => one_line(start),
    }
}

/// `850ms`, `12.3s`, `4m05s`.
fn duration(ms: u64) -> String {
    match ms {
        0..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{:.1}s", ms as f64 / 1000.0),
        _ => format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60),
    }
}

/// The one run whose id starts with `prefix`: none, or more than one, is
/// exit 2.
pub(super) fn find(prefix: &str) -> Result<Record, Error> {
    let prefix = prefix.trim();
    let records = records()?;
    let mut ids: Vec<&str> = records
        .iter()
        .map(|r| r.run_id.as_str())
        .filter(|id| !prefix.is_empty() && id.starts_with(prefix))
        .collect();
    ids.dedup();
    ids.sort_unstable();
    ids.dedup();
    match ids.as_slice() {
        [] => Err(Error::config(format!(
            "no run \"{}\" in the run log (axe runs lists them)",
            one_line(prefix)
        ))),
        [id] => {
            let id = id.to_string();
            // The newest record of that id (a record is written once; a
            // log copied together may hold it twice).
            Ok(records
                .into_iter()
                .find(|r| r.run_id == id)
                .unwrap_or_default())
        }
        many => Err(Error::config(format!(
            "run id \"{prefix}\" is ambiguous: {} runs start with it ({}{}); give more of it",
            many.len(),
            many.iter().take(5).copied().collect::<Vec<_>>().join(", "),
            if many.len() > 5 { ", ..." } else { "" }
        ))),
    }
}

/// `axe runs show ID`: the record, labelled, then the conversation when
/// the run kept one, else the answer; with
/// `--chrome`, the picture of its trace instead.
fn show(prefix: &str, chrome: Option<&str>) -> Result<(), Error> {
    let r = find(prefix)?;
    if let Some(out) = chrome {
        return write_chrome(&r, out);
    }
    let none = || "-".to_string();
    let mut text = String::new();
    let mut label = |name: &str, value: String| {
        text.push_str(&format!("{name:<11} {}\n", one_line(&value)));
    };
    label("run", r.run_id.clone());
    label("agent", r.agent.clone());
    label("start", r.start.clone());
    label("duration", format!("{} ms", r.duration_ms));
    label("exit", r.exit.to_string());
    label("model", r.model.clone().unwrap_or_else(none));
    label(
        "tokens",
        format!(
            "{} in ({} read from cache), {} out",
            r.input_tokens, r.cache_read_input_tokens, r.output_tokens
        ),
    );
    label("cost", r.cost_usd.map_or_else(none, |c| format!("${c:.6}")));
    label("tool calls", r.tool_calls.to_string());
    label("trace", r.trace.clone().unwrap_or_else(none));
    label("directory", r.cwd.clone());
    if let Some(e) = &r.error {
        label("error", e.clone());
    }
    if let Some(id) = &r.continues {
        label("continues", id.clone());
    }
    // The conversation, when the run kept one, ends with the answer whole.
    if let Some(conversation) = super::continued::printed(&r.run_id) {
        text.push_str(&conversation);
    } else if !r.answer.is_empty() {
        text.push('\n');
        text.push_str(&r.answer);
        if !r.answer.ends_with('\n') {
            text.push('\n');
        }
    }
    print_stdout(&redact(&text))
}

/// `--chrome FILE`: the run's trace lines as Chrome trace-event JSON,
/// written to `out` at once (or to stdout for `-`).
fn write_chrome(r: &Record, out: &str) -> Result<(), Error> {
    let Some(trace) = &r.trace else {
        return Err(Error::config(format!(
            "run {} has no trace to draw: it ran without --trace (run with --trace FILE \
             or AXE_TRACE=FILE to keep one)",
            r.run_id
        )));
    };
    let file = File::open(trace)
        .map_err(|e| Error::config(format!("cannot read the trace file {trace}: {e}")))?;
    let picture = run_log::chrome::picture(BufReader::new(file), &r.run_id)
        .map_err(|e| Error::config(format!("{trace}: {e}")))?;
    if out == "-" {
        return print_stdout(&picture.json);
    }
    let path = crate::paths::resolve_against(Path::new("."), out);
    replace(&path, picture.json.as_bytes())
        .map_err(|e| Error::config(format!("cannot write {out}: {e}")))?;
    print_stdout(&format!(
        "{out}: {} slices on {} tracks (open it in https://ui.perfetto.dev or chrome://tracing)\n",
        picture.slices, picture.tracks
    ))
}

/// Writes `contents` to `path` through a temporary file beside it, renamed
/// over it: a reader sees the old file or the whole new one.
fn replace(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(
        || "chrome.json".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    // A signal while it exists removes it (and ends the process).
    let _temp = interrupt::TempFile::new(&tmp);
    let _ = std::fs::remove_file(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| f.write_all(contents).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
