//! `axe mcp list` and `axe mcp tools <server>` (design §9.5): the MCP
//! servers an agent may list, and the tools one of them offers, seen
//! without running an agent. `axe mcp serve` is `mcp_serve.rs`'s.

use std::sync::Arc;

use super::args::{McpSub, McpTools};
use super::{load_agent, load_global, print_stdout};
use crate::deadline::Deadline;
use crate::error::Error;
use crate::io::interrupt;
use crate::mcp::config::validate_all;
use crate::mcp::{ServerConfig, ServerRef};
use crate::paths::AgentDirs;
use crate::text::one_line;
use crate::text::redact::redact;

/// A server and where it is defined.
struct Listed {
    config: ServerConfig,
    /// `config.toml`, or `agent <name>`.
    place: String,
}

/// Runs the `mcp` subcommand.
pub(super) fn main(sub: McpSub) -> Result<(), Error> {
    match sub {
        McpSub::List(l) => list(l.agent.as_deref(), l.agents_dir.as_deref()),
        McpSub::Tools(t) => tools(&t),
        McpSub::Serve(s) => super::mcp_serve::main(s),
    }
}

/// config.toml's servers, after those `agent` defines in its own file
/// (which win over config.toml's of the same name, as in a run).
fn servers(agent: Option<&str>, agents_dir: Option<&str>) -> Result<Vec<Listed>, Error> {
    let global = load_global()?;
    let mut out = Vec::new();
    if let Some(name) = agent {
        let a = load_agent(&AgentDirs::search(agents_dir)?, name)?;
        for r in a.config.mcp.servers {
            if let ServerRef::Defined(config) = r {
                out.push(Listed {
                    config,
                    place: format!("agent {name}"),
                });
            }
        }
    }
    for config in validate_all(global.mcp_servers)? {
        out.push(Listed {
            config,
            place: "config.toml".into(),
        });
    }
    Ok(out)
}

/// `axe mcp list`: name, transport, what it runs or reaches, and where it
/// is defined, aligned; header and `env` values are never shown.
fn list(agent: Option<&str>, agents_dir: Option<&str>) -> Result<(), Error> {
    let rows: Vec<[String; 4]> = servers(agent, agents_dir)?
        .into_iter()
        .map(|l| {
            let t = &l.config.transport;
            [
                l.config.name.clone(),
                t.kind().into(),
                l.config.summary(),
                format!("({})", l.place),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (name_w, kind_w) = (width(0), width(1));
    let mut out = String::new();
    for [name, kind, target, place] in &rows {
        out.push_str(&format!(
            "{name:<name_w$}  {kind:<kind_w$}  {target}  {place}\n"
        ));
    }
    print_stdout(&redact(&out))
}

/// `axe mcp tools <server>`: the server started, initialized and its tools
/// listed before `--timeout`, then stopped. Exit 2 when it cannot be.
fn tools(cmd: &McpTools) -> Result<(), Error> {
    // It starts a process: a signal must stop it (design §6.5, §9.4).
    interrupt::install();
    if cmd.timeout == 0 {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    let deadline = Deadline::after(cmd.timeout);
    let config = servers(cmd.agent.as_deref(), cmd.agents_dir.as_deref())?
        .into_iter()
        .find(|l| l.config.name == cmd.server)
        .map(|l| l.config)
        .ok_or_else(|| {
            let agent = match &cmd.agent {
                Some(a) => format!(" or agent {a}'s file"),
                None => String::new(),
            };
            Error::config(format!(
                "no MCP server named \"{}\" in config.toml's [[mcp_servers]]{agent}",
                cmd.server
            ))
        })?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    // The server's own stderr and notices are not this command's output.
    let log: crate::mcp::rpc::Log = Arc::new(|_: &crate::mcp::rpc::Note| {});
    let server = crate::mcp::Server::start(&config, &cwd, log, deadline.at)
        .map_err(|e| Error::config(format!("MCP server \"{}\": {e}", config.name)))?;
    let server = Arc::new(server);
    for w in &server.warnings {
        crate::io::stderr::warn(w);
    }
    let _stops_server = {
        let server = server.clone();
        interrupt::on_signal(move |_| server.stop())
    };
    let mut out = format!(
        "{}: {}, protocol {}, {} tool(s)\n",
        server.name,
        server.info,
        server.version,
        server.tools.len()
    );
    // What the server says is shown as one escaped line each (issue 31).
    for t in &server.tools {
        let raw = format!("{}__{}", server.name, t.name);
        let wire = one_line(&raw);
        let description = one_line(&t.description);
        if description.is_empty() {
            out.push_str(&format!("\n{wire}\n"));
        } else {
            out.push_str(&format!("\n{wire} - {description}\n"));
        }
        out.push_str(&format!("  input: {}\n", one_line(&t.schema.to_string())));
        if let Err(why) = crate::mcp::registry::offerable(&raw, &t.schema) {
            out.push_str(&format!("  not offered to models: {why}\n"));
        }
    }
    server.stop();
    print_stdout(&redact(&out))
}
