//! The delegation graph: every agent reachable from a root through
//! `sub_agents`, loaded without running anything. It owns `axe agents check`
//! (missing and invalid agents, bad model strings and output schemas,
//! missing API keys and cycles, one line each) and, in `tree`, `axe agents
//! tree`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use crate::agent::{self, Agent};
use crate::config::GlobalConfig;
use crate::paths::AgentDirs;
use crate::provider::{ModelRef, Wire};
use crate::text::one_line;

mod tree;

pub use tree::tree;

/// The most cycles `check` lists; a graph can have exponentially many.
pub const MAX_CYCLES: usize = 100;
/// The most cycles `check` counts: beyond this it says "at least".
pub const MAX_COUNTED_CYCLES: usize = 100_000;

/// What loading one agent name gave.
#[derive(Debug, Clone)]
pub enum Loaded {
    /// The file loaded and validated. `model` is the parsed model string
    /// (None when the file names none and the agent inherits its caller's,
    /// design D21), or `ModelRef::parse`'s message.
    Agent {
        agent: Box<Agent>,
        model: Result<Option<ModelRef>, String>,
    },
    /// No file at `path`.
    Missing { path: PathBuf },
    /// The file is there but does not load: the loader's message.
    Invalid { message: String },
}

/// The agents reachable from `roots`, each loaded once, keyed by name.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub roots: Vec<String>,
    pub nodes: BTreeMap<String, Loaded>,
    /// Unknown-key warnings of the loaded files, in load order, for the
    /// caller to print.
    pub warnings: Vec<String>,
}

/// What `check` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Agents whose file was there (loaded or invalid); missing ones are not
    /// counted.
    pub checked: usize,
    /// One line each, without a trailing newline.
    pub problems: Vec<String>,
    /// Cycles found beyond the [`MAX_CYCLES`] listed.
    pub unlisted_cycles: usize,
    /// Counting stopped at [`MAX_COUNTED_CYCLES`]: there may be more.
    pub counting_stopped: bool,
}

/// The elementary cycles of a graph: the first [`MAX_CYCLES`] found, and how
/// many there are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cycles {
    /// Each as the names along it, the first repeated at the end; sorted.
    pub listed: Vec<Vec<String>>,
    /// Every cycle counted, the listed ones included.
    pub total: usize,
    /// Counting stopped at [`MAX_COUNTED_CYCLES`].
    pub stopped: bool,
}

impl Report {
    /// Every problem found, listed or not.
    pub fn total(&self) -> usize {
        self.problems.len().saturating_add(self.unlisted_cycles)
    }

    /// `3 problems`, or `at least 100000 problems` when counting stopped.
    pub fn describe_total(&self) -> String {
        let n = count(self.total(), "problem");
        if self.counting_stopped {
            format!("at least {n}")
        } else {
            n
        }
    }
}

/// Loads every agent reachable from `roots` on the search path `dirs`,
/// breadth first, each once. Agents `levels` steps below a root are loaded
/// but their own sub-agents are not followed (`u32::MAX`: the whole graph).
/// Never fails: what does not load is a [`Loaded::Missing`] or
/// [`Loaded::Invalid`].
pub fn load(dirs: &AgentDirs, global: &GlobalConfig, roots: &[String], levels: u32) -> Graph {
    let mut graph = Graph {
        roots: roots.to_vec(),
        ..Graph::default()
    };
    let mut queue: VecDeque<(String, u32)> = roots.iter().map(|r| (r.clone(), 0)).collect();
    while let Some((name, level)) = queue.pop_front() {
        if graph.nodes.contains_key(&name) {
            continue;
        }
        let node = load_one(dirs, global, &name);
        if let Loaded::Agent { agent, .. } = &node {
            graph.warnings.extend(agent.warnings.iter().cloned());
            if level < levels {
                for sub in sub_agents(&node) {
                    if !graph.nodes.contains_key(sub) {
                        queue.push_back((sub.to_string(), level + 1));
                    }
                }
            }
        }
        graph.nodes.insert(name, node);
    }
    graph
}

