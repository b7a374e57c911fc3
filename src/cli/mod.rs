//! The command line: [`main`] parses the arguments (their types are in
//! `args`) and hands them to the command, one file per command: `run`
//! (and `batch`, its `--each`), `agents`, `config`, `mcp`, `gc`, `runs`,
//! `serve`, `version`. What the commands share is here: writing stdout,
//! loading config.toml and an agent with their warnings.
//!
//! Signals: a command that writes files or runs agents calls
//! `interrupt::install` as its first statement, before anything it does
//! can start a thread (stderr's writer, say), so that SIGINT, SIGTERM and
//! SIGHUP end it cleanly (design §6.5). The other commands leave the
//! signals as they are. That call, in the command's own function, is the
//! one place that says so.

mod agents;
mod args;
mod batch;
mod config;
mod continued;
mod gc;
mod help;
mod mcp;
mod mcp_serve;
mod run;
mod run_args;
mod runs;
mod runs_total;
mod serve;
mod version;

use std::io::Write;

use argh::FromArgs;

pub use args::DEFAULT_TIMEOUT_SECS;

use crate::agent;
use crate::config::GlobalConfig;
use crate::error::Error;
use crate::io::stderr;
use crate::paths::AgentDirs;
use crate::text::one_line;
use args::{Axe, Command};

/// Parses the process arguments and runs the command.
pub fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let rest = serve::old_switch(args.iter().skip(1).map(String::as_str).collect());
    let rest = run_args::bare_continue(rest);
    let axe = match Axe::from_args(&["axe"], &rest) {
        Ok(a) => a,
        Err(early) => return early_exit(early),
    };
    if axe.version {
        return version::main();
    }
    let result = match axe.command {
        None => help::of(&[]),
        Some(Command::Version(_)) => version::main(),
        Some(Command::Config(c)) => c
            .command
            .map_or_else(|| help::of(&["config"]), config::main),
        Some(Command::Agents(a)) => a
            .command
            .map_or_else(|| help::of(&["agents"]), agents::main),
        Some(Command::Mcp(m)) => m.command.map_or_else(|| help::of(&["mcp"]), mcp::main),
        Some(Command::Gc(g)) => gc::main(g),
        Some(Command::Run(r)) => run::main(r),
        Some(Command::Runs(r)) => runs::main(r),
        Some(Command::Serve(s)) => serve::main(s),
    };
    // A signal being handled ends the process with its own status.
    crate::io::interrupt::wait_if_ending();
    result
}

/// `--help` (exit 0, stdout) or a usage error (exit 1, one line on stderr).
fn early_exit(early: argh::EarlyExit) -> Result<(), Error> {
    match early.status {
        Ok(()) => print_stdout(&format!("{}\n", help::text(&early.output).trim_end())),
        Err(()) => {
            let text = one_line(&early.output);
            let text = if text.is_empty() {
                "invalid arguments".to_string()
            } else {
                text
            };
            Err(Error::general(format!("{text} (see axe --help)")))
        }
    }
}

/// Writes to stdout; a closed pipe (`axe ... | head -1`) is not an error.
#[allow(clippy::disallowed_methods, reason = "a command's finished output")]
fn print_stdout(text: &str) -> Result<(), Error> {
    crate::io::interrupt::wait_if_ending();
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::general(format!("cannot write to stdout: {e}"))),
    }
}

/// config.toml, for a command that needs it: a config.toml that does not
/// load ends the command, its keys are registered so that no output shows
/// them, and its warnings are printed.
fn load_global() -> Result<GlobalConfig, Error> {
    let (global, warnings) = GlobalConfig::load()?;
    global.register_secrets();
    for w in &warnings {
        stderr::warn(w);
    }
    if let Err(w) = crate::trace::telemetry::init(&global.telemetry) {
        stderr::warn(&w);
    }
    Ok(global)
}

/// config.toml's keys, registered so that a command that only shows agents
/// never prints one (a key pasted into an agent file is not shown either).
/// A config.toml that does not load, and its warnings, are `axe run`'s to
/// report, not such a command's.
fn register_global_secrets() {
    if let Ok((global, _)) = GlobalConfig::load() {
        global.register_secrets();
    }
}

/// The agent `name` from the first directory of `dirs` that has it, its
/// warnings printed.
fn load_agent(dirs: &AgentDirs, name: &str) -> Result<agent::Agent, Error> {
    let a = agent::load(dirs, name).map_err(|e| e.looked_in(dirs.dirs()))?;
    for w in &a.warnings {
        stderr::warn(w);
    }
    Ok(a)
}
