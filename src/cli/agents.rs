//! `axe agents list`, `show`, `init`, `edit`, `check`, `tree` and
//! `export`.

use super::args::AgentsSub;
use super::{load_agent, load_global, print_stdout, register_global_secrets};
use crate::agent;
use crate::error::Error;
use crate::graph;
use crate::io::interrupt;
use crate::io::stderr;
use crate::paths::{self, AgentDirs, Format};
use crate::sandbox::Root;
use crate::sandbox::write::{Created, create_new, replace};
use crate::text::one_line;
use crate::text::redact::redact;
use std::path::{Path, PathBuf};

/// Runs the `agents` subcommand.
pub(super) fn main(sub: AgentsSub) -> Result<(), Error> {
    match sub {
        AgentsSub::List(l) => list(&dirs(l.agents_dir)?),
        AgentsSub::Show(s) => show(&dirs(s.agents_dir)?, &s.agent),
        AgentsSub::Init(i) => {
            let flagged = i.agents_dir.is_some();
            init(&dirs(i.agents_dir)?, flagged, &i.agent, i.model.as_deref())
        }
        AgentsSub::Edit(e) => edit(&dirs(e.agents_dir)?, &e.agent),
        AgentsSub::Check(c) => check(&dirs(c.agents_dir)?, c.agent.as_deref()),
        AgentsSub::Tree(t) => tree(&dirs(t.agents_dir)?, &t.agent),
        AgentsSub::Export(e) => export(e),
    }
}

fn dirs(flag: Option<String>) -> Result<AgentDirs, Error> {
    AgentDirs::search(flag.as_deref())
}

/// The agents on the search path with their files, each file that is not
/// one warned of.
fn agents(dirs: &AgentDirs) -> Result<Vec<(String, PathBuf)>, Error> {
    let (found, warnings) = agent::list(dirs)?;
    for w in &warnings {
        stderr::warn(w);
    }
    Ok(found)
}

/// `axe agents list`: "name - description", one line each, sorted; an
/// agent found outside the config directory says where, `(in DIR)`, and
/// another tool's file whose, `(Claude Code, in DIR)` (design §3.17).
fn list(dirs: &AgentDirs) -> Result<(), Error> {
    let mut out = String::new();
    for (id, path) in agents(dirs)? {
        let line = match agent::load(dirs, &id) {
            Ok(a) if a.config.description.trim().is_empty() => id,
            Ok(a) => format!("{id} - {}", one_line(&a.config.description)),
            Err(e) => {
                stderr::warn(&format!("skipping agent {id}: {e}"));
                continue;
            }
        };
        out.push_str(&line);
        let dir = path.parent().filter(|d| *d != dirs.home());
        let tool = dir.and_then(|d| dirs.format_of(d).tool());
        match (dir, tool) {
            (Some(dir), Some(tool)) => out.push_str(&format!("  ({tool}, in {})\n", shown(dir))),
            (Some(dir), None) => out.push_str(&format!("  (in {})\n", shown(dir))),
            (None, _) => out.push('\n'),
        }
    }
    print_stdout(&out)
}

/// A directory as `agents list` shows it: relative to the current one when
/// beneath it (`./axe/agents`).
fn shown(dir: &Path) -> String {
    let beneath = std::env::current_dir()
        .ok()
        .and_then(|cwd| dir.strip_prefix(cwd).ok().map(Path::to_path_buf));
    match beneath {
        Some(rel) => format!("./{}", rel.display()),
        None => dir.display().to_string(),
    }
}

/// `axe agents show <agent>`.
fn show(dirs: &AgentDirs, name: &str) -> Result<(), Error> {
    register_global_secrets();
    let a = load_agent(dirs, name)?;
    let tool = a.path.parent().and_then(|d| dirs.format_of(d).tool());
    print_stdout(&redact(&agent::show(&a, tool)))
}

/// `axe agents export <agent> --to claude|codex|axe [-o FILE] [--force]`:
/// the file on stdout, or written to FILE whole or not at all (never over
/// one without `--force`); each key the format cannot hold named on stderr
/// (design §3.17).
fn export(e: super::args::AgentsExport) -> Result<(), Error> {
    // It may write a file: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    let to = match e.to.as_str() {
        "claude" => Format::Claude,
        "codex" => Format::Codex,
        "axe" => Format::Axe,
        other => {
            return Err(Error::general(format!(
                "--to {other:?}: expected claude, codex or axe (see axe agents export --help)"
            )));
        }
    };
    let dirs = dirs(e.agents_dir)?;
    register_global_secrets();
    // Loaded first, as a run would: an agent that does not load is not
    // exported, and its warnings are said.
    load_agent(&dirs, &e.agent)?;
    let out = agent::export(&dirs, &e.agent, to).map_err(|err| err.looked_in(dirs.dirs()))?;
    for line in &out.lines {
        stderr::warn(line);
    }
    // No key of config.toml's leaves in the file, even one a server of it
    // holds that the file writes out (design §6.7).
    let text = redact(&out.text);
    match e.output {
        None => print_stdout(&text),
        Some(file) => write_file(Path::new(&file), &text, e.force),
    }
}

