//! Claude Code's sub-agent files (`.claude/agents/<name>.md`, design
//! §3.17): a YAML header between `---` lines, then the system prompt. The
//! header's `name`, `description`, `tools`, `model` and `maxTurns` become
//! axe's keys; any other key is named in one warning. axe offers only the
//! tools a file names: without `tools`, none (Claude Code would offer all).

use std::collections::HashSet;

use toml::{Table, Value};
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use super::{Context, Imported};

/// What `--dry-run` says of a file that names no tools.
const NO_TOOLS: &str = "the file names no `tools`: axe offers it none \
                        (Claude Code would offer every tool); list them in `tools` to give them";

/// The file `text` of agent `id` as axe's keys, or why it cannot be read.
pub(super) fn read(cx: &Context, id: &str, text: &str) -> Result<Imported, String> {
    let (yaml, body) = split(text)?;
    let header = header(yaml)?;
    let mut out = Imported {
        table: Table::new(),
        warnings: Vec::new(),
        notes: Vec::new(),
    };
    let mut unused = Vec::new();
    let mut tools = None;
    let mut disallowed = Vec::new();
    // A set: a Vec's `contains` made a header of 100,000 keys take 51 s.
    let mut seen: HashSet<&str> = HashSet::new();
    for (key, value) in &header {
        let Some(key) = key.as_str() else {
            return Err("the YAML header has a key that is not a string".into());
        };
        if !seen.insert(key) {
            return Err(format!("the YAML header has `{key}` twice"));
        }
        match key {
            "name" => name(&mut out, id, value)?,
            "description" => {
                let d = scalar(value).ok_or("`description` must be a string")?;
                out.table.insert("description".into(), Value::String(d));
            }
            "tools" => tools = Some(list(value).ok_or("`tools` must be a string or a list")?),
            "disallowedTools" => {
                disallowed = list(value).ok_or("`disallowedTools` must be a string or a list")?;
            }
            "model" => model(cx, &mut out, value)?,
            "maxTurns" => {
                let n = value
                    .as_i64()
                    .filter(|n| *n > 0)
                    .ok_or("`maxTurns` must be a positive integer")?;
                let mut budget = Table::new();
                budget.insert("max_turns".into(), Value::Integer(n));
                out.table.insert("budget".into(), Value::Table(budget));
            }
            other => unused.push(other.to_string()),
        }
    }
    // On by default for an imported agent, as the tools it comes from
    // read the project's instructions (design §3.17).
    out.table.insert("agents_md".into(), Value::Boolean(true));
    out.table
        .entry("name")
        .or_insert_with(|| Value::String(id.to_string()));
    let body = body.trim();
    if !body.is_empty() {
        out.table
            .insert("system_prompt".into(), Value::String(body.to_string()));
    }
    match tools {
        Some(tools) => {
            let tools: Vec<String> = tools
                .into_iter()
                .filter(|t| !denied(t, &disallowed))
                .collect();
            map_tools(cx, &mut out, &tools)?;
        }
        None => out.notes.push(NO_TOOLS.into()),
    }
    if !unused.is_empty() {
        out.warnings
            .push(format!("keys axe does not use: {}", unused.join(", ")));
    }
    Ok(out)
}

/// The header's text and the body: the file opens with a line `---` and the
/// header ends at the next.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or("no YAML header: a Claude Code agent file opens with a line `---`")?;
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("the YAML header has no closing `---` line".into())
}

/// A YAML node, as much of one as the header needs: scalars stay text
/// (a plain one may be read as a number or as null), mappings keep their
/// order.
#[derive(Debug, Clone, PartialEq)]
enum Yaml {
    Null,
    /// Its text, and whether it was written plain (unquoted).
    Scalar(String, bool),
    List(Vec<Yaml>),
    Map(Vec<(Yaml, Yaml)>),
}

impl Yaml {
    fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    /// A plain scalar that is an integer.
    fn as_i64(&self) -> Option<i64> {
        match self {
            Yaml::Scalar(s, true) => s.parse().ok(),
            _ => None,
        }
    }
}

/// An unfinished list or mapping (with the key waiting for its value).
enum Open {
    List(Vec<Yaml>),
    Map(Vec<(Yaml, Yaml)>, Option<Yaml>),
}

/// How deep lists and mappings may nest in a header: a real one nests two
/// or three; yaml-rust2's loader recurses once a level, so `- ` 50,000
/// times overflowed the stack (and so would dropping the tree).
const MAX_DEPTH: usize = 64;

/// The first document of a YAML text, built from the parser's events in
/// one pass, without the tree of a full loader. An alias (`*name`) is
/// refused, not copied: a few lines of them could stand for gigabytes.
#[derive(Default)]
struct Tree {
    open: Vec<Open>,
    root: Option<Yaml>,
    alias: bool,
}

impl Tree {
    fn add(&mut self, node: Yaml) {
        match self.open.last_mut() {
            None => {
                self.root.get_or_insert(node);
            }
            Some(Open::List(items)) => items.push(node),
            Some(Open::Map(pairs, key)) => match key.take() {
                None => *key = Some(node),
                Some(k) => pairs.push((k, node)),
            },
        }
    }
}

