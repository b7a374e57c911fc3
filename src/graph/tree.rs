//! `axe agents tree`: the delegation graph drawn from one root, as far as
//! the root's `max_depth` lets a run go (design D6), each agent with the
//! model it runs on (its caller's when it names none, design D21).

use crate::error::Error;
use crate::provider::ModelRef;
use crate::text::one_line;

use super::{Graph, Loaded, sub_agents};

/// The most lines `tree` draws; agents shared by many parents are drawn
/// under each, and a wide graph five levels deep could otherwise fill memory.
pub const MAX_TREE_LINES: usize = 10_000;

/// A tree being drawn: what it is drawn from and what is drawn so far.
struct Drawing<'g> {
    graph: &'g Graph,
    /// The root's effective `max_depth`: agents at that depth call no one.
    max_depth: u32,
    /// The agents from the root down to the one being drawn.
    on_path: Vec<&'g str>,
    out: String,
    lines: usize,
}

/// The `axe agents tree` text for `root` in `graph` (from [`load_tree`]).
/// The root line carries the effective `max_depth` and whether calls run in
/// parallel; below it each sub-agent with its model, or a mark: `[missing]`,
/// `[invalid: ...]`, `[cycle]` (already on the path; not expanded) or
/// `[beyond max_depth N: never called]` (a child of an agent at depth N,
/// which gets no `call_agent` tool; not expanded). Fails, as `axe agents
/// show` does, when the root does not load.
pub fn tree(graph: &Graph, root: &str) -> Result<String, Error> {
    let node = graph.nodes.get(root);
    let Some(root_node @ Loaded::Agent { agent, model }) = node else {
        return Err(match node {
            Some(Loaded::Invalid { message }) => Error::config(message.clone()),
            _ => Error::AgentNotFound {
                name: root.to_string(),
                searched: Vec::new(),
            },
        });
    };
    let sac = &agent.config.sub_agents_config;
    let max_depth = sac.max_depth;
    let mode = if sac.parallel {
        "parallel"
    } else {
        "sequential"
    };
    let root_model = match &agent.config.model {
        Some(m) => one_line(m),
        None => "no model: needs --model".to_string(),
    };
    let out = format!(
        "{root} ({root_model}, max_depth {max_depth}, {mode}){}\n",
        model_mark(model)
    );
    let mut drawing = Drawing {
        graph,
        max_depth,
        on_path: vec![root],
        out,
        lines: 1,
    };
    let inherited = agent.config.model.as_deref().map(one_line);
    draw_children(
        &mut drawing,
        &sub_agents(root_node),
        1,
        "",
        inherited.as_deref(),
    );
    if drawing.lines > MAX_TREE_LINES {
        drawing
            .out
            .push_str(&format!("... (cut at {MAX_TREE_LINES} lines)\n"));
    }
    Ok(drawing.out)
}

/// Draws `children` (at `depth`) under `prefix`, each followed by its own
/// children where a run would get there, until [`MAX_TREE_LINES`].
/// `inherited` is the model their caller runs on (None: the root's, given
/// by `--model`), what a child without a model of its own runs on.
fn draw_children<'g>(
    d: &mut Drawing<'g>,
    children: &[&'g str],
    depth: u32,
    prefix: &str,
    inherited: Option<&str>,
) {
    for (i, &name) in children.iter().enumerate() {
        if d.lines >= MAX_TREE_LINES {
            // One more than the limit says that something was left out.
            d.lines = MAX_TREE_LINES + 1;
            return;
        }
        d.lines += 1;
        let last = i + 1 == children.len();
        let node = d.graph.nodes.get(name);
        let (mark, expand) = if depth > d.max_depth {
            let limit = d.max_depth;
            let mark = format!(
                "{} [beyond max_depth {limit}: never called]",
                model_and_marks(node, inherited)
            );
            (mark, false)
        } else if d.on_path.contains(&name) {
            (" [cycle]".to_string(), false)
        } else {
            (
                model_and_marks(node, inherited),
                matches!(node, Some(Loaded::Agent { .. })),
            )
        };
        let branch = if last { "└── " } else { "├── " };
        d.out.push_str(&format!("{prefix}{branch}{name}{mark}\n"));
        if let (true, Some(node)) = (expand, node) {
            let below = format!("{prefix}{}", if last { "    " } else { "│   " });
            d.on_path.push(name);
            let own = match node {
                Loaded::Agent { agent, .. } => agent.config.model.as_deref().map(one_line),
                _ => None,
            };
            let runs_on = own.as_deref().or(inherited);
            draw_children(d, &sub_agents(node), depth + 1, &below, runs_on);
            d.on_path.pop();
        }
    }
}

/// What follows a node's name: ` (model)` and any mark; an agent without
/// a model of its own shows the one it would run on, `inherited`.
fn model_and_marks(node: Option<&Loaded>, inherited: Option<&str>) -> String {
    match node {
        Some(Loaded::Agent { agent, model }) => match &agent.config.model {
            Some(own) => format!(" ({}){}", one_line(own), model_mark(model)),
            None => format!(
                " (inherits {})",
                inherited.unwrap_or("the caller's model: --model")
            ),
        },
        Some(Loaded::Invalid { message }) => format!(" [invalid: {}]", one_line(message)),
        Some(Loaded::Missing { .. }) | None => " [missing]".to_string(),
    }
}

fn model_mark(model: &Result<Option<ModelRef>, String>) -> String {
    match model {
        Ok(_) => String::new(),
        Err(message) => format!(" [invalid model: {}]", one_line(message)),
    }
}
