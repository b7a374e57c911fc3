//! The run log (design §7.7): one JSON line per top-level `axe run`,
//! appended to `$XDG_STATE_HOME/axe/runs.jsonl`, and read back by `axe
//! runs`. This file owns the record, the `[run_log]` settings and the file:
//! whole lines under a lock, rotation past a size, reading both files back.
//! What a run fills in as it goes is `pending.rs`'s; its conversation,
//! kept in a file beside the log, `messages.rs`'s; the Chrome trace-event
//! picture of a run is `chrome.rs`'s.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::Error;

pub mod chrome;
pub mod messages;
mod pending;

pub use pending::RunLog;

/// The log's file in the state directory.
pub const FILE: &str = "runs.jsonl";
/// The one older file kept by rotation.
pub const OLD_FILE: &str = "runs.jsonl.1";
/// Taken (flock) around every append and rotation; a file of its own, so
/// that the lock outlives a rotation's rename.
const LOCK_FILE: &str = "runs.lock";
/// The size past which `runs.jsonl` becomes `runs.jsonl.1` (10 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 10 * 1024 * 1024;
/// The most bytes of an answer a record keeps (64 KiB), cut with a marker.
pub const ANSWER_BYTES: usize = 64 * 1024;
/// The most characters of the answer's first line a record keeps.
pub const FIRST_LINE_CHARS: usize = 200;
/// The longest a run waits for another run's lock before giving up on its
/// record (with a warning): a lock is held for one write.
const LOCK_PATIENCE: Duration = Duration::from_secs(2);
/// The largest log file read back: twice the largest rotation size a user
/// would set is far below this; a bigger file is read from its end.
const READ_LIMIT: u64 = 256 * 1024 * 1024;

/// `[run_log]` in config.toml.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Whether `axe run` appends a record (default true).
    pub enabled: bool,
    /// `runs.jsonl` is rotated before a line would take it past this size.
    pub max_bytes: u64,
    /// Whether a run's conversation is kept beside its record, for
    /// `--continue` (default true).
    pub messages: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            enabled: true,
            max_bytes: DEFAULT_MAX_BYTES,
            messages: true,
        }
    }
}

/// One run, as its line in the log has it (in this key order). A line
/// written by a later axe with more keys still reads; a missing key reads
/// as its default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Record {
    /// The ledger's run id: the trace's `run_id`, `--json`'s `run_id`.
    pub run_id: String,
    pub agent: String,
    /// When the command started, RFC 3339 in UTC with milliseconds.
    pub start: String,
    pub duration_ms: u64,
    /// The status the process exited with (130 for Ctrl-C).
    pub exit: i32,
    /// `provider/model`, once it was known.
    pub model: Option<String>,
    /// The whole tree's tokens, as `--json`'s totals count them.
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    /// The whole tree's cost in USD; none when a model had no price
    /// (design §7.8), and in lines of an axe before it.
    pub cost_usd: Option<f64>,
    /// Tool calls run by every agent of the tree.
    pub tool_calls: u64,
    /// The answer's first non-blank line, cut to [`FIRST_LINE_CHARS`].
    pub first_line: String,
    /// The answer, cut to [`ANSWER_BYTES`] with a marker.
    pub answer: String,
    /// What failed, on one line; none for a run that answered.
    pub error: Option<String>,
    /// The trace file (absolute), when the run wrote one to a file.
    pub trace: Option<String>,
    /// The directory the command ran in.
    pub cwd: String,
    /// The run this one continued (`--continue`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continues: Option<String>,
}

/// What [`read`] found: the records in file order, and how many lines were
/// not records.
#[derive(Debug, Default)]
pub struct Logged {
    pub records: Vec<Record>,
    pub bad_lines: usize,
}

/// `$XDG_STATE_HOME/axe`, else `~/.local/state/axe`.
pub fn dir() -> Result<PathBuf, Error> {
    crate::paths::state_dir()
}

/// Appends `record` to the log in `dir` as one line, rotating first when
/// the line would take the file past `max_bytes`. The line is written whole
/// or not at all, under the lock.
pub fn append(dir: &Path, record: &Record, max_bytes: u64) -> io::Result<()> {
    // Serializing strings and numbers cannot fail.
    let mut line = serde_json::to_string(record).unwrap_or_default();
    line.push('\n');
    make_dir(dir)?;
    // The runs of one process (`axe serve`'s, `axe mcp serve`'s calls) take
    // turns here, each woken as the one before is done: at the flock, which
    // is polled, 64 runs ending together waited out 1 ms sleeps in turn
    // (design §9.6's 64 calls at once). The flock is for other processes.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let lock = open_private(&dir.join(LOCK_FILE), false)?;
    lock_within(&lock, libc::LOCK_EX, LOCK_PATIENCE)?;
    let path = dir.join(FILE);
    let mut file = open_private(&path, true)?;
    let mut size = file.metadata()?.len();
    let len = u64::try_from(line.len()).unwrap_or(u64::MAX);
    if size > 0 && size.saturating_add(len) > max_bytes {
        drop_conversations(dir);
        std::fs::rename(&path, dir.join(OLD_FILE))?;
        file = open_private(&path, true)?;
        size = file.metadata()?.len();
    }
    // A file left ending in part of a line (by another program): this
    // record starts on a line of its own.
    if size > 0 && last_byte(&file, size - 1)? != b'\n' {
        line.insert(0, '\n');
    }
    // The lock goes with `lock`'s descriptor, after the write.
    write_whole(&mut file, size, line.as_bytes())
}

