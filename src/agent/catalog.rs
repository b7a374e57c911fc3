//! The agent files a run (or a server) uses, read at its start (design
//! §3.16, §8.8): its agents and every agent they delegate to, found on the
//! search path less the directories an agent of it could write unconfined.
//!
//! A model cannot write an agent file through the file tools (§8.2), nor
//! through a command whose sandbox keeps the protected directories
//! read-only (§8.6). An agent whose commands run without that protection
//! (`[sandbox] mode = "off"`) can: an agent directory inside its workdir or
//! its `[sandbox] write` paths is then not read, with a warning naming it,
//! unless config.toml's `trusted_agent_dirs` lists it. Leaving a directory
//! out can change which files the agents come from (and so which agents
//! there are), so the files are read again until no directory is left out.
//!
//! `axe run` reads its tree here and its sub-agents' calls use what was
//! read; a sub-agent that did not load is read again at its next call, from
//! the trusted directories only (D20). `axe serve` reads every agent it
//! serves once, at its start and on SIGHUP, and nothing after: the catalog
//! is sealed, so no request's writes reach a later request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Agent, load};
use crate::config::GlobalConfig;
use crate::error::Error;
use crate::paths::{self, AgentDirs};
use crate::tools::SandboxConfig;

/// The most times the files are read while directories are left out: each
/// time leaves out at least one of the search path's (three at most).
const MAX_ROUNDS: usize = 8;

/// The agent files of a run or a server, read.
#[derive(Debug)]
pub struct Catalog {
    /// The search path, without the directories left out.
    dirs: AgentDirs,
    /// The agents asked for, in order.
    roots: Vec<String>,
    /// Every agent read, the roots and all they delegate to: loaded, or why
    /// not.
    agents: BTreeMap<String, Result<Arc<Agent>, Failure>>,
    /// Nothing is read after the start: an agent not here is not found.
    sealed: bool,
}

/// Why an agent is not in a catalog.
#[derive(Debug, Clone, PartialEq)]
enum Failure {
    Missing,
    /// The loader's message (every such error is exit 2, as
    /// [`Error::Config`] is).
    Invalid(String),
}

/// Which agents a catalog reads.
#[derive(Debug, Clone)]
pub enum Roots {
    /// These, and what they delegate to.
    Named(Vec<String>),
    /// Every agent on the search path (axe serve without `--agent`).
    All,
}

/// What the files are judged against.
#[derive(Debug, Clone)]
pub struct Place<'a> {
    pub global: &'a GlobalConfig,
    /// The current directory: relative workdirs resolve against it.
    pub cwd: &'a Path,
    /// `--workdir`, the first root's workdir in place of its file's.
    pub workdir: Option<&'a str>,
    /// Nothing is read after the start.
    pub sealed: bool,
}

/// An agent directory left out, and why: one warning line.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    pub dir: PathBuf,
    pub agent: String,
    pub why: &'static str,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "not reading agents from {}: agent \"{}\" {} and may write there; to read them \
             anyway, list the directory in trusted_agent_dirs in config.toml",
            self.dir.display(),
            self.agent,
            self.why
        )
    }
}

impl Catalog {
    /// Reads `roots` and what they delegate to from `search`, leaving out
    /// every directory an agent read may write unconfined, unless trusted.
    /// The directories left out come back for the caller to warn of.
    pub fn read(
        search: &AgentDirs,
        roots: &Roots,
        place: &Place,
    ) -> Result<(Catalog, Vec<LeftOut>), Error> {
        let trusted = place.global.trusted_agent_dirs();
        let mut dirs = search.clone();
        let mut left_out: Vec<LeftOut> = Vec::new();
        for _ in 0..MAX_ROUNDS {
            let names = match roots {
                Roots::Named(names) => names.clone(),
                Roots::All => super::list(&dirs)?
                    .0
                    .into_iter()
                    .map(|(id, _)| id)
                    .collect(),
            };
            let agents = read_tree(&dirs, &names);
            let found = untrusted(&dirs, &agents, names.first(), place, &trusted);
            if found.is_empty() {
                let catalog = Catalog {
                    dirs,
                    roots: names,
                    agents,
                    sealed: place.sealed,
                };
                return Ok((catalog, left_out));
            }
            for l in found {
                dirs = dirs.without(&l.dir);
                left_out.push(l);
            }
        }
        Err(Error::general("the agent search path did not settle"))
    }

