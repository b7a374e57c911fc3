//! axe: run LLM agents defined in TOML files, with sub-agent delegation.
//!
//! This file's module list, a comment line or two above each, is the code
//! map, in the order a run goes through it (docs/design.md says why each
//! piece is as it is; docs/contributing.md's "Layout" has the same rooms,
//! a line each; each module's own `//!` says more). The only loop between modules
//! is the one the design needs, inside `run`: a tool call runs a sub-agent
//! through the same `run_agent`. A module is public when the binary, the
//! tests or the benchmarks use it.

// The command line: arguments, one file per command, what commands share.
pub mod cli;

// The process's own stdin, stdout, stderr (one writer each) and signals.
pub mod io;

// Where axe keeps things (XDG directories, the agent search path).
pub mod paths;

// `config.toml` and the one TOML reader: keys, base URLs, retries.
pub mod config;

// An agent file loaded and validated (axe's, or another tool's turned into
// axe's); the agents of a run read once.
pub mod agent;

// From an agent and a run's overrides to what is sent: model, workdir,
// context files, skill, memory, system prompt, `{{KEY}}` templates.
mod resolve;

// An agent's memory of its past runs: loaded, appended, trimmed.
mod memory;

// Prices per `provider/model` (config.toml's, else the built-in table's)
// and what a response's tokens cost at them.
pub mod cost;

// The model providers: one folder per wire format, HTTP, retries, streams.
pub mod provider;

// The run: `run_agent`, the conversation loop, tool-call dispatch,
// `call_agent` and the fan-out of one response's calls.
pub mod run;

// The run's deadline, a call's narrower one, and the cancel flag.
pub mod deadline;

// The built-in tools (`read_file`, `run_command`, ...) and their registry.
pub mod tools;

// The kernel's walls around tools: Landlock, seccomp, namespaces, the
// file reader and writer for paths a model names.
pub mod sandbox;

// The MCP client: servers, transports, their tools called.
pub mod mcp;

// Output schemas: compiled, an answer checked, the repair message.
pub mod schema;

// What a run did: trace events and their lines, the ledger the tree
// reports to, a run's outcome, the run log.
pub mod trace;

// What `axe run` prints: the dry run, `--json`, `--verbose`, the live view.
mod report;

// One agent over many inputs (`--each`): inputs, schedule, lines, resume.
mod batch;

// `axe serve`: agents behind an OpenAI-compatible HTTP endpoint.
mod serve;

// `axe mcp serve`: agents as MCP tools (its own room: it uses both the
// MCP protocol and `serve`'s agent files, and `mcp`, the client, is below
// `run`).
mod mcp_serve;

// The delegation graph without running it: `agents check` and `tree`.
mod graph;

// Text shaping every output shares: one line, clipped, keys redacted.
pub mod text;

// The one error enum and every exit status.
pub mod error;
