//! `axe mcp serve` (design §9.6): its command line, read into the server's
//! settings; config.toml, the search path and the agent files loaded once
//! (as `axe serve` loads them); then the server (`crate::mcp_serve`) until
//! stdin ends, or, with `--listen`, until SIGTERM or SIGINT.

use std::net::SocketAddr;
use std::time::Duration;

use argh::FromArgs;

use super::args::DEFAULT_IDLE_SECS;
use super::load_global;
use crate::error::Error;
use crate::io::interrupt;
use crate::mcp_serve::{self, Settings};
use crate::paths::{self, AgentDirs};
use crate::serve::{self, AgentFiles};

/// Default `axe mcp serve --max-concurrent`.
const DEFAULT_MAX_CONCURRENT: usize = 16;

#[derive(FromArgs, Debug)]
/// Serve agents as MCP tools over stdio, one tool per agent: JSON-RPC on
/// stdin and stdout, everything else on stderr; ends when stdin does. With
/// --listen, over streamable HTTP at /mcp instead. For Claude Code: claude
/// mcp add axe -- axe mcp serve
#[argh(subcommand, name = "serve")]
#[argh(help_triggers("-h", "--help", "help"))]
pub(super) struct McpServeCmd {
    /// serve only this agent (repeatable; default: every agent on the
    /// search path)
    #[argh(option)]
    pub(super) agent: Vec<String>,
    /// calls run at once; more get an error result saying axe is busy
    /// (default: 16)
    #[argh(option, default = "DEFAULT_MAX_CONCURRENT")]
    pub(super) max_concurrent: usize,
    /// seconds for each call's run, sub-agents included (default: the
    /// agent file's timeout, else 120)
    #[argh(option)]
    pub(super) timeout: Option<u64>,
    /// token budget (input plus output) for each call's whole tree
    #[argh(option)]
    pub(super) max_tokens: Option<u64>,
    /// money budget in USD for each call's whole tree; an error result
    /// when spent
    #[argh(option)]
    pub(super) max_cost: Option<f64>,
    /// retries of one failed HTTP request to a provider (default: 2)
    #[argh(option)]
    pub(super) retries: Option<u32>,
    /// leave no record of the calls' runs in the run log
    #[argh(switch)]
    pub(super) no_log: bool,
    /// serve over streamable HTTP at http://ADDR/mcp instead of stdio
    /// (a loopback address, like 127.0.0.1:8765; any other needs a token)
    #[argh(option)]
    pub(super) listen: Option<String>,
    /// with --listen: the file holding the bearer token clients must
    /// send (default: $AXE_SERVE_TOKEN; required off loopback)
    #[argh(option)]
    pub(super) token_file: Option<String>,
    /// look for agent files in DIR first (then ./axe/agents, then the
    /// config directory's agents/)
    #[argh(option)]
    pub(super) agents_dir: Option<String>,
}

pub(super) fn main(cmd: McpServeCmd) -> Result<(), Error> {
    // A signal cancels the calls running, their commands killed.
    interrupt::install();
    if cmd.timeout == Some(0) {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    if cmd.max_concurrent == 0 {
        return Err(Error::general("--max-concurrent must be at least 1"));
    }
    if cmd.max_tokens == Some(0) {
        return Err(Error::general("--max-tokens must be at least 1"));
    }
    for a in &cmd.agent {
        paths::check_agent_name(a)?;
    }
    let listen = match &cmd.listen {
        None if cmd.token_file.is_some() => {
            return Err(Error::general("--token-file is for --listen"));
        }
        None => None,
        Some(l) => Some(l.parse::<SocketAddr>().map_err(|_| {
            Error::general(format!(
                "--listen {l:?}: expected an address and port, like 127.0.0.1:8765"
            ))
        })?),
    };
    let token = match &listen {
        Some(addr) => serve::token(cmd.token_file.as_deref(), addr)?,
        None => None,
    };
    let global = load_global()?;
    let dirs = AgentDirs::search(cmd.agents_dir.as_deref())?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    // `--agent` bounds the catalog's roots: the tools are those.
    let files = AgentFiles::read(dirs, &cmd.agent, &global, &cwd)?;
    let settings = Settings {
        max_concurrent: cmd.max_concurrent,
        timeout: cmd.timeout,
        max_tokens: cmd.max_tokens,
        max_cost: super::run::max_cost(cmd.max_cost)?,
        retries: cmd.retries,
        run_log: !cmd.no_log,
        listen,
        token,
        idle: Duration::from_secs(DEFAULT_IDLE_SECS),
    };
    mcp_serve::serve(settings, global, files, cwd)
}
