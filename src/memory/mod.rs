//! Memory (design ch. 10): what an agent with `[memory] enabled = true`
//! did in its past runs, kept in a markdown file of its own in the Go
//! original's format, so that a file the original wrote is read as is.
//! [`load`] reads its newest entries for the system prompt when the agent
//! is resolved; [`remember`] appends one entry when a run of it succeeds,
//! for the top-level agent and every sub-agent alike (both go through
//! `run::run_agent`). [`read_log`] and [`trim`] are `axe gc`'s. The entry
//! format is in `entries`, the file's locking, bounds and atomic trim in
//! `file`. The file is opened as its path is written, beneath the directory
//! it is written against, with no link followed ([`Place`], design §8.7).

mod entries;
mod file;

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

pub use file::{TRIM_READ_LIMIT, Trimmed, backup_path};

use crate::error::Error;
use crate::io::stderr;
use crate::paths;
use crate::sandbox::beneath::{Anchored, Base};

/// `[memory]`, validated: the Go original's keys and meanings.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryConfig {
    pub enabled: bool,
    /// The memory file, as written (never blank); None means the default,
    /// `$XDG_DATA_HOME/axe/memory/<agent>.md`.
    pub path: Option<String>,
    /// Entries loaded into the system prompt, the newest; 0 means all.
    pub last_n: u64,
    /// At or over this many entries a run warns to run `axe gc`; 0: never.
    pub max_entries: u64,
}

/// The most of a memory file a run reads (its tail): the entries loaded
/// into the system prompt come from these bytes, and `axe gc` sends no
/// more than this to its model.
pub const READ_LIMIT: u64 = 1 << 20;

/// What comes before the entries in the system prompt: the Go original's
/// separator and heading, byte for byte.
pub const SECTION: &str = "\n\n---\n\n## Memory\n\n";

/// Where a memory file is: its path as shown, and how it is opened (design
/// §8.7): `path` as written against the current directory, or the default
/// (`axe/memory/<agent>.md`) against the data directory's root, each time
/// beneath that anchor with no link followed.
#[derive(Debug, Clone, PartialEq)]
pub struct Place {
    pub path: PathBuf,
    /// What it is written against, and whether that is the current
    /// directory (opened as `.`).
    base: PathBuf,
    cwd: bool,
    written: String,
}

impl Place {
    /// The anchor opened now; with `create`, a data directory root that is
    /// missing is made first (the user named it).
    fn open(&self, create: bool) -> io::Result<Anchored> {
        if self.cwd {
            return Anchored::new(Base::Cwd(&self.base), &self.written);
        }
        if create && !self.base.exists() {
            std::fs::create_dir_all(&self.base)?;
        }
        Anchored::new(Base::Dir(&self.base), &self.written)
    }