impl Tree {
    fn on_event(&mut self, ev: Event) {
        match ev {
            Event::Scalar(text, style, ..) => {
                let plain = style == TScalarStyle::Plain;
                let null = plain && matches!(text.as_str(), "" | "~" | "null" | "Null" | "NULL");
                self.add(if null {
                    Yaml::Null
                } else {
                    Yaml::Scalar(text, plain)
                });
            }
            Event::SequenceStart(..) => self.open.push(Open::List(Vec::new())),
            Event::MappingStart(..) => self.open.push(Open::Map(Vec::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let node = match self.open.pop() {
                    Some(Open::List(items)) => Yaml::List(items),
                    Some(Open::Map(pairs, _)) => Yaml::Map(pairs),
                    None => return,
                };
                self.add(node);
            }
            Event::Alias(_) => self.alias = true,
            _ => {}
        }
    }
}

/// The header as a mapping; an empty header is an empty one. The parser's
/// events are read here, not through its recursive `load`, so that the
/// depth is counted before it costs a frame (design §3.17).
fn header(yaml: &str) -> Result<Vec<(Yaml, Yaml)>, String> {
    let mut tree = Tree::default();
    let mut parser = Parser::new_from_str(yaml);
    loop {
        let (ev, _) = parser
            .next_token()
            .map_err(|e| format!("the YAML header: {e}"))?;
        if matches!(ev, Event::DocumentEnd | Event::StreamEnd) {
            break;
        }
        tree.on_event(ev);
        if tree.open.len() > MAX_DEPTH {
            return Err(format!(
                "the YAML header nests lists or mappings deeper than {MAX_DEPTH}"
            ));
        }
    }
    if tree.alias {
        return Err("the YAML header: aliases (*name) are not read".into());
    }
    match tree.root {
        None | Some(Yaml::Null) => Ok(Vec::new()),
        Some(Yaml::Map(pairs)) => Ok(pairs),
        Some(_) => Err("the YAML header is not a mapping of keys to values".into()),
    }
}

/// A scalar as text.
fn scalar(v: &Yaml) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// `name`: the display name. The file's stem stays the agent's id, what
/// `axe run` and `call_agent` call it by (design D9); a name that differs
/// is warned of.
fn name(out: &mut Imported, id: &str, value: &Yaml) -> Result<(), String> {
    let name = scalar(value).ok_or("`name` must be a string")?;
    if name.trim() != id {
        out.warnings.push(format!(
            "name {name:?} is not the file's name: axe calls the agent \"{id}\""
        ));
    }
    out.table.insert("name".into(), Value::String(name));
    Ok(())
}

/// `model`: `inherit` is axe's own inheritance (no model: the caller's);
/// an alias (`sonnet`) as config.toml's `[aliases]` says; a Claude id as
/// Anthropic's; `provider/model` as it is.
fn model(cx: &Context, out: &mut Imported, value: &Yaml) -> Result<(), String> {
    let model = scalar(value).ok_or("`model` must be a string")?;
    let model = model.trim();
    let resolved = if model == "inherit" || model.is_empty() {
        return Ok(());
    } else if let Some(m) = cx.global.alias(model) {
        out.notes.push(format!(
            "model {model:?} is {m}, as config.toml's [aliases] (or its default) says"
        ));
        m
    } else if model.starts_with("claude-") {
        format!("anthropic/{model}")
    } else {
        model.to_string()
    };
    out.table.insert("model".into(), Value::String(resolved));
    Ok(())
}

/// `tools` as names: a comma-separated string (commas inside `( )` are a
/// tool's own: `Task(a, b)`) or a list.
fn list(value: &Yaml) -> Option<Vec<String>> {
    let mut names = Vec::new();
    match value {
        Yaml::Null => {}
        Yaml::List(items) => {
            for item in items {
                names.push(scalar(item)?);
            }
        }
        other => {
            let text = scalar(other)?;
            let mut depth = 0usize;
            let mut start = 0;
            for (i, c) in text.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' => depth = depth.saturating_sub(1),
                    ',' if depth == 0 => {
                        names.push(text[start..i].to_string());
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            names.push(text[start..].to_string());
        }
    }
    Some(
        names
            .into_iter()
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .collect(),
    )
}

/// The built-in tool a Claude Code tool is, if axe has one.
fn builtin(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "Read" => "read_file",
        "Write" => "write_file",
        "Edit" | "MultiEdit" => "edit_file",
        "Bash" => "run_command",
        "Grep" => "search_files",
        // Finding files by name: list_directory is what axe has; its
        // search_files needs a pattern to look for in them.
        "Glob" | "LS" => "list_directory",
        "WebFetch" => "url_fetch",
        "WebSearch" => "web_search",
        _ => return None,
    })
}