/// Loads what `axe agents tree <root>` shows: the root, and everything down
/// to one level past the root's effective `max_depth` (the first agents a run
/// never calls are shown, marked, and not followed).
pub fn load_tree(dirs: &AgentDirs, global: &GlobalConfig, root: &str) -> Graph {
    let levels = match load_one(dirs, global, root) {
        Loaded::Agent { agent, .. } => agent.config.sub_agents_config.max_depth.saturating_add(1),
        _ => 0,
    };
    load(dirs, global, &[root.to_string()], levels)
}

/// Loads one agent: missing when there is no file, invalid when the file does
/// not load (bad TOML, validation, an invalid name).
pub fn load_one(dirs: &AgentDirs, global: &GlobalConfig, name: &str) -> Loaded {
    let path = match dirs.file(name) {
        Ok(p) => p,
        Err(e) => {
            return Loaded::Invalid {
                message: e.to_string(),
            };
        }
    };
    if let Err(e) = fs::metadata(&path)
        && e.kind() == std::io::ErrorKind::NotFound
    {
        return Loaded::Missing { path };
    }
    match agent::load(dirs, name) {
        Ok(agent) => {
            let model = parse_model(&agent, global);
            Loaded::Agent {
                agent: Box::new(agent),
                model,
            }
        }
        Err(e) => Loaded::Invalid {
            message: e.to_string(),
        },
    }
}

/// A loaded agent's `sub_agents`, each name once, in file order; nothing for
/// an agent that did not load.
pub fn sub_agents(node: &Loaded) -> Vec<&str> {
    let Loaded::Agent { agent, .. } = node else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    agent
        .config
        .sub_agents
        .iter()
        .map(String::as_str)
        .filter(|s| seen.insert(*s))
        .collect()
}

/// Where the provider `name`'s problems are listed: the three wires in
/// their order, then the others by name.
fn provider_order(name: &str) -> (usize, &str) {
    let wire = Wire::ALL.iter().position(|k| k.name() == name);
    (wire.unwrap_or(Wire::ALL.len()), name)
}

/// An agent's own model, parsed; None when it inherits its caller's.
fn parse_model(agent: &Agent, global: &GlobalConfig) -> Result<Option<ModelRef>, String> {
    agent.own_model(global).map_err(|e| e.to_string())
}

/// Checks a loaded graph: per agent in name order its problems (invalid
/// file, bad model string, missing sub-agents, or a missing root), then each
/// provider whose key is missing (the check `Provider::from_config` makes,
/// once per provider, naming the agents that use it), then every cycle.
pub fn check(graph: &Graph, global: &GlobalConfig) -> Report {
    let mut problems = Vec::new();
    // Each provider by name, with the first model string naming it.
    let mut users: Vec<(&ModelRef, Vec<&str>)> = Vec::new();
    for (name, node) in &graph.nodes {
        match node {
            Loaded::Agent { agent, model } => {
                match model {
                    // Inherits: runs on its caller's provider, counted there.
                    Ok(None) => {}
                    Ok(Some(m)) => match users.iter_mut().find(|(u, _)| u.provider == m.provider) {
                        Some((_, names)) => names.push(name),
                        None => users.push((m, vec![name])),
                    },
                    Err(message) => problems.push(format!("{name}: {}", one_line(message))),
                }
                // The schema as a run would read it (design D22): one axe
                // cannot check, or a schema_file that does not read.
                let output = agent.config.output.as_ref();
                if let Err(e) =
                    crate::agent::output_schema(output, None, agent.config_dir(), Path::new("/"))
                {
                    problems.push(format!("{name}: {}", one_line(&e.to_string())));
                }
                for sub in sub_agents(node) {
                    if let Some(Loaded::Missing { path }) = graph.nodes.get(sub) {
                        problems.push(format!(
                            "{name}: sub-agent \"{sub}\" not found ({})",
                            path.display()
                        ));
                    }
                }
            }
            Loaded::Invalid { message } => problems.push(format!("{name}: {}", one_line(message))),
            Loaded::Missing { path } => {
                if graph.roots.iter().any(|r| r == name) {
                    problems.push(format!("agent \"{name}\" not found ({})", path.display()));
                }
            }
        }
    }
    users.sort_by(|a, b| provider_order(&a.0.provider).cmp(&provider_order(&b.0.provider)));
    for (m, names) in &users {
        if let Err(e) = global.provider(m) {
            problems.push(format!("{}: {e}", names.join(", ")));
        }
    }
    let cycles = cycles(graph);
    for cycle in &cycles.listed {
        problems.push(format!("cycle: {}", cycle.join(" -> ")));
    }
    let checked = graph
        .nodes
        .values()
        .filter(|n| !matches!(n, Loaded::Missing { .. }))
        .count();
    Report {
        checked,
        problems,
        unlisted_cycles: cycles.total.saturating_sub(cycles.listed.len()),
        counting_stopped: cycles.stopped,
    }
}