    /// The search path the agents were read from.
    pub fn dirs(&self) -> &AgentDirs {
        &self.dirs
    }

    /// The agents asked for, in order.
    pub fn roots(&self) -> &[String] {
        &self.roots
    }

    /// Whether nothing is read after the start.
    pub fn sealed(&self) -> bool {
        self.sealed
    }

    /// Agent `name` as read, or why it is not there: not found (a name not
    /// read at all too), or the loader's error.
    pub fn agent(&self, name: &str) -> Result<Arc<Agent>, Error> {
        match self.agents.get(name) {
            Some(Ok(agent)) => Ok(agent.clone()),
            Some(Err(Failure::Invalid(message))) => Err(Error::Config(message.clone())),
            // The directories are the command's to say (`Error::looked_in`):
            // a model's `call_agent` and a client of `axe serve` are not
            // shown them.
            Some(Err(Failure::Missing)) | None => Err(Error::AgentNotFound {
                name: name.to_string(),
                searched: Vec::new(),
            }),
        }
    }

    /// Agent `name`, if it was read and loaded.
    pub fn loaded(&self, name: &str) -> Option<Arc<Agent>> {
        self.agents.get(name)?.as_ref().ok().cloned()
    }
}

/// `roots` and every agent they delegate to, at any depth, each read once.
fn read_tree(dirs: &AgentDirs, roots: &[String]) -> BTreeMap<String, Result<Arc<Agent>, Failure>> {
    let mut agents = BTreeMap::new();
    let mut queue: Vec<String> = roots.iter().rev().cloned().collect();
    while let Some(name) = queue.pop() {
        if agents.contains_key(&name) {
            continue;
        }
        let read = match load(dirs, &name) {
            Ok(agent) => {
                queue.extend(agent.config.sub_agents.iter().rev().cloned());
                Ok(Arc::new(agent))
            }
            Err(Error::AgentNotFound { .. }) => Err(Failure::Missing),
            Err(e) => Err(Failure::Invalid(e.to_string())),
        };
        agents.insert(name, read);
    }
    agents
}

/// The directories of `dirs` that an agent of `agents` may write with its
/// commands unconfined, and are not `trusted`. `first` is the root that
/// `--workdir` applies to.
fn untrusted(
    dirs: &AgentDirs,
    agents: &BTreeMap<String, Result<Arc<Agent>, Failure>>,
    first: Option<&String>,
    place: &Place,
    trusted: &[PathBuf],
) -> Vec<LeftOut> {
    let mut found: Vec<LeftOut> = Vec::new();
    for (name, agent) in agents {
        let Ok(agent) = agent else { continue };
        let Some(why) = unconfined(&agent.config.tools.names, &agent.config.tools.sandbox) else {
            continue;
        };
        // `--workdir` is the first root's at top level; called as a
        // sub-agent (a cycle back to it) it works in its file's.
        let top = first == Some(name) && place.workdir.is_some();
        let called = agents
            .values()
            .flatten()
            .any(|a| a.config.sub_agents.contains(name));
        let mut writable = Vec::new();
        if top {
            writable.extend(writable_by(agent, place.workdir, place.cwd));
        }
        if !top || called {
            writable.extend(writable_by(agent, None, place.cwd));
        }
        for dir in dirs.dirs() {
            let real = real(dir);
            let covered = writable.iter().any(|w| real.starts_with(w));
            let known = found.iter().any(|l| &l.dir == dir);
            if covered && !known && !trusted.contains(&real) {
                found.push(LeftOut {
                    dir: dir.clone(),
                    agent: name.clone(),
                    why,
                });
            }
        }
    }
    found
}

/// Why an agent's commands may write without the read-only protection of
/// axe's directories (design §8.6), if they may: they run with the sandbox
/// off, or with that protection turned off. None for an agent that runs no
/// command.
fn unconfined(tools: &[String], sandbox: &SandboxConfig) -> Option<&'static str> {
    if !tools.iter().any(|t| t == "run_command") {
        None
    } else if !sandbox.landlock {
        Some("runs commands with its sandbox off (mode = \"off\")")
    } else if !sandbox.protect {
        Some("runs commands that may write axe's directories (protect = false)")
    } else {
        None
    }
}

