//! The MCP servers of one run (design §9.4): each started once, on the
//! first agent that needs it, and shared by every agent of the tree that
//! lists it (another agent waits for a start no later than its own
//! deadline); all stopped when the run ends, whichever way it ends (the
//! registry's drop, and the signal action the run registers).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use serde_json::Value;

use super::client::Server;
use super::config::ServerConfig;
use super::rpc::{Log, Note};
use super::{AgentMcp, ServerRef};

/// The servers a run may start, and those it has.
pub struct Servers {
    /// `config.toml`'s `[[mcp_servers]]`.
    global: Vec<ServerConfig>,
    /// Where servers start (the process's directory).
    cwd: PathBuf,
    log: Log,
    slots: Mutex<Vec<Slot>>,
    stopping: AtomicBool,
}

type Started = Result<Arc<Server>, String>;

/// One server of the run, started (or failing to) once.
struct Slot {
    config: ServerConfig,
    cell: Arc<Cell>,
}

/// A server's start, shared: `None` while its first caller starts it.
#[derive(Default)]
struct Cell {
    started: Mutex<Option<Started>>,
    done: Condvar,
}

/// One MCP tool as an agent is offered it.
#[derive(Clone)]
pub struct Bound {
    /// `<server>__<tool>`: the name the model calls.
    pub wire: String,
    /// The tool's own name on its server.
    pub tool: String,
    pub description: String,
    pub schema: Value,
    pub server: Arc<Server>,
}

impl Default for Servers {
    fn default() -> Servers {
        Servers::new(Vec::new(), PathBuf::from("."), Arc::new(|_: &Note| {}))
    }
}

impl Servers {
    pub fn new(global: Vec<ServerConfig>, cwd: PathBuf, log: Log) -> Servers {
        Servers {
            global,
            cwd,
            log,
            slots: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        }
    }

    /// The definition `r` names: its own, or config.toml's.
    pub fn definition(&self, r: &ServerRef) -> Result<ServerConfig, String> {
        match r {
            ServerRef::Defined(c) => Ok(c.clone()),
            ServerRef::Name(name) => self
                .global
                .iter()
                .find(|c| &c.name == name)
                .cloned()
                .ok_or_else(|| {
                    format!("mcp_servers: no server named \"{name}\" in config.toml's [[mcp_servers]] or the agent file")
                }),
        }
    }

    /// config.toml's servers.
    pub fn configured(&self) -> &[ServerConfig] {
        &self.global
    }

    /// The server `config` describes, started now if it is not yet (before
    /// `deadline`); every caller after the first gets the same one, waiting
    /// for its start no later than its own `deadline`.
    pub fn get(&self, config: &ServerConfig, deadline: Instant) -> Started {
        if self.stopping.load(Ordering::Relaxed) {
            return Err("the run is ending".into());
        }
        let (cell, first) = {
            let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            match slots.iter().find(|s| s.config.name == config.name) {
                Some(s) if s.config != *config => {
                    return Err(format!(
                        "two different definitions of the MCP server \"{}\" in one run",
                        config.name
                    ));
                }
                Some(s) => (s.cell.clone(), false),
                None => {
                    let cell = Arc::new(Cell::default());
                    slots.push(Slot {
                        config: config.clone(),
                        cell: cell.clone(),
                    });
                    (cell, true)
                }
            }
        };
        if !first {
            let left = deadline.saturating_duration_since(Instant::now());
            let started = cell.started.lock().unwrap_or_else(PoisonError::into_inner);
            let (started, _) = cell
                .done
                .wait_timeout_while(started, left, |s| s.is_none())
                .unwrap_or_else(PoisonError::into_inner);
            return started.clone().unwrap_or_else(|| {
                Err(format!(
                    "MCP server \"{}\": still starting at the deadline",
                    config.name
                ))
            });
        }
        let started = self.start(config, deadline);
        *cell.started.lock().unwrap_or_else(PoisonError::into_inner) = Some(started.clone());
        cell.done.notify_all();
        // A stop that came while it started did not see it.
        if self.stopping.load(Ordering::Relaxed)
            && let Ok(server) = &started
        {
            server.stop();
        }
        started
    }

