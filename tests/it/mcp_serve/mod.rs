//! `axe mcp serve` through the binary (design §9.6): driven over stdio by
//! the official MCP Python SDK (`sdk.rs`; `mcp` pinned and installed into
//! target/mcp/venv by scripts/mcp_servers.sh, as the MCP client tests'
//! servers are), and by raw JSON lines from here (`raw.rs`): malformed
//! lines, unknown methods, the revisions negotiated, busy, stdin's end.
//! The SDK 2.x (target/mcp/venv2), both eras over stdio and streamable
//! HTTP (`sdk2.rs`); raw HTTP requests (`http.rs`): the token, the
//! Host/Origin rules, GET and DELETE, the routing headers; the MCP
//! Inspector's CLI (`inspector.rs`).

mod evict;
mod http;
mod inspector;
mod raw;
mod sdk;
mod sdk2;

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;

/// The Python of target/mcp/venv, with the `mcp` SDK; None (the skip
/// recorded, a failure of `make test`) when it is not installed.
pub fn python() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp/venv/bin/python");
    if p.is_file() {
        Some(p)
    } else {
        crate::common::missing(
            "axe mcp serve with the official MCP Python SDK",
            "the mcp package is not installed in target/mcp (bash scripts/mcp_servers.sh)",
        );
        None
    }
}

/// Runs client.py `action` against `axe mcp serve <extra>` in `home`,
/// the OpenAI provider pointed at `fake`; what it printed.
pub fn sdk(
    py: &PathBuf,
    home: &Home,
    fake: &FakeServer,
    action: &str,
    extra: &[&str],
) -> serde_json::Value {
    sdk_with(py, home, fake, action, extra, &[])
}

/// [`sdk`] with `env` added to the client's (and so axe's) environment.
pub fn sdk_with(
    py: &PathBuf,
    home: &Home,
    fake: &FakeServer,
    action: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> serde_json::Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_serve/client.py");
    let mut cmd = home.command(py);
    cmd.env(P::OpenAi.base_url_var(), &fake.url)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .arg(&script)
        .arg(action)
        .arg(env!("CARGO_BIN_EXE_axe"))
        .args(extra)
        .envs(env.iter().copied());
    let out = run_within(&mut cmd, Duration::from_secs(90)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_else(|e| {
        panic!(
            "client.py {action}: not JSON ({e}): {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(
        v.get("error").is_none(),
        "client.py {action} failed: {v}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}
