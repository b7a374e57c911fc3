//! The wire details the vendors' types expect (issue 40): an MCP server's
//! input schemas on each wire (`mcp_schemas.rs`), and what a call's tools
//! show the model of axe's own temporary files (`temp_files.rs`). What
//! each wire is told of `parallel` is in delegation/fan_out.rs.

mod mcp_schemas;
mod temp_files;
