//! The integration tests: one crate, so one build, one link and one binary
//! (`cargo test --test it`, or `cargo test --test it trace::` for a part).
//! When 30 test crates became this one and five beside it (issue 21), on a
//! shared 2-core machine: `make test` after touching `src/lib.rs` 92 and 82 s
//! before, 68 and 66 s after; the test build from an empty target 99 and
//! 74 s before, 66 and 60 s after; a change to the harness rebuilt in 8 s
//! before, 2.5 s after; the target directory 2.3 GB before, 1.5 GB after.
//! The harness they share (a fake provider on loopback, each API's
//! documented answers, a config home for the real binary) is
//! `tests/common`.
//!
//! # Where a test goes
//!
//! A test goes in the file of the design section whose behaviour it checks
//! (docs/design.md). A new behaviour that no file covers gets a new file,
//! named after the behaviour (never after the issue that asked for it),
//! listed here with its sections.
//!
//! | design | behaviour | file |
//! |---|---|---|
//! | §2.1, §2.2 | every command but `run`; agent names | `cli/commands.rs` |
//! | §2.4–§2.6, §2.9 | `axe run` on each provider: stdin, keys and base URLs, overrides, `--json`, `--verbose` | `cli/run.rs` |
//! | §2.7, §2.8 | context files and the system prompt, shown by `--dry-run` | `cli/dry_run.rs` |
//! | §2.3, §2.10 | validation, errors and exit codes | `cli/exit_codes.rs` |
//! | D21 | a sub-agent without a model runs on its caller's | `model_inheritance.rs` |
//! | §3.2, §3.7, §3.8, §3.12 | sub-agents through the binary: the loop, errors kept in their call | `delegation/conversation.rs` |
//! | §3.10, D4 | parallel and sequential calls; one kept-alive connection (§4.2) | `delegation/fan_out.rs` |
//! | §3.9, §3.11 | depth limits and deadlines | `delegation/depth_and_timeouts.rs` |
//! | §3.14 | what a run with sub-agents reports | `delegation/reports.rs` |
//! | §3.3, §3.4 | `call_agent` in process: its definition and its checks in order | `call_agent/checks.rs` |
//! | §3.4, §3.6, §3.11, §3.12 | a failed call's result | `call_agent/failures.rs` |
//! | §3.7, §3.9, §3.10, D7 | the sub-agent's own run, several calls at once | `call_agent/nested.rs` |
//! | D20 | each sub-agent read once per run | `snapshot.rs` |
//! | §4.1 | the provider layer's shared types | `providers/types.rs` |
//! | §4.2–§4.4 | each wire format in process: requests, responses, tool calls | `providers/anthropic.rs`, `openai.rs`, `ollama.rs` |
//! | §4.7, §4.8 | every failure classified, on all three providers at once | `providers/errors.rs` |
//! | §4.14 | the Responses API as a wire: named, its turns, reasoning items sent back | `responses_api/` |
//! | §4.7, §4.8, §6.1 | every provider fault through the binary, at top level and in a sub-agent | `provider_faults/` (the matrix in `matrix.rs` and `tool_matrix.rs`; cases by kind) |
//! | §4.2, §3.15 | how axe connects: TLS for `https`, a proxy from the environment, the response head's bound | `connections.rs` |
//! | §4.3, §4.6, §6.1, §6.7 | what a well-behaved server never sends: absurd headers and counts, credentials in URLs | `odd_servers.rs` |
//! | §4.5, ch. 5 | refusals, cut-off answers and calls, parameters a model refuses | `answers_not_whole.rs` |
//! | §4.6 | token counts as each API bills them, cache reads | `token_counts.rs` |
//! | §4.10 | prompt caching: Anthropic's marks, the switch, cache writes and reads reported | `prompt_cache.rs` |
//! | §4.16, §12.2 | attachments: each kind on each wire, told by content, bounded, never through a link; `axe serve`'s image parts | `attachments/` |
//! | §4.11 | streamed answers: printed as they come, a tool loop, `--json` and schemas, hostile streams | `stream/mod.rs`, `stream/hostile.rs` |
//! | §3.8, §5.5 | turns axe does not run itself: an OpenAI `custom` call, Anthropic's `pause_turn` | `odd_turns.rs` |
//! | D22 | output schemas: asked, checked, repaired | `output_schema.rs` |
//! | §4.9 | the schema Anthropic is sent | `output_schema_anthropic.rs` |
//! | §6.9 | the schema check's bounds | `output_schema_bounds.rs` |
//! | §6.1 | transport retries and their settings | `retries.rs` |
//! | §6.2–§6.6 | huge files, FIFOs, endless stdin, blocked stderr, signals, a trace on a full disk | `machine.rs` |
//! | §6.6 | `config init` and `agents init` on a full disk and a read-only mount | `full_disk.rs` |
//! | §6.7 | no key in any output | `secrets.rs` |
//! | §6.7 | redaction never changes an answer | `placeholder_keys.rs` |
//! | §7.2 | the trace | `trace.rs` |
//! | §7.2 | the trace's exact bytes against `tests/golden/` (`AXE_BLESS_GOLDEN=1` rewrites them) | `trace_golden.rs` |
//! | §7.2 | a trace to stdout, a FIFO, a terminal, a reader that stalls | `trace_streams.rs` |
//! | §3.6, §3.10, §7.3, §7.5 | a tree's usage, budgets, result limit, concurrency cap | `budgets.rs` |
//! | §7.4 | the live progress view | `progress.rs` |
//! | §7.6 | `agents check` and `agents tree` | `graph.rs` |
//! | §7.7 | the run log: a record per run, its file, `axe runs`, `--chrome` | `run_log/` |
//! | §7.9 | OpenTelemetry: a tree's spans in both encodings (an OTLP receiver with the official `opentelemetry-proto`), errors, tools and MCP, content only when asked, `TRACEPARENT` and served `traceparent` joined, a collector that hangs or is absent | `telemetry/` |
//! | §3.17 | Claude Code's agent files: the search path, each key, `agents list`, `--dry-run`, files from a public collection | `claude_agents.rs` |
//! | §3.17 | Codex's agent files: the search path, each key, each `sandbox_mode`, `mcp_servers` | `codex_agents.rs` |
//! | §3.17 | `agents show` of an imported agent; `agents export` to each format, what it drops, the round trips | `agents_export.rs` |
//! | §3.17 | agents of different formats calling each other; Codex files from a public collection; `config init`'s `[import]` | `cross_format.rs` |
//! | D26 | an agent directory written for the Go original, listed, checked and dry-run with no warning | `go_agents.rs` |
//! | D22, D26 | the Go original's 1.8 keys: `[params] response_format` on each wire, `--json`'s `refused` | `go_keys.rs` |
//! | D26 | every key, flag and variable of the Go original's 1.8 docs (fixtures/go18/keys.txt) read | `go18_keys.rs` |
//! | §8.9, D26 | the Go original's artifact directory: `[artifacts]`, its flags, the tools' `artifact`, commands, sub-agents, `--json`, no way out | `artifacts.rs` |
//! | ch. 8 | the built-in tools on all three wires, and every way out of the workdir and the sandbox refused | `builtin_tools.rs` |
//! | §8.1 | `web_search` (the Go original's Tavily tool) against a fake Tavily | `web_search.rs` |
//! | §2.9, §7.4, ch. 8 | what a run reports about its built-in tool calls | `tool_reports.rs` |
//! | ch. 8, D28 | the walls: a hostile model, MCP server, HTTP client or web page reaches nothing it was not given | `walls/` (a file a wall) |
//! | ch. 9 | MCP servers: the client against the reference servers, and through the binary; stderr, sharing and the sandbox with a server of our own | `mcp/client.rs`, `mcp/run.rs`, `mcp/files.rs`, `mcp/legacy_sse.rs`, `mcp/event_lines.rs` (CR, LF, CRLF), `mcp/git.rs` (docs/guide/mcp.md's example) |
//! | §10.1–§10.4 | memory: entries appended and loaded, the Go original's files, concurrent runs, bounds, sub-agents | `memory/entries.rs`, `memory/files.rs` |
//! | §10.5 | `axe gc`: what is sent, kept and backed up, `--dry-run`, `--all` | `gc.rs` |
//! | ch. 11 | batches (`--each`, `--each-file`): order, `--jobs`, failures, the shared budget, resume, templates, `--dry-run` | `batch.rs` |
//! | §11.8 | `--provider-batch`: OpenAI's and Anthropic's batch engines, requests as `axe run` sends them, lines in order | `provider_batch.rs` |
//! | §11.8 | `--provider-batch`: the batch creations and uploaded lines against the vendors' SDK types | `provider_batch_conformance.rs` |
//! | §11.8 | `--provider-batch`: a bound on the whole batch refused; a batch the provider expired: its answers kept, every other input failed, saying so | `provider_batch_limits.rs` |
//! | §11.7 | `--shard K/N`: N workers cover the inputs once, resume per share | `batch_shards.rs` |
//! | §9.6 | `axe mcp serve`: the official MCP Python SDK over stdio, raw JSON lines | `mcp_serve/` |
//! | ch. 12 | `axe serve`: the `openai` client, hostile clients, 200 requests at once | `serve/` |
//! | §4.2, §8.2 | the wire details the vendors' types expect: every body against the `openai`, `anthropic` and `ollama` SDKs' types, MCP schemas on Ollama, axe's temporary files never listed | `wires/` |
//!
//! `tree_fake.rs` is the fake server of `trace.rs` and `budgets.rs`.
//!
//! Five test crates stand alone. `tests/load.rs` counts the threads and
//! descriptors of its own process (§3.15), and `tests/peak_memory.rs`
//! measures axe's peak memory, which Linux counts from the process that
//! spawned it: both need a test process that nothing else grows.
//! `tests/fuzz/` (`make fuzz`), `tests/e2e/` (`make e2e`, against real
//! servers) and `tests/static_build.rs` (the `make static` binary) are run
//! on their own.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test fails by panicking, and says what it measured or skipped"
)]

