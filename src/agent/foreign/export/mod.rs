//! `axe agents export` (design §3.17): any agent, axe's own or another
//! tool's, written as an agent file of Claude Code, of Codex or of axe. The
//! agent is first axe's keys (its own file's table, or what the import
//! made of another tool's), then each key goes where the target format
//! holds it, the inverse of the import's mapping, so that an import of the
//! file written gives back what the formats share. Every key the target
//! cannot hold is named, one line each (`dropped: KEY (why)`), and so is
//! what it holds differently (`kept:`, `widened:`): nothing is lost
//! silently.

mod claude;
mod codex;

use toml::{Table, Value};

use super::global;
use crate::agent::source;
use crate::config::tomlfile;
use crate::error::Error;
use crate::paths::{AgentDirs, Format};

/// An agent file written in another format, and what it could not hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub text: String,
    /// One line per key dropped or held differently, for stderr.
    pub lines: Vec<String>,
}

/// The agent `name` of the search path `dirs`, already loaded (so valid),
/// written in the format `to`. An axe agent written as axe's is its file,
/// byte for byte.
pub fn export(dirs: &AgentDirs, name: &str, to: Format) -> Result<Exported, Error> {
    let (path, from, text) = source(dirs, name)?;
    let table = match from {
        Format::Axe if to == Format::Axe => {
            return Ok(Exported {
                text,
                lines: Vec::new(),
            });
        }
        Format::Axe => {
            tomlfile::parse::<Table>(&text, &|_| None)
                .map_err(|why| Error::InvalidAgentFile {
                    path: path.clone(),
                    why,
                })?
                .0
        }
        f => super::read(f, dirs, name, &path, &text)?.table,
    };
    let mut w = Writer {
        global: global(),
        tool: to.tool().unwrap_or("axe"),
        lines: Vec::new(),
    };
    let text = match to {
        Format::Claude => claude::write(&mut w, &table),
        Format::Codex => codex::write(&mut w, &table),
        Format::Axe => document(&table, &AXE_ORDER),
    };
    Ok(Exported {
        text,
        lines: w.lines,
    })
}

/// axe's top-level keys in the order an exported file has them; the rest
/// follow, sorted, and the tables last.
const AXE_ORDER: [&str; 9] = [
    "name",
    "description",
    "model",
    "system_prompt",
    "tools",
    "sub_agents",
    "agents_md",
    "mcp_servers",
    "mcp_tools",
];

/// What a target's writer shares: config.toml (aliases, MCP servers), the
/// target tool's name and the lines for stderr.
struct Writer {
    global: crate::config::GlobalConfig,
    tool: &'static str,
    lines: Vec<String>,
}

impl Writer {
    /// `key` is not in the file written.
    fn drop(&mut self, key: &str, why: &str) {
        self.lines.push(format!("dropped: {key} ({why})"));
    }

    /// `key`, one of axe's that no other tool's agent file has.
    fn drop_axes(&mut self, key: &str) {
        let why = match key {
            "skill" => "no skill file",
            "files" => "no context files",
            "attach" => "no attachments",
            "workdir" => "no working directory",
            "sub_agents_config" => "no settings for calling sub-agents",
            "params" => "no sampling parameters",
            "retry" => "no retry settings",
            "max_file_bytes" | "max_prompt_bytes" => "no limits on what is read",
            "timeout" => "no time limit",
            "output" => "no output schema",
            "allowed_hosts" => "no list of hosts",
            "sandbox" => "no sandbox settings",
            "prompt_cache" => "no prompt cache setting",
            "stream" => "no streaming setting",
            "memory" => "no memory of past runs",
            _ => {
                self.drop(key, "not a key of axe's agent files");
                return;
            }
        };
        let why = format!("{}'s agent files have {why}", self.tool);
        self.drop(key, &why);
    }

    /// `agents_md`: on is what an imported file of either tool gets; off
    /// cannot be written.
    fn agents_md(&mut self, value: &Value) {
        if value.as_bool() == Some(false) {
            let why = format!(
                "axe reads the project's AGENTS.md for every {} agent file",
                self.tool
            );
            self.drop("agents_md = false", &why);
        }
    }
}

/// The strings of a list (a value that is not one is none).
fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `table` as a TOML document: the keys of `order` first, then the rest
/// sorted, each `key = value` (a long text as a multi-line string); the
/// tables and lists of tables after them, as sections.
fn document(table: &Table, order: &[&str]) -> String {
    let mut keys: Vec<&String> = table.keys().collect();
    keys.sort_by_key(|k| order.iter().position(|o| o == k).unwrap_or(order.len()));
    let sections = |v: &Value| match v {
        Value::Table(_) => true,
        Value::Array(a) => !a.is_empty() && a.iter().all(Value::is_table),
        _ => false,
    };
    let mut out = String::new();
    for key in keys.iter().filter(|k| !sections(&table[k.as_str()])) {
        out.push_str(&format!("{} = {}\n", bare(key), table[key.as_str()]));
    }
    for key in keys.iter().filter(|k| sections(&table[k.as_str()])) {
        let mut one = Table::new();
        one.insert(key.to_string(), table[key.as_str()].clone());
        // A table of axe's own making always serializes.
        if let Ok(text) = toml::to_string(&one) {
            out.push('\n');
            out.push_str(&text);
        }
    }
    out
}

/// A key as TOML writes it: bare when it may be, else quoted.
fn bare(key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if plain {
        key.to_string()
    } else {
        Value::String(key.to_string()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_has_its_keys_in_order_then_its_tables() {
        let t: Table = "z = 1\n[budget]\nmax_turns = 2\n[[mcp_servers]]\nname = \"t\"\n\
                        [mcp_servers.env]\nA = \"b\"\n"
            .parse()
            .unwrap();
        let mut t = t;
        t.insert("system_prompt".into(), "a\nb".into());
        t.insert("name".into(), "n".into());
        t.insert("odd key".into(), true.into());
        let text = document(&t, &AXE_ORDER);
        // The tables in the same order: mcp_servers is one of AXE_ORDER's.
        assert!(
            text.starts_with("name = \"n\"\nsystem_prompt = \"\"\"\na\nb\"\"\"\n\"odd key\" = true\nz = 1\n\n[[mcp_servers]]\n"),
            "{text}"
        );
        assert!(text.ends_with("\n[budget]\nmax_turns = 2\n"), "{text}");
        assert_eq!(text.parse::<Table>().unwrap(), t);
    }
}