/// What an agent's commands may write: its workdir (`workdir`, else its
/// file's, else the current directory), its `[sandbox] write` paths and
/// its `[artifacts] dir` (design §8.9), each with its symlinks resolved.
fn writable_by(agent: &Agent, workdir: Option<&str>, cwd: &Path) -> Vec<PathBuf> {
    let dir = match workdir.or(agent.config.workdir.as_deref()) {
        Some(d) if !d.trim().is_empty() => paths::resolve_against(cwd, d),
        _ => cwd.to_path_buf(),
    };
    let mut out: Vec<PathBuf> = agent
        .config
        .tools
        .sandbox
        .write
        .iter()
        .map(|p| real(&paths::resolve_against(&dir, p)))
        .collect();
    let named = crate::tools::artifacts::place(&agent.config.artifacts, &Default::default(), &dir);
    if let Ok(Some((artifacts, Some(_)))) = named {
        out.push(real(&artifacts));
    }
    out.push(real(&dir));
    out
}

/// `path` with its symlinks resolved, as written when it does not exist.
fn real(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("axe-catalog-{}", fastrand::u64(..)));
        std::fs::create_dir_all(&d).unwrap();
        d.canonicalize().unwrap()
    }

    fn write(dir: &Path, name: &str, extra: &str) {
        std::fs::create_dir_all(dir).unwrap();
        let text = format!("name = \"{name}\"\nmodel = \"ollama/m\"\n{extra}");
        std::fs::write(dir.join(format!("{name}.toml")), text).unwrap();
    }

    #[test]
    fn a_directory_an_unconfined_agent_may_write_is_left_out_until_trusted() {
        let root = dir();
        let (project, config) = (root.join("project"), root.join("config"));
        let local = project.join("axe/agents");
        let off =
            "tools = [\"run_command\"]\nsub_agents = [\"helper\"]\n[sandbox]\nmode = \"off\"\n";
        write(&config, "lead", off);
        write(&local, "helper", "");
        let global = GlobalConfig::default();
        let place = Place {
            global: &global,
            cwd: &project,
            workdir: None,
            sealed: false,
        };
        let dirs = AgentDirs::of(vec![local.clone(), config.clone()]);
        let (catalog, left) =
            Catalog::read(&dirs, &Roots::Named(vec!["lead".into()]), &place).unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].dir, local);
        assert!(catalog.loaded("lead").is_some());
        assert!(matches!(
            catalog.agent("helper"),
            Err(Error::AgentNotFound { .. })
        ));
        let global = GlobalConfig {
            trusted_agent_dirs: vec![local.display().to_string()],
            ..GlobalConfig::default()
        };
        let place = Place {
            global: &global,
            ..place
        };
        let (catalog, left) =
            Catalog::read(&dirs, &Roots::Named(vec!["lead".into()]), &place).unwrap();
        assert!(left.is_empty());
        assert!(catalog.loaded("helper").is_some());
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn workdir_moves_the_top_agents_writes_but_not_its_calls_to_itself() {
        let root = dir();
        let (project, elsewhere) = (root.join("project"), root.join("elsewhere"));
        let local = project.join("axe/agents");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let off = "tools = [\"run_command\"]\n[sandbox]\nmode = \"off\"\n";
        write(&local, "dev", off);
        let global = GlobalConfig::default();
        let place = Place {
            global: &global,
            cwd: &project,
            workdir: Some(elsewhere.to_str().unwrap()),
            sealed: false,
        };
        let dirs = AgentDirs::of(vec![local.clone()]);
        let roots = Roots::Named(vec!["dev".into()]);
        let (catalog, left) = Catalog::read(&dirs, &roots, &place).unwrap();
        assert!(left.is_empty(), "{left:?}");
        assert!(catalog.loaded("dev").is_some());
        // Calling itself, it works in its file's workdir: the project.
        write(&local, "dev", &format!("sub_agents = [\"dev\"]\n{off}"));
        let (catalog, left) = Catalog::read(&dirs, &roots, &place).unwrap();
        assert_eq!(left.len(), 1);
        assert!(catalog.loaded("dev").is_none());
        std::fs::remove_dir_all(root).unwrap();
    }
}