#[path = "../common/mod.rs"]
mod common;

mod agents_export;
mod agents_md;
mod answers_not_whole;
mod artifacts;
mod attachments;
mod batch;
mod batch_shards;
mod budgets;
mod builtin_tools;
mod call_agent;
mod claude_agents;
mod cli;
mod codex_agents;
mod connections;
mod cost;
mod cost_serve;
mod cross_format;
mod delegation;
mod full_disk;
mod gc;
mod go18_keys;
mod go_agents;
mod go_keys;
mod graph;
mod imports_hostile;
mod machine;
mod mcp;
mod mcp_serve;
mod memory;
mod model_inheritance;
mod odd_servers;
mod odd_turns;
mod output_schema;
mod output_schema_anthropic;
mod output_schema_bounds;
mod placeholder_keys;
mod progress;
mod prompt_cache;
mod provider_batch;
mod provider_batch_conformance;
mod provider_batch_limits;
mod provider_faults;
mod providers;
mod reasoning;
mod responses_api;
mod retries;
mod run_log;
mod secrets;
mod serve;
mod snapshot;
mod stream;
mod telemetry;
mod token_counts;
mod tool_reports;
mod trace;
mod trace_golden;
mod trace_streams;
mod tree_fake;
mod walls;
mod web_search;
mod wires;