    /// Starts the server `config` describes, saying so in the log; what its
    /// listing left out is warned about.
    fn start(&self, config: &ServerConfig, deadline: Instant) -> Started {
        let started = Instant::now();
        (self.log)(&Note {
            server: &config.name,
            kind: "starting",
            text: &format!("{} {}", config.transport.kind(), config.summary()),
        });
        let server = Server::start(config, &self.cwd, self.log.clone(), deadline)
            .map_err(|e| format!("MCP server \"{}\": {e}", config.name))?;
        for w in &server.warnings {
            crate::io::stderr::warn_once(w);
        }
        let ready = format!(
            "{}, protocol {}, {} tool(s), {} ms",
            server.info,
            server.version,
            server.tools.len(),
            crate::deadline::millis(started.elapsed())
        );
        (self.log)(&Note {
            server: &config.name,
            kind: "ready",
            text: &ready,
        });
        Ok(Arc::new(server))
    }

    /// The tools `mcp` gives an agent, its servers started as needed: every
    /// tool of each listed server, or those `mcp.tools` names. A tool whose
    /// name cannot go on the wire or whose input schema is not an object
    /// schema is left out with a warning; so is one whose wire name another
    /// server's tool has already (`a` + `__x` and `a_` + `_x`): each name
    /// is offered once. No wire name is a built-in tool's or `call_agent`,
    /// none of which has `__`.
    pub fn tools_for(&self, mcp: &AgentMcp, deadline: Instant) -> Result<Vec<Bound>, String> {
        let mut out = Vec::new();
        let mut owner: HashMap<String, String> = HashMap::new();
        for r in &mcp.servers {
            let config = self.definition(r)?;
            let server = self.get(&config, deadline)?;
            for t in &server.tools {
                let wire = format!("{}__{}", server.name, t.name);
                if !mcp.tools.is_empty() && !mcp.tools.contains(&wire) {
                    continue;
                }
                if let Err(why) = offerable(&wire, &t.schema) {
                    let wire = super::rpc::shown(&wire, 100);
                    crate::io::stderr::warn_once(&format!(
                        "MCP tool \"{wire}\" is not offered: {why}"
                    ));
                    continue;
                }
                if let Some(first) = owner.get(&wire) {
                    crate::io::stderr::warn_once(&format!(
                        "MCP tool \"{wire}\" of server \"{}\" is not offered: server \"{first}\" \
                         offers a tool of that name",
                        server.name
                    ));
                    continue;
                }
                owner.insert(wire.clone(), server.name.clone());
                out.push(Bound {
                    wire,
                    tool: t.name.clone(),
                    description: t.description.clone(),
                    schema: t.schema.clone(),
                    server: server.clone(),
                });
            }
        }
        if let Some(missing) = mcp
            .tools
            .iter()
            .find(|w| !out.iter().any(|b| &b.wire == *w))
        {
            return Err(format!(
                "mcp_tools: no tool \"{missing}\" offered by the listed servers"
            ));
        }
        Ok(out)
    }

    /// Stops every server started, and starts no more.
    pub fn stop_all(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        let cells: Vec<_> = {
            let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
            slots.iter().map(|s| s.cell.clone()).collect()
        };
        for cell in cells {
            let started = cell
                .started
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(Ok(server)) = started {
                server.stop();
            }
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// Whether a tool can be offered: a name the APIs take (letters, digits,
/// `_`, `-`, at most 64) and an object schema.
pub(crate) fn offerable(wire: &str, schema: &Value) -> Result<(), String> {
    let plain = wire
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !plain || wire.len() > 64 {
        return Err("its name has characters the model APIs refuse, or is over 64".into());
    }
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("its input schema is not an object schema".into());
    }
    Ok(())
}

impl std::fmt::Debug for Servers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.global.iter().map(|c| c.name.as_str()).collect();
        f.debug_struct("Servers")
            .field("configured", &names)
            .finish()
    }
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound").field("wire", &self.wire).finish()
    }
}
