//! Where axe keeps things (XDG directories) and what counts as an agent name.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::error::Error;

/// Every agent directory this process put on a search path.
static SEARCHED: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// `$XDG_CONFIG_HOME/axe`, else `~/.config/axe`.
pub fn config_dir() -> Result<PathBuf, Error> {
    xdg_dir("XDG_CONFIG_HOME", ".config", "config")
}

/// `$XDG_DATA_HOME/axe`, else `~/.local/share/axe`: where memory files live
/// (design §10.1).
pub fn data_dir() -> Result<PathBuf, Error> {
    xdg_dir("XDG_DATA_HOME", ".local/share", "data")
}

/// Where agent files are looked for, in order (design §3.16): the first
/// directory that has the agent's file (`<name>.toml`, or another tool's,
/// per its [`Format`]) holds the agent. axe's own directories come first;
/// the last of them is the config directory's `agents`, where new files
/// are made, unless a run left it out as untrusted (`agent::Catalog`,
/// design §8.8): it stays the home, and is not searched. Other tools'
/// directories follow (design §3.17).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDirs {
    dirs: Vec<PathBuf>,
    /// The format of each of `dirs`, in the same order.
    formats: Vec<Format>,
    home: PathBuf,
}

/// The format of the agent files of a directory on the search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// axe's own: `<name>.toml`.
    Axe,
    /// Claude Code's sub-agents: `<name>.md`, a YAML header and a prompt
    /// (design §3.17).
    Claude,
    /// Codex's custom agents: `<name>.toml`, Codex's keys (design §3.17).
    Codex,
}

impl Format {
    /// The extension of its files.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Axe => "toml",
            Format::Claude => "md",
            Format::Codex => "toml",
        }
    }

    /// The tool whose format it is, as `agents list` says it; none for
    /// axe's own.
    pub fn tool(self) -> Option<&'static str> {
        match self {
            Format::Axe => None,
            Format::Claude => Some("Claude Code"),
            Format::Codex => Some("Codex"),
        }
    }
}

/// `axe/agents` beside the work: searched from the current directory.
pub const LOCAL_AGENTS: &str = "axe/agents";

/// Claude Code's agent directory, in a project and in the home directory.
pub const CLAUDE_AGENTS: &str = ".claude/agents";

/// Codex's agent directory, in a project and in the home directory.
pub const CODEX_AGENTS: &str = ".codex/agents";

impl AgentDirs {
    /// `--agents-dir` when given (it must be a directory), then
    /// `./axe/agents` (when it is one), then `<config>/agents`.
    pub fn search(flag: Option<&str>) -> Result<AgentDirs, Error> {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
        let mut dirs = Vec::new();
        if let Some(flag) = flag {
            let dir = resolve_against(&cwd, flag);
            if !dir.is_dir() {
                return Err(Error::config(format!(
                    "--agents-dir {flag}: not a directory"
                )));
            }
            dirs.push(dir);
        }
        let home = config_dir()?.join("agents");
        let local = cwd.join(LOCAL_AGENTS);
        // Each directory once: run from the config's parent, `./axe/agents`
        // is the config's own.
        if local.is_dir() && local != home && !dirs.contains(&local) {
            dirs.push(local);
        }
        if !dirs.contains(&home) {
            dirs.push(home.clone());
        }
        let mut formats = vec![Format::Axe; dirs.len()];
        // Claude Code's, then Codex's (design §3.17).
        for (sub, format) in [
            (CLAUDE_AGENTS, Format::Claude),
            (CODEX_AGENTS, Format::Codex),
        ] {
            for dir in project_dirs(&cwd, sub) {
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                    formats.push(format);
                }
            }
        }
        SEARCHED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(dirs.iter().cloned());
        Ok(AgentDirs {
            dirs,
            formats,
            home,
        })
    }

    /// `<config_dir>/agents` alone.
    pub fn only(config_dir: &Path) -> AgentDirs {
        let home = config_dir.join("agents");
        AgentDirs {
            dirs: vec![home.clone()],
            formats: vec![Format::Axe],
            home,
        }
    }

    /// `dirs`, the last the home, all axe's own: for tests.
    #[cfg(test)]
    pub fn of(dirs: Vec<PathBuf>) -> AgentDirs {
        let home = dirs.last().cloned().unwrap_or_default();
        let formats = vec![Format::Axe; dirs.len()];
        AgentDirs {
            dirs,
            formats,
            home,
        }
    }

    /// This search path without `dir`.
    pub fn without(&self, dir: &Path) -> AgentDirs {
        let (dirs, formats) = self
            .entries()
            .filter(|(d, _)| *d != dir)
            .map(|(d, f)| (d.to_path_buf(), f))
            .unzip();
        AgentDirs {
            dirs,
            formats,
            home: self.home.clone(),
        }
    }

    /// The directories in search order, each with its format.
    pub fn entries(&self) -> impl Iterator<Item = (&Path, Format)> {
        self.dirs
            .iter()
            .map(PathBuf::as_path)
            .zip(self.formats.iter().copied())
    }

    /// The format of the files of `dir`: axe's for a directory not on the
    /// path.
    pub fn format_of(&self, dir: &Path) -> Format {
        self.entries()
            .find(|(d, _)| *d == dir)
            .map_or(Format::Axe, |(_, f)| f)
    }

    /// The directories, in search order.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The config directory's `agents`, where `agents init` writes.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The file of agent `name`: `<dir>/<name>.toml` in the first directory
    /// that has one, else where it would be in [`AgentDirs::home`]. The name
    /// is checked first (design D9): nothing is touched for a name that is
    /// not one, in any directory.
    pub fn file(&self, name: &str) -> Result<PathBuf, Error> {
        let file = format!("{name}.toml");
        Ok(self.find(name)?.unwrap_or_else(|| self.home.join(&file)))
    }

    /// The file of agent `name` in the first directory searched that has
    /// one (a dangling link counts, and fails as unreadable rather than
    /// falling through), none if no directory has one. The name is checked
    /// first, as for [`AgentDirs::file`].
    pub fn find(&self, name: &str) -> Result<Option<PathBuf>, Error> {
        Ok(self.locate(name)?.map(|(path, _)| path))
    }

    /// [`AgentDirs::find`], with the format of the file found.
    pub fn locate(&self, name: &str) -> Result<Option<(PathBuf, Format)>, Error> {
        check_agent_name(name)?;
        Ok(self
            .entries()
            .map(|(d, f)| (d.join(format!("{name}.{}", f.extension())), f))
            .find(|(p, _)| std::fs::symlink_metadata(p).is_ok()))
    }
}

