//! Where the MCP reference servers are (installed by scripts/mcp_servers.sh
//! into target/mcp), and the servers as `[[mcp_servers]]` tables. A test
//! whose server is missing skips, and says so where `make test` counts it
//! (tests/common/skips.rs): a failure of `make test`, which installs them.

use std::path::PathBuf;

pub(super) fn root() -> PathBuf {
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
        crate::common::missing(
            &format!("the MCP tests against {what}"),
            &format!("{what} is not installed in target/mcp (bash scripts/mcp_servers.sh)"),
        );
        None
    }
}

/// server-everything serving `mode` (`streamableHttp`, `sse`) on a free
/// loopback port, its URL ending in `path`; killed on drop.
pub struct Served {
    child: std::process::Child,
    pub url: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn served(mode: &str, path: &str) -> Option<Served> {
    let js = everything()?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new("node")
        .arg(&js)
        .arg(mode)
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < until,
            "server-everything did not listen"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Some(Served {
        child,
        url: format!("http://127.0.0.1:{port}{path}"),
    })
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
mod event_lines;
mod files;
mod git;
mod legacy_sse;
mod run;
mod stateless;
