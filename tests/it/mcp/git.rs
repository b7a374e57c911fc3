//! The worked example of docs/guide/mcp.md: `mcp-server-git`
//! on this repository, declared in config.toml as that page shows, an
//! agent narrowed to some of its tools, and the model's `git__git_log`
//! call answered with this repository's own history.

use std::path::PathBuf;

use serde_json::json;

use crate::common::*;

fn git_server() -> Option<PathBuf> {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp/venv/bin/mcp-server-git");
    if bin.exists() {
        Some(bin)
    } else {
        missing(
            "the README's git server example",
            "mcp-server-git is not installed in target/mcp (bash scripts/mcp_servers.sh)",
        );
        None
    }
}

#[test]
fn the_readme_git_server_answers_with_this_repositorys_history() {
    let Some(bin) = git_server() else { return };
    let root = env!("CARGO_MANIFEST_DIR");
    let head = std::process::Command::new("git")
        .args(["-C", root, "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let Some(head) = head else {
        not_tested(
            "the README's git server example",
            "this checkout has no git history (not a git clone)",
        );
        return;
    };
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"git\"\ncommand = {:?}\nargs = [\"--repository\", {root:?}]\ntimeout = 30\n",
        bin.display().to_string()
    ));
    home.named_agent(
        "historian",
        P::Anthropic.model(),
        "mcp_servers = [\"git\"]\nmcp_tools = [\"git__git_log\", \"git__git_show\", \"git__git_status\"]\n",
    );
    let first = P::Anthropic.tool_calls(&[(
        "c1",
        "git__git_log",
        json!({"repo_path": root, "max_count": 3}),
    )]);
    let done = P::Anthropic.text("done");
    let model = FakeServer::tool_loop(first, done);
    let out = home
        .axe_on(&[(P::Anthropic, &model)])
        .args([
            "run",
            "historian",
            "-p",
            "What changed lately?",
            "--timeout",
            "60",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut offered: Vec<String> = model.requests()[0].json()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    // In the server's own order; only those mcp_tools names.
    offered.sort();
    assert_eq!(
        offered,
        ["git__git_log", "git__git_show", "git__git_status"]
    );
    let results: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.has_tool_results())
        .flat_map(|r| r.tool_result_texts())
        .collect();
    assert!(results[0].contains(&head), "{results:?}");
}
