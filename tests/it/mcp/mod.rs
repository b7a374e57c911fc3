//! Where the MCP reference servers are (installed by scripts/mcp_servers.sh
//! into target/mcp), and the servers as `[[mcp_servers]]` tables. A test
//! whose server is missing prints SKIPPED and passes.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp")
}

/// `@modelcontextprotocol/server-everything`'s entry point, if installed.
pub fn everything() -> Option<PathBuf> {
    let js = root().join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    found(js, "server-everything")
}

/// `mcp-server-time`, if installed.
pub fn time_server() -> Option<PathBuf> {
    found(root().join("venv/bin/mcp-server-time"), "mcp-server-time")
}

fn found(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIPPED: {what} is not installed (run scripts/mcp_servers.sh)");
        None
    }
}

/// Whether process `pid` still exists (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

mod client;
mod commands;
mod files;
mod run;