/// The conversations of the runs whose records the rotation under way
/// drops (those of `runs.jsonl.1`): the log's bound is theirs too.
fn drop_conversations(dir: &Path) {
    let Ok(text) = read_text(&dir.join(OLD_FILE)) else {
        return;
    };
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<Record>(line) {
            messages::remove(dir, &r.run_id);
        }
    }
}

/// Every record of both files in `dir`, oldest file first, each in file
/// order. A line that is not a record is counted, not fatal; missing files
/// are empty.
pub fn read(dir: &Path) -> io::Result<Logged> {
    // A shared lock, so that no rotation happens between the two reads;
    // without a lock file (nothing ever written) there is nothing to read.
    let lock = match open_read(&dir.join(LOCK_FILE)) {
        Ok(f) => Some(f),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    if let Some(lock) = &lock {
        lock_within(lock, libc::LOCK_SH, LOCK_PATIENCE)?;
    }
    let mut out = Logged::default();
    for name in [OLD_FILE, FILE] {
        let text = match read_text(&dir.join(name)) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Record>(line) {
                Ok(r) if !r.run_id.is_empty() => out.records.push(r),
                _ => out.bad_lines += 1,
            }
        }
    }
    Ok(out)
}

/// The file's text, at most [`READ_LIMIT`] bytes of its end (the first,
/// partial, line of a file cut that way is counted bad).
fn read_text(path: &Path) -> io::Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut file = open_read(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    let len = file.metadata()?.len();
    if len > READ_LIMIT {
        file.seek(SeekFrom::Start(len - READ_LIMIT))?;
    }
    let mut bytes = Vec::new();
    file.take(READ_LIMIT).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// `path` opened to read, never blocking, and never through a link at its
/// name (design §8.7): the log is axe's own file.
fn open_read(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path);
    match opened {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(io::Error::other(format!(
            "{}: {}",
            path.display(),
            crate::sandbox::read::LINK_REFUSED
        ))),
        other => other,
    }
}

/// Creates `dir` (and its parents) with mode 0700 where missing.
fn make_dir(dir: &Path) -> io::Result<()> {
    let mut b = std::fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir)
}

/// `path` opened to append (`append`) or to lock, created 0600 when
/// missing. Never blocks in open, whatever is at `path`; only a regular
/// file is taken.
fn open_private(path: &Path, append: bool) -> io::Result<File> {
    let mut o = OpenOptions::new();
    if append {
        o.read(true).append(true);
    } else {
        o.read(true).write(true);
    }
    o.create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = o.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// Takes `how` (`LOCK_EX`, `LOCK_SH`) on `file`, waiting at most
/// `patience` for another process to let it go.
#[cfg(unix)]
fn lock_within(file: &File, how: libc::c_int, patience: Duration) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let started = Instant::now();
    loop {
        // SAFETY: flock on a descriptor `file` owns, without blocking.
        if unsafe { libc::flock(file.as_raw_fd(), how | libc::LOCK_NB) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) | Some(libc::EINTR) => {}
            _ => return Err(e),
        }
        if started.elapsed() >= patience {
            return Err(io::Error::other(format!(
                "the log stayed locked by another process for {:.0}s",
                patience.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(not(unix))]
fn lock_within(_: &File, _: i32, _: Duration) -> io::Result<()> {
    Ok(())
}

/// Appends `line` in one write (O_APPEND) whole, or not at all: a write cut
/// short (a full disk) is undone by cutting the file back to `before`, its
/// size under the lock.
fn write_whole(file: &mut File, before: u64, line: &[u8]) -> io::Result<()> {
    file.write_all(line).inspect_err(|_| {
        let _ = file.set_len(before);
    })
}

/// The byte at `offset` of `file`.
fn last_byte(file: &File, offset: u64) -> io::Result<u8> {
    let mut byte = [0u8; 1];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(&mut byte, offset)?;
    }
    #[cfg(not(unix))]
    let _ = (file, offset);
    Ok(byte[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("axe-runlog-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn record(id: &str) -> Record {
        Record {
            run_id: id.into(),
            agent: "a".into(),
            ..Record::default()
        }
    }

    #[test]
    fn a_line_past_max_bytes_rotates_and_one_old_file_is_kept() {
        let d = temp("rotate");
        append(&d, &record("1"), 1).unwrap();
        append(&d, &record("2"), 1).unwrap();
        append(&d, &record("3"), 1).unwrap();
        let r = read(&d).unwrap();
        let ids: Vec<&str> = r.records.iter().map(|r| r.run_id.as_str()).collect();
        assert_eq!(ids, ["2", "3"]);
        assert_eq!(r.bad_lines, 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_file_ending_in_half_a_line_gets_the_record_on_a_line_of_its_own() {
        let d = temp("half");
        make_dir(&d).unwrap();
        std::fs::write(d.join(FILE), "{\"run_id\":\"x\",\"ag").unwrap();
        append(&d, &record("1"), DEFAULT_MAX_BYTES).unwrap();
        let r = read(&d).unwrap();
        assert_eq!(r.records.len(), 1);
        assert_eq!(r.bad_lines, 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
