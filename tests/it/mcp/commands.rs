//! `axe mcp list`, `axe mcp tools <server>` and the dry run's `--- MCP
//! Servers ---` section through the binary (design §9.5): what is
//! configured, with no header or env value shown; a reference server's
//! tools listed and the server stopped; a server that is unknown or cannot
//! start, exit 2 with one line; a dry run that starts no server.

use super::run::{marker, with_marker};
use super::*;
use crate::common::*;

const AGENT: &str = "name = \"u\"\nmodel = \"anthropic/claude-x\"\n\
mcp_servers = [\"ev\", { name = \"own\", command = \"sh\", args = [\"-c\", \"touch started\"] }]\n\
mcp_tools = [\"ev__echo\"]\n";

#[test]
fn mcp_list_shows_each_server_its_transport_and_where_it_is_defined_but_no_secret() {
    let home = Home::new();
    home.config(
        "[[mcp_servers]]\nname = \"ev\"\ncommand = \"node\"\nargs = [\"index.js\", \"a b\"]\n\
         env = { TOKEN = \"env-secret-value-1\" }\n\n\
         [[mcp_servers]]\nname = \"remote\"\nurl = \"http://bob:pw-secret-77@127.0.0.1:9/mcp\"\n\
         headers = { Authorization = \"Bearer header-secret-value-2\" }\n",
    );
    home.agent("u", AGENT);
    let out = home
        .axe()
        .args(["mcp", "list", "--agent", "u"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "own     stdio            sh -c \"touch started\"  (agent u)\n\
         ev      stdio            node index.js \"a b\" [env: TOKEN]  (config.toml)\n\
         remote  streamable-http  http://[redacted]@127.0.0.1:9/mcp [headers: Authorization]  (config.toml)\n"
    );
    let all = format!("{}{}", stdout(&out), stderr(&out));
    for secret in [
        "env-secret-value-1",
        "header-secret-value-2",
        "pw-secret-77",
    ] {
        assert!(!all.contains(secret), "{secret} shown: {all}");
    }
    // Without --agent, config.toml's alone.
    let out = home.axe().args(["mcp", "list"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 2, "{}", stdout(&out));
    assert!(stdout(&out).starts_with("ev "), "{}", stdout(&out));
}

#[test]
fn mcp_tools_lists_server_everythings_tools_with_their_schemas_and_stops_it() {
    let Some(js) = everything() else { return };
    let mark = marker();
    let home = Home::new();
    home.config(&format!(
        "[[mcp_servers]]\nname = \"ev\"\ncommand = \"node\"\nargs = [{:?}, \"stdio\", {mark:?}]\n",
        js.display().to_string()
    ));
    let out = home.axe().args(["mcp", "tools", "ev"]).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("ev: "), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let echo = lines
        .iter()
        .position(|l| l.starts_with("ev__echo - "))
        .unwrap_or_else(|| panic!("no ev__echo line: {text}"));
    let schema = lines[echo + 1]
        .strip_prefix("  input: ")
        .unwrap_or_else(|| panic!("no schema after echo: {text}"));
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["message"]["type"], "string");
    assert!(
        lines.iter().any(|l| l.starts_with("ev__get-sum - ")),
        "{text}"
    );
    assert!(with_marker(&mark).is_empty(), "the server is left running");
}

#[test]
fn mcp_tools_of_an_unknown_server_exits_2_with_one_line() {
    let home = Home::new();
    home.config("[[mcp_servers]]\nname = \"ev\"\ncommand = \"node\"\n");
    let out = home.axe().args(["mcp", "tools", "nope"]).output().unwrap();
    assert_eq!(code(&out), 2);
    assert_eq!(stdout(&out), "");
    assert_eq!(
        stderr(&out),
        "axe: no MCP server named \"nope\" in config.toml's [[mcp_servers]]\n"
    );
}

#[test]
fn mcp_tools_of_a_server_that_cannot_start_or_answer_exits_2_with_one_line() {
    let home = Home::new();
    // Port 9 on loopback: nothing listens there.
    home.config(
        "[[mcp_servers]]\nname = \"gone\"\ncommand = \"/nonexistent/mcp-server\"\n\n\
         [[mcp_servers]]\nname = \"closed\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
    );
    for name in ["gone", "closed"] {
        let out = home
            .axe()
            .args(["mcp", "tools", name, "--timeout", "10"])
            .output()
            .unwrap();
        assert_eq!(code(&out), 2, "{name}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "{name}");
        let err = stderr(&out);
        assert!(
            err.starts_with(&format!("axe: MCP server \"{name}\": ")) && err.lines().count() == 1,
            "{name}: {err}"
        );
    }
}

#[test]
fn dry_run_names_the_agents_mcp_servers_and_starts_none() {
    let home = Home::new();
    home.config("[[mcp_servers]]\nname = \"ev\"\ncommand = \"node\"\n");
    home.agent("u", AGENT);
    let out = home
        .axe()
        .args(["run", "u", "--dry-run", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let section = text
        .split_once("\n--- MCP Servers ---\n")
        .map(|(_, s)| s)
        .unwrap_or_else(|| panic!("no MCP section: {text}"));
    assert_eq!(
        section,
        "ev: from config.toml; tools listed when it starts (not started in a dry run)\n\
         own: stdio sh -c \"touch started\" (the agent file); tools listed when it starts (not started in a dry run)\n\
         Only tools: ev__echo\n\
         \n\
         --- Prompt Cache ---\n\
         On: cache_control {\"type\":\"ephemeral\"} on the last tool and the newest message; \
         from the second turn, on the previous request's last message too\n"
    );
    assert!(
        !home.dir.path().join("started").exists(),
        "a server was started"
    );
}

#[test]
fn a_typo_inside_an_agent_files_mcp_server_table_is_warned_about() {
    let home = Home::new();
    home.agent(
        "u",
        "name = \"u\"\nmodel = \"anthropic/claude-x\"\n\
         [[mcp_servers]]\nname = \"a\"\ncommand = \"x\"\nagrs = []\n\n\
         [[mcp_servers]]\nname = \"b\"\ncommand = \"y\"\n\
         [mcp_servers.sandbox]\nreed = [\"/srv\"]\nwrite = [\"/tmp/w\"]\n",
    );
    let out = home
        .axe()
        .args(["run", "u", "--dry-run", "-p", "hi"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("unknown key \"mcp_servers.0.agrs\" (did you mean \"mcp_servers.0.args\"?)"),
        "{err}"
    );
    assert!(
        err.contains(
            "unknown key \"mcp_servers.1.sandbox.reed\" (did you mean \"mcp_servers.1.sandbox.read\"?)"
        ),
        "{err}"
    );
    assert!(
        stdout(&out).contains("b: stdio y [sandboxed: write /tmp/w] (the agent file)"),
        "{}",
        stdout(&out)
    );
}
