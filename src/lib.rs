//! axe: run LLM agents defined in TOML files, with sub-agent delegation.
//!
//! The way through the code follows a run: [`cli`] parses the command line
//! and runs the command (one file each), the user message read from `stdin`;
//! [`agent`] loads the agent file and [`config`] the global config;
//! `resolve` turns them into a model, a workdir, context files and a system
//! prompt, with the agent's `memory` of its past runs; [`provider`] speaks the three wire formats; [`run`] is the
//! conversation loop; `run::dispatch` runs the model's `call_agent` calls, each a
//! sub-agent through the same [`run`] path, the calls of one response at
//! once through `pool`, each sub-agent loaded once per run (`snapshot`).
//! The built-in tools (`read_file`, `run_command`, ...) are in [`tools`],
//! confined by [`sandbox`]. The `trace::ledger` collects what the whole tree did
//! (trace, usage, budgets), each trace event a `trace::event::TraceEvent`
//! written in one place, and `trace` writes its lines; `report` prints the
//! dry run, `--json` and `--verbose`; `io::stderr` writes everything that goes
//! to stderr, through the same kind of `queue` as a trace on a pipe. `graph`
//! loads the delegation graph without running anything, for `axe agents
//! check` and `axe agents tree`. `batch` runs one agent over many inputs
//! (`--each`) and fills prompt templates. docs/design.md says why; README.md's
//! "Layout" has a line per module.
//!
//! The modules that are public are the ones the binary, the tests and the
//! benchmark use.

pub mod agent;
mod batch;
pub mod cli;
pub mod config;
pub mod deadline;
pub mod error;
mod graph;
pub mod io;
pub mod mcp;
mod memory;
pub mod paths;
pub mod provider;
mod report;
mod resolve;
pub mod run;
pub mod sandbox;
pub mod schema;
mod serve;
pub mod text;
pub mod tools;
pub mod trace;
