//! The MCP Inspector's CLI (npm `@modelcontextprotocol/inspector` 2.12.0,
//! installed into target/mcp/inspector by scripts/mcp_inspector.sh) as
//! the client of `axe mcp serve`, over stdio and over streamable HTTP: it
//! lists the tools and calls one (design §9.6).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::common::*;
use crate::serve::Server;

/// The Inspector's launcher; None (the skip recorded) when missing.
fn inspector() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/mcp/inspector/node_modules/.bin/mcp-inspector");
    if p.is_file() {
        Some(p)
    } else {
        missing(
            "axe mcp serve with the MCP Inspector's CLI",
            "it is not installed in target/mcp/inspector (bash scripts/mcp_inspector.sh)",
        );
        None
    }
}

/// `mcp-inspector --cli <target> <args>` in `home`, against `fake`: its
/// stdout as JSON (the first JSON document it printed).
fn run(bin: &PathBuf, home: &Home, fake: &FakeServer, target: &[&str], args: &[&str]) -> Value {
    let mut cmd = home.command(bin);
    cmd.env(P::OpenAi.base_url_var(), &fake.url)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .arg("--cli")
        .args(target)
        .args(args);
    let out = run_within(&mut cmd, Duration::from_secs(90)).output;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut docs = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    match docs.next() {
        Some(Ok(v)) => v,
        _ => panic!(
            "mcp-inspector {args:?}: no JSON: {text}\nstderr: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn the_inspector_lists_and_calls_a_tool_over_stdio_and_http() {
    let Some(bin) = inspector() else { return };
    let home = Home::new();
    home.named_agent("helper", "openai/gpt-4o", "description = \"Says hello.\"\n");
    let fake = FakeServer::json(200, &openai_text("Hello there.", 4, 2));
    let axe = env!("CARGO_BIN_EXE_axe");
    let server = {
        let mut cmd = home.axe_on(&[(P::OpenAi, &fake)]);
        cmd.arg("mcp");
        Server::start_with(cmd, &[])
    };
    let url = format!("{}/mcp", server.url);
    // The Inspector hands a stdio server only the variables given with -e.
    let root = home.dir.path().display().to_string();
    let env = [
        format!("OPENAI_API_KEY={OPENAI_KEY}"),
        format!("{}={}", P::OpenAi.base_url_var(), fake.url),
        format!("HOME={root}"),
        format!("XDG_CONFIG_HOME={root}"),
        format!("XDG_STATE_HOME={root}/state"),
    ];
    let mut stdio: Vec<&str> = Vec::new();
    for e in &env {
        stdio.extend(["-e", e.as_str()]);
    }
    stdio.extend([axe, "mcp", "serve"]);
    for target in [&stdio[..], &[url.as_str()][..]] {
        let list = run(&bin, &home, &fake, target, &["--method", "tools/list"]);
        assert_eq!(list["tools"][0]["name"], "helper", "{target:?}: {list}");
        assert_eq!(
            list["tools"][0]["inputSchema"]["required"][0], "task",
            "{list}"
        );
        let call = [
            "--method",
            "tools/call",
            "--tool-name",
            "helper",
            "--tool-arg",
            "task=Say hello.",
        ];
        let r = run(&bin, &home, &fake, target, &call);
        assert_eq!(r["content"][0]["text"], "Hello there.", "{target:?}: {r}");
        assert_eq!(r["_meta"]["axe/usage"]["input_tokens"], 4, "{r}");
    }
}
