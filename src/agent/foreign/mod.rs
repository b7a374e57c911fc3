//! Agent files of other tools (design §3.17): each format in a file of its
//! own, which turns one file into axe's own agent file — a TOML table of
//! axe's keys — with the warnings and notes of the import. The table is
//! then validated as any agent file is, so the rest of axe never knows
//! where an agent came from; only `agents list` says it, from the search
//! path (`paths::Format`). `export` goes the other way: any agent, axe's
//! own or imported, written in any of the three formats.

mod claude;
mod codex;
mod export;

pub use export::{Exported, export};

use std::path::Path;

use super::{Agent, files_of};
use crate::config::GlobalConfig;
use crate::error::Error;
use crate::paths::{self, AgentDirs, Format};

/// A file of another tool as axe's agent file.
struct Imported {
    /// axe's keys, as an agent file would have them.
    table: toml::Table,
    /// Keys and tools of the file that axe does not use, one line each.
    warnings: Vec<String>,
    /// What axe does differently from the tool, for `--dry-run`.
    notes: Vec<String>,
}

/// What an import may need beyond the file: config.toml (its model
/// aliases, its MCP servers) and the other agents of other tools on the
/// search path (Claude Code's `Task`).
struct Context<'a> {
    global: GlobalConfig,
    dirs: &'a AgentDirs,
    id: &'a str,
}

impl Context<'_> {
    /// The other agents of Claude Code's and Codex's formats, sorted, the
    /// one read left out: read only when a file asks for them (`Task`
    /// without names), since a scan of every directory for each file made
    /// `agents list` quadratic (1,000 files: 5.3 s).
    fn siblings(&self) -> Result<Vec<String>, String> {
        siblings(self.dirs, self.id).map_err(|e| e.to_string())
    }
}

/// Agent `id` from `text`, the file at `path` in another tool's `format`.
/// A file that cannot be read as its format names the file (exit 2).
pub(super) fn import(
    format: Format,
    dirs: &AgentDirs,
    id: &str,
    path: &Path,
    text: &str,
) -> Result<Agent, Error> {
    if format == Format::Axe {
        return super::parse(id, path, text);
    }
    let imported = read(format, dirs, id, path, text)?;
    // As text, through the reader of axe's own files: deserializing the
    // table in place built a second copy of that reader (+100 KiB, measured).
    let mut agent = super::parse(id, path, &imported.table.to_string())?;
    agent.warnings.extend(imported.warnings);
    agent.notes = imported.notes;
    Ok(agent)
}

/// Another tool's file as axe's keys, not yet validated.
fn read(
    format: Format,
    dirs: &AgentDirs,
    id: &str,
    path: &Path,
    text: &str,
) -> Result<Imported, Error> {
    let invalid = |why: String| Error::InvalidAgentFile {
        path: path.to_path_buf(),
        why,
    };
    let cx = Context {
        global: global(),
        dirs,
        id,
    };
    match format {
        Format::Claude => claude::read(&cx, id, text),
        Format::Codex => codex::read(&cx, id, text),
        Format::Axe => Err("axe's own file is not imported".into()),
    }
    .map_err(invalid)
}

/// config.toml, or its defaults: it is read by every command that runs an
/// agent before it gets here; one that does not load is that command's to
/// report.
fn global() -> GlobalConfig {
    GlobalConfig::load().map(|(g, _)| g).unwrap_or_default()
}

/// Every agent of another tool (Claude Code's, Codex's) on the search path
/// but `id`, sorted, once each: what a Claude Code `Task` reaches, as Claude
/// Code reaches every agent it finds (design §3.17).
fn siblings(dirs: &AgentDirs, id: &str) -> Result<Vec<String>, Error> {
    let mut names = Vec::new();
    for (dir, f) in dirs.entries().filter(|(_, f)| *f != Format::Axe) {
        for (name, _) in files_of(dir, f.extension())? {
            if name != id && paths::check_agent_name(&name).is_ok() {
                names.push(name);
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}