/// Whether `disallowedTools` takes `tool` away: named by its name (`Task`
/// with its agents or without), or by another name of the same tool of
/// axe's (`LS` takes `Glob` too: both are `list_directory`). Narrowing
/// more than Claude Code would is safe; offering what it denies is not.
fn denied(tool: &str, disallowed: &[String]) -> bool {
    let head = |t: &str| t.split_once('(').map_or(t, |(h, _)| h).trim().to_string();
    let (name, mapped) = (head(tool), builtin(&head(tool)));
    disallowed.iter().any(|d| {
        let d = head(d);
        d == name
            || (mapped.is_some() && builtin(&d) == mapped)
            || (matches!(d.as_str(), "Task" | "Agent") && matches!(name.as_str(), "Task" | "Agent"))
    })
}

/// `tools` as axe's `tools`, `sub_agents` (`Task`/`Agent`: the agents it
/// names, else every other Claude Code agent found), `mcp_servers` and
/// `mcp_tools` (`mcp__server__tool`, a server config.toml names); what axe
/// does not have is warned of and not offered.
fn map_tools(cx: &Context, out: &mut Imported, tools: &[String]) -> Result<(), String> {
    let mut builtins: Vec<&str> = Vec::new();
    let mut subs: Vec<String> = Vec::new();
    let (mut servers, mut mcp_tools): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut missing: Vec<String> = Vec::new();
    for tool in tools {
        let (head, args) = match tool.split_once('(') {
            Some((h, a)) => (h.trim(), Some(a.trim_end_matches(')'))),
            None => (tool.as_str(), None),
        };
        if matches!(head, "Task" | "Agent") {
            let before = subs.len();
            match args {
                Some(a) => subs.extend(a.split(',').map(|s| s.trim().to_string())),
                None => subs.extend(cx.siblings()?),
            }
            subs.retain(|s| !s.is_empty());
            if subs.len() == before {
                missing.push(format!("{tool} (no other agent to call)"));
            }
        } else if let (Some(b), None) = (builtin(head), args) {
            // Glob and LS are one tool: offered once.
            if !builtins.contains(&b) {
                builtins.push(b);
            }
        } else if let Some((server, name)) = mcp(head).filter(|_| args.is_none()) {
            if cx.global.mcp_servers.iter().any(|s| s.name == server) {
                if !servers.iter().any(|s| s == server) {
                    servers.push(server.to_string());
                }
                mcp_tools.push(format!("{server}__{name}"));
            } else {
                missing.push(format!(
                    "{tool} (no MCP server \"{server}\" in config.toml)"
                ));
            }
        } else {
            missing.push(tool.clone());
        }
    }
    subs.sort();
    subs.dedup();
    let strings = |v: Vec<String>| Value::Array(v.into_iter().map(Value::String).collect());
    let t = &mut out.table;
    t.insert(
        "tools".into(),
        strings(builtins.iter().map(|b| b.to_string()).collect()),
    );
    if !subs.is_empty() {
        t.insert("sub_agents".into(), strings(subs));
    }
    if !servers.is_empty() {
        t.insert("mcp_servers".into(), strings(servers));
        t.insert("mcp_tools".into(), strings(mcp_tools));
    }
    if !missing.is_empty() {
        out.warnings.push(format!(
            "tools axe does not have, not offered: {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// `mcp__server__tool` as its server and tool.
fn mcp(tool: &str) -> Option<(&str, &str)> {
    let (server, name) = tool.strip_prefix("mcp__")?.split_once("__")?;
    (!server.is_empty() && !name.is_empty()).then_some((server, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_split_from_the_body() {
        assert_eq!(
            split("---\na: 1\n---\nbody\n").unwrap(),
            ("a: 1\n", "body\n")
        );
        assert_eq!(split("---\r\n---\r\nx").unwrap(), ("", "x"));
        assert!(split("no header").is_err());
        assert!(split("---\na: 1\n").is_err());
    }

    #[test]
    fn aliases_are_refused_before_they_are_copied() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n";
        assert!(header(bomb).unwrap_err().contains("aliases"));
        assert!(header("- 1\n").is_err());
        assert!(header("").unwrap().is_empty());
        let h = header("a: 1\nb: '2'\nc:\nd: [x, {e: f}]\n").unwrap();
        let text = |s: &str, plain| Yaml::Scalar(s.into(), plain);
        assert_eq!(
            h,
            [
                (text("a", true), text("1", true)),
                (text("b", true), text("2", false)),
                (text("c", true), Yaml::Null),
                (
                    text("d", true),
                    Yaml::List(vec![
                        text("x", true),
                        Yaml::Map(vec![(text("e", true), text("f", true))])
                    ])
                ),
            ]
        );
        assert_eq!(h[0].1.as_i64(), Some(1));
        assert_eq!(h[1].1.as_i64(), None);
        let deep = format!("a: {}", "[".repeat(65));
        assert!(header(&deep).unwrap_err().contains("deeper than 64"));
        let fine = format!("a: {}x{}", "[".repeat(63), "]".repeat(63));
        assert!(header(&fine).is_ok());
    }

    #[test]
    fn tools_split_on_commas_outside_parentheses() {
        let y = Yaml::Scalar("Read, Task(a, b),Bash".into(), true);
        assert_eq!(list(&y).unwrap(), ["Read", "Task(a, b)", "Bash"]);
    }
}