/// Another tool's agent directories that exist, in search order (design
/// §3.17): `sub` (`.claude/agents`) in the current directory and each
/// parent up to the repository's root (the first holding `.git`), nearest
/// first, or in the current directory alone outside a repository; then the
/// home directory's.
fn project_dirs(cwd: &Path, sub: &str) -> Vec<PathBuf> {
    let root = cwd.ancestors().find(|d| d.join(".git").exists());
    let project: Vec<&Path> = match root {
        Some(root) => cwd
            .ancestors()
            .take_while(|d| *d != root)
            .chain([root])
            .collect(),
        None => vec![cwd],
    };
    let mut dirs: Vec<PathBuf> = project.iter().map(|d| d.join(sub)).collect();
    dirs.extend(home_dir().map(|h| h.join(sub)));
    let mut out: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if d.is_dir() && !out.contains(&d) {
            out.push(d);
        }
    }
    out
}

/// axe's own directories, which no tool of an agent may write (design
/// §8.2, §8.6): the config directory (config.toml, agents, skills), `./axe` (the
/// current directory's, whose `agents` is on the search path, and whose
/// skills and schemas its agents read), and every agent directory this
/// process searched (`--agents-dir`). Whether they exist or not.
pub fn own_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = config_dir().into_iter().collect();
    if let Ok(cwd) = std::env::current_dir() {
        dirs.extend(Path::new(LOCAL_AGENTS).parent().map(|p| cwd.join(p)));
    }
    dirs.extend(
        SEARCHED
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned(),
    );
    dirs.sort();
    dirs.dedup();
    dirs
}

/// `$XDG_STATE_HOME/axe`, else `~/.local/state/axe`: the run log's.
pub fn state_dir() -> Result<PathBuf, Error> {
    xdg_dir("XDG_STATE_HOME", ".local/state", "state")
}

/// `$XDG_CACHE_HOME/axe`, else `~/.cache/axe`: auto-made artifact
/// directories' (design §8.9).
pub fn cache_dir() -> Result<PathBuf, Error> {
    xdg_dir("XDG_CACHE_HOME", ".cache", "cache")
}

/// `<config>/config.toml`.
pub fn config_file() -> Result<PathBuf, Error> {
    Ok(config_dir()?.join("config.toml"))
}

/// An agent name is a plain file stem (design D9): `[A-Za-z0-9._-]+`, not
/// `.` or `..`. Checked before any file is touched.
pub fn check_agent_name(name: &str) -> Result<(), Error> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidAgentName {
            name: name.to_string(),
        })
    }
}

/// Expands a leading `~/` (or a lone `~`) to the home directory.
pub fn expand_tilde(path: &str) -> PathBuf {
    if path == "~" {
        if let Some(home) = home_dir() {
            return home;
        }
    } else if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = home_dir()
    {
        return home.join(rest);
    }
    PathBuf::from(path)
}

/// `path` if absolute, else `base/path`; `~` expanded.
pub fn resolve_against(base: &Path, path: &str) -> PathBuf {
    let p = expand_tilde(path);
    if p.is_absolute() { p } else { base.join(p) }
}

fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

fn xdg_dir(var: &str, fallback: &str, what: &str) -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        // The XDG spec says relative values are invalid and must be ignored.
        if dir.is_absolute() {
            return Ok(dir.join("axe"));
        }
    }
    match home_dir() {
        Some(home) => Ok(home.join(fallback).join("axe")),
        None => Err(Error::config(format!(
            "cannot find the {what} directory: neither ${var} nor $HOME is set"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_reject_paths_and_dots() {
        for good in ["a", "code-review", "v1.2_x", "..a", "a.."] {
            assert!(check_agent_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "../x", "a/b", "a\\b", "a b", "é", "a\0"] {
            assert!(
                matches!(check_agent_name(bad), Err(Error::InvalidAgentName { name }) if name == bad),
                "{bad:?}"
            );
        }
    }
}
