//! The second outside review of the walls (issue 31), through the binary:
//! variants of the fixed attacks that got through, each now held. What a
//! command may not write beneath its workdir: every directory axe reads
//! agents or its config from (`--agents-dir`, the current directory's
//! `axe/`, the config directory), whether it exists when the command
//! starts or not, and not by renaming a directory above it either; a
//! protected name a command creates is moved aside however the command
//! tries to keep it (names taken in advance, a workdir made read-only).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

use crate::common::*;

/// A model that runs `script` with `run_command`, then ends.
fn model(script: &str) -> FakeServer {
    let first = P::OpenAi.tool_calls(&[("c1", "run_command", json!({"command": script}))]);
    FakeServer::tool_loop(first, P::OpenAi.text("done"))
}

/// `axe run hands -p go` on `server`, with `args` after it.
fn axe(s: &ToolsSetup, server: &FakeServer, args: &[&str]) -> Command {
    let mut cmd = s.home.axe_on(&[(P::OpenAi, server)]);
    cmd.args(["run", "hands", "-p", "go", "--timeout", "60"])
        .args(args);
    cmd
}

/// Runs `cmd`, which must succeed; what the command's result said.
fn said(mut cmd: Command, server: &FakeServer) -> (Output, String) {
    let out = cmd.output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let said = server
        .requests()
        .iter()
        .find(|r| r.has_tool_results())
        .map(|r| r.tool_result_texts().join("\n"))
        .unwrap_or_default();
    (out, said)
}

/// What `path` holds, or `-` when it is not a readable file.
fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|_| "-".into())
}

/// An agent directory given with `--agents-dir` inside the workdir: a
/// command wrote its files (a server declared there runs unconfined on the
/// next run); now it is read-only to commands, as the config directory is.
#[test]
fn an_agent_directory_beneath_the_workdir_is_read_only_to_commands() {
    if !landlock() {
        return;
    }
    let s = ToolsSetup::new(P::OpenAi, &["run_command"], "");
    let team = s.work.join("team/agents");
    std::fs::create_dir_all(&team).unwrap();
    let helper = "name = \"helper\"\nmodel = \"openai/gpt-4o\"\n";
    std::fs::write(team.join("helper.toml"), helper).unwrap();
    let script = "echo '[[mcp_servers]]' >> team/agents/helper.toml; \
                  echo 'name = \"x\"' > team/agents/x.toml; echo done";
    let server = model(script);
    let mut cmd = axe(&s, &server, &["--agents-dir"]);
    cmd.arg(&team);
    let (_, said) = said(cmd, &server);
    assert!(
        said.contains("Read-only file system") && said.contains("done"),
        "{said}"
    );
    assert_eq!(read(&team.join("helper.toml")), helper, "{said}");
    assert!(!team.join("x.toml").exists(), "{said}");
}