/// The text `axe agents check` prints: the problems, then the summary line.
pub fn report_text(report: &Report) -> String {
    let mut out = String::new();
    for p in &report.problems {
        out.push_str(p);
        out.push('\n');
    }
    if report.unlisted_cycles > 0 {
        let more = count(report.unlisted_cycles, "more cycle");
        if report.counting_stopped {
            out.push_str(&format!(
                "... and at least {more}, not listed (counting stopped at {MAX_COUNTED_CYCLES})\n"
            ));
        } else {
            out.push_str(&format!("... and {more}, not listed\n"));
        }
    }
    let problems = match report.total() {
        0 => "no problems".to_string(),
        _ => report.describe_total(),
    };
    out.push_str(&format!(
        "{} checked, {problems}\n",
        count(report.checked, "agent")
    ));
    out
}

/// `1 problem`, `2 problems`.
pub fn count(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The elementary cycles through `sub_agents` (self-loops included), each
/// once, as the names along it with the first repeated at the end, starting
/// at its lexicographically smallest name: the first [`MAX_CYCLES`] found
/// are listed (sorted), and all are counted up to [`MAX_COUNTED_CYCLES`].
/// Johnson's algorithm, iterative so that no graph can exhaust the stack.
pub fn cycles(graph: &Graph) -> Cycles {
    // Loaded indices follow name order, so the start of each cycle found is
    // its smallest name.
    let names: Vec<&String> = graph.nodes.keys().collect();
    let index: BTreeMap<&str, usize> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let adj: Vec<Vec<usize>> = graph
        .nodes
        .values()
        .map(|node| {
            sub_agents(node)
                .into_iter()
                .filter_map(|s| index.get(s).copied())
                .collect()
        })
        .collect();
    let n = names.len();
    let mut found: Vec<Vec<usize>> = Vec::new();
    let mut total = 0usize;
    for s in 0..n {
        if total >= MAX_COUNTED_CYCLES {
            break;
        }
        let mut blocked = vec![false; n];
        let mut b: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut path = vec![s];
        // (vertex, next neighbour to try, a cycle was found below it)
        let mut frames: Vec<(usize, usize, bool)> = vec![(s, 0, false)];
        blocked[s] = true;
        while let Some(&(v, i, _)) = frames.last() {
            if total >= MAX_COUNTED_CYCLES {
                break;
            }
            if let Some(&w) = adj[v].get(i) {
                if let Some(top) = frames.last_mut() {
                    top.1 += 1;
                }
                if w < s {
                    continue;
                }
                if w == s {
                    total += 1;
                    if found.len() < MAX_CYCLES {
                        found.push(path.clone());
                    }
                    if let Some(top) = frames.last_mut() {
                        top.2 = true;
                    }
                } else if !blocked[w] {
                    blocked[w] = true;
                    path.push(w);
                    frames.push((w, 0, false));
                }
                continue;
            }
            let Some((v, _, closed)) = frames.pop() else {
                break;
            };
            path.pop();
            if closed {
                unblock(v, &mut blocked, &mut b);
                if let Some(parent) = frames.last_mut() {
                    parent.2 = true;
                }
            } else {
                for &w in &adj[v] {
                    if w >= s && !b[w].contains(&v) {
                        b[w].push(v);
                    }
                }
            }
        }
    }
    let mut listed: Vec<Vec<String>> = found
        .into_iter()
        .map(|c| {
            let mut names: Vec<String> = c.iter().map(|&i| names[i].clone()).collect();
            if let Some(first) = names.first().cloned() {
                names.push(first);
            }
            names
        })
        .collect();
    listed.sort();
    Cycles {
        listed,
        total,
        stopped: total >= MAX_COUNTED_CYCLES,
    }
}

/// Johnson's unblock, with a work list instead of recursion.
fn unblock(u: usize, blocked: &mut [bool], b: &mut [Vec<usize>]) {
    let mut work = vec![u];
    while let Some(x) = work.pop() {
        blocked[x] = false;
        for w in std::mem::take(&mut b[x]) {
            if blocked[w] {
                work.push(w);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tree::MAX_TREE_LINES;
    use super::*;

    /// A graph of loaded agents, each `(name, sub_agents)`.
    fn graph(edges: &[(&str, &[&str])]) -> Graph {
        let mut g = Graph::default();
        for (name, subs) in edges {
            let subs: Vec<String> = subs.iter().map(|s| format!("\"{s}\"")).collect();
            let text = format!(
                "name = \"{name}\"\nmodel = \"ollama/x\"\nsub_agents = [{}]\n",
                subs.join(", ")
            );
            let agent = agent::parse(name, Path::new("t.toml"), &text).unwrap();
            let model = parse_model(&agent, &GlobalConfig::default());
            g.nodes.insert(
                name.to_string(),
                Loaded::Agent {
                    agent: Box::new(agent),
                    model,
                },
            );
        }
        g
    }

    /// Every agent delegating to every agent, itself included.
    fn complete(n: usize) -> Graph {
        let names: Vec<String> = (0..n).map(|i| format!("a{i:02}")).collect();
        let subs: Vec<&str> = names.iter().map(String::as_str).collect();
        let edges: Vec<(&str, &[&str])> = subs.iter().map(|s| (*s, &subs[..])).collect();
        graph(&edges)
    }

    #[test]
    fn cycles_of_a_complete_graph_are_each_found_once() {
        // 4 self-loops, 6 pairs, 4 triangles in 2 directions, 6 orders of 4.
        let found = cycles(&complete(4)).listed;
        assert_eq!(found.len(), 4 + 6 + 8 + 6, "{found:?}");
        let distinct: BTreeSet<_> = found.iter().collect();
        assert_eq!(distinct.len(), found.len());
        for c in &found {
            let smallest = c.iter().min().unwrap();
            assert_eq!(&c[0], smallest, "{c:?}");
            assert_eq!(c.first(), c.last(), "{c:?}");
        }
    }

    #[test]
    fn cycles_stop_at_the_cap_on_a_graph_with_very_many() {
        // 30 agents all calling each other: more cycles than atoms.
        let found = cycles(&complete(30));
        assert_eq!(found.listed.len(), MAX_CYCLES);
        assert_eq!(found.total, MAX_COUNTED_CYCLES);
        assert!(found.stopped);
    }

    #[test]
    fn tree_of_a_wide_dense_graph_is_cut_at_the_line_limit() {
        let mut g = complete(30);
        g.roots = vec!["a00".into()];
        let text = tree(&g, "a00").unwrap();
        assert_eq!(text.lines().count(), MAX_TREE_LINES + 1);
        assert!(text.ends_with(&format!("... (cut at {MAX_TREE_LINES} lines)\n")));
        assert!(text.contains("├── a01 (ollama/x)\n│   ├── a00 [cycle]\n"));
    }

    #[test]
    fn a_graph_without_edges_back_has_no_cycles() {
        let g = graph(&[("a", &["b", "c"]), ("b", &["c"]), ("c", &[])]);
        assert_eq!(cycles(&g), Cycles::default());
    }
}