/// `text` to `path`, whole or not at all: a new file is linked in place
/// (never over one that appeared meanwhile); `force` renames it over the
/// old one. Its directory is made when missing.
fn write_file(path: &Path, text: &str, force: bool) -> Result<(), Error> {
    let cannot = |e: std::io::Error| Error::config(format!("cannot write {}: {e}", path.display()));
    // `-o .claude/agents/x.md` in a project that has none yet.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(cannot)?;
    }
    if !force {
        return match create_new(path, text.as_bytes(), 0o644).map_err(cannot)? {
            Created::Written => Ok(()),
            Created::AlreadyExists => Err(Error::config(format!(
                "{} exists: --force replaces it",
                path.display()
            ))),
        };
    }
    let (dir, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) => (
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            },
            n,
        ),
        _ => return Err(cannot(std::io::ErrorKind::InvalidInput.into())),
    };
    let root = Root::open(dir).map_err(cannot)?;
    replace(&root, name, text.as_bytes(), 0o644).map_err(cannot)
}

/// `axe agents init <agent>`: the scaffold, never over an existing file,
/// in `--agents-dir` when `flagged`, else in the config directory's agents
/// (never `./axe/agents` unasked). `model` (`--model`) replaces the
/// placeholder, checked first as a run's `--model` is: a bad one writes
/// nothing.
fn init(dirs: &AgentDirs, flagged: bool, name: &str, model: Option<&str>) -> Result<(), Error> {
    // It writes a file: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    paths::check_agent_name(name)?;
    if let Some(m) = model {
        // config.toml's named providers are models too (design §4.12).
        load_global()?
            .model_ref(m)
            .map_err(|e| Error::config(format!("--model {m:?}: {e}")))?;
    }
    let dir = match dirs.dirs().first() {
        Some(d) if flagged => d.as_path(),
        _ => dirs.home(),
    };
    let path = dir.join(format!("{name}.toml"));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::config(format!("cannot create directory {}: {e}", dir.display()))
        })?;
    }
    let text = match model {
        Some(m) => agent::scaffold_for(name, m),
        None => agent::scaffold(name),
    };
    match create_new(&path, text.as_bytes(), 0o644) {
        Ok(Created::Written) => print_stdout(&format!("{}\n", path.display())),
        Ok(Created::AlreadyExists) => Err(Error::config(format!(
            "agent config already exists: {}",
            path.display()
        ))),
        Err(e) => Err(Error::config(format!(
            "cannot write {}: {e}",
            path.display()
        ))),
    }
}

/// `axe agents edit <agent>`: $VISUAL, else $EDITOR, on the agent file.
fn edit(dirs: &AgentDirs, name: &str) -> Result<(), Error> {
    let path = dirs.file(name)?;
    if !path.is_file() {
        return Err(Error::AgentNotFound {
            name: name.to_string(),
            searched: dirs.dirs().to_vec(),
        });
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .ok_or_else(|| Error::general("no editor configured: set $VISUAL or $EDITOR"))?;
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or_default();
    let mut cmd = std::process::Command::new(program);
    cmd.args(words).arg(&path);
    crate::sandbox::inherit::clean(&mut cmd);
    let status = cmd
        .status()
        .map_err(|e| Error::general(format!("cannot start editor \"{editor}\": {e}")))?;
    if !status.success() {
        return Err(Error::general(format!(
            "editor \"{editor}\" exited with {status}"
        )));
    }
    Ok(())
}

/// `axe agents check [agent]`: the problems and a summary on stdout; exit 2
/// with a count on stderr when there is any problem.
fn check(dirs: &AgentDirs, name: Option<&str>) -> Result<(), Error> {
    let global = load_global()?;
    let roots = match name {
        Some(n) => {
            paths::check_agent_name(n)?;
            vec![n.to_string()]
        }
        None => agents(dirs)?.into_iter().map(|(id, _)| id).collect(),
    };
    let graph = graph::load(dirs, &global, &roots, u32::MAX);
    for w in &graph.warnings {
        stderr::warn(w);
    }
    let report = graph::check(&graph, &global);
    print_stdout(&redact(&graph::report_text(&report)))?;
    if report.total() == 0 {
        return Ok(());
    }
    let problems = report.describe_total();
    let scope = match name {
        Some(n) => format!("the delegation graph of {n}"),
        None => graph::count(report.checked, "agent"),
    };
    Err(Error::config(format!("{problems} in {scope}")))
}

/// `axe agents tree <agent>`: exit 2 only when the root does not load.
fn tree(dirs: &AgentDirs, name: &str) -> Result<(), Error> {
    register_global_secrets();
    paths::check_agent_name(name)?;
    // The tree is drawn whatever config.toml says; its providers' names
    // come from it when it loads.
    let global = crate::config::GlobalConfig::load()
        .map(|(g, _)| g)
        .unwrap_or_default();
    let graph = graph::load_tree(dirs, &global, name);
    for w in &graph.warnings {
        stderr::warn(w);
    }
    let text = graph::tree(&graph, name).map_err(|e| e.looked_in(dirs.dirs()))?;
    print_stdout(&redact(&text))
}
