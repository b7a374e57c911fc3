//! axe: run LLM agents defined in TOML files, with sub-agent delegation.
//!
//! The way through the code follows a run: [`cli`] parses the command line;
//! [`agent`] loads the agent file and [`config`] the global config;
//! [`resolve`] turns them into a model, a workdir, context files and a system
//! prompt; [`provider`] speaks the three wire formats; [`run`] is the
//! conversation loop; [`tool`] runs the model's `call_agent` calls, each a
//! sub-agent through the same [`run`] path; [`output`] prints dry-run, JSON
//! and verbose reports. [`graph`] loads the delegation graph without running
//! anything, for `axe agents check` and `axe agents tree`.

pub mod agent;
pub mod cli;
pub mod config;
pub mod deadline;
pub mod error;
pub mod graph;
pub mod interrupt;
pub mod ledger;
pub mod paths;
pub mod pool;
pub mod progress;
pub mod provider;
pub mod read;
pub mod redact;
pub mod report;
pub mod resolve;
pub mod run;
pub mod stderr;
pub mod text;
pub mod tomlfile;
pub mod tool;
pub mod write;
