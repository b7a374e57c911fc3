//! The wire details the vendors' types expect (issue 40): axe's request
//! bodies checked against the `openai`, `anthropic` and `ollama` Python
//! packages' types with extras forbidden (`conformance.rs`), an MCP
//! server's input schemas on each wire (`mcp_schemas.rs`), and what a
//! call's tools show the model of axe's own temporary files
//! (`temp_files.rs`). What each wire is told of `parallel` is in
//! delegation/fan_out.rs.

mod conformance;
mod mcp_schemas;
mod temp_files;
