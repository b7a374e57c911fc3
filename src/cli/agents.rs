//! `axe agents list`, `show`, `init`, `edit`, `check` and `tree`.

use super::args::AgentsSub;
use super::{load_agent, load_global, print_stdout, register_global_secrets};
use crate::agent;
use crate::error::Error;
use crate::graph;
use crate::interrupt;
use crate::paths;
use crate::redact::redact;
use crate::stderr;
use crate::text::one_line;
use crate::write::{Created, create_new};

/// Runs the `agents` subcommand.
pub(super) fn main(sub: AgentsSub) -> Result<(), Error> {
    match sub {
        AgentsSub::List(_) => list(),
        AgentsSub::Show(s) => show(&s.agent),
        AgentsSub::Init(i) => init(&i.agent),
        AgentsSub::Edit(e) => edit(&e.agent),
        AgentsSub::Check(c) => check(c.agent.as_deref()),
        AgentsSub::Tree(t) => tree(&t.agent),
    }
}

/// The agents in the agents directory, each file that is not one warned of.
fn agent_ids() -> Result<Vec<String>, Error> {
    let (ids, warnings) = agent::list_ids()?;
    for w in &warnings {
        stderr::warn(w);
    }
    Ok(ids)
}

/// `axe agents list`: "name - description", one line each, sorted.
fn list() -> Result<(), Error> {
    let mut out = String::new();
    for id in agent_ids()? {
        match agent::load(&id) {
            Ok(a) if a.config.description.trim().is_empty() => out.push_str(&format!("{id}\n")),
            Ok(a) => out.push_str(&format!("{id} - {}\n", one_line(&a.config.description))),
            Err(e) => stderr::warn(&format!("skipping agent {id}: {e}")),
        }
    }
    print_stdout(&out)
}

/// `axe agents show <agent>`.
fn show(name: &str) -> Result<(), Error> {
    register_global_secrets();
    let a = load_agent(name)?;
    print_stdout(&redact(&agent::show(&a)))
}

/// `axe agents init <agent>`: the scaffold, never over an existing file.
fn init(name: &str) -> Result<(), Error> {
    // It writes a file: a signal must not leave a temporary one behind
    // (design §6.5).
    interrupt::install();
    let path = paths::agent_file(name)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::config(format!("cannot create directory {}: {e}", dir.display()))
        })?;
    }
    match create_new(&path, agent::scaffold(name).as_bytes(), 0o644) {
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
fn edit(name: &str) -> Result<(), Error> {
    let path = paths::agent_file(name)?;
    if !path.is_file() {
        return Err(Error::AgentNotFound {
            name: name.to_string(),
        });
    }
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .ok_or_else(|| Error::general("no editor configured: set $VISUAL or $EDITOR"))?;
    let mut words = editor.split_whitespace();
    let program = words.next().unwrap_or_default();
    let status = std::process::Command::new(program)
        .args(words)
        .arg(&path)
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
fn check(name: Option<&str>) -> Result<(), Error> {
    let global = load_global()?;
    let config_dir = paths::config_dir()?;
    let roots = match name {
        Some(n) => {
            paths::check_agent_name(n)?;
            vec![n.to_string()]
        }
        None => agent_ids()?,
    };
    let graph = graph::load(&config_dir, &roots, u32::MAX);
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
fn tree(name: &str) -> Result<(), Error> {
    register_global_secrets();
    let config_dir = paths::config_dir()?;
    paths::check_agent_name(name)?;
    let graph = graph::load_tree(&config_dir, name);
    for w in &graph.warnings {
        stderr::warn(w);
    }
    let text = graph::tree(&graph, name)?;
    print_stdout(&redact(&text))
}
