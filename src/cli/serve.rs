//! `axe serve`: the command line read into the server's settings,
//! config.toml, the agents' search path and the agent files loaded once,
//! then the server
//! (`crate::serve`, design ch. 12) until SIGTERM or SIGINT; SIGHUP reads
//! the agent files again.

use std::net::SocketAddr;
use std::time::Duration;

use super::args::ServeCmd;
use super::load_global;
use crate::error::Error;
use crate::io::interrupt;
use crate::paths::{self, AgentDirs};
use crate::serve::{self, AgentFiles, Settings};

pub(super) fn main(cmd: ServeCmd) -> Result<(), Error> {
    // The first signal stops the server gracefully; a second ends it.
    interrupt::install();
    if cmd.timeout == Some(0) {
        return Err(Error::general("--timeout must be at least 1 second"));
    }
    if cmd.idle_timeout < 2 {
        return Err(Error::general("--idle-timeout must be at least 2 seconds"));
    }
    if cmd.max_concurrent == 0 {
        return Err(Error::general("--max-concurrent must be at least 1"));
    }
    let listen: SocketAddr = cmd.listen.parse().map_err(|_| {
        Error::general(format!(
            "--listen {:?}: expected an address and port, like 127.0.0.1:8080",
            cmd.listen
        ))
    })?;
    let system_messages = match cmd.system_messages.as_deref() {
        None | Some("append") => true,
        Some("refuse") => false,
        Some(other) => {
            return Err(Error::general(format!(
                "--system-messages {other:?}: expected append or refuse \
                 (system messages are appended by default)"
            )));
        }
    };
    for a in &cmd.agent {
        paths::check_agent_name(a)?;
    }
    if let Some(t) = &cmd.trace {
        trace_file(t)?;
    }
    let token = serve::token(cmd.token_file.as_deref(), &listen)?;
    let global = load_global()?;
    let dirs = AgentDirs::search(cmd.agents_dir.as_deref())?;
    let cwd = std::env::current_dir()
        .map_err(|e| Error::config(format!("cannot read the current directory: {e}")))?;
    let files = AgentFiles::read(dirs, &cmd.agent, &global, &cwd)?;
    let settings = Settings {
        listen,
        max_concurrent: cmd.max_concurrent,
        token,
        timeout: cmd.timeout,
        max_body: cmd.max_body,
        grace: Duration::from_secs(cmd.grace),
        idle: Duration::from_secs(cmd.idle_timeout),
        agents: cmd.agent,
        system_messages,
        ignore_client_tools: cmd.ignore_client_tools,
        trace: cmd.trace,
        trace_bodies: cmd.trace_bodies,
        retries: cmd.retries,
        run_log: !cmd.no_log,
        access_log: !cmd.quiet,
    };
    serve::serve(settings, global, files, cwd)
}

/// `args` (after `axe`) with the old bare `--system-messages` switch (it
/// opted in before taking them became the default) read as
/// `--system-messages append`, so that a command line written for it keeps
/// working: one with no value after it, or an option next.
pub(super) fn old_switch(args: Vec<&str>) -> Vec<&str> {
    if args.first() != Some(&"serve") {
        return args;
    }
    let mut out = Vec::with_capacity(args.len() + 1);
    let mut rest = args.into_iter().peekable();
    while let Some(a) = rest.next() {
        out.push(a);
        if a == "--system-messages" && rest.peek().is_none_or(|next| next.starts_with('-')) {
            out.push("append");
        }
    }
    out
}

/// `--trace`: every request's run appends to it, so it must be a regular
/// file (a pipe or a terminal would get a writer thread per request).
fn trace_file(path: &str) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(Error::config(format!(
            "--trace {path}: axe serve traces to a regular file only"
        ))),
        _ => Ok(()),
    }
}