    /// At most `limit` bytes of the file's tail; None when it (or the
    /// directory it is written against) is missing.
    fn read_tail(&self, limit: u64) -> io::Result<Option<file::Tail>> {
        match self.open(false) {
            Ok(at) => file::read_tail(&at, limit),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// An agent's memory as one run sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// The agent's name (its file's stem), for warnings.
    pub agent: String,
    pub place: Place,
    pub config: MemoryConfig,
    /// The entries that go into the system prompt, as written; empty when
    /// there are none.
    pub loaded: String,
    /// How many entries `loaded` holds.
    pub count: usize,
    /// How many entries were read (all of the file's unless it is over
    /// [`READ_LIMIT`]).
    pub total: usize,
}

/// What `axe gc` read of a memory file.
#[derive(Debug)]
pub struct Log {
    /// Entries in the file.
    pub entries: usize,
    /// The newest entries within [`READ_LIMIT`]: what is sent to the model.
    pub send: String,
    /// How many entries `send` holds.
    pub sent: usize,
}

impl Memory {
    /// The memory section of the system prompt; empty without entries.
    pub fn section(&self) -> String {
        if self.loaded.is_empty() {
            String::new()
        } else {
            format!("{SECTION}{}", self.loaded)
        }
    }

    /// Drops the oldest loaded entries until the section is at most `max`
    /// bytes; says so when it drops any.
    pub fn fit(&mut self, max: u64) {
        let size = |m: &Memory| u64::try_from(m.section().len()).unwrap_or(u64::MAX);
        if size(self) <= max {
            return;
        }
        let before = self.count;
        // The newest entries that fit; the oldest (and anything before
        // them) go first.
        let len = self.loaded.len();
        let fits =
            |from: usize| u64::try_from(SECTION.len() + (len - from)).is_ok_and(|n| n <= max);
        let cut = entries::starts(self.loaded.as_bytes())
            .into_iter()
            .find(|&at| fits(at))
            .unwrap_or(len);
        self.loaded.replace_range(..cut, "");
        self.count = entries::starts(self.loaded.as_bytes()).len();
        stderr::warn_once(&format!(
            "memory of \"{}\": {} of its {before} entries fit within max_prompt_bytes ({max} bytes left after the prompt and skill)",
            self.agent, self.count
        ));
    }
}

/// Where the memory file of agent `id` is: `path` as written (`~`
/// expanded, a relative one against the current directory `cwd`, as the Go
/// original takes it), else `$XDG_DATA_HOME/axe/memory/<id>.md`.
pub fn file_path(id: &str, config: &MemoryConfig, cwd: &Path) -> Result<PathBuf, Error> {
    place(id, config, cwd).map(|p| p.path)
}

/// [`file_path`] with how the file is opened.
pub fn place(id: &str, config: &MemoryConfig, cwd: &Path) -> Result<Place, Error> {
    let place = match &config.path {
        Some(p) => Place {
            path: paths::resolve_against(cwd, p),
            base: cwd.to_path_buf(),
            cwd: true,
            written: p.clone(),
        },
        None => {
            let dir = paths::data_dir()?;
            let written = format!("axe/memory/{id}.md");
            let base = dir.parent().map_or(dir.clone(), Path::to_path_buf);
            Place {
                path: base.join(&written),
                base,
                cwd: false,
                written,
            }
        }
    };
    Ok(place)
}

/// The memory of agent `id` for a run: None unless `[memory]` enables it.
/// Nothing here fails a run: a file that cannot be found or read, is not
/// text, or is too large is warned about, and the run goes on with what
/// could be read (design §10.4). At or over `max_entries`, one warning
/// names `axe gc`.
pub fn load(id: &str, config: Option<&MemoryConfig>, cwd: &Path) -> Option<Memory> {
    let config = config.filter(|c| c.enabled)?;
    let place = match place(id, config, cwd) {
        Ok(p) => p,
        Err(e) => {
            stderr::warn_once(&format!("failed to load memory for \"{id}\": {e}"));
            return None;
        }
    };
    let mut memory = Memory {
        agent: id.to_string(),
        place,
        config: config.clone(),
        loaded: String::new(),
        count: 0,
        total: 0,
    };
    let tail = match memory.place.read_tail(READ_LIMIT) {
        Ok(Some(t)) => t,
        Ok(None) => return Some(memory),
        Err(e) => {
            warn(
                &memory,
                &format!("cannot be read ({e}); this run goes on without it"),
            );
            return Some(memory);
        }
    };
    if tail.bytes.contains(&0) {
        warn(
            &memory,
            "holds NUL bytes, so it is not text; it is not loaded",
        );
        return Some(memory);
    }
    let text = match String::from_utf8(tail.bytes) {
        Ok(t) => t,
        Err(e) => {
            warn(
                &memory,
                "is not valid UTF-8; its invalid bytes are replaced in the prompt",
            );
            String::from_utf8_lossy(e.as_bytes()).into_owned()
        }
    };
    let (at, count) = entries::last(text.as_bytes(), config.last_n);
    memory.total = entries::starts(text.as_bytes()).len();
    memory.loaded = text[at..].to_string();
    memory.count = count;
    if tail.cut {
        warn(
            &memory,
            &format!(
                "is {} bytes; only its last {} MiB ({} entries) is read; run 'axe gc {id}' to trim it",
                tail.size,
                READ_LIMIT >> 20,
                memory.total
            ),
        );
    } else if config.max_entries > 0
        && u64::try_from(memory.total).unwrap_or(u64::MAX) >= config.max_entries
    {
        stderr::warn_once(&format!(
            "agent \"{id}\" memory has {} entries (max_entries: {}); run 'axe gc {id}' to trim it",
            memory.total, config.max_entries
        ));
    }
    Some(memory)
}

/// Appends the entry of a run that succeeded: `task` (never stdin, design
/// §10.2) and the answer `result`, with every key redacted, as in the
/// trace (design §6.7). A failure is a warning: the run itself succeeded.
pub fn remember(memory: &Memory, task: &str, result: &str) {
    let entry = crate::text::redact::redact(&entries::format(SystemTime::now(), task, result));
    let appended = memory
        .place
        .open(true)
        .and_then(|a| file::append(&a, &entry));
    if let Err(e) = appended {
        stderr::warn_once(&format!(
            "failed to save memory for \"{}\" to {}: {e}",
            memory.agent,
            memory.place.path.display()
        ));
    }
}

/// What `axe gc` analyses: the whole memory file (at most
/// [`TRIM_READ_LIMIT`]), and the newest entries within [`READ_LIMIT`] to
/// send. A missing file is `Ok(None)`.
pub fn read_log(place: &Place) -> io::Result<Option<Log>> {
    let Some(tail) = place.read_tail(TRIM_READ_LIMIT)? else {
        return Ok(None);
    };
    if tail.cut {
        return Err(io::Error::other(format!(
            "it is {} bytes, over the {} MiB axe gc reads; trim it by hand",
            tail.size,
            TRIM_READ_LIMIT >> 20
        )));
    }
    let bytes = &tail.bytes;
    let starts = entries::starts(bytes);
    let floor = bytes
        .len()
        .saturating_sub(usize::try_from(READ_LIMIT).unwrap_or(usize::MAX));
    let first = starts.iter().position(|&s| s >= floor);
    let (from, sent) = match first {
        Some(i) if floor > 0 => (starts[i], starts.len() - i),
        _ => (0, starts.len()),
    };
    Ok(Some(Log {
        send: String::from_utf8_lossy(&bytes[from..]).into_owned(),
        entries: starts.len(),
        sent,
    }))
}

/// Keeps the last `keep` entries of the memory file at `place` (see
/// `file::trim`).
pub fn trim(place: &Place, keep: u64) -> io::Result<Trimmed> {
    file::trim(
        &place.open(false)?,
        usize::try_from(keep).unwrap_or(usize::MAX),
    )
}

/// A warning about the memory file of `m`: `memory file <path> <what>`.
fn warn(m: &Memory, what: &str) {
    stderr::warn_once(&format!("memory file {} {what}", m.place.path.display()));
}
